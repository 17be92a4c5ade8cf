/**
 * A small IAM policy evaluator over a synthesized template: the identity policies of one role,
 * CloudFormation intrinsics resolved, evaluated for one request the way IAM does (an explicit Deny
 * wins, then any Allow, else an implicit deny). It covers what benchfleet's policies use: Action /
 * Resource globs, String*, Arn*, Bool and Null operators, ForAllValues / ForAnyValue and IfExists,
 * and policy variables (`${ec2:SourceInstanceARN}`) in Resource and in the values of String* / Arn* conditions.
 * Anything else throws, so a policy this evaluator cannot read fails the test instead of passing it.
 *
 * Written here so that the app's own checks need no AGPL code; the maintained simulator on npm
 * (@cloud-copilot/iam-simulate, AGPL-3.0) takes every decision of ownership.test.ts again as a test
 * tool (second-opinion.ts). No role has AWS managed policies, whose documents are not in the template
 * (stack.test.ts and regions.test.ts check that).
 */
import { Template } from 'aws-cdk-lib/assertions';

export interface Pseudo {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
}

export const PSEUDO: Pseudo = { partition: 'aws', region: 'us-east-1', account: '111111111111' };

export type ContextValue = string | string[];

export interface Request {
  readonly action: string;
  readonly resource: string;
  /** Condition keys of the request (aws:RequestTag/..., aws:ResourceTag/..., aws:TagKeys, ...). */
  readonly context?: Record<string, ContextValue>;
}

export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny';

interface Statement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly NotAction?: string | string[];
  readonly Resource?: string | string[];
  readonly NotResource?: string | string[];
  readonly Condition?: Record<string, Record<string, unknown>>;
}

/** CloudFormation value -> string: pseudo parameters, Fn::Join, and `<LogicalId>` for other refs. */
export function resolve(value: unknown, pseudo: Pseudo = PSEUDO): unknown {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map((v) => resolve(v, pseudo));
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    const known: Record<string, string> = {
      'AWS::Partition': pseudo.partition,
      'AWS::Region': pseudo.region,
      'AWS::AccountId': pseudo.account,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    if (keys.length === 1 && keys[0] === 'Ref') {
      const ref = String(obj.Ref);
      return known[ref] ?? `<${ref}>`;
    }
    if (keys.length === 1 && keys[0] === 'Fn::Sub' && typeof obj['Fn::Sub'] === 'string') {
      return obj['Fn::Sub'].replace(/\$\{([^}]+)\}/g, (_, name: string) => known[name] ?? `<${name}>`);
    }
    if (keys.length === 1 && keys[0] === 'Fn::Join') {
      const [sep, parts] = obj['Fn::Join'] as [string, unknown[]];
      return (parts.map((p) => resolve(p, pseudo)) as string[]).join(sep);
    }
    if (keys.length === 1 && keys[0] === 'Fn::GetAtt') {
      const [id, attr] = obj['Fn::GetAtt'] as [string, string];
      return `<${id}.${attr}>`;
    }
    if (keys.length === 1 && keys[0] === 'Fn::GetAZs') {
      // An environment-agnostic stack's zones (a new VPC's subnets): the region's first ones, as AWS lists them.
      return ['a', 'b', 'c', 'd', 'e', 'f'].map((z) => `${pseudo.region}${z}`);
    }
    if (keys.length === 1 && keys[0] === 'Fn::Select') {
      const [index, list] = obj['Fn::Select'] as [unknown, unknown];
      return (resolve(list, pseudo) as string[])[Number(resolve(index, pseudo))];
    }
    if (keys.some((k) => k.startsWith('Fn::'))) throw new Error(`cannot resolve ${JSON.stringify(value)}`);
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, resolve(v, pseudo)]));
  }
  throw new Error(`cannot resolve ${JSON.stringify(value)}`);
}

