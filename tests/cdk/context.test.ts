/**
 * Context keys change the stack as documented in cdk/README.md; bad values fail with the key's name.
 */
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { readConfig } from '../../cdk/lib/config';
import { dbIdentifierPrefixOf } from '../../cdk/lib/ownership';
import { Template } from 'aws-cdk-lib/assertions';
import { buildStack, FIXTURES, nagFindings, resourcesOf } from './helpers';
import { Decision, evaluate, roleStatements } from './iam-eval';

/** This stack's identity and database prefix with the evaluator's pseudo parameters (us-east-1). */
const OWNER = 'Benchfleet@us-east-1';
const DB_PREFIX = dbIdentifierPrefixOf('Benchfleet');
const lambdaRole = (name: string): RegExp => new RegExp(`^OrchestrationFunctions${name}Role[0-9A-F]{8}$`);

/** May this Lambda's role terminate a run's instance of `owner` in `region`? */
function terminate(template: Template, name: string, region: string, owner = OWNER): Decision {
  return evaluate(roleStatements(template, lambdaRole(name)), {
    action: 'ec2:TerminateInstances',
    resource: `arn:aws:ec2:${region}:111111111111:instance/i-0123456789abcdef0`,
    context: { 'aws:ResourceTag/benchfleet:run-id': 'r1', 'aws:ResourceTag/benchfleet:stack': owner },
  });
}

// -c resultsStore=timestream -c keepResults=true: retention, and (below) Timestream one key away.
const retained = buildStack({ keepResults: true, resultsStore: 'timestream' });

