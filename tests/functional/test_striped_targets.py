"""Striped data volumes on AWS (issue 26, items 1 and 2) against moto: the API's plan warns with
the figures; provision attaches every volume, encrypted, tagged, with the type, size, IOPS and
throughput given (checked on the RunInstances request itself: moto ignores Iops and Throughput);
start_step hands the agent their ids in stripe order, or fails naming the device that is missing;
teardown, teardown-by-tag and the janitor delete every volume, and only the run's."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_harness import Context, leftovers, spec
from sm_world import OWNER, REGION

from benchfleet.aws import clients, errors
from benchfleet.aws.fleet import sweep, targets
from benchfleet.plan import naming

RUN = "stripe-20261124t000000-abcd"
EXPIRES = "2026-11-25T00:00:00Z"
STRIPE = {"type": "gp3", "size_gb": 200, "iops": 4000, "throughput_mbps": 250, "volumes": 8, "raid": 10}
TARGET = {"id": "raid10", "kind": "ec2", "instance_type": "m6i.xlarge", "engine": "mariadb", "storage": STRIPE}


@pytest.fixture
def aws(handlers_aws: Any) -> Any:
    """The handlers' moto account (conftest), EC2 recording every RunInstances request as sent."""
    ec2 = boto3.client("ec2", region_name=REGION)
    launched: list[dict[str, Any]] = []
    ec2.meta.events.register("provide-client-params.ec2.RunInstances",
                             lambda params, **kw: launched.append(json.loads(json.dumps(params))))
    clients.override("ec2", lambda: ec2)
    return ec2, launched


def call(module: str, event: dict[str, Any]) -> Any:
    import importlib

    return importlib.import_module(f"handlers.{module}").handler(event, Context(function_name=module))


def provision(target: dict[str, Any] = TARGET, run_id: str = RUN) -> dict[str, Any]:
    return call("provision", {"run_id": run_id, "target": target, "repetition": 1, "zone_index": 0,
                              "expires_at": EXPIRES})


def volumes_of(ec2: Any, run_id: str = RUN) -> list[dict[str, Any]]:
    return ec2.describe_volumes(Filters=[{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]}])["Volumes"]


def test_provision_attaches_every_volume_as_the_spec_gives_it(aws: Any) -> None:
    ec2, launched = aws
    res = provision()
    (request,) = launched
    mappings = request["BlockDeviceMappings"]
    # The launch template's root, restated (EC2 may replace the template's mappings with the request's).
    assert mappings[0] == {"DeviceName": "/dev/sda1", "Ebs": targets.ROOT_VOLUME}
    assert [m["DeviceName"] for m in mappings[1:]] == [f"/dev/sd{c}" for c in "fghijklm"]
    assert all(m["Ebs"] == {"VolumeSize": 200, "VolumeType": "gp3", "Iops": 4000, "Throughput": 250,
                            "Encrypted": True, "DeleteOnTermination": True} for m in mappings[1:])
    assert "volume" in [t["ResourceType"] for t in request["TagSpecifications"]]
    volumes = volumes_of(ec2)
    assert len(volumes) == 9 and all(v["Encrypted"] for v in volumes)  # root + 8, tagged at launch
    for volume in volumes:
        tags = {t["Key"]: t["Value"] for t in volume["Tags"]}
        assert (tags[naming.TAG_RUN_ID], tags[naming.TAG_TARGET_ID], tags[naming.TAG_STACK]) == (RUN, "raid10", OWNER)
        assert volume["Attachments"][0]["InstanceId"] == res["instance_id"]


def test_instance_store_and_one_volume_map_what_they_need(aws: Any) -> None:
    _, launched = aws
    provision({**TARGET, "id": "nvme", "instance_type": "i4i.8xlarge",
               "storage": {"type": "instance-store", "volumes": 2, "raid": 0}})
    provision({**TARGET, "id": "one", "storage": {"type": "gp2", "size_gb": 100}})
    nvme, one = launched
    assert "BlockDeviceMappings" not in nvme  # EC2 attaches NVMe instance-store disks by itself
    assert one["BlockDeviceMappings"][1:] == [{"DeviceName": "/dev/sdf", "Ebs": {
        "VolumeSize": 100, "VolumeType": "gp2", "Encrypted": True, "DeleteOnTermination": True}}]
    # moto cannot launch io1/io2 volumes (it drops Iops on the way to the volume): the mapping itself.
    assert targets.block_devices({"type": "io2", "size_gb": 100, "iops": 10000, "throughput_mbps": 500,
                                  "volumes": 2})[1:] == [
        {"DeviceName": name, "Ebs": {"VolumeSize": 100, "VolumeType": "io2", "Iops": 10000, "Encrypted": True,
                                     "DeleteOnTermination": True}} for name in ("/dev/sdf", "/dev/sdg")]
    assert targets.DATA_DEVICES[20:] == ("/dev/sdz", "/dev/xvdba", "/dev/xvdbb", "/dev/xvdbc")  # 24 names