/**
 * Every statement of the template's policies attached to the one role whose logical id matches
 * `role`: its inline policies and the stack's own managed policies (CDK's OverflowPolicy<n> among them).
 */
export function roleStatements(template: Template, role: RegExp | string, pseudo: Pseudo = PSEUDO): Statement[] {
  const pattern = typeof role === 'string' ? new RegExp(`^${role}$`) : role;
  const roles = allRoles(template).filter((id) => pattern.test(id));
  if (roles.length !== 1) throw new Error(`${roles.length} roles match ${pattern}: ${roles.join(', ')}`);
  const out: Statement[] = [];
  const policies = [
    ...Object.values(template.findResources('AWS::IAM::Policy')),
    ...Object.values(template.findResources('AWS::IAM::ManagedPolicy')),
  ];
  for (const policy of policies) {
    const attached = (policy.Properties.Roles ?? []).some((r: { Ref?: string }) => r.Ref === roles[0]);
    if (!attached) continue;
    for (const st of policy.Properties.PolicyDocument.Statement) out.push(resolve(st, pseudo) as Statement);
  }
  return out;
}

/** Logical ids of every IAM role in the template. */
export function allRoles(template: Template): string[] {
  return Object.keys(template.findResources('AWS::IAM::Role'));
}

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM's wildcard match: `*` any run of characters, `?` one character. */
export function globMatch(pattern: string, value: string, caseInsensitive = false): boolean {
  const escaped = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`, caseInsensitive ? 'si' : 's').test(value);
}

function lookup(context: Record<string, ContextValue>, key: string): string[] | undefined {
  // Condition key names are case-insensitive; tag values are not.
  const found = Object.keys(context).find((k) => k.toLowerCase() === key.toLowerCase());
  return found === undefined ? undefined : list(context[found]);
}

const COMPARE: Record<string, (policy: string, actual: string) => boolean> = {
  StringEquals: (p, a) => p === a,
  StringNotEquals: (p, a) => p !== a,
  StringEqualsIgnoreCase: (p, a) => p.toLowerCase() === a.toLowerCase(),
  StringLike: (p, a) => globMatch(p, a),
  StringNotLike: (p, a) => !globMatch(p, a),
  ArnEquals: (p, a) => p === a,
  ArnLike: (p, a) => globMatch(p, a),
  ArnNotEquals: (p, a) => p !== a,
  ArnNotLike: (p, a) => !globMatch(p, a),
  Bool: (p, a) => p.toLowerCase() === a.toLowerCase(),
};
const NEGATED = new Set(['StringNotEquals', 'StringNotLike', 'ArnNotEquals', 'ArnNotLike']);

const VARIABLE = /\$\{([^}]*)\}/g;

/**
 * A condition value with its policy variables replaced from the request context, or undefined when
 * one of them is absent: IAM User Guide, "IAM policy elements: Variables and tags" — a variable
 * whose key is not in the request "is not present ... any attempt to match it fails". Defaults
 * (`${key, 'x'}`) and the special `${*}` / `${?}` / `${$}` are not used by benchfleet: they throw.
 */
function substitute(value: string, operator: string, context: Record<string, ContextValue>): string | undefined {
  if (!value.includes('${')) return value;
  if (!/^(String|Arn)/.test(operator)) throw new Error(`policy variable in a ${operator} condition: IAM ignores it`);
  if (NEGATED.has(operator)) throw new Error(`policy variable in a ${operator} condition is not supported by this evaluator`);
  let missing = false;
  const out = value.replace(VARIABLE, (_, name: string) => {
    if (!/^[A-Za-z0-9]+:[A-Za-z0-9/_-]+$/.test(name)) throw new Error(`policy variable \${${name}} is not supported by this evaluator`);
    const found = lookup(context, name);
    if (found === undefined) {
      missing = true;
      return '';
    }
    if (found.length !== 1) throw new Error(`policy variable ${name} has several values`);
    return found[0];
  });
  return missing ? undefined : out;
}

function conditionHolds(operator: string, key: string, expected: unknown, context: Record<string, ContextValue>): boolean {
  const bare = operator.replace(/^(ForAllValues|ForAnyValue):/, '').replace(/IfExists$/, '');
  const wanted = list(expected as string | string[])
    .map((v) => substitute(v, bare, context))
    .filter((v): v is string => v !== undefined);
  const actual = lookup(context, key);
  if (operator === 'Null') {
    const mustBeAbsent = wanted[0] === 'true';
    return mustBeAbsent === (actual === undefined);
  }
  let op = operator;
  let setOp: 'all' | 'any' | undefined;
  if (op.startsWith('ForAllValues:')) [setOp, op] = ['all', op.slice('ForAllValues:'.length)];
  else if (op.startsWith('ForAnyValue:')) [setOp, op] = ['any', op.slice('ForAnyValue:'.length)];
  const ifExists = op.endsWith('IfExists');
  if (ifExists) op = op.slice(0, -'IfExists'.length);
  const compare = COMPARE[op];
  if (compare === undefined) throw new Error(`operator ${operator} is not supported by this evaluator`);
  const negated = NEGATED.has(op);
  if (actual === undefined) {
    if (setOp === 'all') return true; // vacuously true
    if (setOp === 'any') return false;
    return ifExists || negated;
  }
  // A negated operator holds when no policy value matches; a positive one when any does.
  const matchesOne = (a: string): boolean =>
    negated ? wanted.every((p) => compare(p, a)) : wanted.some((p) => compare(p, a));
  if (setOp === 'all') return actual.every(matchesOne);
  if (setOp === 'any') return actual.some(matchesOne);
  if (actual.length !== 1) throw new Error(`${key} has several values: use ForAllValues/ForAnyValue`);
  return matchesOne(actual[0]);
}

function applies(st: Statement, req: Request): boolean {
  const context = req.context ?? {};
  const actionOk =
    st.Action !== undefined
      ? list(st.Action).some((a) => globMatch(a, req.action, true))
      : !list(st.NotAction).some((a) => globMatch(a, req.action, true));
  if (!actionOk) return false;
  // Policy variables in Resource are replaced from the request too; an absent one matches nothing.
  const resourceMatches = (pattern: string): boolean => {
    const concrete = substitute(pattern, 'StringLike', context);
    return concrete !== undefined && globMatch(concrete, req.resource);
  };
  const resourceOk =
    st.Resource !== undefined
      ? list(st.Resource).some(resourceMatches)
      : !list(st.NotResource).some(resourceMatches);
  if (!resourceOk) return false;
  for (const [operator, block] of Object.entries(st.Condition ?? {})) {
    for (const [key, expected] of Object.entries(block)) {
      if (!conditionHolds(operator, key, expected, context)) return false;
    }
  }
  return true;
}

/**
 * The request's context as IAM builds it: aws:RequestedRegion is on every request, the region of the
 * endpoint called, which for a regional resource is the region its ARN names (given unless the
 * request says otherwise).
 */
export function requestContext(req: Request): Record<string, ContextValue> {
  const context = req.context ?? {};
  const region = /^arn:[^:]+:[^:]+:([a-z0-9-]+):/.exec(req.resource)?.[1];
  if (region === undefined || lookup(context, 'aws:RequestedRegion') !== undefined) return context;
  return { 'aws:RequestedRegion': region, ...context };
}

/** IAM's decision for one request against identity policy statements. */
export function evaluate(statements: readonly Statement[], request: Request): Decision {
  const req = { ...request, context: requestContext(request) };
  const matching = statements.filter((st) => applies(st, req));
  if (matching.some((st) => st.Effect === 'Deny')) return 'explicit-deny';
  return matching.some((st) => st.Effect === 'Allow') ? 'allow' : 'implicit-deny';
}
