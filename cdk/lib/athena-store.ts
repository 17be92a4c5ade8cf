/**
 * The S3 + Glue + Athena record store (context resultsStore=athena): works in every account, unlike
 * Timestream for LiveAnalytics (closed to new accounts since 2025-06-20), and QuickSight reads it.
 *
 * Rows are JSON Lines in the results bucket under tables/<table>/run_id=<run_id>/ (written by
 * lambdas/benchfleet/aws/store/athena_store.py); one Glue table per record type, partitioned by run_id.
 * Partitions are registered by the writer (glue:BatchCreatePartition), not projected: an `injected`
 * projection would force every query, dashboards included, to name a single run. To rebuild them
 * from S3: `MSCK REPAIR TABLE <table>` in the workgroup.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct, IConstruct } from 'constructs';
import { RecordStore } from './timestream-store';

/** Prefix of the tables' data in the results bucket. */
export const TABLES_PREFIX = 'tables/';
/** Prefix of Athena query results (the workgroup enforces it, encrypted). */
export const ATHENA_RESULTS_PREFIX = 'athena-results/';
export const PARTITION_KEY = 'run_id';
/** The one schema file shared with the Python writer's tests (cdk/lib/sql/glue-tables.json). */
export const GLUE_TABLES_FILE = path.join(__dirname, 'sql', 'glue-tables.json');

export type GlueTableName = 'samples' | 'status_samples' | 'step_summaries' | 'cloud_metrics' | 'targets' | 'runs';
export type GlueColumns = ReadonlyArray<readonly [string, string]>;

/** Column names and Hive types of every table, read at synth. */
export function glueTables(): Record<GlueTableName, GlueColumns> {
  const parsed = JSON.parse(fs.readFileSync(GLUE_TABLES_FILE, 'utf8')) as { tables: Record<string, GlueColumns> };
  return parsed.tables as Record<GlueTableName, GlueColumns>;
}

export interface AthenaStoreProps {
  /** The results bucket (raw results under runs/, tables under tables/, query results). */
  readonly bucket: s3.Bucket;
  /** DESTROY also deletes the workgroup's saved query history. */
  readonly removalPolicy: RemovalPolicy;
  /** Days query result files are kept (default 7): they are caches, the tables are the data. */
  readonly queryResultsExpirationDays?: number;
  /** Per-query scan limit (default 10 GiB): a runaway dashboard query cannot scan the whole bucket. */
  readonly bytesScannedCutoffPerQuery?: number;
}

export class AthenaStore extends Construct implements RecordStore {
  public readonly kind = 'athena' as const;
  public readonly database: glue.CfnDatabase;
  public readonly databaseName: string;
  public readonly tables: Record<GlueTableName, glue.CfnTable>;
  public readonly workgroup: athena.CfnWorkGroup;
  public readonly workgroupName: string;
  public readonly bucket: s3.Bucket;
  public readonly environment: Record<string, string>;
  private readonly suppressed = new WeakSet<IConstruct>();