def step_state(res: dict[str, Any], step: str, target: dict[str, Any] = TARGET) -> dict[str, Any]:
    plan = call("plan", {"input": {"spec": spec(targets=[target], budget_usd=50), "run_id": RUN}})
    item = plan["targets"][0]
    return {"run_id": RUN, "target": item["target"], "kind": "ec2", "deadline": item["deadline"],
            "timing": item["timing"], "repetition": 1, "workload": plan["workload"], "resources": res,
            "db": None, "step": next(s for s in item["steps"] if s["name"] == step)}


def sent_job(state: dict[str, Any]) -> dict[str, Any]:
    ssm = clients.client("ssm")
    sent: list[dict[str, Any]] = []
    clients.override("ssm", lambda: type("Capture", (), {
        "__getattr__": lambda self, n: getattr(ssm, n),
        "send_command": lambda self, **kw: (sent.append(kw), {"Command": {"CommandId": "c-1"}})[1]})())
    call("start_step", state)
    return json.loads(sent[0]["Parameters"]["JobJson"][0])  # type: ignore[no-any-return]


def test_start_step_hands_the_agent_the_volume_ids_in_stripe_order(aws: Any) -> None:
    ec2, _ = aws
    res = provision()
    job = sent_job(step_state(res, "prepare"))
    storage = job["install"]["storage"]
    mapped = {m["DeviceName"]: m["Ebs"]["VolumeId"] for m in ec2.describe_instances(
        InstanceIds=[res["instance_id"]])["Reservations"][0]["Instances"][0]["BlockDeviceMappings"]}
    assert storage["volumes"] == [{"volume_id": mapped[f"/dev/sd{c}"], "device": f"/dev/sd{c}"} for c in "fghijklm"]
    assert {k: storage[k] for k in ("type", "count", "raid", "filesystem", "mount_options")} == {
        "type": "gp3", "count": 8, "raid": 10, "filesystem": "xfs", "mount_options": "noatime"}
    assert job["data_dir"] == "/var/lib/mysql"
    measure = sent_job(step_state(res, "t0001"))
    assert "install" not in measure and measure["data_dir"] == "/var/lib/mysql"


def test_start_step_fails_naming_a_volume_that_is_not_attached(aws: Any) -> None:
    ec2, _ = aws
    res = provision()
    volume = ec2.describe_instances(InstanceIds=[res["instance_id"]])["Reservations"][0]["Instances"][0][
        "BlockDeviceMappings"][4]  # /dev/sdi
    ec2.detach_volume(VolumeId=volume["Ebs"]["VolumeId"], InstanceId=res["instance_id"])
    with pytest.raises(errors.TargetFailed, match=rf"{res['instance_id']} has no data volume at /dev/sdi \(7 of 8"):
        call("start_step", step_state(res, "prepare"))


def test_teardown_deletes_every_volume_a_detached_one_included(aws: Any) -> None:
    ec2, _ = aws
    res = provision()
    # A volume the run lost track of: detached (a failed attach, an instance replaced), still tagged.
    first = volumes_of(ec2)[1]["VolumeId"]
    ec2.detach_volume(VolumeId=first, InstanceId=res["instance_id"])
    theirs = ec2.create_volume(AvailabilityZone=res["zone"], Size=10, TagSpecifications=[{
        "ResourceType": "volume", "Tags": [{"Key": naming.TAG_RUN_ID, "Value": RUN},
                                            {"Key": naming.TAG_TARGET_ID, "Value": "raid10"},
                                            {"Key": naming.TAG_STACK, "Value": "Someone-else@us-east-1"}]}])["VolumeId"]
    out = call("teardown", {"run_id": RUN, "target": {"target_id": "raid10", "kind": "ec2"}, "resources": res})
    assert f"volume {first}" in out["deleted"] and out["left"] == []
    assert [v["VolumeId"] for v in volumes_of(ec2)] == [theirs]  # another stack's: untouched
    assert leftovers(RUN) == [theirs]


