/**
 * What the Plan Lambda's estimate reads from the deployment: the definition it walks to count
 * state transitions (shipped in the asset, the same states the state machine runs), the Lambda
 * sizes its GB-s prices assume (workloads/pricing/control-plane.json), and the per-region caps.
 */
import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT } from '../../cdk/lib/naming';
import { buildStack, Built, resourcesOf } from './helpers';

function functions(built: Built): Array<[string, Record<string, any>]> {
  return resourcesOf(built.template, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.Runtime === 'python3.13');
}

function handlerOf(fn: Record<string, any>): string {
  return String(fn.Properties.Handler).replace(/^handlers\./, '').replace(/\.handler$/, '');
}

describe('control plane estimate inputs', () => {
  let built: Built;
  beforeAll(() => {
    built = buildStack();
  });

  test('the asset carries the definition the state machine runs, where BENCHFLEET_STATEMACHINES says', () => {
    const fns = functions(built);
    const plan = fns.find(([, f]) => handlerOf(f) === 'plan');
    expect(plan).toBeDefined();
    const env = plan![1].Properties.Environment.Variables;
    expect(env.BENCHFLEET_STATEMACHINES).toBe('/var/task/statemachines');
    const hash = String(plan![1].Properties.Code.S3Key).replace(/\.zip$/, '');
    const dir = path.join(built.app.outdir, `asset.${hash}`, 'statemachines');
    expect(fs.readdirSync(dir)).toEqual(['benchmark-run.asl.json']);
    const shipped = JSON.parse(fs.readFileSync(path.join(dir, 'benchmark-run.asl.json'), 'utf8'));
    const [, sm] = resourcesOf(built.template, 'AWS::StepFunctions::StateMachine')[0];
    const deployed = JSON.parse(sm.Properties.DefinitionString);
    expect(shipped.StartAt).toBe(deployed.StartAt);
    expect(shipped.States).toEqual(deployed.States);
  });

  test('the Lambda sizes the GB-s estimate assumes are the deployed ones', () => {
    const table = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'workloads/pricing/control-plane.json'), 'utf8'));
    const memory: Record<string, number> = table.lambda.memory_mib;
    const deployed = Object.fromEntries(
      functions(built)
        .map(([, f]) => [handlerOf(f), f.Properties.MemorySize as number] as const)
        .filter(([h]) => h in memory),
    );
    expect(deployed).toEqual(memory);
    expect(Object.keys(table.lambda.duration_ms).sort()).toEqual(Object.keys(memory).sort());
  });

  test('the CloudWatch agent publishes and flushes what the estimate counts', () => {
    // Each metric the agent publishes is billed per host-hour, each flush is a PutMetricData request.
    const table = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'workloads/pricing/control-plane.json'), 'utf8'));
    const params = resourcesOf(built.template, 'AWS::SSM::Parameter').filter(([, p]) =>
      String(p.Properties.Name).startsWith('AmazonCloudWatch-'),
    );
    expect(params).toHaveLength(1);
    const config = JSON.parse(params[0][1].Properties.Value);
    const collected: Record<string, { measurement: string[]; resources?: string[] }> = config.metrics.metrics_collected;
    // Without `resources`, cpu is reported for cpu-total only: one metric per measurement.
    expect(Object.values(collected).every((m) => m.resources === undefined)).toBe(true);
    const published = Object.values(collected).reduce((n, m) => n + m.measurement.length, 0);
    expect(published).toBe(table.requests.cloudwatch_agent_metrics_per_host);
    expect(config.agent.force_flush_interval).toBe(table.requests.cloudwatch_agent_flush_s);
  });

  test('per-region caps reach the Plan Lambda: defaults and context overrides', () => {
    const env = (b: Built): Record<string, string> =>
      functions(b).find(([, f]) => handlerOf(f) === 'plan')![1].Properties.Environment.Variables;
    expect(env(built)).toMatchObject({ MAX_VCPUS_PER_REGION: '32', MAX_HOSTS_PER_REGION: '20' });
    const raised = buildStack({ maxVcpusPerRegion: '256', maxHostsPerRegion: 60 });
    expect(env(raised)).toMatchObject({ MAX_VCPUS_PER_REGION: '256', MAX_HOSTS_PER_REGION: '60' });
    expect(() => buildStack({ maxVcpusPerRegion: 0 })).toThrow(/maxVcpusPerRegion/);
  });
});
