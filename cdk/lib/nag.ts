/**
 * cdk-nag suppressions for IAM wildcards, registered by the code that adds the wildcard statement,
 * on the role that holds it, with the reason the wildcard is needed (each at most once per role).
 */
import { NagPackSuppression, NagSuppressions } from 'cdk-nag';
import { IConstruct } from 'constructs';

/**
 * appliesTo patterns matching a resource ARN whether the stack is environment-agnostic
 * (arn:<AWS::Partition>:svc:<AWS::Region>:<AWS::AccountId>:...) or has a concrete account and region.
 */
const PARTITION = '(<AWS::Partition>|aws[a-z-]*)';
const REGION = '(<AWS::Region>|[a-z0-9-]+)';
const ACCOUNT = '(<AWS::AccountId>|[0-9]{12})';
function arnPattern(service: string, rest: string, withAccount = true): { regex: string } {
  const escaped = rest.replace(/[.*+?^${}()|[\]\\/!]/g, '\\$&');
  const account = withAccount ? ACCOUNT : '';
  return { regex: `/^Resource::arn:${PARTITION}:${service}:${REGION}:${account}:${escaped}$/` };
}
const regional = (service: string, rest: string): { regex: string } => arnPattern(service, rest);
/**
 * The same, or any region (`*`): the deleting roles of a stack with several target or sweep regions
 * name no region and deny the others by aws:RequestedRegion (Permissions.onlyInRegions).
 */
const anyRegion = (service: string, rest: string): { regex: string } => {
  const { regex } = arnPattern(service, rest);
  return { regex: regex.replace(`:${service}:${REGION}:`, `:${service}:(${REGION}|\\*):`) };
};

