/**
 * Orchestration: the Lambdas, the benchmark state machine and its failure rule, and the hourly
 * janitor with an alarm when it (or teardown-by-tag) fails — the "nothing leaks" safety nets.
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { BenchfleetFunctions } from './lambdas';
import {
  METRICS_NAMESPACE,
  SERVICE_NAME,
  STATE_MACHINE_HANDLERS,
  StateMachineHandler,
  SUBSTITUTION_AGENT_DOCUMENT,
  SUBSTITUTION_RESULTS_BUCKET,
} from './naming';
import { FleetResources, Permissions } from './permissions';
import { ResultsStore } from './results-store';
import { BenchmarkStateMachine } from './state-machine';
import { StepCallback } from './step-callback';

export interface OrchestrationProps {
  readonly results: ResultsStore;
  readonly fleet: FleetResources;
  /** Environment from the other constructs; STATE_MACHINE_ARN and POWERTOOLS_SERVICE_NAME are added. */
  readonly environment: Record<string, string>;
  readonly agentDocumentName: string;
  readonly maxRunHours: number;
  readonly powertoolsVersion: string;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Override the ASL file (tests). */
  readonly definitionPath?: string;
  /** Regions the janitor sweeps and the sweepers may delete in; undefined = the stack's region. */
  readonly sweepRegions?: readonly string[];
  /** Regions targets may run in besides the stack's (TARGET_REGIONS); undefined = the stack's only. */
  readonly targetRegions?: readonly string[];
}

export class Orchestration extends Construct {
  public readonly functions: BenchfleetFunctions;
  public readonly benchmark: BenchmarkStateMachine;
  public readonly janitorRule: events.Rule;
  public readonly stepCallback: StepCallback;
  public readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: OrchestrationProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // A fixed name gives the ARN before the state machine exists: every Lambda (including those
    // the state machine invokes) gets STATE_MACHINE_ARN without a dependency cycle.
    const stateMachineName = `${stack.stackName}-BenchmarkRun`;
    const stateMachineArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const executionArnPattern = stack.formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${stateMachineName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    this.functions = new BenchfleetFunctions(this, 'Functions', {
      powertoolsVersion: props.powertoolsVersion,
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
      // MAX_RUN_HOURS: Plan (and the API) refuse runs the state machine's timeout would cut short.
      environment: {
        ...props.environment,
        STATE_MACHINE_ARN: stateMachineArn,
        MAX_RUN_HOURS: String(props.maxRunHours),
      },
      results: props.results,
      fleet: props.fleet,
      stateMachineArn,
      executionArnPattern,
      sweepRegions: props.sweepRegions,
      targetRegions: props.targetRegions,
    });
    const fns = this.functions.functions;
    const smFunctions = {} as Record<StateMachineHandler, lambda.IFunction>;
    for (const module of Object.keys(STATE_MACHINE_HANDLERS) as StateMachineHandler[]) {
      smFunctions[module] = fns[module];
    }

    this.benchmark = new BenchmarkStateMachine(this, 'BenchmarkRun', {
      stateMachineName,
      stateMachineArn,
      executionArnPattern,
      functions: smFunctions,
      substitutions: {
        [SUBSTITUTION_RESULTS_BUCKET]: props.results.bucket.bucketName,
        [SUBSTITUTION_AGENT_DOCUMENT]: props.agentDocumentName,
      },
      timeout: Duration.hours(props.maxRunHours),
      permissions: new Permissions(this, props.fleet),
      results: props.results,
      teardownByTag: fns.teardown_by_tag,
      logRetention: props.logRetention,
      removalPolicy: props.removalPolicy,
      definitionPath: props.definitionPath,
    });

    this.stepCallback = new StepCallback(this, 'StepCallback', {
      callback: fns.step_callback,
      documentName: props.agentDocumentName,
    });

    this.janitorRule = new events.Rule(this, 'HourlyJanitor', {
      description: 'benchfleet: delete resources past their benchfleet:expires-at tag',
      schedule: events.Schedule.rate(Duration.hours(1)),
      targets: [new targets.LambdaFunction(fns.janitor, { retryAttempts: 2 })],
    });

    this.alarms = (['janitor', 'teardown_by_tag'] as const).map(
      (module) =>
        new cloudwatch.Alarm(this, `${module === 'janitor' ? 'Janitor' : 'TeardownByTag'}Errors`, {
          alarmDescription: `benchfleet ${module} failed: resources may be left running and billed`,
          metric: fns[module].metricErrors({ period: Duration.hours(1), statistic: 'Sum' }),
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );
    // The janitor returns normally when it could not remove something (so one stuck resource does not
    // hide the rest of the sweep): its Errors stay at 0, its RemovalFailures metric does not.
    this.alarms.push(
      new cloudwatch.Alarm(this, 'RemovalFailures', {
        alarmDescription:
          'benchfleet janitor or teardown_by_tag could not remove a run-tagged resource: it may be left running ' +
          'and billed (the function logs name it)',
        metric: new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName: 'RemovalFailures',
          dimensionsMap: { service: SERVICE_NAME }, // Powertools Metrics' default dimension
          period: Duration.hours(1),
          statistic: 'Sum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    this.alarms.push(
      new cloudwatch.Alarm(this, 'TeardownDeadLetters', {
        alarmDescription:
          'benchfleet: a failed run could not be torn down by tag after every retry; its resources may be ' +
          'left running and billed until the janitor removes them (the message holds the event and the error)',
        metric: this.benchmark.teardownDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
  }

  public get stateMachine(): sfn.StateMachine {
    return this.benchmark.stateMachine;
  }
}
