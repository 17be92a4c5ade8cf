"""One target's lifecycle for one repetition: provision, readiness, teardown (by ids and by tag)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from benchfleet.aws.errors import TargetFailed
from benchfleet.aws.fleet import cluster, paramgroups, secret_binding
from benchfleet.aws.fleet import targets as t
from benchfleet.aws.planning import readywait
from benchfleet.aws.settings import Settings
from benchfleet.plan import naming
from benchfleet.spec.targets import Target

log = logging.getLogger(__name__)
_ISO = "%Y-%m-%dT%H:%M:%SZ"
# A parameter group cannot be deleted while its database is deleting (minutes: an Aurora writer and
# its cluster, ~10): the state machine runs teardown again every TEARDOWN_WAIT_S while one waits, at
# most TEARDOWN_LAPS times in all (15 minutes, the plan's Aurora teardown), then leaves it to the janitor.
TEARDOWN_WAIT_S = 60
TEARDOWN_LAPS = 16
# provision's answer for an rds / aurora target whose parameter groups were just made: the seconds
# the state machine waits before it calls provision again to create the database(s).
GROUPS_SETTLE = "groups_settle_s"


def _parse(ts: str) -> datetime:
    return datetime.strptime(ts, _ISO).replace(tzinfo=UTC)


def provision(ec2: Any, rds: Any, ssm: Any, settings: Settings, *, run_id: str, target: dict[str, Any],
              repetition: int, zone_index: int, expires_at: str,
              parameters: list[dict[str, Any]] | None = None, secretsmanager: Any = None,
              resources: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create the target (and its client) in the zone of ``SUBNET_IDS[zone_index]``. An rds or aurora
    target in two calls: first the run's parameter groups, set to the plan's ``parameters``
    (benchfleet.aws.fleet.paramgroups), and the client, answering ``groups_settle_s``; then, that long
    after ("Let the new parameter groups settle"), called again with that answer as ``resources``: its
    database(s), which boot with the groups. A cluster: every host at once, its nodes in distinct zones
    (benchfleet.aws.fleet.cluster), with ``secretsmanager`` for its password. On any failure what was
    already created is deleted before the error propagates (teardown by tag backs this up)."""
    # Through the spec's own model: defaults filled in, a malformed target refused here.
    target = TypeAdapter(Target).validate_python(target).model_dump(mode="json")
    target_id, kind = target["id"], target["kind"]
    databases = bool(resources and resources.get(GROUPS_SETTLE))  # the second call
    out: dict[str, Any] = {"kind": kind, "managed": kind != "existing", "instance_id": None,
                           "db_instance_id": None, "db_cluster_id": None, "parameter_group": None,
                           "cluster_parameter_group": None, "zone_index": zone_index,
                           "provisioned_at": t.now_iso()}
    if databases:
        out = {**{k: v for k, v in (resources or {}).items() if k != GROUPS_SETTLE},
               "provisioned_at": out["provisioned_at"]}  # the readiness checks count from the database's start
    if kind == "existing":
        out["instance_id"] = target["instance_id"]
        return out
    # Never launch a target anywhere but in the region it will be labelled with.
    region = target.get("region") or settings.home_region
    if region != ec2.meta.region_name or region != rds.meta.region_name:
        raise TargetFailed(f"target {target_id} is for {region}, but provision acts in {ec2.meta.region_name}: "
                           f"it needs {region}'s resources (CDK context key targetRegions)")
    out["region"] = region
    owner = settings.owner()
    tags = {naming.TAG_RUN_ID: run_id, naming.TAG_TARGET_ID: target_id, naming.TAG_EXPIRES_AT: expires_at,
            naming.TAG_STACK: owner}
    prefix = settings.db_identifier_prefix
    subnet_id, zone = t.subnet_for(ec2, settings, zone_index)
    out.update(subnet_id=subnet_id, zone=zone)
    groups = paramgroups.names(kind, run_id, target_id, repetition, prefix)
    out.update(parameter_group=groups.instance, cluster_parameter_group=groups.cluster)
    try:
        if kind == "cluster":
            cluster.provision(ec2, ssm, secretsmanager, settings, run_id=run_id, target=target,
                              repetition=repetition, tags=tags, out=out)
            return out
        if databases and kind == "rds":
            out["db_instance_id"] = t.create_rds(
                rds, settings, target=target, zone=zone, tags=tags, groups=groups,
                identifier=naming.db_identifier(run_id, target_id, repetition, "db", prefix))
            return out
        if databases and kind == "aurora":
            out["db_cluster_id"], out["db_instance_id"] = t.create_aurora(
                rds, settings, target=target, zone=zone, tags=tags, groups=groups,
                cluster_id=naming.db_identifier(run_id, target_id, repetition, "cluster", prefix),
                writer_id=naming.db_identifier(run_id, target_id, repetition, "writer", prefix))
            return out
        if kind in ("rds", "aurora"):
            # AWS: wait at least 5 minutes after creating a parameter group before creating the first
            # database that uses it (paramgroups.SETTLE_S): the database comes with the second call.
            t.create_parameter_groups(rds, target=target, groups=groups, parameters=parameters or [], tags=tags)
            out[GROUPS_SETTLE] = paramgroups.SETTLE_S
        role = "target" if kind == "ec2" else "client"
        instance_type = target["instance_type"] if kind == "ec2" else target["client"]["instance_type"]
        out["instance_type"] = instance_type
        out["instance_id"] = t.launch_instance(
            ec2, ssm, settings, instance_type=instance_type, subnet_id=subnet_id, tags=tags,
            name=naming.instance_name(run_id, target_id, repetition, role),
            token=naming.client_token(run_id, target_id, repetition, zone_index, role),
            storage=target.get("storage") if kind == "ec2" else None)
    except BaseException:
        log.warning("provision of %s failed in %s: deleting what was created", target_id, zone)
        teardown(ec2, rds, run_id=run_id, target_id=target_id, resources=out, owner=owner, verify=False,
                 repetition=repetition, prefix=prefix, secretsmanager=secretsmanager)
        raise
    return out


