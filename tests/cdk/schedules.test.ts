/**
 * Scheduled comparisons from the `schedules` context list: one EventBridge Scheduler schedule each,
 * starting the state machine with the spec (YAML or JSON, read at synth) plus {"schedule": name},
 * through a role that may only start this state machine.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse } from 'yaml';
import { readSpec } from '../../cdk/lib/schedules';
import { buildStack, Built, nagFindings, REPO_ROOT, resourcesOf } from './helpers';

const YAML_SPEC = 'workloads/comparisons/demo-durability.yaml';
const JSON_SPEC = 'tests/cdk/fixtures/nightly-spec.json';
// Prefer a real comparison from the repository; fall back to the fixture if it is renamed.
const yamlSpec = fs.existsSync(path.join(REPO_ROOT, YAML_SPEC)) ? YAML_SPEC : JSON_SPEC;

const SCHEDULES = [
  { name: 'nightly-durability', expression: 'cron(0 2 * * ? *)', spec: yamlSpec, timezone: 'Europe/Paris' },
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
    'Benchfleet-nightly-durability',
    'Benchfleet-weekly-fixture',
  ]);
  const nightly = schedules.find((s) => s.Name === 'Benchfleet-nightly-durability');
  expect(nightly.ScheduleExpressionTimezone).toBe('Europe/Paris');
});

test('each schedule starts the state machine with its spec as JSON plus the schedule name', () => {
  const schedules = resourcesOf(built.template, 'AWS::Scheduler::Schedule').map(([, s]) => s.Properties);
  const [smId] = resourcesOf(built.template, 'AWS::StepFunctions::StateMachine')[0];
  for (const entry of SCHEDULES) {
    const schedule = schedules.find((s) => s.Name === `Benchfleet-${entry.name}`);
    expect(schedule.Target.Arn).toEqual({ Ref: smId });
    const input = JSON.parse(schedule.Target.Input);
    const spec = parse(fs.readFileSync(path.join(REPO_ROOT, entry.spec), 'utf8'));
    expect(input).toEqual({ ...spec, schedule: entry.name });
  }
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

  test('refuses paths outside the repository, missing files and non-mappings', () => {
    expect(() => readSpec('../etc/passwd')).toThrow(/inside the repository/);
    expect(() => readSpec('workloads/comparisons/no-such-spec.yaml')).toThrow(/no such file/);
    expect(() => readSpec('tests/cdk/fixtures/not-a-mapping.yaml')).toThrow(/mapping/);
  });
});
