/**
 * Step completion by callback: the EventBridge rule that hands each finished Run Command invocation
 * of the agent document to step_callback, which completes the task token "Start the step" waits on
 * (lambdas/benchfleet/aws/steps/callbacks.py says why a callback and where the token waits).
 *
 * The event is SSM's "EC2 Command Invocation Status-change Notification" (one per instance; a
 * step's command has one). The pattern names the agent document (the same name in every region,
 * naming.ts agentDocumentName), so no other Run Command of the account reaches step_callback, and
 * matches every status but the running ones: a command that never ran ends as Failed, TimedOut,
 * Cancelled or a detailed status (Undeliverable, DeliveryTimedOut, Terminated...), and must fail its
 * step at once, not wait for the step's timeout. A lost event, or a host that never answers, ends at
 * the step's TimeoutSecondsPath in the definition, which asks the invocation itself.
 * SSM sends it in the target's region: each regional stack forwards it to the home region's default
 * bus (`forwardStepEnds`).
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';

/** Run Command's invocation statuses before the end (callbacks.py RUNNING_STATUSES): anything else ends it. */
export const RUNNING_COMMAND_STATUSES = ['Pending', 'InProgress', 'Delayed', 'Cancelling'];

/** The events that end a step: an invocation of the agent document leaving the running statuses. */
export function stepEndedPattern(documentName: string): events.EventPattern {
  return {
    source: ['aws.ssm'],
    detailType: ['EC2 Command Invocation Status-change Notification'],
    detail: {
      'document-name': [documentName],
      status: events.Match.anythingBut(...RUNNING_COMMAND_STATUSES),
    },
  };
}

export interface StepCallbackProps {
  readonly callback: lambda.IFunction;
  /** The agent document's name (naming.ts agentDocumentName). */
  readonly documentName: string;
}

export class StepCallback extends Construct {
  public readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: StepCallbackProps) {
    super(scope, id);
    this.rule = new events.Rule(this, 'CommandEnded', {
      description: "benchfleet: a step's Run Command invocation ended; complete the state machine's task",
      eventPattern: stepEndedPattern(props.documentName),
      // Lambda retries a failed asynchronous invocation twice; the step's timeout is the backstop.
      targets: [new targets.LambdaFunction(props.callback, { retryAttempts: 4, maxEventAge: Duration.hours(1) })],
    });
  }
}

/** In a target region: send the step-ending events to the home region's default bus. */
export function forwardStepEnds(scope: Construct, id: string, homeRegion: string, documentName: string): events.Rule {
  const stack = Stack.of(scope);
  const home = events.EventBus.fromEventBusArn(
    scope,
    `${id}HomeBus`,
    `arn:${stack.partition}:events:${homeRegion}:${stack.account}:event-bus/default`,
  );
  return new events.Rule(scope, id, {
    description: "benchfleet: forward the end of a step's Run Command to the home region's step callback",
    eventPattern: stepEndedPattern(documentName),
    targets: [new targets.EventBus(home)],
  });
}
