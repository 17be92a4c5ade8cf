/**
 * The benchmark state machine, loaded from statemachines/benchmark-run.asl.json (JSONPath ASL)
 * with definitionSubstitutions for every ARN in the contract, plus the EventBridge rule that tears
 * a run down by tag when its execution FAILED / TIMED_OUT / ABORTED (StopExecution skips Catch).
 *
 * The file is read at synth and inlined (DefinitionBody.fromString), not uploaded with
 * DefinitionBody.fromFile: the file body is an S3 asset that CDK does not merge the `timeout` prop
 * into, and an inlined definition lets the top-level TimeoutSeconds be set from context and be
 * checked by tests and cfn-lint. The role is granted only what the definition's Task states use.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { allowWildcard } from './nag';
import { ASL_PATH, REPO_ROOT, RUNS_PREFIX, STATE_MACHINE_HANDLERS, StateMachineHandler } from './naming';
import { Permissions } from './permissions';
import { ResultsStore } from './results-store';

/** aws-sdk service integrations the definition may use, and the permission each needs. */
const SDK_INTEGRATIONS: Record<string, 'commandSend' | 'commandRead' | 'describe' | 'runsWrite'> = {
  's3:putObject': 'runsWrite',
  'ssm:sendCommand': 'commandSend',
  'ssm:getCommandInvocation': 'commandRead',
  'ssm:listCommandInvocations': 'commandRead',
  'ec2:describeInstances': 'describe',
  'ec2:describeInstanceStatus': 'describe',
  'rds:describeDBInstances': 'describe',
  'rds:describeDBClusters': 'describe',
  'ssm:describeInstanceInformation': 'describe',
};

export interface DefinitionAnalysis {
  /** ${Name} placeholders used anywhere in the definition. */
  readonly placeholders: Set<string>;
  /** service:action of every arn:aws:states:::aws-sdk:... Task. */
  readonly sdkIntegrations: Set<string>;
  /** Task resources that are neither Lambda nor allow-listed aws-sdk integrations. */
  readonly unsupported: Set<string>;
  readonly distributedMap: boolean;
  /** A Distributed Map reads its items from S3 (ItemReader) or writes its results there (ResultWriter). */
  readonly mapS3: boolean;
}

/** Walk every state (Parallel branches, Map iterators/processors included). */
export function analyzeDefinition(definition: unknown): DefinitionAnalysis {
  const text = JSON.stringify(definition);
  const placeholders = new Set([...text.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]));
  const sdkIntegrations = new Set<string>();
  const unsupported = new Set<string>();
  let distributedMap = false;
  let mapS3 = false;

  const visit = (machine: unknown): void => {
    if (typeof machine !== 'object' || machine === null) return;
    const states = (machine as { States?: Record<string, Record<string, unknown>> }).States ?? {};
    for (const state of Object.values(states)) {
      if (state.Type === 'Task' && typeof state.Resource === 'string') {
        const resource = state.Resource.replace(/\.(waitForTaskToken|sync(:2)?)$/, '');
        const sdk = /^arn:aws:states:::aws-sdk:([a-z0-9]+):([A-Za-z0-9]+)$/.exec(resource);
        if (/^\$\{[A-Za-z]+FunctionArn\}$/.test(resource) || resource === 'arn:aws:states:::lambda:invoke') {
          // Lambda: covered by the invoke grant on the contract's functions.
        } else if (sdk !== null && `${sdk[1]}:${sdk[2]}` in SDK_INTEGRATIONS) {
          sdkIntegrations.add(`${sdk[1]}:${sdk[2]}`);
        } else {
          unsupported.add(state.Resource);
        }
      }
      if (state.Type === 'Parallel' && Array.isArray(state.Branches)) state.Branches.forEach(visit);
      if (state.Type === 'Map') {
        const processor = (state.ItemProcessor ?? state.Iterator) as Record<string, unknown> | undefined;
        const config = processor?.ProcessorConfig as { Mode?: string } | undefined;
        if (config?.Mode === 'DISTRIBUTED') distributedMap = true;
        for (const [field, resource] of [
          ['ItemReader', 'arn:aws:states:::s3:getObject'],
          ['ResultWriter', 'arn:aws:states:::s3:putObject'],
        ]) {
          const io = state[field] as { Resource?: string } | undefined;
          if (io === undefined) continue;
          // JSON items from one object, results to a prefix: both within the results bucket's runs/.
          if (io.Resource === resource) mapS3 = true;
          else unsupported.add(`Map ${field} ${String(io.Resource)}`);
        }
        visit(processor);
      }
    }
  };
  visit(definition);
  return { placeholders, sdkIntegrations, unsupported, distributedMap, mapS3 };
}

/** execution:<name>:* -> execution:<name>/*:*, the ARNs of a Distributed Map's child executions. */
export function mapRunExecutionArnPattern(executionArnPattern: string): string {
  if (!executionArnPattern.endsWith(':*')) throw new Error(`not an execution ARN pattern: ${executionArnPattern}`);
  return `${executionArnPattern.slice(0, -2)}/*:*`;
}

/** stateMachine:<name> -> stateMachine:<name>/*, the state machines a Distributed Map's children run as. */
export function mapRunStateMachineArnPattern(stateMachineArn: string): string {
  return `${stateMachineArn}/*`;
}

