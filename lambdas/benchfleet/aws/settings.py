"""The Lambdas' environment (statemachines/README.md), read in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from benchfleet.aws.regions import TargetRegions
from benchfleet.cost.ceiling import DEFAULT_MAX_RUN_COST_USD, max_run_cost
from benchfleet.plan import naming

# The record store a deployment has unless told otherwise (cdk.json's resultsStore): Athena works in
# every account; Timestream for LiveAnalytics is closed to accounts new since 2025-06-20.
DEFAULT_RESULTS_STORE = "athena"


@dataclass(frozen=True)
class Settings:
    results_bucket: str = ""
    results_store: str = DEFAULT_RESULTS_STORE
    timestream_database: str = ""
    state_machine_arn: str = ""
    target_instance_profile_arn: str = ""
    target_role_arn: str = ""
    client_security_group_id: str = ""
    db_security_group_id: str = ""
    subnet_ids: tuple[str, ...] = ()
    # The availability zones of SUBNET_IDS (SUBNET_ZONES): how many nodes a cluster may spread over.
    subnet_zones: tuple[str, ...] = ()
    # The security group of a cluster's nodes (CLUSTER_SECURITY_GROUP_ID: Galera's ports between
    # nodes, MySQL from the clients' group; cdk/lib/target-fleet.ts).
    cluster_security_group_id: str = ""
    # A cluster's proxy on a host of its own (PROXY_SECURITY_GROUP_ID: its port from the clients).
    proxy_security_group_id: str = ""
    db_subnet_group_name: str = ""
    agent_document_name: str = ""
    agent_bundle_s3_uri: str = ""
    # Set by the CDK app beyond the contract's list; optional here (instance profile + SG otherwise).
    launch_template_id: str = ""
    # The stack's region (Lambda's AWS_REGION) and the regions targets may run in beyond it
    # (TARGET_REGIONS, from the CDK context key targetRegions): benchfleet.aws.regions.
    home_region: str = "us-east-1"
    target_regions: tuple[str, ...] = ()
    # The deployed state machine's execution timeout (its TimeoutSeconds / 3600), from the same CDK
    # context key maxRunHours; the default is cdk.json's (tests/unit/test_settings_defaults.py).
    max_run_hours: int = 48
    # The most a run without budget_usd may cost (MAX_RUN_COST_USD, CDK context key maxRunCostUsd).
    max_run_cost_usd: float = DEFAULT_MAX_RUN_COST_USD
    # Ownership (benchfleet.plan.naming.TAG_STACK): the stack's identity and its DB identifier prefix.
    stack: str = ""
    db_identifier_prefix: str = "bf"
    # Per-region caps of one run (cdk context maxVcpusPerRegion / maxHostsPerRegion); None: the
    # plan's defaults.
    max_vcpus_per_region: int | None = None
    max_hosts_per_region: int | None = None
    # Fixed name of the SSM parameter holding each target region's resource ids (regional.py).
    target_resources_parameter: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env

        def get(name: str, default: str = "") -> str:
            return env.get(name, default).strip()

        return cls(
            results_bucket=get("RESULTS_BUCKET"),
            results_store=get("RESULTS_STORE") or DEFAULT_RESULTS_STORE,
            timestream_database=get("TIMESTREAM_DATABASE"),
            state_machine_arn=get("STATE_MACHINE_ARN"),
            target_instance_profile_arn=get("TARGET_INSTANCE_PROFILE_ARN"),
            target_role_arn=get("TARGET_ROLE_ARN"),
            client_security_group_id=get("CLIENT_SECURITY_GROUP_ID"),
            db_security_group_id=get("DB_SECURITY_GROUP_ID"),
            subnet_ids=tuple(s.strip() for s in get("SUBNET_IDS").split(",") if s.strip()),
            subnet_zones=tuple(s.strip() for s in get("SUBNET_ZONES").split(",") if s.strip()),
            cluster_security_group_id=get("CLUSTER_SECURITY_GROUP_ID"),
            proxy_security_group_id=get("PROXY_SECURITY_GROUP_ID"),
            db_subnet_group_name=get("DB_SUBNET_GROUP_NAME"),
            agent_document_name=get("AGENT_DOCUMENT_NAME"),
            agent_bundle_s3_uri=get("AGENT_BUNDLE_S3_URI"),
            launch_template_id=get("LAUNCH_TEMPLATE_ID"),
            home_region=get("AWS_REGION") or get("AWS_DEFAULT_REGION") or "us-east-1",
            target_regions=tuple(r.strip() for r in get("TARGET_REGIONS").split(",") if r.strip()),
            max_run_hours=int(get("MAX_RUN_HOURS") or cls.max_run_hours),
            max_run_cost_usd=max_run_cost(env),
            stack=get("BENCHFLEET_STACK"),
            db_identifier_prefix=get("DB_IDENTIFIER_PREFIX", "bf") or "bf",
            max_vcpus_per_region=_int(get("MAX_VCPUS_PER_REGION")),
            max_hosts_per_region=_int(get("MAX_HOSTS_PER_REGION")),
            target_resources_parameter=get("TARGET_RESOURCES_PARAMETER"),
        )

    @property
    def regions(self) -> TargetRegions:
        return TargetRegions.of(self.home_region, self.target_regions)

    def host_arn(self, region: str, instance_id: str) -> str:
        """A host's ARN (``ec2:SourceInstanceARN``): hosts run with the target instance profile, in
        its partition and account (TARGET_INSTANCE_PROFILE_ARN, arn:<partition>:iam::<account>:...)."""
        parts = self.target_instance_profile_arn.split(":")
        if len(parts) < 6 or parts[2] != "iam" or not parts[4]:
            raise ValueError("TARGET_INSTANCE_PROFILE_ARN is not an instance profile ARN: the CDK app gives "
                             "every Lambda the target instance profile's")
        return naming.instance_arn(parts[1], region, parts[4], instance_id)

    def owner(self) -> str:
        """The stack identity every created resource is tagged with; refusing to work without it
        (an unowned resource could be swept by any stack, or by none)."""
        if not self.stack:
            raise OwnerUnknown("BENCHFLEET_STACK is not set: the CDK app gives every Lambda its stack's identity")
        return self.stack


class OwnerUnknown(RuntimeError):
    """The Lambda does not know which stack it belongs to, so it may neither create nor remove."""


def _int(value: str) -> int | None:
    return int(value) if value.isdigit() else None
