/**
 * Least-privilege building blocks for the Lambda roles. Runs may create EC2/RDS resources only
 * when the request carries the run tags and this stack's `benchfleet:stack` identity, and may
 * terminate/delete only resources that carry both (cdk/lib/ownership.ts); nothing may lift deletion
 * or termination protection; describe-style calls have no resource-level permissions and use "*".
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct, IConstruct } from 'constructs';
import { allowWildcard } from './nag';
import {
  ALLOWED_RUN_TAG_KEYS,
  TAG_EXPIRES_AT,
  TAG_AGENT_HOST,
  TAG_RUN_ID,
  TAG_SECRET_READER,
  TAG_STACK,
  UBUNTU_AMI_OWNER,
} from './naming';
import { dbIdentifierPrefix, Ownership, stackOwner } from './ownership';

type Conditions = Record<string, Record<string, unknown>>;

/**
 * Conditions a create request must meet: run-id and expires-at tags, this stack as the owner, only
 * benchfleet/Name keys. `extraEquals` joins the StringEquals block (one key per operator in JSON).
 */
export function requireRunTags(owner: string, extraEquals: Record<string, string> = {}): Conditions {
  return {
    Null: { [`aws:RequestTag/${TAG_RUN_ID}`]: 'false', [`aws:RequestTag/${TAG_EXPIRES_AT}`]: 'false' },
    StringEquals: { [`aws:RequestTag/${TAG_STACK}`]: owner, ...extraEquals },
    'ForAllValues:StringLike': { 'aws:TagKeys': ALLOWED_RUN_TAG_KEYS },
  };
}

/** Conditions on an existing resource: a run's, and this stack's. */
export function requireOwnedResource(owner: string, tagPrefix = 'aws:ResourceTag'): Conditions {
  return {
    Null: { [`${tagPrefix}/${TAG_RUN_ID}`]: 'false' },
    StringEquals: { [`${tagPrefix}/${TAG_STACK}`]: owner },
  };
}

/**
 * What a grant adds statements to: a role, or a regional stack's managed policy attached to a role of
 * the home stack (regional-stack.ts). The holder is also where the grant's cdk-nag reasons go.
 */
export interface PolicyHolder extends IConstruct {
  addToPrincipalPolicy(statement: iam.PolicyStatement): unknown;
}

export interface FleetResources {
  readonly vpcArn: string;
  readonly securityGroupIds: string[];
  readonly launchTemplateId: string;
  readonly dbSubnetGroupName: string;
  readonly targetRoleArn: string;
  readonly agentDocumentArn: string;
  /**
   * The bucket Run Command writes the agent's output to (SendCommand's OutputS3BucketName). Bucket
   * ARNs name no region: the home stack's grant covers every region, regional stacks omit it.
   */
  readonly outputBucketArn?: string;
  /** The target-resources SSM parameter of a regional stack (regional.py reads it there). */
  readonly targetResourcesParameterArn?: string;
}

/** Reads that do not support resource-level permissions. */
const DESCRIBE_ACTIONS = [
  'ec2:DescribeInstances',
  'ec2:DescribeInstanceStatus',
  'ec2:DescribeInstanceTypes',
  'ec2:DescribeImages',
  'ec2:DescribeVolumes',
  'ec2:DescribeSubnets',
  'rds:DescribeDBInstances',
  'rds:DescribeDBClusters',
  'rds:DescribeDBEngineVersions',
  'rds:DescribeOrderableDBInstanceOptions',
  'rds:DescribeDBParameterGroups',
  'rds:DescribeDBClusterParameterGroups',
  'ssm:DescribeInstanceInformation',
];

export class Permissions {
  private readonly stack: Stack;
  private readonly owner: string;
  private readonly dbPrefix: string;

  /** `ownership`: whose runs these grants are for; default the stack's own (a regional stack passes its home's). */
  constructor(
    scope: Construct,
    private readonly fleet: FleetResources,
    ownership?: Ownership,
  ) {
    this.stack = Stack.of(scope);
    this.owner = ownership?.owner ?? stackOwner(this.stack);
    this.dbPrefix = ownership?.dbPrefix ?? dbIdentifierPrefix(this.stack);
  }

