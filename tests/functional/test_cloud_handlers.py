"""Every state machine handler against moto (botocore Stubber where moto lacks the behaviour).

Why one module: every handler is called in one moto account set up as the stack deploys it, with
the handlers' environment (one fixture), so that a change to one handler's contract shows beside the
handlers it hands its output to.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto.core import DEFAULT_ACCOUNT_ID

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_agent import ssm_invocation_event
from sm_harness import Context, spec
from sm_moto import FaultProxy, client_error
from sm_world import BUCKET, DB_PREFIX, FIXTURES, OWNER, REGION
from timestream_requests import TABLE_DIMENSIONS, stored_records

from benchfleet.aws import clients, errors
from benchfleet.aws.fleet import lifecycle, paramgroups
from benchfleet.aws.planning import controlplane, runplan
from benchfleet.aws.steps import callbacks
from benchfleet.aws.store import timestream
from benchfleet.cost.pricing import price_per_hour
from benchfleet.plan import naming
from benchfleet.spec.loading import load_spec, parse_spec, resolve

REPO = Path(__file__).resolve().parents[2]
RUN = "fn-20261122t000000-abcd"
EXPIRES = "2026-11-23T00:00:00Z"
CMD = "0b9b5a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b"
STEP_KEY = naming.step_command_key(RUN, "aurora-r6g", 1, "t0001")


@pytest.fixture
def aws(handlers_aws):
    return handlers_aws


def call(module: str, event: dict):
    import importlib

    return importlib.import_module(f"handlers.{module}").handler(event, Context(function_name=module))


def tags_of(tag_list) -> dict:
    return {t["Key"]: t["Value"] for t in tag_list}


def target(kind: str) -> dict:
    return next(t for t in spec()["targets"] if t["kind"] == kind) | {"id": f"{kind}-t"}


def provision(kind: str, zone: int = 0, **event: Any) -> dict:
    """As the state machine provisions: an rds / aurora target's parameter groups and client first,
    then (after "Let the new parameter groups settle") its database(s), given the first answer."""
    event = {"run_id": RUN, "target": target(kind), "repetition": 1, "zone_index": zone, "expires_at": EXPIRES,
             **event}
    resources = call("provision", event)
    if lifecycle.GROUPS_SETTLE in resources:
        resources = call("provision", event | {"resources": resources})
    return resources


def test_plan_carries_what_every_state_needs(aws):
    plan = call("plan", {"input": {"spec": spec()}, "execution_name": "exec-1"})
    assert plan["run_id"] == "exec-1" and plan["target_count"] == 3 and not plan["distributed"]
    assert plan["zones"] == {"count": 3, "last": 2}
    first = plan["targets"][0]
    assert [s["name"] for s in first["steps"]] == ["prepare", "t0001"]
    # Each step waits for its callback at most its Run Command bounds and a margin.
    assert all(s["timeout_s"] > s["duration_s"] + s["setup_s"] for s in first["steps"])
    assert first["expires_at"].endswith("Z")
    assert plan["workload"]["test"] == "oltp_read_write"


@pytest.mark.parametrize(("spec_change", "message"), [
    ({"workload": "oltp-read-only"}, "inline"),
    ({"budget_usd": 0.001}, r"^spec: budget_usd: the estimate is \$[0-9.]+ \(hosts \$[0-9.]+, "
                            r"Aurora I/O \$[0-9.]+ \(estimated[^)]*\), control plane \$"),
    # Scheduled runs reach Plan without the API: a price in the spec cannot walk past the budget.
    ({"targets": [target("ec2") | {"price_per_hour": 0}]}, r"^spec: targets\[0\]\.price_per_hour: prices come from"),
    ({"budget_usd": 0.001, "targets": [target("ec2") | {"price_per_hour": 0}]}, r"targets\[0\]\.price_per_hour"),
    ({"targets": [{"id": "l", "kind": "local"}]}, "--local"),
    # What exists where, as the API checks it (benchfleet.cost.catalogue): scheduled runs are held to it too.
    ({"targets": [target("ec2") | {"instance_type": "m7i.32xlarge"}]},
     r"targets\[0\]\.instance_type: m7i\.32xlarge is not offered in us-east-1"),
    # issue 41 item 6: a variant's cnf that does not exist (an uncaught error before)
    ({"variants": [{"id": "a"}, {"id": "b", "mysql_config": "nonexistent"}]},
     r"^spec: variants\[1\]\.mysql_config: no file nonexistent\.cnf"),
    # issue 41 item 5: an RDS version inside its line that RDS does not offer failed at provision
    ({"targets": [target("rds") | {"engine": "mysql-8.0.999"}]},
     r"^spec: targets\[0\]\.engine: no mysql engine version matches mysql-8\.0\.999 in us-east-1 "
     r"\(DescribeDBEngineVersions\); give the line \(mysql-8\.0\)"),
    ({"targets": [target("aurora") | {"engine": "mysql-8.0.999"}]},
     r"^spec: targets\[0\]\.engine: no aurora-mysql engine version matches mysql-8\.0\.999"),
])
def test_plan_refuses(aws, spec_change, message):
    with pytest.raises(errors.PlanRejected, match=message):
        call("plan", {"input": {"spec": spec(**spec_change)}})


def test_plan_takes_an_rds_version_rds_offers(aws):
    plan = call("plan", {"input": {"spec": spec(targets=[target("rds") | {"engine": "mysql-8.0.36"}])}})
    assert plan["targets"][0]["target"]["engine"] == "mysql-8.0.36"


def test_provision_ec2_tags_everything_and_picks_the_architecture(aws):
    _, gaps = aws
    res = provision("ec2", zone=1)
    assert gaps.ami_requests == ["/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id"]
    ec2 = boto3.client("ec2", region_name=REGION)
    inst = ec2.describe_instances(InstanceIds=[res["instance_id"]])["Reservations"][0]["Instances"][0]
    tags = tags_of(inst["Tags"])
    assert tags[naming.TAG_RUN_ID] == RUN and tags[naming.TAG_TARGET_ID] == "ec2-t"
    assert tags[naming.TAG_EXPIRES_AT] == EXPIRES and tags[naming.TAG_STACK] == OWNER
    volumes = ec2.describe_volumes(Filters=[{"Name": "attachment.instance-id", "Values": [res["instance_id"]]}])
    for volume in volumes["Volumes"]:
        assert tags_of(volume.get("Tags", []))[naming.TAG_STACK] == OWNER
    assert inst["SubnetId"] == clients_subnets()[1] and res["zone_index"] == 1


def clients_subnets() -> list[str]:
    import os

    return os.environ["SUBNET_IDS"].split(",")


def test_provision_rds_and_aurora_with_looked_up_versions(aws):
    rds = boto3.client("rds", region_name=REGION)
    r = provision("rds")
    db = rds.describe_db_instances(DBInstanceIdentifier=r["db_instance_id"])["DBInstances"][0]
    assert db["EngineVersion"] == "8.0.40" and tags_of(db["TagList"])[naming.TAG_RUN_ID] == RUN
    assert not db["DeletionProtection"] and len(r["db_instance_id"]) <= 63
    # named with the stack's prefix (the only DB ARNs its role may create, tag or delete), owned
    assert r["db_instance_id"].startswith(f"{DB_PREFIX}-") and tags_of(db["TagList"])[naming.TAG_STACK] == OWNER
    a = provision("aurora")
    cluster = rds.describe_db_clusters(DBClusterIdentifier=a["db_cluster_id"])["DBClusters"][0]
    assert cluster["EngineVersion"] == "8.0.mysql_aurora.3.08.0"
    assert tags_of(cluster["TagList"])[naming.TAG_TARGET_ID] == "aurora-t"
    assert tags_of(cluster["TagList"])[naming.TAG_STACK] == OWNER
    assert a["db_cluster_id"].startswith(f"{DB_PREFIX}-") and a["db_instance_id"].startswith(f"{DB_PREFIX}-")
    writer = rds.describe_db_instances(DBInstanceIdentifier=a["db_instance_id"])["DBInstances"][0]
    assert writer["DBClusterIdentifier"] == a["db_cluster_id"]
    client_zone = boto3.client("ec2", region_name=REGION).describe_instances(
        InstanceIds=[a["instance_id"]])["Reservations"][0]["Instances"][0]["Placement"]["AvailabilityZone"]
    assert client_zone == writer["AvailabilityZone"] == a["zone"]


@pytest.mark.parametrize("kind", ["ec2", "rds", "aurora"])
def test_provision_never_launches_a_target_outside_its_own_region(aws, kind):
    """A target labelled eu-north-1 is never created by clients of another region."""
    with pytest.raises(errors.TargetFailed, match="eu-north-1"):
        call("provision", {"run_id": RUN, "target": target(kind) | {"region": "eu-north-1"}, "repetition": 1,
                           "expires_at": EXPIRES})
    for region in (REGION, "eu-north-1"):
        assert boto3.client("ec2", region_name=region).describe_instances()["Reservations"] == []
        rds = boto3.client("rds", region_name=region)
        assert rds.describe_db_instances()["DBInstances"] == rds.describe_db_clusters()["DBClusters"] == []


def test_provision_capacity_error_is_named_and_partial_resources_go(aws):
    proxies, _ = aws
    proxies["ec2"] = FaultProxy(boto3.client("ec2", region_name=REGION), faults={
        "run_instances": [client_error("InsufficientInstanceCapacity", "RunInstances")]})
    clients.override("ec2", lambda: proxies["ec2"])
    with pytest.raises(errors.InsufficientInstanceCapacity):
        provision("rds")
    rds = boto3.client("rds", region_name=REGION)
    statuses = [d["DBInstanceStatus"] for d in rds.describe_db_instances()["DBInstances"]]
    assert statuses in ([], ["deleting"])


def readiness(res: dict, deadline: str = "2099-01-01T00:00:00Z") -> dict:
    timing = {"ready_poll_s": 15, "ready_max_polls": 10, "provision_s": 300}
    return call("readiness", {"resources": res, "timing": timing, "deadline": deadline, "attempt": 1})


def test_readiness(aws):
    proxies, _ = aws
    res = provision("rds")
    answer = readiness(res)
    assert answer["ready"] and answer["db"]["host"].endswith(".rds.amazonaws.com")
    assert answer["db"]["password_secret_arn"].startswith("arn:aws:secretsmanager:")
    proxies["ssm"].extra["describe_instance_information"] = lambda **kw: {"InstanceInformationList": []}
    answer = readiness(res)
    assert not answer["ready"] and 15 <= answer["wait_s"] <= 150  # the rest of ~300 s, at most 10 polls' worth
    boto3.client("ec2", region_name=REGION).terminate_instances(InstanceIds=[res["instance_id"]])
    with pytest.raises(errors.TargetFailed):
        readiness(res)
    with pytest.raises(errors.TargetFailed, match="deadline"):
        readiness(res, deadline="2000-01-01T00:00:00Z")


def secret_tags(arn: str) -> dict:
    return tags_of(boto3.client("secretsmanager", region_name=REGION).describe_secret(SecretId=arn).get("Tags", []))


@pytest.mark.parametrize("kind", ["rds", "aurora"])
def test_readiness_binds_the_database_secret_to_this_runs_host_before_naming_it(aws, kind):
    """The host role reads a secret only when its benchfleet:secret-reader tag is the caller's
    ec2:SourceInstanceARN (jest: ownership.test.ts). Moto enforces no IAM: what is checked here is
    the request the readiness role is allowed to make (one tag key, an instance ARN of this account
    and region, on a secret RDS tagged with a DB of this stack's prefix)."""
    proxies, _ = aws
    tagged: list[dict] = []
    sm = FaultProxy(boto3.client("secretsmanager", region_name=REGION),
                    faults={"tag_resource": lambda kwargs: tagged.append(kwargs)})  # records, never fails
    clients.override("secretsmanager", lambda: sm)
    res = provision(kind)
    online = proxies["ssm"].extra["describe_instance_information"]
    proxies["ssm"].extra["describe_instance_information"] = lambda **kw: {"InstanceInformationList": []}
    assert not readiness(res)["ready"] and sm.calls["tag_resource"] == 0  # not ready: nothing bound yet
    proxies["ssm"].extra["describe_instance_information"] = online
    answer = readiness(res)
    assert answer["ready"]
    arn = answer["db"]["password_secret_arn"]
    tags = secret_tags(arn)
    account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]
    host = f"arn:aws:ec2:{REGION}:{account}:instance/{res['instance_id']}"
    assert tags[naming.TAG_SECRET_READER] == host
    rds_tag = "aws:rds:primaryDBClusterArn" if kind == "aurora" else "aws:rds:primaryDBInstanceArn"
    assert tags[rds_tag].split(":")[-1].startswith(f"{DB_PREFIX}-")
    assert tagged == [{"SecretId": arn, "Tags": [{"Key": naming.TAG_SECRET_READER, "Value": host}]}]


