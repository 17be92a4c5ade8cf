"""The run's own parameter groups of an RDS or Aurora target (issue 28 item 1): what the spec's
mysql_config and server_options say, on the server.

Per repetition of an ``rds`` target one DB parameter group; of an ``aurora`` target one DB cluster
parameter group (cluster-level parameters) and one DB parameter group (the writer's, instance-level
ones). Plan decides their entries (``benchfleet.workload.serverparams.db_parameters``: a setting RDS does not
let a parameter group set is refused there, naming it); provision creates them, tagged like every
other resource of the run and named from the run, target, repetition and role as the databases are
(``naming.db_identifier``: ``-pg``, ``-cpg``), before the database that names them, so it boots with
them; readiness reboots the writer once where a static parameter still waits for a reboot; a
variant's step switches the dynamic ones (ApplyMethod immediate); teardown deletes them after their
database. AWS asks for 5 minutes between a group's creation and the first database that uses it
(SETTLE_S): provision makes the groups, the state machine waits, provision makes the database. A
parameter group cannot be deleted while a database still uses it (the database may be
``deleting`` for minutes): teardown says so (``waiting``) and the state machine runs it again once
that has passed, until the group is gone (``lifecycle.next_lap``); the sweep removes one still there
after the last lap.

A group is the run's only when it carries the run's, the target's and the owning stack's tags, as a
database is (``owned``): its derived name alone proves nothing, since anyone may create a group of that
name (untagged, or another stack's). Provision adopts an existing group of its name only when it is
its own (a retried provision's) and fails the target otherwise, never setting someone else's
parameters; teardown deletes only the run's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import TargetFailed, aws_errors, error_code
from benchfleet.plan import naming
from benchfleet.plan.estimates import PARAMETER_GROUPS_SETTLE_S
from benchfleet.workload.serverparams import RDS_PARAMETERS_PER_CALL

INSTANCE, CLUSTER = "instance", "cluster"
# Between creating the run's groups and creating the database that boots with them (AWS asks for 5
# minutes: benchfleet.plan.estimates.PARAMETER_GROUPS_SETTLE_S, which the plan's wall time shows).
SETTLE_S = PARAMETER_GROUPS_SETTLE_S
# naming.db_identifier roles: the DB parameter group, the DB cluster parameter group.
ROLE = {INSTANCE: "pg", CLUSTER: "cpg"}
# How teardown names them in what it deleted or left.
_LABEL = {INSTANCE: "db parameter group", CLUSTER: "db cluster parameter group"}
# What RDS answers for a group a database still uses, and for one that is gone.
IN_USE_CODES = frozenset({"InvalidDBParameterGroupState", "InvalidDBParameterGroupStateFault"})
GONE_CODES = frozenset({"DBParameterGroupNotFound", "DBParameterGroupNotFoundFault",
                        "DBClusterParameterGroupNotFound", "DBClusterParameterGroupNotFoundFault"})


@dataclass(frozen=True)
class Groups:
    """The parameter group names of one repetition of a target (None: the kind has none)."""

    instance: str | None = None
    cluster: str | None = None

    def of(self, level: str) -> str | None:
        return self.cluster if level == CLUSTER else self.instance


def names(kind: str, run_id: str, target_id: str, repetition: int, prefix: str) -> Groups:
    if kind not in ("rds", "aurora"):
        return Groups()
    instance = naming.db_identifier(run_id, target_id, repetition, ROLE[INSTANCE], prefix)
    cluster = naming.db_identifier(run_id, target_id, repetition, ROLE[CLUSTER], prefix) if kind == "aurora" else None
    return Groups(instance=instance, cluster=cluster)


def as_api(parameter: dict[str, Any], method: str | None = None) -> dict[str, str]:
    """A plan entry ({name, value, level, apply}) as ModifyDB(Cluster)ParameterGroup takes it: static
    parameters pending-reboot (immediate is refused for them), dynamic ones immediate."""
    return {"ParameterName": str(parameter["name"]), "ParameterValue": str(parameter["value"]),
            "ApplyMethod": method or ("immediate" if parameter.get("apply") == "dynamic" else "pending-reboot")}


def _modify(rds: Any, level: str, name: str, entries: list[dict[str, str]]) -> None:
    for start in range(0, len(entries), RDS_PARAMETERS_PER_CALL):
        chunk = entries[start:start + RDS_PARAMETERS_PER_CALL]
        with aws_errors():
            if level == CLUSTER:
                rds.modify_db_cluster_parameter_group(DBClusterParameterGroupName=name, Parameters=chunk)
            else:
                rds.modify_db_parameter_group(DBParameterGroupName=name, Parameters=chunk)


# The tags that make a group the run's: its run, its target, the owning stack (not its expiry).
IDENTITY_TAGS = (naming.TAG_RUN_ID, naming.TAG_TARGET_ID, naming.TAG_STACK)


def _tags(rds: Any, level: str, name: str) -> dict[str, str] | None:
    """The group's tags (None: there is no such group; empty: they may not be read, as provision may
    read the tags of groups tagged as its stack's only (IAM): not the run's either way)."""
    found = _each(rds, Groups(**{level: name}), "describe_db_parameter_groups", "describe_db_cluster_parameter_groups")
    answer = found[0][2] if found and found[0][3] is None else None
    items = (answer or {}).get("DBClusterParameterGroups" if level == CLUSTER else "DBParameterGroups") or []
    if not items:
        return None
    arn = items[0]["DBClusterParameterGroupArn" if level == CLUSTER else "DBParameterGroupArn"]
    try:
        with aws_errors():
            listed = rds.list_tags_for_resource(ResourceName=arn).get("TagList") or []
    except ClientError as e:
        if error_code(e) not in ("AccessDenied", "AccessDeniedException"):
            raise
        return {}
    return {t["Key"]: t["Value"] for t in listed}


def _is_ours(found: dict[str, str], identity: dict[str, str]) -> bool:
    return all(found.get(k) == identity.get(k) for k in IDENTITY_TAGS)


def owned(rds: Any, groups: Groups, *, run_id: str, target_id: str, owner: str) -> Groups:
    """Those of ``groups`` that exist and carry the run's, the target's and the stack's tags."""
    identity = {naming.TAG_RUN_ID: run_id, naming.TAG_TARGET_ID: target_id, naming.TAG_STACK: owner}
    mine = {level: name for level in (INSTANCE, CLUSTER) if (name := groups.of(level))
            and (found := _tags(rds, level, name)) is not None and _is_ours(found, identity)}
    return Groups(**mine)


