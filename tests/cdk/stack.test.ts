/**
 * The default stack (cdk.json context): cdk-nag clean, and the properties the design promises,
 * asserted on the synthesized template (no snapshots).
 */
import * as fs from 'fs';
import * as path from 'path';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { lockedVersion } from '../../cdk/lib/config';
import { ALL_HANDLERS } from '../../cdk/lib/naming';
import { refuseOverflowPolicies } from '../../cdk/lib/role-policy-limits';
import { actionsOf, buildStack, Built, IAM_QUOTAS, nagFindings, policyStatements, REPO_ROOT, resourcesOf, rolePolicies } from './helpers';

const CONTRACT_ENV = [
  'RESULTS_BUCKET',
  'RESULTS_STORE',
  'TIMESTREAM_DATABASE',
  'STATE_MACHINE_ARN',
  'TARGET_INSTANCE_PROFILE_ARN',
  'TARGET_ROLE_ARN',
  'CLIENT_SECURITY_GROUP_ID',
  'DB_SECURITY_GROUP_ID',
  'SUBNET_IDS',
  'DB_SUBNET_GROUP_NAME',
  'AGENT_DOCUMENT_NAME',
  'AGENT_BUNDLE_S3_URI',
  'POWERTOOLS_SERVICE_NAME',
];

let built: Built;
beforeAll(() => {
  built = buildStack();
});

describe('cdk-nag (AwsSolutions)', () => {
  test('no unsuppressed errors or warnings', () => {
    expect(nagFindings(built.stack)).toEqual([]);
  });

  test('every suppression has a reason of substance', () => {
    for (const [, resource] of Object.entries(built.template.toJSON().Resources as Record<string, any>)) {
      const rules = resource.Metadata?.cdk_nag?.rules_to_suppress ?? [];
      for (const rule of rules) expect(String(rule.reason).length).toBeGreaterThan(40);
    }
  });
});

describe('API', () => {
  test('IAM authorization on every method', () => {
    const methods = resourcesOf(built.template, 'AWS::ApiGateway::Method');
    expect(methods.length).toBe(5);
    for (const [, method] of methods) {
      if (method.Properties.HttpMethod === 'OPTIONS') continue;
      expect(method.Properties.AuthorizationType).toBe('AWS_IAM');
    }
  });

  test('routes go to the api Lambda through proxy integration', () => {
    const routes = resourcesOf(built.template, 'AWS::ApiGateway::Method').map(
      ([, m]) => m.Properties.HttpMethod as string,
    );
    expect(routes.sort()).toEqual(['DELETE', 'GET', 'GET', 'GET', 'POST']);
    built.template.allResourcesProperties('AWS::ApiGateway::Method', {
      Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
    });
  });

  test('POST /runs validates its body against a model requiring name and targets', () => {
    built.template.hasResourceProperties('AWS::ApiGateway::Model', {
      ContentType: 'application/json',
      Schema: Match.objectLike({ required: ['name', 'targets'] }),
    });
    built.template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      RequestModels: { 'application/json': Match.anyValue() },
      RequestValidatorId: Match.anyValue(),
    });
    built.template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      ValidateRequestBody: true,
      ValidateRequestParameters: true,
    });
    built.template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      ValidateRequestBody: false,
      ValidateRequestParameters: true,
    });
  });

  test('stage has tracing and throttling, and nothing that needs the account CloudWatch role', () => {
    built.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      AccessLogSetting: Match.absent(),
      TracingEnabled: true,
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 }),
      ]),
    });
    // Execution logging (LoggingLevel, DataTraceEnabled) would need the role too.
    for (const [, stage] of resourcesOf(built.template, 'AWS::ApiGateway::Stage')) {
      for (const setting of stage.Properties.MethodSettings ?? []) {
        expect(setting.LoggingLevel ?? 'OFF').toBe('OFF');
        expect(setting.DataTraceEnabled ?? false).toBe(false);
      }
    }
    // The account-wide role setting is not this stack's to take over.
    expect(resourcesOf(built.template, 'AWS::ApiGateway::Account')).toEqual([]);
  });

  test('apiAccessLogs=true: JSON access logs to a log group, still no account setting', () => {
    const withLogs = buildStack({ apiAccessLogs: true });
    withLogs.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
    });
    expect(resourcesOf(withLogs.template, 'AWS::ApiGateway::Account')).toEqual([]);
    expect(nagFindings(withLogs.stack)).toEqual([]);
  });
});