  constructor(scope: Construct, id: string, props: AthenaStoreProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.bucket = props.bucket;
    // Glue folds names to lower case and Athena dislikes '-': one database per stack.
    this.databaseName = `${stack.stackName.toLowerCase().replace(/[^a-z0-9]/g, '_')}_results`;
    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: stack.account,
      databaseInput: {
        name: this.databaseName,
        description: 'benchfleet results: samples, step summaries, cloud metrics, targets, runs',
      },
    });
    this.database.applyRemovalPolicy(props.removalPolicy);

    const tables: Partial<Record<GlueTableName, glue.CfnTable>> = {};
    for (const [name, columns] of Object.entries(glueTables()) as Array<[GlueTableName, GlueColumns]>) {
      const table = new glue.CfnTable(this, `Table${name}`, {
        catalogId: stack.account,
        databaseName: this.databaseName,
        tableInput: {
          name,
          description: `benchfleet ${name}: JSON Lines per run (lambdas/benchfleet/aws/store/athena_store.py)`,
          tableType: 'EXTERNAL_TABLE',
          parameters: { classification: 'json', EXTERNAL: 'TRUE' },
          partitionKeys: [{ name: PARTITION_KEY, type: 'string' }],
          storageDescriptor: {
            columns: columns.map(([n, t]) => ({ name: n, type: t })),
            location: `s3://${props.bucket.bucketName}/${TABLES_PREFIX}${name}/`,
            inputFormat: 'org.apache.hadoop.mapred.TextInputFormat',
            outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
            serdeInfo: { serializationLibrary: 'org.openx.data.jsonserde.JsonSerDe' },
          },
        },
      });
      table.addDependency(this.database);
      table.applyRemovalPolicy(props.removalPolicy);
      tables[name] = table;
    }
    this.tables = tables as Record<GlueTableName, glue.CfnTable>;

    props.bucket.addLifecycleRule({
      id: 'expire-athena-query-results',
      prefix: ATHENA_RESULTS_PREFIX,
      expiration: Duration.days(props.queryResultsExpirationDays ?? 7),
    });
    this.workgroupName = `${stack.stackName}-results`;
    this.workgroup = new athena.CfnWorkGroup(this, 'WorkGroup', {
      name: this.workgroupName,
      description: 'benchfleet results queries (API results route, QuickSight datasets)',
      state: 'ENABLED',
      // Without it, deleting the stack fails while the workgroup has query history.
      recursiveDeleteOption: props.removalPolicy === RemovalPolicy.DESTROY,
      workGroupConfiguration: {
        // Clients cannot override the result location or turn encryption off.
        enforceWorkGroupConfiguration: true,
        publishCloudWatchMetricsEnabled: true,
        bytesScannedCutoffPerQuery: props.bytesScannedCutoffPerQuery ?? 10 * 1024 ** 3,
        engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
        resultConfiguration: {
          outputLocation: `s3://${props.bucket.bucketName}/${ATHENA_RESULTS_PREFIX}`,
          encryptionConfiguration: { encryptionOption: 'SSE_S3' },
        },
      },
    });
    this.workgroup.applyRemovalPolicy(props.removalPolicy);

    this.environment = { GLUE_DATABASE: this.databaseName, ATHENA_WORKGROUP: this.workgroupName };
  }

  public get workgroupArn(): string {
    return Stack.of(this).formatArn({ service: 'athena', resource: 'workgroup', resourceName: this.workgroupName });
  }

  /** Catalog, database and table ARNs (Glue authorizes table actions on all three). */
  public glueArns(): string[] {
    const stack = Stack.of(this);
    return [
      stack.formatArn({ service: 'glue', resource: 'catalog' }),
      stack.formatArn({ service: 'glue', resource: 'database', resourceName: this.databaseName }),
      ...Object.keys(this.tables).map((t) =>
        stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${this.databaseName}/${t}` }),
      ),
    ];
  }

  /** Collect: put JSON Lines under tables/ and register the run's partitions. */
  public grantWrite(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:PutObject'],
      resourceArns: [this.bucket.arnForObjects(`${TABLES_PREFIX}*`)],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['glue:GetTable', 'glue:BatchCreatePartition', 'glue:GetPartition'],
      resourceArns: this.glueArns(),
    });
    this.suppressPrefixWildcards(grantee);
  }

  /** API results route, summarize, QuickSight: query through the workgroup. */
  public grantRead(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'athena:StartQueryExecution',
        'athena:GetQueryExecution',
        'athena:GetQueryResults',
        'athena:StopQueryExecution',
        'athena:GetWorkGroup',
      ],
      resourceArns: [this.workgroupArn],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['glue:GetDatabase', 'glue:GetDatabases', 'glue:GetTable', 'glue:GetTables', 'glue:GetPartition',
        'glue:GetPartitions', 'glue:BatchGetPartition'],
      resourceArns: this.glueArns(),
    });
    // Athena reads the tables and writes query results with the caller's credentials.
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetObject'],
      resourceArns: [this.bucket.arnForObjects(`${TABLES_PREFIX}*`)],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
      resourceArns: [this.bucket.arnForObjects(`${ATHENA_RESULTS_PREFIX}*`)],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetBucketLocation', 's3:ListBucketMultipartUploads'],
      resourceArns: [this.bucket.bucketArn],
    });
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [`${TABLES_PREFIX}*`, `${ATHENA_RESULTS_PREFIX}*`] } },
      }),
    );
    this.suppressPrefixWildcards(grantee);
  }

  /** The object wildcards are prefixes of the results bucket whose keys are chosen per run. */
  private suppressPrefixWildcards(grantee: iam.IGrantable): void {
    const holder = grantee.grantPrincipal;
    if (!(holder instanceof Construct) || this.suppressed.has(holder)) return;
    this.suppressed.add(holder);
    NagSuppressions.addResourceSuppressions(
      holder,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Athena store objects are keyed tables/<table>/run_id=<run_id>/... with run ids chosen at run ' +
            'time, and Athena names its result files per query; access is limited to those two prefixes ' +
            'of the results bucket.',
          appliesTo: [
            { regex: '/^Resource::<[A-Za-z0-9]*Results[A-Za-z0-9]*\\.Arn>\\/(tables|athena-results)\\/\\*$/' },
          ],
        },
      ],
      true,
    );
  }
}