def test_teardown_by_tag_and_the_janitor_delete_a_runs_volumes(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2, _ = aws
    res = provision()
    loose = volumes_of(ec2)[2]["VolumeId"]
    ec2.detach_volume(VolumeId=loose, InstanceId=res["instance_id"])
    report = sweep.teardown_run(RUN, OWNER, sweep.region_clients, [REGION]).summary()
    removed = {(r["kind"], r["id"]) for r in report["removed"]}
    assert ("ec2-instance", res["instance_id"]) in removed and ("ec2-volume", loose) in removed
    assert report["failed"] == [], [f["error"] for f in report["failed"]]
    assert volumes_of(ec2) == [] and leftovers(RUN) == []
    # The janitor: an expired run's volume left detached goes; a running run's stays.
    later = datetime(2026, 11, 24, 12, tzinfo=UTC)
    for run_id, expires in (("old-run", later - timedelta(hours=1)), ("live-run", later + timedelta(hours=1))):
        ec2.create_volume(AvailabilityZone=res["zone"], Size=10, TagSpecifications=[{
            "ResourceType": "volume", "Tags": [{"Key": k, "Value": v} for k, v in
                                                naming.tags(run_id, "t", expires, OWNER).items()]}])
    janitor = sweep.janitor_sweep(sweep.region_clients, [REGION], lambda: {"live-run"}, OWNER, now=later).summary()
    assert [(r["kind"], r["run_id"]) for r in janitor["removed"]] == [("ec2-volume", "old-run")]
    assert [r["run_id"] for r in janitor["kept"]] == ["live-run"]


def test_a_volume_attached_to_a_terminating_instance_goes_with_it() -> None:
    """Between TerminateInstances and the volume's deletion EC2 keeps it in-use: the sweep counts it
    as going (DeleteOnTermination), never as a removal failure that would raise the alarm. Moto
    deletes such volumes at once and omits DeleteOnTermination: EC2's answers are stubbed here."""
    from botocore.stub import Stubber

    ec2 = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    region = sweep.RegionClients(REGION, ec2, None)
    volume = sweep.Resource(kind="ec2-volume", id="vol-0123456789abcdef0", region=REGION, run_id=RUN,
                            target_id="raid10", expires_at=None, state="in-use")

    def described(delete_on_termination: bool) -> dict[str, Any]:
        return {"Volumes": [{"VolumeId": volume.id, "State": "in-use", "Attachments": [
            {"InstanceId": "i-0abc", "VolumeId": volume.id, "State": "attached",
             "DeleteOnTermination": delete_on_termination}]}]}

    def instance(state: str) -> dict[str, Any]:
        return {"Reservations": [{"Instances": [{"InstanceId": "i-0abc", "State": {"Name": state, "Code": 0}}]}]}

    with Stubber(ec2) as stub:
        stub.add_response("describe_volumes", described(True), {"VolumeIds": [volume.id]})
        stub.add_response("describe_instances", instance("running"), {"InstanceIds": ["i-0abc"]})
        with pytest.raises(Exception, match="VolumeInUse"):
            sweep.remove(region, volume)  # its instance runs: not pulled out from under it
        stub.add_response("describe_volumes", described(True), {"VolumeIds": [volume.id]})
        stub.add_response("describe_instances", instance("shutting-down"), {"InstanceIds": ["i-0abc"]})
        assert sweep.remove(region, volume) == "already-gone"
        stub.add_response("describe_volumes", described(False), {"VolumeIds": [volume.id]})
        with pytest.raises(Exception, match="removed by a later sweep once detached"):
            sweep.remove(region, volume)
        stub.assert_no_pending_responses()


def test_the_api_answers_with_the_plans_storage_warnings(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchfleet.aws import api_service

    sfn = boto3.client("stepfunctions", region_name=REGION)
    role = boto3.client("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    asl = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Pass", "End": True}}})
    arn = sfn.create_state_machine(name="Benchfleet", definition=asl, roleArn=role)["stateMachineArn"]
    service = api_service.RunService(
        sfn=sfn, s3=boto3.client("s3", region_name=REGION), state_machine_arn=arn, bucket="bf-results",
        price_lookup=api_service.default_price_lookup(), teardown=lambda run_id, regions: {},
        home_region=REGION, target_regions=())
    status, body = service.submit(spec(targets=[TARGET], budget_usd=50))
    assert status == 202, body
    assert body["warnings"] == [
        "raid10: 8 gp3 volumes x 4,000 IOPS = 32,000 IOPS exceed m6i.xlarge's EBS baseline of 6,000 IOPS; above it "
        "only in bursts (up to 40,000 IOPS, 30 minutes at least once a day)",
        "raid10: 8 gp3 volumes x 250 MiB/s = 2,000 MiB/s (2,097.15 MB/s) exceed m6i.xlarge's EBS maximum of "
        "1,250 MB/s: the instance cannot use more, striping past it gains nothing"]


@pytest.mark.parametrize("storage", [
    {"type": "gp3", "size_gb": 200, "volumes": 2, "raid": 0},
    {"type": "io2", "size_gb": 100, "iops": 10000, "volumes": 1},
    {"type": "instance-store", "volumes": 2, "raid": 0}])
def test_a_target_with_variants_builds_its_data_directory_on_its_storage(aws: Any, storage: dict[str, Any]) -> None:
    """Issue 41 item 1: the variants branch of the plan's install left ``storage`` out, so the volumes
    were launched and billed while the data directory stayed on the root volume."""
    target = {**TARGET, "id": "stripe", "instance_type": "i4i.8xlarge" if storage["type"] == "instance-store"
              else "m6i.large", "storage": storage}
    plan = call("plan", {"input": {"spec": spec(targets=[target], budget_usd=50, variants=[
        {"id": "durable", "mysql_config": "durable"}, {"id": "relaxed", "mysql_config": "relaxed"}]), "run_id": RUN}})
    (item,) = plan["targets"]
    install = next(s for s in item["steps"] if s["index"] == 0)["install"]
    assert install["variant"] == "durable"
    assert install["storage"] == {"type": storage["type"], "count": storage["volumes"], "raid": storage.get("raid"),
                                  "filesystem": "xfs", "mount_options": "noatime"}
