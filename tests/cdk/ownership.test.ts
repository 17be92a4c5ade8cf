/**
 * Never touch what is not ours (issue 14), decided by evaluating the synthesized IAM policies of
 * every role for the requests that matter: another stack's resources, pre-existing resources (with
 * or without benchfleet's tag keys), protection switches, and RDS-managed secrets.
 */
import { App, Stack } from 'aws-cdk-lib';
import { dbIdentifierPrefix, stackOwner } from '../../cdk/lib/ownership';
import { buildStack, Built, resourcesOf } from './helpers';
import { allRoles, ContextValue, evaluate, globMatch, PSEUDO, Request, resolve, roleStatements } from './iam-eval';
import { disagreements, Recorder } from './second-opinion';

const { partition, region, account } = PSEUDO;
const OTHER_REGION = 'eu-north-1';

let built: Built;
let ours: { owner: string; prefix: string };
let theirs: { owner: string; prefix: string };
beforeAll(() => {
  built = buildStack({ stackName: 'BenchfleetA', sweepRegions: [region, OTHER_REGION] });
  // Identities as the template resolves them (the region is a token in an env-agnostic synth).
  ours = { owner: `BenchfleetA@${region}`, prefix: dbIdentifierPrefix(built.stack) };
  const other = new Stack(new App(), 'BenchfleetB');
  theirs = { owner: `BenchfleetB@${region}`, prefix: dbIdentifierPrefix(other) };
  expect(stackOwner(built.stack)).toContain('BenchfleetA@');
  expect(theirs.prefix).not.toEqual(ours.prefix);
});

const role = (name: string): RegExp => new RegExp(`^OrchestrationFunctions${name}Role[0-9A-F]{8}$`);
const SWEEPERS = ['Teardown', 'TeardownByTag', 'Janitor', 'Api'];
const TARGET_ROLE = /^TargetsInstanceRole[0-9A-F]{8}$/;

const instance = (r = region): string => `arn:${partition}:ec2:${r}:${account}:instance/i-0123456789abcdef0`;
const volume = (r = region): string => `arn:${partition}:ec2:${r}:${account}:volume/vol-0123456789abcdef0`;
const db = (name: string, r = region): string => `arn:${partition}:rds:${r}:${account}:db:${name}`;
const cluster = (name: string, r = region): string => `arn:${partition}:rds:${r}:${account}:cluster:${name}`;
const runTags = (owner?: string): Record<string, string> => ({
  'benchfleet:run-id': 'nightly-20261123t010000-ab12',
  'benchfleet:target-id': 'm6i',
  'benchfleet:expires-at': '2026-11-23T05:00:00Z',
  ...(owner === undefined ? {} : { 'benchfleet:stack': owner }),
});
const asResource = (tags: Record<string, string>, prefix = 'aws:ResourceTag'): Record<string, ContextValue> =>
  Object.fromEntries(Object.entries(tags).map(([k, v]) => [`${prefix}/${k}`, v]));
const asRequest = (tags: Record<string, string>): Record<string, ContextValue> => ({
  ...asResource(tags, 'aws:RequestTag'),
  'aws:TagKeys': Object.keys(tags),
});

// Every decision about a synthesized role is recorded, and decided again by an independent simulator
// at the end of the file (second-opinion.ts).
const recorder = new Recorder();
const judge = recorder.judge.bind(recorder);

/** Every role of the stack whose policies allow `req`. */
function rolesAllowing(req: Request): string[] {
  return allRoles(built.template).filter((id) => judge(roleStatements(built.template, id), req) === 'allow');
}

describe('what the Lambdas are told', () => {
  test('every function knows its stack, its DB prefix and the cost ceiling (tests use these values)', () => {
    const fns = resourcesOf(built.template, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'python3.13');
    expect(fns.length).toBeGreaterThan(10);
    for (const [, fn] of fns) {
      const env = resolve(fn.Properties.Environment.Variables) as Record<string, string>;
      expect(env.BENCHFLEET_STACK).toBe(ours.owner);
      expect(env.DB_IDENTIFIER_PREFIX).toBe(ours.prefix);
      expect(env.MAX_RUN_COST_USD).toBe('100');
    }
    // The default stack's values, which the Python tests' fixtures use (tests/statemachine/sm_harness.py).
    expect(dbIdentifierPrefix(new Stack(new App(), 'Benchfleet'))).toBe('bf2b97c5');
  });
});

