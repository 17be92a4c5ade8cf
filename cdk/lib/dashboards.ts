/**
 * QuickSight dashboards (optional: context quicksightPrincipalArn): a data source on the record store
 * (ATHENA for resultsStore=athena, TIMESTREAM for timestream), one dataset per SQL file in
 * cdk/lib/sql/<dialect>/ and a dashboard defined here (sheets and visuals) with the views of the
 * local HTML report. One-time prerequisites (subscription, principal, service-role access) are in
 * cdk/README.md, "Dashboards".
 */
import * as fs from 'fs';
import * as path from 'path';
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as quicksight from 'aws-cdk-lib/aws-quicksight';
import { Construct } from 'constructs';
import { AthenaStore } from './athena-store';

export const SQL_DIR = path.join(__dirname, 'sql');
export type DatasetName = 'step_results' | 'target_costs' | 'speedup' | 'samples' | 'status_samples' | 'cloud_metrics';
export type QuickSightColumnType = 'STRING' | 'INTEGER' | 'DECIMAL' | 'DATETIME';

interface DatasetSpec {
  readonly title: string;
  readonly columns: ReadonlyArray<readonly [string, QuickSightColumnType]>;
}

/** Dataset titles and columns (cdk/lib/sql/datasets.json), shared by every dialect. */
export function datasetSpecs(): Record<DatasetName, DatasetSpec> {
  const parsed = JSON.parse(fs.readFileSync(path.join(SQL_DIR, 'datasets.json'), 'utf8')) as {
    datasets: Record<DatasetName, DatasetSpec>;
  };
  return parsed.datasets;
}

/** A SQL file without its comment lines (comments stay out of what QuickSight stores; the files keep them). */
function sqlBody(file: string): string {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .trim();
}

/**
 * The dataset's SQL for a dialect with its placeholders replaced: ${database}, ${verdict} by the
 * fragment sql/common/verdict.sql (the step results' verdict CTEs, one copy for both dialects),
 * ${cross_zone} by sql/common/cross_zone.sql (a cluster's cross-zone traffic, the target costs'), ${t975}
 * by sql/common/t975.sql (Student t quantiles for the 95% intervals) and ${t_of_df} by
 * sql/common/t_of_df.sql (t at the degrees of freedom of the CTE needs_t).
 */
export function datasetSql(dialect: 'athena' | 'timestream', name: DatasetName, database: string): string {
  const body = sqlBody(path.join(SQL_DIR, dialect, `${name}.sql`));
  const values = sqlBody(path.join(SQL_DIR, 'common', 't975.sql'));
  const t975 = dialect === 'timestream' ? t975Selects(values) : values;
  const tOfDf = sqlBody(path.join(SQL_DIR, 'common', 't_of_df.sql'));
  const verdict = sqlBody(path.join(SQL_DIR, 'common', 'verdict.sql'));
  const crossZone = sqlBody(path.join(SQL_DIR, 'common', 'cross_zone.sql'));
  return body
    .split('${verdict}')
    .join(verdict)
    .split('${cross_zone}')
    .join(crossZone)
    .split('${t_of_df}')
    .join(tOfDf)
    .split('${t975}')
    .join(t975)
    .split('${database}')
    .join(database);
}

/**
 * The t975 fragment's (df, t975) pairs as one-row SELECTs joined by UNION ALL, the same table for
 * Timestream, whose FROM takes no VALUES list (tests/unit/test_dataset_sql.py does the same to run it).
 */
export function t975Selects(values: string): string {
  const pairs = [...values.matchAll(/\((\d+), ([0-9.]+)\)/g)];
  if (pairs.length === 0) throw new Error('sql/common/t975.sql: no (df, t975) pairs found');
  return pairs.map(([, df, t]) => `SELECT ${df} AS df, CAST(${t} AS DOUBLE) AS t975`).join(' UNION ALL ');
}

/** Where the data lives: the Athena store construct, or the Timestream database name. */
export type DashboardStore =
  | { readonly kind: 'athena'; readonly athena: AthenaStore }
  | { readonly kind: 'timestream'; readonly timestreamDatabase: string };

