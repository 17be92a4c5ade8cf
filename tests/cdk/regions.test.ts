/**
 * Target regions (issue 15): with `targetRegions`, the app `cdk deploy --all` deploys has one small
 * stack per region besides the home region, holding what a target needs there and that region's
 * grants for the home stack's Lambdas; each is cdk-nag clean, and its target-resources parameter
 * carries exactly what lambdas/benchfleet/aws/fleet/regional.py reads (checked by regional.py itself).
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp, BenchfleetApp } from '../../cdk/lib/app';
import { MAX_LISTED_REGIONS, readConfig } from '../../cdk/lib/config';
import { MANAGED_POLICIES_PER_ROLE } from '../../cdk/lib/naming';
import { cdkJsonContext, IAM_QUOTAS, REPO_ROOT, resourcesOf, rolePolicies } from './helpers';
import { evaluate, PSEUDO, resolve, roleStatements } from './iam-eval';

const HOME = 'us-east-1';
const REGIONS = ['us-west-1', 'eu-north-1'];

function build(context: Record<string, unknown>, cli: Record<string, string> = { CDK_DEFAULT_REGION: HOME }): BenchfleetApp {
  const app = new App({ context: { ...cdkJsonContext(), ...context } });
  return buildApp(app, readConfig(app.node), cli);
}

/** Unsuppressed AwsSolutions findings of one stack. */
function nagFindings(stack: Stack): string[] {
  const annotations = Annotations.fromStack(stack);
  const rule = Match.stringLikeRegexp('AwsSolutions-.*');
  return [...annotations.findError('*', rule), ...annotations.findWarning('*', rule)].map(
    (m) => `${m.id}: ${String(m.entry.data).split(':')[0]}`,
  );
}

/** The one resource of a type whose logical id starts with `prefix`. */
function only(template: Template, type: string, prefix = ''): Record<string, any> {
  const found = resourcesOf(template, type).filter(([id]) => id.startsWith(prefix));
  expect(found.map(([id]) => id)).toHaveLength(1);
  return found[0][1];
}