def _adopt(rds: Any, level: str, name: str, tags: dict[str, str]) -> None:
    """A group of the run's name already exists: a retried provision's (its tags are the run's) is
    taken as it is; anyone else's fails the target, untouched."""
    found = _tags(rds, level, name)
    if found is not None and not _is_ours(found, tags):
        theirs = ", ".join(f"{k}={found[k]}" for k in IDENTITY_TAGS if k in found) or "no benchfleet tags"
        raise TargetFailed(f"{_LABEL[level]} {name} already exists and is not this run's ({theirs}): not "
                           "adopted, nothing set in it; delete or rename it if it is a leftover")


def create(rds: Any, groups: Groups, *, family: str, parameters: list[dict[str, Any]], tags: dict[str, str],
           description: str) -> None:
    """Create the groups (tagged) and set the plan's parameters in them. Idempotent: a retried
    provision finds its groups (tagged as the run's) and sets the same values again; a group of that
    name that is not the run's fails the target (``_adopt``)."""
    tag_list = naming.tag_list(tags)
    for level in (CLUSTER, INSTANCE):
        name = groups.of(level)
        if not name:
            continue
        exists = False
        with aws_errors():
            try:
                if level == CLUSTER:
                    rds.create_db_cluster_parameter_group(
                        DBClusterParameterGroupName=name, DBParameterGroupFamily=family, Description=description,
                        Tags=tag_list)
                else:
                    rds.create_db_parameter_group(DBParameterGroupName=name, DBParameterGroupFamily=family,
                                                  Description=description, Tags=tag_list)
            except rds.exceptions.DBParameterGroupAlreadyExistsFault:  # RDS's answer for both levels
                exists = True
        if exists:
            _adopt(rds, level, name, tags)
    for level in (CLUSTER, INSTANCE):
        name = groups.of(level)
        entries = [as_api(p) for p in parameters if p.get("level", INSTANCE) == level]
        if name and entries:
            _modify(rds, level, name, entries)


