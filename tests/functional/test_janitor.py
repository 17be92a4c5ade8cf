"""Janitor against moto: live, expired and foreign resources; only the right ones go; idempotent.
Two stacks in one account: each janitor removes only its own, and the other's live runs survive."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from benchfleet.aws.fleet import sweep
from benchfleet.plan import naming
from benchfleet.plan.naming import TAG_AGENT_HOST, TAG_EXPIRES_AT, TAG_RUN_ID, TAG_STACK, TAG_TARGET_ID

REGION = "us-east-1"
OWNER = "Benchfleet@us-east-1"  # BENCHFLEET_STACK as cdk/lib/ownership.ts builds it
OTHER_STACK = "Benchfleet-team-b@us-east-1"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
ASL = json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Pass", "End": True}}})


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        sfn = boto3.client("stepfunctions")
        iam = boto3.client("iam")
        role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        arn = sfn.create_state_machine(name="bf", definition=ASL, roleArn=role)["stateMachineArn"]
        monkeypatch.setenv("STATE_MACHINE_ARN", arn)
        monkeypatch.setenv("SWEEP_REGIONS", REGION)
        monkeypatch.setenv("BENCHFLEET_STACK", OWNER)
        yield sfn, arn


def tags(run_id: str, target_id: str, expires_at: datetime, owner: str = OWNER) -> dict[str, str]:
    """What provision puts on a resource of ``owner``'s stack."""
    return naming.tags(run_id, target_id, expires_at, owner)


def _tag_list(d: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in d.items()]


def ec2_instance(run_tags: dict[str, str] | None) -> str:
    ec2 = boto3.client("ec2")
    kwargs = {}
    if run_tags:
        kwargs["TagSpecifications"] = [{"ResourceType": "instance", "Tags": _tag_list(run_tags)}]
    res = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="t3.micro", **kwargs)
    return res["Instances"][0]["InstanceId"]


def ours(run_id: str, target_id: str, role: str = "db") -> str:
    """The identifier provision gives a database of this run and target (the sweepers check it)."""
    return naming.db_identifier(run_id, target_id, 1, role, prefix="bf2b97c5")


def db_instance(name: str, run_tags: dict[str, str] | None, protected: bool = False) -> str:
    boto3.client("rds").create_db_instance(
        DBInstanceIdentifier=name, DBInstanceClass="db.t3.micro", Engine="mysql", AllocatedStorage=20,
        MasterUsername="admin", MasterUserPassword="password123", DeletionProtection=protected,
        Tags=_tag_list(run_tags or {}))
    return name


def aurora(run_tags: dict[str, str]) -> tuple[str, str]:
    rds = boto3.client("rds")
    name = ours(run_tags[TAG_RUN_ID], run_tags[TAG_TARGET_ID], "cluster")
    writer = ours(run_tags[TAG_RUN_ID], run_tags[TAG_TARGET_ID], "writer")
    rds.create_db_cluster(DBClusterIdentifier=name, Engine="aurora-mysql", MasterUsername="admin",
                          MasterUserPassword="password123", DeletionProtection=False,
                          Tags=_tag_list(run_tags))
    rds.create_db_instance(DBInstanceIdentifier=writer, DBInstanceClass="db.r6g.large",
                           Engine="aurora-mysql", DBClusterIdentifier=name, Tags=_tag_list(run_tags))
    return name, writer


def live_ec2() -> set[str]:
    res = boto3.client("ec2").describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running", "stopped"]}])
    return {i["InstanceId"] for r in res["Reservations"] for i in r["Instances"]}


def live_dbs() -> set[str]:
    rds = boto3.client("rds")
    return ({d["DBInstanceIdentifier"] for d in rds.describe_db_instances()["DBInstances"]}
            | {c["DBClusterIdentifier"] for c in rds.describe_db_clusters()["DBClusters"]})


def start(sfn, arn: str, run_id: str) -> None:
    sfn.start_execution(stateMachineArn=arn, name=run_id, input=json.dumps({"run_id": run_id}))


