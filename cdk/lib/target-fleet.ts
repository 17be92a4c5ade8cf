/**
 * What a benchmark target needs before a run creates it: the instance role and profile, the
 * security groups, the launch template (IMDSv2, encrypted EBS), the DB subnet group, the agent
 * bundle in S3, the SSM Command document that runs the agent, and the CloudWatch agent
 * configuration (per-second CPU steal). The run's Lambdas create instances and databases from these.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Annotations, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3assets from 'aws-cdk-lib/aws-s3-assets';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { copyTree, fileCopyAsset } from './bundling';
import { allowWildcard } from './nag';
import {
  agentDocumentName,
  HOSTS_PREFIX,
  REPO_ROOT,
  targetInstanceRoleName,
  targetResourcesParameterName,
} from './naming';
import { ownershipEnvironment } from './ownership';
import { FleetResources, grantRdsManagedSecretsRead } from './permissions';

/**
 * Domain modules the agent imports, shipped next to workloads/ at the same relative paths: the
 * standard-library-only modules of benchfleet.workload and benchfleet.cluster, with the __init__.py
 * of each package on the way (docstrings only, so importing them runs nothing else).
 */
export const AGENT_LAMBDA_MODULES = [
  '__init__.py',
  'workload/__init__.py',
  'workload/sysbench.py',
  'workload/gotpc.py',
  'workload/mysqlcnf.py',
  'workload/serverstatus.py',
  'cluster/__init__.py',
  'cluster/galera.py',
  'cluster/proxyconf.py',
];
/** Where the bundle is unpacked on a target; the agent runs from here. */
export const AGENT_HOME = '/opt/benchfleet';
/** The agent's flock: a second job sent to a busy host is refused, not run alongside. */
export const AGENT_LOCK = '/run/benchfleet/agent.lock';
/** Each step's JSON lines stay here on the host (the SSM agent cleans its own working copy). */
export const AGENT_KEEP_DIR = '/var/lib/benchfleet/output';
/**
 * The one plugin whose status is the step's: step_callback asks GetCommandInvocation for it, so a failed
 * CloudWatch agent install (its own plugin) is a missing metric, not a failed step.
 */
export const AGENT_PLUGIN = 'runAgent';
/** Run Command's own limit for aws:runShellScript (DESIGN.md "Facts checked"). */
export const MAX_EXECUTION_TIMEOUT_SECONDS = 172800;
/**
 * Default run limit of one agent job: the prepare step installs the engine and sysbench with apt and
 * loads the data set, which takes well over Run Command's own default of 3600 s on large tables.
 * Callers (start_step) normally pass the plan's bound.
 */
export const DEFAULT_EXECUTION_TIMEOUT_SECONDS = 7200;
/** 1..172800 exactly (SSM checks parameters against allowedPattern before anything runs). */
export const EXECUTION_TIMEOUT_PATTERN =
  '^([1-9][0-9]{0,4}|1[0-6][0-9]{4}|17[01][0-9]{3}|172[0-7][0-9]{2}|172800)$';

/**
 * The agent bundle: workloads/ plus the stdlib-only domain modules the agent imports, at their
 * repository paths (plain file copies: no Docker). Records modules missing from the checkout.
 */
class AgentBundle {
  public readonly missing: string[] = [];

  public copy(outputDir: string): void {
    copyTree(path.join(REPO_ROOT, 'workloads'), path.join(outputDir, 'workloads'));
    const target = path.join(outputDir, 'lambdas', 'benchfleet');
    fs.mkdirSync(target, { recursive: true });
    for (const module of AGENT_LAMBDA_MODULES) {
      const src = path.join(REPO_ROOT, 'lambdas', 'benchfleet', module);
      if (!fs.existsSync(src)) {
        this.missing.push(`lambdas/benchfleet/${module}`);
        continue;
      }
      fs.mkdirSync(path.dirname(path.join(target, module)), { recursive: true });
      fs.copyFileSync(src, path.join(target, module));
    }
  }
}