export interface DashboardsProps {
  /** QuickSight user or group ARN that owns the data source, datasets and dashboard. */
  readonly principalArn: string;
  readonly store: DashboardStore;
  /** Prefix of QuickSight resource ids (unique per account and region). Default: the stack name. */
  readonly idPrefix?: string;
}

const DATA_SOURCE_ACTIONS = [
  'quicksight:DescribeDataSource',
  'quicksight:DescribeDataSourcePermissions',
  'quicksight:PassDataSource',
  'quicksight:UpdateDataSource',
  'quicksight:DeleteDataSource',
  'quicksight:UpdateDataSourcePermissions',
];
const DATASET_ACTIONS = [
  'quicksight:DescribeDataSet',
  'quicksight:DescribeDataSetPermissions',
  'quicksight:PassDataSet',
  'quicksight:DescribeIngestion',
  'quicksight:ListIngestions',
  'quicksight:UpdateDataSet',
  'quicksight:DeleteDataSet',
  'quicksight:CreateIngestion',
  'quicksight:CancelIngestion',
  'quicksight:UpdateDataSetPermissions',
];
const DASHBOARD_ACTIONS = [
  'quicksight:DescribeDashboard',
  'quicksight:ListDashboardVersions',
  'quicksight:UpdateDashboardPermissions',
  'quicksight:QueryDashboard',
  'quicksight:UpdateDashboard',
  'quicksight:DeleteDashboard',
  'quicksight:DescribeDashboardPermissions',
  'quicksight:UpdateDashboardPublishedVersion',
];

export class Dashboards extends Construct {
  public readonly dataSource: quicksight.CfnDataSource;
  public readonly dataSets: Record<DatasetName, quicksight.CfnDataSet>;
  public readonly dashboard: quicksight.CfnDashboard;
  /** The role QuickSight assumes to query Athena (athena store only). */
  public readonly athenaRole?: iam.Role;

  constructor(scope: Construct, id: string, props: DashboardsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const prefix = props.idPrefix ?? stack.stackName;
    const awsAccountId = stack.account;
    const owner = (actions: string[]): Array<{ principal: string; actions: string[] }> => [
      { principal: props.principalArn, actions },
    ];

    let dataSourceParameters: quicksight.CfnDataSource.DataSourceParametersProperty | undefined;
    let database: string;
    if (props.store.kind === 'athena') {
      // A role of its own, so QuickSight's account-wide service role needs no access to this bucket.
      this.athenaRole = new iam.Role(this, 'AthenaRole', {
        assumedBy: new iam.ServicePrincipal('quicksight.amazonaws.com'),
        description: 'QuickSight queries the benchfleet results tables through the Athena workgroup',
      });
      props.store.athena.grantRead(this.athenaRole);
      dataSourceParameters = {
        athenaParameters: { workGroup: props.store.athena.workgroupName, roleArn: this.athenaRole.roleArn },
      };
      database = props.store.athena.databaseName;
    } else {
      // TIMESTREAM takes no parameters: QuickSight's service role reads Timestream (cdk/README.md).
      database = props.store.timestreamDatabase;
    }

    this.dataSource = new quicksight.CfnDataSource(this, 'DataSource', {
      awsAccountId,
      dataSourceId: `${prefix}-results`,
      name: `benchfleet results (${props.store.kind})`,
      type: props.store.kind === 'athena' ? 'ATHENA' : 'TIMESTREAM',
      ...(dataSourceParameters ? { dataSourceParameters } : {}),
      permissions: owner(DATA_SOURCE_ACTIONS),
    });

    const specs = datasetSpecs();
    const dataSets: Partial<Record<DatasetName, quicksight.CfnDataSet>> = {};
    for (const [name, spec] of Object.entries(specs) as Array<[DatasetName, DatasetSpec]>) {
      dataSets[name] = new quicksight.CfnDataSet(this, `DataSet-${name}`, {
        awsAccountId,
        dataSetId: `${prefix}-${name.replace(/_/g, '-')}`,
        name: `benchfleet ${spec.title}`,
        // Direct query: dashboards show a run as soon as collect has written it, no SPICE capacity.
        importMode: 'DIRECT_QUERY',
        physicalTableMap: {
          // Map keys allow no underscores.
          [name.replace(/_/g, '-')]: {
            customSql: {
              dataSourceArn: this.dataSource.attrArn,
              name,
              sqlQuery: datasetSql(props.store.kind, name, database),
              columns: spec.columns.map(([n, t]) => ({ name: n, type: t })),
            },
          },
        },
        permissions: owner(DATASET_ACTIONS),
      });
    }
    this.dataSets = dataSets as Record<DatasetName, quicksight.CfnDataSet>;

    this.dashboard = new quicksight.CfnDashboard(this, 'Dashboard', {
      awsAccountId,
      dashboardId: `${prefix}-results`,
      name: 'benchfleet results',
      permissions: owner(DASHBOARD_ACTIONS),
      definition: dashboardDefinition(this.dataSets),
      dashboardPublishOptions: {
        adHocFilteringOption: { availabilityStatus: 'ENABLED' },
        exportToCsvOption: { availabilityStatus: 'ENABLED' },
        sheetControlsOption: { visibilityState: 'EXPANDED' },
      },
      versionDescription: 'Defined in cdk/lib/dashboards.ts',
    });
  }
}

