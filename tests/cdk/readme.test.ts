/**
 * cdk/README.md documents every context key cdk/lib/config.ts reads, and nothing it does not.
 * The key list comes from config.ts itself: readConfig() runs against a node that records each
 * tryGetContext() call, so a new key cannot be added without its README row.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Node } from 'constructs';
import { readConfig } from '../../cdk/lib/config';
import { REPO_ROOT } from './helpers';

function keysReadByConfig(): string[] {
  const keys = new Set<string>();
  const recorder = {
    tryGetContext: (key: string): unknown => {
      keys.add(key);
      return undefined;
    },
  } as unknown as Node;
  readConfig(recorder);
  return [...keys].sort();
}

/** The "## Context keys" section of cdk/README.md. */
function contextSection(): string {
  const readme = fs.readFileSync(path.join(REPO_ROOT, 'cdk', 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Context keys');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** Keys named in the first column of the section's table rows (`a`, `b` | default | meaning). */
function keysDocumented(): string[] {
  const keys = new Set<string>();
  for (const line of contextSection().split('\n')) {
    const first = /^\|([^|]+)\|/.exec(line)?.[1];
    if (first === undefined) continue;
    for (const m of first.matchAll(/`([A-Za-z][A-Za-z0-9]*)`/g)) keys.add(m[1]);
  }
  return [...keys].sort();
}

describe('cdk/README.md context keys', () => {
  const read = keysReadByConfig();

  test('config.ts reads the keys it is known to read (the recorder works)', () => {
    expect(read).toEqual(expect.arrayContaining(['stackName', 'resultsStore', 'schedules', 'sweepRegions']));
  });

  test('every key config.ts reads has a row in the table', () => {
    const documented = new Set(keysDocumented());
    expect(read.filter((k) => !documented.has(k))).toEqual([]);
  });

  test('every key in the table is read by config.ts', () => {
    const known = new Set(read);
    expect(keysDocumented().filter((k) => !known.has(k))).toEqual([]);
  });

  test('the README has the Dashboards section (QuickSight prerequisites)', () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, 'cdk', 'README.md'), 'utf8');
    expect(readme).toMatch(/\n## Dashboards\n/);
    expect(readme).toContain('One-time QuickSight prerequisites');
    expect(readme).toContain('quicksightPrincipalArn');
  });
});

