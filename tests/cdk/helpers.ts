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