def test_janitor_removes_only_finished_or_expired(aws):
    from handlers import janitor

    sfn, arn = aws
    later = NOW + timedelta(hours=3)
    earlier = NOW - timedelta(minutes=1)
    start(sfn, arn, "running-run")
    keep_live = ec2_instance(tags("running-run", "a", later))
    keep_live_db = db_instance(ours("running-run", "b"), tags("running-run", "b", later))
    keep_untagged = ec2_instance(None)
    keep_foreign = ec2_instance({"team": "payments", TAG_EXPIRES_AT: "2000-01-01T00:00:00Z"})
    keep_foreign_db = db_instance("foreign-db", {"owner": "someone"})
    gone_expired = ec2_instance(tags("running-run", "c", earlier))
    gone_finished = ec2_instance(tags("old-run", "a", later))
    gone_finished_db = db_instance(ours("old-run", "b"), tags("old-run", "b", later))
    gone_cluster = aurora(tags("old-run", "c", later))
    # an expiry nobody can read never removes a running run's resource on its own
    keep_bad_expiry = ec2_instance({TAG_RUN_ID: "running-run", TAG_TARGET_ID: "d", TAG_EXPIRES_AT: "soon",
                                    TAG_STACK: OWNER})
    # benchfleet's tag keys, but not created by this stack: never touched
    unowned = {TAG_RUN_ID: "old-run", TAG_EXPIRES_AT: "2000-01-01T00:00:00Z"}
    keep_unowned = ec2_instance(unowned)
    keep_guest_host = ec2_instance({TAG_AGENT_HOST: OWNER})  # an existing target's host, opted in
    keep_unowned_db = db_instance("legacy-db", unowned)
    # ours, but someone turned deletion protection on: reported, never lifted
    keep_protected_db = db_instance(ours("old-run", "e"), tags("old-run", "e", later), protected=True)
    # Issue 30, finding 10: databases someone else named with this stack's prefix, then tagged with a
    # run's tags (RDS has no create-only tagging condition): reported, never removed.
    keep_adopted = {db_instance("bf2b97c5-orders", tags("old-run", "f", later)),
                    db_instance("bf2b97c5-legacy-r1-db", tags("old-run", "g", later)),
                    db_instance(ours("old-run", "other-target"), tags("old-run", "h", later))}

    summary = janitor.sweep(now=NOW).summary()

    assert live_ec2() == {keep_live, keep_untagged, keep_foreign, keep_bad_expiry, keep_unowned, keep_guest_host}
    assert live_dbs() == {keep_live_db, keep_foreign_db, keep_unowned_db, keep_protected_db, *keep_adopted}
    removed = {r["id"] for r in summary["removed"]}
    assert removed == {gone_expired, gone_finished, gone_finished_db, *gone_cluster}
    failed = sorted((f["id"], f["error"].split(":")[0]) for f in summary["failed"])
    assert failed == sorted([(keep_protected_db, "Protected"), *((d, "Protected") for d in keep_adopted)])
    assert all("not the database that run's provision would have created" in f["error"]
               for f in summary["failed"] if f["id"] in keep_adopted)
    assert {r["id"] for r in summary["kept"]} == {keep_live, keep_live_db, keep_bad_expiry}
    rds = boto3.client("rds")
    described = rds.describe_db_instances(DBInstanceIdentifier=keep_protected_db)["DBInstances"][0]
    assert described["DeletionProtection"] is True
    legacy = rds.describe_db_instances(DBInstanceIdentifier=keep_unowned_db)["DBInstances"][0]
    assert {t["Key"]: t["Value"] for t in legacy["TagList"]} == unowned  # not tagged either

    again = janitor.sweep(now=NOW).summary()
    assert again["removed"] == [] and {f["id"] for f in again["failed"]} == {keep_protected_db, *keep_adopted}
    assert live_ec2() == {keep_live, keep_untagged, keep_foreign, keep_bad_expiry, keep_unowned, keep_guest_host}


def test_running_run_protected_by_input_run_id(aws):
    """A run whose tags carry the input's run_id (not the execution name) is still protected."""
    sfn, arn = aws
    sfn.start_execution(stateMachineArn=arn, name="3f1c0c8e-0000-4000-8000-000000000001",
                        input=json.dumps({"run_id": "nightly-x-20261122t000000-abcd"}))
    keep = ec2_instance(tags("nightly-x-20261122t000000-abcd", "a", NOW + timedelta(hours=1)))
    report = sweep.janitor_sweep(sweep_clients, [REGION], lambda: sweep.running_executions(sfn, arn), OWNER, NOW)
    assert report.removed == [] and live_ec2() == {keep}


