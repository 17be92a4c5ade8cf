"""A comparison across three regions, executed offline (moto is multi-region): steal-regions.yaml's
targets plus a third region. Every target is created by clients of its own region with that region's
resources (the SSM parameter its regional stack writes), nothing of the run appears in the home
region, results are labelled with the region the host reported, and every region is empty after
success, after a provision fault in each region, and after an abort (teardown by tag). The janitor
sweeps every target region. The Lambdas' environment comes from the synthesized template."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from sm_harness import Harness, cleared, executing, leftovers, setup_account, spec
from sm_moto import FaultProxy, MotoGaps, client_error
from sm_world import BUCKET, ENV, REGION
from tests.conftest import HOME_REGION, TARGET_REGIONS

from benchfleet.aws import clients
from benchfleet.plan import naming
from benchfleet.spec.loading import load_spec

REPO = Path(__file__).resolve().parents[2]
ALL_REGIONS = (REGION, *TARGET_REGIONS)
assert HOME_REGION == REGION, "the synthesized home stack is the harness's region"


def steal_regions_spec() -> dict[str, Any]:
    """workloads/comparisons/steal-regions.yaml (two regions) plus its targets in a third region, with
    the small fixture workload inline (the shipped 4 h soak only changes how long moto would wait)."""
    loaded = load_spec(REPO / "workloads" / "comparisons" / "steal-regions.yaml")
    targets = [t.model_dump(mode="json", exclude_none=True) for t in loaded.spec.targets]
    targets += [t | {"id": t["id"].replace("us-west-1", "ap-southeast-2"), "region": "ap-southeast-2"}
                for t in targets if t["region"] == "us-west-1"]
    # The third region is priced by tables refreshed for it (``priced_everywhere``): an unpriced
    # region would be refused (benchfleet.cost.ceiling).
    return spec(name="steal-regions", targets=targets, baseline=loaded.spec.baseline, budget_usd=loaded.spec.budget_usd)


@pytest.fixture(scope="module")
def deployed(synthesized_regions: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The Lambdas' environment as the CDK app deploys it with targetRegions set (the session's
    multi-region synth, tests/conftest.py)."""
    template = synthesized_regions["Benchfleet"]
    out = {}
    for fn in template.of_type("AWS::Lambda::Function").values():
        handler = fn["Properties"]["Handler"]
        if handler.startswith("handlers."):
            out[handler.split(".")[1]] = template.resolve(fn["Properties"]["Environment"]["Variables"])
    return out


def setup_region(region: str, parameter: str) -> None:
    """What the regional stack deploys in ``region``: network, security group, launch template, DB
    subnet group, agent document name, and the parameter that lists their ids."""
    ec2 = boto3.client("ec2", region_name=region)
    subnets = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["AvailabilityZone"])[:2]
    sg = ec2.create_security_group(GroupName="bf-targets", Description="targets",
                                   VpcId=subnets[0]["VpcId"])["GroupId"]
    template = ec2.create_launch_template(LaunchTemplateName="bf-targets", LaunchTemplateData={
        "SecurityGroupIds": [sg], "MetadataOptions": {"HttpTokens": "required"}})["LaunchTemplate"]
    boto3.client("rds", region_name=region).create_db_subnet_group(
        DBSubnetGroupName="bf-db", DBSubnetGroupDescription="db", SubnetIds=[s["SubnetId"] for s in subnets])
    boto3.client("ssm", region_name=region).put_parameter(Name=parameter, Type="String", Value=json.dumps({
        "subnet_ids": [s["SubnetId"] for s in subnets], "client_security_group_id": sg,
        "db_security_group_id": sg, "db_subnet_group_name": "bf-db",
        "launch_template_id": template["LaunchTemplateId"], "agent_document_name": f"bf-agent-{region}",
        "cluster_security_group_id": sg, "proxy_security_group_id": sg,
        "subnet_zones": [s["AvailabilityZone"] for s in subnets]}))