export interface TargetFleetProps {
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  /** The home stack's name: names the instance role, the parameters and the document in every region. */
  readonly stackName: string;
  /**
   * Home stack only: the results bucket, which the instance role (global, created once, by the home
   * stack) writes the agent's output to. Regional stacks omit it and use that role by its fixed name.
   */
  readonly resultsBucket?: s3.IBucket;
  /** Root volume of instances launched from the template (the Lambdas may add data volumes). */
  readonly rootVolumeGiB?: number;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * What a target needs in one region, deployed by the home stack for the home region and by each
 * regional stack (regional-stack.ts) for its own: security groups, DB subnet group, launch template,
 * agent bundle, CloudWatch agent configuration, agent document, and the SSM parameter listing their
 * ids (`/benchfleet/<stack>/target-resources`, read by lambdas/benchfleet/aws/fleet/regional.py).
 */
export class TargetFleet extends Construct {
  public readonly role: iam.IRole;
  public readonly instanceProfile: iam.IInstanceProfile;
  public readonly clientSecurityGroup: ec2.SecurityGroup;
  public readonly dbSecurityGroup: ec2.SecurityGroup;
  /** A cluster target's nodes: Galera between them, MySQL from the clients (and a proxy host). */
  public readonly clusterSecurityGroup: ec2.SecurityGroup;
  /** A proxy with a host of its own: the proxy's port from the clients (beside the clients' group). */
  public readonly proxySecurityGroup: ec2.SecurityGroup;
  public readonly launchTemplate: ec2.LaunchTemplate;
  public readonly dbSubnetGroup: rds.SubnetGroup;
  /** This region's copy of the agent bundle (an asset: `cdk deploy` uploads one to each region's asset bucket). */
  public readonly agentBundle: s3assets.Asset;
  public readonly cloudWatchAgentConfig: ssm.StringParameter;
  public readonly agentDocument: ssm.CfnDocument;
  /** The ids above as JSON, the contract of lambdas/benchfleet/aws/fleet/regional.py (FIELDS). */
  public readonly targetResources: ssm.StringParameter;
  public readonly subnetIds: string[];
  /** The availability zones of subnetIds, in the same order (a cluster's nodes each need their own). */
  public readonly subnetZones: string[];
  private readonly vpc: ec2.IVpc;

