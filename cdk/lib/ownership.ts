/**
 * Who owns what a run creates. Every instance, volume and database carries `benchfleet:stack` with
 * the deploying stack's identity, and its DB identifiers start with the stack's prefix; IAM lets the
 * stack create only with its identity and remove only what carries it, and the sweepers look for
 * it (lambdas/benchfleet/aws/fleet/sweep.py). Two stacks in one account thus never touch each other's
 * runs, and nothing benchfleet did not create can be adopted, stopped or deleted.
 */
import { createHash } from 'crypto';
import { Stack } from 'aws-cdk-lib';

/**
 * `<stack name>@<region>`: unique per account, since a stack name is unique within a region, and
 * readable in the console. The region is a token in an environment-agnostic synth.
 */
export function stackOwner(stack: Stack): string {
  return ownerOf(stack.stackName, stack.region);
}

/** The identity of the home stack `stackName` in `region`; regional stacks act for it (regional-stack.ts). */
export function ownerOf(stackName: string, region: string): string {
  return `${stackName}@${region}`;
}

/**
 * `bf` + 6 hex of the stack name: DB identifiers of this stack start with `<prefix>-`. RDS has no
 * create-only condition for tagging (EC2's `ec2:CreateAction`), so `rds:AddTagsToResource` and the
 * creates are allowed only on DB ARNs with this prefix: an existing database can neither be created
 * over nor tagged into the stack's ownership. Stacks sharing an account need distinct names.
 */
export function dbIdentifierPrefix(stack: Stack): string {
  return dbIdentifierPrefixOf(stack.stackName);
}

export function dbIdentifierPrefixOf(stackName: string): string {
  return `bf${createHash('sha256').update(stackName).digest('hex').slice(0, 6)}`;
}

/** Whose runs a set of grants is for: the owner tag value and the DB identifier prefix. */
export interface Ownership {
  readonly owner: string;
  readonly dbPrefix: string;
}

export function ownershipOf(stackName: string, region: string): Ownership {
  return { owner: ownerOf(stackName, region), dbPrefix: dbIdentifierPrefixOf(stackName) };
}

/** The Lambdas' environment for ownership (read by benchfleet.aws.settings). */
export function ownershipEnvironment(stack: Stack): Record<string, string> {
  return { BENCHFLEET_STACK: stackOwner(stack), DB_IDENTIFIER_PREFIX: dbIdentifierPrefix(stack) };
}
