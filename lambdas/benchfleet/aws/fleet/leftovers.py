"""What a run left behind, found by listing its tags (the Resource Groups Tagging API), as the user's
own credentials see it: `benchfleet run --remote` checks this when a run ends (the canary's proof that
teardown works), whatever the state machine says.

The tagging API keeps listing a terminated instance or a deleted database for a while, so each listed
instance and database is described: terminated, shutting down, deleting or gone counts as removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.plan.naming import TAG_RUN_ID

_GONE_EC2 = {"shutting-down", "terminated"}
_GONE_DB = {"deleting"}
_NOT_FOUND = {"InvalidInstanceID.NotFound", "DBInstanceNotFound", "DBInstanceNotFoundFault", "DBClusterNotFoundFault",
              "DBClusterNotFound"}


@dataclass(frozen=True)
class Left:
    arn: str
    state: str


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def _state(arn: str, ec2: Any, rds: Any) -> str | None:
    """The resource's state, or None when it is gone (or going)."""
    parts = arn.split(":", 6)
    if parts[2] == "ec2":
        kind, _, name = parts[5].partition("/")
    elif parts[2] == "rds" and len(parts) == 7:
        kind, name = parts[5], parts[6]
    else:
        return "present"  # anything else a run tagged: there while it is listed
    try:
        if kind == "instance":
            found = [i for r in ec2.describe_instances(InstanceIds=[name])["Reservations"] for i in r["Instances"]]
            state = str(found[0]["State"]["Name"]) if found else None
            return None if state is None or state in _GONE_EC2 else state
        if kind == "db":
            dbs = rds.describe_db_instances(DBInstanceIdentifier=name)["DBInstances"]
            state = str(dbs[0]["DBInstanceStatus"]) if dbs else None
            return None if state is None or state in _GONE_DB else state
        if kind == "cluster":
            found = rds.describe_db_clusters(DBClusterIdentifier=name)["DBClusters"]
            state = str(found[0]["Status"]) if found else None
            return None if state is None or state in _GONE_DB else state
    except ClientError as e:
        if _code(e) in _NOT_FOUND:
            return None
        raise
    return "present"


def left_behind(run_id: str, regions: Iterable[str], client: Any) -> list[Left]:
    """Every resource tagged with ``run_id`` still there in ``regions``; ``client(service, region)``."""
    out: list[Left] = []
    for region in dict.fromkeys(regions):
        tagging, ec2, rds = client("resourcegroupstaggingapi", region), client("ec2", region), client("rds", region)
        pages = tagging.get_paginator("get_resources").paginate(TagFilters=[{"Key": TAG_RUN_ID, "Values": [run_id]}])
        for page in pages:
            for mapping in page.get("ResourceTagMappingList", []):
                arn = str(mapping["ResourceARN"])
                state = _state(arn, ec2, rds)
                if state is not None:
                    out.append(Left(arn, state))
    return out