  constructor(scope: Construct, id: string, props: TargetFleetProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const roleName = targetInstanceRoleName(props.stackName);

    if (props.resultsBucket !== undefined) {
      const role = instanceRole(this, roleName, props.resultsBucket, cloudWatchAgentConfigName(props.stackName));
      this.role = role;
      this.instanceProfile = new iam.InstanceProfile(this, 'InstanceProfile', {
        role,
        instanceProfileName: roleName,
      });
    } else {
      // IAM is global: the home stack's role and profile, by their fixed names (the home stack deploys first).
      this.role = iam.Role.fromRoleName(this, 'InstanceRole', roleName);
      this.instanceProfile = iam.InstanceProfile.fromInstanceProfileName(this, 'InstanceProfile', roleName);
    }
    this.vpc = props.vpc;
    this.subnetIds = props.vpc.selectSubnets(props.subnets).subnetIds;
    this.subnetZones = props.vpc.selectSubnets(props.subnets).subnets.map((s) => s.availabilityZone);

    this.clientSecurityGroup = new ec2.SecurityGroup(this, 'ClientSecurityGroup', {
      vpc: props.vpc,
      description: 'benchfleet benchmark clients and EC2 targets: no inbound, outbound for SSM and packages',
      allowAllOutbound: true,
    });
    this.dbSecurityGroup = new ec2.SecurityGroup(this, 'DbSecurityGroup', {
      vpc: props.vpc,
      description: 'benchfleet RDS/Aurora targets: MySQL from benchmark clients only',
      allowAllOutbound: false,
    });
    this.dbSecurityGroup.addIngressRule(
      this.clientSecurityGroup,
      ec2.Port.tcp(3306),
      'MySQL from benchfleet clients',
    );

    // A cluster's nodes (benchfleet.aws.fleet.cluster launches them in this group instead of the
    // template's): MySQL, Galera replication, IST and SST between the nodes; MySQL only from the clients'
    // group (the client host, a proxy host of its own); nothing else in. Outbound for SSM and packages.
    this.clusterSecurityGroup = new ec2.SecurityGroup(this, 'ClusterSecurityGroup', {
      vpc: props.vpc,
      description: 'benchfleet cluster nodes: Galera between nodes, MySQL from benchmark clients',
      allowAllOutbound: true,
    });
    for (const [port, what] of GALERA_PORTS) {
      this.clusterSecurityGroup.addIngressRule(this.clusterSecurityGroup, ec2.Port.tcp(port), `${what} between nodes`);
    }
    this.clusterSecurityGroup.addIngressRule(this.clientSecurityGroup, ec2.Port.tcp(3306), 'MySQL from benchfleet clients');
    // A proxy with a host of its own (in this group and the clients': it reaches the nodes as a client
    // does) is reached from the clients only: on the proxy's port (proxyconf.LISTEN_PORT), and on its
    // statistics port (proxyconf.ADMIN_PORT), which the client reads every second while it measures (no
    // job runs on the proxy host then): HAProxy's stats socket is read-only (level user); ProxySQL's
    // statistics user logs in with the run's secret, and its admin password never leaves the proxy host.
    this.proxySecurityGroup = new ec2.SecurityGroup(this, 'ProxySecurityGroup', {
      vpc: props.vpc,
      description: 'benchfleet cluster proxy hosts: the proxy and its statistics ports from benchmark clients',
      allowAllOutbound: false,
    });
    for (const [port, what] of [...PROXY_PORTS, ...PROXY_STATS_PORTS]) {
      this.proxySecurityGroup.addIngressRule(this.clientSecurityGroup, ec2.Port.tcp(port), `${what} from benchfleet clients`);
    }

    this.dbSubnetGroup = new rds.SubnetGroup(this, 'DbSubnetGroup', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      description: 'benchfleet RDS and Aurora targets',
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      // No AMI: provision picks Ubuntu LTS for the instance family's architecture at run time.
      instanceProfile: this.instanceProfile,
      securityGroup: this.clientSecurityGroup,
      requireImdsv2: true,
      httpTokens: ec2.LaunchTemplateHttpTokens.REQUIRED,
      httpPutResponseHopLimit: 1,
      instanceMetadataTags: true, // the agent can read its run tags from IMDS
      blockDevices: [
        {
          deviceName: '/dev/sda1', // Ubuntu's root device
          volume: ec2.BlockDeviceVolume.ebs(props.rootVolumeGiB ?? 30, {
            encrypted: true,
            volumeType: ec2.EbsDeviceVolumeType.GP3,
            deleteOnTermination: true,
          }),
        },
      ],
    });