// ---- the dashboard definition ------------------------------------------------------------------

type Definition = quicksight.CfnDashboard.DashboardVersionDefinitionProperty;
type Visual = quicksight.CfnDashboard.VisualProperty;
type Aggregation = 'AVERAGE' | 'MAX' | 'MIN' | 'SUM';

const col = (
  dataSetIdentifier: DatasetName,
  columnName: string,
): quicksight.CfnDashboard.ColumnIdentifierProperty => ({ dataSetIdentifier, columnName });

function numberDim(fieldId: string, ds: DatasetName, column: string): quicksight.CfnDashboard.DimensionFieldProperty {
  return { numericalDimensionField: { fieldId, column: col(ds, column) } };
}
function categoryDim(fieldId: string, ds: DatasetName, column: string): quicksight.CfnDashboard.DimensionFieldProperty {
  return { categoricalDimensionField: { fieldId, column: col(ds, column) } };
}
function timeDim(fieldId: string, ds: DatasetName, column: string): quicksight.CfnDashboard.DimensionFieldProperty {
  return { dateDimensionField: { fieldId, column: col(ds, column), dateGranularity: 'SECOND' } };
}
function measure(
  fieldId: string,
  ds: DatasetName,
  column: string,
  aggregation: Aggregation,
): quicksight.CfnDashboard.MeasureFieldProperty {
  return {
    numericalMeasureField: {
      fieldId,
      column: col(ds, column),
      aggregationFunction: { simpleNumericalAggregation: aggregation },
    },
  };
}
const title = (text: string): quicksight.CfnDashboard.VisualTitleLabelOptionsProperty => ({
  visibility: 'VISIBLE',
  formatText: { plainText: text },
});
const subtitle = (text: string): quicksight.CfnDashboard.VisualSubtitleLabelOptionsProperty => ({
  visibility: 'VISIBLE',
  formatText: { plainText: text },
});

function lineChart(
  visualId: string,
  text: string,
  note: string,
  x: quicksight.CfnDashboard.DimensionFieldProperty,
  value: quicksight.CfnDashboard.MeasureFieldProperty,
  color: quicksight.CfnDashboard.DimensionFieldProperty,
  panels?: quicksight.CfnDashboard.DimensionFieldProperty,
): Visual {
  return {
    lineChartVisual: {
      visualId,
      title: title(text),
      subtitle: subtitle(note),
      chartConfiguration: {
        fieldWells: {
          lineChartAggregatedFieldWells: {
            category: [x],
            values: [value],
            colors: [color],
            // One panel per value of a field (a pricing model), so two models never share a line.
            ...(panels ? { smallMultiples: [panels] } : {}),
          },
        },
        type: 'LINE',
        legend: { visibility: 'VISIBLE' },
      },
    },
  };
}

