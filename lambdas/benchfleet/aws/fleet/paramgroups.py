"""The run's own parameter groups of an RDS or Aurora target (issue 28 item 1): what the spec's
mysql_config and server_options say, on the server.

Per repetition of an ``rds`` target one DB parameter group; of an ``aurora`` target one DB cluster
parameter group (cluster-level parameters) and one DB parameter group (the writer's, instance-level
ones). Plan decides their entries (``benchfleet.serverparams.db_parameters``: a setting RDS does not
let a parameter group set is refused there, naming it); provision creates them, tagged like every
other resource of the run and named from the run, target, repetition and role as the databases are
(``naming.db_identifier``: ``-pg``, ``-cpg``), before the database that names them, so it boots with
them; readiness reboots the writer once where a static parameter still waits for a reboot; a
variant's step switches the dynamic ones (ApplyMethod immediate); teardown deletes them after their
database. A parameter group cannot be deleted while a database still uses it (the database may be
``deleting`` for minutes): teardown leaves such a group to the janitor and says so, the sweep removes
it once the database is gone.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from benchfleet import naming
from benchfleet.aws.errors import aws_errors, error_code
from benchfleet.serverparams import RDS_PARAMETERS_PER_CALL

INSTANCE, CLUSTER = "instance", "cluster"
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


def create(rds: Any, groups: Groups, *, family: str, parameters: list[dict[str, Any]], tags: dict[str, str],
           description: str) -> None:
    """Create the groups (tagged) and set the plan's parameters in them. Idempotent: a retried
    provision finds its groups and sets the same values again."""
    tag_list = naming.tag_list(tags)
    with aws_errors():
        if groups.cluster:
            with contextlib.suppress(rds.exceptions.DBParameterGroupAlreadyExistsFault):
                rds.create_db_cluster_parameter_group(
                    DBClusterParameterGroupName=groups.cluster, DBParameterGroupFamily=family,
                    Description=description, Tags=tag_list)
        if groups.instance:
            with contextlib.suppress(rds.exceptions.DBParameterGroupAlreadyExistsFault):
                rds.create_db_parameter_group(DBParameterGroupName=groups.instance, DBParameterGroupFamily=family,
                                              Description=description, Tags=tag_list)
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