def apply_now(rds: Any, groups: Groups, parameters: list[dict[str, Any]]) -> list[str]:
    """A variant's values into the running server's groups, immediately (Plan refused any that is
    not dynamic): what changed, as ``level:name=value``."""
    done: list[str] = []
    for level in (CLUSTER, INSTANCE):
        mine = [p for p in parameters if p.get("level", INSTANCE) == level]
        if not mine:
            continue
        name = groups.of(level)
        if not name:
            raise ValueError(f"no {level} parameter group recorded for the target: cannot set "
                             f"{', '.join(str(p['name']) for p in mine)}")
        _modify(rds, level, name, [as_api(p, "immediate") for p in mine])
        done += [f"{level}:{p['name']}={p['value']}" for p in mine]
    return done


def pending_reboot(db_instance: dict[str, Any], cluster: dict[str, Any] | None = None) -> list[str]:
    """The writer's parameter groups whose values wait for a reboot (DescribeDBInstances'
    ParameterApplyStatus, DescribeDBClusters' member DBClusterParameterGroupStatus)."""
    waiting = [f"{g.get('DBParameterGroupName')}" for g in db_instance.get("DBParameterGroups") or []
               if g.get("ParameterApplyStatus") == "pending-reboot"]
    for member in (cluster or {}).get("DBClusterMembers") or []:
        if member.get("DBInstanceIdentifier") == db_instance.get("DBInstanceIdentifier") and \
                member.get("DBClusterParameterGroupStatus") == "pending-reboot":
            waiting.append(str(cluster.get("DBClusterParameterGroup") if cluster else ""))
    return waiting


def _each(rds: Any, groups: Groups, instance_op: str, cluster_op: str) -> list[tuple[str, str, Any, str | None]]:
    """(level, name, answer, error code) of one RDS call per group of ``groups``: ``instance_op`` on
    the DB parameter group, ``cluster_op`` on the cluster's, the writer's first (as their databases
    go). A code is given for what RDS answers as gone or in use; any other error is raised."""
    out: list[tuple[str, str, Any, str | None]] = []
    for level in (INSTANCE, CLUSTER):
        name = groups.of(level)
        if not name:
            continue
        key = "DBClusterParameterGroupName" if level == CLUSTER else "DBParameterGroupName"
        try:
            with aws_errors():
                answer = getattr(rds, cluster_op if level == CLUSTER else instance_op)(**{key: name})
        except ClientError as e:
            code = error_code(e)
            if code not in GONE_CODES | IN_USE_CODES:
                raise
            out.append((level, name, None, code))
            continue
        out.append((level, name, answer, None))
    return out


def delete(rds: Any, groups: Groups) -> tuple[list[str], list[str]]:
    """(deleted, still in use by a database being deleted: the janitor's) of ``groups``; a group
    already gone is neither."""
    done = _each(rds, groups, "delete_db_parameter_group", "delete_db_cluster_parameter_group")
    deleted = [f"{_LABEL[level]} {name}" for level, name, _, code in done if code is None]
    waiting = [f"{_LABEL[level]} {name}" for level, name, _, code in done if code in IN_USE_CODES]
    return deleted, waiting


def existing(rds: Any, groups: Groups) -> list[str]:
    """Which of ``groups`` still exist (for teardown's check of what is left)."""
    found = _each(rds, groups, "describe_db_parameter_groups", "describe_db_cluster_parameter_groups")
    # AWS answers NotFound for a group that is gone, some emulators an empty list.
    return [f"{_LABEL[level]} {name}" for level, name, answer, code in found
            if code is None and (answer.get("DBParameterGroups") or answer.get("DBClusterParameterGroups"))]
