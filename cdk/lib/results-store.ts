/**
 * Where results live: the S3 bucket for raw agent output and reports (the source of truth: any
 * record store can be rebuilt from it) and the record store the Lambdas query
 * (Timestream, or with `resultsStore: athena` the S3 + Glue + Athena store of athena-store.ts).
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { ResultsStoreKind } from './config';
import { allowWildcard } from './nag';
import { HOST_OUTPUT_EXPIRATION_DAYS, HOSTS_PREFIX, RUNS_PREFIX } from './naming';
import { AthenaStore } from './athena-store';
import { RecordStore, TimestreamStore } from './timestream-store';

/** `keepResults`: retain what holds results or logs on `cdk destroy`, or delete it. */
export function removalPolicyOf(keepResults: boolean): RemovalPolicy {
  return keepResults ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
}

export interface ResultsStoreProps {
  /** Record store behind the Lambdas (context resultsStore). */
  readonly kind: ResultsStoreKind;
  /**
   * false (default): `cdk destroy` deletes the buckets (emptying them first) and the tables.
   * true: they are retained (context keepResults).
   */
  readonly keepResults: boolean;
  readonly timestreamMemoryRetentionHours: number;
  readonly timestreamMagneticRetentionDays: number;
  /** Days before objects under runs/ move to Intelligent-Tiering (0 = never). */
  readonly infrequentAccessDays: number;
  /** Days before objects under runs/ expire (0 = never). */
  readonly expirationDays: number;
  /** Days server access logs are kept. */
  readonly accessLogsExpirationDays: number;
}

export class ResultsStore extends Construct {
  public readonly bucket: s3.Bucket;
  public readonly accessLogsBucket: s3.Bucket;
  /** TimestreamStore or AthenaStore, by context resultsStore. */
  public readonly records?: RecordStore;
  public readonly kind: ResultsStoreKind;
  public readonly removalPolicy: RemovalPolicy;

  constructor(scope: Construct, id: string, props: ResultsStoreProps) {
    super(scope, id);
    this.kind = props.kind;
    this.removalPolicy = removalPolicyOf(props.keepResults);
    const autoDeleteObjects = !props.keepResults;

    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: this.removalPolicy,
      autoDeleteObjects,
      lifecycleRules: [
        { id: 'expire-access-logs', expiration: Duration.days(props.accessLogsExpirationDays) },
      ],
    });
    NagSuppressions.addResourceSuppressions(this.accessLogsBucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          'This is the server access log bucket of the results bucket; logging it into itself would loop.',
      },
    ]);

    const runsRules: s3.LifecycleRule[] = [];
    if (props.infrequentAccessDays > 0 || props.expirationDays > 0) {
      runsRules.push({
        id: 'age-raw-results',
        prefix: RUNS_PREFIX,
        transitions:
          props.infrequentAccessDays > 0
            ? [
                {
                  storageClass: s3.StorageClass.INTELLIGENT_TIERING,
                  transitionAfter: Duration.days(props.infrequentAccessDays),
                },
              ]
            : undefined,
        expiration: props.expirationDays > 0 ? Duration.days(props.expirationDays) : undefined,
      });
    }

    this.bucket = new s3.Bucket(this, 'Results', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'results/',
      removalPolicy: this.removalPolicy,
      autoDeleteObjects,
      lifecycleRules: [
        // Agents upload through SSM in parts; a killed target must not leave parts billed forever.
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Each host's Run Command output: collect copies the agent's lines to runs/ right after the step.
        { id: 'expire-host-output', prefix: HOSTS_PREFIX, expiration: Duration.days(HOST_OUTPUT_EXPIRATION_DAYS) },
        ...runsRules,
      ],
    });

    if (props.kind === 'timestream') {
      this.records = new TimestreamStore(this, 'Timestream', {
        memoryRetentionHours: props.timestreamMemoryRetentionHours,
        magneticRetentionDays: props.timestreamMagneticRetentionDays,
        removalPolicy: this.removalPolicy,
      });
    } else {
      this.records = new AthenaStore(this, 'Athena', { bucket: this.bucket, removalPolicy: this.removalPolicy });
    }
  }

  /** Environment variables describing the store (RESULTS_BUCKET, RESULTS_STORE, TIMESTREAM_DATABASE). */
  public get environment(): Record<string, string> {
    return {
      RESULTS_BUCKET: this.bucket.bucketName,
      RESULTS_STORE: this.kind,
      TIMESTREAM_DATABASE: '',
      ...(this.records?.environment ?? {}),
    };
  }

  /** Read (and list) raw results, specs and reports under runs/. */
  public grantReadRuns(grantee: iam.IGrantable): void {
    this.grantRuns(grantee, ['s3:GetObject']);
  }

  /** Read and write raw results, specs and reports under runs/. */
  public grantReadWriteRuns(grantee: iam.IGrantable): void {
    this.grantRuns(grantee, ['s3:GetObject', 's3:PutObject']);
  }

  /** collect: read (and list) the Run Command output hosts write under hosts/<their ARN>/. */
  public grantReadHostOutput(grantee: iam.IGrantable): void {
    this.grantRuns(grantee, ['s3:GetObject'], HOSTS_PREFIX);
  }

  /** Object actions on <prefix>* plus ListBucket limited to that prefix (no s3:* or Get* wildcards). */
  private grantRuns(grantee: iam.IGrantable, objectActions: string[], prefix = RUNS_PREFIX): void {
    if (grantee instanceof Construct) allowWildcard(grantee, prefix === RUNS_PREFIX ? 'runsPrefix' : 'hostsPrefix');
    iam.Grant.addToPrincipal({
      grantee,
      actions: objectActions,
      resourceArns: [this.bucket.arnForObjects(`${prefix}*`)],
    });
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [`${prefix}*`] } },
      }),
    );
  }
}
