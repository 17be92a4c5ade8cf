/**
 * The one place that reads CDK context. Every key, its type, its default and its meaning is here
 * (and in cdk/README.md); constructs receive typed props and never call tryGetContext themselves.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Node } from 'constructs';
import { REPO_ROOT } from './naming';

export type ResultsStoreKind = 'timestream' | 'athena';
export type TargetSubnetType = 'public' | 'private';

/** One entry of the `schedules` context list: a comparison spec started on a schedule. */
export interface ScheduleConfig {
  /** [A-Za-z0-9_-], unique; becomes part of the schedule name and `{"schedule": name}` in the input. */
  readonly name: string;
  /** EventBridge Scheduler expression: `cron(...)`, `rate(...)` or `at(...)`. */
  readonly expression: string;
  /** Repository-relative path of a comparison spec (YAML or JSON), e.g. workloads/comparisons/x.yaml. */
  readonly spec: string;
  /** IANA time zone for cron expressions (default UTC). */
  readonly timezone?: string;
}

export interface BenchfleetConfig {
  readonly stackName: string;
  /** Deploy to this account/region (needed only with `vpcId`: lookups need a concrete env). */
  readonly account?: string;
  readonly region?: string;
  readonly resultsStore: ResultsStoreKind;
  /** true: buckets, tables and log groups are retained by `cdk destroy`. */
  readonly keepResults: boolean;
  readonly timestreamMemoryRetentionHours: number;
  readonly timestreamMagneticRetentionDays: number;
  /** Move raw results under runs/ to Intelligent-Tiering after this many days (0 = never). */
  readonly resultsInfrequentAccessDays: number;
  /** Delete raw results under runs/ after this many days (0 = never). */
  readonly resultsExpirationDays: number;
  readonly accessLogsExpirationDays: number;
  readonly logRetentionDays: number;
  /** Existing VPC to use instead of creating one (looked up at synth; needs account/region). */
  readonly vpcId?: string;
  readonly maxAzs: number;
  /** Which subnets of an existing VPC targets use: public (default) or private with egress. */
  readonly subnetType: TargetSubnetType;
  /**
   * The operator's word that the public subnets of `vpcId` assign public IPv4 addresses on launch
   * (MapPublicIpOnLaunch), which a synth-time lookup cannot see; without it such a synth is refused.
   */
  readonly subnetsAssignPublicIp: boolean;
  /** Execution timeout of the state machine, in hours. */
  readonly maxRunHours: number;
  /**
   * Most a run submitted without budget_usd may cost, in USD (estimate from the price tables):
   * MAX_RUN_COST_USD, enforced by POST /runs (lambdas/benchfleet/cost/ceiling.py).
   */
  readonly maxRunCostUsd: number;
  /**
   * What one run may run at once per region (the Plan Lambda refuses more, naming the key): EC2
   * vCPUs (a fresh account's On-Demand Standard quota is usually 32) and hosts (EC2 + DB instances).
   */
  readonly maxVcpusPerRegion: number;
  readonly maxHostsPerRegion: number;
  /**
   * Powertools for AWS Lambda (Python) release the Lambdas run with, as `3.x.y`: its public layer for
   * python3.13/arm64, found through Powertools' public SSM parameter for that release. Default: the
   * version uv.lock holds, so the deployed Lambdas run the Powertools (and the pydantic it bundles) the
   * offline tests ran against (README, "Locked dependencies").
   */
  readonly powertoolsVersion: string;
  readonly apiThrottleRateLimit: number;
  readonly apiThrottleBurstLimit: number;
  /**
   * true: the API stage writes access logs, which needs the account/region's API Gateway CloudWatch
   * Logs role (an account-wide setting this stack does not own). false: deployable in a fresh account.
   */
  readonly apiAccessLogs: boolean;
  readonly schedules: readonly ScheduleConfig[];
  /** QuickSight user/group ARN owning the dashboards; unset = no dashboards (cdk/lib/dashboards.ts). */
  readonly quicksightPrincipalArn?: string;
  /**
   * Regions the janitor sweeps (SWEEP_REGIONS) and where the janitor, teardown_by_tag and the API may
   * terminate/delete run-tagged resources: every region a spec may put targets in. Unset = the
   * stack's own region only.
   */
  readonly sweepRegions?: readonly string[];
  /**
   * Regions targets may run in besides the stack's own (home) region. Every Lambda gets the list as
   * TARGET_REGIONS; Plan refuses a target in any other region. Unset = the home region only.
   */
  readonly targetRegions?: readonly string[];
}