function barChart(
  visualId: string,
  text: string,
  note: string,
  x: quicksight.CfnDashboard.DimensionFieldProperty,
  value: quicksight.CfnDashboard.MeasureFieldProperty,
  color?: quicksight.CfnDashboard.DimensionFieldProperty,
): Visual {
  return {
    barChartVisual: {
      visualId,
      title: title(text),
      subtitle: subtitle(note),
      chartConfiguration: {
        fieldWells: {
          barChartAggregatedFieldWells: { category: [x], values: [value], ...(color ? { colors: [color] } : {}) },
        },
        orientation: 'VERTICAL',
        barsArrangement: 'CLUSTERED',
        legend: { visibility: color ? 'VISIBLE' : 'HIDDEN' },
      },
    },
  };
}

/** One measure per column of a table whose rows are already one figure each (MAX of one value). */
function maxima(prefix: string, ds: DatasetName, columns: string[]): quicksight.CfnDashboard.MeasureFieldProperty[] {
  return columns.map((c) => measure(`${prefix}-${c.replace(/_/g, '-')}`, ds, c, 'MAX'));
}

function table(
  visualId: string,
  text: string,
  note: string,
  groupBy: quicksight.CfnDashboard.DimensionFieldProperty[],
  values: quicksight.CfnDashboard.MeasureFieldProperty[],
): Visual {
  return {
    tableVisual: {
      visualId,
      title: title(text),
      subtitle: subtitle(note),
      chartConfiguration: { fieldWells: { tableAggregatedFieldWells: { groupBy, values } } },
    },
  };
}

/** The counter the status chart shows first: flow-control pause (a cluster's first question). */
export const STATUS_DEFAULT_COUNTER = 'wsrep_flow_control_paused_ns';

/** Visual ids by sheet: the filters below are scoped with them. */
export const SHEETS = {
  sweep: {
    sheetId: 'sweep',
    name: 'Thread sweep',
    visuals: ['tps-vs-threads', 'latency-vs-threads', 'relative', 'relative-verdicts'],
  },
  seconds: {
    sheetId: 'seconds',
    name: 'Per second',
    visuals: [
      'tps-per-second',
      'steal-per-second',
      'disk-reads-per-second',
      'disk-writes-per-second',
      'disk-await-per-second',
      'insert-rate-vs-rows',
      'status-per-second',
    ],
  },
  cloud: { sheetId: 'cloud', name: 'Cloud metrics', visuals: ['aurora-write-latency'] },
  cost: {
    sheetId: 'cost',
    name: 'Cost and scaling',
    visuals: ['cost-per-1000-tps', 'cost-per-1000-tps-table', 'speedup-vs-threads', 'speedup-table'],
  },
} as const;

/** The pricing models the cost view shows unless a reader picks others (seed 002's pair). */
export const HEADLINE_PRICING_MODELS = ['on_demand', 'reserved_1y_all_upfront'];

/** Metrics shown on the write-latency view (collect converts RDS WriteLatency to ms). */
export const WRITE_LATENCY_METRICS = ['WriteLatency', 'CommitLatency', 'DMLLatency'];

/** One line per series (target and variant) of a samples column against elapsed seconds (or another column). */
function perSecond(n: number, id: string, title: string, subtitle: string, column: string, x = 'elapsed_s'): Visual {
  return lineChart(
    id,
    title,
    subtitle,
    numberDim(`sec-x-${n}`, 'samples', x),
    measure(`sec-${id}`, 'samples', column, 'AVERAGE'),
    categoryDim(`sec-target-${n}`, 'samples', 'series'),
  );
}