/** The Python side of the contract: regional.py's FIELDS, and what its parse() makes of `value`. */
function regionalPy(value: string): { fields: string[]; parsed: Record<string, unknown> } {
  const script =
    'import json, sys\n' +
    'from benchfleet.aws.fleet import regional\n' +
    'print(json.dumps({"fields": list(regional.FIELDS), "parsed": regional.parse(sys.argv[1], "the parameter")}))\n';
  const out = execFileSync(path.join(REPO_ROOT, '.venv', 'bin', 'python'), ['-c', script, value], {
    env: { ...process.env, PYTHONPATH: path.join(REPO_ROOT, 'lambdas') },
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

describe('targetRegions: one regional stack per region besides the home region', () => {
  // The home region listed too: it is served by the home stack, not by a second stack there.
  const built = build({ targetRegions: [...REGIONS, HOME] });
  const home = Template.fromStack(built.home);
  const regional = new Map([...built.regions].map(([r, s]) => [r, Template.fromStack(s)]));

  test('a stack per other region, in that region, deployed after the home stack', () => {
    expect([...built.regions.keys()]).toEqual(REGIONS);
    for (const [region, stack] of built.regions) {
      expect(stack.region).toBe(region);
      expect(stack.stackName).toBe(`Benchfleet-${region}`);
      expect(stack.dependencies).toContain(built.home);
    }
    // Pinned to the home region: the regional stacks name it in their grants.
    expect(built.home.region).toBe(HOME);
  });

  test('every stack is cdk-nag clean', () => {
    expect(nagFindings(built.home)).toEqual([]);
    for (const stack of built.regions.values()) expect(nagFindings(stack)).toEqual([]);
  });

  test('each region has what a target needs, built by the same constructs as the home region', () => {
    const kinds = [
      'AWS::EC2::VPC',
      'AWS::EC2::FlowLog',
      'AWS::EC2::SecurityGroup',
      'AWS::EC2::LaunchTemplate',
      'AWS::RDS::DBSubnetGroup',
      'AWS::SSM::Document',
    ];
    for (const template of regional.values()) {
      for (const kind of kinds) {
        expect([kind, resourcesOf(template, kind).length]).toEqual([kind, resourcesOf(home, kind).length]);
      }
      // IAM is global: no role or instance profile of its own, no Lambda, no state machine.
      for (const kind of ['AWS::IAM::InstanceProfile', 'AWS::Lambda::Function', 'AWS::StepFunctions::StateMachine']) {
        expect(resourcesOf(template, kind)).toHaveLength(0);
      }
      // ... but the flow log's, and the one EventBridge uses to forward the end of a step home.
      expect(resourcesOf(template, 'AWS::IAM::Role').map(([id]) => id)).toEqual([
        expect.stringMatching(/^NetworkVpcFlowLogIAMRole/),
        expect.stringMatching(/^ForwardStepEndsEventsRole/),
      ]);
      template.hasResourceProperties('AWS::SSM::Parameter', {
        Name: 'AmazonCloudWatch-Benchfleet-targets',
        Value: Match.stringLikeRegexp('cpu_usage_steal'),
      });
    }
  });

  test("the target-resources parameter of every stack is what regional.py reads, under the Lambdas' name", () => {
    const [, plan] = resourcesOf(home, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Handler === 'handlers.plan.handler',
    )!;
    const name = plan.Properties.Environment.Variables.TARGET_RESOURCES_PARAMETER;
    expect(name).toBe('/benchfleet/Benchfleet/target-resources');
    for (const template of [home, ...regional.values()]) {
      const parameter = only(template, 'AWS::SSM::Parameter', 'TargetsTargetResources');
      expect(parameter.Properties.Name).toBe(name);
      const value = resolve(parameter.Properties.Value, { ...PSEUDO, region: 'us-west-1' }) as string;
      const { fields, parsed } = regionalPy(value);
      expect(Object.keys(JSON.parse(value))).toEqual(fields);
      // Each id is the resource the stack creates in that region.
      expect(parsed).toEqual({
        subnet_ids: [expect.stringMatching(/^<NetworkVpctargetsSubnet1Subnet/), expect.stringMatching(/^<NetworkVpctargetsSubnet2Subnet/)],
        client_security_group_id: expect.stringMatching(/^<TargetsClientSecurityGroup.*\.GroupId>$/),
        db_security_group_id: expect.stringMatching(/^<TargetsDbSecurityGroup.*\.GroupId>$/),
        db_subnet_group_name: expect.stringMatching(/^<TargetsDbSubnetGroup/),
        launch_template_id: expect.stringMatching(/^<TargetsLaunchTemplate/),
        agent_document_name: expect.stringMatching(/^<TargetsAgentDocument/),
        cluster_security_group_id: expect.stringMatching(/^<TargetsClusterSecurityGroup.*\.GroupId>$/),
        proxy_security_group_id: expect.stringMatching(/^<TargetsProxySecurityGroup.*\.GroupId>$/),
        // The zones of subnet_ids (us-west-1 has two): how many nodes a cluster may spread over there.
        subnet_zones: ['us-west-1a', 'us-west-1b'],
      });
    }
  });

  // Issue 11 defect 10: hosts reach SSM, the package mirrors and the home bucket only through the
  // internet gateway, with the public IP their subnet gives them.
  test('every subnet targets launch in assigns public IPs and routes to an internet gateway', () => {
    for (const template of [home, ...regional.values()]) {
      const parameter = only(template, 'AWS::SSM::Parameter', 'TargetsTargetResources');
      const ids = (JSON.parse(resolve(parameter.Properties.Value) as string).subnet_ids as string[]).map((id) =>
        id.replace(/^<|>$/g, ''),
      );
      expect(ids).toHaveLength(2);
      const resources = template.toJSON().Resources;
      for (const id of ids) {
        expect([id, resources[id].Properties.MapPublicIpOnLaunch]).toEqual([id, true]);
        const table = Object.values<any>(resources).find(
          (r) => r.Type === 'AWS::EC2::SubnetRouteTableAssociation' && r.Properties.SubnetId.Ref === id,
        ).Properties.RouteTableId.Ref;
        const route = Object.values<any>(resources).find(
          (r) => r.Type === 'AWS::EC2::Route' && r.Properties.RouteTableId.Ref === table,
        );
        expect(route.Properties.DestinationCidrBlock).toBe('0.0.0.0/0');
        expect(resources[route.Properties.GatewayId.Ref].Type).toBe('AWS::EC2::InternetGateway');
      }
    }
  });

  test("launch templates use the home stack's instance profile by its fixed name", () => {
    const role = only(home, 'AWS::IAM::Role', 'TargetsInstanceRole');
    const profile = only(home, 'AWS::IAM::InstanceProfile');
    expect(role.Properties.RoleName).toBe('Benchfleet-targets');
    expect(profile.Properties.InstanceProfileName).toBe('Benchfleet-targets');
    for (const template of regional.values()) {
      const lt = only(template, 'AWS::EC2::LaunchTemplate');
      const arn = resolve(lt.Properties.LaunchTemplateData.IamInstanceProfile.Arn) as string;
      expect(arn).toBe(`arn:aws:iam::${PSEUDO.account}:instance-profile/Benchfleet-targets`);
      expect(lt.Properties.LaunchTemplateData.MetadataOptions.HttpTokens).toBe('required');
    }
  });

  test("hosts download their own region's bundle, and the home role may read it", () => {
    for (const [region, template] of regional) {
      const doc = only(template, 'AWS::SSM::Document');
      const bundle = resolve(doc.Properties.Content.parameters.BundleUri.default) as string;
      expect(bundle).toMatch(new RegExp(`^https://s3\\.${region}\\.amazonaws\\.com/cdk-[a-z0-9]+-assets-${PSEUDO.account}-${region}/[0-9a-f]{64}\\.zip$`));
      const read = only(template, 'AWS::IAM::Policy', 'TargetsInstanceRolePolicy');
      expect(read.Properties.Roles).toEqual(['Benchfleet-targets']);
      const [, bucketAndKey] = bundle.split(`.amazonaws.com/`);
      const statements = resolve(read.Properties.PolicyDocument.Statement) as any[];
      expect(evaluate(statements, { action: 's3:GetObject', resource: `arn:aws:s3:::${bucketAndKey}` })).toBe('allow');
      expect(evaluate(statements, { action: 's3:GetObject', resource: `arn:aws:s3:::${bucketAndKey}x` })).toBe('implicit-deny');
    }
  });

  describe("each region's grants, attached to the home stack's Lambda roles by name", () => {
    const roleName = (handler: string): string => {
      const [, fn] = resourcesOf(home, 'AWS::Lambda::Function').find(
        ([, f]) => f.Properties.Handler === `handlers.${handler}.handler`,
      )!;
      const roleId = fn.Properties.Role['Fn::GetAtt'][0];
      return home.toJSON().Resources[roleId].Properties.RoleName;
    };
    const [, anyFn] = resourcesOf(home, 'AWS::Lambda::Function').find(([, f]) => f.Properties.Runtime === 'python3.13')!;
    const owner = anyFn.Properties.Environment.Variables.BENCHFLEET_STACK as string;
    const prefix = anyFn.Properties.Environment.Variables.DB_IDENTIFIER_PREFIX as string;
    const runTags = (stack: string): Record<string, string | string[]> => ({
      'aws:RequestTag/benchfleet:run-id': 'r1',
      'aws:RequestTag/benchfleet:expires-at': '2026-11-23T05:00:00Z',
      'aws:RequestTag/benchfleet:stack': stack,
      'aws:TagKeys': ['benchfleet:run-id', 'benchfleet:expires-at', 'benchfleet:stack'],
      'ec2:MetadataHttpTokens': 'required',
    });

    test('the home identity is concrete: regional grants can name it', () => {
      expect(owner).toBe(`Benchfleet@${HOME}`);
      expect(roleName('provision')).toBe('Benchfleet-provision');
      expect(roleName('start_step')).toBe('Benchfleet-start-step');
    });

    for (const region of REGIONS) {
      const policyOf = (template: Template, handler: string): any[] => {
        const policies = resourcesOf(template, 'AWS::IAM::ManagedPolicy').filter(([, p]) =>
          p.Properties.Roles.includes(roleName(handler)),
        );
        expect(policies).toHaveLength(1);
        const document = policies[0][1].Properties.PolicyDocument;
        const resolved = resolve(document, { ...PSEUDO, region }) as { Statement: any[] };
        // A managed policy holds at most 6,144 characters without whitespace (ids are shorter than this).
        expect(JSON.stringify(resolved).length).toBeLessThan(6144);
        return resolved.Statement;
      };
      const arn = (service: string, rest: string): string => `arn:aws:${service}:${region}:${PSEUDO.account}:${rest}`;

      test(`${region}: provision creates run-tagged targets of the home stack there, and nothing else`, () => {
        const template = regional.get(region)!;
        const statements = policyOf(template, 'provision');
        const instance = arn('ec2', 'instance/*');
        expect(evaluate(statements, { action: 'ec2:RunInstances', resource: instance, context: runTags(owner) })).toBe('allow');
        // The regional stack's own name is not an identity any Lambda tags with.
        for (const other of [`Benchfleet-${region}@${region}`, `Benchfleet@${region}`]) {
          expect(evaluate(statements, { action: 'ec2:RunInstances', resource: instance, context: runTags(other) })).toBe(
            'implicit-deny',
          );
        }
        // Only in this region's VPC, with its security groups and launch template.
        const vpc = resourcesOf(template, 'AWS::EC2::VPC')[0][0];
        const subnet = { action: 'ec2:RunInstances', resource: arn('ec2', 'subnet/subnet-1') };
        expect(evaluate(statements, { ...subnet, context: { 'ec2:Vpc': arn('ec2', `vpc/<${vpc}>`) } })).toBe('allow');
        expect(evaluate(statements, { ...subnet, context: { 'ec2:Vpc': arn('ec2', 'vpc/vpc-other') } })).toBe('implicit-deny');
        const lt = resourcesOf(template, 'AWS::EC2::LaunchTemplate')[0][0];
        expect(evaluate(statements, { action: 'ec2:RunInstances', resource: arn('ec2', `launch-template/<${lt}>`) })).toBe('allow');
        expect(evaluate(statements, { action: 'ec2:RunInstances', resource: arn('ec2', 'launch-template/lt-other') })).toBe(
          'implicit-deny',
        );
        // Databases named as provision names them with the home stack's prefix, in this region's DB
        // subnet group (a name that merely starts with the prefix is not enough: issue 30, finding 10).
        const dbContext = { context: runTags(owner) };
        expect(evaluate(statements, { action: 'rds:CreateDBInstance', resource: arn('rds', `db:${prefix}-m6i-0a1b2c3d-r1-db`), ...dbContext })).toBe('allow');
        expect(evaluate(statements, { action: 'rds:CreateDBInstance', resource: arn('rds', `db:${prefix}-r1-x`), ...dbContext })).toBe('implicit-deny');
        expect(evaluate(statements, { action: 'rds:CreateDBInstance', resource: arn('rds', 'db:prod-x'), ...dbContext })).toBe('implicit-deny');
        const subgrp = resourcesOf(template, 'AWS::RDS::DBSubnetGroup')[0][0];
        expect(evaluate(statements, { action: 'rds:CreateDBInstance', resource: arn('rds', `subgrp:<${subgrp}>`), ...dbContext })).toBe('allow');
        // Another region's resources are that region's stack's business.
        const elsewhere = `arn:aws:ec2:ap-south-1:${PSEUDO.account}:instance/*`;
        expect(evaluate(statements, { action: 'ec2:RunInstances', resource: elsewhere, context: runTags(owner) })).toBe('implicit-deny');
        expect(evaluate(statements, { action: 'ec2:TerminateInstances', resource: instance })).toBe('implicit-deny');
      });

      test(`${region}: start_step sends this region's agent document to the home stack's run instances`, () => {
        const template = regional.get(region)!;
        const statements = policyOf(template, 'start_step');
        const doc = resourcesOf(template, 'AWS::SSM::Document')[0][0];
        const send = (resource: string, context: Record<string, string> = {}): string =>
          evaluate(statements, { action: 'ssm:SendCommand', resource, context });
        expect(send(arn('ssm', `document/<${doc}>`))).toBe('allow');
        expect(send(arn('ssm', 'document/AWS-RunShellScript'))).toBe('implicit-deny');
        const instance = arn('ec2', 'instance/i-0123456789abcdef0');
        expect(send(instance, { 'ssm:resourceTag/benchfleet:run-id': 'r1', 'ssm:resourceTag/benchfleet:stack': owner })).toBe('allow');
        expect(send(instance, { 'ssm:resourceTag/benchfleet:run-id': 'r1', 'ssm:resourceTag/benchfleet:stack': 'Other@x' })).toBe(
          'implicit-deny',
        );
      });

      test(`${region}: provision and start_step read this region's target-resources parameter`, () => {
        const template = regional.get(region)!;
        const parameter = resourcesOf(template, 'AWS::SSM::Parameter').find(([id]) => id.startsWith('TargetsTargetResources'))![0];
        for (const handler of ['provision', 'start_step']) {
          const statements = policyOf(template, handler);
          expect(evaluate(statements, { action: 'ssm:GetParameter', resource: arn('ssm', `parameter<${parameter}>`) })).toBe('allow');
          expect(evaluate(statements, { action: 'ssm:GetParameter', resource: arn('ssm', 'parameter/other') })).toBe('implicit-deny');
        }
      });
    }
  });

  test('the home stack still sweeps and tears down in every target region', () => {
    const [, janitor] = resourcesOf(home, 'AWS::Lambda::Function').find(
      ([, f]) => f.Properties.Handler === 'handlers.janitor.handler',
    )!;
    expect(janitor.Properties.Environment.Variables.SWEEP_REGIONS.split(',').sort()).toEqual([...REGIONS, HOME].sort());
  });
});

describe('at the most regions the app allows: every role fits IAM', () => {
  // 10 target regions besides the home region (MANAGED_POLICIES_PER_ROLE) and 30 more swept
  // (MAX_LISTED_REGIONS), with names as long as AWS's longest, and the longest stack name (it is in
  // every ownership condition and role name): the sweepers' and teardown's grants
  // once listed every region's ARNs, overflowing into OverflowPolicy managed policies that were
  // themselves past IAM's 6,144 characters (issue 30's leftover).
  const targets = ['us-east-2', 'us-west-1', 'us-west-2', 'ca-central-1', 'eu-west-1', 'eu-west-2', 'eu-west-3',
    'eu-central-1', 'eu-north-1', 'ap-northeast-1'].slice(0, MANAGED_POLICIES_PER_ROLE);
  const swept = Array.from({ length: MAX_LISTED_REGIONS }, (_, i) => `ap-southeast-${i + 10}`);
  const stackName = 'Benchfleet'.padEnd(41, 'x');
  const built = build({ stackName, targetRegions: [HOME, ...targets], sweepRegions: swept });
  const home = Template.fromStack(built.home);
  const roles = rolePolicies(home, [...built.regions.values()].map((s) => Template.fromStack(s)));

  test('the app is at its limits', () => {
    expect(built.regions.size).toBe(MANAGED_POLICIES_PER_ROLE);
    const [, janitor] = resourcesOf(home, 'AWS::Lambda::Function').find(([, f]) => f.Properties.Handler === 'handlers.janitor.handler')!;
    expect(janitor.Properties.Environment.Variables.SWEEP_REGIONS.split(',')).toHaveLength(1 + targets.length + swept.length);
  });

  test("no role's statements overflow into a managed policy; each policy within IAM's quotas", () => {
    for (const [id, role] of roles) {
      // Only the regional stacks' grants (one per region) are managed policies, and only on the roles they name.
      const overflow = role.managed.filter(({ id: policy }) => !/^(Provision|StartStep)GrantsPolicy[0-9A-F]{8}$/.test(policy));
      expect([id, overflow]).toEqual([id, []]);
      expect([id, role.managed.length <= IAM_QUOTAS.managedPoliciesPerRole]).toEqual([id, true]);
      for (const policy of role.managed) expect([id, policy.id, policy.chars, policy.chars <= IAM_QUOTAS.managedPolicyChars]).toEqual([id, policy.id, policy.chars, true]);
      expect([id, role.inlineChars, role.inlineChars <= IAM_QUOTAS.inlineCharsPerRole]).toEqual([id, role.inlineChars, true]);
    }
  });

  test('the sweepers delete in every listed region and nowhere else', () => {
    const context = { 'aws:ResourceTag/benchfleet:run-id': 'r1', 'aws:ResourceTag/benchfleet:stack': `${stackName}@${HOME}` };
    for (const name of ['Janitor', 'TeardownByTag', 'Api']) {
      const statements = roleStatements(home, new RegExp(`^OrchestrationFunctions${name}Role[0-9A-F]{8}$`));
      const terminate = (region: string): string =>
        evaluate(statements, { action: 'ec2:TerminateInstances', resource: `arn:aws:ec2:${region}:${PSEUDO.account}:instance/i-1`, context });
      for (const region of [HOME, ...targets, ...swept]) expect([name, region, terminate(region)]).toEqual([name, region, 'allow']);
      expect([name, terminate('sa-east-1')]).toEqual([name, 'explicit-deny']);
    }
  });
});

describe('targetRegions unset or home only', () => {
  test('unset: no regional stack, the home stack environment-agnostic', () => {
    const built = build({});
    expect(built.regions.size).toBe(0);
    expect(built.home.resolve(built.home.region)).toEqual({ Ref: 'AWS::Region' });
  });

  test("`cdk deploy` with credentials: the home stack gets the CLI's account and region, and maxAzs zones", () => {
    // Issue 41 item 10: environment-agnostic, CDK gave the VPC 2 zones whatever maxAzs said, and the shipped
    // pxc-on-aws (3 nodes, each in a zone of its own) was refused at POST /runs. The zones a lookup returns
    // (what `cdk deploy` writes into cdk.context.json), given here as context.
    const zones = ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d'];
    const built = build(
      { 'availability-zones:account=111111111111:region=us-east-1': zones },
      { CDK_DEFAULT_ACCOUNT: '111111111111', CDK_DEFAULT_REGION: HOME },
    );
    expect([built.home.account, built.home.region]).toEqual(['111111111111', HOME]);
    const template = Template.fromStack(built.home);
    const subnets = resourcesOf(template, 'AWS::EC2::Subnet').map(([, r]) => r.Properties.AvailabilityZone);
    expect(subnets.sort()).toEqual(zones.slice(0, 3)); // maxAzs: 3 (cdk.json)
    const plan = resourcesOf(template, 'AWS::Lambda::Function').find(
      ([, r]) => r.Properties.Handler === 'handlers.plan.handler',
    )!;
    expect(plan[1].Properties.Environment.Variables.SUBNET_ZONES).toBe(zones.slice(0, 3).join(','));
  });

  test('the home region only: no regional stack', () => {
    expect(build({ targetRegions: [HOME] }).regions.size).toBe(0);
  });

  test('more target regions than IAM attaches managed policies to a role: refused at synth, naming the quota', () => {
    // Issue 30, finding 9: each regional stack attaches one managed policy to the provision and
    // start_step roles; IAM's default quota is 10 per role, so an eleventh region would fail to deploy.
    const eleven = ['us-east-2', 'us-west-1', 'us-west-2', 'ca-central-1', 'eu-west-1', 'eu-west-2', 'eu-west-3',
      'eu-central-1', 'eu-north-1', 'ap-northeast-1', 'ap-southeast-2'];
    expect(() => build({ targetRegions: eleven })).toThrow(
      /targetRegions": 11 regions besides the home region us-east-1 .*provision, start_step.*allows 10 per role/,
    );
  });

  test('the home region unknown: refused, naming the keys', () => {
    expect(() => build({ targetRegions: REGIONS }, {})).toThrow(/targetRegions.*"region"/);
    expect(build({ targetRegions: REGIONS, region: 'eu-north-1' }, {}).regions.size).toBe(1);
  });
});