export const WILDCARDS = {
  unscopedApis: {
    appliesTo: ['Resource::*'],
    reason:
      'Only actions that support no resource-level permissions use "*": EC2/RDS/SSM Describe*/List*, ' +
      'ssm:GetCommandInvocation, cloudwatch:GetMetricData, timestream:DescribeEndpoints, ' +
      'X-Ray PutTraceSegments/PutTelemetryRecords and CloudWatch Logs delivery management; on the target ' +
      "role the SSM agent's registration and Run Command channels (ec2messages, ssmmessages) and the " +
      "CloudWatch agent's PutMetricData, conditioned on its namespace CWAgent.",
  },
  cloudWatchAgentConfig: {
    appliesTo: [{ regex: `/^Resource::arn:${PARTITION}:ssm:\\*:${ACCOUNT}:parameter\\/AmazonCloudWatch-[A-Za-z0-9-]+-targets$/` }],
    reason:
      "The CloudWatch agent's configuration parameter of this stack, the same name in every region a host " +
      'may run in (read only).',
  },
  runsPrefix: {
    appliesTo: [{ regex: '/^Resource::<[A-Za-z0-9]*Results[A-Za-z0-9]*\\.Arn>\\/runs\\/\\*$/' }],
    reason:
      'Raw results are keyed runs/<run_id>/<target_id>/... with run ids chosen at run time; access is ' +
      'limited to the runs/ prefix of the results bucket.',
  },
  hostsPrefix: {
    appliesTo: [
      { regex: '/^Resource::<[A-Za-z0-9]*Results[A-Za-z0-9]*\\.Arn>\\/hosts\\/\\*$/' },
      // The target role: its own instance's prefix only (IAM fills the variable from the credentials).
      { regex: '/^Resource::<[A-Za-z0-9]*Results[A-Za-z0-9]*\\.Arn>\\/hosts\\/<ec2:SourceInstanceARN>\\/\\*$/' },
    ],
    reason:
      'Run Command output is keyed hosts/<instance ARN>/<run>/... with instances and runs made at run time: ' +
      'a host writes under its own instance ARN only (${ec2:SourceInstanceARN}); collect reads the hosts/ prefix.',
  },
  instances: {
    appliesTo: [anyRegion('ec2', 'instance/*')],
    reason:
      'Instance ids exist only at run time; every statement on instance/* is conditioned on the ' +
      'benchfleet:run-id tag and this stack as benchfleet:stack (aws:RequestTag to launch, ' +
      'aws:ResourceTag / ssm:resourceTag to use or terminate); terminating in any region (*) is denied ' +
      'outside the stack\'s target or sweep regions (aws:RequestedRegion).',
  },
  volumes: {
    appliesTo: [anyRegion('ec2', 'volume/*')],
    reason:
      'Data volume ids exist only at run time (created with their instance); deleting one requires the ' +
      'benchfleet:run-id tag and this stack as benchfleet:stack on the volume (aws:ResourceTag), and ' +
      'is denied outside the stack\'s target or sweep regions (aws:RequestedRegion).',
  },
  launchResources: {
    appliesTo: [
      regional('ec2', 'volume/*'),
      regional('ec2', 'network-interface/*'),
      regional('ec2', 'subnet/*'),
    ],
    reason:
      'RunInstances creates volumes and network interfaces at run time: volumes must carry the run tags and ' +
      'be encrypted; subnets and interfaces are limited to the benchfleet VPC (ec2:Vpc).',
  },
  ubuntuImages: {
    appliesTo: [arnPattern('ec2', 'image/*', false)],
    reason: "Ubuntu AMI ids change with every release; limited to Canonical's owner id (ec2:Owner).",
  },
  ubuntuAmiParameters: {
    appliesTo: [arnPattern('ssm', 'parameter/aws/service/canonical/ubuntu/*', false)],
    reason: "Canonical's public AMI parameters, one per release and architecture (read only).",
  },
  databases: {
    appliesTo: [
      { regex: `/^Resource::arn:${PARTITION}:rds:(${REGION}|\\*):${ACCOUNT}:(db|cluster):bf[0-9a-f]{6}-\\*-r\\*-(db|writer|cluster)$/` },
      { regex: `/^Resource::arn:${PARTITION}:rds:(${REGION}|\\*):${ACCOUNT}:(pg|cluster-pg):bf[0-9a-f]{6}-\\*-r\\*-(pg|cpg)$/` },
      regional('rds', 'pg:default.*'),
      regional('rds', 'cluster-pg:default.*'),
      regional('rds', 'og:default:*'),
    ],
    reason:
      'DB instance, cluster and parameter group names exist only at run time: they are named <stack prefix>-*-r<n>-<role>, creating ' +
      'requires the run tags and this stack as owner (aws:RequestTag), deleting requires both on the resource ' +
      '(aws:ResourceTag) and is denied outside the stack\'s target or sweep regions (aws:RequestedRegion, where the ARNs name ' +
      'any region); the default parameter and option groups are only referenced by the creates.',
  },
  rdsSecrets: {
    appliesTo: [
      regional('secretsmanager', 'secret:rds!db-*'),
      regional('secretsmanager', 'secret:rds!cluster-*'),
      // The target role's reads and readiness's binding: any region (targets may be anywhere), conditioned on tags.
      { regex: `/^Resource::arn:${PARTITION}:secretsmanager:\\*:${ACCOUNT}:secret:rds!(db|cluster)-\\*$/` },
    ],
    reason:
      'RDS itself creates the managed master password secret of a run\'s database at run time and names it ' +
      'rds!<db|cluster>-<uuid>: it is not a stack resource. Creating it is allowed only with RDS\'s own tag ' +
      'naming a DB of this stack\'s prefix (aws:rds:primaryDB*Arn, a tag only AWS may set); tagging it (readiness) only with benchfleet:secret-reader = an instance ARN, and only when ' +
      'RDS tagged it with a DB ARN of this stack\'s prefix; reading it (the target role) only then, and only ' +
      'from the host whose instance ARN that tag names (ec2:SourceInstanceARN).',
  },
  clusterSecrets: {
    appliesTo: [{ regex: `/^Resource::arn:${PARTITION}:secretsmanager:\\*:${ACCOUNT}:secret:benchfleet\\/\\*$/` }],
    reason:
      "A cluster target's password secrets are made per run (benchfleet/<run>/<target>/rep-<n>/<host>), in " +
      'whichever region the target runs: created only with the run tags and this stack as benchfleet:stack, ' +
      'described, bound and deleted only when tagged with this stack, read only by the host whose instance ' +
      'ARN its benchfleet:secret-reader tag names (ec2:SourceInstanceARN).',
  },
  awsManagedKeys: {
    appliesTo: [regional('kms', 'key/*')],
    reason:
      'kms:DescribeKey only, on the AWS managed keys aws/secretsmanager and aws/rds (kms:ResourceAliases): ' +
      'RDS needs it for managed master passwords and encrypted storage, and their key ids differ per account.',
  },
  executions: {
    appliesTo: [
      { regex: `/^Resource::arn:${PARTITION}:states:${REGION}:${ACCOUNT}:execution:[A-Za-z0-9-]+:\\*$/` },
      { regex: `/^Resource::arn:${PARTITION}:states:${REGION}:${ACCOUNT}:execution:[A-Za-z0-9-]+\\/\\*:\\*$/` },
      { regex: `/^Resource::arn:${PARTITION}:states:${REGION}:${ACCOUNT}:stateMachine:[A-Za-z0-9-]+\\/\\*$/` },
    ],
    reason:
      'Execution names are chosen per run (Idempotency-Key), Distributed Map child executions are named ' +
      '<state machine>/<map run label>:<id> by Step Functions and run as stateMachine:<name>/<label>, the ' +
      'owner IAM checks a task token against; limited to executions of this state machine.',
  },
} satisfies Record<string, Omit<NagPackSuppression, 'id'>>;

export type WildcardKind = keyof typeof WILDCARDS;

/** Wildcards registered per principal; applied once its policies exist (see applyWildcardSuppressions). */
const pending = new Map<IConstruct, Set<WildcardKind>>();

/**
 * Record that `principal` holds a wildcard of this kind. The AwsSolutions-IAM5 suppression is attached
 * by applyWildcardSuppressions(), after construction, because a role's DefaultPolicy only exists once
 * its first statement is added and suppressions are copied to the children present at that time.
 */
export function allowWildcard(principal: IConstruct, kind: WildcardKind): void {
  const kinds = pending.get(principal) ?? new Set<WildcardKind>();
  kinds.add(kind);
  pending.set(principal, kinds);
}

/** Attach the recorded suppressions to every principal under `scope` (call at the end of a stack). */
export function applyWildcardSuppressions(scope: IConstruct): void {
  for (const [principal, kinds] of pending) {
    const path = principal.node.path;
    if (path !== scope.node.path && !path.startsWith(`${scope.node.path}/`)) continue;
    const suppressions = [...kinds].map((kind) => ({ id: 'AwsSolutions-IAM5', ...WILDCARDS[kind] }));
    NagSuppressions.addResourceSuppressions(principal, suppressions, true);
    pending.delete(principal);
  }
}
