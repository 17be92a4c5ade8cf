/**
 * Build the benchfleet stack the way `cdk synth` does (cdk.json context, overridable), with the
 * AWS Solutions cdk-nag pack applied, and assert on the template and annotations.
 */
import * as fs from 'fs';
import * as path from 'path';
import { App, Aspects } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BenchfleetStack } from '../../cdk/lib/benchfleet-stack';
import { readConfig } from '../../cdk/lib/config';
import { resolve } from './iam-eval';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const FIXTURES = path.join(__dirname, 'fixtures');

/** The context block of cdk.json: defaults and feature flags, exactly as the CLI passes them. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

export interface Built {
  readonly app: App;
  readonly stack: BenchfleetStack;
  readonly template: Template;
}

export interface BuildOptions {
  readonly definitionPath?: string;
  readonly env?: { account: string; region: string };
}

export function buildStack(context: Record<string, unknown> = {}, options: BuildOptions = {}): Built {
  const app = new App({ context: { ...cdkJsonContext(), ...context } });
  const config = readConfig(app.node);
  const stack = new BenchfleetStack(app, config.stackName, {
    config,
    env: options.env,
    definitionPath: options.definitionPath,
  });
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  const template = Template.fromStack(stack);
  return { app, stack, template };
}

/** Every unsuppressed AwsSolutions finding, formatted for a readable failure message. */
export function nagFindings(stack: BenchfleetStack): string[] {
  const annotations = Annotations.fromStack(stack);
  const rule = Match.stringLikeRegexp('AwsSolutions-.*');
  return [...annotations.findError('*', rule), ...annotations.findWarning('*', rule)].map(
    (m) => `${m.id}: ${String(m.entry.data).split(':')[0]}`,
  );
}

/** Resources of a type, as [logicalId, resource] pairs. */
export function resourcesOf(template: Template, type: string): Array<[string, Record<string, any>]> {
  return Object.entries(template.findResources(type));
}

/** Every policy statement of every AWS::IAM::Policy, with the policy's logical id. */
export function policyStatements(template: Template): Array<{ policy: string; statement: any }> {
  const out: Array<{ policy: string; statement: any }> = [];
  for (const [id, policy] of resourcesOf(template, 'AWS::IAM::Policy')) {
    for (const statement of policy.Properties.PolicyDocument.Statement) out.push({ policy: id, statement });
  }
  return out;
}

export function actionsOf(statement: any): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** IAM's quotas on one role's policies (IAM User Guide, "IAM and AWS STS quotas"); whitespace is not counted. */
export const IAM_QUOTAS = { inlineCharsPerRole: 10_240, managedPolicyChars: 6_144, managedPoliciesPerRole: 10 };

/**
 * A policy document's size as IAM counts it, never less: the longest partition and region names, and
 * each value known only at deploy time counted longer than any the stack's policies name: an ARN
 * (`<LogicalId.Arn>`) as 128 characters, an id or a generated name (`<LogicalId>`: vpc-, sg-, lt- ids
 * of 20-21, the SSM parameter and subnet group names of at most 64) as 64.
 */
export function policyChars(document: unknown): number {
  const pseudo = { partition: 'aws-us-gov', region: 'ap-southeast-5', account: '111111111111' };
  return JSON.stringify(resolve(document, pseudo))
    .replace(/<[A-Za-z0-9]+\.Arn>/g, 'x'.repeat(128))
    .replace(/<[A-Za-z0-9.]+>/g, 'x'.repeat(64)).length;
}

export interface RolePolicies {
  /** Characters of all its inline policies together (the role's inline policy quota is shared). */
  inlineChars: number;
  /** Customer managed policies of these templates attached to it, by logical id, with their size. */
  managed: Array<{ id: string; chars: number }>;
  /** AWS managed policies (ManagedPolicyArns), whose documents are not in the template. */
  managedArns: unknown[];
}

/**
 * What IAM will hold for each role of `home`, from every stack of the app: policies attach to a role by
 * reference in its own stack, and by its name from another (the regional stacks' grants).
 */
export function rolePolicies(home: Template, others: Template[] = []): Map<string, RolePolicies> {
  const roles = new Map<string, RolePolicies>();
  const byName = new Map<string, string>();
  for (const [id, role] of resourcesOf(home, 'AWS::IAM::Role')) {
    const inline = (role.Properties.Policies ?? []).map((p: { PolicyDocument: unknown }) => policyChars(p.PolicyDocument));
    roles.set(id, {
      inlineChars: inline.reduce((a: number, b: number) => a + b, 0),
      managed: [],
      managedArns: role.Properties.ManagedPolicyArns ?? [],
    });
    if (typeof role.Properties.RoleName === 'string') byName.set(role.Properties.RoleName, id);
  }
  const attachedTo = (policy: Record<string, any>, inHome: boolean): string[] =>
    (policy.Properties.Roles ?? []).map((r: unknown) =>
      typeof r === 'string' ? byName.get(r) : inHome ? (r as { Ref?: string }).Ref : undefined,
    );
  for (const [template, inHome] of [[home, true], ...others.map((t) => [t, false])] as Array<[Template, boolean]>) {
    for (const [, policy] of resourcesOf(template, 'AWS::IAM::Policy')) {
      for (const role of attachedTo(policy, inHome)) {
        if (role !== undefined) roles.get(role)!.inlineChars += policyChars(policy.Properties.PolicyDocument);
      }
    }
    for (const [id, policy] of resourcesOf(template, 'AWS::IAM::ManagedPolicy')) {
      for (const role of attachedTo(policy, inHome)) {
        if (role !== undefined) roles.get(role)!.managed.push({ id, chars: policyChars(policy.Properties.PolicyDocument) });
      }
    }
  }
  return roles;
}
