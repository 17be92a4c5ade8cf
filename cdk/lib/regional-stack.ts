/**
 * One small stack per target region besides the home region (context `targetRegions`): what targets
 * need there, built by the same constructs the home stack uses for the home region (Network,
 * TargetFleet), plus that region's grants for the home stack's Lambdas.
 *
 * No stack refers to another region (CloudFormation cannot): the Lambdas find this region's ids in
 * its target-resources SSM parameter at run time, and IAM, which is global, is joined by the fixed
 * names of the home stack's roles (naming.ts). The home stack therefore deploys first.
 */
import { Stack, StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BenchfleetConfig } from './config';
import { applyWildcardSuppressions } from './nag';
import { refuseOverflowPolicies } from './role-policy-limits';
import { agentDocumentName, lambdaRoleName } from './naming';
import { Network } from './network';
import { ownershipOf } from './ownership';
import { Permissions, PolicyHolder } from './permissions';
import { removalPolicyOf } from './results-store';
import { TargetFleet } from './target-fleet';
import { forwardStepEnds } from './step-callback';

export interface TargetRegionStackProps extends StackProps {
  /** The app's configuration (the home stack's name, retention and removal settings). */
  readonly config: BenchfleetConfig;
  /** The home stack's region: runs are tagged with the home stack's identity, `<stackName>@<home region>`. */
  readonly homeRegion: string;
}

/**
 * A customer managed policy of this stack attached to a home stack role by its name, taking statements
 * the way the role would. Managed, not inline: a role's inline policies share one 10,240-character
 * quota, which a few regions' create grants would exhaust; each managed policy has its own.
 */
class RoleGrants extends Construct implements PolicyHolder {
  private readonly policy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, roleName: string) {
    super(scope, id);
    this.policy = new iam.ManagedPolicy(this, 'Policy', {
      description: `benchfleet: what ${roleName} may do in ${Stack.of(this).region}`,
      roles: [iam.Role.fromRoleName(this, 'Role', roleName)],
    });
  }

  public addToPrincipalPolicy(statement: iam.PolicyStatement): void {
    this.policy.addStatements(statement);
  }
}

export class TargetRegionStack extends Stack {
  public readonly network: Network;
  public readonly fleet: TargetFleet;

  constructor(scope: Construct, id: string, props: TargetRegionStackProps) {
    super(scope, id, props);
    const config = props.config;
    const removalPolicy = removalPolicyOf(config.keepResults);

    // Always a VPC of its own: `vpcId` names a VPC of the home region, and lookups need credentials.
    this.network = new Network(this, 'Network', {
      subnetType: 'public',
      maxAzs: config.maxAzs,
      logRetention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy,
    });
    this.fleet = new TargetFleet(this, 'Targets', {
      vpc: this.network.vpc,
      subnets: this.network.subnets,
      stackName: config.stackName,
      removalPolicy,
    });

    // The same grants the home stack gives for the home region, with this region's resources.
    const permissions = new Permissions(
      this,
      this.fleet.fleetResources(),
      ownershipOf(config.stackName, props.homeRegion),
    );
    const provision = new RoleGrants(this, 'ProvisionGrants', lambdaRoleName(config.stackName, 'provision'));
    permissions.grantTargetCreate(provision);
    permissions.grantTargetResourcesRead(provision);
    const startStep = new RoleGrants(this, 'StartStepGrants', lambdaRoleName(config.stackName, 'start_step'));
    permissions.grantCommandSend(startStep);
    permissions.grantParameterGroupSwitch(startStep);
    permissions.grantTargetResourcesRead(startStep);

    // Steps end by callback: Run Command's status changes here go to the home stack's rule.
    forwardStepEnds(this, 'ForwardStepEnds', props.homeRegion, agentDocumentName(config.stackName));

    applyWildcardSuppressions(this);
    refuseOverflowPolicies(this);
  }
}
