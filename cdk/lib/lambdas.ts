/**
 * The Python Lambdas: one function per module in lambdas/handlers/ (statemachines/README.md), all
 * from the same asset (lambdas/ plus the workloads/ data they read, built by plain file copies: no
 * Docker at synth) plus the public Powertools V3 layer, arm64 + python3.13 pinned together with the
 * layer version. One role per function, holding only what that handler does (see HANDLERS).
 */
import * as path from 'path';
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { copyTree, fileCopyAsset } from './bundling';
import { allowWildcard } from './nag';
import {
  ALL_HANDLERS,
  HandlerModule,
  lambdaRoleName,
  METRICS_NAMESPACE,
  pascal,
  REGIONALLY_GRANTED_HANDLERS,
  RegionallyGrantedHandler,
  REPO_ROOT,
  SERVICE_NAME,
} from './naming';
import { FleetResources, grantRdsSecretBinding, Permissions } from './permissions';
import { ResultsStore } from './results-store';
import { mapRunStateMachineArnPattern } from './state-machine';

export const RUNTIME = lambda.Runtime.PYTHON_3_13;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/**
 * The public Powertools layer of one release for RUNTIME and ARCHITECTURE, as CloudFormation resolves it
 * at deploy time from Powertools' public SSM parameter (/aws/service/powertools/python/<arch>/<runtime>/
 * <version>, documented on the Powertools install page). A release, not a layer number: the layer's
 * number does not say which Powertools and pydantic it holds, the release is the one uv.lock tests.
 * The layer ships Powertools, pydantic and aws-xray-sdk; boto3/botocore come from the runtime.
 */
export function powertoolsLayerArn(version: string): string {
  return `{{resolve:ssm:/aws/service/powertools/python/${ARCHITECTURE.name}/${RUNTIME.name}/${version}}}`;
}

/** Where Lambda unpacks the code asset (LAMBDA_TASK_ROOT). */
export const TASK_ROOT = '/var/task';

/** Paths under lambdas/ that never ship in the function asset: local/, report/ and cli/ import
 *  duckdb/plotly/rich, which no Lambda may import (DESIGN.md dependency rule; the Lambdas' imports
 *  are checked by tests/unit/test_package_layout.py). Caches and *.egg-info are skipped by copyTree
 *  everywhere. */
export const LAMBDA_EXCLUDES = ['benchfleet/local', 'benchfleet/report', 'benchfleet/cli'];

/** Data the Lambdas read, shipped under workloads/ in the asset: price tables (plan, summarize,
 *  stats), MySQL configurations (plan renders a target's cnf), the catalogue of what exists on
 *  AWS (the API checks cloud specs against it) and the Lua workloads (the API and Plan refuse a test
 *  the agent bundle does not ship, or a helper module). Not the agent. */
export const LAMBDA_WORKLOAD_DIRS = ['pricing', 'mysql', 'catalogue', 'lua'];

/** Where benchfleet.spec.documents.workloads_dir() and benchfleet.cost.pricing.pricing_dir() look in Lambda, and
 *  where benchfleet.aws.planning.asl_walk finds the definitions (plan counts the run's state transitions). */
export const LAMBDA_DATA_ENVIRONMENT = {
  BENCHFLEET_WORKLOADS: `${TASK_ROOT}/workloads`,
  BENCHFLEET_PRICING: `${TASK_ROOT}/workloads/pricing`,
  BENCHFLEET_STATEMACHINES: `${TASK_ROOT}/statemachines`,
};

function isTestPath(relPath: string): boolean {
  const name = relPath.split('/').pop() ?? relPath;
  return name === 'tests' || name === 'conftest.py' || /^test_.*\.py$/.test(name);
}

/** The function asset's content: lambdas/ at the root (handlers/, benchfleet/) plus the data above
 *  and statemachines/*.asl.json. */