describe('the evaluator reads policies the way IAM does', () => {
  const st = (extra: object): any => ({ Effect: 'Allow', Action: 'rds:Delete*', Resource: 'arn:*:rds:*:*:db:*', ...extra });
  test('wildcards, conditions, missing keys, explicit deny', () => {
    expect(globMatch('arn:*:db:bf?-*', 'arn:aws:rds:x:1:db:bf1-x')).toBe(true);
    const req = { action: 'rds:DeleteDBInstance', resource: db('x'), context: { 'aws:ResourceTag/k': 'v' } };
    expect(evaluate([st({})], req)).toBe('allow');
    expect(evaluate([st({ Condition: { StringEquals: { 'aws:ResourceTag/k': 'w' } } })], req)).toBe('implicit-deny');
    expect(evaluate([st({ Condition: { StringEquals: { 'aws:ResourceTag/other': 'v' } } })], req)).toBe('implicit-deny');
    expect(evaluate([st({ Condition: { Null: { 'aws:ResourceTag/other': 'true' } } })], req)).toBe('allow');
    expect(evaluate([st({ Condition: { 'ForAllValues:StringLike': { 'aws:TagKeys': ['b*'] } } })], {
      ...req,
      context: { 'aws:TagKeys': ['benchfleet:x', 'Owner'] },
    })).toBe('implicit-deny');
    expect(evaluate([st({}), st({ Effect: 'Deny' })], req)).toBe('explicit-deny');
    expect(evaluate([st({ Action: 'rds:Create*' })], req)).toBe('implicit-deny');
    expect(() => evaluate([st({ Condition: { NumericLessThan: { 'aws:x': '1' } } })], req)).toThrow(/not supported/);
  });
});

describe('another stack in the same account', () => {
  test("no role of ours terminates, deletes or commands another stack's run resources", () => {
    for (const r of [region, OTHER_REGION]) {
      const context = asResource(runTags(theirs.owner));
      expect(rolesAllowing({ action: 'ec2:TerminateInstances', resource: instance(r), context })).toEqual([]);
      expect(rolesAllowing({ action: 'ec2:DeleteVolume', resource: volume(r), context })).toEqual([]);
      expect(rolesAllowing({ action: 'ssm:SendCommand', resource: instance(r), context: asResource(runTags(theirs.owner), 'ssm:resourceTag') })).toEqual([]);
      for (const name of [`${theirs.prefix}-m6i-0a1b2c3d-r1-db`, `${ours.prefix}-m6i-0a1b2c3d-r1-db`]) {
        expect(rolesAllowing({ action: 'rds:DeleteDBInstance', resource: db(name, r), context })).toEqual([]);
      }
      expect(rolesAllowing({ action: 'rds:DeleteDBCluster', resource: cluster(`${theirs.prefix}-a-0a1b2c3d-r1-cluster`, r), context })).toEqual([]);
    }
  });

  test('our own run resources: exactly the sweepers and teardown may remove them, in every sweep region', () => {
    const expected = SWEEPERS.map((n) => allRoles(built.template).find((id) => role(n).test(id))).sort();
    const context = asResource(runTags(ours.owner));
    expect(rolesAllowing({ action: 'ec2:TerminateInstances', resource: instance(), context }).sort()).toEqual(expected);
    // A run's data volumes: deleted with their instance, or by the same roles when left detached.
    expect(rolesAllowing({ action: 'ec2:DeleteVolume', resource: volume(), context }).sort()).toEqual(expected);
    expect(rolesAllowing({ action: 'ec2:DeleteVolume', resource: volume(OTHER_REGION), context }).length).toBe(3);
    expect(rolesAllowing({ action: 'rds:DeleteDBInstance', resource: db(`${ours.prefix}-m6i-0a1b2c3d-r1-db`), context }).sort()).toEqual(expected);
    // The sweepers work in every sweep region; the per-target teardown in the stack's region only.
    const far = rolesAllowing({ action: 'rds:DeleteDBCluster', resource: cluster(`${ours.prefix}-a-0a1b2c3d-r1-cluster`, OTHER_REGION), context });
    expect(far.length).toBe(3);
    expect(far.some((id) => role('Teardown').test(id))).toBe(false);
  });

  test("provision cannot create with another stack's identity, nor with none", () => {
    const provision = roleStatements(built.template, role('Provision'));
    const launch = (owner?: string): Request => ({
      action: 'ec2:RunInstances',
      resource: instance(),
      context: { ...asRequest(runTags(owner)), 'ec2:MetadataHttpTokens': 'required' },
    });
    expect(judge(provision, launch(ours.owner))).toBe('allow');
    expect(judge(provision, launch(theirs.owner))).toBe('implicit-deny');
    expect(judge(provision, launch(undefined))).toBe('implicit-deny');
    const createDb = (owner: string | undefined, name: string): Request => ({
      action: 'rds:CreateDBInstance',
      resource: db(name),
      context: asRequest(runTags(owner)),
    });
    expect(judge(provision, createDb(ours.owner, `${ours.prefix}-m6i-0a1b2c3d-r1-db`))).toBe('allow');
    expect(judge(provision, createDb(theirs.owner, `${ours.prefix}-m6i-0a1b2c3d-r1-db`))).toBe('implicit-deny');
    expect(judge(provision, createDb(ours.owner, `${theirs.prefix}-m6i-0a1b2c3d-r1-db`))).toBe('implicit-deny');
  });
});