def test_readiness_fails_the_target_when_the_secret_cannot_be_bound(aws):
    """A host that cannot read its password can never run: the target fails, naming why, instead of
    being reported ready."""
    sm = FaultProxy(boto3.client("secretsmanager", region_name=REGION),
                    faults={"tag_resource": [client_error("AccessDeniedException", "TagResource")]})
    clients.override("secretsmanager", lambda: sm)
    res = provision("rds")
    with pytest.raises(errors.TargetFailed, match=r"could not bind secret .* \(AccessDeniedException\)"):
        readiness(res)
    # Throttling is retried by the state machine, not a failure.
    sm.faults["tag_resource"] = [client_error("ThrottlingException", "TagResource")]
    with pytest.raises(errors.ThrottlingException):
        readiness(res)


def step_state(res: dict, kind: str, db: dict | None) -> dict:
    plan = call("plan", {"input": {"spec": spec(), "run_id": RUN}})
    item = next(t for t in plan["targets"] if t["kind"] == kind)
    return {"run_id": RUN, "target": item["target"], "kind": kind, "deadline": item["deadline"],
            "timing": item["timing"], "repetition": 1, "workload": plan["workload"], "resources": res,
            "db": db, "step": item["steps"][1]}


def test_start_step_sends_the_agent_job_with_output_to_s3(aws):
    proxies, _ = aws
    res = provision("aurora")
    db = readiness(res)["db"]
    sent = []
    real = proxies["ssm"]._real.send_command
    proxies["ssm"].extra["send_command"] = lambda **kw: (sent.append(kw), real(**kw))[1]
    out = call("start_step", step_state(res, "aurora", db) | {"task_token": "token-1"})
    assert out["command_id"] and out["state"] == "running"
    # The task token waits for the step's callback under the command's id, with the step's status.
    kept = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=callbacks.token_key(out["command_id"]))["Body"].read())
    assert kept == {"task_token": "token-1", "status": {k: out[k] for k in (
        "command_id", "instance_id", "region", "started_at")}}
    kw = sent[0]
    job = json.loads(kw["Parameters"]["JobJson"][0])
    assert job["run_id"] == RUN and job["step"]["name"] == "t0001" and job["db"]["host"] == db["host"]
    # No password in the job: the agent reads the managed secret on the client.
    assert "password" not in job["db"] and job["db"]["password_secret_arn"] == db["password_secret_arn"]
    # RDS for MariaDB 11.8+ refuses connections without TLS; MySQL 8.4 users need it for caching_sha2.
    assert job["db"]["tls"] == "required"
    assert kw["OutputS3BucketName"] == BUCKET
    # Under the host's own prefix, the only one the host role may write (issue 30, finding 13).
    host = f"arn:aws:ec2:{REGION}:{DEFAULT_ACCOUNT_ID}:instance/{kw['InstanceIds'][0]}"
    assert kw["OutputS3KeyPrefix"] == naming.host_output_prefix(host, RUN, "aurora-r6g", 1, "t0001")
    assert kw["DocumentName"] == "bf-agent"