  private arn(service: string, resource: string, resourceName: string, account = true): string {
    return this.stack.formatArn({
      service,
      resource,
      resourceName,
      // secretsmanager ARNs are arn:...:secret:name, EC2 ones arn:...:instance/id
      arnFormat: service === 'secretsmanager' ? ArnFormat.COLON_RESOURCE_NAME : ArnFormat.SLASH_RESOURCE_NAME,
      ...(account ? {} : { account: '' }),
    });
  }

  private ec2(resource: string, region?: string): string {
    return this.stack.formatArn({
      service: 'ec2',
      resource,
      resourceName: '*',
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      ...(region === undefined ? {} : { region }),
    });
  }

  private rds(resourceType: string, name = '*', region = this.stack.region): string {
    return `arn:${this.stack.partition}:rds:${region}:${this.stack.account}:${resourceType}:${name}`;
  }

  /** Describe/list calls targets need to find and watch their resources. */
  public grantDescribe(role: iam.IRole): void {
    allowWildcard(role, 'unscopedApis');

    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: DESCRIBE_ACTIONS, resources: ['*'] }));
  }

  /** provision: launch EC2 targets and create RDS/Aurora targets, tagged with the run. */
  public grantTargetCreate(role: PolicyHolder): void {
    allowWildcard(role, 'instances');
    allowWildcard(role, 'launchResources');
    allowWildcard(role, 'ubuntuImages');
    allowWildcard(role, 'ubuntuAmiParameters');
    allowWildcard(role, 'databases');

    const instanceArn = this.ec2('instance');
    const volumeArn = this.ec2('volume');
    const eniArn = this.ec2('network-interface');
    const add = (s: iam.PolicyStatement): void => {
      role.addToPrincipalPolicy(s);
    };
    // The instance itself: tagged, IMDSv2 only, from our launch template.
    add(
      new iam.PolicyStatement({
        sid: 'RunTaggedInstances',
        actions: ['ec2:RunInstances'],
        resources: [instanceArn],
        conditions: requireRunTags(this.owner, { 'ec2:MetadataHttpTokens': 'required' }),
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'RunTaggedEncryptedVolumes',
        actions: ['ec2:RunInstances'],
        resources: [volumeArn],
        conditions: { ...requireRunTags(this.owner), Bool: { 'ec2:Encrypted': 'true' } },
      }),
    );
    // Resources RunInstances uses but does not create with tags: our VPC, SGs, template, Ubuntu AMIs.
    add(
      new iam.PolicyStatement({
        sid: 'RunInOurVpc',
        actions: ['ec2:RunInstances'],
        resources: [this.ec2('subnet'), eniArn],
        conditions: { ArnEquals: { 'ec2:Vpc': this.fleet.vpcArn } },
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'RunWithOurSecurityGroupsAndTemplate',
        actions: ['ec2:RunInstances'],
        resources: [
          ...this.fleet.securityGroupIds.map((id) => this.arn('ec2', 'security-group', id)),
          this.arn('ec2', 'launch-template', this.fleet.launchTemplateId),
        ],
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'RunUbuntuImages',
        actions: ['ec2:RunInstances'],
        resources: [this.arn('ec2', 'image', '*', false)],
        conditions: { StringEquals: { 'ec2:Owner': UBUNTU_AMI_OWNER } },
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'TagOnLaunchOnly',
        actions: ['ec2:CreateTags'],
        resources: [instanceArn, volumeArn, eniArn],
        conditions: requireRunTags(this.owner, { 'ec2:CreateAction': 'RunInstances' }),
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'PassTargetRoleToEc2',
        actions: ['iam:PassRole'],
        resources: [this.fleet.targetRoleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'ec2.amazonaws.com' } },
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'ReadUbuntuAmiParameters',
        actions: ['ssm:GetParameter', 'ssm:GetParameters'],
        resources: [
          this.stack.formatArn({
            service: 'ssm',
            account: '',
            resource: 'parameter',
            resourceName: 'aws/service/canonical/ubuntu/*',
          }),
        ],
      }),
    );
    // RDS / Aurora: instances and clusters are created only with run tags and this stack as owner,
    // named as provision names them (the stack's prefix, then `-r<repetition>-<role>`), in our DB subnet
    // group. RDS authorizes the tags of a create as rds:AddTagsToResource and has no create-only
    // condition like ec2:CreateAction, so IAM cannot tell tagging at create from tagging an untagged
    // database someone named this way: allowing it only on these names narrows it, and the sweepers
    // remove only databases whose identifier is the one provision derives from their run-id and
    // target-id tags (benchfleet.aws.fleet.sweep), so such a database is reported, never removed.
    const ownDbs = ownDatabaseArns(this.dbPrefix, (type, name) => this.rds(type, name));
    // The run's own parameter groups (lambdas/benchfleet/aws/fleet/paramgroups.py) likewise: created
    // with the run tags, named as the databases are (`-r<repetition>-pg`, `-cpg`), set before the
    // database that names them is created (which authorizes the create against them too).
    const ownGroups = ownParameterGroupArns(this.dbPrefix, (type, name) => this.rds(type, name));
    add(
      new iam.PolicyStatement({
        sid: 'CreateOwnedDatabasesAndGroups',
        actions: [
          'rds:CreateDBInstance',
          'rds:CreateDBCluster',
          'rds:CreateDBParameterGroup',
          'rds:CreateDBClusterParameterGroup',
          'rds:AddTagsToResource',
        ],
        resources: [...ownDbs, ...ownGroups],
        conditions: requireRunTags(this.owner),
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'SetOwnedParameterGroups',
        // ListTagsForResource: a group of the run's name that exists is adopted only when its tags
        // are the run's (paramgroups._adopt); one not tagged as this stack's cannot even be read.
        actions: ['rds:ModifyDBParameterGroup', 'rds:ModifyDBClusterParameterGroup', 'rds:ListTagsForResource'],
        resources: ownGroups,
        conditions: requireOwnedResource(this.owner),
      }),
    );
    // What a create names besides: the default option group, our subnet group. Only the creates:
    // AddTagsToResource is not allowed on them.
    add(
      new iam.PolicyStatement({
        sid: 'CreateWithDefaultOptionsInOurSubnets',
        actions: ['rds:CreateDBInstance', 'rds:CreateDBCluster'],
        resources: [this.rds('og', 'default:*'), this.rds('subgrp', this.fleet.dbSubnetGroupName)],
        conditions: requireRunTags(this.owner),
      }),
    );
    // The Service Authorization Reference's dependent actions of rds:CreateDBInstance/CreateDBCluster
    // for what provision asks (ManageMasterUserPassword, StorageEncrypted, both with the AWS managed
    // keys): kms:DescribeKey on the Secrets Manager and RDS keys, whose ids differ per account and
    // region, so they are matched by alias.
    allowWildcard(role, 'awsManagedKeys');
    add(
      new iam.PolicyStatement({
        sid: 'DescribeAwsManagedKeysForRds',
        actions: ['kms:DescribeKey'],
        resources: [this.arn('kms', 'key', '*')],
        conditions: {
          'ForAnyValue:StringEquals': { 'kms:ResourceAliases': ['alias/aws/secretsmanager', 'alias/aws/rds'] },
        },
      }),
    );
    // In a fresh account the first CreateDBInstance creates RDS's service-linked role with the
    // caller's permissions.
    add(
      new iam.PolicyStatement({
        sid: 'RdsServiceLinkedRole',
        actions: ['iam:CreateServiceLinkedRole'],
        resources: [
          `arn:${this.stack.partition}:iam::${this.stack.account}:role/aws-service-role/rds.amazonaws.com/` +
            'AWSServiceRoleForRDS',
        ],
        conditions: { StringEquals: { 'iam:AWSServiceName': 'rds.amazonaws.com' } },
      }),
    );
  }

  /**
   * provision: RDS creates and tags the managed master secret of a run's database with provision's
   * permissions. Granted once, by the home stack, for every region (the secret lives beside its
   * database, which provision can create only in the target regions): written per region it made each
   * regional stack's provision grants too long for one managed policy (6,144 characters).
   */
  public grantRdsSecretCreate(role: PolicyHolder): void {
    allowWildcard(role, 'rdsSecrets');
    // ManageMasterUserPassword: RDS creates the secret (rds!<db|cluster>-<uuid>) with the caller's
    // permissions and tags it with its database's ARN (aws:rds:primaryDBInstanceArn /
    // aws:rds:primaryDBClusterArn). Only an AWS service may set an aws: tag, so requiring that request
    // tag, naming a database of this stack's prefix, lets RDS create and tag the secrets of our
    // databases and nobody anything else, without relying on aws:CalledVia (whose presence on these
    // calls the documentation does not settle); benchfleet:secret-reader is readiness's to set, never here.
    for (const { kind, type, tag } of RDS_SECRET_KINDS) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: `RdsCreatesOwnDb${kind}Secret`,
          actions: ['secretsmanager:CreateSecret', 'secretsmanager:TagResource'],
          resources: [
            this.stack.formatArn({
              service: 'secretsmanager',
              region: '*',
              resource: 'secret',
              resourceName: `rds!${type}-*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          ],
          conditions: {
            StringLike: { [`aws:RequestTag/${tag}`]: this.rds(type, `${this.dbPrefix}-*`, '*') },
            'ForAllValues:StringNotEquals': { 'aws:TagKeys': [TAG_SECRET_READER] },
          },
        }),
      );
    }
  }

  /**
   * provision: a cluster's password secrets (benchfleet.aws.fleet.cluster), created with the run's tags
   * only (CreateSecret's Tags need TagResource too) and read back by name when a retried provision finds
   * one. In every region at once (the ARN's region is `*`): the home stack's role only, so the regional
   * stacks' managed policies stay within their size limit.
   */
  public grantClusterSecretsCreate(role: iam.IRole): void {
    allowWildcard(role, 'clusterSecrets');
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'CreateOwnedClusterSecrets',
        actions: ['secretsmanager:CreateSecret', 'secretsmanager:TagResource'],
        resources: [clusterSecretArn(this.stack)],
        conditions: requireRunTags(this.owner),
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DescribeOwnedClusterSecrets',
        actions: ['secretsmanager:DescribeSecret'],
        resources: [clusterSecretArn(this.stack)],
        conditions: requireOwnedResource(this.owner),
      }),
    );
  }

  /**
   * teardown / teardown_by_tag / janitor / api: terminate and delete only resources of a run of this
   * stack (instances, their data volumes, databases), in the stack's region and in `extraRegions`
   * (the sweep regions; ARNs name their region).
   * No Modify*: benchfleet creates nothing protected, so protection is a person's and stays on.
   */
  public grantTargetDelete(role: iam.IRole, extraRegions: readonly string[] = []): void {
    allowWildcard(role, 'instances');
    allowWildcard(role, 'volumes');
    allowWildcard(role, 'databases');

    const actions = {
      instances: ['ec2:TerminateInstances'],
      volumes: ['ec2:DeleteVolume'],
      databases: ['rds:DeleteDBInstance', 'rds:DeleteDBCluster'],
      groups: ['rds:DeleteDBParameterGroup', 'rds:DeleteDBClusterParameterGroup'],
      groupTags: ['rds:ListTagsForResource'],
    };
    const region = this.onlyInRegions(role, 'DeleteOnlyInListedRegions', Object.values(actions).flat(), extraRegions);
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TerminateOwnedInstances',
        actions: actions.instances,
        resources: [this.ec2('instance', region)],
        conditions: requireOwnedResource(this.owner),
      }),
    );
    // Data volumes go with their instance (DeleteOnTermination); one left detached (a failed attach,
    // an instance gone before its volume) is deleted by tag, like the instance.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeleteOwnedVolumes',
        actions: actions.volumes,
        resources: [this.ec2('volume', region)],
        conditions: requireOwnedResource(this.owner),
      }),
    );
    // A cluster's password secrets: deleted by tag, found by ListSecrets (no resource-level permission).
    allowWildcard(role, 'clusterSecrets');
    allowWildcard(role, 'unscopedApis');
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeleteOwnedClusterSecrets',
        actions: ['secretsmanager:DeleteSecret'],
        resources: [clusterSecretArn(this.stack)],
        conditions: requireOwnedResource(this.owner),
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'ListSecrets', actions: ['secretsmanager:ListSecrets'], resources: ['*'] }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeleteOwnedDatabases',
        actions: actions.databases,
        resources: ownDatabaseArns(this.dbPrefix, (type, name) => this.rds(type, name, region)),
        conditions: requireOwnedResource(this.owner),
      }),
    );
    // The run's parameter groups, after their databases. RDS lists them without tags: the sweepers
    // read the tags of those named as provision names them (read only).
    const groups = ownParameterGroupArns(this.dbPrefix, (type, name) => this.rds(type, name, region));
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeleteOwnedParameterGroups',
        actions: actions.groups,
        resources: groups,
        conditions: requireOwnedResource(this.owner),
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadParameterGroupTags',
        actions: actions.groupTags,
        resources: groups,
      }),
    );
  }

  /**
   * readiness: reboot a run's writer whose parameter groups wait for it (a static parameter), in the
   * stack's region and `extraRegions` (where targets run). Only databases of a run of this stack.
   */
  public grantDatabaseReboot(role: iam.IRole, extraRegions: readonly string[] = []): void {
    allowWildcard(role, 'databases');

    const actions = ['rds:RebootDBInstance'];
    const region = this.onlyInRegions(role, 'RebootOnlyInTargetRegions', actions, extraRegions);
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'RebootOwnedDatabases',
        actions,
        resources: ownDatabaseArns(this.dbPrefix, (type, name) => this.rds(type, name, region)).filter((arn) =>
          arn.includes(':db:'),
        ),
        conditions: requireOwnedResource(this.owner),
      }),
    );
  }

  /**
   * The region to put in the ARNs of `actions` for the stack's region plus `extraRegions`. One region:
   * that region. Several: `*`, and one Deny of those actions outside the list (aws:RequestedRegion,
   * set on every request). One ARN per region and statement made a role's policy grow with the
   * region count until CDK split it into OverflowPolicy managed policies, which at the allowed
   * maximum (10 target regions, 30 sweep regions) were themselves larger than IAM accepts; this way
   * the list is written once per role, and the Allow statements stay those of one region.
   */
  private onlyInRegions(role: iam.IRole, sid: string, actions: string[], extraRegions: readonly string[]): string {
    const regions = [this.stack.region, ...extraRegions.filter((r) => r !== this.stack.region)];
    if (regions.length === 1) return this.stack.region;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid,
        effect: iam.Effect.DENY,
        actions,
        resources: ['*'],
        conditions: { StringNotEquals: { 'aws:RequestedRegion': regions } },
      }),
    );
    return '*';
  }

  /**
   * start_step: a variant's dynamic parameters into its repetition's parameter groups (rds / aurora),
   * only groups of a run of this stack.
   */
  public grantParameterGroupSwitch(role: PolicyHolder): void {
    allowWildcard(role, 'databases');

    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SwitchOwnedParameterGroups',
        actions: ['rds:ModifyDBParameterGroup', 'rds:ModifyDBClusterParameterGroup'],
        resources: ownParameterGroupArns(this.dbPrefix, (type, name) => this.rds(type, name)),
        conditions: requireOwnedResource(this.owner),
      }),
    );
  }

  /** start_step: Run Command of the agent document, on run-tagged instances only. */
  public grantCommandSend(role: PolicyHolder): void {
    allowWildcard(role, 'instances');

    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SendAgentDocument',
        actions: ['ssm:SendCommand'],
        resources: [this.fleet.agentDocumentArn],
      }),
    );
    // SendCommand with OutputS3BucketName is also authorized against the bucket (Service
    // Authorization Reference: ssm:SendCommand, resource type bucket).
    if (this.fleet.outputBucketArn !== undefined) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'SendOutputToResultsBucket',
          actions: ['ssm:SendCommand'],
          resources: [this.fleet.outputBucketArn],
        }),
      );
    }
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SendToOwnedInstances',
        actions: ['ssm:SendCommand'],
        resources: [this.ec2('instance')],
        conditions: requireOwnedResource(this.owner, 'ssm:resourceTag'),
      }),
    );
    // An existing target's host is someone else's: its owner opts in with benchfleet:agent-host,
    // which lets this stack run the agent document there and gives no role any other right on it.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SendToOptedInHosts',
        actions: ['ssm:SendCommand'],
        resources: [this.ec2('instance')],
        conditions: { StringEquals: { [`ssm:resourceTag/${TAG_AGENT_HOST}`]: this.owner } },
      }),
    );
  }

  /** provision / start_step in a regional stack's region: the ids it published (benchfleet.aws.fleet.regional). */
  public grantTargetResourcesRead(role: PolicyHolder): void {
    if (this.fleet.targetResourcesParameterArn === undefined) return;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadTargetResources',
        actions: ['ssm:GetParameter'],
        resources: [this.fleet.targetResourcesParameterArn],
      }),
    );
  }

  /** step_callback / readiness: command results (no resource-level permissions). */
  public grantCommandRead(role: iam.IRole): void {
    allowWildcard(role, 'unscopedApis');

    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ssm:GetCommandInvocation', 'ssm:ListCommandInvocations', 'ssm:ListCommands'],
        resources: ['*'],
      }),
    );
  }

  /** collect: the CloudWatch window of a step (GetMetricData has no resource-level permissions). */
  public grantCloudMetrics(role: iam.IRole): void {
    allowWildcard(role, 'unscopedApis');

    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }),
    );
  }

}

/** The two kinds of RDS-managed master secret: per DB instance, per Aurora cluster, and RDS's tag on each. */
const RDS_SECRET_KINDS = [
  { kind: 'Instance', type: 'db', tag: 'aws:rds:primaryDBInstanceArn' },
  { kind: 'Cluster', type: 'cluster', tag: 'aws:rds:primaryDBClusterArn' },
];

/**
 * ARNs of the databases provision creates (lambdas/benchfleet/plan/naming.py db_identifier): the stack's
 * prefix, a readable target id and a digest, then `-r<repetition>-<role>`; instances are `db` (RDS) or
 * `writer` (an Aurora cluster's), clusters `cluster`.
 */
export function ownDatabaseArns(prefix: string, arn: (type: string, name: string) => string): string[] {
  return [arn('db', `${prefix}-*-r*-db`), arn('db', `${prefix}-*-r*-writer`), arn('cluster', `${prefix}-*-r*-cluster`)];
}

/**
 * ARNs of the parameter groups provision creates for an rds / aurora repetition, named like its
 * databases: `-r<repetition>-pg` (DB parameter group), `-r<repetition>-cpg` (DB cluster parameter group).
 */
export function ownParameterGroupArns(prefix: string, arn: (type: string, name: string) => string): string[] {
  return [arn('pg', `${prefix}-*-r*-pg`), arn('cluster-pg', `${prefix}-*-r*-cpg`)];
}

/**
 * The RDS-managed master secrets of this stack's databases, per kind: RDS names the secret
 * `rds!<db|cluster>-<uuid>` and tags it with the ARN of its DB instance or cluster
 * (`aws:rds:primaryDBInstanceArn` / `aws:rds:primaryDBClusterArn`), and this stack's DBs are named
 * with its prefix. Any region: a target may run wherever a spec puts it, and its secret lives
 * beside its database.
 */
function ownedRdsSecrets(stack: Stack): Array<{ kind: string; resource: string; condition: Record<string, string> }> {
  const prefix = dbIdentifierPrefix(stack);
  return RDS_SECRET_KINDS.map(({ kind, type, tag }) => ({
    kind,
    resource: stack.formatArn({
      service: 'secretsmanager',
      region: '*',
      resource: 'secret',
      resourceName: `rds!${type}-*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    }),
    condition: {
      [`secretsmanager:ResourceTag/${tag}`]: `arn:${stack.partition}:rds:*:${stack.account}:${type}:${prefix}-*`,
    },
  }));
}

