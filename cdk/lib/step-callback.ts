/**
 * Step completion by callback: the EventBridge rule that hands each finished Run Command invocation
 * of the agent document to step_callback, which completes the task token "Start the step" waits on
 * (lambdas/benchfleet/aws/steps/callbacks.py says why a callback and where the token waits).
 *
 * The event is SSM's "EC2 Command Invocation Status-change Notification" (one per instance; a
 * step's command has one). Only terminal statuses complete a step; a lost event, or a host that
 * never answers, ends at the step's TimeoutSecondsPath in the definition, so teardown is reached.
 * SSM sends it in the target's region: each regional stack forwards it to the home region's default
 * bus (`forwardStepEnds`). The pattern names no document (regional documents' names are generated
 * there): step_callback completes only commands start_step kept a token for, and ignores the rest.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';

/** Run Command's terminal statuses (callbacks.py TERMINAL_STATUSES). */
export const TERMINAL_COMMAND_STATUSES = ['Success', 'Failed', 'TimedOut', 'Cancelled'];

/** The events that end a step: any Run Command invocation reaching a terminal status. */
export const STEP_ENDED_PATTERN: events.EventPattern = {
  source: ['aws.ssm'],
  detailType: ['EC2 Command Invocation Status-change Notification'],
  detail: { status: TERMINAL_COMMAND_STATUSES },
};

export interface StepCallbackProps {
  readonly callback: lambda.IFunction;
}

export class StepCallback extends Construct {
  public readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: StepCallbackProps) {
    super(scope, id);
    this.rule = new events.Rule(this, 'CommandEnded', {
      description: "benchfleet: a step's Run Command invocation ended; complete the state machine's task",
      eventPattern: STEP_ENDED_PATTERN,
      // Lambda retries a failed asynchronous invocation twice; the step's timeout is the backstop.
      targets: [new targets.LambdaFunction(props.callback, { retryAttempts: 4, maxEventAge: Duration.hours(1) })],
    });
  }
}

/** In a target region: send the step-ending events to the home region's default bus. */
export function forwardStepEnds(scope: Construct, id: string, homeRegion: string): events.Rule {
  const stack = Stack.of(scope);
  const home = events.EventBus.fromEventBusArn(
    scope,
    `${id}HomeBus`,
    `arn:${stack.partition}:events:${homeRegion}:${stack.account}:event-bus/default`,
  );
  return new events.Rule(scope, id, {
    description: "benchfleet: forward the end of a step's Run Command to the home region's step callback",
    eventPattern: STEP_ENDED_PATTERN,
    targets: [new targets.EventBus(home)],
  });
}
