/**
 * One source of truth for names shared by the CDK app, the ASL and the Lambdas
 * (statemachines/README.md is the contract these mirror).
 */
import * as path from 'path';

/** Repository root: cdk/lib/ -> ../.. (works from ts-node, jest and compiled output alike). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** Tags every run-created resource carries; IAM conditions create/delete on them. */
export const TAG_RUN_ID = 'benchfleet:run-id';
export const TAG_TARGET_ID = 'benchfleet:target-id';
export const TAG_EXPIRES_AT = 'benchfleet:expires-at';
/** The owning stack (cdk/lib/ownership.ts): create and remove only with this stack's value. */
export const TAG_STACK = 'benchfleet:stack';
/**
 * On a host an `existing` target names (`instance_id`): its owner lets this stack run the agent
 * there, and nothing more (the sweepers look for run-id and stack, never for this key).
 */
export const TAG_AGENT_HOST = 'benchfleet:agent-host';
/**
 * On the RDS-managed secret of a run's database: the ARN of the one host that may read it, which
 * the host role's read compares with the caller's `ec2:SourceInstanceARN` (cdk/lib/permissions.ts).
 */
export const TAG_SECRET_READER = 'benchfleet:secret-reader';
/** Tag keys a run may set on the resources it creates (aws:TagKeys). */
export const ALLOWED_RUN_TAG_KEYS = ['benchfleet:*', 'Name'];

/** Powertools service name: one service, one log/trace namespace. */
export const SERVICE_NAME = 'benchfleet';
/** CloudWatch namespace of the Lambdas' Powertools metrics (POWERTOOLS_METRICS_NAMESPACE). */
export const METRICS_NAMESPACE = 'Benchfleet';

/** Canonical's AWS account: targets boot Ubuntu LTS AMIs from the public SSM parameters. */
export const UBUNTU_AMI_OWNER = '099720109477';

/** Handlers the state machine calls, with the definitionSubstitutions key carrying each ARN. */
export const STATE_MACHINE_HANDLERS = {
  plan: 'PlanFunctionArn',
  provision: 'ProvisionFunctionArn',
  readiness: 'ReadinessFunctionArn',
  start_step: 'StartStepFunctionArn',
  collect: 'CollectFunctionArn',
  teardown: 'TeardownFunctionArn',
  summarize: 'SummarizeFunctionArn',
  // Also EventBridge's (a step's Run Command ended); the state machine asks it when that never came.
  step_callback: 'StepCallbackFunctionArn',
} as const;

export type StateMachineHandler = keyof typeof STATE_MACHINE_HANDLERS;

/** Handlers triggered by something other than the state machine. */
export const OTHER_HANDLERS = ['api', 'teardown_by_tag', 'janitor'] as const;
export type OtherHandler = (typeof OTHER_HANDLERS)[number];

export type HandlerModule = StateMachineHandler | OtherHandler;

export const ALL_HANDLERS: readonly HandlerModule[] = [
  ...(Object.keys(STATE_MACHINE_HANDLERS) as StateMachineHandler[]),
  ...OTHER_HANDLERS,
];

/** Non-function substitutions of the ASL. */
export const SUBSTITUTION_RESULTS_BUCKET = 'ResultsBucket';
export const SUBSTITUTION_AGENT_DOCUMENT = 'AgentDocumentName';

/** Where the ASL lives, relative to the repository root. */
export const ASL_PATH = 'statemachines/benchmark-run.asl.json';

/** Prefix of raw results in the results bucket: runs/<run_id>/<target_id>/rep-<n>/<step>.jsonl. */
export const RUNS_PREFIX = 'runs/';
/**
 * Where each host's Run Command output lands: hosts/<its instance ARN>/<run>/<target>/rep-<n>/<step>/
 * (lambdas/benchfleet/plan/naming.py host_output_prefix). A host may write under its own ARN only
 * (`${ec2:SourceInstanceARN}`), so no host can touch another run's raw results; collect copies the
 * agent's lines to runs/, which only the Lambdas write.
 */
export const HOSTS_PREFIX = 'hosts/';
/** Days a host's Run Command output is kept after collect copied it to runs/. */
export const HOST_OUTPUT_EXPIRATION_DAYS = 14;

/** "start_step" -> "StartStep" (construct ids). */
export function pascal(module: string): string {
  return module
    .split('_')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');
}

/**
 * SSM parameter, same name in every target region, holding the ids of the target resources deployed
 * there as JSON (lambdas/benchfleet/aws/fleet/regional.py reads it in the target's region at run time:
 * no stack refers to another region at deploy time).
 */
export function targetResourcesParameterName(stackName: string): string {
  return `/benchfleet/${stackName}/target-resources`;
}

/**
 * Fixed, stack-scoped names of what is global (IAM) and that regional stacks refer to by name: they
 * cannot reference the home stack (CloudFormation has no cross-region references). Stacks sharing an
 * account already need distinct names (ownership.ts), so the stack name is enough.
 */
export function targetInstanceRoleName(stackName: string): string {
  return `${stackName}-targets`;
}

/**
 * The agent's SSM Command document, same name in every region (documents are regional): the rules
 * that hand a finished Run Command to step_callback match this name only, so no other command of the
 * account reaches it (cdk/lib/step-callback.ts).
 */
export function agentDocumentName(stackName: string): string {
  return `${stackName}-Agent`;
}

/**
 * Managed policies IAM attaches to one role by default ("IAM and AWS STS quotas": 10, 20 at most on
 * request). Each regional stack attaches one to each of REGIONALLY_GRANTED_HANDLERS' roles.
 */
export const MANAGED_POLICIES_PER_ROLE = 10;

/** The Lambda roles regional stacks attach their region's grants to (provision, start_step). */
export const REGIONALLY_GRANTED_HANDLERS = ['provision', 'start_step'] as const;
export type RegionallyGrantedHandler = (typeof REGIONALLY_GRANTED_HANDLERS)[number];

export function lambdaRoleName(stackName: string, module: RegionallyGrantedHandler): string {
  return `${stackName}-${module.replace('_', '-')}`;
}

/** The regional stack of `region` (one per targetRegions entry besides the home region). */
export function regionalStackName(stackName: string, region: string): string {
  return `${stackName}-${region}`;
}
