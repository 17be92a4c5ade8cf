"""Janitor against moto: live, expired and foreign resources; only the right ones go; idempotent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws import sweep
from benchfleet.naming import TAG_EXPIRES_AT, TAG_RUN_ID, TAG_TARGET_ID, tags

REGION = "us-east-1"
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
        yield sfn, arn


def _tag_list(d: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in d.items()]


def ec2_instance(run_tags: dict[str, str] | None) -> str:
    ec2 = boto3.client("ec2")
    kwargs = {}
    if run_tags:
        kwargs["TagSpecifications"] = [{"ResourceType": "instance", "Tags": _tag_list(run_tags)}]
    res = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="t3.micro", **kwargs)
    return res["Instances"][0]["InstanceId"]


def db_instance(name: str, run_tags: dict[str, str] | None, protected: bool = False) -> str:
    boto3.client("rds").create_db_instance(
        DBInstanceIdentifier=name, DBInstanceClass="db.t3.micro", Engine="mysql", AllocatedStorage=20,
        MasterUsername="admin", MasterUserPassword="password123", DeletionProtection=protected,
        Tags=_tag_list(run_tags or {}))
    return name


def aurora(name: str, run_tags: dict[str, str]) -> tuple[str, str]:
    rds = boto3.client("rds")
    rds.create_db_cluster(DBClusterIdentifier=name, Engine="aurora-mysql", MasterUsername="admin",
                          MasterUserPassword="password123", DeletionProtection=True,
                          Tags=_tag_list(run_tags))
    rds.create_db_instance(DBInstanceIdentifier=f"{name}-writer", DBInstanceClass="db.r6g.large",
                           Engine="aurora-mysql", DBClusterIdentifier=name, Tags=_tag_list(run_tags))
    return name, f"{name}-writer"


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
    keep_live_db = db_instance("running-db", tags("running-run", "b", later))
    keep_untagged = ec2_instance(None)
    keep_foreign = ec2_instance({"team": "payments", TAG_EXPIRES_AT: "2000-01-01T00:00:00Z"})
    keep_foreign_db = db_instance("foreign-db", {"owner": "someone"})
    gone_expired = ec2_instance(tags("running-run", "c", earlier))
    gone_finished = ec2_instance(tags("old-run", "a", later))
    gone_finished_db = db_instance("old-db", tags("old-run", "b", later), protected=True)
    gone_cluster = aurora("old-aurora", tags("old-run", "c", later))
    # an expiry nobody can read never removes a running run's resource on its own
    keep_bad_expiry = ec2_instance({TAG_RUN_ID: "running-run", TAG_TARGET_ID: "d", TAG_EXPIRES_AT: "soon"})

    summary = janitor.sweep(now=NOW).summary()

    assert live_ec2() == {keep_live, keep_untagged, keep_foreign, keep_bad_expiry}
    assert live_dbs() == {keep_live_db, keep_foreign_db}
    removed = {r["id"] for r in summary["removed"]}
    assert removed == {gone_expired, gone_finished, gone_finished_db, *gone_cluster}
    assert summary["failed"] == []
    assert {r["id"] for r in summary["kept"]} == {keep_live, keep_live_db, keep_bad_expiry}

    again = janitor.sweep(now=NOW).summary()
    assert again["removed"] == [] and again["failed"] == []
    assert live_ec2() == {keep_live, keep_untagged, keep_foreign, keep_bad_expiry}


def test_running_run_protected_by_input_run_id(aws):
    """A run whose tags carry the input's run_id (not the execution name) is still protected."""
    sfn, arn = aws
    sfn.start_execution(stateMachineArn=arn, name="3f1c0c8e-0000-4000-8000-000000000001",
                        input=json.dumps({"run_id": "nightly-x-20261122t000000-abcd"}))
    keep = ec2_instance(tags("nightly-x-20261122t000000-abcd", "a", NOW + timedelta(hours=1)))
    report = sweep.janitor_sweep(sweep_clients, [REGION], lambda: sweep.running_executions(sfn, arn), NOW)
    assert report.removed == [] and live_ec2() == {keep}


def sweep_clients(region: str) -> sweep.RegionClients:
    return sweep.RegionClients(region=region, ec2=boto3.client("ec2", region_name=region),
                               rds=boto3.client("rds", region_name=region))


def test_nothing_removed_when_runs_cannot_be_listed(aws):
    ec2_instance(tags("old-run", "a", NOW + timedelta(hours=1)))

    def broken() -> set[str]:
        raise RuntimeError("ListExecutions throttled")

    with pytest.raises(RuntimeError):
        sweep.janitor_sweep(sweep_clients, [REGION], broken, NOW)
    assert len(live_ec2()) == 1


def test_deleting_twice_concurrently_is_success(aws):
    """Janitor and teardown-by-tag racing: the second sees the resource going and counts it done."""
    db = db_instance("old-db", tags("old-run", "b", NOW))
    found = sweep.find_tagged(sweep_clients(REGION), "old-run")
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