export function dashboardDefinition(dataSets: Record<DatasetName, quicksight.CfnDataSet>): Definition {
  const sweep: Visual[] = [
    lineChart(
      'tps-vs-threads',
      'Throughput vs threads',
      "sysbench's step tps, mean across repetitions",
      numberDim('sweep-threads-1', 'step_results', 'threads'),
      measure('sweep-tps', 'step_results', 'tps_mean', 'AVERAGE'),
      categoryDim('sweep-target-1', 'step_results', 'series'),
    ),
    lineChart(
      'latency-vs-threads',
      'p95 latency vs threads (ms)',
      "sysbench's step percentile, worst repetition (percentiles are never averaged)",
      numberDim('sweep-threads-2', 'step_results', 'threads'),
      measure('sweep-latency', 'step_results', 'latency_pct_ms_max', 'MAX'),
      categoryDim('sweep-target-2', 'step_results', 'series'),
    ),
    barChart(
      'relative',
      'Throughput relative to the baseline (%): read each bar with its interval and verdict below',
      "The verdict's difference at the same threads (paired: geometric mean of per-repetition ratios). " +
        "A bar alone is not a finding: 'inconclusive' and 'too few repetitions' in the table below are not",
      numberDim('sweep-threads-3', 'step_results', 'threads'),
      measure('sweep-relative', 'step_results', 'relative_pct', 'AVERAGE'),
      categoryDim('sweep-target-3', 'step_results', 'series'),
    ),
    // QuickSight draws no whiskers on bars: the interval, the verdict's words and the caveats are this
    // table's columns (the same figures as `benchfleet results`, tests/unit/test_dataset_sql.py).
    table(
      'relative-verdicts',
      'Verdicts: the difference to the baseline with its 95% interval, and caveats',
      'faster/slower: the interval excludes 0; equivalent: inside the margin; inconclusive: reaches beyond it; ' +
        'too few repetitions: below 3 on a side. Caveats: the sides differed in steal, iowait or fingerprint',
      [
        categoryDim('sweep-v-series', 'step_results', 'series'),
        numberDim('sweep-v-threads', 'step_results', 'threads'),
        categoryDim('sweep-v-verdict', 'step_results', 'verdict'),
        categoryDim('sweep-v-design', 'step_results', 'design'),
        categoryDim('sweep-v-caveats', 'step_results', 'caveats'),
      ],
      maxima('sweep-v', 'step_results', ['relative_pct', 'relative_ci_low_pct', 'relative_ci_high_pct', 'margin_pct']),
    ),
  ];
  const seconds: Visual[] = [
    lineChart(
      'tps-per-second',
      'Throughput per second',
      'Seconds from the start of each target x repetition; warm-up included',
      numberDim('sec-elapsed-1', 'samples', 'elapsed_s'),
      measure('sec-tps', 'samples', 'tps', 'AVERAGE'),
      categoryDim('sec-target-1', 'samples', 'series'),
    ),
    lineChart(
      'steal-per-second',
      'CPU steal per second (%)',
      'From /proc/stat on the target, the same seconds as the throughput above',
      numberDim('sec-elapsed-2', 'samples', 'elapsed_s'),
      measure('sec-steal', 'samples', 'cpu_steal_pct', 'AVERAGE'),
      categoryDim('sec-target-2', 'samples', 'series'),
    ),
    // The data directory's disk (/proc/diskstats on the host that holds it: EC2 targets), the same seconds.
    perSecond(
      3,
      'disk-reads-per-second',
      'Disk reads per second (data directory)',
      'Completed reads of the device the data directory is on (the array on striped volumes); MiB/s in the dataset',
      'disk_reads_per_s',
    ),
    perSecond(
      4,
      'disk-writes-per-second',
      'Disk writes per second (data directory)',
      'Completed writes of the same device; MiB/s in the dataset',
      'disk_writes_per_s',
    ),
    perSecond(
      5,
      'disk-await-per-second',
      'Disk await (ms)',
      'Mean time of the requests completed each second, queue and service (iostat await)',
      'disk_await_ms',
    ),
    perSecond(
      6,
      'insert-rate-vs-rows',
      'Insert rate vs rows in the table',
      "iiBench's view (seed 001): insert workloads only, the rows counted by the agent",
      'tps',
      'rows_in_table',
    ),
    lineChart(
      'status-per-second',
      'Server status per second (pick the counter)',
      'SHOW GLOBAL STATUS of every server, cluster node (n1...) and proxy backend: running totals per second, ' +
        'levels as they are, flow-control pause as % of the time',
      numberDim('sec-elapsed-3', 'status_samples', 'elapsed_s'),
      measure('sec-status', 'status_samples', 'reading', 'AVERAGE'),
      categoryDim('sec-source', 'status_samples', 'source'),
    ),
  ];
  const cloud: Visual[] = [
    lineChart(
      'aurora-write-latency',
      'Aurora / RDS write latency over time (ms)',
      'CloudWatch CommitLatency, DMLLatency and WriteLatency of each writer',
      timeDim('cloud-time', 'cloud_metrics', 'time'),
      measure('cloud-value', 'cloud_metrics', 'value', 'AVERAGE'),
      categoryDim('cloud-metric', 'cloud_metrics', 'metric'),
    ),
  ];
  const cost: Visual[] = [
    lineChart(
      'cost-per-1000-tps',
      'Cost per 1000 TPS vs threads (USD per hour), by target and pricing model',
      "The database's price per hour (instance, storage, IOPS, throughput; no client host; a cluster: every node, " +
        "its proxy's own host and its cross-zone traffic at that thread count) / (mean tps / 1000). " +
        'Pick the models with the control; the 95% interval is in the table below',
      numberDim('cost-threads', 'target_costs', 'threads'),
      measure('cost-value', 'target_costs', 'cost_per_1000_tps', 'MAX'),
      categoryDim('cost-target', 'target_costs', 'target_id'),
      categoryDim('cost-model', 'target_costs', 'pricing_model'),
    ),
    table(
      'cost-per-1000-tps-table',
      'Cost per 1000 TPS with its 95% interval',
      'The interval of the mean tps carried through the price (a constant); prices as recorded with the run; ' +
        "a cluster's price counts the GB per hour its nodes sent across zones ($0.01 per GB each way)",
      [
        categoryDim('cost-t-target', 'target_costs', 'target_id'),
        numberDim('cost-t-threads', 'target_costs', 'threads'),
        categoryDim('cost-t-model', 'target_costs', 'pricing_model'),
      ],
      maxima('cost-t', 'target_costs', [
        'price_per_hour',
        'cost_per_1000_tps',
        'cost_ci_low',
        'cost_ci_high',
        'cross_zone_gb_per_hour',
        'cross_zone_usd_per_hour',
      ]),
    ),
    lineChart(
      'speedup-vs-threads',
      'Speedup by size vs threads',
      'Mean tps / the smallest size of the same family and configuration at the same threads',
      numberDim('speedup-threads', 'speedup', 'threads'),
      measure('speedup-value', 'speedup', 'speedup', 'MAX'),
      categoryDim('speedup-target', 'speedup', 'target_id'),
      categoryDim('speedup-group', 'speedup', 'size_group'),
    ),
    table(
      'speedup-table',
      'Speedup with its 95% interval, and efficiency per doubling of vCPUs',
      'Welch interval on the log ratio; per doubling = speedup ^ (1 / doublings of vCPUs), 2.0 is linear',
      [
        categoryDim('speedup-t-group', 'speedup', 'size_group'),
        categoryDim('speedup-t-target', 'speedup', 'target_id'),
        numberDim('speedup-t-threads', 'speedup', 'threads'),
      ],
      maxima('speedup-t', 'speedup', [
        'speedup',
        'speedup_ci_low',
        'speedup_ci_high',
        'per_doubling',
        'per_doubling_ci_low',
        'per_doubling_ci_high',
      ]),
    ),
  ];

  const allSheets = Object.values(SHEETS).map((s) => ({ sheetId: s.sheetId, scope: 'ALL_VISUALS' }));
  return {
    dataSetIdentifierDeclarations: (Object.keys(dataSets) as DatasetName[]).map((identifier) => ({
      identifier,
      dataSetArn: dataSets[identifier].attrArn,
    })),
    sheets: [
      { ...sheetOf(SHEETS.sweep), visuals: sweep },
      {
        ...sheetOf(SHEETS.seconds, [
          {
            dropdown: {
              filterControlId: 'seconds-status-counter',
              sourceFilterId: 'status-counter',
              title: 'Status counter',
              type: 'SINGLE_SELECT',
            },
          },
        ]),
        visuals: seconds,
      },
      { ...sheetOf(SHEETS.cloud), visuals: cloud },
      {
        ...sheetOf(SHEETS.cost, [
          {
            dropdown: {
              filterControlId: 'cost-pricing-model',
              sourceFilterId: 'pricing-model',
              title: 'Pricing model',
              type: 'MULTI_SELECT',
            },
          },
        ]),
        visuals: cost,
      },
    ],
    filterGroups: [
      {
        // One run picker for every sheet: run_name is a column of every dataset.
        filterGroupId: 'run',
        crossDataset: 'ALL_DATASETS',
        status: 'ENABLED',
        scopeConfiguration: { selectedSheets: { sheetVisualScopingConfigurations: allSheets } },
        filters: [
          {
            categoryFilter: {
              filterId: 'run-name',
              column: col('step_results', 'run_name'),
              configuration: {
                filterListConfiguration: { matchOperator: 'CONTAINS', selectAllOptions: 'FILTER_ALL_VALUES' },
              },
            },
          },
        ],
      },
      {
        // One counter at a time (their scales differ); flow-control pause until the reader picks another.
        filterGroupId: 'status-counter',
        crossDataset: 'SINGLE_DATASET',
        status: 'ENABLED',
        scopeConfiguration: {
          selectedSheets: {
            sheetVisualScopingConfigurations: [
              { sheetId: SHEETS.seconds.sheetId, scope: 'SELECTED_VISUALS', visualIds: ['status-per-second'] },
            ],
          },
        },
        filters: [
          {
            categoryFilter: {
              filterId: 'status-counter',
              column: col('status_samples', 'counter'),
              configuration: {
                filterListConfiguration: { matchOperator: 'CONTAINS', categoryValues: [STATUS_DEFAULT_COUNTER] },
              },
            },
          },
        ],
      },
      {
        // The cost view shows on-demand and 1-year reserved (all upfront) unless the reader picks others.
        filterGroupId: 'pricing-models',
        crossDataset: 'SINGLE_DATASET',
        status: 'ENABLED',
        scopeConfiguration: {
          selectedSheets: {
            sheetVisualScopingConfigurations: [
              {
                sheetId: SHEETS.cost.sheetId,
                scope: 'SELECTED_VISUALS',
                visualIds: ['cost-per-1000-tps', 'cost-per-1000-tps-table'],
              },
            ],
          },
        },
        filters: [
          {
            categoryFilter: {
              filterId: 'pricing-model',
              column: col('target_costs', 'pricing_model'),
              configuration: {
                filterListConfiguration: { matchOperator: 'CONTAINS', categoryValues: HEADLINE_PRICING_MODELS },
              },
            },
          },
        ],
      },
      {
        filterGroupId: 'write-latency-metrics',
        crossDataset: 'SINGLE_DATASET',
        status: 'ENABLED',
        scopeConfiguration: {
          selectedSheets: {
            sheetVisualScopingConfigurations: [
              { sheetId: SHEETS.cloud.sheetId, scope: 'SELECTED_VISUALS', visualIds: ['aurora-write-latency'] },
            ],
          },
        },
        filters: [
          {
            categoryFilter: {
              filterId: 'write-latency-metric',
              column: col('cloud_metrics', 'metric'),
              configuration: {
                filterListConfiguration: { matchOperator: 'CONTAINS', categoryValues: WRITE_LATENCY_METRICS },
              },
            },
          },
        ],
      },
    ],
  };
}

function sheetOf(
  sheet: (typeof SHEETS)[keyof typeof SHEETS],
  more: quicksight.CfnDashboard.FilterControlProperty[] = [],
): quicksight.CfnDashboard.SheetDefinitionProperty {
  return {
    sheetId: sheet.sheetId,
    name: sheet.name,
    filterControls: [
      ...more,
      {
        dropdown: {
          filterControlId: `${sheet.sheetId}-run`,
          sourceFilterId: 'run-name',
          title: 'Run',
          type: 'MULTI_SELECT',
        },
      },
    ],
  };
}
