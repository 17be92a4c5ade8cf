/**
 * Scheduled comparisons from the `schedules` context list: one EventBridge Scheduler schedule each,
 * starting the state machine with the execution input Plan takes, {"spec": <spec, workload inline>,
 * "schedule": name}, checked against the schema exported from the input's one model
 * (statemachines/benchmark-run.input.schema.json), through a role that may only start this state
 * machine. tests/statemachine/test_scheduled_input.py starts a run offline with the same Input.
 */
import * as fs from 'fs';
import * as path from 'path';
import Ajv2020 from 'ajv/dist/2020';
import { parse } from 'yaml';
import { executionSpec, readSpec } from '../../cdk/lib/schedules';
import { buildStack, Built, FIXTURES, nagFindings, REPO_ROOT, resourcesOf } from './helpers';

const YAML_SPEC = 'workloads/comparisons/graviton-vs-intel-vs-amd.yaml';
const JSON_SPEC = 'tests/cdk/fixtures/nightly-spec.json';
// Prefer a real comparison from the repository; fall back to the fixture if it is renamed.
const yamlSpec = fs.existsSync(path.join(REPO_ROOT, YAML_SPEC)) ? YAML_SPEC : JSON_SPEC;
const INPUT_SCHEMA = path.join(REPO_ROOT, 'statemachines', 'benchmark-run.input.schema.json');

const SCHEDULES = [
  { name: 'nightly-graviton', expression: 'cron(0 2 * * ? *)', spec: yamlSpec, timezone: 'Europe/Paris' },
  { name: 'weekly-fixture', expression: 'rate(7 days)', spec: JSON_SPEC },
];

let built: Built;
beforeAll(() => {
  built = buildStack({ schedules: SCHEDULES });
});

test('one schedule per context entry, with its expression and time zone', () => {
  const schedules = resourcesOf(built.template, 'AWS::Scheduler::Schedule').map(([, s]) => s.Properties);
  expect(schedules.map((s) => s.ScheduleExpression).sort()).toEqual(['cron(0 2 * * ? *)', 'rate(7 days)']);
  expect(schedules.map((s) => s.Name).sort()).toEqual([
    'Benchfleet-nightly-graviton',
    'Benchfleet-weekly-fixture',
  ]);
  const nightly = schedules.find((s) => s.Name === 'Benchfleet-nightly-graviton');
  expect(nightly.ScheduleExpressionTimezone).toBe('Europe/Paris');
});

test('each schedule starts the state machine with {spec (workload inline), schedule}', () => {
  const schedules = resourcesOf(built.template, 'AWS::Scheduler::Schedule').map(([, s]) => s.Properties);
  const [smId] = resourcesOf(built.template, 'AWS::StepFunctions::StateMachine')[0];
  for (const entry of SCHEDULES) {
    const schedule = schedules.find((s) => s.Name === `Benchfleet-${entry.name}`);
    expect(schedule.Target.Arn).toEqual({ Ref: smId });
    const input = JSON.parse(schedule.Target.Input);
    const spec = parse(fs.readFileSync(path.join(REPO_ROOT, entry.spec), 'utf8'));
    const workload = parse(fs.readFileSync(path.join(REPO_ROOT, 'workloads', `${spec.workload}.yaml`), 'utf8'));
    expect(input).toEqual({ spec: { ...spec, workload }, schedule: entry.name });
  }
});

test("every schedule's Input is valid against the execution input schema", () => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const validate = ajv.compile(JSON.parse(fs.readFileSync(INPUT_SCHEMA, 'utf8')));
  const inputs = resourcesOf(built.template, 'AWS::Scheduler::Schedule').map(([, s]) => s.Properties.Target.Input);
  expect(inputs).toHaveLength(SCHEDULES.length);
  for (const input of inputs) {
    const valid = validate(JSON.parse(input));
    expect(ajv.errorsText(validate.errors)).toBe('No errors');
    expect(valid).toBe(true);
  }
  // The schema is not vacuous: the bare spec the schedules used to send is refused.
  expect(validate({ ...readSpec(JSON_SPEC), schedule: 'weekly-fixture' })).toBe(false);
  expect(validate({ spec: readSpec(JSON_SPEC), schedule: 'weekly-fixture' })).toBe(false); // workload by name
});

test('the schedules role may only start executions of this state machine', () => {
  const [roleId, role] = resourcesOf(built.template, 'AWS::IAM::Role').find(([id]) => id.startsWith('SchedulesRole'))!;
  expect(role.Properties.AssumeRolePolicyDocument.Statement[0]).toMatchObject({
    Principal: { Service: 'scheduler.amazonaws.com' },
    Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
  });
  const policies = resourcesOf(built.template, 'AWS::IAM::Policy').filter(([, p]) =>
    p.Properties.Roles.some((r: any) => r.Ref === roleId),
  );
  const statements = policies.flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
  const [smId] = resourcesOf(built.template, 'AWS::StepFunctions::StateMachine')[0];
  expect(statements).toEqual([{ Effect: 'Allow', Action: 'states:StartExecution', Resource: { Ref: smId } }]);
  for (const [, schedule] of resourcesOf(built.template, 'AWS::Scheduler::Schedule')) {
    expect(schedule.Properties.Target.RoleArn).toEqual({ 'Fn::GetAtt': [roleId, 'Arn'] });
  }
});

test('still cdk-nag clean', () => {
  expect(nagFindings(built.stack)).toEqual([]);
});

describe('readSpec', () => {
  test('reads YAML and JSON into objects', () => {
    expect(readSpec(JSON_SPEC)).toMatchObject({ name: 'fixture-nightly' });
    expect(typeof readSpec(yamlSpec).name).toBe('string');
  });

  test('executionSpec inlines the named workload and refuses local targets and unknown workloads', () => {
    expect(executionSpec(JSON_SPEC).workload).toMatchObject({ name: 'oltp-read-only-sweep' });
    expect(() => executionSpec('workloads/comparisons/demo-durability.yaml')).toThrow(
      /targets\[0\]\.kind: local targets run with benchfleet run --local/,
    );
    const unknown = path.relative(REPO_ROOT, path.join(FIXTURES, 'unknown-workload-spec.json'));
    expect(() => executionSpec(unknown)).toThrow(/workload: no workload named no-such-workload/);
  });

  test("executionSpec inlines each variant's named workload too (Plan refused it at every firing)", () => {
    const spec = executionSpec('workloads/comparisons/aurora-pk-order.yaml');
    const random = parse(fs.readFileSync(path.join(REPO_ROOT, 'workloads', 'insert-pk-order-random.yaml'), 'utf8'));
    expect(spec.variants).toEqual([{ id: 'seq' }, { id: 'random', workload: random }]);
    expect((spec.workload as Record<string, unknown>).name).toBe('insert-pk-order-seq');
  });

  test('refuses paths outside the repository, missing files and non-mappings', () => {
    expect(() => readSpec('../etc/passwd')).toThrow(/inside the repository/);
    expect(() => readSpec('workloads/comparisons/no-such-spec.yaml')).toThrow(/no such file/);
    expect(() => readSpec('tests/cdk/fixtures/not-a-mapping.yaml')).toThrow(/mapping/);
  });
});