@pytest.mark.parametrize(("status", "sent"), [("Success", "success"), ("Failed", "AgentFailed"),
                                              ("TimedOut", "StepTimedOut"), ("Cancelled", "StepCancelled"),
                                              ("InProgress", None)])
def test_step_callback_completes_the_task_from_the_agent_steps_status(aws, status, sent):
    """The EventBridge event names the command; the token and the step's status wait in S3; the
    agent step's own status (runAgent) decides; Step Functions gets the token back."""
    s3 = boto3.client("s3", region_name=REGION)
    step = {"command_id": CMD, "instance_id": "i-0123456789abcdef0", "region": REGION,
            "started_at": "2026-11-23T06:00:00Z"}
    callbacks.record(s3, BUCKET, task_token="token-1", status=step, step_key=STEP_KEY)
    ssm, sfn = boto3.client("ssm", region_name=REGION), boto3.client("stepfunctions", region_name=REGION)
    clients.override("ssm", lambda: ssm)
    clients.override("stepfunctions", lambda: sfn)
    event = ssm_invocation_event(CMD, "i-0123456789abcdef0", "Failed" if status == "InProgress" else status,
                                 "bf-agent")
    with Stubber(ssm) as ssm_stub, Stubber(sfn) as sfn_stub:
        # Only the status is used; stdout (first 24,000 characters at most) never is.
        ssm_stub.add_response("get_command_invocation", {"Status": status, "StatusDetails": status,
                                                         "ResponseCode": 0, "StandardOutputContent": "x" * 24000},
                              # The agent's own step: a failed CloudWatch agent install is not the step's.
                              {"CommandId": CMD, "InstanceId": "i-0123456789abcdef0", "PluginName": "runAgent"})
        if status == "InProgress":  # the agent's step still runs: so does its command
            ssm_stub.add_response("list_command_invocations", {"CommandInvocations": [
                {"Status": "InProgress", "StatusDetails": "InProgress"}]},
                {"CommandId": CMD, "InstanceId": "i-0123456789abcdef0"})
        if sent == "success":
            sfn_stub.add_response("send_task_success", {}, {"taskToken": "token-1", "output": json.dumps(
                step | {"state": "succeeded", "detail": status})})
        elif sent:
            detail = f"{status} (exit 0)" if status == "Failed" else status
            sfn_stub.add_response("send_task_failure", {}, {"taskToken": "token-1", "error": sent,
                                                            "cause": f"{CMD} on i-0123456789abcdef0: {detail}"})
        out = call("step_callback", event)
        sfn_stub.assert_no_pending_responses()
    assert out["sent"] == sent


def test_step_callback_leaves_commands_that_are_not_steps_alone(aws):
    ssm, sfn = boto3.client("ssm", region_name=REGION), boto3.client("stepfunctions", region_name=REGION)
    clients.override("ssm", lambda: ssm)
    clients.override("stepfunctions", lambda: sfn)
    with Stubber(ssm), Stubber(sfn):  # no call to either
        out = call("step_callback", ssm_invocation_event("someone-elses", "i-1", "Success", "AWS-RunShellScript"))
    assert out == {"state": "not a step", "sent": None}