def check_ready(ec2: Any, rds: Any, ssm: Any, secretsmanager: Any, *, resources: dict[str, Any],
                timing: dict[str, Any], attempt: int, deadline: str, now: datetime | None = None) -> dict[str, Any]:
    """Is the target usable? The answer carries the next wait (``benchfleet.aws.planning.readywait``: early
    on, the rest of the kind's typical provisioning time, then the plain poll interval). A
    database's secret is bound to the run's host before the answer names it
    (benchfleet.aws.fleet.secret_binding)."""
    now = now or datetime.now(UTC)
    if now > _parse(deadline):
        raise TargetFailed(f"target not ready by its deadline {deadline}")
    db = None
    if resources.get("kind") == "cluster":
        ready, db = cluster.ready(ec2, ssm, secretsmanager, resources)
        elapsed = (now - _parse(resources["provisioned_at"])).total_seconds()
        wait = readywait.next_wait_s(elapsed, int(timing.get("provision_s", 0)), int(timing["ready_poll_s"]))
        return {"ready": ready, "attempt": attempt, "wait_s": 0 if ready else wait, "db": db if ready else None}
    ready = t.instance_ready(ec2, ssm, resources["instance_id"])
    if resources.get("db_instance_id"):
        db = t.db_connection(rds, resources)
        ready = ready and db is not None
        if ready and db is not None:
            if not db.get("password_secret_arn"):
                raise TargetFailed(f"database {resources['db_instance_id']} has no RDS-managed master secret")
            secret_binding.bind(secretsmanager, db["password_secret_arn"], resources["instance_id"])
    elapsed = (now - _parse(resources["provisioned_at"])).total_seconds()
    wait = readywait.next_wait_s(elapsed, int(timing.get("provision_s", 0)), int(timing["ready_poll_s"]))
    return {"ready": ready, "attempt": attempt, "wait_s": 0 if ready else wait, "db": db}