    const bundler = new AgentBundle();
    this.agentBundle = new s3assets.Asset(this, 'AgentBundle', {
      path: path.join(REPO_ROOT, 'workloads'),
      // Hash what is shipped (workloads/ and the copied modules), not the source folder alone.
      ...fileCopyAsset((outputDir) => bundler.copy(outputDir)),
    });
    if (bundler.missing.length > 0) {
      Annotations.of(this).addWarningV2(
        'benchfleet:agent-bundle-incomplete',
        `agent bundle built without ${bundler.missing.join(', ')} (not in the checkout yet)`,
      );
    }
    // Hosts download this region's copy; in a regional stack this attaches to the home stack's role.
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject'],
        resources: [
          stack.formatArn({
            service: 's3',
            region: '',
            account: '',
            resource: this.agentBundle.s3BucketName,
            resourceName: this.agentBundle.s3ObjectKey,
          }),
        ],
      }),
    );

    // The CloudWatch agent reads its configuration from SSM (the host role may read this one only).
    this.cloudWatchAgentConfig = new ssm.StringParameter(this, 'CloudWatchAgentConfig', {
      parameterName: cloudWatchAgentConfigName(props.stackName),
      description: 'benchfleet targets: per-second CPU steal/user/system/iowait (CWAgent namespace)',
      stringValue: JSON.stringify(cloudWatchAgentConfig()),
    });

    this.agentDocument = new ssm.CfnDocument(this, 'AgentDocument', {
      // Named, so the step callback's rules can match its commands only; a changed content becomes
      // the document's new default version (a named document cannot be replaced in place).
      name: agentDocumentName(props.stackName),
      updateMethod: 'NewVersion',
      documentType: 'Command',
      documentFormat: 'JSON',
      content: agentDocumentContent(this.agentBundle.httpUrl, this.cloudWatchAgentConfig.parameterName),
    });

    // Same name in every region: the Lambdas read it in the target's region (benchfleet.aws.fleet.regional).
    this.targetResources = new ssm.StringParameter(this, 'TargetResources', {
      parameterName: targetResourcesParameterName(props.stackName),
      description: 'benchfleet: ids of what targets need in this region (lambdas/benchfleet/aws/fleet/regional.py)',
      stringValue: stack.toJsonString(this.resourceIds()),
    });
  }

  /** What the Lambdas' grants in this region name (permissions.ts): the home stack adds its bucket. */
  public fleetResources(): FleetResources {
    const stack = Stack.of(this);
    return {
      vpcArn: stack.formatArn({ service: 'ec2', resource: 'vpc', resourceName: this.vpc.vpcId }),
      securityGroupIds: [
        this.clientSecurityGroup.securityGroupId,
        this.dbSecurityGroup.securityGroupId,
        this.clusterSecurityGroup.securityGroupId,
        this.proxySecurityGroup.securityGroupId,
      ],
      launchTemplateId: this.launchTemplate.launchTemplateId ?? '*',
      dbSubnetGroupName: this.dbSubnetGroup.subnetGroupName,
      targetRoleArn: this.role.roleArn,
      agentDocumentArn: this.agentDocumentArn,
      targetResourcesParameterArn: this.targetResources.parameterArn,
    };
  }

  /** The target-resources parameter's JSON; its keys are regional.py's FIELDS (jest checks both). */
  public resourceIds(): Record<string, unknown> {
    return {
      subnet_ids: this.subnetIds,
      client_security_group_id: this.clientSecurityGroup.securityGroupId,
      db_security_group_id: this.dbSecurityGroup.securityGroupId,
      db_subnet_group_name: this.dbSubnetGroup.subnetGroupName,
      launch_template_id: this.launchTemplate.launchTemplateId ?? '',
      agent_document_name: this.agentDocumentName,
      cluster_security_group_id: this.clusterSecurityGroup.securityGroupId,
      proxy_security_group_id: this.proxySecurityGroup.securityGroupId,
      subnet_zones: this.subnetZones,
    };
  }

  public get agentDocumentName(): string {
    return this.agentDocument.ref;
  }

  public get agentDocumentArn(): string {
    return Stack.of(this).formatArn({
      service: 'ssm',
      resource: 'document',
      resourceName: this.agentDocument.ref,
    });
  }

  /** Environment variables the Lambdas read (statemachines/README.md): the home region's ids. */
  public environment(): Record<string, string> {
    return {
      TARGET_INSTANCE_PROFILE_ARN: this.instanceProfile.instanceProfileArn,
      TARGET_ROLE_ARN: this.role.roleArn,
      CLIENT_SECURITY_GROUP_ID: this.clientSecurityGroup.securityGroupId,
      DB_SECURITY_GROUP_ID: this.dbSecurityGroup.securityGroupId,
      SUBNET_IDS: this.subnetIds.join(','),
      SUBNET_ZONES: this.subnetZones.join(','),
      CLUSTER_SECURITY_GROUP_ID: this.clusterSecurityGroup.securityGroupId,
      PROXY_SECURITY_GROUP_ID: this.proxySecurityGroup.securityGroupId,
      DB_SUBNET_GROUP_NAME: this.dbSubnetGroup.subnetGroupName,
      AGENT_DOCUMENT_NAME: this.agentDocumentName,
      AGENT_BUNDLE_S3_URI: this.agentBundle.s3ObjectUrl,
      LAUNCH_TEMPLATE_ID: this.launchTemplate.launchTemplateId ?? '',
      CLOUDWATCH_AGENT_CONFIG_PARAMETER: this.cloudWatchAgentConfig.parameterName,
      ...ownershipEnvironment(Stack.of(this)),
    };
  }
}