/**
 * The target instance role: the RDS-managed master password of the database its own run created,
 * read by the agent on the client host itself, so the password never travels in Run Command
 * parameters.
 *
 * One role serves every host, and a host's credentials carry no run (instance tags are not
 * principal tags), but they do carry the instance: `ec2:SourceInstanceARN` is in the request
 * context of every call made with an instance profile's credentials, and IAM accepts it as a policy
 * variable in a string condition (IAM User Guide, "IAM policy elements: Variables and tags",
 * "Request information that you can use for policy variables"). Readiness tags the secret of each
 * run's database with the ARN of that run's client host (benchfleet:secret-reader, below), so a
 * host reads the one secret whose tag names it, and no other: not another run's, not another
 * stack's, not a secret it was never bound to. An `existing` target's secret is read on its
 * owner's host with its owner's role; this role grants nothing on it.
 */
export function grantRdsManagedSecretsRead(role: iam.IRole & Construct): void {
  allowWildcard(role, 'rdsSecrets');

  for (const { kind, resource, condition } of ownedRdsSecrets(Stack.of(role))) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `ReadOwnRunsRds${kind}Secret`,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [resource],
        conditions: {
          StringLike: condition,
          StringEquals: { [`secretsmanager:ResourceTag/${TAG_SECRET_READER}`]: '${ec2:SourceInstanceARN}' },
        },
      }),
    );
  }
  // A cluster's password (benchfleet.aws.fleet.cluster): this stack's, bound to the host that reads it.
  allowWildcard(role, 'clusterSecrets');
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'ReadOwnRunsClusterSecret',
      actions: ['secretsmanager:GetSecretValue'],
      resources: [clusterSecretArn(Stack.of(role))],
      conditions: {
        StringEquals: {
          [`secretsmanager:ResourceTag/${TAG_SECRET_READER}`]: '${ec2:SourceInstanceARN}',
          [`secretsmanager:ResourceTag/${TAG_STACK}`]: stackOwner(Stack.of(role)),
        },
      },
    }),
  );
}