describe('IAM least privilege', () => {
  const statements = (): Array<{ policy: string; statement: any }> => policyStatements(built.template);

  test('EC2 and RDS create actions require the run tags in the request', () => {
    const creates = ['ec2:RunInstances', 'rds:CreateDBInstance', 'rds:CreateDBCluster', 'ec2:CreateTags',
      'rds:CreateDBParameterGroup', 'rds:CreateDBClusterParameterGroup'];
    for (const action of creates) {
      const found = statements().filter(({ statement }) => actionsOf(statement).includes(action));
      expect(found.length).toBeGreaterThan(0);
      // Every statement with a create action that targets what the run creates is tag-conditioned.
      const tagged = found.filter(
        ({ statement }) => statement.Condition?.Null?.['aws:RequestTag/benchfleet:run-id'] === 'false',
      );
      expect(tagged.length).toBeGreaterThan(0);
    }
    const runInstance = statements().find(
      ({ statement }) => statement.Sid === 'RunTaggedInstances',
    )?.statement;
    expect(runInstance.Condition).toMatchObject({
      Null: { 'aws:RequestTag/benchfleet:run-id': 'false', 'aws:RequestTag/benchfleet:expires-at': 'false' },
      'ForAllValues:StringLike': { 'aws:TagKeys': ['benchfleet:*', 'Name'] },
      StringEquals: { 'ec2:MetadataHttpTokens': 'required' },
    });
  });

  test('terminate, stop, delete and modify only resources of a run of this stack', () => {
    const destructive = [
      'ec2:TerminateInstances',
      'ec2:StopInstances',
      'ec2:ModifyInstanceAttribute',
      'rds:DeleteDBInstance',
      'rds:DeleteDBCluster',
      'rds:ModifyDBInstance',
      'rds:ModifyDBCluster',
      'rds:RebootDBInstance',
      'rds:DeleteDBParameterGroup',
      'rds:DeleteDBClusterParameterGroup',
      'rds:ModifyDBParameterGroup',
      'rds:ModifyDBClusterParameterGroup',
    ];
    let seen = 0;
    for (const { statement } of statements()) {
      if (!actionsOf(statement).some((a) => destructive.includes(a))) continue;
      seen += 1;
      expect(statement.Condition?.Null?.['aws:ResourceTag/benchfleet:run-id']).toBe('false');
      expect(statement.Condition?.StringEquals?.['aws:ResourceTag/benchfleet:stack']).toBeDefined();
      expect(statement.Resource).not.toEqual('*');
    }
    expect(seen).toBeGreaterThanOrEqual(4); // teardown, teardown_by_tag, janitor, api
  });

  test('no role may delete or create without conditions on a wildcard resource', () => {
    for (const { statement } of statements()) {
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      if (!resources.includes('*')) continue;
      if (statement.Sid === 'SsmAgentRunCommand') continue; // the host's SSM agent, below
      if (statement.Sid === 'CloudWatchAgentMetrics') {
        expect(statement.Condition).toEqual({ StringEquals: { 'cloudwatch:namespace': 'CWAgent' } });
        continue;
      }
      for (const action of actionsOf(statement)) {
        expect(action).toMatch(
          /^(ec2:Describe|rds:Describe|ssm:Describe|ssm:GetCommandInvocation|ssm:List|secretsmanager:ListSecrets|cloudwatch:GetMetricData|tag:GetResources|timestream:DescribeEndpoints|xray:|logs:(Create|Get|Update|Delete|List|Put|Describe)(LogDelivery|LogDeliveries|ResourcePolic|LogGroups))/,
        );
      }
    }
  });

  test('iam:PassRole only for the target role, only to EC2', () => {
    const passRole = statements().filter(({ statement }) => actionsOf(statement).includes('iam:PassRole'));
    expect(passRole.length).toBe(1);
    expect(passRole[0].statement.Condition).toEqual({
      StringEquals: { 'iam:PassedToService': 'ec2.amazonaws.com' },
    });
    expect(passRole[0].statement.Resource).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^TargetsInstanceRole/), 'Arn'],
    });
  });

  test("ssm:SendCommand only on the agent document, this stack's run instances and the output bucket", () => {
    const send = statements().filter(({ statement }) => actionsOf(statement).includes('ssm:SendCommand'));
    expect(send.map(({ statement }) => statement.Sid).sort()).toEqual([
      'SendAgentDocument',
      'SendOutputToResultsBucket', // OutputS3BucketName is authorized against the bucket too
      'SendToOptedInHosts', // an existing target's host (ownership.test.ts)
      'SendToOwnedInstances',
    ]);
    const onBucket = send.find(({ statement }) => statement.Sid === 'SendOutputToResultsBucket')!.statement;
    expect(onBucket.Resource).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^Results[0-9A-F]+$/), 'Arn'] });
    const onInstances = send.find(({ statement }) => statement.Sid === 'SendToOwnedInstances')!.statement;
    expect(onInstances.Condition.Null).toEqual({ 'ssm:resourceTag/benchfleet:run-id': 'false' });
    expect(onInstances.Condition.StringEquals['ssm:resourceTag/benchfleet:stack']).toBeDefined();
    const onDocument = send.find(({ statement }) => statement.Sid === 'SendAgentDocument')!.statement;
    expect(JSON.stringify(onDocument.Resource)).toContain('document/');
    expect(JSON.stringify(onDocument.Resource)).toContain('TargetsAgentDocument');
  });

  test("target instance role: no managed policy; the SSM agent's statement reads and changes nothing of the account", () => {
    // Issue 30, finding 12: AmazonSSMManagedInstanceCore read all of Parameter Store (SecureStrings too),
    // CloudWatchAgentServerPolicy wrote any log group and metric namespace (ownership.test.ts evaluates both).
    const [, role] = resourcesOf(built.template, 'AWS::IAM::Role').find(([id]) =>
      id.startsWith('TargetsInstanceRole'),
    )!;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const agent = statements().find(({ statement }) => statement.Sid === 'SsmAgentRunCommand')!.statement;
    for (const action of actionsOf(agent)) {
      expect(action).toMatch(
        /^(ec2messages:|ssmmessages:|ssm:(UpdateInstanceInformation|ListInstanceAssociations|DescribeDocument|GetDocument|GetManifest|PutConfigurePackageResult)$)/,
      );
    }
  });

  test('a role whose statements outgrow its inline policy fails synthesis, naming the role', () => {
    const stack = new Stack(new App(), 'Overflowing');
    const role = new iam.Role(stack, 'Big', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    for (let i = 0; i < 40; i++) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({ sid: `Read${i}`, actions: ['s3:GetObject'], resources: [`arn:aws:s3:::${'b'.repeat(60)}${i}/${'k'.repeat(200)}`] }),
      );
    }
    refuseOverflowPolicies(stack);
    expect(() => Template.fromStack(stack)).toThrow(/role Overflowing\/Big: its statements outgrow its inline policy/);
  });

  test("no role holds a managed policy, and each role's statements fit its inline policy", () => {
    // A role's statements beyond CDK's inline estimate become OverflowPolicy<n> AWS::IAM::ManagedPolicy
    // resources of the stack, which ManagedPolicyArns does not show (regions.test.ts: at the most regions).
    const roles = rolePolicies(built.template);
    expect(roles.size).toBeGreaterThan(10);
    for (const [id, role] of roles) {
      expect([id, role.managed]).toEqual([id, []]);
      expect([id, role.inlineChars <= IAM_QUOTAS.inlineCharsPerRole]).toEqual([id, true]);
      // CDK's own custom-resource providers (S3 auto-delete) log through AWSLambdaBasicExecutionRole.
      const basicExecution = [{ 'Fn::Sub': 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole' }];
      expect([id, role.managedArns]).toEqual([id, id.startsWith('Custom') ? basicExecution : []]);
    }
  });
});