def next_lap(previous: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Teardown's answer to the state machine: ``result`` with the lap counted, what every lap deleted,
    and ``wait_s`` (teardown again after it) while a parameter group waits for its database and the
    laps are not used up; without ``wait_s`` the repetition goes on ("Parameter groups gone?")."""
    if not previous and not result.get("waiting"):
        return result  # done in one lap, the usual case: the answer as teardown gave it
    lap = int(previous.get("lap") or 0) + 1
    out = {**result, "lap": lap, "deleted": sorted({*(previous.get("deleted") or []), *result["deleted"]})}
    if result.get("waiting") and lap < TEARDOWN_LAPS:
        out["wait_s"] = TEARDOWN_WAIT_S
    return out


def teardown(ec2: Any, rds: Any, *, run_id: str, target_id: str, resources: dict[str, Any] | None,
             owner: str, verify: bool = True, repetition: int | None = None,
             prefix: str | None = None, secretsmanager: Any = None) -> dict[str, Any]:
    """Idempotent: delete what was recorded, then whatever else carries the run's, the target's and
    the owning stack's tags, then check that nothing is left that is neither gone nor going. The
    run's parameter groups go after their databases (their names derived as provision derives them,
    so a provision that failed before recording them still loses them); one a deleting database
    still uses is ``waiting``: the state machine tears down again once it is gone (``next_lap``), and
    the janitor removes any still left after the last lap."""
    resources = resources or {}
    if resources.get("managed") is False:
        return {"deleted": [], "left": [], "managed": False}
    deleted: list[str] = []
    instances = set(t.tagged_instances(ec2, run_id, target_id, owner))
    if resources.get("instance_id"):
        instances.add(resources["instance_id"])
    # A cluster's hosts (every node, the client, the proxy): recorded, and tagged like the client.
    instances.update(h["instance_id"] for h in (resources.get("hosts") or {}).values() if h.get("instance_id"))
    deleted += [f"instance {i}" for i in t.terminate_instances(ec2, sorted(instances))]
    # Data volumes go with their instance (DeleteOnTermination); any left detached is deleted here.
    deleted += [f"volume {v}" for v in t.delete_volumes(ec2, t.tagged_volumes(ec2, run_id, target_id, owner))]
    db_instances, clusters = t.tagged_databases(rds, run_id, target_id, owner)
    for ident in {*db_instances, *filter(None, [resources.get("db_instance_id")])}:
        if t.delete_db_instance(rds, ident):
            deleted.append(f"db instance {ident}")
    for ident in {*clusters, *filter(None, [resources.get("db_cluster_id")])}:
        if t.delete_db_cluster(rds, ident):
            deleted.append(f"db cluster {ident}")
    groups = paramgroups.Groups(instance=resources.get("parameter_group"),
                                cluster=resources.get("cluster_parameter_group"))
    if repetition is not None and prefix is not None and resources.get("kind") in ("rds", "aurora"):
        groups = paramgroups.names(str(resources["kind"]), run_id, target_id, repetition, prefix)
    # Only the run's own (tagged with the run, the target and the stack): one of its name that is
    # anyone else's is neither deleted nor counted as left.
    groups = paramgroups.owned(rds, groups, run_id=run_id, target_id=target_id, owner=owner)
    gone, waiting = paramgroups.delete(rds, groups)
    deleted += gone
    if secretsmanager is not None:  # a cluster's password secrets
        arns = {*cluster.tagged_secrets(secretsmanager, run_id, target_id, owner),
                *(resources.get("secrets") or {}).values()}
        deleted += [f"secret {a}" for a in cluster.delete_secrets(secretsmanager, sorted(arns))]
    left = t.leftovers(ec2, rds, run_id, target_id, owner) if verify else []
    if verify and secretsmanager is not None:
        left += [f"secret {a}" for a in cluster.tagged_secrets(secretsmanager, run_id, target_id, owner)]
    if verify:
        left += [g for g in paramgroups.existing(rds, groups) if g not in waiting]
    if left:
        raise TargetFailed(f"teardown of {target_id} left {', '.join(left)}")
    return {"deleted": sorted(deleted), "left": left, "waiting": waiting, "managed": True}