describe('keepResults=true', () => {
  const { stack, template } = retained;

  test('buckets, tables and log groups are retained, and nothing empties the buckets', () => {
    for (const type of ['AWS::S3::Bucket', 'AWS::Timestream::Table', 'AWS::Timestream::Database', 'AWS::Logs::LogGroup']) {
      const resources = resourcesOf(template, type);
      expect(resources.length).toBeGreaterThan(0);
      for (const [, r] of resources) expect(r.DeletionPolicy).toBe('Retain');
    }
    expect(resourcesOf(template, 'Custom::S3AutoDeleteObjects')).toHaveLength(0);
  });

  test('still cdk-nag clean', () => {
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('resultsStore: athena by default, timestream one key away', () => {
  // cdk.json's context, as `cdk deploy` with no -c reads it: Timestream for LiveAnalytics is closed to
  // accounts new since 2025-06-20, so the default must deploy without it (issue 30, finding 1).
  const { stack, template } = buildStack();
  // One build serves keepResults=true and the Timestream checks (its retention keys are untouched).
  const timestream = retained;
  const storeOf = (t: typeof template): string[] => [
    ...new Set(
      resourcesOf(t, 'AWS::Lambda::Function')
        .filter(([, f]) => f.Properties.Runtime === 'python3.13')
        .map(([, fn]) => fn.Properties.Environment.Variables.RESULTS_STORE as string),
    ),
  ];

  test('the default has no Timestream resources; Lambdas are told which store they have', () => {
    expect(resourcesOf(template, 'AWS::Timestream::Database')).toHaveLength(0);
    expect(resourcesOf(template, 'AWS::Timestream::Table')).toHaveLength(0);
    expect(resourcesOf(template, 'AWS::Glue::Database')).toHaveLength(1);
    expect(storeOf(template)).toEqual(['athena']);
  });

  test('-c resultsStore=timestream gives the Timestream database and tables instead of Glue', () => {
    timestream.template.resourceCountIs('AWS::Timestream::Database', 1);
    expect(resourcesOf(timestream.template, 'AWS::Glue::Database')).toHaveLength(0);
    expect(storeOf(timestream.template)).toEqual(['timestream']);
    expect(nagFindings(timestream.stack)).toEqual([]);
  });

  test('Timestream database with samples, status_samples, step_summaries, cloud_metrics and magnetic writes', () => {
    const tables = resourcesOf(timestream.template, 'AWS::Timestream::Table').map(([, t]) => t);
    expect(tables.map((t) => t.Properties.TableName).sort()).toEqual([
      'cloud_metrics',
      'samples',
      'status_samples',
      'step_summaries',
    ]);
    for (const table of tables) {
      expect(table.Properties.RetentionProperties).toEqual({
        MemoryStoreRetentionPeriodInHours: '72',
        MagneticStoreRetentionPeriodInDays: '365',
      });
      expect(table.Properties.MagneticStoreWriteProperties).toEqual({ EnableMagneticStoreWrites: true });
      expect(table.DeletionPolicy).toBe('Retain'); // keepResults=true in this build
    }
  });

  test('summarize may write the runs and targets rows and register their partitions', () => {
    const [roleId] = resourcesOf(template, 'AWS::IAM::Role').find(([id]) =>
      id.startsWith('OrchestrationFunctionsSummarizeRole'),
    )!;
    const statements = resourcesOf(template, 'AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as any[]);
    const actions = (s: any): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
    const put = statements.find((s) => actions(s).includes('s3:PutObject') && JSON.stringify(s.Resource).includes('/tables/*'));
    expect(put).toBeDefined();
    const glue = statements.find((s) => actions(s).includes('glue:BatchCreatePartition'));
    expect(JSON.stringify(glue.Resource)).toMatch(/table\//);
  });

  test('still cdk-nag clean', () => {
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('numeric keys', () => {
  const { template } = buildStack({
    maxRunHours: '6',
    logRetentionDays: 7,
    timestreamMemoryRetentionHours: 24,
    powertoolsVersion: '3.36.0',
    apiThrottleRateLimit: 5,
  });

  test('maxRunHours sets the execution timeout', () => {
    const [, sm] = resourcesOf(template, 'AWS::StepFunctions::StateMachine')[0];
    expect(JSON.parse(sm.Properties.DefinitionString).TimeoutSeconds).toBe(6 * 3600);
  });

  test('retention, layer version and throttling follow context', () => {
    for (const [, g] of resourcesOf(template, 'AWS::Logs::LogGroup')) expect(g.Properties.RetentionInDays).toBe(7);
    for (const [, t] of resourcesOf(template, 'AWS::Timestream::Table')) {
      expect(t.Properties.RetentionProperties.MemoryStoreRetentionPeriodInHours).toBe('24');
    }
    const [, fn] = resourcesOf(template, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Runtime === 'python3.13',
    )!;
    expect(fn.Properties.Layers).toEqual(['{{resolve:ssm:/aws/service/powertools/python/arm64/python3.13/3.36.0}}']);
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 5 })],
    });
  });
});

describe('the ASL decides what the state machine role may do', () => {
  const { stack, template } = buildStack(
    { maxRunHours: 48 },
    { definitionPath: path.join(FIXTURES, 'sdk-integrations.asl.json') },
  );

  test('TimeoutSeconds is maxRunHours, and every Lambda learns it as MAX_RUN_HOURS', () => {
    const [, sm] = resourcesOf(template, 'AWS::StepFunctions::StateMachine')[0];
    expect(JSON.parse(sm.Properties.DefinitionString).TimeoutSeconds).toBe(48 * 3600);
    const python = resourcesOf(template, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'python3.13');
    expect(python.length).toBeGreaterThan(0);
    for (const [, f] of python) expect(f.Properties.Environment.Variables.MAX_RUN_HOURS).toBe('48');
  });

  test('aws-sdk ssm integrations and Distributed Map get exactly their grants', () => {
    const [, policy] = resourcesOf(template, 'AWS::IAM::Policy').find(([id]) =>
      id.startsWith('OrchestrationBenchmarkRunStateMachineRoleDefaultPolicy'),
    )!;
    const statements = policy.Properties.PolicyDocument.Statement as any[];
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    expect(actions).toEqual(
      expect.arrayContaining([
        'ssm:SendCommand',
        'ssm:GetCommandInvocation',
        'states:StartExecution',
        'lambda:InvokeFunction',
      ]),
    );
    expect(actions).not.toContain('ec2:RunInstances');
    const sendToInstances = statements.find((s) => s.Sid === 'SendToOwnedInstances');
    expect(sendToInstances.Condition.Null).toEqual({ 'ssm:resourceTag/benchfleet:run-id': 'false' });
    expect(sendToInstances.Condition.StringEquals['ssm:resourceTag/benchfleet:stack']).toBeDefined();
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('definition checks', () => {
  test('an unknown ${Substitution} in the ASL fails synth', () => {
    expect(() =>
      buildStack({}, { definitionPath: path.join(FIXTURES, 'unknown-substitution.asl.json') }),
    ).toThrow(/unknown substitutions \$\{MysteryFunctionArn\}/);
  });

  test('a Task integration without a grant fails synth', () => {
    expect(() =>
      buildStack({}, { definitionPath: path.join(FIXTURES, 'ungranted-integration.asl.json') }),
    ).toThrow(/without a grant.*aws-sdk:ec2:runInstances/);
  });
});

describe('existing VPC (vpcId)', () => {
  const env = { account: '123456789012', region: 'eu-west-1' };
  const vpcId = 'vpc-0123456789abcdef0';
  /** The lookup's answer, the way cdk.context.json records it. */
  const lookup = (subnetGroups: unknown[]): Record<string, unknown> => ({
    vpcId,
    vpcCidrBlock: '10.10.0.0/16',
    ownerAccountId: env.account,
    availabilityZones: ['eu-west-1a', 'eu-west-1b'],
    subnetGroups,
  });
  const lookupKey = (context: Record<string, unknown>): string => {
    const first = buildStack({ ...context, '@aws-cdk/core:failSynthOnValidationErrors': false }, { env });
    return first.app.synth().manifest.missing!.find((m) => m.provider === 'vpc-provider')!.key;
  };

  // Issue 11 defect 10: a host without a public IP in a subnet without a NAT route never reaches SSM.
  test('public subnets without the word that they assign public IPs: refused, naming the keys', () => {
    expect(() => buildStack({ vpcId }, { env })).toThrow(/subnetType.*MapPublicIpOnLaunch.*subnetsAssignPublicIp/);
  });

  test('private: only subnets with a NAT route; a VPC with isolated ones only is refused, naming subnetType', () => {
    const context = { vpcId, subnetType: 'private' };
    const key = lookupKey(context);
    const isolated = {
      name: 'Isolated',
      type: 'Isolated',
      subnets: [
        { subnetId: 'subnet-0bbbbbbbbbbbbbbb1', cidr: '10.10.2.0/24', availabilityZone: 'eu-west-1a', routeTableId: 'rtb-03' },
        { subnetId: 'subnet-0bbbbbbbbbbbbbbb2', cidr: '10.10.3.0/24', availabilityZone: 'eu-west-1b', routeTableId: 'rtb-04' },
      ],
    };
    expect(() => buildStack({ ...context, [key]: lookup([isolated]) }, { env })).toThrow(
      /context "subnetType": no private subnets in vpc-0123456789abcdef0/,
    );
    const nat = {
      name: 'Private',
      type: 'Private',
      subnets: isolated.subnets.map((s, i) => ({ ...s, subnetId: `subnet-0cccccccccccccc${i}`, routeTableId: `rtb-1${i}` })),
    };
    const { template } = buildStack({ ...context, [key]: lookup([isolated, nat]) }, { env });
    template.hasResourceProperties('AWS::RDS::DBSubnetGroup', {
      SubnetIds: ['subnet-0cccccccccccccc0', 'subnet-0cccccccccccccc1'],
    });
  });

  test('looks the VPC up from context and uses its public subnets, without creating a VPC', () => {
    // First synth records the missing lookup (its dummy VPC id fails template validation, which is
    // what the CLI's lookup round trip tolerates too); answer it the way cdk.context.json would.
    const first = buildStack(
      { vpcId, subnetsAssignPublicIp: true, '@aws-cdk/core:failSynthOnValidationErrors': false },
      { env },
    );
    const missing = first.app.synth().manifest.missing ?? [];
    expect(missing.map((m) => m.provider)).toContain('vpc-provider');
    const key = missing.find((m) => m.provider === 'vpc-provider')!.key;
    const { stack, template } = buildStack(
      {
        vpcId,
        subnetsAssignPublicIp: true,
        [key]: lookup([
          {
            name: 'Public',
            type: 'Public',
            subnets: [
              { subnetId: 'subnet-0aaaaaaaaaaaaaaa1', cidr: '10.10.0.0/24', availabilityZone: 'eu-west-1a', routeTableId: 'rtb-01' },
              { subnetId: 'subnet-0aaaaaaaaaaaaaaa2', cidr: '10.10.1.0/24', availabilityZone: 'eu-west-1b', routeTableId: 'rtb-02' },
            ],
          },
        ]),
      },
      { env },
    );
    expect(resourcesOf(template, 'AWS::EC2::VPC')).toHaveLength(0);
    expect(resourcesOf(template, 'AWS::EC2::FlowLog')).toHaveLength(0);
    template.hasResourceProperties('AWS::RDS::DBSubnetGroup', {
      SubnetIds: ['subnet-0aaaaaaaaaaaaaaa1', 'subnet-0aaaaaaaaaaaaaaa2'],
    });
    template.hasResourceProperties('AWS::EC2::SecurityGroup', { VpcId: vpcId });
    const [, fn] = resourcesOf(template, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Runtime === 'python3.13',
    )!;
    expect(fn.Properties.Environment.Variables.SUBNET_IDS).toBe('subnet-0aaaaaaaaaaaaaaa1,subnet-0aaaaaaaaaaaaaaa2');
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('sweepRegions', () => {
  const { stack, template } = buildStack({ sweepRegions: ['us-east-1', 'eu-west-1'] });
  const fns = resourcesOf(template, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'python3.13');

  test('the janitor sweeps the listed regions', () => {
    const [, janitor] = fns.find(([, f]) => f.Properties.Handler === 'handlers.janitor.handler')!;
    expect(janitor.Properties.Environment.Variables.SWEEP_REGIONS).toBe('us-east-1,eu-west-1');
  });

  test('the sweepers may delete run-tagged resources there too; the per-target teardown only at home', () => {
    for (const name of ['Janitor', 'TeardownByTag', 'Api', 'Teardown']) {
      const may = (region: string, owner = OWNER): Decision => terminate(template, name, region, owner);
      expect([name, may('us-east-1')]).toEqual([name, 'allow']); // the stack's own region always
      expect([name, may('eu-west-1')]).toEqual([name, name === 'Teardown' ? 'implicit-deny' : 'allow']);
      expect([name, may('ap-south-1')]).not.toEqual([name, 'allow']);
      // Only run-tagged instances of this stack.
      expect([name, may('us-east-1', 'Other@us-east-1')]).toEqual([name, 'implicit-deny']);
    }
  });

  test('still cdk-nag clean', () => {
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('targetRegions', () => {
  const { stack, template } = buildStack({ targetRegions: ['us-west-1', 'eu-north-1'] });
  const fns = resourcesOf(template, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'python3.13');

  test('every Lambda is told the target regions (Plan and the API refuse the others)', () => {
    expect(fns.length).toBeGreaterThan(0);
    for (const [, fn] of fns) {
      expect(fn.Properties.Environment.Variables.TARGET_REGIONS).toBe('us-west-1,eu-north-1');
      // Where each target region lists its resource ids (the same name in every region).
      expect(fn.Properties.Environment.Variables.TARGET_RESOURCES_PARAMETER).toBe('/benchfleet/Benchfleet/target-resources');
    }
  });

  test('the janitor sweeps every target region, and the sweepers may delete there', () => {
    const [, janitor] = fns.find(([, f]) => f.Properties.Handler === 'handlers.janitor.handler')!;
    expect(janitor.Properties.Environment.Variables.SWEEP_REGIONS).toBe('us-west-1,eu-north-1');
    for (const region of ['us-west-1', 'eu-north-1']) expect(terminate(template, 'Janitor', region)).toBe('allow');
    expect(terminate(template, 'Janitor', 'ap-south-1')).toBe('explicit-deny');
  });

  test("the per-target teardown may delete in every target region (it acts in the target's)", () => {
    const statements = roleStatements(template, lambdaRole('Teardown'));
    const context = { 'aws:ResourceTag/benchfleet:run-id': 'r1', 'aws:ResourceTag/benchfleet:stack': OWNER };
    for (const region of ['us-east-1', 'us-west-1', 'eu-north-1', 'ap-south-1']) {
      const expected = region === 'ap-south-1' ? 'explicit-deny' : 'allow';
      const arn = (rest: string): string => `arn:aws:${rest.replace('<region>', region)}`;
      for (const [action, resource] of [
        ['ec2:TerminateInstances', arn('ec2:<region>:111111111111:instance/i-0123456789abcdef0')],
        ['ec2:DeleteVolume', arn('ec2:<region>:111111111111:volume/vol-0123456789abcdef0')],
        ['rds:DeleteDBInstance', arn(`rds:<region>:111111111111:db:${DB_PREFIX}-m6i-0a1b2c3d-r1-db`)],
      ]) {
        expect([action, region, evaluate(statements, { action, resource, context })]).toEqual([action, region, expected]);
      }
    }
  });

  test('with sweepRegions too: the union', () => {
    const both = buildStack({ targetRegions: 'us-west-1', sweepRegions: 'eu-west-1' }).template;
    const [, janitor] = resourcesOf(both, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Handler === 'handlers.janitor.handler',
    )!;
    expect(janitor.Properties.Environment.Variables.SWEEP_REGIONS).toBe('us-west-1,eu-west-1');
  });

  test('unset: the home region only', () => {
    const [, fn] = resourcesOf(buildStack().template, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Handler === 'handlers.plan.handler',
    )!;
    expect(fn.Properties.Environment.Variables.TARGET_REGIONS).toEqual({ Ref: 'AWS::Region' });
  });

  test('still cdk-nag clean', () => {
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('validation of context values', () => {
  const config = (context: Record<string, unknown>): ReturnType<typeof readConfig> =>
    readConfig(new App({ context }).node);

  test('defaults when nothing is set', () => {
    expect(config({})).toMatchObject({
      stackName: 'Benchfleet',
      resultsStore: 'athena',
      keepResults: false,
      maxRunHours: 48,
      maxAzs: 3,
      schedules: [],
    });
  });

  test('-c strings are parsed', () => {
    expect(config({ keepResults: 'true', maxRunHours: '12', schedules: '[]' })).toMatchObject({
      keepResults: true,
      maxRunHours: 12,
      schedules: [],
    });
    expect(config({ sweepRegions: 'us-east-1, eu-west-1' }).sweepRegions).toEqual(['us-east-1', 'eu-west-1']);
    expect(config({ sweepRegions: '["us-gov-west-1"]' }).sweepRegions).toEqual(['us-gov-west-1']);
    expect(config({}).sweepRegions).toBeUndefined();
  });

  test.each([
    [{ resultsStore: 'dynamo' }, /resultsStore/],
    [{ keepResults: 'yes' }, /keepResults/],
    [{ maxRunHours: 0 }, /maxRunHours/],
    [{ maxAzs: 1 }, /maxAzs/],
    [{ logRetentionDays: 2 }, /logRetentionDays/],
    [{ vpcId: 'default' }, /vpcId/],
    [{ sweepRegions: [] }, /sweepRegions/],
    [{ sweepRegions: ['us-east-1', 'US-WEST-2'] }, /sweepRegions.*US-WEST-2/],
    [{ sweepRegions: 'us-east-1,us-east-1' }, /sweepRegions.*duplicate/],
    [{ sweepRegions: '["us-east-1"' }, /sweepRegions/],
    [{ sweepRegions: 42 }, /sweepRegions/],
    [{ targetRegions: ['us-west-1', 'Mars-1'] }, /targetRegions.*Mars-1/],
    [{ targetRegions: [] }, /targetRegions/],
    [{ powertoolsLayerVersion: 27 }, /powertoolsLayerVersion.*replaced by powertoolsVersion/],
    [{ powertoolsVersion: '2.43.1' }, /powertoolsVersion.*3\.37\.0/],
    [{ powertoolsVersion: 'latest' }, /powertoolsVersion/],
    [{ schedules: [{ name: 'bad name', expression: 'rate(1 day)', spec: 'x.yaml' }] }, /schedules\[0\]\.name/],
    [{ schedules: [{ name: 'nightly', expression: 'every day', spec: 'x.yaml' }] }, /schedules\[0\]\.expression/],
    [
      {
        schedules: [
          { name: 'a', expression: 'rate(1 day)', spec: 'x.yaml' },
          { name: 'a', expression: 'rate(2 days)', spec: 'y.yaml' },
        ],
      },
      /duplicate/,
    ],
  ])('%j is refused', (context, message) => {
    expect(() => config(context)).toThrow(message);
  });
});
