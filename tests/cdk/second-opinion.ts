/**
 * A second opinion on tests/cdk/iam-eval.ts: the same synthesized statements and the same requests,
 * decided by an independent IAM simulator, @cloud-copilot/iam-simulate (its own policy parser and
 * evaluation engine, and AWS's action, resource and condition-key data). It is AGPL-licensed and used
 * here as a test tool only: nothing of it ships in the app.
 *
 * The evaluator's tests record every decision they assert (`judge`), and one test at the end of the
 * file asks the simulator about each; any disagreement fails it, naming the request.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { Template } from 'aws-cdk-lib/assertions';
import { Decision, evaluate, PSEUDO, Request, requestContext } from './iam-eval';

type Statements = Parameters<typeof evaluate>[0];

export interface Judged {
  readonly statements: Statements;
  readonly request: Request;
  readonly decision: Decision;
}

/** Records what the evaluator decided, for the simulator to decide again. */
export class Recorder {
  private readonly seen = new Map<string, Judged>();

  public judge(statements: Statements, request: Request): Decision {
    const decision = evaluate(statements, request);
    this.seen.set(JSON.stringify([statements, request]), { statements, request, decision });
    return decision;
  }

  public get decisions(): Judged[] {
    return [...this.seen.values()];
  }
}

const SIMULATED: Record<string, Decision> = {
  Allowed: 'allow',
  ImplicitlyDenied: 'implicit-deny',
  ExplicitlyDenied: 'explicit-deny',
};

/**
 * iam-eval names what it cannot resolve `<LogicalId>` / `<LogicalId.Attr>`; the simulator wants ARNs.
 * Buckets become arn:aws:s3:::<id>, anything else its lower-cased logical id (a name).
 *
 * One spelling is translated: the simulator's copy of the Service Authorization Reference lists
 * Secrets Manager's resource-tag key with a literal placeholder (`secretsmanager:ResourceTag/tag-key`),
 * so it cannot match a concrete key; `aws:ResourceTag/<key>` is the same tag of the same secret.
 */
function concrete(template: Template, value: unknown): unknown {
  if (typeof value === 'string') {
    return value.replace(/^secretsmanager:ResourceTag\//i, 'aws:ResourceTag/').replace(/<([A-Za-z0-9]+)(\.([A-Za-z]+))?>/g, (_, id: string, _dot, attr?: string) => {
      const type = (template.toJSON().Resources?.[id] as { Type?: string } | undefined)?.Type;
      if (type === 'AWS::S3::Bucket' && attr === 'Arn') return `arn:${PSEUDO.partition}:s3:::${id.toLowerCase()}`;
      return id.toLowerCase();
    });
  }
  if (Array.isArray(value)) return value.map((v) => concrete(template, v));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [concrete(template, k) as string, concrete(template, v)]));
  }
  return value;
}

export interface Disagreement {
  readonly request: Request;
  readonly ours: Decision;
  readonly theirs: string;
}

/** The simulator's decision on every recorded request, where it differs from the evaluator's. */
export async function disagreements(template: Template, judged: readonly Judged[]): Promise<Disagreement[]> {
  const out: Disagreement[] = [];
  for (const { statements, request, decision } of judged) {
    const policy = { Version: '2012-10-17', Statement: concrete(template, statements) };
    const result = await runSimulation(
      {
        request: {
          principal: `arn:${PSEUDO.partition}:iam::${PSEUDO.account}:role/benchfleet-under-test`,
          action: request.action,
          resource: { resource: concrete(template, request.resource) as string, accountId: PSEUDO.account },
          contextVariables: concrete(template, requestContext(request)) as Record<string, string | string[]>,
        },
        identityPolicies: [{ name: 'role', policy }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    const theirs = result.resultType === 'error' ? `error: ${JSON.stringify(result.errors)}` : result.overallResult;
    if (SIMULATED[theirs] !== decision) out.push({ request, ours: decision, theirs });
  }
  return out;
}
