/**
 * Scheduled comparisons (context `schedules`): one EventBridge Scheduler schedule per entry, each
 * starting the benchmark state machine with the execution input Plan takes
 * (benchfleet.aws.planning.runplan.RunRequest, schema in statemachines/benchmark-run.input.schema.json):
 * `{"spec": <the entry's spec, workloads inline>, "schedule": <name>}`. The spec file is read, its
 * named workloads (the spec's and each variant's) inlined from workloads/ and checked at synth: the
 * Lambdas ship no workload library. The rule is the CLI's (benchfleet.spec.loading.LoadedSpec.inline, what
 * `run --remote` sends); tests/synthesized/test_schedule_specs.py holds every shipped spec to it.
 * All schedules share one role that may only start executions of this state machine.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Aws, TimeZone } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as schedulerTargets from 'aws-cdk-lib/aws-scheduler-targets';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { parse } from 'yaml';
import { ScheduleConfig } from './config';
import { REPO_ROOT } from './naming';

/** Read a YAML or JSON mapping from the repository (YAML parses JSON too). */
function readMapping(file: string, what: string, repoRoot: string): Record<string, unknown> {
  const resolved = path.resolve(repoRoot, file);
  const relative = path.relative(repoRoot, resolved);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new Error(`${what} ${file}: must be a path inside the repository`);
  }
  if (!fs.existsSync(resolved)) throw new Error(`${what} ${file}: no such file`);
  const doc: unknown = parse(fs.readFileSync(resolved, 'utf8'));
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new Error(`${what} ${file}: expected a mapping at the top level`);
  }
  return doc as Record<string, unknown>;
}

/** Read a YAML or JSON comparison spec from the repository. */
export function readSpec(specPath: string, repoRoot: string = REPO_ROOT): Record<string, unknown> {
  return readMapping(specPath, 'schedule spec', repoRoot);
}

/** A workload given by name: workloads/<name>.{yaml,yml,json} (as benchfleet.spec.loading.load_workload finds it). */
function namedWorkload(name: string, where: string, specPath: string, repoRoot: string): Record<string, unknown> {
  const file = ['.yaml', '.yml', '.json']
    .map((suffix) => `workloads/${name}${suffix}`)
    .find((f) => fs.existsSync(path.join(repoRoot, f)));
  if (file === undefined) {
    throw new Error(`schedule spec ${specPath}: ${where}: no workload named ${name} in workloads/`);
  }
  const workload = readMapping(file, 'workload', repoRoot);
  if (workload.name !== name) {
    throw new Error(`workload ${file}: name is ${JSON.stringify(workload.name)} but the file is named ${name}`);
  }
  return workload;
}

/**
 * The spec as an execution takes it: every workload name (the spec's `workload` and each variant's)
 * replaced by its file, and no local target (Plan refuses those: a schedule that can never run is an
 * error at synth, not every night). A variant's workload left by name made Plan refuse every firing.
 */
export function executionSpec(specPath: string, repoRoot: string = REPO_ROOT): Record<string, unknown> {
  const spec = readSpec(specPath, repoRoot);
  const targets = Array.isArray(spec.targets) ? (spec.targets as Array<Record<string, unknown>>) : [];
  const local = targets.findIndex((t) => t.kind === 'local');
  if (local >= 0) {
    throw new Error(
      `schedule spec ${specPath}: targets[${local}].kind: local targets run with benchfleet run --local`,
    );
  }
  const out: Record<string, unknown> = { ...spec };
  if (typeof spec.workload === 'string') {
    out.workload = namedWorkload(spec.workload, 'workload', specPath, repoRoot);
  }
  if (Array.isArray(spec.variants)) {
    out.variants = (spec.variants as unknown[]).map((variant, i) => {
      if (typeof variant !== 'object' || variant === null) return variant;
      const v = variant as Record<string, unknown>;
      return typeof v.workload === 'string'
        ? { ...v, workload: namedWorkload(v.workload, `variants[${i}].workload`, specPath, repoRoot) }
        : v;
    });
  }
  return out;
}

export interface SchedulesProps {
  readonly schedules: readonly ScheduleConfig[];
  readonly stateMachine: sfn.IStateMachine;
  /** Prefix of schedule names (the stack name), so two stacks' schedules do not collide. */
  readonly namePrefix: string;
}

export class Schedules extends Construct {
  public readonly schedules: scheduler.Schedule[] = [];
  public readonly role?: iam.Role;

  constructor(scope: Construct, id: string, props: SchedulesProps) {
    super(scope, id);
    if (props.schedules.length === 0) return;

    this.role = new iam.Role(this, 'Role', {
      description: 'benchfleet schedules: start benchmark executions only',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
    });

    for (const entry of props.schedules) {
      const input = { spec: executionSpec(entry.spec), schedule: entry.name };
      const target = new schedulerTargets.StepFunctionsStartExecution(props.stateMachine, {
        role: this.role,
        input: scheduler.ScheduleTargetInput.fromObject(input),
        retryAttempts: 2,
      });
      this.schedules.push(
        new scheduler.Schedule(this, entry.name, {
          scheduleName: `${props.namePrefix}-${entry.name}`.slice(0, 64),
          description: `benchfleet: ${entry.spec} (${entry.expression})`,
          schedule: scheduler.ScheduleExpression.expression(
            entry.expression,
            entry.timezone === undefined ? undefined : TimeZone.of(entry.timezone),
          ),
          target,
        }),
      );
    }
  }
}