def priced_everywhere(directory: Path) -> Path:
    """The shipped price tables plus ap-southeast-2, as `catalogue_refresh --live` would add it
    (the figures are us-west-1's, stand-ins: this test is about where targets run, not what they cost)."""
    shutil.copytree(REPO / "workloads" / "pricing", directory, dirs_exist_ok=True)
    for name in ("ec2", "ebs"):
        path = directory / f"{name}.json"
        table = json.loads(path.read_text())
        table["regions"]["ap-southeast-2"] = table["regions"]["us-west-1"]
        path.write_text(json.dumps(table))
    return directory


@pytest.fixture(scope="module")
def world(deployed: dict[str, dict[str, str]], tmp_path_factory: pytest.TempPathFactory):
    plan_env = deployed["plan"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        for k, v in ENV.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("BENCHFLEET_PRICING", str(priced_everywhere(tmp_path_factory.mktemp("pricing"))))
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            clients.reset()
            setup_account(monkeypatch)  # the home region: bucket, store, its own target resources
            for key in ("TARGET_REGIONS", "TARGET_RESOURCES_PARAMETER"):
                monkeypatch.setenv(key, plan_env[key])
            h = Harness()
            h.regional = {}
            for region in TARGET_REGIONS:
                setup_region(region, plan_env["TARGET_RESOURCES_PARAMETER"])
                gaps = MotoGaps(region)
                ssm = boto3.client("ssm", region_name=region)
                rds = boto3.client("rds", region_name=region)
                h.regional[region] = {
                    "ssm": gaps.ssm(ssm),
                    "rds": gaps.rds(rds),
                    "ec2": FaultProxy(boto3.client("ec2", region_name=region)),
                    "cloudwatch": FaultProxy(boto3.client("cloudwatch", region_name=region)),
                }
                for service, proxy in h.regional[region].items():
                    clients.override(service, lambda p=proxy: p, region=region)
            with executing(h):
                yield h
            clients.reset()


@pytest.fixture
def harness(world: Harness) -> Harness:
    return cleared(world, *world.regional.values())


def tagged_instances(region: str, run_id: str) -> dict[str, str]:
    """instance id -> target id of every instance of the run in ``region``, whatever its state."""
    found = boto3.client("ec2", region_name=region).describe_instances(
        Filters=[{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]}])["Reservations"]
    return {i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]}[naming.TAG_TARGET_ID]
            for r in found for i in r["Instances"]}


def region_of(target_id: str) -> str:
    return next(r for r in TARGET_REGIONS if target_id.endswith(r))


def assert_every_region_empty(run_id: str) -> None:
    assert {r: leftovers(run_id, r) for r in ALL_REGIONS} == {r: [] for r in ALL_REGIONS}


def test_each_target_runs_in_its_own_region_and_is_labelled_by_it(harness):
    result = harness.run(steal_regions_spec(), name="steal-3")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    run_id = "steal-3"
    assert tagged_instances(REGION, run_id) == {}  # nothing in the home region
    for region in TARGET_REGIONS:
        created = tagged_instances(region, run_id)
        assert sorted(created.values()) == [f"m5-xlarge-{region}", f"t3-xlarge-{region}"]
    for call in harness.calls_of("provision"):
        target = call.event["target"]
        assert call.result["region"] == target["region"] == region_of(target["id"])
    # Each target's Run Command went to its region's agent document.
    sent = {r: harness.regional[r]["ssm"].calls["send_command"] for r in TARGET_REGIONS}
    assert sent == {r: 4 for r in TARGET_REGIONS} and harness.proxies["ssm"].calls["send_command"] == 0
    # The results say where each host reported it ran (its instance metadata), in the home bucket.
    s3 = boto3.client("s3", region_name=REGION)
    for target in steal_regions_spec()["targets"]:
        row = json.loads(s3.get_object(Bucket=BUCKET, Key=f"runs/{run_id}/{target['id']}/rep-1/target.json")
                         ["Body"].read())
        assert row["region"] == target["region"] and row["availability_zone"].startswith(target["region"])
    assert_every_region_empty(run_id)


