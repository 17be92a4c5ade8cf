"""Where a target's region keeps what a target needs: the ids of the network, security groups,
launch template, DB subnet group and agent document the CDK app deployed there.

The home region's ids are in the Lambdas' environment (the home stack creates them). Each other
region of ``targetRegions`` has a small regional stack that writes its ids as JSON to an SSM
parameter with the same fixed name in every region (``TARGET_RESOURCES_PARAMETER``); the handlers
read it in the target's region at run time. So no stack refers to another region at deploy time
(CloudFormation cannot), and a region deployed later needs no change to the home stack's Lambdas.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import TargetFailed, aws_errors, error_code
from benchfleet.aws.regions import CONTEXT_KEY
from benchfleet.aws.settings import Settings

# Keys of the parameter's JSON (cdk/lib/regional-stack.ts writes them) -> Settings fields.
FIELDS = ("subnet_ids", "client_security_group_id", "db_security_group_id", "db_subnet_group_name",
          "launch_template_id", "agent_document_name", "cluster_security_group_id", "proxy_security_group_id",
          "subnet_zones")


def parse(value: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError:
        raise TargetFailed(f"{where} is not JSON") from None
    missing = [k for k in FIELDS if not data.get(k)] if isinstance(data, dict) else list(FIELDS)
    if missing:
        raise TargetFailed(f"{where} lacks {', '.join(missing)}")
    data["subnet_ids"] = tuple(data["subnet_ids"])
    data["subnet_zones"] = tuple(data["subnet_zones"])  # a cluster's nodes each need a zone of their own
    return {k: data[k] for k in FIELDS}


def settings_in(region: str, settings: Settings, ssm: Any) -> Settings:
    """``settings`` with the resource ids of ``region`` (``ssm``: a client of that region)."""
    if region == settings.home_region:
        return settings
    name = settings.target_resources_parameter
    where = f"SSM parameter {name} in {region}"
    if not name:
        raise TargetFailed(f"no target resources in {region}: TARGET_RESOURCES_PARAMETER is not set")
    try:
        with aws_errors():
            value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as e:
        if error_code(e) != "ParameterNotFound":
            raise
        raise TargetFailed(f"nothing is deployed for targets in {region} ({where} is missing): add {region} "
                           f"to the CDK context key {CONTEXT_KEY} and run `cdk deploy --all`") from None
    return dataclasses.replace(settings, **parse(str(value), where))