describe('permissions of the API, the sweepers and the targets', () => {
  /** Statements of one function's role (its DefaultPolicy), e.g. roleStatements('TeardownByTag'). */
  const roleStatements = (pascalName: string): any[] =>
    policyStatements(built.template)
      .filter(({ policy }) => new RegExp(`^OrchestrationFunctions${pascalName}RoleDefaultPolicy[0-9A-F]{8}$`).test(policy))
      .map(({ statement }) => statement);
  const withAction = (statements: any[], action: string): any[] =>
    statements.filter((s) => actionsOf(s).includes(action));
  const text = (v: unknown): string => JSON.stringify(v);

  test('api: its executions, read-only runs/, and teardown by tag like teardown_by_tag', () => {
    const api = roleStatements('Api');
    for (const action of ['states:StartExecution', 'states:ListExecutions']) {
      const [s] = withAction(api, action);
      expect(text(s.Resource)).toContain(':stateMachine:');
    }
    for (const action of ['states:DescribeExecution', 'states:StopExecution']) {
      const [s] = withAction(api, action);
      expect(text(s.Resource)).toMatch(/:execution:.*BenchmarkRun:\*/);
    }
    expect(withAction(api, 'states:GetExecutionHistory')).toEqual([]);
    expect(text(withAction(api, 's3:GetObject')[0].Resource)).toContain('/runs/*');
    expect(withAction(api, 's3:ListBucket')[0].Condition).toEqual({ StringLike: { 's3:prefix': ['runs/*'] } });
    // Nothing under runs/: with the default Athena store, only the query results Athena writes for it.
    expect(withAction(api, 's3:PutObject').map((st) => text(st.Resource))).toEqual([
      expect.stringContaining('/athena-results/*'),
    ]);
    expect(withAction(api, 'ec2:DescribeInstances')[0].Resource).toBe('*');
    const teardown = roleStatements('TeardownByTag');
    for (const sid of ['TerminateOwnedInstances', 'DeleteOwnedVolumes', 'DeleteOwnedDatabases']) {
      const mine = api.find((s) => s.Sid === sid);
      expect(mine.Condition.Null).toEqual({ 'aws:ResourceTag/benchfleet:run-id': 'false' });
      expect(mine).toEqual(teardown.find((s) => s.Sid === sid));
    }
  });

  test('janitor and teardown_by_tag: executions they read, tag-conditioned teardown, nothing else', () => {
    const janitor = roleStatements('Janitor');
    expect(text(withAction(janitor, 'states:ListExecutions')[0].Resource)).toContain(':stateMachine:');
    expect(text(withAction(janitor, 'states:DescribeExecution')[0].Resource)).toMatch(/:execution:/);
    const byTag = roleStatements('TeardownByTag');
    expect(text(withAction(byTag, 'states:DescribeExecution')[0].Resource)).toMatch(/:execution:/);
    for (const statements of [janitor, byTag]) {
      const actions = statements.flatMap(actionsOf);
      for (const absent of ['states:StartExecution', 'states:StopExecution', 's3:PutObject', 'tag:GetResources']) {
        expect(actions).not.toContain(absent);
      }
      expect(actions).toContain('ec2:TerminateInstances');
      // Protection is never lifted (ownership.test.ts evaluates this for every role).
      expect(actions).not.toContain('ec2:ModifyInstanceAttribute');
      expect(actions).toEqual(expect.arrayContaining(['rds:DeleteDBInstance', 'rds:DeleteDBCluster']));
    }
  });

  test('janitor sweeps the stack region by default (SWEEP_REGIONS)', () => {
    const fns = resourcesOf(built.template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Runtime === 'python3.13',
    );
    for (const [, fn] of fns) {
      const env = fn.Properties.Environment.Variables;
      if (fn.Properties.Handler === 'handlers.janitor.handler') expect(env.SWEEP_REGIONS).toEqual({ Ref: 'AWS::Region' });
      else expect(env.SWEEP_REGIONS).toBeUndefined();
    }
  });

  test('only the target role reads RDS-managed master secrets (rds!db-*, rds!cluster-*); start_step does not', () => {
    const reads = policyStatements(built.template).filter(
      ({ statement }) =>
        actionsOf(statement).includes('secretsmanager:GetSecretValue') && text(statement.Resource).includes('secret:rds!'),
    );
    expect(reads).toHaveLength(2);
    for (const read of reads) expect(read.policy).toMatch(/^TargetsInstanceRoleDefaultPolicy/);
    expect(reads.map((r) => text(r.statement.Resource)).join()).toMatch(/secret:rds!db-\*".*secret:rds!cluster-\*"/);
    expect(roleStatements('StartStep').flatMap(actionsOf).filter((a) => a.startsWith('secretsmanager:'))).toEqual([]);
  });

  test('provision has what RDS-managed master passwords need (Service Authorization Reference)', () => {
    const provision = roleStatements('Provision');
    const secrets = provision.find((s) => actionsOf(s).includes('secretsmanager:CreateSecret'));
    expect(actionsOf(secrets)).toEqual(['secretsmanager:CreateSecret', 'secretsmanager:TagResource']);
    // kms:DescribeKey on the AWS managed keys only, matched by alias.
    const describeKey = provision.find((s) => actionsOf(s).includes('kms:DescribeKey'));
    expect(actionsOf(describeKey)).toEqual(['kms:DescribeKey']);
    expect(text(describeKey.Resource)).toMatch(/:kms:.*:key\/\*"/);
    expect(describeKey.Condition).toEqual({
      'ForAnyValue:StringEquals': { 'kms:ResourceAliases': ['alias/aws/secretsmanager', 'alias/aws/rds'] },
    });
    // A fresh account's first RDS database creates RDS's service-linked role.
    const slr = provision.find((s) => actionsOf(s).includes('iam:CreateServiceLinkedRole'));
    expect(slr.Condition).toEqual({ StringEquals: { 'iam:AWSServiceName': 'rds.amazonaws.com' } });
    expect(text(slr.Resource)).toMatch(/role\/aws-service-role\/rds\.amazonaws\.com\/AWSServiceRoleForRDS"/);
    // No other role gets KMS.
    const kms = policyStatements(built.template).filter(({ statement }) =>
      actionsOf(statement).some((a) => a.startsWith('kms:')),
    );
    expect(kms.map(({ policy }) => policy)).toEqual([expect.stringMatching(/Provision/)]);
  });

  test('teardown_by_tag: EventBridge retries, Lambda retries, then a dead-letter queue with an alarm', () => {
    const [[queueId, queue]] = resourcesOf(built.template, 'AWS::SQS::Queue');
    expect(queue.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    const [, queuePolicy] = resourcesOf(built.template, 'AWS::SQS::QueuePolicy')[0];
    expect(queuePolicy.Properties.PolicyDocument.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({ Effect: 'Allow', Action: 'sqs:SendMessage', Principal: { Service: 'events.amazonaws.com' } }),
      ]),
    );
    const queueArn = { 'Fn::GetAtt': [queueId, 'Arn'] };
    built.template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ source: ['aws.states'] }),
      Targets: [
        Match.objectLike({
          RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 7200 },
          DeadLetterConfig: { Arn: queueArn },
        }),
      ],
    });
    built.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: Match.stringLikeRegexp('TeardownByTag') },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: queueArn } },
    });
    built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 1,
    });
  });
});