export interface BenchmarkStateMachineProps {
  /** Physical name: lets the Lambdas' environment carry the ARN without a dependency cycle. */
  readonly stateMachineName: string;
  /** ARN and execution ARN pattern computed from the name (used in the role without a cycle). */
  readonly stateMachineArn: string;
  readonly executionArnPattern: string;
  readonly functions: Record<StateMachineHandler, lambda.IFunction>;
  /** Non-function substitutions (ResultsBucket, AgentDocumentName). */
  readonly substitutions: Record<string, string>;
  /** Execution timeout: the top-level TimeoutSeconds (the file must not set its own). */
  readonly timeout: Duration;
  readonly permissions: Permissions;
  /** The results bucket: outcomes, the plan's targets and the Distributed Map's results go under runs/. */
  readonly results: ResultsStore;
  /** Invoked by the rule on FAILED / TIMED_OUT / ABORTED executions. */
  readonly teardownByTag: lambda.IFunction;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Defaults to statemachines/benchmark-run.asl.json in the repository. */
  readonly definitionPath?: string;
}

export class BenchmarkStateMachine extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly logGroup: logs.LogGroup;
  public readonly failureRule: events.Rule;
  /** Failure events whose teardown still failed after every retry (or could not be delivered). */
  public readonly teardownDeadLetterQueue: sqs.Queue;
  public readonly analysis: DefinitionAnalysis;

  constructor(scope: Construct, id: string, props: BenchmarkStateMachineProps) {
    super(scope, id);
    const file = props.definitionPath ?? path.join(REPO_ROOT, ASL_PATH);
    const definition = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;

    const substitutions: Record<string, string> = { ...props.substitutions };
    for (const [module, key] of Object.entries(STATE_MACHINE_HANDLERS)) {
      substitutions[key] = props.functions[module as StateMachineHandler].functionArn;
    }
    this.analysis = analyzeDefinition(definition);
    const unknown = [...this.analysis.placeholders].filter((p) => !(p in substitutions));
    if (unknown.length > 0) {
      throw new Error(
        `${ASL_PATH}: unknown substitutions ${unknown.map((u) => '${' + u + '}').join(', ')}; ` +
          `known: ${Object.keys(substitutions).join(', ')}`,
      );
    }
    if (this.analysis.unsupported.size > 0) {
      throw new Error(
        `${ASL_PATH}: Task resources without a grant in cdk/lib/state-machine.ts: ` +
          `${[...this.analysis.unsupported].join(', ')}`,
      );
    }

    // One source of truth: maxRunHours sets TimeoutSeconds here and MAX_RUN_HOURS for Plan.
    if (definition.TimeoutSeconds !== undefined) {
      throw new Error(`${ASL_PATH}: TimeoutSeconds comes from the CDK context key maxRunHours; remove it from the file`);
    }
    definition.TimeoutSeconds = props.timeout.toSeconds();

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName: props.stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromString(JSON.stringify(definition)),
      definitionSubstitutions: substitutions,
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });

    const role = this.stateMachine.role;
    allowWildcard(role, 'unscopedApis'); // X-Ray and CloudWatch Logs delivery, added by CDK
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'InvokeRunFunctions',
        actions: ['lambda:InvokeFunction'],
        resources: Object.values(props.functions).map((f) => f.functionArn),
      }),
    );
    const kinds = new Set([...this.analysis.sdkIntegrations].map((i) => SDK_INTEGRATIONS[i]));
    if (kinds.has('commandSend')) props.permissions.grantCommandSend(role);
    if (kinds.has('commandRead')) props.permissions.grantCommandRead(role);
    if (kinds.has('describe')) props.permissions.grantDescribe(role);
    if (kinds.has('runsWrite') || this.analysis.mapS3) props.results.grantReadWriteRuns(role);
    if (this.analysis.mapS3) {
      // ResultWriter writes its result files as multipart uploads.
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['s3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
          resources: [props.results.bucket.arnForObjects(`${RUNS_PREFIX}*`)],
        }),
      );
    }
    if (this.analysis.distributedMap) {
      allowWildcard(role, 'executions');
      // A Distributed Map starts child executions of this state machine.
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['states:StartExecution'],
          resources: [props.stateMachineArn],
        }),
      );
      // Its child executions are named <state machine>/<map run label>:<id>
      // (arn:...:execution:<name>/<label>:<id>), not <name>:<id>: describe and stop those.
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['states:DescribeExecution', 'states:StopExecution'],
          resources: [mapRunExecutionArnPattern(props.executionArnPattern)],
        }),
      );
    }

    // Failure events teardown_by_tag could not handle end here instead of being dropped: those
    // EventBridge could not deliver (rule target DLQ) and those whose invocation kept failing after
    // Lambda's asynchronous retries (on-failure destination: the event plus the error). An alarm
    // watches it (orchestration.ts); the janitor remains the backstop.
    this.teardownDeadLetterQueue = new sqs.Queue(this, 'TeardownDeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    NagSuppressions.addResourceSuppressions(this.teardownDeadLetterQueue, [
      {
        id: 'AwsSolutions-SQS3',
        reason:
          'This queue is itself the dead-letter queue of the teardown-by-tag rule and function; nothing ' +
          'consumes it automatically, so a dead-letter queue of its own would never receive anything.',
      },
    ]);
    props.teardownByTag.configureAsyncInvoke({
      retryAttempts: 2, // Lambda's maximum: three attempts in all
      maxEventAge: Duration.hours(6),
      onFailure: new destinations.SqsDestination(this.teardownDeadLetterQueue),
    });

    this.failureRule = new events.Rule(this, 'TeardownOnFailure', {
      description: 'benchfleet: tear down by tag when a benchmark execution fails, times out or is aborted',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: {
          status: ['FAILED', 'TIMED_OUT', 'ABORTED'],
          stateMachineArn: [this.stateMachine.stateMachineArn],
        },
      },
      targets: [
        new targets.LambdaFunction(props.teardownByTag, {
          retryAttempts: 4,
          maxEventAge: Duration.hours(2),
          deadLetterQueue: this.teardownDeadLetterQueue,
        }),
      ],
    });
  }
}