def sweep_clients(region: str) -> sweep.RegionClients:
    return sweep.RegionClients(region=region, ec2=boto3.client("ec2", region_name=region),
                               rds=boto3.client("rds", region_name=region))


def test_nothing_removed_when_runs_cannot_be_listed(aws):
    ec2_instance(tags("old-run", "a", NOW + timedelta(hours=1)))

    def broken() -> set[str]:
        raise RuntimeError("ListExecutions throttled")

    with pytest.raises(RuntimeError):
        sweep.janitor_sweep(sweep_clients, [REGION], broken, OWNER, NOW)
    assert len(live_ec2()) == 1


def test_deleting_twice_concurrently_is_success(aws):
    """Janitor and teardown-by-tag racing: the second sees the resource going and counts it done."""
    db = db_instance(ours("old-run", "b"), tags("old-run", "b", NOW))
    found = sweep.find_tagged(sweep_clients(REGION), OWNER, "old-run")
    first = sweep.remove_all(sweep_clients, found)
    second = sweep.remove_all(sweep_clients, found)  # same stale listing, resource already gone
    assert [r.id for r in first.removed] == [db]
    assert [r.id for r in second.already_gone] == [db] and second.failed == []


def test_removal_reason():
    res = sweep.Resource(kind="ec2-instance", id="i-1", region=REGION, run_id="r1", target_id="a",
                         expires_at=NOW, state="running")
    assert sweep.removal_reason(res, {"r1"}, NOW - timedelta(seconds=1)) is None
    assert sweep.removal_reason(res, {"r1"}, NOW) == "expired"
    assert sweep.removal_reason(res, set(), NOW - timedelta(hours=1)) == "run not running"
    assert sweep.parse_expiry("2026-11-22T12:00:00Z") == NOW
    assert sweep.parse_expiry("garbage") is None and sweep.parse_expiry(None) is None


def test_janitor_publishes_metrics(aws, capsys):
    from handlers import janitor

    ec2_instance(tags("old-run", "a", NOW))
    janitor.handler({}, None)
    out = capsys.readouterr().out
    blob = json.loads(next(line for line in out.splitlines() if "ResourcesRemoved" in line))
    assert blob["ResourcesRemoved"] in (1.0, [1.0])
    assert blob["RemovalFailures"] in (0.0, [0.0])


def test_two_stacks_in_one_account_each_sweep_only_their_own(aws, monkeypatch):
    """Stack A's janitor sees B's running executions as "not running" (they are another state
    machine's): only the stack tag keeps it from terminating B's live run, and vice versa."""
    from handlers import janitor

    sfn, arn_a = aws
    role = boto3.client("iam").get_role(RoleName="sfn")["Role"]["Arn"]
    arn_b = sfn.create_state_machine(name="bf-b", definition=ASL, roleArn=role)["stateMachineArn"]
    later, earlier = NOW + timedelta(hours=3), NOW - timedelta(minutes=1)
    start(sfn, arn_a, "run-a")
    start(sfn, arn_b, "run-b")
    a_live = ec2_instance(tags("run-a", "t", later))
    a_live_db = db_instance(ours("run-a", "d"), tags("run-a", "d", later))
    a_expired = ec2_instance(tags("run-a", "x", earlier))
    a_finished_db = db_instance(ours("old-a", "d"), tags("old-a", "d", later))
    b_live = ec2_instance(tags("run-b", "t", later, OTHER_STACK))
    b_live_db = db_instance(ours("run-b", "d"), tags("run-b", "d", later, OTHER_STACK))
    b_expired = ec2_instance(tags("run-b", "x", earlier, OTHER_STACK))
    b_finished_db = db_instance(ours("old-b", "d"), tags("old-b", "d", later, OTHER_STACK))

    removed_by_a = {r["id"] for r in janitor.sweep(now=NOW).summary()["removed"]}
    assert removed_by_a == {a_expired, a_finished_db}
    assert {b_live, b_expired} <= live_ec2() and {b_live_db, b_finished_db} <= live_dbs()

    monkeypatch.setenv("BENCHFLEET_STACK", OTHER_STACK)
    monkeypatch.setenv("STATE_MACHINE_ARN", arn_b)
    removed_by_b = {r["id"] for r in janitor.sweep(now=NOW).summary()["removed"]}
    assert removed_by_b == {b_expired, b_finished_db}
    assert live_ec2() == {a_live, b_live} and live_dbs() == {a_live_db, b_live_db}