describe("a run's parameter groups (issue 28 item 1)", () => {
  const pg = (name: string, r = region): string => `arn:${partition}:rds:${r}:${account}:pg:${name}`;
  const cpg = (name: string, r = region): string => `arn:${partition}:rds:${r}:${account}:cluster-pg:${name}`;
  const roleIds = (...names: string[]): string[] =>
    names.map((n) => allRoles(built.template).find((id) => role(n).test(id))!).sort();
  const ourGroups = (): string[] => [pg(`${ours.prefix}-rds-m6g-0a1b2c3d-r1-pg`), cpg(`${ours.prefix}-aurora-0a1b2c3d-r2-cpg`)];

  test('provision creates them only tagged as a run of this stack, and sets them', () => {
    const provision = roleStatements(built.template, role('Provision'));
    for (const resource of ourGroups()) {
      const action = resource.includes(':cluster-pg:') ? 'rds:CreateDBClusterParameterGroup' : 'rds:CreateDBParameterGroup';
      expect(judge(provision, { action, resource, context: asRequest(runTags(ours.owner)) })).toBe('allow');
      expect(judge(provision, { action, resource, context: asRequest(runTags(theirs.owner)) })).toBe('implicit-deny');
      expect(judge(provision, { action, resource, context: asRequest(runTags()) })).toBe('implicit-deny');
      // The database's create names the group: authorized against it as well.
      const create = resource.includes(':cluster-pg:') ? 'rds:CreateDBCluster' : 'rds:CreateDBInstance';
      expect(judge(provision, { action: create, resource, context: asRequest(runTags(ours.owner)) })).toBe('allow');
    }
    expect(judge(provision, { action: 'rds:CreateDBParameterGroup', resource: pg('prod-params'), context: asRequest(runTags(ours.owner)) })).toBe('implicit-deny');
    // A group of the run's name that exists is adopted only when its tags are the run's (issue 41
    // item 12): provision reads the tags of groups named as ours and tagged as this stack's, no other.
    for (const resource of ourGroups()) {
      expect(judge(provision, { action: 'rds:ListTagsForResource', resource, context: asResource(runTags(ours.owner)) })).toBe('allow');
      expect(judge(provision, { action: 'rds:ListTagsForResource', resource, context: asResource({}) })).toBe('implicit-deny');
    }
    expect(judge(provision, { action: 'rds:ListTagsForResource', resource: pg('prod-params'), context: asResource(runTags(ours.owner)) })).toBe('implicit-deny');
  });

  test('exactly provision and start_step change them; exactly the sweepers and teardown delete them', () => {
    const context = asResource(runTags(ours.owner));
    for (const resource of ourGroups()) {
      const cluster = resource.includes(':cluster-pg:');
      const modify = cluster ? 'rds:ModifyDBClusterParameterGroup' : 'rds:ModifyDBParameterGroup';
      const remove = cluster ? 'rds:DeleteDBClusterParameterGroup' : 'rds:DeleteDBParameterGroup';
      expect(rolesAllowing({ action: modify, resource, context }).sort()).toEqual(roleIds('Provision', 'StartStep'));
      expect(rolesAllowing({ action: remove, resource, context }).sort()).toEqual(roleIds(...SWEEPERS));
      // Another stack's, or ours without a run's tags: nobody.
      expect(rolesAllowing({ action: modify, resource, context: asResource(runTags(theirs.owner)) })).toEqual([]);
      expect(rolesAllowing({ action: remove, resource, context: asResource({}) })).toEqual([]);
    }
    for (const resource of [pg('prod-params'), pg(`${theirs.prefix}-rds-0a1b2c3d-r1-pg`), cpg('default.aurora-mysql8.0')]) {
      const actions = resource.includes(':cluster-pg:')
        ? ['rds:ModifyDBClusterParameterGroup', 'rds:DeleteDBClusterParameterGroup']
        : ['rds:ModifyDBParameterGroup', 'rds:DeleteDBParameterGroup'];
      for (const action of actions) {
        expect(rolesAllowing({ action, resource, context })).toEqual([]);
      }
    }
  });

  test('only readiness reboots, and only a writer of a run of this stack', () => {
    const writer = db(`${ours.prefix}-aurora-0a1b2c3d-r1-writer`);
    expect(rolesAllowing({ action: 'rds:RebootDBInstance', resource: writer, context: asResource(runTags(ours.owner)) })).toEqual(roleIds('Readiness'));
    expect(rolesAllowing({ action: 'rds:RebootDBInstance', resource: writer, context: asResource(runTags(theirs.owner)) })).toEqual([]);
    expect(rolesAllowing({ action: 'rds:RebootDBInstance', resource: db('prod-orders'), context: asResource(runTags(ours.owner)) })).toEqual([]);
  });
});