describe('logging', () => {
  test('every log group has a retention', () => {
    const groups = resourcesOf(built.template, 'AWS::Logs::LogGroup');
    // One per Lambda, the state machine's and the VPC flow logs' (API access logs are opt-in).
    expect(groups.length).toBeGreaterThanOrEqual(ALL_HANDLERS.length + 2);
    for (const [, group] of groups) expect(group.Properties.RetentionInDays).toBe(30);
  });

  test('log groups are deleted with the stack by default', () => {
    for (const [, group] of resourcesOf(built.template, 'AWS::Logs::LogGroup')) {
      expect(group.DeletionPolicy).toBe('Delete');
    }
  });
});

describe('results store', () => {
  test('buckets are encrypted, TLS-only, and block public access', () => {
    const buckets = resourcesOf(built.template, 'AWS::S3::Bucket');
    expect(buckets).toHaveLength(2);
    for (const [, bucket] of buckets) {
      expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0]).toMatchObject({
        ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' },
      });
      expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(bucket.Properties.LifecycleConfiguration.Rules.length).toBeGreaterThan(0);
      expect(bucket.DeletionPolicy).toBe('Delete');
    }
    const policies = resourcesOf(built.template, 'AWS::S3::BucketPolicy');
    expect(policies).toHaveLength(2);
    for (const [, policy] of policies) {
      expect(policy.Properties.PolicyDocument.Statement).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      );
    }
  });

  test('results bucket logs to the access log bucket and is emptied on destroy', () => {
    built.template.hasResourceProperties('AWS::S3::Bucket', {
      LoggingConfiguration: { DestinationBucketName: Match.anyValue(), LogFilePrefix: 'results/' },
    });
    expect(resourcesOf(built.template, 'Custom::S3AutoDeleteObjects')).toHaveLength(2);
  });
});