def test_step_callback_of_a_task_no_longer_waiting_does_nothing(aws):
    s3 = boto3.client("s3", region_name=REGION)
    callbacks.record(s3, BUCKET, task_token="token-1", status={
        "command_id": CMD, "instance_id": "i-1", "region": REGION, "started_at": "2026-11-23T06:00:00Z"},
        step_key=STEP_KEY)
    ssm, sfn = boto3.client("ssm", region_name=REGION), boto3.client("stepfunctions", region_name=REGION)
    clients.override("ssm", lambda: ssm)
    clients.override("stepfunctions", lambda: sfn)
    with Stubber(ssm) as ssm_stub, Stubber(sfn) as sfn_stub:
        ssm_stub.add_response("get_command_invocation", {"Status": "Success", "StatusDetails": "Success"})
        sfn_stub.add_client_error("send_task_success", "TaskTimedOut")
        out = call("step_callback", ssm_invocation_event(CMD, "i-1", "Success", "bf-agent"))
    assert out == {"state": "succeeded", "sent": "nothing waits (TaskTimedOut)"}


def seed_stdout(step: str, target_id: str, instance_id: str, shift_s: float = 0.0) -> None:
    """The fixture's agent output as Run Command leaves it in S3 (``shift_s``: moved in time)."""
    lines = []
    records = [json.loads(line) for line in
               (FIXTURES / ("prepare.jsonl" if step == "prepare" else "t0001.jsonl")).read_text().splitlines()]
    # The fixture predates the agent's timing of each report's arrival (arrived_s, issue 24): added as
    # the agent writes it, so that what collect sends is what today's agent makes it send.
    started = next((r["started"] for r in records if r.get("type") == "summary"), None)
    for record in records:
        if record.get("type") == "sample" and started is not None:
            record.setdefault("arrived_s", round(record["time"] - started, 6))
        record.update(run_id=RUN, target_id=target_id, repetition=1, step=step, workload="fixture-oltp")
        for key in ("time", "started"):
            if key in record:
                record[key] += shift_s
        lines.append(json.dumps(record, separators=(",", ":")))
    host = f"arn:aws:ec2:{REGION}:{DEFAULT_ACCOUNT_ID}:instance/{instance_id}"
    prefix = naming.host_output_prefix(host, RUN, target_id, 1, step)
    key = f"{prefix}/cmd/{instance_id}/awsrunShellScript/0.runAgent/stdout"
    body = "apt-get install ...\n" + "\n".join(lines)  # the document's own output comes first
    boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key=key, Body=body.encode())


def test_collect_writes_batches_of_at_most_100_and_cloud_metrics_in_ms(aws):
    proxies, _ = aws
    res = provision("rds")
    seed_stdout("t0001", "rds-m6g", res["instance_id"])
    samples = [json.loads(line) for line in (FIXTURES / "t0001.jsonl").read_text().splitlines()]
    mid = datetime.fromtimestamp(samples[120]["time"], tz=UTC)
    cw = boto3.client("cloudwatch", region_name=REGION)
    cw.put_metric_data(Namespace="AWS/RDS", MetricData=[{
        "MetricName": "WriteLatency", "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": res["db_instance_id"]}],
        "Timestamp": mid, "Value": 0.0025, "Unit": "Seconds"}])
    cw.put_metric_data(Namespace="CWAgent", MetricData=[{
        "MetricName": "cpu_usage_steal", "Dimensions": [{"Name": "InstanceId", "Value": res["instance_id"]},
                                                        {"Name": "cpu", "Value": "cpu-total"}],
        "Timestamp": mid, "Value": 1.5, "Unit": "Percent"}])
    event = {"run_id": RUN, "target": target("rds") | {"id": "rds-m6g"}, "kind": "rds", "repetition": 1,
             "step": {"index": 1, "name": "t0001", "kind": "measure", "threads": 1, "duration_s": 240},
             "resources": res, "started_at": datetime.fromtimestamp(samples[0]["time"], tz=UTC).strftime(
                 "%Y-%m-%dT%H:%M:%SZ")}
    out = call("collect", event)
    # 241 status readings (0..240 s) of 5 counters, each with whether the server answered.
    assert (out["samples"], out["status"], out["summaries"], out["cloud_metrics"]) == (240, 241 * 6, 1, 2)
    ts = proxies["timestream-write"]
    # One request per metric: a request shares one measure name (its CommonAttributes). The step's first
    # report is its ramp (a phase of its own): a request of its own. Status rows share theirs per
    # counter (the server's 6), 241 records each.
    calls = list(zip(ts.tables_per_call, ts.records_per_call, strict=True))
    assert [c for c in calls if c[0] != "status_samples"] == [
        ("samples", 1), ("samples", 100), ("samples", 100), ("samples", 39), ("step_summaries", 1),
        ("cloud_metrics", 1), ("cloud_metrics", 1)]
    assert [n for t, n in calls if t == "status_samples"] == [100, 100, 41] * 6
    raw = boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.raw_key(RUN, "rds-m6g", 1, "t0001"))["Body"].read().decode()
    assert len(raw.splitlines()) == 241 + 241 and "apt-get" not in raw
    # Again (a retried Lambda): the canonical raw key is read, the same rows written again.
    assert call("collect", event)["samples"] == 240