/**
 * readiness: bind the secret of a run's database to that run's client host, by tagging it with the
 * host's instance ARN once the database is available (what the host role's read requires). Only
 * secrets of this stack's databases, only that one tag key, only an instance ARN of this account as
 * its value. Secrets Manager lets the caller tag a secret another service manages (TagResource; the
 * `aws:` tags RDS sets stay RDS's); nothing here can untag, and no other role can tag.
 */
export function grantRdsSecretBinding(role: iam.IRole & Construct): void {
  allowWildcard(role, 'rdsSecrets');

  const stack = Stack.of(role);
  for (const { kind, resource, condition } of ownedRdsSecrets(stack)) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `BindRds${kind}SecretToItsHost`,
        actions: ['secretsmanager:TagResource'],
        resources: [resource],
        conditions: {
          StringLike: {
            ...condition,
            [`aws:RequestTag/${TAG_SECRET_READER}`]: `arn:${stack.partition}:ec2:*:${stack.account}:instance/i-*`,
          },
          'ForAllValues:StringEquals': { 'aws:TagKeys': [TAG_SECRET_READER] },
        },
      }),
    );
  }
  // A cluster's password secrets, each bound to the host that reads it: this stack's only.
  allowWildcard(role, 'clusterSecrets');
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'BindClusterSecretToItsHost',
      actions: ['secretsmanager:TagResource'],
      resources: [clusterSecretArn(stack)],
      conditions: {
        StringEquals: { [`secretsmanager:ResourceTag/${TAG_STACK}`]: stackOwner(stack) },
        StringLike: {
          [`aws:RequestTag/${TAG_SECRET_READER}`]: `arn:${stack.partition}:ec2:*:${stack.account}:instance/i-*`,
        },
        'ForAllValues:StringEquals': { 'aws:TagKeys': [TAG_SECRET_READER] },
      },
    }),
  );
}

/**
 * A cluster target's password secrets (benchfleet.plan.naming.cluster_secret_name:
 * benchfleet/<run>/<target>/rep-<n>/<host>), in any region a target may run in; every statement on
 * them is conditioned on this stack's tags.
 */
export function clusterSecretArn(stack: Stack): string {
  return stack.formatArn({
    service: 'secretsmanager',
    region: '*',
    resource: 'secret',
    resourceName: 'benchfleet/*',
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