describe('network and targets', () => {
  test('new VPC: public subnets only in 2 AZs, no NAT, flow logs', () => {
    built.template.resourceCountIs('AWS::EC2::VPC', 1);
    built.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    built.template.resourceCountIs('AWS::EC2::Subnet', 2);
    built.template.allResourcesProperties('AWS::EC2::Subnet', { MapPublicIpOnLaunch: true });
    built.template.hasResourceProperties('AWS::EC2::FlowLog', { ResourceType: 'VPC' });
  });

  test('no security group allows ingress from anywhere', () => {
    for (const [, sg] of resourcesOf(built.template, 'AWS::EC2::SecurityGroup')) {
      for (const rule of sg.Properties.SecurityGroupIngress ?? []) {
        expect(rule.CidrIp).not.toBe('0.0.0.0/0');
        expect(rule.CidrIpv6).not.toBe('::/0');
      }
    }
    for (const [, rule] of resourcesOf(built.template, 'AWS::EC2::SecurityGroupIngress')) {
      expect(rule.Properties.CidrIp).toBeUndefined();
      expect(rule.Properties.CidrIpv6).toBeUndefined();
    }
  });

  test('client SG has no ingress; DB SG allows 3306 only from the client SG', () => {
    const sgs = resourcesOf(built.template, 'AWS::EC2::SecurityGroup');
    const client = sgs.find(([id]) => id.startsWith('TargetsClientSecurityGroup'))!;
    expect(client[1].Properties.SecurityGroupIngress).toBeUndefined();
    const all = resourcesOf(built.template, 'AWS::EC2::SecurityGroupIngress');
    expect(all.filter(([, r]) => JSON.stringify(r.Properties.GroupId).includes('TargetsClientSecurityGroup'))).toEqual([]);
    const ingress = all.filter(([, r]) => JSON.stringify(r.Properties.GroupId).includes('TargetsDbSecurityGroup'));
    expect(ingress).toHaveLength(1);
    expect(ingress[0][1].Properties).toMatchObject({
      IpProtocol: 'tcp',
      FromPort: 3306,
      ToPort: 3306,
      SourceSecurityGroupId: { 'Fn::GetAtt': [client[0], 'GroupId'] },
    });
  });

  test("cluster nodes reach each other on MySQL and Galera's ports, clients reach MySQL and a proxy host's ports only", () => {
    const sgs = resourcesOf(built.template, 'AWS::EC2::SecurityGroup');
    const id = (prefix: string): string => sgs.find(([k]) => k.startsWith(prefix))![0];
    const [client, nodes, proxy] = ['TargetsClientSecurityGroup', 'TargetsClusterSecurityGroup', 'TargetsProxySecurityGroup'].map(id);
    const rules = resourcesOf(built.template, 'AWS::EC2::SecurityGroupIngress').map(([, r]) => r.Properties);
    const ports = (to: string, from: string): number[] =>
      rules
        .filter((r) => JSON.stringify(r.GroupId).includes(to) && JSON.stringify(r.SourceSecurityGroupId).includes(from))
        .map((r) => (r.IpProtocol === 'tcp' && r.FromPort === r.ToPort ? r.FromPort : -1))
        .sort();
    expect(ports(nodes, nodes)).toEqual([3306, 4444, 4567, 4568]);
    expect(ports(nodes, client)).toEqual([3306]);
    expect(ports(proxy, client)).toEqual([3307, 3308, 6032, 6033]); // listen and statistics ports
    expect(rules.filter((r) => JSON.stringify(r.GroupId).includes(nodes) || JSON.stringify(r.GroupId).includes(proxy)).length).toBe(9);
    for (const sg of [nodes, proxy]) {
      expect(sgs.find(([k]) => k === sg)![1].Properties.SecurityGroupIngress).toBeUndefined();
    }
  });

  test('launch template requires IMDSv2 and encrypts EBS', () => {
    built.template.hasResourceProperties('AWS::EC2::LaunchTemplate', {
      LaunchTemplateData: Match.objectLike({
        MetadataOptions: Match.objectLike({ HttpTokens: 'required' }),
        BlockDeviceMappings: [
          Match.objectLike({ Ebs: Match.objectLike({ Encrypted: true, VolumeType: 'gp3' }) }),
        ],
        IamInstanceProfile: Match.anyValue(),
      }),
    });
  });

  test('DB subnet group and instance profile exist', () => {
    built.template.resourceCountIs('AWS::RDS::DBSubnetGroup', 1);
    built.template.resourceCountIs('AWS::IAM::InstanceProfile', 1);
  });

  test('agent document: schema 2.2, runs the agent with JobJson, executionTimeout, BundleUri', () => {
    const [, doc] = resourcesOf(built.template, 'AWS::SSM::Document')[0];
    expect(doc.Properties.DocumentType).toBe('Command');
    const content = doc.Properties.Content;
    expect(content.schemaVersion).toBe('2.2');
    expect(Object.keys(content.parameters).sort()).toEqual(['BundleUri', 'JobJson', 'executionTimeout']);
    expect(content.parameters.JobJson.interpolationType).toBe('ENV_VAR');
    const run = content.mainSteps.find((s: any) => s.name === 'runAgent');
    expect(run.action).toBe('aws:runShellScript');
    expect(run.inputs.timeoutSeconds).toBe('{{ executionTimeout }}');
    expect(run.inputs.runCommand.join('\n')).toContain(
      'python3 workloads/agent/benchfleet_agent.py --job-json "$SSM_JobJson"',
    );
    expect(content.mainSteps.map((s: any) => s.action)).toContain('aws:downloadContent');
  });

  test('agent document: JobJson without single quotes; a long prepare fits; the agent runs as root', () => {
    const [, doc] = resourcesOf(built.template, 'AWS::SSM::Document')[0];
    const { parameters, mainSteps } = doc.Properties.Content;
    const jobPattern = new RegExp(parameters.JobJson.allowedPattern);
    expect(jobPattern.test('{"step": "prepare", "db": {"host": "x"}}')).toBe(true);
    expect(jobPattern.test(`{"sql": "'; rm -rf / #"}`)).toBe(false);
    expect(jobPattern.test('')).toBe(false);

    const timeout = parameters.executionTimeout;
    expect(timeout.default).toBe('7200');
    const allowed = new RegExp(timeout.allowedPattern);
    for (const ok of ['1', '60', '3600', '7200', '99999', '100000', '169999', '171999', '172799', '172800']) {
      expect([ok, allowed.test(ok)]).toEqual([ok, true]);
    }
    for (const bad of ['0', '007', '-1', '172801', '172900', '180000', '999999', '1000000', '3600s', '']) {
      expect([bad, allowed.test(bad)]).toEqual([bad, false]);
    }

    const run = mainSteps.find((s: any) => s.name === 'runAgent');
    const script = run.inputs.runCommand.join('\n');
    // Root: no runAs, no privilege drop, and the script refuses to start as anyone else.
    expect(run.inputs.runAs).toBeUndefined();
    expect(script).not.toMatch(/\b(sudo|su|runuser|setpriv)\b/);
    expect(script).toContain('if [ "$(id -u)" != 0 ]; then');
    // JobJson reaches python only through the environment (the fallback is single-quoted, which the
    // allowedPattern makes safe).
    expect(script).toContain('--job-json "$SSM_JobJson"');
    expect(script.match(/\{\{ JobJson \}\}/g)).toEqual(["{{ JobJson }}"]);
    expect(script).toContain("SSM_JobJson='{{ JobJson }}'");
  });

  test('agent document: one agent per host, output kept, CloudWatch agent best effort', () => {
    const [, doc] = resourcesOf(built.template, 'AWS::SSM::Document')[0];
    const run = doc.Properties.Content.mainSteps.find((s: any) => s.name === 'runAgent');
    const script: string = run.inputs.runCommand.map((l: unknown) => JSON.stringify(l)).join('\n');
    expect(script).toContain('--lock /run/benchfleet/agent.lock --keep-dir /var/lib/benchfleet/output');
    expect(script).toContain('--cloudwatch-agent \\"$cw\\"');
    // Under `set -eu` a failing CloudWatch agent command must not end the script: it sets cw instead.
    // The parameter name is a token: that line is an Fn::Join in the template.
    const cwLine = run.inputs.runCommand.map((l: unknown) => JSON.stringify(l)).find((l: string) => l.includes('fetch-config'));
    expect(cwLine).toMatch(/\|\| cw=failed-to-start/);
    expect(cwLine).toContain('>&2');
  });

  test('CloudWatch agent config collects steal per second with InstanceId', () => {
    const [, param] = resourcesOf(built.template, 'AWS::SSM::Parameter')[0];
    expect(param.Properties.Name).toMatch(/^AmazonCloudWatch-/);
    const config = JSON.parse(param.Properties.Value);
    expect(config.metrics.append_dimensions).toEqual({ InstanceId: '${aws:InstanceId}' });
    // Only what collect queries: every published metric is billed per host-hour.
    expect(config.metrics.metrics_collected.cpu.measurement).toEqual(['cpu_usage_steal']);
    expect(config.metrics.metrics_collected.cpu.metrics_collection_interval).toBe(1);
  });
});

