/**
 * The Timestream for LiveAnalytics record store: one database, tables samples / step_summaries /
 * cloud_metrics (DESIGN.md "Data model"). Kept small and behind RecordStore so an S3 + Glue + Athena
 * store (context resultsStore=athena) can sit next to it.
 */
import { CfnResource, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as timestream from 'aws-cdk-lib/aws-timestream';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

/** What the Lambdas need from a record store, whichever service backs it. */
export interface RecordStore {
  /** Value of RESULTS_STORE. */
  readonly kind: 'timestream' | 'athena';
  /** Environment variables the Lambdas read (TIMESTREAM_DATABASE, ...). */
  readonly environment: Record<string, string>;
  /** Write records (collect). */
  grantWrite(grantee: iam.IGrantable): void;
  /** Query records (summarize, api). */
  grantRead(grantee: iam.IGrantable): void;
}

export const TIMESTREAM_TABLES = ['samples', 'status_samples', 'step_summaries', 'cloud_metrics'] as const;
export type TimestreamTableName = (typeof TIMESTREAM_TABLES)[number];

export interface TimestreamStoreProps {
  /**
   * Memory store retention. Must cover the longest run: records older than it are only accepted
   * because magnetic store writes are enabled, and land in the slower magnetic store.
   */
  readonly memoryRetentionHours: number;
  readonly magneticRetentionDays: number;
  /** DESTROY (default for benchfleet) deletes the database and its data with the stack. */
  readonly removalPolicy: RemovalPolicy;
}

export class TimestreamStore extends Construct implements RecordStore {
  public readonly kind = 'timestream' as const;
  public readonly database: timestream.CfnDatabase;
  public readonly tables: Record<TimestreamTableName, timestream.CfnTable>;
  public readonly environment: Record<string, string>;

  constructor(scope: Construct, id: string, props: TimestreamStoreProps) {
    super(scope, id);
    // No explicit name: CloudFormation generates a unique one, so two stacks can coexist.
    this.database = new timestream.CfnDatabase(this, 'Database');
    this.database.applyRemovalPolicy(props.removalPolicy);
    ignoreMaintenanceModeLint(this.database);
    NagSuppressions.addResourceSuppressions(this.database, [
      {
        id: 'AwsSolutions-TS3',
        reason:
          'Benchmark measurements only (no personal or secret data): encrypted at rest with the AWS managed ' +
          'key; a customer managed key would add cost and a key policy without narrowing who can read.',
      },
    ]);
    Validations.of(this).acknowledge({
      id: 'CloudFormation-Validate::W3697',
      reason:
        'Timestream for LiveAnalytics is closed to accounts new since 2025-06-20 (DESIGN.md); it stays the ' +
        'default for accounts that have it, and resultsStore=athena is the planned alternative.',
    });

    const tables: Partial<Record<TimestreamTableName, timestream.CfnTable>> = {};
    for (const name of TIMESTREAM_TABLES) {
      const table = new timestream.CfnTable(this, name, {
        databaseName: this.database.ref,
        tableName: name,
        retentionProperties: {
          MemoryStoreRetentionPeriodInHours: String(props.memoryRetentionHours),
          MagneticStoreRetentionPeriodInDays: String(props.magneticRetentionDays),
        },
        // Collect may write a long run's early seconds after memory retention has passed them.
        magneticStoreWriteProperties: { EnableMagneticStoreWrites: true },
      });
      table.applyRemovalPolicy(props.removalPolicy);
      ignoreMaintenanceModeLint(table);
      tables[name] = table;
    }
    this.tables = tables as Record<TimestreamTableName, timestream.CfnTable>;
    this.environment = { TIMESTREAM_DATABASE: this.database.ref };
  }

  private tableArns(): string[] {
    return TIMESTREAM_TABLES.map((t) => this.tables[t].attrArn);
  }

  public grantWrite(grantee: iam.IGrantable): void {
    this.grantEndpoints(grantee);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:WriteRecords', 'timestream:DescribeTable'],
      resourceArns: this.tableArns(),
    });
  }

  public grantRead(grantee: iam.IGrantable): void {
    this.grantEndpoints(grantee);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:Select', 'timestream:DescribeTable'],
      resourceArns: this.tableArns(),
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:DescribeDatabase', 'timestream:ListTables'],
      resourceArns: [this.databaseArn()],
    });
  }

  private databaseArn(): string {
    return Stack.of(this).formatArn({
      service: 'timestream',
      resource: 'database',
      resourceName: this.database.ref,
    });
  }

  /** DescribeEndpoints (endpoint discovery by the SDK) supports no resource-level permissions. */
  private grantEndpoints(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({ grantee, actions: ['timestream:DescribeEndpoints'], resourceArns: ['*'] });
  }
}

/** cfn-lint W3697 (service in maintenance mode): known and accepted, see the acknowledgement above. */
function ignoreMaintenanceModeLint(resource: CfnResource): void {
  resource.addMetadata('cfn-lint', { config: { ignore_checks: ['W3697'] } });
}