/** Every key's default but powertoolsVersion's, which is read from uv.lock (powertoolsVersion()). */
export const DEFAULTS: Omit<BenchfleetConfig, 'powertoolsVersion'> = {
  stackName: 'Benchfleet',
  // Timestream for LiveAnalytics is closed to accounts new since 2025-06-20: the default deploys anywhere.
  resultsStore: 'athena',
  keepResults: false,
  timestreamMemoryRetentionHours: 72,
  timestreamMagneticRetentionDays: 365,
  resultsInfrequentAccessDays: 30,
  resultsExpirationDays: 0,
  accessLogsExpirationDays: 90,
  logRetentionDays: 30,
  maxAzs: 3,
  subnetType: 'public',
  subnetsAssignPublicIp: false,
  maxRunHours: 48,
  maxRunCostUsd: 100,
  maxVcpusPerRegion: 32,
  maxHostsPerRegion: 20,
  apiThrottleRateLimit: 10,
  apiThrottleBurstLimit: 20,
  apiAccessLogs: false,
  schedules: [],
};

/** Values CloudWatch Logs accepts as retention (RetentionDays enum values). */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288,
  3653,
];

class ConfigError extends Error {
  constructor(key: string, message: string) {
    super(`context "${key}": ${message}`);
    this.name = 'ConfigError';
  }
}

/** Context values arrive as JSON from cdk.json or as strings from `-c key=value`. */
function raw(node: Node, key: string): unknown {
  return node.tryGetContext(key);
}

function str(node: Node, key: string, fallback: string): string {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return fallback;
  if (typeof v !== 'string') throw new ConfigError(key, `expected a string, got ${JSON.stringify(v)}`);
  return v;
}

function optStr(node: Node, key: string): string | undefined {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new ConfigError(key, `expected a string, got ${JSON.stringify(v)}`);
  return v;
}

/**
 * The Powertools release of the Lambdas' layer: context `powertoolsVersion`, else uv.lock's. The old
 * numeric `powertoolsLayerVersion` is refused by name: a layer number does not say which Powertools
 * (and pydantic) it holds — layer 27, the previous default, is 3.23.0, older than the API handler needs.
 */
function powertoolsVersion(node: Node): string {
  if (raw(node, 'powertoolsLayerVersion') !== undefined) {
    throw new ConfigError(
      'powertoolsLayerVersion',
      'replaced by powertoolsVersion (a Powertools release such as 3.37.0; default: the one uv.lock holds)',
    );
  }
  const v = str(node, 'powertoolsVersion', lockedVersion('aws-lambda-powertools'));
  if (!/^3\.[0-9]+\.[0-9]+$/.test(v)) {
    throw new ConfigError('powertoolsVersion', `expected a Powertools V3 release such as 3.37.0, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** A package's version in uv.lock (the Python lock: one source of truth for what the Lambdas import). */
export function lockedVersion(pkg: string): string {
  const lock = fs.readFileSync(path.join(REPO_ROOT, 'uv.lock'), 'utf8');
  const m = new RegExp(`\\[\\[package\\]\\]\\nname = "${pkg}"\\nversion = "([^"]+)"`).exec(lock);
  if (!m) throw new Error(`uv.lock has no ${pkg}: run make lock`);
  return m[1];
}

function bool(node: Node, key: string, fallback: boolean): boolean {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return fallback;
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new ConfigError(key, `expected true or false, got ${JSON.stringify(v)}`);
}

