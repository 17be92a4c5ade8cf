/**
 * A role's statements must fit in its own inline policy. When they do not, CDK moves the rest into
 * OverflowPolicy<n> managed policies of the stack, silently: each counts against IAM's 10 managed
 * policies per role, may itself exceed IAM's 6,144 characters (so the deploy fails half-way), and
 * escapes every check that reads a role's inline policy. Synthesis fails instead, naming the role.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import { IConstruct } from 'constructs';

/** Make synthesis fail for every role under `scope` whose statements CDK split off (call at the end of a stack). */
export function refuseOverflowPolicies(scope: IConstruct): void {
  for (const role of scope.node.findAll()) {
    if (!(role instanceof iam.Role)) continue;
    // A validation, not a check here: CDK splits the policy in an aspect, during synthesis.
    role.node.addValidation({
      validate: () => {
        const overflow = role.node.children.filter(
          (c) => c instanceof iam.ManagedPolicy && c.node.id.startsWith('OverflowPolicy'),
        );
        if (overflow.length === 0) return [];
        return [
          `role ${role.node.path}: its statements outgrow its inline policy (CDK moved them into ` +
            `${overflow.length} OverflowPolicy managed ${overflow.length === 1 ? 'policy' : 'policies'}); ` +
            'write the grant so that it does not grow with a list (one statement over a pattern or a condition)',
        ];
      },
    });
  }
}