describe('orchestration', () => {
  test('one Lambda per handler module: python3.13 on arm64 with the pinned Powertools layer', () => {
    const fns = resourcesOf(built.template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Runtime === 'python3.13',
    );
    expect(fns.map(([, f]) => f.Properties.Handler).sort()).toEqual(
      ALL_HANDLERS.map((m) => `handlers.${m}.handler`).sort(),
    );
    for (const [, fn] of fns) {
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      // The layer of the Powertools release uv.lock holds (what the offline tests ran against).
      expect(fn.Properties.Layers).toEqual([
        `{{resolve:ssm:/aws/service/powertools/python/arm64/python3.13/${lockedVersion('aws-lambda-powertools')}}}`,
      ]);
      expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(fn.Properties.LoggingConfig).toMatchObject({ LogFormat: 'JSON' });
      expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(expect.arrayContaining(CONTRACT_ENV));
      expect(fn.Properties.Environment.Variables.RESULTS_STORE).toBe('athena');
    }
  });

  test('every function finds the price tables and MySQL configurations in its asset', () => {
    const fns = resourcesOf(built.template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Runtime === 'python3.13',
    );
    const keys = new Set(fns.map(([, f]) => f.Properties.Code.S3Key as string));
    expect(keys.size).toBe(1); // one asset shared by every function
    for (const [, fn] of fns) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        BENCHFLEET_WORKLOADS: '/var/task/workloads',
        BENCHFLEET_PRICING: '/var/task/workloads/pricing',
      });
    }
    // The synthesized assembly holds the bundled asset as asset.<hash>/ (the zip's key is <hash>.zip).
    const hash = [...keys][0].replace(/\.zip$/, '');
    const dir = path.join(built.app.outdir, `asset.${hash}`);
    const files = (rel: string): string[] => fs.readdirSync(path.join(dir, rel)).sort();
    expect(files('.')).toEqual(['benchfleet', 'handlers', 'statemachines', 'workloads']);
    expect(files('workloads')).toEqual(['catalogue', 'lua', 'mysql', 'pricing']);
    expect(files('workloads/pricing')).toEqual(expect.arrayContaining(['ec2.json', 'rds.json', 'aurora.json', 'ebs.json']));
    expect(files('workloads/mysql')).toContain('default.cnf');
    expect(files('workloads/lua')).toEqual(expect.arrayContaining(['benchfleet_common.lua', 'iibench.lua']));
    expect(files('handlers')).toEqual(expect.arrayContaining(ALL_HANDLERS.map((m) => `${m}.py`)));
    // Heavy modules, the CLI and caches stay out of the Lambdas.
    for (const absent of ['local', 'report', 'cli']) expect(files('benchfleet')).not.toContain(absent);
    // ... and the domain the handlers import is there (the check above reads a real listing).
    expect(files('benchfleet')).toEqual(expect.arrayContaining(['aws', 'cluster', 'cost', 'plan', 'spec', 'stats', 'workload']));
    const walk = (rel: string): string[] =>
      fs.statSync(path.join(dir, rel)).isDirectory() ? files(rel).flatMap((e) => walk(`${rel}/${e}`)) : [rel];
    const all = walk('.');
    expect(all.filter((f) => /__pycache__|\.pyc$|egg-info|\/tests?\//.test(f))).toEqual([]);
  });

  test('state machine: STANDARD, logging ALL with retention, tracing, execution timeout', () => {
    const [, sm] = resourcesOf(built.template, 'AWS::StepFunctions::StateMachine')[0];
    expect(sm.Properties.StateMachineType).toBe('STANDARD');
    expect(sm.Properties.LoggingConfiguration).toMatchObject({
      Level: 'ALL',
      IncludeExecutionData: true,
      Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: expect.anything() } }],
    });
    expect(sm.Properties.TracingConfiguration).toEqual({ Enabled: true });
    const definition = JSON.parse(sm.Properties.DefinitionString);
    expect(definition.TimeoutSeconds).toBe(48 * 3600);
    // cfn-lint checks the definition against its ASL schema (E3601): nothing switches it off.
    expect(sm.Metadata?.['cfn-lint']).toBeUndefined();
    const substitutions = Object.keys(sm.Properties.DefinitionSubstitutions).sort();
    expect(substitutions).toEqual(
      [
        'AgentDocumentName',
        'CollectFunctionArn',
        'PlanFunctionArn',
        'ProvisionFunctionArn',
        'ReadinessFunctionArn',
        'ResultsBucket',
        'StartStepFunctionArn',
        'StepCallbackFunctionArn',
        'SummarizeFunctionArn',
        'TeardownFunctionArn',
      ].sort(),
    );
  });

  test('failed, timed out and aborted executions trigger teardown_by_tag', () => {
    built.template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.states'],
        'detail-type': ['Step Functions Execution Status Change'],
        detail: { status: ['FAILED', 'TIMED_OUT', 'ABORTED'], stateMachineArn: Match.anyValue() },
      },
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('TeardownByTag'), 'Arn'] } })],
    });
  });

  test('hourly janitor with an alarm on its errors', () => {
    built.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 hour)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('Janitor'), 'Arn'] } })],
    });
    built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Threshold: 1,
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('Janitor') } }],
    });
  });

  test('an alarm when the janitor or teardown_by_tag could not remove something', () => {
    built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'Benchfleet',
      MetricName: 'RemovalFailures',
      Dimensions: [{ Name: 'service', Value: 'benchfleet' }],
      Statistic: 'Sum',
      Threshold: 1,
    });
    for (const [, fn] of resourcesOf(built.template, 'AWS::Lambda::Function')) {
      if (fn.Properties.Runtime !== 'python3.13') continue;
      expect(fn.Properties.Environment.Variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'benchfleet',
        POWERTOOLS_METRICS_NAMESPACE: 'Benchfleet',
      });
    }
  });

  test('no schedules by default', () => {
    built.template.resourceCountIs('AWS::Scheduler::Schedule', 0);
  });
});

describe('what the READMEs say a deployed stack costs idle', () => {
  test("the four CloudWatch alarms they price are the stack's alarms, and nothing else bills idle", () => {
    expect(resourcesOf(built.template, 'AWS::CloudWatch::Alarm')).toHaveLength(4);
    expect(resourcesOf(built.template, 'AWS::EC2::NatGateway')).toHaveLength(0);
    for (const readme of ['README.md', path.join('cdk', 'README.md')]) {
      const text = fs.readFileSync(path.join(REPO_ROOT, readme), 'utf8').replace(/\s+/g, ' ');
      expect(text).toMatch(/about \$0\.45 a month/);
      expect(text).toMatch(/four CloudWatch alarms \(\$0\.10 each\)/);
    }
  });
});
