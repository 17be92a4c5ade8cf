/**
 * Scheduled comparisons (context `schedules`): one EventBridge Scheduler schedule per entry, each
 * starting the benchmark state machine with the entry's spec file (read and converted to JSON at
 * synth time) plus {"schedule": name}. All schedules share one role that may only start
 * executions of this state machine.
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

/** Read a YAML or JSON comparison spec from the repository (YAML parses JSON too). */
export function readSpec(specPath: string, repoRoot: string = REPO_ROOT): Record<string, unknown> {
  const file = path.resolve(repoRoot, specPath);
  const relative = path.relative(repoRoot, file);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new Error(`schedule spec ${specPath}: must be a path inside the repository`);
  }
  if (!fs.existsSync(file)) throw new Error(`schedule spec ${specPath}: no such file`);
  const spec: unknown = parse(fs.readFileSync(file, 'utf8'));
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new Error(`schedule spec ${specPath}: expected a mapping at the top level`);
  }
  return spec as Record<string, unknown>;
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
      const input = { ...readSpec(entry.spec), schedule: entry.name };
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