describe('pre-existing resources', () => {
  const someoneElses: Array<Record<string, string>> = [
    {},
    { 'benchfleet:run-id': 'anything' }, // benchfleet's tag key but no ownership
    { team: 'payments', 'benchfleet:expires-at': '2000-01-01T00:00:00Z' },
  ];

  test('an existing instance, volume or database is never stopped, terminated, modified or deleted', () => {
    const destructive: Array<[string, string]> = [
      ['ec2:TerminateInstances', instance()],
      ['ec2:StopInstances', instance()],
      ['ec2:ModifyInstanceAttribute', instance()],
      ['ec2:DeleteVolume', volume()],
      ['ec2:DetachVolume', volume()],
      ['ec2:ModifyVolume', volume()],
      ['rds:DeleteDBInstance', db('prod-orders')],
      ['rds:StopDBInstance', db('prod-orders')],
      ['rds:ModifyDBInstance', db('prod-orders')],
      ['rds:DeleteDBCluster', cluster('prod-aurora')],
      ['rds:ModifyDBCluster', cluster('prod-aurora')],
    ];
    for (const tags of someoneElses) {
      for (const [action, resource] of destructive) {
        expect(rolesAllowing({ action, resource, context: asResource(tags) })).toEqual([]);
      }
    }
    // Even carrying our identity, a database not named with our prefix is not ours to delete.
    expect(rolesAllowing({ action: 'rds:DeleteDBInstance', resource: db('prod-orders'), context: asResource(runTags(ours.owner)) })).toEqual([]);
  });

  test('no role can lift deletion or termination protection on anything, ours included', () => {
    const context = asResource(runTags(ours.owner));
    for (const [action, resource] of [
      ['ec2:ModifyInstanceAttribute', instance()],
      ['ec2:DetachVolume', volume()],
      ['ec2:ModifyVolume', volume()],
      ['rds:ModifyDBInstance', db(`${ours.prefix}-m6i-0a1b2c3d-r1-db`)],
      ['rds:ModifyDBCluster', cluster(`${ours.prefix}-a-0a1b2c3d-r1-cluster`)],
    ]) {
      expect(rolesAllowing({ action, resource, context })).toEqual([]);
    }
  });

  test('an existing database or instance cannot be tagged into our ownership', () => {
    const tagging = asRequest(runTags(ours.owner));
    // Issue 30, finding 10: a name carrying this stack's prefix is not enough: only provision's own
    // names (<prefix>-<target>-<digest>-r<n>-<role>). RDS has no create-only condition, so such a name
    // stays taggable; the sweepers then refuse it (tests/functional/test_janitor.py).
    for (const resource of [db('prod-orders'), cluster('prod-aurora'), db('bf-legacy-db'), db(`${ours.prefix}-legacy`),
      db(`${ours.prefix}-orders-db`), cluster(`${ours.prefix}-reporting`)]) {
      expect(rolesAllowing({ action: 'rds:AddTagsToResource', resource, context: tagging })).toEqual([]);
      const remove = resource.includes(':cluster:') ? 'rds:DeleteDBCluster' : 'rds:DeleteDBInstance';
      expect(rolesAllowing({ action: remove, resource, context: asResource(runTags(ours.owner)) })).toEqual([]);
    }
    // EC2 tags only in the RunInstances request that creates the instance.
    expect(rolesAllowing({ action: 'ec2:CreateTags', resource: instance(), context: tagging })).toEqual([]);
    const onLaunch = { ...tagging, 'ec2:CreateAction': 'RunInstances' };
    expect(rolesAllowing({ action: 'ec2:CreateTags', resource: instance(), context: onLaunch })).toHaveLength(1);
  });
});

