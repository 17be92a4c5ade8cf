"""Find and remove what a run left behind, by tag: the failure handler and the hourly janitor.

Every resource a run creates carries ``benchfleet:run-id``, ``benchfleet:expires-at`` and the
owning stack's ``benchfleet:stack`` (``benchfleet.plan.naming``). Two callers remove them:

- ``teardown_run``: everything of one run, whatever its expiry (the run failed, timed out or was
  cancelled; StopExecution skips the state machine's Catch, so its Teardown never ran);
- ``janitor_sweep``: everything whose run is no longer running, or that is past its expiry.
  A running run's resources before their expiry are never touched.

Only resources that carry **this** stack's identity are ever candidates: another stack in the same
account sees its own runs as running and ours as not, so a janitor that went by the run-id key alone
would terminate the other stack's live runs (IAM enforces the same rule; this keeps the sweep from
even trying). Deletion and termination protection are never lifted: benchfleet creates everything
with both off, so a protected resource is one a person protected, and it is reported, not removed.

Both are idempotent and safe to run at the same time as each other and as the state machine's own
Teardown: removing something that is already being removed, or is gone, counts as success.

RDS authorizes the tags of a create as rds:AddTagsToResource with no create-only condition, so IAM
cannot tell provision tagging the database it creates from provision tagging a database someone else
named with this stack's prefix. A database is therefore removed only when its identifier is the one
provision derives from its own run-id and target-id tags (``naming.db_identifier``: a digest of
both); any other is reported, never removed.

EC2 instances and EBS volumes are found with a server-side tag filter; RDS cannot filter on tags, so DB instances
and clusters are listed and their ``TagList`` read (DescribeDBInstances / DescribeDBClusters
include it). DB instances go before clusters: a cluster refuses deletion while it still has members
that are not deleting. Volumes go after them: a data volume attached with DeleteOnTermination goes with its
instance (counted as already gone once that instance is removed or going); a detached one is deleted;
one attached otherwise is reported, and removed by a later sweep once it is detached. The run's
parameter groups (benchfleet.aws.fleet.paramgroups) go last; RDS lists them without tags, so only
those named as provision names them are asked for their tags, and one a database being deleted
still uses is kept for a later sweep, not counted as a failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from botocore.exceptions import ClientError

from benchfleet.aws.clients import client
from benchfleet.aws.fleet import paramgroups
from benchfleet.aws.fleet.cluster import secret_named as cluster_secret_named
from benchfleet.plan.naming import TAG_EXPIRES_AT, TAG_RUN_ID, TAG_STACK, TAG_TARGET_ID, db_identifier

Kind = Literal["ec2-instance", "db-instance", "db-cluster", "ec2-volume", "db-parameter-group",
               "db-cluster-parameter-group", "secret"]
Outcome = Literal["removed", "already-gone"]

# Removal order: members before the clusters that hold them, parameter groups after the databases
# that use them; EC2 clients anywhere.
_ORDER: dict[str, int] = {"ec2-instance": 0, "db-instance": 1, "db-cluster": 2, "ec2-volume": 3,
                          "db-parameter-group": 4, "db-cluster-parameter-group": 5, "secret": 6}
_PARAMETER_GROUP_KINDS = ("db-parameter-group", "db-cluster-parameter-group")
_LIVE_VOLUME_STATES = ["creating", "available", "in-use", "error"]
_LIVE_EC2_STATES = ["pending", "running", "stopping", "stopped"]
_GONE_CODES = {
    "InvalidInstanceID.NotFound", "DBInstanceNotFound", "DBInstanceNotFoundFault",
    "DBClusterNotFoundFault", "DBClusterNotFound", "InvalidVolume.NotFound", *paramgroups.GONE_CODES,
    "ResourceNotFoundException",
}
_BUSY_CODES = {"InvalidDBInstanceState", "InvalidDBInstanceStateFault", "InvalidDBClusterStateFault",
               "InvalidDBClusterState"}


@dataclass(frozen=True)
class Resource:
    kind: Kind
    id: str
    region: str
    run_id: str
    target_id: str | None
    expires_at: datetime | None
    state: str
    deletion_protection: bool = False
    cluster_id: str | None = None
    # Why this resource, though tagged as ours, was not created by its run (never removed).
    not_created_by_run: str | None = None
    # A volume: the instances it is attached to, and whether EC2 deletes it with them.
    attached_to: tuple[str, ...] = ()
    delete_on_termination: bool = False

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "region": self.region, "run_id": self.run_id,
                "target_id": self.target_id, "state": self.state,
                "expires_at": self.expires_at.strftime("%Y-%m-%dT%H:%M:%SZ") if self.expires_at else None}


@dataclass
class SweepReport:
    removed: list[Resource] = field(default_factory=list)
    already_gone: list[Resource] = field(default_factory=list)
    kept: list[tuple[Resource, str]] = field(default_factory=list)
    failed: list[tuple[Resource, str]] = field(default_factory=list)

    def merge(self, other: SweepReport) -> None:
        self.removed += other.removed
        self.already_gone += other.already_gone
        self.kept += other.kept
        self.failed += other.failed

    def summary(self) -> dict[str, Any]:
        return {
            "removed": [r.describe() for r in self.removed],
            "already_gone": [r.describe() for r in self.already_gone],
            "kept": [{**r.describe(), "reason": why} for r, why in self.kept],
            "failed": [{**r.describe(), "error": err} for r, err in self.failed],
        }


@dataclass(frozen=True)
class RegionClients:
    region: str
    ec2: Any
    rds: Any
    # A cluster's password secrets (benchfleet.aws.fleet.cluster); None: not swept (older callers).
    secretsmanager: Any = None


ClientsFor = Callable[[str], RegionClients]


def region_clients(region: str) -> RegionClients:
    """EC2 and RDS clients of one region (what the sweeping Lambdas use): the process's own, so a
    test's ``clients.override`` reaches a sweep as it reaches every other handler."""
    return RegionClients(region=region, ec2=client("ec2", region), rds=client("rds", region),
                         secretsmanager=client("secretsmanager", region))


