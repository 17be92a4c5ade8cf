/**
 * The four store x dashboards variants: resultsStore timestream | athena, with and without the
 * quicksightPrincipalArn context key. Each is built once; every variant must be cdk-nag clean and
 * cfn-lint clean (.venv/bin/cfn-lint on the synthesized template).
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Match } from 'aws-cdk-lib/assertions';
import { datasetSpecs, datasetSql, SHEETS, t975Selects } from '../../cdk/lib/dashboards';
import { glueTables } from '../../cdk/lib/athena-store';
import { actionsOf, buildStack, Built, nagFindings, policyStatements, REPO_ROOT, resourcesOf } from './helpers';

const PRINCIPAL = 'arn:aws:quicksight:us-east-1:123456789012:user/default/benchfleet-admin';
const VARIANTS = {
  'timestream-dashboards': { resultsStore: 'timestream', quicksightPrincipalArn: PRINCIPAL },
  'athena-dashboards': { resultsStore: 'athena', quicksightPrincipalArn: PRINCIPAL },
  'timestream-plain': { resultsStore: 'timestream' },
  'athena-plain': { resultsStore: 'athena' },
} as const;
type Variant = keyof typeof VARIANTS;

const built = {} as Record<Variant, Built>;
beforeAll(() => {
  for (const [name, context] of Object.entries(VARIANTS) as Array<[Variant, Record<string, string>]>) {
    built[name] = buildStack(context);
  }
});

const VARIANT_NAMES = Object.keys(VARIANTS) as Variant[];
const DATASETS = Object.keys(datasetSpecs());

describe.each(VARIANT_NAMES)('%s', (variant) => {
  test('cdk-nag AwsSolutions: no unsuppressed errors or warnings', () => {
    expect(nagFindings(built[variant].stack)).toEqual([]);
  });
});

describe('without quicksightPrincipalArn', () => {
  test.each(['timestream-plain', 'athena-plain'] as Variant[])('%s has no QuickSight resources', (variant) => {
    const resources = built[variant].template.toJSON().Resources as Record<string, { Type: string }>;
    expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::QuickSight::'))).toEqual([]);
  });
});

describe.each([
  ['timestream-dashboards', 'TIMESTREAM', 'timestream'],
  ['athena-dashboards', 'ATHENA', 'athena'],
] as Array<[Variant, string, 'timestream' | 'athena']>)('%s', (variant, sourceType, dialect) => {
  test(`one ${sourceType} data source owned by the principal`, () => {
    const sources = resourcesOf(built[variant].template, 'AWS::QuickSight::DataSource');
    expect(sources).toHaveLength(1);
    const [, source] = sources[0];
    expect(source.Properties.Type).toBe(sourceType);
    expect(source.Properties.Permissions[0].Principal).toBe(PRINCIPAL);
    if (sourceType === 'ATHENA') {
      const athena = source.Properties.DataSourceParameters.AthenaParameters;
      expect(athena.WorkGroup).toBe('Benchfleet-results');
      expect(athena.RoleArn['Fn::GetAtt'][0]).toMatch(/^DashboardsAthenaRole/);
    } else {
      expect(source.Properties.DataSourceParameters).toBeUndefined();
    }
  });

  test('one direct-query dataset per SQL file, with the dialect SQL and declared columns', () => {
    const sets = resourcesOf(built[variant].template, 'AWS::QuickSight::DataSet');
    expect(sets).toHaveLength(DATASETS.length);
    const specs = datasetSpecs();
    for (const [, set] of sets) {
      expect(set.Properties.ImportMode).toBe('DIRECT_QUERY');
      const [key] = Object.keys(set.Properties.PhysicalTableMap);
      const sql = set.Properties.PhysicalTableMap[key].CustomSql;
      const name = sql.Name as keyof typeof specs;
      expect(sql.Columns.map((c: { Name: string }) => c.Name)).toEqual(specs[name].columns.map(([c]) => c));
      // The query is the file minus comments, the database substituted (a token: Fn::Join or a Ref).
      const text = JSON.stringify(sql.SqlQuery);
      const firstLine = datasetSql(dialect, name, 'DB').split('\n').find((l) => !l.includes('DB'));
      expect(text).toContain(JSON.stringify(firstLine).slice(1, -1));
      expect(text).not.toContain('${database}');
      expect(text).not.toContain('${t975}');
      expect(text).not.toContain('-- ');
    }
  });

  test('a dashboard with the report views on its sheets (cost and scaling on their own)', () => {
    const dashboards = resourcesOf(built[variant].template, 'AWS::QuickSight::Dashboard');
    expect(dashboards).toHaveLength(1);
    const definition = dashboards[0][1].Properties.Definition;
    expect(definition.DataSetIdentifierDeclarations.map((d: { Identifier: string }) => d.Identifier).sort()).toEqual(
      [...DATASETS].sort(),
    );
    const visualIds = definition.Sheets.flatMap((sheet: { Visuals: Array<Record<string, { VisualId: string }>> }) =>
      sheet.Visuals.map((v) => Object.values(v)[0].VisualId),
    );
    expect(visualIds.sort()).toEqual(Object.values(SHEETS).flatMap((s) => [...s.visuals]).sort());
    expect(definition.Sheets.map((s: { SheetId: string }) => s.SheetId)).toEqual(Object.values(SHEETS).map((s) => s.sheetId));
    expect(dashboards[0][1].Properties.Permissions[0].Principal).toBe(PRINCIPAL);
  });
});

describe('step results on Timestream', () => {
  test('gets the t table as one-row SELECTs (no VALUES in its FROM), every pair of sql/common/t975.sql', () => {
    const sql = datasetSql('timestream', 'step_results', 'DB');
    expect(sql).not.toMatch(/\bVALUES\b/);
    expect(sql).not.toContain('${t');
    const values = datasetSql('athena', 'step_results', 'DB').match(/\((\d+), (\d+\.\d+)\)/g) ?? [];
    expect(values).toHaveLength(30);
    for (const pair of values) {
      const [df, t] = pair.slice(1, -1).split(', ');
      expect(sql).toContain(`SELECT ${df} AS df, CAST(${t} AS DOUBLE) AS t975`);
    }
    expect(() => t975Selects('SELECT 1')).toThrow(/no \(df, t975\) pairs/);
    // The interval and verdict columns are computed, not null placeholders.
    expect(sql).toContain('AS relative_ci_low_pct');
    expect(sql).not.toContain('CAST(NULL AS DOUBLE) AS relative_ci_low_pct');
  });
});

describe('athena store', () => {
  test('Glue database and one partitioned JSON table per record type', () => {
    const template = built['athena-plain'].template;
    template.resourceCountIs('AWS::Glue::Database', 1);
    const tables = resourcesOf(template, 'AWS::Glue::Table');
    const expected = glueTables();
    expect(tables.map(([, t]) => t.Properties.TableInput.Name).sort()).toEqual(Object.keys(expected).sort());
    for (const [, table] of tables) {
      const input = table.Properties.TableInput;
      expect(input.PartitionKeys).toEqual([{ Name: 'run_id', Type: 'string' }]);
      expect(input.StorageDescriptor.SerdeInfo.SerializationLibrary).toBe('org.openx.data.jsonserde.JsonSerDe');
      expect(input.StorageDescriptor.Columns).toEqual(
        expected[input.Name as keyof typeof expected].map(([Name, Type]) => ({ Name, Type })),
      );
      expect(JSON.stringify(input.StorageDescriptor.Location)).toContain(`/tables/${input.Name}/`);
    }
    expect(resourcesOf(built['timestream-plain'].template, 'AWS::Glue::Table')).toHaveLength(0);
  });

  test('workgroup enforces an encrypted result location in the results bucket', () => {
    const template = built['athena-plain'].template;
    template.hasResourceProperties('AWS::Athena::WorkGroup', {
      WorkGroupConfiguration: {
        EnforceWorkGroupConfiguration: true,
        ResultConfiguration: {
          EncryptionConfiguration: { EncryptionOption: 'SSE_S3' },
          OutputLocation: Match.objectLike({ 'Fn::Join': Match.anyValue() }),
        },
      },
    });
  });

  test('Lambdas get RESULTS_STORE=athena, GLUE_DATABASE and ATHENA_WORKGROUP', () => {
    const functions = resourcesOf(built['athena-plain'].template, 'AWS::Lambda::Function').filter(
      ([, f]) => f.Properties.Environment?.Variables?.RESULTS_STORE !== undefined,
    );
    expect(functions.length).toBeGreaterThan(0);
    for (const [, fn] of functions) {
      const vars = fn.Properties.Environment.Variables;
      expect(vars.RESULTS_STORE).toBe('athena');
      expect(vars.GLUE_DATABASE).toBe('benchfleet_results');
      expect(vars.ATHENA_WORKGROUP).toBe('Benchfleet-results');
    }
  });

  test('collect may put under tables/ and register partitions; readers may query the workgroup', () => {
    const statements = policyStatements(built['athena-plain'].template).map((s) => s.statement);
    const writes = statements.filter((s) => actionsOf(s).includes('glue:BatchCreatePartition'));
    expect(writes.length).toBeGreaterThan(0);
    const puts = statements.filter(
      (s) => actionsOf(s).includes('s3:PutObject') && JSON.stringify(s.Resource).includes('/tables/*'),
    );
    expect(puts.length).toBeGreaterThan(0);
    const queries = statements.filter((s) => actionsOf(s).includes('athena:StartQueryExecution'));
    expect(queries.length).toBeGreaterThan(0);
    for (const s of [...writes, ...queries]) expect(JSON.stringify(s.Resource)).not.toBe('"*"');
  });
});

/** cfn-lint findings of each template, as "rule message" lines (file and position dropped). */
function cfnLint(templates: Record<string, object>): Record<string, string[]> {
  const cfnLintBin = path.join(REPO_ROOT, '.venv', 'bin', 'cfn-lint');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'benchfleet-variants-'));
  try {
    const files: Record<string, string> = {};
    for (const [name, template] of Object.entries(templates)) {
      files[name] = path.join(dir, `${name}.template.json`);
      fs.writeFileSync(files[name], JSON.stringify(template, null, 1));
    }
    let output = '';
    try {
      output = execFileSync(cfnLintBin, ['--format', 'parseable', ...Object.values(files)], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (error) {
      output = (error as { stdout?: string }).stdout ?? String(error);
    }
    const findings: Record<string, string[]> = Object.fromEntries(Object.keys(files).map((n) => [n, []]));
    for (const line of output.split('\n').filter((l) => l.trim() !== '')) {
      const name = Object.keys(files).find((n) => line.startsWith(files[n]));
      const rest = name === undefined ? line : line.slice(files[name].length).split(':').slice(5).join(':');
      findings[name ?? 'unattributed'] = [...(findings[name ?? 'unattributed'] ?? []), rest];
    }
    return findings;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('cfn-lint', () => {
  // One cfn-lint run over the four templates (it is the slow part).
  let findings: Record<string, string[]>;
  beforeAll(() => {
    findings = cfnLint(Object.fromEntries(VARIANT_NAMES.map((n) => [n, built[n].template.toJSON()])));
  });

  test('nothing on the resources of the athena store or the dashboards', () => {
    const mine = Object.values(findings)
      .flat()
      .filter((f) => /\b(Dashboards|ResultsAthena)[A-Za-z0-9]*\b/.test(f));
    expect(mine).toEqual([]);
  });

  test.each(VARIANT_NAMES)('%s adds no finding to those of the default stack', (variant) => {
    // The default stack's own findings are the stack test's concern (npm test runs cfn-lint on it).
    const baseline = new Set(findings['timestream-plain']);
    expect(findings[variant].filter((f) => !baseline.has(f))).toEqual([]);
    expect(findings.unattributed ?? []).toEqual([]);
  });
});