/** Galera's ports between a cluster's nodes (benchfleet.cluster.galera.DEFAULT_PORTS). */
export const GALERA_PORTS: ReadonlyArray<[number, string]> = [
  [3306, 'MySQL'],
  [4567, 'Galera replication'],
  [4568, 'Galera incremental state transfer'],
  [4444, 'Galera state snapshot transfer'],
];
/** The proxies' listen ports (benchfleet.cluster.proxyconf.LISTEN_PORT): HAProxy, ProxySQL. */
export const PROXY_PORTS: ReadonlyArray<[number, string]> = [
  [3307, 'HAProxy'],
  [6033, 'ProxySQL'],
];
/** The proxies' statistics ports (benchfleet.cluster.proxyconf.ADMIN_PORT): HAProxy's stats socket, ProxySQL's admin. */
export const PROXY_STATS_PORTS: ReadonlyArray<[number, string]> = [
  [3308, 'HAProxy stats socket'],
  [6032, 'ProxySQL statistics'],
];

/** The CloudWatch agent's configuration parameter, the same name in every region. */
export function cloudWatchAgentConfigName(stackName: string): string {
  return `AmazonCloudWatch-${stackName}-targets`;
}

/** Namespace the CloudWatch agent publishes in (cloudWatchAgentConfig): the host may write no other. */
export const CLOUDWATCH_AGENT_NAMESPACE = 'CWAgent';

/**
 * What the SSM agent needs for Run Command and the agent document (AmazonSSMManagedInstanceCore without
 * its ssm:GetParameter(s) on "*", which would let every host read all of Parameter Store, SecureStrings
 * included, and without the inventory, patching, compliance and association writes benchfleet never
 * uses): registration and ping, the Run Command message channels (ec2messages, and ssmmessages that
 * newer agents use), reading its associations (polled; none exist), and aws:configurePackage of the
 * CloudWatch agent from Distributor (the package's document and manifest, reporting the result).
 */
export const SSM_AGENT_ACTIONS = [
  'ssm:UpdateInstanceInformation',
  'ssm:ListInstanceAssociations',
  'ssm:DescribeDocument',
  'ssm:GetDocument',
  'ssm:GetManifest',
  'ssm:PutConfigurePackageResult',
  'ec2messages:AcknowledgeMessage',
  'ec2messages:DeleteMessage',
  'ec2messages:FailMessage',
  'ec2messages:GetEndpoint',
  'ec2messages:GetMessages',
  'ec2messages:SendReply',
  'ssmmessages:CreateControlChannel',
  'ssmmessages:CreateDataChannel',
  'ssmmessages:OpenControlChannel',
  'ssmmessages:OpenDataChannel',
];

/**
 * The target instance role (global: one per home stack, fixed name): the SSM and CloudWatch agents
 * (written out, not AWS's managed policies: AmazonSSMManagedInstanceCore reads all of Parameter Store,
 * CloudWatchAgentServerPolicy writes any log group and any metric namespace, the Benchfleet one that
 * feeds the removal-failure alarm included), Run Command's output under the host's own prefix of the
 * home results bucket (from every region: a host cannot touch another run's raw results), RDS-managed
 * passwords. Each region's TargetFleet adds the read of its own copy of the agent bundle.
 */