describe('what a host may do (issue 30, findings 12 and 13)', () => {
  const hostRole = (): ReturnType<typeof roleStatements> => roleStatements(built.template, TARGET_ROLE);
  const parameter = (name: string, r = region): string => `arn:${partition}:ssm:${r}:${account}:parameter/${name}`;

  test('no AWS managed policy: the statements the SSM and CloudWatch agents need, written out', () => {
    const [, instanceRole] = resourcesOf(built.template, 'AWS::IAM::Role').find(([id]) => TARGET_ROLE.test(id))!;
    expect(instanceRole.Properties.ManagedPolicyArns ?? []).toEqual([]);
    const statements = hostRole();
    for (const action of ['ssm:UpdateInstanceInformation', 'ec2messages:GetMessages', 'ssmmessages:OpenControlChannel']) {
      expect(judge(statements, { action, resource: '*' })).toBe('allow');
    }
  });

  test('a host reads its CloudWatch agent configuration, and no other parameter', () => {
    const statements = hostRole();
    for (const r of [region, OTHER_REGION]) {
      expect(judge(statements, { action: 'ssm:GetParameter', resource: parameter('AmazonCloudWatch-BenchfleetA-targets', r) })).toBe('allow');
    }
    for (const name of ['prod/db-password', 'AmazonCloudWatch-BenchfleetB-targets', 'benchfleet/BenchfleetA/target-resources']) {
      for (const action of ['ssm:GetParameter', 'ssm:GetParameters', 'ssm:GetParametersByPath']) {
        expect(judge(statements, { action, resource: parameter(name) })).toBe('implicit-deny');
      }
    }
  });

  test("a host publishes metrics in the CloudWatch agent's namespace only, and writes no logs", () => {
    const statements = hostRole();
    const put = (namespace: string): Request => ({ action: 'cloudwatch:PutMetricData', resource: '*', context: { 'cloudwatch:namespace': namespace } });
    expect(judge(statements, put('CWAgent'))).toBe('allow');
    // Benchfleet feeds the removal-failure alarm: a host must not be able to silence or trip it.
    for (const namespace of ['Benchfleet', 'AWS/EC2', 'Custom']) expect(judge(statements, put(namespace))).toBe('implicit-deny');
    for (const action of ['logs:CreateLogGroup', 'logs:PutLogEvents', 'logs:CreateLogStream']) {
      expect(judge(statements, { action, resource: `arn:${partition}:logs:${region}:${account}:log-group:any:*` })).toBe('implicit-deny');
    }
  });

  test("host A writes its own Run Command output only, never run B's raw results", () => {
    const statements = hostRole();
    const [bucketId] = resourcesOf(built.template, 'AWS::S3::Bucket').find(([id]) => /^Results[0-9A-F]{8}$/.test(id)) ?? [];
    expect(bucketId).toBeDefined();
    const object = (key: string): string => `<${bucketId}.Arn>/${key}`;
    const hostA = `arn:${partition}:ec2:${region}:${account}:instance/i-0aaaaaaaaaaaaaaaa`;
    const hostB = `arn:${partition}:ec2:${region}:${account}:instance/i-0bbbbbbbbbbbbbbbb`;
    const write = (key: string, host?: string): Request => ({
      action: 's3:PutObject',
      resource: object(key),
      context: host === undefined ? {} : { 'ec2:SourceInstanceARN': host },
    });
    expect(judge(statements, write(`hosts/${hostA}/run-a/m6g/rep-1/t0001/cmd/i-0aaaaaaaaaaaaaaaa/stdout`, hostA))).toBe('allow');
    for (const key of ['runs/run-b/m6g/rep-1/t0001.jsonl', 'runs/run-b/summary.json', `hosts/${hostB}/run-b/m6g/rep-1/t0001/x`,
      'tables/samples/run_id=run-b/x.json']) {
      expect(judge(statements, write(key, hostA))).toBe('implicit-deny');
    }
    expect(judge(statements, write(`hosts/${hostA}/run-a/x`))).toBe('implicit-deny'); // not an instance's credentials
  });
});