function int(node: Node, key: string, fallback: number, min: number, max: number): number {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(key, `expected an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return n;
}

function num(node: Node, key: string, fallback: number, min: number, max: number): number {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new ConfigError(key, `expected a number in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return n;
}

function oneOf<T extends string>(node: Node, key: string, fallback: T, allowed: readonly T[]): T {
  const v = str(node, key, fallback);
  if (!(allowed as readonly string[]).includes(v)) {
    throw new ConfigError(key, `expected one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as T;
}

/** AWS region names: us-east-1, eu-central-2, us-gov-west-1, ap-southeast-5, ... */
const REGION_NAME = /^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$/;
/** The most regions `sweepRegions` or `targetRegions` may list (targetRegions is further capped by buildApp). */
export const MAX_LISTED_REGIONS = 30;

/** A list of regions as JSON (cdk.json, or -c '["a","b"]') or comma separated (-c a,b). */
function regions(node: Node, key: string): string[] | undefined {
  const v = raw(node, key);
  if (v === undefined || v === null || v === '') return undefined;
  let list: unknown = v;
  if (typeof v === 'string' && v.trim().startsWith('[')) {
    try {
      list = JSON.parse(v);
    } catch {
      throw new ConfigError(key, 'expected a JSON list of region names');
    }
  } else if (typeof v === 'string') {
    list = v.split(',').map((r) => r.trim());
  }
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_LISTED_REGIONS) {
    throw new ConfigError(key, `expected a list of 1 to ${MAX_LISTED_REGIONS} region names, e.g. ["us-east-1", "eu-west-1"]`);
  }
  const seen = new Set<string>();
  for (const region of list) {
    if (typeof region !== 'string' || !REGION_NAME.test(region)) {
      throw new ConfigError(key, `expected region names like us-east-1, got ${JSON.stringify(region)}`);
    }
    if (seen.has(region)) throw new ConfigError(key, `duplicate region ${region}`);
    seen.add(region);
  }
  return [...seen];
}

const SCHEDULE_NAME = /^[A-Za-z0-9_-]{1,40}$/;
const SCHEDULE_EXPRESSION = /^(cron|rate|at)\(.+\)$/;

function schedules(node: Node): ScheduleConfig[] {
  let v = raw(node, 'schedules');
  if (v === undefined || v === null || v === '') return [];
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      throw new ConfigError('schedules', 'expected a JSON list');
    }
  }
  if (!Array.isArray(v)) throw new ConfigError('schedules', 'expected a list');
  const seen = new Set<string>();
  return v.map((item: unknown, i: number): ScheduleConfig => {
    const where = `schedules[${i}]`;
    if (typeof item !== 'object' || item === null) throw new ConfigError(where, 'expected an object');
    const { name, expression, spec, timezone } = item as Record<string, unknown>;
    if (typeof name !== 'string' || !SCHEDULE_NAME.test(name)) {
      throw new ConfigError(`${where}.name`, 'expected 1-40 characters of [A-Za-z0-9_-]');
    }
    if (seen.has(name)) throw new ConfigError(`${where}.name`, `duplicate schedule name ${name}`);
    seen.add(name);
    if (typeof expression !== 'string' || !SCHEDULE_EXPRESSION.test(expression)) {
      throw new ConfigError(`${where}.expression`, 'expected cron(...), rate(...) or at(...)');
    }
    if (typeof spec !== 'string' || spec === '') {
      throw new ConfigError(`${where}.spec`, 'expected a repository-relative path to a spec file');
    }
    if (timezone !== undefined && typeof timezone !== 'string') {
      throw new ConfigError(`${where}.timezone`, 'expected an IANA time zone name');
    }
    return { name, expression, spec, ...(timezone === undefined ? {} : { timezone }) };
  });
}

/**
 * Regions the sweepers cover: every target region and every sweepRegions entry (undefined when
 * neither key is set: the stack's region only). A target region the janitor did not sweep would
 * leak whatever a failed run left there.
 */
export function effectiveSweepRegions(config: BenchfleetConfig): readonly string[] | undefined {
  if (config.sweepRegions === undefined && config.targetRegions === undefined) return undefined;
  return [...new Set([...(config.targetRegions ?? []), ...(config.sweepRegions ?? [])])];
}

/** Read and validate every context key; throws with the key's name on bad input. */
export function readConfig(node: Node): BenchfleetConfig {
  const logRetentionDays = int(node, 'logRetentionDays', DEFAULTS.logRetentionDays, 1, 3653);
  if (!LOG_RETENTION_DAYS.includes(logRetentionDays)) {
    throw new ConfigError('logRetentionDays', `expected one of ${LOG_RETENTION_DAYS.join(', ')}`);
  }
  const stackName = str(node, 'stackName', DEFAULTS.stackName);
  if (!/^[A-Za-z][A-Za-z0-9-]{0,40}$/.test(stackName)) {
    throw new ConfigError('stackName', 'expected a letter then up to 40 of [A-Za-z0-9-]');
  }
  const quicksightPrincipalArn = optStr(node, 'quicksightPrincipalArn');
  if (
    quicksightPrincipalArn !== undefined &&
    !/^arn:aws[a-z-]*:quicksight:[a-z0-9-]+:[0-9]{12}:(user|group)\/.+$/.test(quicksightPrincipalArn)
  ) {
    throw new ConfigError('quicksightPrincipalArn', 'expected arn:aws:quicksight:<region>:<account>:user/... or group/...');
  }
  const sweepRegions = regions(node, 'sweepRegions');
  const targetRegions = regions(node, 'targetRegions');
  const vpcId = optStr(node, 'vpcId');
  if (vpcId !== undefined && !/^vpc-[0-9a-f]{8,17}$/.test(vpcId)) {
    throw new ConfigError('vpcId', `expected vpc-<hex>, got ${JSON.stringify(vpcId)}`);
  }
  const subnetType = oneOf<TargetSubnetType>(node, 'subnetType', DEFAULTS.subnetType, ['public', 'private']);
  const subnetsAssignPublicIp = bool(node, 'subnetsAssignPublicIp', DEFAULTS.subnetsAssignPublicIp);
  // A host without a public IP in a subnet without a NAT route reaches neither SSM (so no step ever
  // runs: readiness waits until it gives up) nor the package mirrors the agent installs from. VPC
  // interface endpoints would not do: apt needs the internet, and Run Command's output goes to the
  // home region's bucket, out of reach of a target region's S3 gateway endpoint. So refuse here.
  if (vpcId !== undefined && subnetType === 'public' && !subnetsAssignPublicIp) {
    throw new ConfigError(
      'subnetType',
      `"public" with "vpcId" ${vpcId}: targets get a route to SSM and the package mirrors only if those subnets ` +
        'assign public IPv4 addresses on launch (MapPublicIpOnLaunch), which a synth-time lookup cannot see. ' +
        'Turn it on for them and set context "subnetsAssignPublicIp" to true, or use "subnetType": "private" ' +
        '(subnets with a NAT gateway route)',
    );
  }
  return {
    stackName,
    account: optStr(node, 'account'),
    region: optStr(node, 'region'),
    resultsStore: oneOf(node, 'resultsStore', DEFAULTS.resultsStore, ['timestream', 'athena']),
    keepResults: bool(node, 'keepResults', DEFAULTS.keepResults),
    // Memory retention must cover the longest run: writes older than it go to the magnetic store.
    timestreamMemoryRetentionHours: int(
      node,
      'timestreamMemoryRetentionHours',
      DEFAULTS.timestreamMemoryRetentionHours,
      1,
      8766,
    ),
    timestreamMagneticRetentionDays: int(
      node,
      'timestreamMagneticRetentionDays',
      DEFAULTS.timestreamMagneticRetentionDays,
      1,
      73000,
    ),
    resultsInfrequentAccessDays: int(
      node,
      'resultsInfrequentAccessDays',
      DEFAULTS.resultsInfrequentAccessDays,
      0,
      36500,
    ),
    resultsExpirationDays: int(node, 'resultsExpirationDays', DEFAULTS.resultsExpirationDays, 0, 36500),
    accessLogsExpirationDays: int(
      node,
      'accessLogsExpirationDays',
      DEFAULTS.accessLogsExpirationDays,
      1,
      36500,
    ),
    logRetentionDays,
    vpcId,
    // A DB subnet group needs two AZs; env-agnostic stacks can use at most two.
    maxAzs: int(node, 'maxAzs', DEFAULTS.maxAzs, 2, 6),
    subnetType,
    subnetsAssignPublicIp,
    // Step Functions Standard executions can run up to one year; 8760 h keeps us inside that.
    maxRunHours: int(node, 'maxRunHours', DEFAULTS.maxRunHours, 1, 8760),
    maxRunCostUsd: num(node, 'maxRunCostUsd', DEFAULTS.maxRunCostUsd, 0.01, 1_000_000),
    maxVcpusPerRegion: int(node, 'maxVcpusPerRegion', DEFAULTS.maxVcpusPerRegion, 1, 100_000),
    maxHostsPerRegion: int(node, 'maxHostsPerRegion', DEFAULTS.maxHostsPerRegion, 1, 10_000),
    powertoolsVersion: powertoolsVersion(node),
    apiThrottleRateLimit: int(node, 'apiThrottleRateLimit', DEFAULTS.apiThrottleRateLimit, 1, 10000),
    apiThrottleBurstLimit: int(node, 'apiThrottleBurstLimit', DEFAULTS.apiThrottleBurstLimit, 1, 5000),
    apiAccessLogs: bool(node, 'apiAccessLogs', DEFAULTS.apiAccessLogs),
    schedules: schedules(node),
    ...(quicksightPrincipalArn === undefined ? {} : { quicksightPrincipalArn }),
    ...(sweepRegions === undefined ? {} : { sweepRegions }),
    ...(targetRegions === undefined ? {} : { targetRegions }),
  };
}
