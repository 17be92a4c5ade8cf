/**
 * Least-privilege building blocks for the Lambda roles. Runs may create EC2/RDS resources only
 * when the request carries the benchfleet run tags, and may stop/terminate/delete only resources
 * that carry them; describe-style calls have no resource-level permissions and use "*".
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { allowWildcard } from './nag';
import {
  ALLOWED_RUN_TAG_KEYS,
  TAG_EXPIRES_AT,
  TAG_RUN_ID,
  UBUNTU_AMI_OWNER,
} from './naming';

/** Conditions a create request must meet: run-id and expires-at tags, only benchfleet/Name keys. */
export const REQUIRE_RUN_TAGS = {
  Null: { [`aws:RequestTag/${TAG_RUN_ID}`]: 'false', [`aws:RequestTag/${TAG_EXPIRES_AT}`]: 'false' },
  'ForAllValues:StringLike': { 'aws:TagKeys': ALLOWED_RUN_TAG_KEYS },
};

/** Conditions on an existing resource: it must carry the run-id tag. */
export const REQUIRE_RUN_RESOURCE_TAG = {
  Null: { [`aws:ResourceTag/${TAG_RUN_ID}`]: 'false' },
};

export interface FleetResources {
  readonly vpcArn: string;
  readonly securityGroupIds: string[];
  readonly launchTemplateId: string;
  readonly dbSubnetGroupName: string;
  readonly targetRoleArn: string;
  readonly agentDocumentArn: string;
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

  constructor(
    scope: Construct,
    private readonly fleet: FleetResources,
  ) {
    this.stack = Stack.of(scope);
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
  public grantTargetCreate(role: iam.IRole): void {
    allowWildcard(role, 'instances');
    allowWildcard(role, 'launchResources');
    allowWildcard(role, 'ubuntuImages');
    allowWildcard(role, 'ubuntuAmiParameters');
    allowWildcard(role, 'databases');
    allowWildcard(role, 'rdsSecrets');

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
        conditions: {
          ...REQUIRE_RUN_TAGS,
          StringEquals: { 'ec2:MetadataHttpTokens': 'required' },
        },
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'RunTaggedEncryptedVolumes',
        actions: ['ec2:RunInstances'],
        resources: [volumeArn],
        conditions: { ...REQUIRE_RUN_TAGS, Bool: { 'ec2:Encrypted': 'true' } },
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
        conditions: { StringEquals: { 'ec2:CreateAction': 'RunInstances' }, ...REQUIRE_RUN_TAGS },
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
    // RDS / Aurora: instances, clusters and parameter groups are created only with run tags,
    // in our DB subnet group.
    add(
      new iam.PolicyStatement({
        sid: 'CreateTaggedDatabases',
        actions: [
          'rds:CreateDBInstance',
          'rds:CreateDBCluster',
          'rds:CreateDBParameterGroup',
          'rds:CreateDBClusterParameterGroup',
          'rds:AddTagsToResource',
        ],
        resources: [
          this.rds('db'),
          this.rds('cluster'),
          this.rds('pg'),
          this.rds('cluster-pg'),
          this.rds('og'),
          this.rds('subgrp', this.fleet.dbSubnetGroupName),
        ],
        conditions: REQUIRE_RUN_TAGS,
      }),
    );
    add(
      new iam.PolicyStatement({
        sid: 'ConfigureRunParameterGroups',
        actions: ['rds:ModifyDBParameterGroup', 'rds:ModifyDBClusterParameterGroup'],
        resources: [this.rds('pg'), this.rds('cluster-pg')],
        conditions: REQUIRE_RUN_RESOURCE_TAG,
      }),
    );
    // ManageMasterUserPassword: RDS creates the secret (rds!...) with the caller's permissions.
    add(
      new iam.PolicyStatement({
        sid: 'RdsManagedMasterSecrets',
        actions: ['secretsmanager:CreateSecret', 'secretsmanager:TagResource'],
        resources: [this.arn('secretsmanager', 'secret', 'rds!*')],
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
   * teardown / teardown_by_tag / janitor / api: stop, terminate and delete only run-tagged resources,
   * in the stack's region and in `extraRegions` (the sweep regions; ARNs name their region).
   * ModifyInstanceAttribute lifts termination protection, ModifyDB* deletion protection, first.
   */
  public grantTargetDelete(role: iam.IRole, extraRegions: readonly string[] = []): void {
    allowWildcard(role, 'instances');
    allowWildcard(role, 'databases');

    const regions = [this.stack.region, ...extraRegions.filter((r) => r !== this.stack.region)];
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TerminateTaggedInstances',
        actions: ['ec2:TerminateInstances', 'ec2:StopInstances', 'ec2:ModifyInstanceAttribute'],
        resources: regions.map((region) => this.ec2('instance', region)),
        conditions: REQUIRE_RUN_RESOURCE_TAG,
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeleteTaggedDatabases',
        actions: [
          'rds:DeleteDBInstance',
          'rds:DeleteDBCluster',
          'rds:DeleteDBParameterGroup',
          'rds:DeleteDBClusterParameterGroup',
          // to switch deletion protection off before deleting
          'rds:ModifyDBInstance',
          'rds:ModifyDBCluster',
        ],
        resources: regions.flatMap((region) =>
          ['db', 'cluster', 'pg', 'cluster-pg'].map((type) => this.rds(type, '*', region)),
        ),
        conditions: REQUIRE_RUN_RESOURCE_TAG,
      }),
    );
  }

  /** start_step: Run Command of the agent document, on run-tagged instances only. */
  public grantCommandSend(role: iam.IRole): void {
    allowWildcard(role, 'instances');

    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SendAgentDocument',
        actions: ['ssm:SendCommand'],
        resources: [this.fleet.agentDocumentArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SendToTaggedInstances',
        actions: ['ssm:SendCommand'],
        resources: [this.ec2('instance')],
        conditions: { Null: { [`ssm:resourceTag/${TAG_RUN_ID}`]: 'false' } },
      }),
    );
  }

  /** step_status / readiness: command results (no resource-level permissions). */
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

/**
 * The target instance role: the RDS-managed master password of a run's database. The agent on the
 * client host reads it itself, so the password never travels in Run Command parameters.
 */
export function grantRdsManagedSecretsRead(role: iam.IRole & Construct): void {
  allowWildcard(role, 'rdsSecrets');

  const stack = Stack.of(role);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'ReadRdsManagedMasterSecrets',
      actions: ['secretsmanager:GetSecretValue'],
      resources: [
        stack.formatArn({
          service: 'secretsmanager',
          resource: 'secret',
          resourceName: 'rds!*',
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      ],
    }),
  );
}