function instanceRole(scope: Construct, roleName: string, resultsBucket: s3.IBucket, cloudWatchConfig: string): iam.Role {
  const stack = Stack.of(scope);
  const role = new iam.Role(scope, 'InstanceRole', {
    roleName,
    assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
    description:
      'benchfleet targets: SSM and CloudWatch agents, agent bundle, its own Run Command output, RDS-managed DB passwords',
  });
  allowWildcard(role, 'unscopedApis');
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'SsmAgentRunCommand', actions: SSM_AGENT_ACTIONS, resources: ['*'] }),
  );
  // PutMetricData has no resource types: its namespace condition is what scopes it.
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchAgentMetrics',
      actions: ['cloudwatch:PutMetricData'],
      resources: ['*'],
      conditions: { StringEquals: { 'cloudwatch:namespace': CLOUDWATCH_AGENT_NAMESPACE } },
    }),
  );
  allowWildcard(role, 'cloudWatchAgentConfig');
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchAgentConfig',
      actions: ['ssm:GetParameter'],
      resources: [stack.formatArn({ service: 'ssm', region: '*', resource: 'parameter', resourceName: cloudWatchConfig })],
    }),
  );
  // RDS/Aurora targets: the agent on the client host reads the managed master password itself.
  grantRdsManagedSecretsRead(role);

  allowWildcard(role, 'hostsPrefix');
  // Run Command uploads the agent's output under the host's own prefix (IAM fills the variable from
  // the instance profile's credentials); it checks the bucket's encryption first and uploads with
  // the bucket-owner-full-control ACL, which needs s3:PutObjectAcl (the bucket enforces bucket
  // ownership, so the ACL grants nothing more).
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'WriteOwnRunCommandOutput',
      actions: ['s3:PutObject', 's3:PutObjectAcl'],
      resources: [resultsBucket.arnForObjects(HOSTS_PREFIX + '${ec2:SourceInstanceARN}/*')],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:GetEncryptionConfiguration'],
      resources: [resultsBucket.bucketArn],
    }),
  );
  return role;
}

/**
 * Per-second CPU steal of the whole host (cpu-total); InstanceId lets collect query one target's.
 * Each published metric is billed per host-hour and each flush is a PutMetricData request, so the
 * config publishes only what collect reads (the agent samples user/system/iowait from /proc/stat
 * itself) and flushes at the interval the control-plane estimate counts
 * (workloads/pricing/control-plane.json; tests/cdk/control-plane.test.ts checks both).
 */
export function cloudWatchAgentConfig(): Record<string, unknown> {
  return {
    agent: {
      metrics_collection_interval: 1,
      force_flush_interval: 60,
      logfile: '/opt/aws/amazon-cloudwatch-agent/logs/agent.log',
    },
    metrics: {
      namespace: 'CWAgent',
      append_dimensions: { InstanceId: '${aws:InstanceId}' },
      metrics_collected: {
        cpu: {
          measurement: ['cpu_usage_steal'],
          totalcpu: true,
          metrics_collection_interval: 1,
        },
      },
    },
  };
}

/**
 * The Run Command document that runs one agent job: install/start the CloudWatch agent (idempotent),
 * download and unpack the bundle, run the agent. JobJson reaches the shell only through an
 * environment variable (interpolationType ENV_VAR) and may not contain single quotes (fallback for
 * older SSM agents), so a job cannot inject shell code.
 */