export function copyLambdaAsset(outputDir: string): void {
  copyTree(
    path.join(REPO_ROOT, 'lambdas'),
    outputDir,
    (rel) => LAMBDA_EXCLUDES.includes(rel) || isTestPath(rel),
  );
  for (const dir of LAMBDA_WORKLOAD_DIRS) {
    copyTree(path.join(REPO_ROOT, 'workloads', dir), path.join(outputDir, 'workloads', dir), isTestPath);
  }
  // The deployed definitions themselves (the same files orchestration.ts loads), not the README.
  copyTree(path.join(REPO_ROOT, 'statemachines'), path.join(outputDir, 'statemachines'),
    (rel) => !rel.endsWith('.asl.json'));
}

type Grant =
  | 'describe'
  | 'targetCreate'
  | 'rdsSecretCreate'
  | 'clusterSecretsCreate'
  | 'targetDelete'
  | 'dbReboot'
  | 'parameterGroupSwitch'
  | 'commandSend'
  | 'commandRead'
  | 'secretBinding'
  | 'cloudMetrics'
  | 'runsRead'
  | 'runsReadWrite'
  | 'hostOutputRead'
  | 'storeWrite'
  | 'storeRead'
  | 'executions'
  | 'executionsWatch'
  | 'executionDescribe'
  | 'taskCallback';

interface HandlerSpec {
  readonly description: string;
  readonly timeout: Duration;
  readonly memoryMiB: number;
  readonly grants: readonly Grant[];
}

/** Per handler: what it is for and exactly what it may do. */
export const HANDLERS: Record<HandlerModule, HandlerSpec> = {
  plan: {
    description: 'Validate, expand and estimate a comparison spec; refuse it above budget',
    timeout: Duration.seconds(60),
    memoryMiB: 512,
    grants: ['describe', 'runsReadWrite'],
  },
  provision: {
    description: 'Create one target (EC2 / RDS / Aurora + client), tagged with its run',
    timeout: Duration.seconds(120),
    memoryMiB: 256,
    grants: ['describe', 'targetCreate', 'rdsSecretCreate', 'clusterSecretsCreate', 'runsReadWrite'],
  },
  readiness: {
    description: 'Report whether a target and its SSM agent are ready; bind its DB secret to its host',
    timeout: Duration.seconds(60),
    memoryMiB: 256,
    // dbReboot: a writer whose static parameters wait for a reboot (benchfleet.aws.fleet.paramgroups).
    grants: ['describe', 'commandRead', 'secretBinding', 'dbReboot', 'runsReadWrite'],
  },
  start_step: {
    description: 'Send the agent document to a target for one benchmark step; keep its task token',
    timeout: Duration.seconds(60),
    memoryMiB: 256,
    // No Secrets Manager: the agent on the client host reads the RDS-managed password itself.
    // runsReadWrite: the step's task token, for its callback (benchfleet.aws.steps.callbacks).
    // parameterGroupSwitch: an rds / aurora variant's parameters, before its step is sent.
    grants: ['describe', 'commandSend', 'parameterGroupSwitch', 'runsReadWrite'],
  },
  collect: {
    description: 'Raw step output in S3 to the record store; CloudWatch window to cloud_metrics',
    timeout: Duration.minutes(5),
    memoryMiB: 1024,
    // describe: where an RDS / Aurora target really ran (DescribeDBInstances) for its targets row.
    // hostOutputRead: the step's Run Command output, under its host's own prefix.
    grants: ['describe', 'runsReadWrite', 'hostOutputRead', 'storeWrite', 'cloudMetrics'],
  },
  teardown: {
    description: 'Idempotently delete one target',
    timeout: Duration.minutes(2),
    memoryMiB: 256,
    grants: ['describe', 'targetDelete', 'runsReadWrite'],
  },
  summarize: {
    description: 'Write summary.json and the terminal run status',
    timeout: Duration.minutes(5),
    memoryMiB: 1024,
    // storeWrite: the runs (and targets) rows and their partitions (Athena store).
    grants: ['runsReadWrite', 'storeRead', 'storeWrite'],
  },
  api: {
    description: 'REST API: start, list, show, cancel runs and return results',
    timeout: Duration.seconds(29),
    memoryMiB: 512,
    // DELETE /runs/{id} stops the execution and tears the run down by tag, like teardown_by_tag.
    grants: ['executions', 'runsRead', 'storeRead', 'describe', 'targetDelete'],
  },
  teardown_by_tag: {
    description: 'Tear down every resource of a FAILED / TIMED_OUT / ABORTED execution by tag',
    timeout: Duration.minutes(5),
    memoryMiB: 256,
    // Reads the execution's input when the event omits it (too large).
    grants: ['describe', 'targetDelete', 'executionDescribe'],
  },
  step_callback: {
    description: "A step's Run Command ended (EventBridge): complete the state machine's task token",
    timeout: Duration.seconds(60),
    memoryMiB: 256,
    grants: ['commandRead', 'runsRead', 'taskCallback'],
  },
  janitor: {
    description: 'Hourly: delete benchfleet resources past their expires-at tag',
    timeout: Duration.minutes(5),
    memoryMiB: 256,
    // Running executions' resources are never swept: list them and read their inputs.
    grants: ['describe', 'targetDelete', 'executionsWatch'],
  },
};

