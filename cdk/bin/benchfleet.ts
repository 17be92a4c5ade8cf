#!/usr/bin/env node
/**
 * benchfleet CDK app. Context keys and defaults: cdk/lib/config.ts and cdk/README.md.
 * Synthesizes offline with no credentials (env-agnostic stack) unless `vpcId` asks for a lookup.
 */
import { App, Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BenchfleetStack } from '../lib/benchfleet-stack';
import { readConfig } from '../lib/config';

const app = new App();
const config = readConfig(app.node);

let env: { account: string; region: string } | undefined;
if (config.vpcId !== undefined) {
  // Vpc.fromLookup needs a concrete account and region.
  const account = config.account ?? process.env.CDK_DEFAULT_ACCOUNT;
  const region = config.region ?? process.env.CDK_DEFAULT_REGION;
  if (account === undefined || region === undefined) {
    throw new Error('context "vpcId" needs "account" and "region" (context or AWS credentials)');
  }
  env = { account, region };
} else if (config.account !== undefined && config.region !== undefined) {
  env = { account: config.account, region: config.region };
}

new BenchfleetStack(app, config.stackName, {
  config,
  env,
  description: 'benchfleet: serverless benchmarks of MySQL-compatible databases',
});

// cdk-nag on every synth: unsuppressed findings are errors and fail `cdk synth`.
Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