@pytest.mark.parametrize("faulty", TARGET_REGIONS)
def test_a_provision_fault_in_one_region_leaves_no_region_with_anything(harness, faulty):
    # Every launch in that region is refused after its first target's instance exists.
    launches: list[str] = []

    def second_launch_refused(kwargs: dict[str, Any]) -> Exception | None:
        launches.append(kwargs["InstanceType"])
        return client_error("UnauthorizedOperation", "RunInstances") if len(launches) > 1 else None
    harness.regional[faulty]["ec2"].faults["run_instances"] = second_launch_refused
    run_id = f"fault-{faulty}"
    result = harness.run(steal_regions_spec(), name=run_id)
    assert result["status"] == "FAILED", harness.explain(result)
    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())
    failed = {t["target_id"] for t in summary["targets"] if t["status"] != "SUCCEEDED"}
    assert failed and {region_of(t) for t in failed} == {faulty}
    assert tagged_instances(REGION, run_id) == {}
    assert_every_region_empty(run_id)


def test_an_aborted_run_is_torn_down_in_every_region(harness):
    from handlers import teardown_by_tag

    for target in steal_regions_spec()["targets"]:
        harness.agent.outcome[target["id"]] = "hang"
    run_id = "abort-3"
    payload = {"spec": steal_regions_spec(), "timing": {"ready_poll_s": 0, "cooldown_s": 0}}
    execution = harness.sf.start_execution(stateMachineArn=harness.arn, name=run_id,
                                           input=json.dumps(payload))["executionArn"]
    deadline = time.monotonic() + 120
    while not all(tagged_instances(r, run_id) for r in TARGET_REGIONS):
        assert time.monotonic() < deadline, "targets were not provisioned"
        time.sleep(0.05)
    harness.sf.stop_execution(executionArn=execution)
    while (described := harness.sf.describe_execution(executionArn=execution))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not stop"
        time.sleep(0.05)
    # AWS reports ABORTED; moto's executor ends an execution stopped inside a Map as FAILED. Either
    # way no Catch ran: the run's hosts are still there until the EventBridge rule's teardown.
    assert described["status"] in ("ABORTED", "FAILED")
    # StopExecution skips every Catch: no Teardown runs. Let a handler call in flight finish.
    calls = -1
    while calls != len(harness.calls):
        calls = len(harness.calls)
        time.sleep(0.5)
    assert all(tagged_instances(r, run_id) for r in TARGET_REGIONS) and leftovers(run_id, "eu-north-1")
    # What EventBridge delivers for the ABORTED execution (the rule in state-machine.ts).
    event = {"detail": {"executionArn": execution, "stateMachineArn": harness.arn, "name": run_id,
                        "status": "ABORTED", "input": described["input"]}}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STATE_MACHINE_ARN", harness.arn)
        out = teardown_by_tag.handler(event, None)
    assert {r["region"] for r in out["removed"]} == set(TARGET_REGIONS) and out["failed"] == []
    assert_every_region_empty(run_id)


def test_the_janitor_sweeps_every_target_region_and_home(world, deployed):
    from handlers import janitor

    # Left by a run of this stack (BENCHFLEET_STACK, as the harness's home environment sets it).
    expired = naming.tags("gone-20261101t000000-abcd", "t", datetime(2026, 11, 1, tzinfo=UTC),
                          os.environ["BENCHFLEET_STACK"])
    made = {}
    for region in ALL_REGIONS:
        made[region] = boto3.client("ec2", region_name=region).run_instances(
            ImageId=MotoGaps(region).ami, MinCount=1, MaxCount=1, InstanceType="t3.micro",
            TagSpecifications=[{"ResourceType": "instance", "Tags": naming.tag_list(expired)}],
        )["Instances"][0]["InstanceId"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SWEEP_REGIONS", deployed["janitor"]["SWEEP_REGIONS"])
        env.setenv("STATE_MACHINE_ARN", world.arn)
        out = janitor.handler({}, None)
    removed = {(r["region"], r["id"]) for r in out["removed"]}
    assert set(made.items()) <= removed and out["failed"] == []
    assert {r for r, _ in removed} == set(ALL_REGIONS)