def parse_expiry(value: str | None) -> datetime | None:
    """``benchfleet:expires-at`` as an aware datetime; None when absent or unreadable (an unreadable
    expiry never makes a resource removable on its own: its run must also have ended)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _tag_map(tags: Iterable[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or [] if "Key" in t and "Value" in t}


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


# ---- finding ------------------------------------------------------------------------------------

def _resource(kind: Kind, rid: str, region: str, raw_tags: Iterable[dict[str, str]] | None, owner: str,
              run_id: str | None, state: str, **extra: Any) -> Resource | None:
    """A Resource from a described item, or None unless it carries our stack's identity and a run id
    (the one we look for, when given)."""
    tags = _tag_map(raw_tags)
    if tags.get(TAG_STACK) != owner or TAG_RUN_ID not in tags or (run_id and tags[TAG_RUN_ID] != run_id):
        return None
    # EC2 tags its instances and volumes only at launch (ec2:CreateAction): nothing can be tagged into
    # our ownership later, as an RDS database can, so only databases must prove their derived names.
    if kind.startswith("db-"):
        extra["not_created_by_run"] = _adopted(rid, tags[TAG_RUN_ID], tags.get(TAG_TARGET_ID))
    return Resource(kind=kind, id=rid, region=region, run_id=tags[TAG_RUN_ID], target_id=tags.get(TAG_TARGET_ID),
                    expires_at=parse_expiry(tags.get(TAG_EXPIRES_AT)), state=state, **extra)


_DB_NAME = re.compile(r"^(?P<prefix>[a-z][a-z0-9]*)-.+-r(?P<repetition>[0-9]+)-(?P<role>db|writer|cluster|pg|cpg)$")


def _adopted(identifier: str, run_id: str, target_id: str | None) -> str | None:
    """Why a database tagged with this run was not created by it (None: it was): provision names each
    database from its run, target, repetition and role, which a database named before the run cannot match."""
    match = _DB_NAME.match(identifier)
    if match and target_id is not None and identifier == db_identifier(
            run_id, target_id, int(match["repetition"]), match["role"], prefix=match["prefix"]):
        return None
    return (f"{identifier} carries run {run_id}'s tags, but is not the database that run's provision would have "
            f"created for target {target_id} (its name is not derived from those tags): someone else's, tagged "
            "into this stack's ownership, and never removed")


def _require_owner(owner: str) -> str:
    if not owner:
        raise ValueError("no stack identity (BENCHFLEET_STACK): refusing to sweep what could be anyone's")
    return owner


def find_tagged(clients: RegionClients, owner: str, run_id: str | None = None) -> list[Resource]:
    """Every live EC2 instance, EBS volume, DB instance and DB cluster in one region that carries ``owner`` as
    its stack and a run id tag (that run's only, when ``run_id`` is given). Nothing else is returned."""
    _require_owner(owner)
    candidates: list[Resource | None] = []
    tag_filter = ({"Name": f"tag:{TAG_RUN_ID}", "Values": [run_id]} if run_id
                  else {"Name": "tag-key", "Values": [TAG_RUN_ID]})
    pages = clients.ec2.get_paginator("describe_instances").paginate(
        Filters=[tag_filter, {"Name": f"tag:{TAG_STACK}", "Values": [owner]},
                 {"Name": "instance-state-name", "Values": _LIVE_EC2_STATES}])
    for page in pages:
        for reservation in page.get("Reservations", []):
            for inst in reservation.get("Instances", []):
                candidates.append(_resource("ec2-instance", inst["InstanceId"], clients.region, inst.get("Tags"),
                                            owner, run_id, str(inst.get("State", {}).get("Name", ""))))
    volumes = clients.ec2.get_paginator("describe_volumes").paginate(
        Filters=[tag_filter, {"Name": f"tag:{TAG_STACK}", "Values": [owner]},
                 {"Name": "status", "Values": _LIVE_VOLUME_STATES}])
    for page in volumes:
        for vol in page.get("Volumes", []):
            attachments = vol.get("Attachments") or []
            candidates.append(_resource(
                "ec2-volume", vol["VolumeId"], clients.region, vol.get("Tags"), owner, run_id,
                str(vol.get("State", "")),
                attached_to=tuple(str(a.get("InstanceId")) for a in attachments),
                delete_on_termination=bool(attachments) and all(a.get("DeleteOnTermination") for a in attachments)))
    for page in clients.rds.get_paginator("describe_db_instances").paginate():
        for db in page.get("DBInstances", []):
            candidates.append(_resource("db-instance", db["DBInstanceIdentifier"], clients.region, db.get("TagList"),
                                        owner, run_id, str(db.get("DBInstanceStatus", "")),
                                        deletion_protection=bool(db.get("DeletionProtection")),
                                        cluster_id=db.get("DBClusterIdentifier")))
    for page in clients.rds.get_paginator("describe_db_clusters").paginate():
        for cluster in page.get("DBClusters", []):
            candidates.append(_resource("db-cluster", cluster["DBClusterIdentifier"], clients.region,
                                        cluster.get("TagList"), owner, run_id, str(cluster.get("Status", "")),
                                        deletion_protection=bool(cluster.get("DeletionProtection"))))
    candidates += _parameter_groups(clients, owner, run_id)
    candidates += _secrets(clients, owner, run_id)
    return [r for r in candidates if r is not None]


def _secrets(clients: RegionClients, owner: str, run_id: str | None) -> list[Resource | None]:
    """A cluster's password secrets (benchfleet.aws.fleet.cluster). A secret can be tagged after it
    was created, so, as a database, it must prove its name: the one provision derives from its tags."""
    if clients.secretsmanager is None:
        return []
    filters = [{"Key": "tag-key", "Values": [TAG_RUN_ID]}] + (
        [{"Key": "tag-value", "Values": [run_id]}] if run_id else [])
    found: list[Resource | None] = []
    for page in clients.secretsmanager.get_paginator("list_secrets").paginate(Filters=filters):
        for secret in page.get("SecretList", []):
            if secret.get("DeletedDate"):
                continue
            res = _resource("secret", str(secret["ARN"]), clients.region, secret.get("Tags"), owner, run_id,
                            "available")
            if res is not None and not cluster_secret_named(str(secret.get("Name", "")), res.run_id, res.target_id):
                res = replace(res, not_created_by_run=(
                    f"secret {secret.get('Name')} carries run {res.run_id}'s tags, but is not named as that run's "
                    "provision names its secrets: someone else's, never removed"))
            found.append(res)
    return found


def _parameter_groups(clients: RegionClients, owner: str, run_id: str | None) -> list[Resource | None]:
    """The run's parameter groups (benchfleet.aws.fleet.paramgroups). RDS lists them without their
    tags: only those named as provision names them are asked for theirs (ListTagsForResource)."""
    found: list[Resource | None] = []
    listings = (("db-parameter-group", "describe_db_parameter_groups", "DBParameterGroups", "DBParameterGroupName",
                 "DBParameterGroupArn"),
                ("db-cluster-parameter-group", "describe_db_cluster_parameter_groups", "DBClusterParameterGroups",
                 "DBClusterParameterGroupName", "DBClusterParameterGroupArn"))
    for kind, operation, key, name_key, arn_key in listings:
        for page in clients.rds.get_paginator(operation).paginate():
            for group in page.get(key, []):
                name = str(group.get(name_key, ""))
                match = _DB_NAME.match(name)
                if not match or match["role"] != paramgroups.ROLE[
                        paramgroups.CLUSTER if kind == "db-cluster-parameter-group" else paramgroups.INSTANCE]:
                    continue
                tags = clients.rds.list_tags_for_resource(ResourceName=group[arn_key]).get("TagList")
                found.append(_resource(kind, name, clients.region, tags, owner, run_id, "available"))  # type: ignore[arg-type]
    return found


# ---- removing -----------------------------------------------------------------------------------

def _still_there(clients: RegionClients, res: Resource) -> bool:
    """After a 'busy' error: is the resource neither gone nor already deleting?"""
    try:
        if res.kind == "db-instance":
            dbs = clients.rds.describe_db_instances(DBInstanceIdentifier=res.id)["DBInstances"]
            return bool(dbs) and dbs[0].get("DBInstanceStatus") != "deleting"
        clusters = clients.rds.describe_db_clusters(DBClusterIdentifier=res.id)["DBClusters"]
        return bool(clusters) and clusters[0].get("Status") != "deleting"
    except ClientError as e:
        if _code(e) in _GONE_CODES:
            return False
        raise


def _volume_now(clients: RegionClients, res: Resource) -> Resource:
    """The volume as EC2 describes it now (gone: state "deleted")."""
    try:
        found = clients.ec2.describe_volumes(VolumeIds=[res.id])["Volumes"]
    except ClientError as e:
        if _code(e) in _GONE_CODES:
            return replace(res, state="deleted")
        raise
    if not found:
        return replace(res, state="deleted")
    attachments = found[0].get("Attachments") or []
    return replace(res, state=str(found[0].get("State", "")),
                   attached_to=tuple(str(a.get("InstanceId")) for a in attachments),
                   delete_on_termination=bool(attachments) and all(a.get("DeleteOnTermination") for a in attachments))


def _instances_going(clients: RegionClients, instance_ids: set[str]) -> bool:
    """Are these instances terminated or terminating (their DeleteOnTermination volumes with them)?"""
    if not instance_ids:
        return True
    try:
        reservations = clients.ec2.describe_instances(InstanceIds=sorted(instance_ids))["Reservations"]
    except ClientError as e:
        if _code(e) in _GONE_CODES:
            return True
        raise
    states = {i["InstanceId"]: i.get("State", {}).get("Name") for r in reservations for i in r["Instances"]}
    return all(states.get(i, "terminated") in ("shutting-down", "terminated") for i in instance_ids)


class Protected(Exception):
    """The resource is deletion- or termination-protected (benchfleet creates nothing protected, so a
    person turned it on), or is not one its run created: the sweep leaves it and reports it
    (RemovalFailures alarms)."""


def remove(clients: RegionClients, res: Resource, going: frozenset[str] = frozenset()) -> Outcome:
    """Terminate or delete one resource, no final snapshot. Never lifts deletion or termination
    protection (raises Protected). Raises ClientError when the resource could not be removed and
    is still there. ``going``: instances removed or going, whose DeleteOnTermination volumes go too."""
    if res.not_created_by_run:
        raise Protected(res.not_created_by_run)
    if res.state in ("shutting-down", "terminated", "deleting"):
        return "already-gone"
    if res.kind == "ec2-volume" and res.state == "in-use":
        res = _volume_now(clients, res)  # its instance may have gone since it was listed
        if res.state in ("deleting", "deleted"):
            return "already-gone"
        if res.state == "in-use":
            if res.delete_on_termination and _instances_going(clients, set(res.attached_to) - going):
                return "already-gone"  # EC2 deletes it with its instance
            raise ClientError({"Error": {"Code": "VolumeInUse", "Message": f"{res.id} is attached to "
                                         f"{', '.join(res.attached_to)}; removed by a later sweep once detached"}},
                              "DeleteVolume")
    if res.deletion_protection:
        raise Protected(f"deletion protection is on; benchfleet created {res.id} without it, so someone "
                        "turned it on: not removing it")
    try:
        if res.kind == "ec2-instance":
            try:
                clients.ec2.terminate_instances(InstanceIds=[res.id])
            except ClientError as e:
                if _code(e) == "OperationNotPermitted":
                    raise Protected(f"termination protection is on for {res.id}: not removing it") from None
                raise
        elif res.kind == "ec2-volume":
            clients.ec2.delete_volume(VolumeId=res.id)
        elif res.kind == "secret":
            clients.secretsmanager.delete_secret(SecretId=res.id, ForceDeleteWithoutRecovery=True)
        elif res.kind in _PARAMETER_GROUP_KINDS:
            if res.kind == "db-cluster-parameter-group":
                clients.rds.delete_db_cluster_parameter_group(DBClusterParameterGroupName=res.id)
            else:
                clients.rds.delete_db_parameter_group(DBParameterGroupName=res.id)
        elif res.kind == "db-instance":
            kwargs: dict[str, Any] = {"DBInstanceIdentifier": res.id, "SkipFinalSnapshot": True}
            if not res.cluster_id:  # automated backups belong to the cluster for Aurora members
                kwargs["DeleteAutomatedBackups"] = True
            clients.rds.delete_db_instance(**kwargs)
        else:
            clients.rds.delete_db_cluster(DBClusterIdentifier=res.id, SkipFinalSnapshot=True)
    except ClientError as e:
        code = _code(e)
        if code in _GONE_CODES:
            return "already-gone"
        if code in paramgroups.IN_USE_CODES and res.kind in _PARAMETER_GROUP_KINDS:
            raise InUse(f"{res.id} is still used by a database being deleted: a later sweep removes it") from None
        if code in _BUSY_CODES and res.kind != "ec2-instance" and not _still_there(clients, res):
            return "already-gone"
        raise
    return "removed"


class InUse(Exception):
    """A run's parameter group a database still uses (it is being deleted): kept for a later sweep,
    not a failure (the janitor removes it once the database is gone)."""


def remove_all(clients_for: ClientsFor, resources: Iterable[Resource]) -> SweepReport:
    report = SweepReport()
    going: set[str] = set()
    for res in sorted(resources, key=lambda r: (r.region, _ORDER[r.kind], r.id)):
        try:
            outcome = remove(clients_for(res.region), res, frozenset(going))
            if res.kind == "ec2-instance":
                going.add(res.id)
        except InUse as e:
            report.kept.append((res, str(e)))
            continue
        except Protected as e:
            report.failed.append((res, f"Protected: {e}"))
            continue
        except ClientError as e:
            report.failed.append((res, f"{_code(e)}: {e.response.get('Error', {}).get('Message', '')}"))
            continue
        (report.removed if outcome == "removed" else report.already_gone).append(res)
    return report


# ---- the two callers ----------------------------------------------------------------------------

def teardown_run(run_id: str, owner: str, clients_for: ClientsFor, regions: Iterable[str]) -> SweepReport:
    """Remove everything of ``owner``'s stack tagged with ``run_id`` in ``regions``, whatever its expiry."""
    report = SweepReport()
    for region in dict.fromkeys(regions):
        report.merge(remove_all(clients_for, find_tagged(clients_for(region), owner, run_id)))
    return report


def removal_reason(res: Resource, running: set[str], now: datetime) -> str | None:
    """Why the janitor may remove ``res`` (None: keep it). Expiry wins over a running run: expiry
    is the plan's wall time plus a margin, so a run still going past it has lost its way."""
    if res.expires_at is not None and res.expires_at <= now:
        return "expired"
    if res.run_id not in running:
        return "run not running"
    return None


def janitor_sweep(clients_for: ClientsFor, regions: Iterable[str], running_runs: Callable[[], set[str]],
                  owner: str, now: datetime | None = None) -> SweepReport:
    """Remove ``owner``'s tagged resources whose run is no longer running (among ``running_runs``,
    this stack's executions) or that are past their expiry.

    Resources are listed *before* the running runs are: anything found was created by a run that
    had started by then, so if that run is still running it is in the list (listing runs first would
    let a run that starts in between lose its fresh resources). If the running runs cannot be
    listed, nothing is removed (``running_runs`` raises)."""
    now = now or datetime.now(UTC)
    found: list[Resource] = []
    for region in dict.fromkeys(regions):
        found += find_tagged(clients_for(region), owner)
    if not found:
        return SweepReport()
    running = running_runs()
    report = SweepReport()
    doomed = []
    for res in found:
        why = removal_reason(res, running, now)
        if why is None:
            report.kept.append((res, "run is running and not expired"))
        else:
            doomed.append(res)
    report.merge(remove_all(clients_for, doomed))
    return report


def run_id_of(execution_name: str, execution_input: str | None) -> str:
    """The run id of an execution: ``run_id`` of its input when it carries one (the API sets it to
    the execution name), else the execution name (scheduled executions)."""
    if execution_input:
        try:
            data = json.loads(execution_input)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("run_id"), str) and data["run_id"]:
            return str(data["run_id"])
    return execution_name


def running_executions(sfn: Any, state_machine_arn: str) -> set[str]:
    """Run ids of the state machine's running executions: each one's name and, when its input names
    another run id, that too (so a run is protected however its id was chosen)."""
    names: set[str] = set()
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn,
                                                          statusFilter="RUNNING")
    for page in pages:
        for execution in page.get("executions", []):
            names.add(str(execution["name"]))
            described = sfn.describe_execution(executionArn=execution["executionArn"])
            names.add(run_id_of(str(execution["name"]), described.get("input")))
    return names