def test_collect_sends_what_timestream_stores_and_what_the_estimate_predicts(aws):
    proxies, _ = aws
    sent: list[dict[str, Any]] = []
    proxies["timestream-write"].meta.events.register(
        "before-parameter-build.timestream-write.WriteRecords", lambda params, **_: sent.append(copy.deepcopy(params)))
    target_spec = {"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"}
    res = provision("ec2")
    # The step ended 10 minutes ago (collect runs as it ends): CloudWatch still has its 1 s steal.
    # Its first sample half a second into a second, as the fixture's 240 samples span 239.999 s.
    times = [json.loads(line)["time"] for line in (FIXTURES / "t0001.jsonl").read_text().splitlines()
             if '"sample"' in line]
    shift = int(datetime.now(UTC).timestamp()) - 840.5 - times[0]
    seed_stdout("t0001", "ec2-m6g", res["instance_id"], shift)
    first, last = int(times[0] + shift), int(times[-1] + shift)
    cw = boto3.client("cloudwatch", region_name=REGION)
    host = [{"Name": "InstanceId", "Value": res["instance_id"]}, {"Name": "cpu", "Value": "cpu-total"}]
    steal = [{"MetricName": "cpu_usage_steal", "Timestamp": datetime.fromtimestamp(s, UTC), "Value": 1.0,
              "Unit": "Percent", "StorageResolution": 1, "Dimensions": host}
             for s in range(first - 400, last + 400)]  # the neighbouring steps' seconds too
    for i in range(0, len(steal), 500):
        cw.put_metric_data(Namespace="CWAgent", MetricData=steal[i:i + 500])
    event = {"run_id": RUN, "target": target_spec, "kind": "ec2", "repetition": 1,
             "step": {"index": 1, "name": "t0001", "kind": "measure", "threads": 1, "duration_s": 240},
             "resources": res, "started_at": datetime.fromtimestamp(first, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    out = call("collect", event)
    assert (out["samples"], out["status"], out["summaries"], out["cloud_metrics"]) == (240, 241 * 6, 1, 241)

    for request in sent:
        for record in stored_records(request):
            assert {d["Name"] for d in record["Dimensions"]} == TABLE_DIMENSIONS[request["TableName"]]
            assert record["MeasureName"] and record["MeasureValueType"] == "MULTI" and record["MeasureValues"]
            assert record["Time"] and record["TimeUnit"] == "MILLISECONDS"
            assert timestream.metered_bytes(record) <= timestream.MAX_RECORD_BYTES
    assert sum(len(r["Records"]) for r in sent) == 240 + 241 * 6 + 1 + 241
    # The plan's estimate of the same step: same requests, records and write units (the guide's
    # metering applied to what was sent).
    plan, _, _ = runplan.aws_plan(resolve(parse_spec(spec(captured_step=True, targets=[target_spec])), "x"),
                                  price_per_hour)
    (planned,) = plan.targets
    step = next(s for s in planned.steps if s.name == "t0001")
    predicted = controlplane.step_writes(planned, step, run_id=RUN, workload=plan.workload, repetition=1,
                                         report_interval_s=1)
    assert timestream.writes_of(sent) == predicted
    assert predicted.units < sum(len(r["Records"]) for r in sent) / 3  # not one write per record


def test_plan_prices_rds_gp3_with_what_its_size_includes(aws):
    """Issue 41 item 2, through the Plan Lambda: the price the targets row records for RDS gp3 of 400
    GiB at its included 12,000 IOPS / 500 MiB/s was 0.735/h (instance, client, the baseline billed as
    9,000 IOPS and 375 MB/s provisioned); it is the instance, the client and the capacity."""
    rds = {**target("rds"), "instance_class": "db.r6g.large", "client": {"instance_type": "c6i.xlarge"},
           "storage": {"type": "gp3", "size_gb": 400, "iops": 12000, "throughput_mbps": 500}}
    plan = call("plan", {"input": {"spec": spec(targets=[rds])}, "execution_name": "gp3-400"})
    (item,) = plan["targets"]
    # ... and the client's public IPv4 address ($0.005/h, item 13).
    assert item["target"]["price_per_hour"] == pytest.approx(0.215 + 0.17 + 400 * 0.115 / 730 + 0.005, abs=1e-4)


def test_collect_without_agent_output_fails_clearly(aws):
    event = {"run_id": RUN, "target": target("ec2"), "kind": "ec2", "repetition": 1,
             "step": {"index": 1, "name": "t0001", "kind": "measure", "threads": 1, "duration_s": 240},
             "resources": {"instance_id": "i-0123456789abcdef0"}, "started_at": "2026-11-22T00:00:00Z"}
    with pytest.raises(errors.CollectFailed, match="no agent output"):
        call("collect", event)


def test_teardown_is_idempotent_finds_strays_by_tag_and_verifies(aws):
    rds = boto3.client("rds", region_name=REGION)
    ec2 = boto3.client("ec2", region_name=REGION)
    res = provision("aurora")
    stray = provision("ec2") | {}
    ec2.create_tags(Resources=[stray["instance_id"]], Tags=[{"Key": naming.TAG_TARGET_ID, "Value": "aurora-t"}])
    event = {"run_id": RUN, "target": {"target_id": "aurora-t", "kind": "aurora"}, "resources": res}
    first = call("teardown", event)
    assert f"instance {stray['instance_id']}" in first["deleted"] and first["left"] == []
    assert rds.describe_db_clusters()["DBClusters"] == [] or all(
        c["Status"] == "deleting" for c in rds.describe_db_clusters()["DBClusters"])
    state = ec2.describe_instances(InstanceIds=[res["instance_id"]])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] in ("shutting-down", "terminated")
    assert call("teardown", event)["left"] == []  # again: nothing to do, no error
    # By tag only (provision failed before recording anything).
    assert call("teardown", {"run_id": RUN, "target": {"target_id": "aurora-t", "kind": "aurora"}})["left"] == []


def test_summarize_writes_the_terminal_status(aws):
    """From what Plan and the state machine left in S3 (the plan's targets, each repetition's
    outcome), never from the state."""
    s3 = boto3.client("s3", region_name=REGION)
    ok = {"target_id": "a", "repetition": 1, "steps": [{"step": "t0001"}], "error": {},
          "teardown": {"deleted": ["instance i-1"], "left": []}, "teardown_error": {}}
    bad = ok | {"target_id": "b", "error": {"Error": "AgentFailed", "Cause": "exit 3"}}
    for outcome in (ok, bad):
        s3.put_object(Bucket=BUCKET, Key=naming.outcome_key(RUN, outcome["target_id"], 1),
                      Body=json.dumps(outcome).encode())

    def plan(*targets: str, repetitions: int = 1) -> dict:
        key = naming.plan_targets_key(RUN)
        s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(
            [{"target_id": t, "repetitions": list(range(1, repetitions + 1))} for t in targets]).encode())
        return {"run_id": RUN, "name": "x", "targets_key": key}

    out = call("summarize", {"state": {"plan": plan("a", "b")}, "execution_name": "e"})
    assert out["status"] == "FAILED" and out["failed_targets"] == ["b"]
    summary = json.loads(s3.get_object(Bucket=BUCKET, Key=f"runs/{RUN}/summary.json")["Body"].read())
    assert summary["targets"][1]["repetitions"][0]["error"] == {"error": "AgentFailed", "cause": "exit 3"}
    assert summary["targets"][0]["repetitions"][0]["steps"] == [{"step": "t0001"}]
    out = call("summarize", {"state": {"plan": plan("a")}, "execution_name": "e"})
    assert out["status"] == "SUCCEEDED"
    # A repetition that recorded no outcome (the run ended before it finished) fails the run.
    out = call("summarize", {"state": {"plan": plan("a", repetitions=2)}, "execution_name": "e"})
    assert out["status"] == "FAILED" and out["failed_targets"] == ["a"]
    summary = json.loads(s3.get_object(Bucket=BUCKET, Key=f"runs/{RUN}/summary.json")["Body"].read())
    assert summary["targets"][0]["repetitions"][1]["error"]["error"] == "NoOutcome"