export interface BenchfleetFunctionsProps {
  /** Powertools release of the layer (config.powertoolsVersion). */
  readonly powertoolsVersion: string;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Environment every function receives (statemachines/README.md contract). */
  readonly environment: Record<string, string>;
  readonly results: ResultsStore;
  readonly fleet: FleetResources;
  /** The benchmark state machine (api starts, lists, describes and stops its executions). */
  readonly stateMachineArn: string;
  /** ARN pattern of its executions (arn:...:execution:NAME:*). */
  readonly executionArnPattern: string;
  /** Regions the janitor sweeps (SWEEP_REGIONS); undefined = the stack's region only. */
  readonly sweepRegions?: readonly string[];
  /** Regions targets may run in besides the stack's (TARGET_REGIONS); undefined = the stack's only. */
  readonly targetRegions?: readonly string[];
}

export class BenchfleetFunctions extends Construct {
  public readonly functions: Record<HandlerModule, lambda.Function>;
  public readonly roles: Record<HandlerModule, iam.Role>;

  constructor(scope: Construct, id: string, props: BenchfleetFunctionsProps) {
    super(scope, id);
    const layer = lambda.LayerVersion.fromLayerVersionArn(
      this,
      'PowertoolsLayer',
      powertoolsLayerArn(props.powertoolsVersion),
    );
    // Built by plain file copies (no Docker): lambdas/ plus workloads/{pricing,mysql,catalogue}.
    const code = lambda.Code.fromAsset(path.join(REPO_ROOT, 'lambdas'), fileCopyAsset(copyLambdaAsset));
    const permissions = new Permissions(this, props.fleet);
    const sweepRegions = props.sweepRegions ?? [Stack.of(this).region];
    // Every function: Plan and the API refuse other regions (benchfleet.aws.regions).
    const targetRegions = props.targetRegions ?? [Stack.of(this).region];

    const functions: Partial<Record<HandlerModule, lambda.Function>> = {};
    const roles: Partial<Record<HandlerModule, iam.Role>> = {};
    for (const module of ALL_HANDLERS) {
      const spec = HANDLERS[module];
      const id = pascal(module);
      const logGroup = new logs.LogGroup(this, `${id}Logs`, {
        retention: props.logRetention,
        removalPolicy: props.removalPolicy,
      });
      const role = new iam.Role(this, `${id}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `benchfleet ${module} Lambda`,
        // Regional stacks attach their region's grants to these by name (regional-stack.ts).
        ...((REGIONALLY_GRANTED_HANDLERS as readonly string[]).includes(module)
          ? { roleName: lambdaRoleName(Stack.of(this).stackName, module as RegionallyGrantedHandler) }
          : {}),
      });
      allowWildcard(role, 'unscopedApis'); // X-Ray (Tracing.ACTIVE)
      // Instead of AWSLambdaBasicExecutionRole (any log group): this function's log group only.
      logGroup.grantWrite(role);
      const fn = new lambda.Function(this, id, {
        description: spec.description,
        runtime: RUNTIME,
        architecture: ARCHITECTURE,
        handler: `handlers.${module}.handler`,
        code,
        layers: [layer],
        role,
        timeout: spec.timeout,
        memorySize: spec.memoryMiB,
        tracing: lambda.Tracing.ACTIVE,
        loggingFormat: lambda.LoggingFormat.JSON,
        applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
        systemLogLevelV2: lambda.SystemLogLevel.WARN,
        logGroup,
        environment: {
          ...props.environment,
          ...LAMBDA_DATA_ENVIRONMENT,
          TARGET_REGIONS: targetRegions.join(','),
          ...(module === 'janitor' ? { SWEEP_REGIONS: sweepRegions.join(',') } : {}),
          POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
          POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        },
      });
      for (const grant of spec.grants) {
        this.apply(module, grant, role, permissions, props);
      }
      NagSuppressions.addResourceSuppressions(fn, [
        {
          id: 'AwsSolutions-L1',
          reason:
            'python3.13 is pinned together with the public Powertools layer built for python3.13/arm64 ' +
            '(DESIGN.md: pin layer version and architecture together); move both at once.',
        },
      ]);
      functions[module] = fn;
      roles[module] = role;
    }
    this.functions = functions as Record<HandlerModule, lambda.Function>;
    this.roles = roles as Record<HandlerModule, iam.Role>;
  }

  private apply(
    module: HandlerModule,
    grant: Grant,
    role: iam.Role,
    p: Permissions,
    props: BenchfleetFunctionsProps,
  ): void {
    switch (grant) {
      case 'describe':
        return p.grantDescribe(role);
      case 'targetCreate':
        return p.grantTargetCreate(role);
      case 'rdsSecretCreate':
        return p.grantRdsSecretCreate(role);
      case 'clusterSecretsCreate':
        return p.grantClusterSecretsCreate(role);
      case 'targetDelete':
        // The per-target teardown works in the target regions; the sweepers wherever targets may be.
        return p.grantTargetDelete(
          role,
          module === 'teardown' ? (props.targetRegions ?? []) : (props.sweepRegions ?? []),
        );
      case 'dbReboot':
        return p.grantDatabaseReboot(role, props.targetRegions ?? []);
      case 'parameterGroupSwitch':
        return p.grantParameterGroupSwitch(role);
      case 'commandSend':
        return p.grantCommandSend(role);
      case 'commandRead':
        return p.grantCommandRead(role);
      case 'secretBinding':
        return grantRdsSecretBinding(role);
      case 'cloudMetrics':
        return p.grantCloudMetrics(role);
      case 'runsRead':
        return props.results.grantReadRuns(role);
      case 'runsReadWrite':
        return props.results.grantReadWriteRuns(role);
      case 'hostOutputRead':
        return props.results.grantReadHostOutput(role);
      case 'storeWrite':
        return props.results.records?.grantWrite(role);
      case 'storeRead':
        return props.results.records?.grantRead(role);
      case 'executions':
        // api: POST starts, GET lists and describes, DELETE stops.
        allowWildcard(role, 'executions');
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({
            actions: ['states:StartExecution', 'states:ListExecutions'],
            resources: [props.stateMachineArn],
          }),
        );
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({
            actions: ['states:DescribeExecution', 'states:StopExecution'],
            resources: [props.executionArnPattern],
          }),
        );
        return;
      case 'taskCallback':
        // Complete (or keep alive) the tasks of this state machine's executions only. IAM checks
        // SendTask* against the state machine that owns the token, and a Distributed Map's child
        // executions run as stateMachine:<name>/<map run label>: both, or every step of a comparison
        // above 40 targets would wait its whole timeout.
        allowWildcard(role, 'executions');
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({
            sid: 'CompleteStepTasks',
            actions: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
            resources: [props.stateMachineArn, mapRunStateMachineArnPattern(props.stateMachineArn)],
          }),
        );
        return;
      case 'executionsWatch':
        allowWildcard(role, 'executions');
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({ actions: ['states:ListExecutions'], resources: [props.stateMachineArn] }),
        );
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({ actions: ['states:DescribeExecution'], resources: [props.executionArnPattern] }),
        );
        return;
      case 'executionDescribe':
        allowWildcard(role, 'executions');
        role.addToPrincipalPolicy(
          new iam.PolicyStatement({ actions: ['states:DescribeExecution'], resources: [props.executionArnPattern] }),
        );
        return;
    }
  }
}
