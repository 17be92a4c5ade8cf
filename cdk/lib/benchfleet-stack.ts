/**
 * The benchfleet stack: one construct per concern, wired together here and nowhere else.
 */
import { CfnOutput, Stack, StackProps } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { BenchfleetApi } from './api';
import { AthenaStore } from './athena-store';
import { BenchfleetConfig, effectiveSweepRegions } from './config';
import { Dashboards } from './dashboards';
import { applyWildcardSuppressions } from './nag';
import { refuseOverflowPolicies } from './role-policy-limits';
import { targetResourcesParameterName } from './naming';
import { Network } from './network';
import { Orchestration } from './orchestration';
import { ResultsStore } from './results-store';
import { Schedules } from './schedules';
import { TargetFleet } from './target-fleet';

export interface BenchfleetStackProps extends StackProps {
  readonly config: BenchfleetConfig;
  /** Override the ASL file (tests); default statemachines/benchmark-run.asl.json. */
  readonly definitionPath?: string;
}

export class BenchfleetStack extends Stack {
  public readonly results: ResultsStore;
  public readonly network: Network;
  public readonly fleet: TargetFleet;
  public readonly orchestration: Orchestration;
  public readonly api: BenchfleetApi;
  public readonly schedules: Schedules;
  /** QuickSight data source, datasets and dashboard (context quicksightPrincipalArn). */
  public readonly dashboards?: Dashboards;

  constructor(scope: Construct, id: string, props: BenchfleetStackProps) {
    super(scope, id, props);
    const config = props.config;
    const logRetention = config.logRetentionDays as logs.RetentionDays;

    this.results = new ResultsStore(this, 'Results', {
      kind: config.resultsStore,
      keepResults: config.keepResults,
      timestreamMemoryRetentionHours: config.timestreamMemoryRetentionHours,
      timestreamMagneticRetentionDays: config.timestreamMagneticRetentionDays,
      infrequentAccessDays: config.resultsInfrequentAccessDays,
      expirationDays: config.resultsExpirationDays,
      accessLogsExpirationDays: config.accessLogsExpirationDays,
    });
    const removalPolicy = this.results.removalPolicy;

    this.network = new Network(this, 'Network', {
      vpcId: config.vpcId,
      subnetType: config.subnetType,
      maxAzs: config.maxAzs,
      logRetention,
      removalPolicy,
    });

    this.fleet = new TargetFleet(this, 'Targets', {
      vpc: this.network.vpc,
      subnets: this.network.subnets,
      stackName: this.stackName,
      resultsBucket: this.results.bucket,
      removalPolicy,
    });

    this.orchestration = new Orchestration(this, 'Orchestration', {
      results: this.results,
      // The home region's resources; the bucket's grant holds in every region (bucket ARNs name none).
      fleet: { ...this.fleet.fleetResources(), outputBucketArn: this.results.bucket.bucketArn },
      environment: {
        ...this.results.environment,
        ...this.fleet.environment(),
        MAX_RUN_COST_USD: String(config.maxRunCostUsd),
        // Per-region caps the Plan Lambda enforces (benchfleet.aws.planning.runplan.check_plan).
        MAX_VCPUS_PER_REGION: String(config.maxVcpusPerRegion),
        MAX_HOSTS_PER_REGION: String(config.maxHostsPerRegion),
        TARGET_RESOURCES_PARAMETER: targetResourcesParameterName(this.stackName),
      },
      agentDocumentName: this.fleet.agentDocumentName,
      maxRunHours: config.maxRunHours,
      powertoolsVersion: config.powertoolsVersion,
      logRetention,
      removalPolicy,
      definitionPath: props.definitionPath,
      sweepRegions: effectiveSweepRegions(config),
      targetRegions: config.targetRegions,
    });

    this.api = new BenchfleetApi(this, 'Api', {
      handler: this.orchestration.functions.functions.api,
      throttleRateLimit: config.apiThrottleRateLimit,
      throttleBurstLimit: config.apiThrottleBurstLimit,
      accessLogs: config.apiAccessLogs,
      logRetention,
      removalPolicy,
    });

    if (config.quicksightPrincipalArn !== undefined && this.results.records !== undefined) {
      const records = this.results.records;
      this.dashboards = new Dashboards(this, 'Dashboards', {
        principalArn: config.quicksightPrincipalArn,
        store:
          records instanceof AthenaStore
            ? { kind: 'athena', athena: records }
            : { kind: 'timestream', timestreamDatabase: records.environment.TIMESTREAM_DATABASE ?? '' },
      });
    }

    this.schedules = new Schedules(this, 'Schedules', {
      schedules: config.schedules,
      stateMachine: this.orchestration.stateMachine,
      namePrefix: this.stackName,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.url });
    new CfnOutput(this, 'ResultsBucketName', { value: this.results.bucket.bucketName });
    new CfnOutput(this, 'StateMachineArn', { value: this.orchestration.stateMachine.stateMachineArn });
    new CfnOutput(this, 'AgentDocumentName', { value: this.fleet.agentDocumentName });
    // What `benchfleet doctor --remote` checks the account against (the caps runs are planned within,
    // the regions targets may run in, the dashboards' owner).
    new CfnOutput(this, 'MaxVcpusPerRegion', { value: String(config.maxVcpusPerRegion) });
    new CfnOutput(this, 'MaxHostsPerRegion', { value: String(config.maxHostsPerRegion) });
    new CfnOutput(this, 'TargetRegions', { value: (config.targetRegions ?? []).join(',') });
    if (config.quicksightPrincipalArn !== undefined) {
      new CfnOutput(this, 'QuickSightPrincipalArn', { value: config.quicksightPrincipalArn });
    }
    if (this.results.records instanceof AthenaStore) {
      new CfnOutput(this, 'GlueDatabase', { value: this.results.records.databaseName });
      new CfnOutput(this, 'AthenaWorkGroup', { value: this.results.records.workgroupName });
    } else if (this.results.records !== undefined) {
      new CfnOutput(this, 'TimestreamDatabase', {
        value: this.results.records.environment.TIMESTREAM_DATABASE ?? '',
      });
    }

    this.suppressFrameworkFindings();
    applyWildcardSuppressions(this);
    refuseOverflowPolicies(this);
  }

  /** Findings on resources CDK itself adds (singleton providers), suppressed where they are. */
  private suppressFrameworkFindings(): void {
    const provider = this.node.tryFindChild('Custom::S3AutoDeleteObjectsCustomResourceProvider');
    if (provider !== undefined) {
      NagSuppressions.addResourceSuppressions(
        provider,
        [
          {
            id: 'AwsSolutions-IAM4',
            reason:
              'CDK-owned auto-delete provider (keepResults=false): AWSLambdaBasicExecutionRole only lets ' +
              'it write its own logs while it empties the buckets on cdk destroy.',
            appliesTo: [
              'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
            ],
          },
          {
            id: 'AwsSolutions-L1',
            reason: 'CDK-owned auto-delete provider; its Node.js runtime is chosen and updated by aws-cdk-lib.',
          },
        ],
        true,
      );
    }
  }
}