export function agentDocumentContent(bundleHttpUrl: string, cloudWatchConfigParameter: string): Record<string, unknown> {
  const download = `${AGENT_HOME}/download`;
  const bundle = `${AGENT_HOME}/bundle`;
  return {
    schemaVersion: '2.2',
    description:
      'benchfleet agent: runs one benchmark job (sysbench + /proc/stat sampling) and prints JSON lines.',
    parameters: {
      JobJson: {
        type: 'String',
        description: "The agent's job as JSON (workloads/agent). Single quotes are not allowed.",
        allowedPattern: "^[^']+$",
        interpolationType: 'ENV_VAR',
      },
      BundleUri: {
        type: 'String',
        description: 'HTTPS S3 URL of the agent bundle (zip). Defaults to the bundle deployed with the stack.',
        default: bundleHttpUrl,
        allowedPattern: '^https://[^\\s\'"]+$',
      },
      executionTimeout: {
        type: 'String',
        description:
          `Seconds the agent may run, apt installs and data load included (1 to ${MAX_EXECUTION_TIMEOUT_SECONDS}, ` +
          `Run Command's maximum).`,
        default: String(DEFAULT_EXECUTION_TIMEOUT_SECONDS),
        allowedPattern: EXECUTION_TIMEOUT_PATTERN,
      },
    },
    mainSteps: [
      {
        action: 'aws:runShellScript',
        name: 'prepare',
        precondition: { StringEquals: ['platformType', 'Linux'] },
        inputs: { runCommand: [`rm -rf ${download}`, `mkdir -p ${download}`] },
      },
      {
        action: 'aws:configurePackage',
        name: 'installCloudWatchAgent',
        precondition: { StringEquals: ['platformType', 'Linux'] },
        inputs: { name: 'AmazonCloudWatchAgent', action: 'Install' },
      },
      {
        action: 'aws:downloadContent',
        name: 'downloadBundle',
        precondition: { StringEquals: ['platformType', 'Linux'] },
        inputs: {
          sourceType: 'S3',
          sourceInfo: '{"path": "{{ BundleUri }}"}',
          destinationPath: download,
        },
      },
      {
        action: 'aws:runShellScript',
        name: AGENT_PLUGIN,
        precondition: { StringEquals: ['platformType', 'Linux'] },
        inputs: {
          timeoutSeconds: '{{ executionTimeout }}',
          runCommand: [
            'set -eu',
            // Run Command runs aws:runShellScript as root on Linux; the agent installs packages with apt
            // and reads root-only option files, so refuse to start half-privileged.
            'if [ "$(id -u)" != 0 ]; then echo "benchfleet: runAgent must run as root" >&2; exit 1; fi',
            // SSM agents older than 3.3.2746 do not export SSM_<parameter>.
            `if [ -z "\${SSM_JobJson+x}" ]; then SSM_JobJson='{{ JobJson }}'; fi`,
            `zip="$(find ${download} -type f | head -n 1)"`,
            `rm -rf ${bundle} && mkdir -p ${bundle}`,
            // Python's zipfile (`-m zipfile -e` too) sets no Unix mode, and the bundle ships executables
            // (go-tpc's binaries): each file keeps the executable bit the zip records (the CDK CLI
            // stores every file's mode), so the agent can run them.
            `python3 - "$zip" ${bundle} <<'UNZIP'`,
            'import os, sys, zipfile',
            'with zipfile.ZipFile(sys.argv[1]) as z:',
            '    for info in z.infolist():',
            '        path = z.extract(info, sys.argv[2])',
            '        if not info.is_dir() and (info.external_attr >> 16) & 0o111:',
            '            os.chmod(path, 0o755)',
            'UNZIP',
            // The CloudWatch agent is best effort: without it the step runs and records the missing
            // metric (the agent's --cloudwatch-agent notice); its messages go to stderr, not the JSON lines.
            'ctl=/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl',
            'cw=not-installed',
            'if [ -x "$ctl" ]; then cw=running; ' +
              `if ! "$ctl" -a status 2>/dev/null | grep -q '"status": "running"'; then ` +
              `"$ctl" -a fetch-config -m ec2 -s -c ssm:${cloudWatchConfigParameter} >&2 || cw=failed-to-start; fi; fi`,
            `cd ${bundle}`,
            'exec python3 workloads/agent/benchfleet_agent.py --job-json "$SSM_JobJson" ' +
              `--lock ${AGENT_LOCK} --keep-dir ${AGENT_KEEP_DIR} --cloudwatch-agent "$cw"`,
          ],
        },
      },
    ],
  };
}