describe("an existing target's host", () => {
  test('opted in with benchfleet:agent-host, it receives the agent and nothing else', () => {
    const optedIn = asResource({ 'benchfleet:agent-host': ours.owner });
    const senders = rolesAllowing({ action: 'ssm:SendCommand', resource: instance(), context: asResource({ 'benchfleet:agent-host': ours.owner }, 'ssm:resourceTag') });
    expect(senders.length).toBeGreaterThanOrEqual(1);
    expect(senders.every((id) => /StartStep|StateMachine/.test(id))).toBe(true);
    expect(rolesAllowing({ action: 'ssm:SendCommand', resource: instance(), context: asResource({ 'benchfleet:agent-host': theirs.owner }, 'ssm:resourceTag') })).toEqual([]);
    for (const action of ['ec2:TerminateInstances', 'ec2:StopInstances', 'ec2:ModifyInstanceAttribute', 'ec2:CreateTags']) {
      expect(rolesAllowing({ action, resource: instance(), context: optedIn })).toEqual([]);
    }
  });
});

describe('RDS-managed master secrets', () => {
  const secretArn = (kind: 'db' | 'cluster', id: string, r = region): string =>
    `arn:${partition}:secretsmanager:${r}:${account}:secret:rds!${kind}-3f1c0c8e-0000-4000-8000-0000000000${id}-AbCdEf`;
  const hostArn = (id: string, r = region): string => `arn:${partition}:ec2:${r}:${account}:instance/i-0123456789abcd${id}`;
  const instanceTag = 'aws:rds:primaryDBInstanceArn';
  const clusterTag = 'aws:rds:primaryDBClusterArn';
  const READER = 'benchfleet:secret-reader';
  /** One run's database secret as readiness leaves it: RDS's tag, and the run's host as its reader. */
  interface RunSecret {
    readonly arn: string;
    readonly tags: Record<string, string>;
    readonly host: string;
  }
  const runSecret = (run: string, kind: 'db' | 'cluster' = 'db', r = region, prefix = ours.prefix): RunSecret => {
    const host = hostArn(run, r);
    const dbTag: Record<string, string> = kind === 'db'
      ? { [instanceTag]: db(`${prefix}-m6i-${run}00000a-r1-db`, r) }
      : { [clusterTag]: cluster(`${prefix}-a-${run}00000a-r1-cluster`, r) };
    return { arn: secretArn(kind, run, r), tags: { ...dbTag, [READER]: host }, host };
  };
  /** GetSecretValue of `secret` with the credentials of the instance profile of `host` (or none). */
  const read = (secret: { arn: string; tags: Record<string, string> }, host?: string): Request => ({
    action: 'secretsmanager:GetSecretValue',
    resource: secret.arn,
    context: {
      ...asResource(secret.tags, 'secretsmanager:ResourceTag'),
      ...(host === undefined ? {} : { 'ec2:SourceInstanceARN': host }),
    },
  });
  const hostRole = (): ReturnType<typeof roleStatements> => roleStatements(built.template, TARGET_ROLE);

  test('the evaluator substitutes policy variables, and a variable absent from the request matches nothing', () => {
    const st = {
      Effect: 'Allow' as const,
      Action: 'secretsmanager:GetSecretValue',
      Resource: '*',
      Condition: { StringEquals: { 'secretsmanager:ResourceTag/r': '${ec2:SourceInstanceARN}' } },
    };
    const req = (tag: string, source?: string): Request => ({
      action: 'secretsmanager:GetSecretValue',
      resource: 'x',
      context: { 'secretsmanager:ResourceTag/r': tag, ...(source === undefined ? {} : { 'ec2:SourceInstanceARN': source }) },
    });
    expect(evaluate([st], req('a', 'a'))).toBe('allow');
    expect(evaluate([st], req('a', 'b'))).toBe('implicit-deny');
    expect(evaluate([st], req('${ec2:SourceInstanceARN}'))).toBe('implicit-deny');
    expect(evaluate([st], req(''))).toBe('implicit-deny');
    expect(() => evaluate([{ ...st, Condition: { Bool: { 'aws:x': '${aws:y}' } } }], req('a', 'a'))).toThrow(/IAM ignores it/);
  });

  test("a run's host reads its own database's secret, RDS or Aurora, in any region a target may be", () => {
    for (const r of [region, OTHER_REGION]) {
      for (const kind of ['db', 'cluster'] as const) {
        const mine = runSecret('a1', kind, r);
        expect(judge(hostRole(), read(mine, mine.host))).toBe('allow');
      }
    }
  });

  test("the host of run A cannot read run B's secret, nor any secret not bound to it", () => {
    const a = runSecret('a1');
    const b = runSecret('b2');
    expect(judge(hostRole(), read(b, a.host))).toBe('implicit-deny');
    expect(judge(hostRole(), read(a, b.host))).toBe('implicit-deny');
    const cases: Request[] = [
      // Run B's secret before readiness bound it, and a secret of ours bound to no host.
      read({ arn: b.arn, tags: { [instanceTag]: b.tags[instanceTag] } }, a.host),
      // Bound to run A's host but not a database of this stack: another stack's, or someone else's.
      read({ arn: b.arn, tags: { [instanceTag]: db(`${theirs.prefix}-m6i-a100000a-r1-db`), [READER]: a.host } }, a.host),
      read({ arn: b.arn, tags: { [instanceTag]: db('prod-orders'), [READER]: a.host } }, a.host),
      read({ arn: secretArn('cluster', 'c3'), tags: { [clusterTag]: cluster('prod-aurora'), [READER]: a.host } }, a.host),
      // A secret someone named rds!db-... by hand and tagged for the host; an ordinary secret.
      read({ arn: secretArn('db', 'd4'), tags: { [READER]: a.host } }, a.host),
      read({ arn: `arn:${partition}:secretsmanager:${region}:${account}:secret:prod/api-key-AbCdEf`, tags: { [READER]: a.host } }, a.host),
      // The right secret, read with credentials that are not an instance profile's (no SourceInstanceARN).
      read(a),
    ];
    for (const req of cases) expect(judge(hostRole(), req)).toBe('implicit-deny');
  });

  test("no role but the host role reads a run's secret; an existing target's secret is no role's", () => {
    const a = runSecret('a1');
    const target = allRoles(built.template).find((id) => TARGET_ROLE.test(id));
    expect(rolesAllowing(read(a, a.host))).toEqual([target]);
    // Lambda roles carry no SourceInstanceARN: the same request without it is nobody's.
    expect(rolesAllowing(read(a))).toEqual([]);
    // An existing target names its own secret (password_secret_arn), read on its owner's host with its
    // owner's role: nothing of this stack reads it, whatever its name or tags.
    const theirsSecret = { arn: `arn:${partition}:secretsmanager:${region}:${account}:secret:team/mysql-AbCdEf`, tags: {} };
    expect(rolesAllowing(read(theirsSecret, a.host))).toEqual([]);
  });

  test("only readiness binds a secret to a host: this stack's databases' secrets, one tag key, an instance's ARN", () => {
    const a = runSecret('a1');
    const bind = (secret: RunSecret, tags: Record<string, string>): Request => ({
      action: 'secretsmanager:TagResource',
      resource: secret.arn,
      context: { ...asResource(secret.tags, 'secretsmanager:ResourceTag'), ...asRequest(tags) },
    });
    const unbound = { ...a, tags: { [instanceTag]: a.tags[instanceTag] } };
    const readiness = allRoles(built.template).find((id) => role('Readiness').test(id));
    expect(rolesAllowing(bind(unbound, { [READER]: a.host }))).toEqual([readiness]);
    const aurora = runSecret('a1', 'cluster', OTHER_REGION);
    expect(rolesAllowing(bind(aurora, { [READER]: hostArn('b2', OTHER_REGION) }))).toEqual([readiness]);
    const refused: Request[] = [
      bind({ ...a, tags: { [instanceTag]: db(`${theirs.prefix}-m6i-a100000a-r1-db`) } }, { [READER]: a.host }),
      bind({ ...a, tags: { [instanceTag]: db('prod-orders') } }, { [READER]: a.host }),
      bind({ ...a, tags: {} }, { [READER]: a.host }),
      bind(unbound, { [READER]: a.host, team: 'x' }), // another key besides
      bind(unbound, { [READER]: `arn:${partition}:iam::${account}:role/anyone` }), // not an instance
      bind(unbound, { [READER]: `arn:${partition}:ec2:${region}:222222222222:instance/i-0123456789abcdef0` }),
    ];
    for (const req of refused) expect(rolesAllowing(req)).toEqual([]);
    // Nobody unbinds or reaches the secret's policy.
    for (const action of ['secretsmanager:UntagResource', 'secretsmanager:PutResourcePolicy', 'secretsmanager:DeleteResourcePolicy']) {
      expect(rolesAllowing({ action, resource: a.arn, context: asResource(a.tags, 'secretsmanager:ResourceTag') })).toEqual([]);
    }
  });

  test("RDS creates and tags the secrets of this stack's databases only, and never binds them to a host", () => {
    // Issue 30, findings 8 and 11: aws:CalledVia is unsettled for these calls, and was the only
    // condition; RDS's own aws:rds:* tag (which only AWS may set) names the database instead.
    const provision = roleStatements(built.template, role('Provision'));
    const ownDb = db(`${ours.prefix}-m6i-0a1b2c3d-r1-db`);
    const ownCluster = cluster(`${ours.prefix}-a-0a1b2c3d-r1-cluster`);
    const request = (action: string, kind: 'db' | 'cluster', tags: Record<string, string>): Request => ({
      action,
      resource: secretArn(kind, 'a1'),
      context: asRequest(tags),
    });
    for (const action of ['secretsmanager:CreateSecret', 'secretsmanager:TagResource']) {
      expect(judge(provision, request(action, 'db', { [instanceTag]: ownDb }))).toBe('allow');
      expect(judge(provision, request(action, 'cluster', { [clusterTag]: ownCluster }))).toBe('allow');
      // Another stack's or a pre-existing database's secret, or no database tag at all (a caller's own
      // request, through RDS or not), is refused.
      expect(judge(provision, request(action, 'db', { [instanceTag]: db(`${theirs.prefix}-m6i-0a1b2c3d-r1-db`) }))).toBe('implicit-deny');
      expect(judge(provision, request(action, 'db', { [instanceTag]: db('prod-orders') }))).toBe('implicit-deny');
      expect(judge(provision, { action, resource: secretArn('db', 'a1'), context: { 'aws:CalledVia': ['rds.amazonaws.com'] } })).toBe('implicit-deny');
      // benchfleet:secret-reader is readiness's to set, even alongside RDS's tag.
      expect(judge(provision, request(action, 'db', { [instanceTag]: ownDb, [READER]: hostArn('a1') }))).toBe('implicit-deny');
    }
  });
});

describe('a second opinion: the independent IAM simulator @cloud-copilot/iam-simulate', () => {
  test('decides every request above as the evaluator did', async () => {
    const judged = recorder.decisions;
    // Every role, for every request of the tests above (1,000 and more, not counting repeats).
    expect(judged.length).toBeGreaterThan(1000);
    expect(await disagreements(built.template, judged)).toEqual([]);
  }, 60_000);
});
