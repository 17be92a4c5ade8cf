"""Teardown by tag against moto: a failed / aborted run's resources go, nobody else's (not even
another stack's run of the same id); idempotent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from benchfleet.plan.naming import tags

REGION = "us-east-1"
OTHER_REGION = "eu-west-1"
LATER = datetime.now(UTC) + timedelta(hours=5)
SM_ARN = f"arn:aws:states:{REGION}:123456789012:stateMachine:bf"
OWNER = "Benchfleet@us-east-1"  # BENCHFLEET_STACK as cdk/lib/ownership.ts builds it
OTHER_STACK = "Benchfleet-team-b@us-east-1"


@pytest.fixture
def aws(monkeypatch):
    for k, v in {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing", "STATE_MACHINE_ARN": SM_ARN,
                 "BENCHFLEET_STACK": OWNER}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield


def instance(run_id: str | None, region: str = REGION, owner: str | None = OWNER) -> str:
    ec2 = boto3.client("ec2", region_name=region)
    kw = {}
    if run_id:
        kw["TagSpecifications"] = [{"ResourceType": "instance", "Tags": [
            {"Key": k, "Value": v} for k, v in tags(run_id, "a", LATER, owner).items()]}]
    return ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, **kw)["Instances"][0]["InstanceId"]


def live(region: str = REGION) -> set[str]:
    res = boto3.client("ec2", region_name=region).describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return {i["InstanceId"] for r in res["Reservations"] for i in r["Instances"]}


def event(name: str, status: str, execution_input: dict | None = None, sm: str = SM_ARN) -> dict:
    detail = {"executionArn": f"{sm.replace(':stateMachine:', ':execution:')}:{name}",
              "stateMachineArn": sm, "name": name, "status": status,
              "startDate": 1, "stopDate": 2}
    if execution_input is not None:
        detail["input"] = json.dumps(execution_input)
    return {"version": "0", "id": "e", "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states", "account": "123456789012", "time": "2026-11-22T00:00:00Z",
            "region": REGION, "resources": [detail["executionArn"]], "detail": detail}


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_tears_down_only_that_run(aws, status):
    from handlers import teardown_by_tag

    mine = instance("run-1")
    mine_abroad = instance("run-1", OTHER_REGION)
    other_run = instance("run-2")
    untagged = instance(None)
    other_stacks_run = instance("run-1", owner=OTHER_STACK)  # run ids are only unique per stack
    unowned = instance("run-1", owner=None)  # benchfleet's run tag, but nobody's identity
    spec = {"name": "x", "targets": [{"id": "a", "kind": "ec2", "region": OTHER_REGION}]}
    out = teardown_by_tag.handler(event("run-1", status, {"run_id": "run-1", "spec": spec}), None)
    assert {r["id"] for r in out["removed"]} == {mine, mine_abroad}
    assert live() == {other_run, untagged, other_stacks_run, unowned} and live(OTHER_REGION) == set()
    again = teardown_by_tag.handler(event("run-1", status, {"run_id": "run-1", "spec": spec}), None)
    assert again["removed"] == [] and again["failed"] == []


def test_run_id_from_input_wins_over_execution_name(aws):
    from handlers import teardown_by_tag

    mine = instance("nightly-20261122t000000-beef")
    out = teardown_by_tag.handler(event("0f6c7a7e-uuid-from-scheduler", "FAILED",
                                        {"run_id": "nightly-20261122t000000-beef"}), None)
    assert [r["id"] for r in out["removed"]] == [mine]


@pytest.mark.parametrize("evt", [
    event("run-1", "SUCCEEDED", {}),
    event("run-1", "FAILED", {}, sm=SM_ARN + "-other"),
    {"detail": {"unexpected": True}},
    {},
    event("../../etc", "FAILED", {}),
])
def test_ignores_what_is_not_ours(aws, evt):
    from handlers import teardown_by_tag

    keep = instance("run-1")
    out = teardown_by_tag.handler(evt, None)
    assert "skipped" in out
    assert live() == {keep}