def test_janitor_refuses_to_sweep_without_a_stack_identity(aws, monkeypatch):
    from handlers import janitor

    keep = ec2_instance(tags("old-run", "a", NOW - timedelta(hours=1)))
    monkeypatch.delenv("BENCHFLEET_STACK")
    with pytest.raises(RuntimeError, match="BENCHFLEET_STACK"):
        janitor.sweep(now=NOW)
    assert live_ec2() == {keep}


def parameter_group(name: str, run_tags: dict[str, str], cluster: bool = False) -> str:
    rds = boto3.client("rds")
    if cluster:
        rds.create_db_cluster_parameter_group(DBClusterParameterGroupName=name, Description="d",
                                              DBParameterGroupFamily="aurora-mysql8.0", Tags=_tag_list(run_tags))
    else:
        rds.create_db_parameter_group(DBParameterGroupName=name, DBParameterGroupFamily="mysql8.0",
                                      Description="d", Tags=_tag_list(run_tags))
    return name


def live_parameter_groups() -> set[str]:
    rds = boto3.client("rds")
    return ({g["DBParameterGroupName"] for g in rds.describe_db_parameter_groups()["DBParameterGroups"]}
            | {g["DBClusterParameterGroupName"]
               for g in rds.describe_db_cluster_parameter_groups()["DBClusterParameterGroups"]})


def test_the_runs_parameter_groups_are_swept_like_its_databases(aws):
    """Issue 28 item 1: a run's parameter groups (per repetition, named as its databases are) go
    when their run has ended; a live run's stay; one named otherwise, though tagged as ours, is
    reported and kept; one a deleting database still uses is kept for a later sweep, not a failure."""
    sfn, arn = aws
    later = NOW + timedelta(hours=3)
    before = live_parameter_groups()  # moto's defaults
    start(sfn, arn, "running-run")
    keep_live = parameter_group(ours("running-run", "a", "pg"), tags("running-run", "a", later))
    gone = {parameter_group(ours("old-run", "b", "pg"), tags("old-run", "b", later)),
            parameter_group(ours("old-run", "c", "cpg"), tags("old-run", "c", later), cluster=True),
            parameter_group(ours("old-run", "c", "pg"), tags("old-run", "c", later))}
    keep_adopted = parameter_group("bf2b97c5-prod-r1-pg", tags("old-run", "d", later))
    keep_foreign = parameter_group(ours("old-run", "e", "pg"), tags("old-run", "e", later, owner=OTHER_STACK))
    in_use = parameter_group(ours("old-run", "f", "pg"), tags("old-run", "f", later))

    class StillUsed:  # AWS: the database using it is still being deleted
        def __init__(self, real):
            self.real = real

        def __getattr__(self, name):
            return getattr(self.real, name)

        def delete_db_parameter_group(self, **kw):
            if kw["DBParameterGroupName"] == in_use:
                raise ClientError({"Error": {"Code": "InvalidDBParameterGroupState", "Message": "in use"}},
                                  "DeleteDBParameterGroup")
            return self.real.delete_db_parameter_group(**kw)

    def deleting(region: str) -> sweep.RegionClients:
        plain = sweep_clients(region)
        return sweep.RegionClients(region=region, ec2=plain.ec2, rds=StillUsed(plain.rds))

    def running() -> set[str]:
        return sweep.running_executions(sfn, arn)

    summary = sweep.janitor_sweep(deleting, [REGION], running, OWNER, NOW).summary()
    assert {r["id"] for r in summary["removed"]} == gone
    assert {r["kind"] for r in summary["removed"]} == {"db-parameter-group", "db-cluster-parameter-group"}
    assert live_parameter_groups() - before == {keep_live, keep_adopted, keep_foreign, in_use}
    assert [f["id"] for f in summary["failed"]] == [keep_adopted]
    kept = {r["id"]: r["reason"] for r in summary["kept"]}
    assert kept[keep_live] == "run is running and not expired" and "later sweep" in kept[in_use]
    again = sweep.janitor_sweep(sweep_clients, [REGION], running, OWNER, NOW).summary()
    assert {r["id"] for r in again["removed"]} == {in_use}
    assert live_parameter_groups() - before == {keep_live, keep_adopted, keep_foreign}
