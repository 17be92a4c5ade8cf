/**
 * The app's stacks: the home stack (orchestration, results, and the home region's targets) and one
 * TargetRegionStack per other region of `targetRegions`. cdk/bin/benchfleet.ts and the jest tests
 * build the app through this function, so the tests read the stacks `cdk deploy --all` deploys.
 */
import { App, Aspects, Environment } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BenchfleetStack } from './benchfleet-stack';
import { BenchfleetConfig } from './config';
import { MANAGED_POLICIES_PER_ROLE, REGIONALLY_GRANTED_HANDLERS, regionalStackName } from './naming';
import { TargetRegionStack } from './regional-stack';

export interface BenchfleetApp {
  readonly home: BenchfleetStack;
  /** By region, in `targetRegions` order. */
  readonly regions: ReadonlyMap<string, TargetRegionStack>;
}

/** What the CDK CLI tells the app about the credentials' environment (CDK_DEFAULT_*). */
export interface CliEnvironment {
  readonly CDK_DEFAULT_ACCOUNT?: string;
  readonly CDK_DEFAULT_REGION?: string;
}

/** The home region, where an environment-agnostic home stack deploys: the context's, else the CLI's. */
function homeRegionOf(config: BenchfleetConfig, cli: CliEnvironment): string | undefined {
  // The CLI always sets CDK_DEFAULT_REGION (its default region when none is configured).
  return config.region ?? cli.CDK_DEFAULT_REGION;
}

/**
 * The home stack's environment: the context's `account`/`region`, else the CLI's credentials' (what
 * `cdk deploy` knows), as the CDK guide's `env: {account: CDK_DEFAULT_ACCOUNT, region:
 * CDK_DEFAULT_REGION}`. Agnostic only when no account is known (an offline synth): CDK then gives the
 * VPC 2 zones whatever `maxAzs` says (VpcProps.maxAzs), and a 3-node cluster cannot be placed.
 * `vpcId` needs a concrete environment for its lookup; with `targetRegions` the home region is pinned
 * (regional stacks name it in their grants).
 */
function homeEnvironment(config: BenchfleetConfig, cli: CliEnvironment): Environment | undefined {
  const region = homeRegionOf(config, cli);
  const account = config.account ?? cli.CDK_DEFAULT_ACCOUNT;
  if (config.vpcId !== undefined) {
    // Vpc.fromLookup needs a concrete account and region.
    if (account === undefined || region === undefined) {
      throw new Error('context "vpcId" needs "account" and "region" (context or AWS credentials)');
    }
    return { account, region };
  }
  if (config.targetRegions !== undefined) {
    if (region === undefined) {
      throw new Error(
        'context "targetRegions": the home region is unknown, so it cannot be told from the target regions: ' +
          'set context "region" (or run through the CDK CLI, which sets CDK_DEFAULT_REGION)',
      );
    }
    return { region, ...(account === undefined ? {} : { account }) };
  }
  if (account !== undefined && region !== undefined) return { account, region };
  return undefined;
}

export function buildApp(app: App, config: BenchfleetConfig, cli: CliEnvironment): BenchfleetApp {
  const env = homeEnvironment(config, cli);
  const homeRegion = env?.region;
  const others = (config.targetRegions ?? []).filter((r) => r !== homeRegion);
  if (others.length > MANAGED_POLICIES_PER_ROLE) {
    // Each regional stack attaches a managed policy to each of these roles: past IAM's quota the
    // eleventh region's stack would fail to deploy, half-way through `cdk deploy --all`.
    throw new Error(
      `context "targetRegions": ${others.length} regions besides the home region ${homeRegion ?? ''} would attach ` +
        `${others.length} managed policies to each of the roles ${REGIONALLY_GRANTED_HANDLERS.join(', ')}, and IAM ` +
        `allows ${MANAGED_POLICIES_PER_ROLE} per role by default: list at most ${MANAGED_POLICIES_PER_ROLE} target regions ` +
        'besides the home region',
    );
  }
  const home = new BenchfleetStack(app, config.stackName, {
    config,
    env,
    description: 'benchfleet: serverless benchmarks of MySQL-compatible databases',
  });
  const regions = new Map<string, TargetRegionStack>();
  // `targetRegions` without the home region, which the home stack serves (two stacks there would
  // both write the region's target-resources parameter). homeEnvironment pinned the home region.
  for (const region of config.targetRegions ?? []) {
    if (homeRegion === undefined || region === homeRegion) continue;
    const stack = new TargetRegionStack(app, regionalStackName(config.stackName, region), {
      config,
      homeRegion,
      env: { region, ...(env?.account === undefined ? {} : { account: env.account }) },
      description: `benchfleet: what targets need in ${region} (home stack ${config.stackName} in ${homeRegion})`,
    });
    // Its grants and launch template name the home stack's IAM roles and instance profile.
    stack.addStackDependency(home, 'IAM roles and instance profile of the home stack, used by name');
    regions.set(region, stack);
  }
  // cdk-nag on every synth: unsuppressed findings are errors and fail `cdk synth`.
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  return { home, regions };
}
