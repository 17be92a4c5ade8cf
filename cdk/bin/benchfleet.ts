#!/usr/bin/env node
/**
 * benchfleet CDK app. Context keys and defaults: cdk/lib/config.ts and cdk/README.md; the stacks:
 * cdk/lib/app.ts. Synthesizes offline with no credentials (env-agnostic home stack) unless `vpcId`
 * asks for a lookup.
 */
import { App } from 'aws-cdk-lib';
import { buildApp } from '../lib/app';
import { readConfig } from '../lib/config';

const app = new App();
buildApp(app, readConfig(app.node), process.env);
