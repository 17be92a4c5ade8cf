/**
 * The network targets run in: by default a new VPC with public subnets only (no NAT gateway: its
 * hourly price would dominate a short benchmark), or an existing VPC looked up by id.
 * Targets have no inbound rules; they reach SSM and package mirrors through the internet gateway
 * with the public IP their subnet assigns (and S3 through a free gateway endpoint), or, in an
 * existing VPC's private subnets, through its NAT gateway. config.ts refuses what would leave them
 * without a route.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { TargetSubnetType } from './config';

export interface NetworkProps {
  /** Use this existing VPC (Vpc.fromLookup: needs an account/region env and lookup context). */
  readonly vpcId?: string;
  /** Subnets of an existing VPC targets use (a new VPC has public subnets only). */
  readonly subnetType: TargetSubnetType;
  /** AZs of a new VPC. */
  readonly maxAzs: number;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class Network extends Construct {
  public readonly vpc: ec2.IVpc;
  /** Subnets targets (EC2 instances and DB subnet group) are placed in. */
  public readonly subnets: ec2.SubnetSelection;
  /** Flow log of a VPC this stack creates (an existing VPC keeps its owner's logging). */
  public readonly flowLogGroup?: logs.LogGroup;

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    if (props.vpcId !== undefined) {
      this.vpc = ec2.Vpc.fromLookup(this, 'Vpc', { vpcId: props.vpcId });
      this.subnets = {
        subnetType:
          props.subnetType === 'public' ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_WITH_EGRESS,
      };
      // The lookup calls a subnet "Private" only with a NAT (or transit) gateway route; subnets with
      // neither are "Isolated" and never selected: their hosts would have no route to SSM.
      try {
        this.vpc.selectSubnets(this.subnets);
      } catch (e) {
        throw new Error(
          `context "subnetType": no ${props.subnetType} subnets in ${props.vpcId} for targets ` +
            `(${(e as Error).message})`,
          { cause: e },
        );
      }
      return;
    }

    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: props.maxAzs,
      natGateways: 0,
      subnetConfiguration: [{ name: 'targets', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 }],
      gatewayEndpoints: { S3: { service: ec2.GatewayVpcEndpointAwsService.S3 } },
    });
    this.flowLogGroup = new logs.LogGroup(this, 'FlowLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // Rejected traffic only: targets accept no inbound connections, so rejects are the signal.
    vpc.addFlowLog('FlowLog', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(this.flowLogGroup),
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });
    this.vpc = vpc;
    this.subnets = { subnetType: ec2.SubnetType.PUBLIC };
  }
}