def test_nothing_heavy_on_a_lambdas_import_path():
    import subprocess

    code = ("import sys\n"
            "for m in ('plan','provision','readiness','start_step','step_callback','collect','teardown','summarize'):\n"
            "    __import__('handlers.' + m)\n"
            "heavy = sorted({'duckdb','plotly','rich','yaml'} & {n.split('.')[0] for n in sys.modules})\n"
            "print(','.join(heavy))\n")
    lambdas = Path(__file__).resolve().parents[2] / "lambdas"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=lambdas, check=True,
                         env={"PYTHONPATH": str(lambdas), "POWERTOOLS_TRACE_DISABLED": "1",
                              "AWS_DEFAULT_REGION": REGION, "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == ""


def test_ec2_jobs_install_on_prepare_and_read_the_password_on_the_host(aws):
    res = provision("ec2")
    sent = []
    ssm = aws[0]["ssm"]
    real = ssm._real.send_command
    ssm.extra["send_command"] = lambda **kw: (sent.append(kw), real(**kw))[1]
    state = step_state(res, "ec2", None)
    plan = call("plan", {"input": {"spec": spec(), "run_id": RUN}})
    prepare = next(t for t in plan["targets"] if t["kind"] == "ec2")["steps"][0]
    call("start_step", {**state, "step": prepare})
    call("start_step", state)
    first, second = (json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in sent)
    assert first["install"]["engine"] == "mysql-8.0" and first["install"]["mysql_config"] == "default"
    assert "[mysqld]" in first["install"]["cnf"] and "#" not in first["install"]["cnf"]
    assert "install" not in second
    for job in (first, second):
        assert job["db"] == {"host": "127.0.0.1", "port": 3306, "user": "sbtest", "database": "sbtest",
                             "password_file": "/var/lib/benchfleet/db.cnf", "tls": "off"}
    assert all("'" not in kw["Parameters"]["JobJson"][0] for kw in sent)


def test_plan_install_per_kind_and_cnf_problems_name_the_field(aws, tmp_path, monkeypatch):
    plan = call("plan", {"input": {"spec": spec(), "run_id": RUN}})
    installs = {t["kind"]: t["steps"][0].get("install") for t in plan["targets"]}
    assert installs["rds"] == installs["aurora"] == {"client": True}
    assert all("install" not in s for t in plan["targets"] for s in t["steps"][1:])
    with pytest.raises(errors.PlanRejected, match=r"targets\[0\]\.mysql_config: no file nope.cnf in "):
        call("plan", {"input": {"spec": spec(targets=[target("ec2") | {"mysql_config": "nope"}])}})
    with pytest.raises(errors.PlanRejected, match=r"targets\[0\]\.engine: EC2 targets install mysql-8.0"):
        call("plan", {"input": {"spec": spec(targets=[target("ec2") | {"engine": "mysql-8.4"}])}})
    # The Lambda reads its own copy of workloads/mysql (BENCHFLEET_WORKLOADS, set by the CDK app).
    (tmp_path / "mysql").mkdir()
    (tmp_path / "mysql" / "default.cnf").write_text("[mysqld]\nmax_connections = 77 # comment\n")
    # The Lambda ships the catalogue beside it (Plan checks what exists on AWS before planning).
    shutil.copytree(Path(__file__).resolve().parents[2] / "workloads" / "catalogue", tmp_path / "catalogue")
    monkeypatch.setenv("BENCHFLEET_WORKLOADS", str(tmp_path))
    # ... and its price tables: without them every cloud target is refused, budget or not.
    with pytest.raises(errors.PlanRejected, match=r"targets\[0\]\.instance_type: target .* has no price \(the price "
                                                  r"tables are not available\)"):
        call("plan", {"input": {"spec": spec(targets=[target("ec2")], budget_usd=5)}})
    shutil.copytree(Path(__file__).resolve().parents[2] / "workloads" / "pricing", tmp_path / "pricing")
    plan = call("plan", {"input": {"spec": spec(targets=[target("ec2")], budget_usd=5)}})
    assert plan["targets"][0]["steps"][0]["install"]["cnf"] == "[mysqld]\nmax_connections = 77\n"


def test_an_ec2_targets_server_options_are_in_the_cnf_the_host_installs(aws):
    """Issue 28 item 1: server_options were accepted and never reached the host (the install step
    carried only the cnf file's text)."""
    from benchfleet.workload.mysqlcnf import render

    options = {"innodb_buffer_pool_size": "64M", "sync_binlog": 0, "innodb_flush_log_at_trx_commit": 2}
    plan = call("plan", {"input": {"spec": spec(targets=[target("ec2") | {"server_options": options}])}})
    cnf = plan["targets"][0]["steps"][0]["install"]["cnf"]
    # What the agent renders on the host (benchfleet_install.write_cnf) and asks the server for.
    requested = dict(render(cnf, "mysql-8.0", 4 * 1024**3).options)
    assert {k: requested[k] for k in options} == {k: str(v) for k, v in options.items()}


def test_rds_and_aurora_boot_with_the_runs_parameter_groups_and_reboot_into_static_ones(aws):
    """Issue 28 item 1: rds and aurora targets accepted mysql_config and server_options and applied
    neither (provision created the database with its engine's default parameter group)."""
    proxies, _ = aws
    options = {"max_connections": 321, "innodb_open_files": 4000, "innodb_deadlock_detect": "OFF"}
    managed = [target("rds") | {"server_options": options}, target("aurora") | {"server_options": options}]
    plan = call("plan", {"input": {"spec": spec(targets=managed), "run_id": RUN}})
    rds = boto3.client("rds", region_name=REGION)
    for item in plan["targets"]:
        groups_only = call("provision", {"run_id": RUN, "target": item["target"], "repetition": 1,
                                         "expires_at": EXPIRES, "parameters": item["parameters"]})
        # The groups first, set; the database that boots with them only after they settled (issue 41
        # item 11: AWS asks for 5 minutes between the two).
        assert groups_only[lifecycle.GROUPS_SETTLE] == paramgroups.SETTLE_S == 300
        assert groups_only["db_instance_id"] is None and not [
            d for d in rds.describe_db_instances()["DBInstances"] if item["target_id"] in d["DBInstanceIdentifier"]]
        res = provision(item["kind"], target=item["target"], parameters=item["parameters"])
        writer = rds.describe_db_instances(DBInstanceIdentifier=res["db_instance_id"])["DBInstances"][0]
        assert [g["DBParameterGroupName"] for g in writer["DBParameterGroups"]] == [res["parameter_group"]]
        values = {p["ParameterName"]: p.get("ParameterValue") for p in rds.describe_db_parameters(
            DBParameterGroupName=res["parameter_group"])["Parameters"]}
        assert values["max_connections"] == "321" and values["innodb_open_files"] == "4000"
        assert values["innodb_buffer_pool_size"] == "{DBInstanceClassMemory*7000/10000}"  # default.cnf's 70%
        if item["kind"] == "aurora":  # a cluster-level parameter in the cluster's group
            cluster = rds.describe_db_clusters(DBClusterIdentifier=res["db_cluster_id"])["DBClusters"][0]
            assert cluster["DBClusterParameterGroup"] == res["cluster_parameter_group"]
            assert {p["ParameterName"]: p.get("ParameterValue") for p in rds.describe_db_cluster_parameters(
                DBClusterParameterGroupName=res["cluster_parameter_group"])["Parameters"]}[
                "innodb_deadlock_detect"] == "0"
        else:
            assert values["innodb_deadlock_detect"] == "0"
        # A static parameter still waiting for a reboot: readiness reboots the writer, then waits.
        real = proxies["rds"]._real.describe_db_instances
        statuses = iter(["pending-reboot"])

        def described(real=real, statuses=statuses, **kw):
            out = real(**kw)
            for group in out["DBInstances"][0]["DBParameterGroups"]:
                group["ParameterApplyStatus"] = next(statuses, "in-sync")
            return out
        proxies["rds"].extra["describe_db_instances"] = described
        rebooted = proxies["rds"].calls["reboot_db_instance"]
        assert not readiness(res)["ready"] and proxies["rds"].calls["reboot_db_instance"] == rebooted + 1
        assert readiness(res)["ready"] and proxies["rds"].calls["reboot_db_instance"] == rebooted + 1
        del proxies["rds"].extra["describe_db_instances"]
        # Teardown deletes the groups after their database, and checks they are gone.
        torn = call("teardown", {"run_id": RUN, "target": {"target_id": item["target_id"], "kind": item["kind"]},
                                 "repetition": 1, "resources": res})
        assert sum("parameter group" in d for d in torn["deleted"]) == (2 if item["kind"] == "aurora" else 1)
    assert [g for g in rds.describe_db_parameter_groups()["DBParameterGroups"]
            if g["DBParameterGroupName"].startswith(DB_PREFIX)] == []


@pytest.mark.parametrize(("kind", "level", "theirs"), [
    ("rds", "instance", []),
    ("aurora", "cluster", [{"Key": naming.TAG_STACK, "Value": "Other@us-east-1"}]),
    ("aurora", "instance", [{"Key": naming.TAG_RUN_ID, "Value": RUN},
                            {"Key": naming.TAG_TARGET_ID, "Value": "aurora-t"}]),  # no stack's: tagged by hand
])
def test_provision_never_adopts_a_parameter_group_of_its_name_that_is_not_the_runs(aws, kind, level, theirs):
    """Issue 41 item 12: provision took any existing group named as the run's (CreateDBParameterGroup's
    AlreadyExists suppressed): it set the run's parameters in someone else's group (untagged, another
    stack's, or tagged with the run but not by this stack), booted the database with it, and teardown
    deleted it. A group is the run's only with the run's, the target's and the stack's tags."""
    from benchfleet.aws.fleet import paramgroups

    rds = boto3.client("rds", region_name=REGION)
    groups = paramgroups.names(kind, RUN, f"{kind}-t", 1, DB_PREFIX)
    family = "aurora-mysql8.0" if kind == "aurora" else "mysql8.0"
    name = str(groups.of(level))
    if level == "cluster":
        rds.create_db_cluster_parameter_group(DBClusterParameterGroupName=name, DBParameterGroupFamily=family,
                                              Description="someone else's", Tags=theirs)
    else:
        rds.create_db_parameter_group(DBParameterGroupName=name, DBParameterGroupFamily=family,
                                      Description="someone else's", Tags=theirs)
    # A teardown of the target (as after a provision that failed before recording anything) deleted
    # every group of the derived names: it deletes only the run's own, and does not count it as left.
    torn = call("teardown", {"run_id": RUN, "target": {"target_id": f"{kind}-t", "kind": kind}, "repetition": 1})
    assert not any(name in d for d in torn["deleted"]) and torn["left"] == []
    item = call("plan", {"input": {"spec": spec(targets=[target(kind) | {"server_options": {"max_connections": 321}}]),
                                   "run_id": RUN}})["targets"][0]
    with pytest.raises(errors.TargetFailed, match=f"parameter group {name} already exists and is not this run's"):
        call("provision", {"run_id": RUN, "target": item["target"], "repetition": 1, "expires_at": EXPIRES,
                           "parameters": item["parameters"]})
    # Nothing set in it, no database booted with it, and it is still there after provision's clean-up
    # and another teardown.
    if level == "instance":
        values = {p["ParameterName"]: p.get("ParameterValue")
                  for p in rds.describe_db_parameters(DBParameterGroupName=name)["Parameters"]}
        assert values.get("max_connections") != "321"
    assert rds.describe_db_instances()["DBInstances"] == []
    torn = call("teardown", {"run_id": RUN, "target": {"target_id": f"{kind}-t", "kind": kind}, "repetition": 1})
    assert not any(name in d for d in torn["deleted"]) and torn["left"] == []
    listed = (rds.describe_db_cluster_parameter_groups()["DBClusterParameterGroups"] if level == "cluster"
              else rds.describe_db_parameter_groups()["DBParameterGroups"])
    assert name in {g.get("DBClusterParameterGroupName") or g.get("DBParameterGroupName") for g in listed}


def test_provision_takes_a_group_whose_tags_it_may_not_read_as_someone_elses(aws):
    """IAM lets provision read the tags of groups tagged as its stack's only: AccessDenied on
    ListTagsForResource is a group that is not the run's, refused like one whose tags say so."""
    from benchfleet.aws.fleet import paramgroups

    proxies, _ = aws
    rds = boto3.client("rds", region_name=REGION)
    name = str(paramgroups.names("rds", RUN, "rds-t", 1, DB_PREFIX).instance)
    rds.create_db_parameter_group(DBParameterGroupName=name, DBParameterGroupFamily="mysql8.0", Description="x")
    proxies["rds"].faults["list_tags_for_resource"] = lambda kw: client_error("AccessDenied", "ListTagsForResource")
    item = call("plan", {"input": {"spec": spec(targets=[target("rds")]), "run_id": RUN}})["targets"][0]
    with pytest.raises(errors.TargetFailed, match=f"{name} already exists and is not this run's \\(no benchfleet tags"):
        call("provision", {"run_id": RUN, "target": item["target"], "repetition": 1, "expires_at": EXPIRES,
                           "parameters": item["parameters"]})


def test_the_shipped_aurora_pk_order_spec_measures_both_keys_on_one_cluster(aws):
    """Issue 24 item 7: seed 003's two primary keys were two specs (two clusters, compared run against
    run); now variants of one cluster, which the cloud Plan takes (it refused variants on aurora)."""
    doc = load_spec(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml").inline()  # as run --remote sends it
    plan = call("plan", {"input": {"spec": doc}, "execution_name": "pk-order-1"})
    (item,) = plan["targets"]
    assert item["kind"] == "aurora" and item["repetitions"] == [1]
    assert [item["steps"][i]["name"] for i in item["sequence"][0]] == [
        "prepare", "prepare.random", "warmup", "warmup.random",
        "t0015.b1.seq", "t0015.b1.random", "t0015.b2.random", "t0015.b2.seq"]
    # Nothing to switch between them; the cluster boots with default.cnf all the same.
    assert not any((s.get("variant_settings") or {}).get("parameters") for s in item["steps"])
    assert {p["name"] for p in item["parameters"]} == {"innodb_buffer_pool_size", "max_connections"}


def test_plan_counts_the_aurora_io_estimate_in_its_budget(aws):
    """Issue 41 item 14: the shipped aurora-pk-order planned $4.81 against its $5 budget, Aurora's I/O
    requests left out; the Plan Lambda now counts their estimate (~$51) and shows it apart."""
    doc = load_spec(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml").inline()
    with pytest.raises(errors.PlanRejected, match=r"^spec: budget_usd: the estimate is \$5[0-9.]+ \(hosts \$4\.[0-9]+, "
                                                  r"Aurora I/O \$5[0-9.]+ \(estimated"):
        call("plan", {"input": {"spec": doc | {"budget_usd": 5}}, "execution_name": "pk-order-2"})
    plan = call("plan", {"input": {"spec": doc}, "execution_name": "pk-order-3"})
    assert 50 < plan["usage_usd"] < plan["estimated_cost_usd"] <= doc["budget_usd"]
    parts = plan["hosts_usd"] + plan["usage_usd"] + plan["control_plane_usd"]
    assert plan["estimated_cost_usd"] == pytest.approx(parts, abs=1e-3)
    assert "transactions/s per thread" in plan["usage_assumption"]


def test_run_id_is_the_execution_name_and_a_schedule_names_the_run(aws):
    plan = call("plan", {"input": {"spec": spec(), "schedule": "nightly-graviton"},
                         "execution_name": "4b7c0a52-8a51-4bd8-a4c5-3a0c1f0e9d11"})
    assert plan["run_id"] == "4b7c0a52-8a51-4bd8-a4c5-3a0c1f0e9d11"
    assert plan["name"] == "nightly-graviton" and plan["schedule"] == "nightly-graviton"
    assert plan["spec_name"] == spec()["name"]
    same = call("plan", {"input": {"spec": spec(), "run_id": "exec-2"}, "execution_name": "exec-2"})
    assert same["run_id"] == "exec-2" and same["name"] == spec()["name"] and same["schedule"] is None
    with pytest.raises(errors.PlanRejected, match="run_id: other-1 differs from the execution name exec-2"):
        call("plan", {"input": {"spec": spec(), "run_id": "other-1"}, "execution_name": "exec-2"})
    with pytest.raises(errors.PlanRejected, match="not a valid run id"):
        call("plan", {"input": {"spec": spec()}, "execution_name": "Console_Run"})
    with pytest.raises(errors.PlanRejected, match="input: schedule"):
        call("plan", {"input": {"spec": spec(), "schedule": "Not A Slug"}, "execution_name": "exec-3"})


def test_plan_takes_the_region_caps_from_its_environment(aws, monkeypatch):
    # Four m6i.2xlarge side by side: 32 vCPUs, exactly the default cap.
    wide = spec(targets=[{"id": f"m{i}", "kind": "ec2", "instance_type": "m6i.2xlarge"} for i in range(4)])
    plan = call("plan", {"input": {"spec": wide}, "execution_name": "caps-1"})
    assert plan["control_plane_usd"] > 0
    assert plan["estimated_cost_usd"] == pytest.approx(plan["hosts_usd"] + plan["control_plane_usd"], abs=1e-4)
    assert {t["start_after_s"][0] for t in plan["targets"]} == {0}  # all four at once
    # Under a lower cap the Plan Lambda schedules waves within it (issue 30 item 2): three fit, the
    # fourth starts when the first wave's hosts are planned gone; the wall time says so.
    monkeypatch.setenv("MAX_VCPUS_PER_REGION", "24")
    waved = call("plan", {"input": {"spec": wide}, "execution_name": "caps-2"})
    assert sorted(t["start_after_s"][0] for t in waved["targets"])[:3] == [0, 0, 0]
    assert max(t["start_after_s"][0] for t in waved["targets"]) > 0 and waved["wall_s"] > plan["wall_s"]
    monkeypatch.setenv("MAX_VCPUS_PER_REGION", "64")
    monkeypatch.setenv("MAX_HOSTS_PER_REGION", "3")
    assert max(t["start_after_s"][0] for t in call("plan", {"input": {"spec": wide},
                                                            "execution_name": "caps-3"})["targets"]) > 0
    # Only a target larger than a cap on its own is refused, naming the key.
    monkeypatch.setenv("MAX_VCPUS_PER_REGION", "6")
    with pytest.raises(errors.PlanRejected, match=r"targets\[0\]: target m0 alone needs 8 EC2 vCPUs .* "
                                                  r"above the cap of 6 \(cdk context maxVcpusPerRegion\)"):
        call("plan", {"input": {"spec": wide}, "execution_name": "caps-4"})
