"""The API handler against moto: Step Functions executions, S3 results, teardown by tag."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws import api_service
from benchfleet.aws.fleet.sweep import RegionClients, teardown_run
from benchfleet.plan.naming import tag_list, tags

OWNER = "Benchfleet@us-east-1"  # BENCHFLEET_STACK (cdk/lib/ownership.ts)
REGION = "us-east-1"
TARGET_REGIONS = ("eu-north-1",)  # what the CDK context key targetRegions deployed besides REGION
BUCKET = "bf-results"
ASL = json.dumps({"StartAt": "Plan", "States": {"Plan": {"Type": "Pass", "End": True}}})
WORKLOAD = {"name": "ro", "test": "oltp_read_only", "threads": [1, 4], "duration_s": 30, "warmup_s": 0}
SPEC = {"name": "graviton-vs-intel", "workload": WORKLOAD, "repetitions": 2, "budget_usd": 50,
        "targets": [{"id": "m6i", "kind": "ec2", "instance_type": "m6i.large"},
                    {"id": "m5", "kind": "ec2", "instance_type": "m5.large", "region": "eu-north-1"}]}


def event(method: str, path: str, body=None, headers=None, query=None, raw: str | None = None,
          b64: bool = False) -> dict:
    text = raw if raw is not None else (json.dumps(body) if body is not None else None)
    if b64 and text is not None:
        text = base64.b64encode(text.encode()).decode()
    headers = {"Content-Type": "application/json", **(headers or {})}
    return {"resource": path, "path": path, "httpMethod": method, "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
            "pathParameters": None, "stageVariables": None, "isBase64Encoded": b64, "body": text,
            "requestContext": {"resourcePath": path, "httpMethod": method, "stage": "prod",
                               "requestId": "r", "identity": {"sourceIp": "127.0.0.1"}}}


def owned(run_id: str, target_id: str, expires_at: datetime) -> list[dict[str, str]]:
    """The tags provision puts on a resource of this stack's run."""
    return tag_list(tags(run_id, target_id, expires_at, OWNER))


class Api:
    def __init__(self, sfn, s3, arn):
        from handlers import api

        self.sfn, self.s3, self.arn, self.module = sfn, s3, arn, api
        self.starts = 0
        real_start = sfn.start_execution

        def counting_start(**kw):
            self.starts += 1
            return real_start(**kw)

        sfn.start_execution = counting_start

        def clients_for(region: str) -> RegionClients:
            return RegionClients(region, boto3.client("ec2", region_name=region),
                                 boto3.client("rds", region_name=region))

        self.service = api_service.RunService(
            sfn=sfn, s3=s3, state_machine_arn=arn, bucket=BUCKET,
            price_lookup=api_service.default_price_lookup(),
            teardown=lambda run_id, regions: teardown_run(run_id, OWNER, clients_for, regions).summary(),
            home_region=REGION, target_regions=TARGET_REGIONS)
        api.configure(self.service)

    def __call__(self, *args, **kwargs) -> tuple[int, dict | str, dict]:
        resp = self.module.handler(event(*args, **kwargs), None)
        headers = dict(resp.get("headers") or {})
        headers.update({k: ", ".join(v) for k, v in (resp.get("multiValueHeaders") or {}).items()})
        body = resp["body"]
        ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        if body and "json" in ctype:
            body = json.loads(body)
        return resp["statusCode"], body, headers


@pytest.fixture
def api(monkeypatch):
    for k, v in {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        sfn = boto3.client("stepfunctions")
        role = boto3.client("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        arn = sfn.create_state_machine(name="Benchfleet", definition=ASL, roleArn=role)["stateMachineArn"]
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        client = Api(sfn, s3, arn)
        yield client
        client.module.configure(None)


def test_the_answer_to_a_run_says_what_its_repetitions_can_resolve(api):
    """A spec of 2 repetitions between two EC2 types cannot reach a verdict (fewer than 3): `plan` said so,
    the API's 202 did not. Now it carries the same resolution `benchfleet plan` prints."""
    status, body, _ = api("POST", "/runs", SPEC)
    assert status == 202, body
    (check,) = body["resolution"]["checks"]
    assert check["verdicts"] == "targets" and check["design"] == "welch" and check["repetitions"] == 2
    assert check["status"] == "cannot reach a verdict" and body["resolution"]["exploratory"] is True
    assert any("target verdicts (welch)" in w for w in body["resolution"]["warnings"])


def test_post_starts_an_execution_named_by_the_key(api):
    status, body, _ = api("POST", "/runs", SPEC, {"Idempotency-Key": "nightly-20261122-0001"})
    assert status == 202, body
    assert body["run_id"] == "nightly-20261122-0001" and body["created"] is True
    assert body["estimated_cost_usd"] > 0 and body["unpriced_targets"] == []
    described = api.sfn.describe_execution(executionArn=api.service.execution_arn(body["run_id"]))
    stored = json.loads(described["input"])
    assert stored["run_id"] == body["run_id"] and stored["spec"]["workload"]["name"] == "ro"
    assert set(stored) == {"spec", "run_id"}  # what the Plan state's RunRequest accepts


def test_a_cluster_with_a_proxy_host_of_its_own_is_accepted_and_its_host_priced(api, monkeypatch):
    """proxy.instance_type was refused with a 400 ("does not run on AWS yet"): now accepted (202), and
    the estimate counts the proxy's host (c6i.large beside the nodes and the client)."""
    from benchfleet.plan.scale import apply_scale
    from benchfleet.spec.loading import load_spec

    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    seed = Path(__file__).resolve().parents[2] / "workloads" / "comparisons" / "pxc-on-aws.yaml"
    body = apply_scale(load_spec(seed), "smoke").inline()
    body["targets"] = [{**body["targets"][0], "proxy": {"software": "haproxy", "instance_type": "c6i.large"}}]
    status, accepted, _ = api("POST", "/runs", body, {"Idempotency-Key": "pxc-proxy-host-0001"})
    assert status == 202, accepted
    assert accepted["created"] is True and accepted["unpriced_targets"] == []
    body["targets"][0]["proxy"] = "haproxy"  # the same cluster, its proxy on the client host
    status, beside, _ = api("POST", "/runs", body, {"Idempotency-Key": "pxc-proxy-client-0001"})
    assert status == 202, beside
    assert accepted["estimated_cost_usd"] > beside["estimated_cost_usd"]


def test_the_started_input_is_what_plan_accepts_as_that_execution(api):
    """The StartExecution input, read back from Step Functions, planned as the Plan state would:
    its RunRequest and $$.Execution.Name (no wrapping, no inlining)."""
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.regions import TargetRegions

    status, body, _ = api("POST", "/runs", SPEC, {"Idempotency-Key": "planned-input-1"})
    assert status == 202, body
    described = api.sfn.describe_execution(executionArn=api.service.execution_arn(body["run_id"]))
    request = runplan.parse_request(json.loads(described["input"]))
    # The Plan Lambda's regions: the same stack environment (TARGET_REGIONS) as the API's.
    regions = TargetRegions.of(REGION, TARGET_REGIONS)
    plan = runplan.plan_run(request, execution_name=described["name"], regions=regions)
    assert plan["run_id"] == "planned-input-1" and plan["target_count"] == 2


def test_retry_with_same_key_returns_the_same_run(api):
    first = api("POST", "/runs", SPEC, {"Idempotency-Key": "abc-1"})
    # same spec, different spelling (defaults written out, keys reordered): still the same run
    spelled = {**dict(reversed(list(SPEC.items()))), "description": ""}
    second = api("POST", "/runs", spelled, {"Idempotency-Key": "abc-1"})
    assert first[0] == 202 and second[0] in (200, 202)
    assert second[1]["run_id"] == first[1]["run_id"]
    assert len(api.sfn.list_executions(stateMachineArn=api.arn)["executions"]) == 1
    # after the run finished, a retry still does not start another
    api.sfn.stop_execution(executionArn=api.service.execution_arn("abc-1"))
    third = api("POST", "/runs", SPEC, {"Idempotency-Key": "abc-1"})
    assert third[0] == 200 and third[1]["created"] is False and third[1]["status"] == "ABORTED"
    assert len(api.sfn.list_executions(stateMachineArn=api.arn)["executions"]) == 1


def test_reused_key_with_another_spec_is_409(api):
    assert api("POST", "/runs", SPEC, {"Idempotency-Key": "abc-1"})[0] == 202
    status, body, _ = api("POST", "/runs", {**SPEC, "repetitions": 3}, {"Idempotency-Key": "abc-1"})
    assert status == 409 and body["field"] == "Idempotency-Key"


def test_key_that_is_not_a_run_id_maps_to_a_stable_one(api):
    a = api("POST", "/runs", SPEC, {"Idempotency-Key": "Retry_Key_1"})
    b = api("POST", "/runs", SPEC, {"Idempotency-Key": "Retry_Key_1"})
    assert a[0] == 202 and b[1]["run_id"] == a[1]["run_id"] and a[1]["run_id"].startswith("k-")


def test_without_key_each_post_is_a_new_run(api):
    a = api("POST", "/runs", SPEC)
    b = api("POST", "/runs", SPEC)
    assert a[0] == b[0] == 202 and a[1]["run_id"] != b[1]["run_id"]
    assert a[1]["run_id"].startswith("graviton-vs-intel-")


@pytest.mark.parametrize(("spec", "field"), [
    ({**SPEC, "targets": [{"id": "m6i", "kind": "ec2"}]}, "targets[0].instance_type"),
    ({**SPEC, "targets": [{"id": "lap", "kind": "local"}]}, "targets[0].kind"),
    ({**SPEC, "workload": "oltp-read-only"}, "workload"),
    ({**SPEC, "budget_usd": 0.01}, "budget_usd"),
    ({**SPEC, "budget_usd": None, "targets": [{"id": "x", "kind": "ec2", "instance_type": "m6g.large",
                                                "region": "eu-north-1"}]},
     "targets[0].instance_type"),  # not in eu-north-1's price table: no ceiling can hold it
    ({**SPEC, "targets": [{**SPEC["targets"][0], "price_per_hour": 0}]}, "targets[0].price_per_hour"),
    ({**SPEC, "name": "Bad Name"}, "name"),
    ({**SPEC, "surprise": 1}, "surprise"),
    ({**SPEC, "budget_usd": None, "workload": {**WORKLOAD, "duration_s": 48 * 3600, "threads": [1, 2, 3]}},
     "workload.duration_s"),  # longer than one execution may run: the Plan state's refusal, made before starting
])
def test_bad_spec_is_400_naming_the_field(api, spec, field):
    status, body, _ = api("POST", "/runs", spec)
    assert status == 400, body
    assert body["field"] == field, body
    assert body["message"].startswith(field)
    assert api.starts == 0


EC2 = {"id": "t", "kind": "ec2", "instance_type": "m6i.large"}
RDS = {"id": "t", "kind": "rds", "instance_class": "db.r6g.large"}
AURORA = {"id": "t", "kind": "aurora", "instance_class": "db.r6g.large"}


@pytest.mark.parametrize(("target", "field"), [
    ({**EC2, "instance_type": "m6i.huge"}, "instance_type"),
    ({**EC2, "instance_type": "zz9.large"}, "instance_type"),
    ({**EC2, "region": "us-east-9"}, "region"),
    ({**EC2, "engine": "mysql-5.1"}, "engine"),
    ({**EC2, "engine": "mariadb-11.8"}, "engine"),  # the EC2 image packages MariaDB 10.11
    ({**RDS, "engine": "mysql-5.7"}, "engine"),
    ({**AURORA, "engine": "mysql-5.7"}, "engine"),
    ({**EC2, "storage": {"type": "gp2", "size_gb": 100, "iops": 3000}}, "storage.iops"),
    ({**EC2, "storage": {"type": "io2", "size_gb": 100}}, "storage.iops"),
    ({**EC2, "storage": {"type": "io1", "size_gb": 500, "iops": 100000}}, "storage.iops"),
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "iops": 2000}}, "storage.iops"),
    ({**EC2, "storage": {"type": "gp2", "size_gb": 100, "throughput_mbps": 250}}, "storage.throughput_mbps"),
    ({**EC2, "storage": {"type": "instance-store", "size_gb": 100}}, "storage.type"),  # m6i has none
    ({**RDS, "storage": {"type": "instance-store", "size_gb": 100}}, "storage.type"),
    ({**RDS, "storage": {"type": "io1", "size_gb": 50, "iops": 1000}}, "storage.size_gb"),
    ({**RDS, "storage": {"type": "gp3", "size_gb": 100, "iops": 12000}}, "storage.iops"),
    ({**RDS, "instance_class": "db.m6i.huge"}, "instance_class"),
    ({**AURORA, "instance_class": "db.m5.large"}, "instance_class"),  # Aurora has no m5 class
    ({**RDS, "client": {"instance_type": "c6i.huge"}}, "client.instance_type"),
    # Types that exist, but not in the target's region (workloads/catalogue/ec2-offerings.json).
    ({**EC2, "instance_type": "m6id.large", "region": "eu-north-1"}, "instance_type"),
    ({**EC2, "instance_type": "m7i.32xlarge"}, "instance_type"),  # no region: the stack's, us-east-1
    ({**RDS, "region": "eu-north-1", "client": {"instance_type": "c7gn.large"}}, "client.instance_type"),
])
def test_an_impossible_cloud_spec_is_400_naming_the_field(api, target, field):
    status, body, _ = api("POST", "/runs", {**SPEC, "targets": [target]})
    assert status == 400, body
    assert body["field"] == f"targets[0].{field}", body
    if "not offered in" in body["message"]:
        assert f"not offered in {target.get('region', REGION)}" in body["message"], body
    assert api.starts == 0


AURORA_FLEET = {"name": "aurora-fleet", "repetitions": 1,
                "workload": {**WORKLOAD, "threads": [1, 2, 4, 8, 16, 32, 64], "duration_s": 6 * 3600},
                "targets": [{"id": f"a{i}", "kind": "aurora", "instance_class": "db.r6i.32xlarge"}
                            for i in range(200)]}


def test_without_a_budget_the_deployment_ceiling_holds(api):
    """The issue's case: 200 x aurora db.r6i.32xlarge for 42 h was accepted at ~$158,000."""
    status, body, _ = api("POST", "/runs", AURORA_FLEET)
    assert status == 400, body
    assert body["field"] == "budget_usd" and "$100.00" in body["message"] and "maxRunCostUsd" in body["message"]
    cheap = {**SPEC, "budget_usd": None}
    status, body, _ = api("POST", "/runs", cheap)
    assert status == 202 and body["estimated_cost_usd"] <= 100, body
    assert api.starts == 1


def test_the_ceiling_counts_the_control_planes_charges_as_the_plan_state_does(api):
    """The API decides with the Plan state's own function: hosts and control plane together. A
    ceiling the hosts alone stay under, but not with the control plane, refuses the run."""
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.regions import TargetRegions

    cheap = {**SPEC, "budget_usd": None}
    regions = TargetRegions.of(REGION, TARGET_REGIONS)
    _, plan, _ = runplan.checked_plan(runplan.RunRequest(spec=cheap), regions=regions, max_run_cost_usd=1e6)
    assert plan.control_plane_usd > 0
    api.service.max_run_cost_usd = plan.hosts_usd + plan.control_plane_usd / 2
    status, body, _ = api("POST", "/runs", cheap)
    assert status == 400 and body["field"] == "budget_usd", body
    assert f"control plane ${plan.control_plane_usd:.2f}" in body["message"], body
    api.service.max_run_cost_usd = plan.estimated_cost_usd + 0.01
    status, body, _ = api("POST", "/runs", cheap)
    assert status == 202 and body["estimated_cost_usd"] == plan.estimated_cost_usd, body
    assert api.starts == 1


def test_an_unpriced_target_is_refused_with_or_without_a_budget(api):
    # eu-north-1's tables hold t3 and m5 only: an estimate that leaves m6g.large out would bound nothing.
    unpriced = {**SPEC, "targets": [{"id": "g", "kind": "ec2", "instance_type": "m6g.large",
                                     "region": "eu-north-1"}]}
    for budget in (None, 50):
        status, body, _ = api("POST", "/runs", {**unpriced, "budget_usd": budget})
        assert status == 400 and body["field"] == "targets[0].instance_type", body
        assert "m6g.large" in body["message"] and "eu-north-1" in body["message"], body
    assert api.starts == 0


def test_a_target_in_a_region_with_nothing_deployed_is_400_naming_its_region(api):
    spec = {**SPEC, "targets": [*SPEC["targets"], {"id": "west", "kind": "ec2", "instance_type": "m5.large",
                                                   "region": "us-west-1"}]}
    status, body, _ = api("POST", "/runs", spec)
    assert status == 400, body
    assert body["field"] == "targets[2].region"
    assert "us-west-1" in body["message"] and "targetRegions" in body["message"]
    assert api.starts == 0


def test_the_handler_takes_the_target_regions_from_its_environment(api, monkeypatch):
    monkeypatch.setenv("TARGET_REGIONS", "us-west-1,eu-north-1")
    api.module.configure(None)
    service = api.module.service()
    assert service.home_region == REGION and service.target_regions == ("us-west-1", "eu-north-1")


@pytest.mark.parametrize(("kwargs", "status", "field"), [
    ({"raw": "{not json"}, 400, "body"),
    ({"raw": "[1, 2]"}, 400, "body"),
    ({"raw": ""}, 400, "body"),
    ({"raw": "x" * (api_service.MAX_BODY_BYTES + 10)}, 413, "body"),
    ({"body": SPEC, "headers": {"Content-Type": "text/plain"}}, 415, "Content-Type"),
    ({"body": SPEC, "headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 415, "Content-Type"),
    ({"body": SPEC, "headers": {"Idempotency-Key": "../../etc/passwd"}}, 400, "Idempotency-Key"),
    ({"body": SPEC, "headers": {"Idempotency-Key": "a" * 81}}, 400, "Idempotency-Key"),
    ({"body": SPEC, "headers": {"Idempotency-Key": "abc;rm -rf /"}}, 400, "Idempotency-Key"),
    ({"raw": "%%%", "b64": True}, 400, "body"),
])
def test_bad_requests(api, kwargs, status, field):
    got, body, _ = api("POST", "/runs", **kwargs)
    assert got == status, body
    assert body["field"] == field, body
    assert api.starts == 0


def test_base64_body_is_accepted(api):
    assert api("POST", "/runs", SPEC, b64=True)[0] == 202


def test_list_runs_pages_and_filters(api):
    for i in range(5):
        api("POST", "/runs", SPEC, {"Idempotency-Key": f"run-{i}"})
    api("POST", "/runs", {**SPEC, "name": "other"}, {"Idempotency-Key": "other-1"})
    status, page, _ = api("GET", "/runs", query={"limit": "4"})
    assert status == 200 and len(page["runs"]) == 4 and page["next"]
    status, rest, _ = api("GET", "/runs", query={"limit": "4", "next": page["next"]})
    assert len(rest["runs"]) == 2 and "next" not in rest
    ids = {r["run_id"] for r in page["runs"] + rest["runs"]}
    assert ids == {*(f"run-{i}" for i in range(5)), "other-1"}
    first = page["runs"][0]
    assert first["status"] == "RUNNING" and first["estimated_cost_usd"] > 0 and first["targets"] == 2
    _, named, _ = api("GET", "/runs", query={"name": "other"})
    assert [r["run_id"] for r in named["runs"]] == ["other-1"]
    assert api("GET", "/runs", query={"limit": "0"})[0] == 400
    assert api("GET", "/runs", query={"limit": "many"})[1]["field"] == "limit"
    assert api("GET", "/runs", query={"next": "garbage token"})[1]["field"] == "next"
    assert api("GET", "/runs", query={"status": "EXPLODED"})[1]["field"] == "status"


def test_get_run_reports_steps_from_s3(api):
    api("POST", "/runs", SPEC, {"Idempotency-Key": "run-1"})
    for step in ("prepare", "t0001"):
        api.s3.put_object(Bucket=BUCKET, Key=f"runs/run-1/m6i/rep-1/{step}.jsonl", Body=b"{}\n")
    status, body, _ = api("GET", "/runs/run-1")
    assert status == 200 and body["status"] == "RUNNING" and body["results"] is False
    m6i = next(t for t in body["targets"] if t["target_id"] == "m6i")
    steps = {s["step"]: s["status"] for s in m6i["repetitions"][0]["steps"]}
    assert steps == {"prepare": "done", "t0001": "done", "t0004": "pending"}
    assert m6i["status"] == "pending" and len(m6i["repetitions"]) == 2
    api.sfn.stop_execution(executionArn=api.service.execution_arn("run-1"), error="States.Timeout",
                           cause="too slow")
    body = api("GET", "/runs/run-1")[1]
    assert body["status"] == "ABORTED"
    assert api("GET", "/runs/nope-404")[0] == 404


def test_delete_stops_and_tears_down_idempotently(api):
    api("POST", "/runs", SPEC, {"Idempotency-Key": "run-1"})
    ec2 = boto3.client("ec2")
    later = datetime.now(UTC) + timedelta(hours=3)
    mine = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": owned("run-1", "m6i", later)}])["Instances"][0]["InstanceId"]
    abroad = boto3.client("ec2", region_name="eu-north-1").run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, TagSpecifications=[
            {"ResourceType": "instance", "Tags": owned("run-1", "m5", later)}])["Instances"][0]["InstanceId"]
    other = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": owned("run-2", "m6i", later)}])["Instances"][0]["InstanceId"]
    status, body, _ = api("DELETE", "/runs/run-1")
    assert status == 202 and body["cancelled"] is True and body["status"] == "ABORTED"
    assert {r["id"] for r in body["teardown"]["removed"]} == {mine, abroad}
    state = {i["InstanceId"]: i["State"]["Name"]
             for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]}
    assert state[other] == "running" and state[mine] in ("shutting-down", "terminated")
    status, body, _ = api("DELETE", "/runs/run-1")
    assert status == 200 and body["cancelled"] is False and body["status"] == "ABORTED"
    assert body["teardown"]["removed"] == [] and body["teardown"]["failed"] == []
    assert api("DELETE", "/runs/never-was")[0] == 404


def test_results_json_and_csv(api):
    api("POST", "/runs", SPEC, {"Idempotency-Key": "run-1"})
    status, body, _ = api("GET", "/runs/run-1/results")
    assert status == 409 and body["field"] == "id"
    summary = {"run": {"run_id": "run-1"}, "rows": [
        {"target_id": "m6i", "threads": 1, "tps": {"mean": 100.0, "ci_low": 90.0, "ci_high": 110.0,
                                                    "values": [95.0, 105.0]}},
        {"target_id": "m5", "threads": 1, "tps": {"mean": 120.0, "ci_low": 110.0, "ci_high": 130.0,
                                                    "values": [115.0, 125.0]}}]}
    api.s3.put_object(Bucket=BUCKET, Key="runs/run-1/summary.json", Body=json.dumps(summary).encode())
    status, body, _ = api("GET", "/runs/run-1/results")
    assert status == 200 and body["rows"][0]["tps"]["mean"] == 100.0
    for kwargs in ({"query": {"format": "csv"}}, {"headers": {"Accept": "text/csv"}}):
        status, text, headers = api("GET", "/runs/run-1/results", **kwargs)
        assert status == 200 and headers["Content-Type"] == "text/csv"
        lines = text.splitlines()
        assert lines[0] == "target_id,threads,tps_mean,tps_ci_low,tps_ci_high"
        assert lines[1] == "m6i,1,100.0,90.0,110.0"
    assert api("GET", "/runs/run-1/results", query={"format": "xml"})[1]["field"] == "format"
    assert api("GET", "/runs/nope-404/results")[0] == 404


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/runs/..%2F..%2Fetc", 400), ("GET", "/runs/RUN_1", 400), ("GET", "/runs/a;ls", 400),
    ("GET", "/runs/" + "a" * 81, 400), ("GET", "/nope", 404), ("PUT", "/runs", 405),
    ("PATCH", "/runs/run-1", 405), ("POST", "/runs/run-1/results", 405), ("GET", "/runs/a/b/c", 404),
])
def test_paths(api, method, path, status):
    got, body, headers = api(method, path)
    assert got == status, body
    assert body["message"]
    if status == 405:
        assert headers["Allow"]


def test_not_an_api_event():
    from handlers import api

    for bad in (None, {}, {"httpMethod": 1, "path": "/runs"}, []):
        assert api.handler(bad, None)["statusCode"] == 400


def test_openapi_document_is_up_to_date():
    from handlers import api

    committed = Path(api.__file__).with_name("openapi.json").read_text()
    assert committed == api.openapi_json(), "regenerate: cd lambdas && python -m handlers.api > handlers/openapi.json"
    doc = json.loads(committed)
    assert set(doc["paths"]) == {"/runs", "/runs/{run_id}", "/runs/{run_id}/results"}
    assert doc["paths"]["/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ComparisonSpec"}


# ---- faults and bad input (issue 13): each got a 5xx, a cut message or "body" before -------------

def _raw_spec(replace: str, value: str) -> str:
    """SPEC as JSON text with the JSON value of one placeholder written out by hand (no encoder
    would write these: 5,000-digit integers, NaN, 1e309)."""
    spec = json.loads(json.dumps(SPEC))
    if replace == "option":
        spec["workload"] = {**WORKLOAD, "options": {"rand-seed": "PLACEHOLDER"}}
    else:
        spec["repetitions"] = "PLACEHOLDER"
    return json.dumps(spec).replace('"PLACEHOLDER"', value)


@pytest.mark.parametrize(("where", "value", "field"), [
    ("option", "NaN", "workload.options.rand-seed"),
    ("option", "Infinity", "workload.options.rand-seed"),
    ("option", "-Infinity", "workload.options.rand-seed"),
    ("option", "1e309", "workload.options.rand-seed"),
    ("option", "9" * 5000, "workload.options.rand-seed"),
    ("option", "9" * 30, "workload.options.rand-seed"),
    ("top", "7" * 4301, "repetitions"),
])
def test_numbers_no_json_reader_can_hold_are_400_naming_the_field(api, where, value, field):
    status, body, _ = api("POST", "/runs", raw=_raw_spec(where, value))
    assert status == 400, body
    assert body["field"] == field, body
    assert api.starts == 0


@pytest.mark.parametrize("depth", [100, 1000, 1100, 20_000])
def test_deeply_nested_bodies_are_400(api, depth):
    for raw in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth,
                json.dumps({**SPEC, "description": "PLACEHOLDER"}).replace('"PLACEHOLDER"', "[" * depth + "]" * depth)):
        status, body, _ = api("POST", "/runs", raw=raw)
        assert status == 400, body
        assert body["field"] and body["message"].startswith(body["field"] + ": "), body
        assert "deep" in body["message"], body
    assert api.starts == 0


def test_execution_input_is_strict_json(api):
    spec = {**SPEC, "workload": {**WORKLOAD, "options": {"rand-seed": 7, "rand-pareto-h": 0.5}}}
    assert api("POST", "/runs", spec, {"Idempotency-Key": "strict-1"})[0] == 202
    described = api.sfn.describe_execution(executionArn=api.service.execution_arn("strict-1"))
    # a strict reader: NaN, Infinity and -Infinity are not JSON
    json.loads(described["input"], parse_constant=lambda c: pytest.fail(f"{c} in the execution input"))


@pytest.mark.parametrize(("path", "value"), [
    (("targets", 1, "region"), "us-east-\u0661"),       # ARABIC-INDIC DIGIT ONE
    (("targets", 1, "region"), "eu-north-\uff11"),      # FULLWIDTH DIGIT ONE
    (("targets", 0, "engine"), "mysql-\uff18.0"),       # FULLWIDTH DIGIT EIGHT
    (("targets", 0, "engine"), "mysql-8.\u0660"),
])
def test_patterns_take_ascii_digits_only(api, path, value):
    spec = json.loads(json.dumps(SPEC))
    spec["targets"][path[1]][path[2]] = value
    status, body, _ = api("POST", "/runs", spec)
    assert status == 400, body
    assert body["field"] == f"targets[{path[1]}].{path[2]}", body
    assert api.starts == 0


def test_delete_of_a_run_started_with_a_unicode_digit_region_is_not_502(api):
    # A run started before patterns were ASCII-only: its stored spec names a region no AWS SDK
    # accepts. Cancelling it must stop it and tear down what can exist, not fail on every retry.
    spec = {**json.loads(json.dumps(SPEC)), "budget_usd": None}
    spec["targets"][1]["region"] = "us-east-\u0661"
    api.sfn.start_execution(stateMachineArn=api.arn, name="legacy-1",
                            input=json.dumps({"spec": spec, "run_id": "legacy-1"}))
    status, body, _ = api("DELETE", "/runs/legacy-1")
    assert status == 202, body
    assert body["status"] == "ABORTED" and body["teardown"]["failed"] == []
    assert api("DELETE", "/runs/legacy-1")[0] == 200


@pytest.mark.parametrize("ctype", ["APPLICATION/JSON", "Application/Json; charset=UTF-8",
                                   "application/json;charset=utf-8", " application/json "])
def test_content_type_is_case_insensitive(api, ctype):
    status, body, _ = api("POST", "/runs", SPEC, {"Content-Type": ctype})
    assert status == 202, body


@pytest.mark.parametrize(("spec", "field", "words"), [
    ({**SPEC, "targets": [*SPEC["targets"], {**SPEC["targets"][0]}]}, "targets[2].id", "used twice"),
    ({**SPEC, "baseline": "nope"}, "baseline", "not one of the target ids"),
    # the Plan state's refusals, made before starting: a spec field and the whole reason
    ({**SPEC, "budget_usd": None, "workload": {**WORKLOAD, "duration_s": 48 * 3600, "threads": [1, 2, 3]}},
     "workload.duration_s", "executions time out after"),
    ({**SPEC, "budget_usd": None, "repetitions": 20,
      "workload": {**WORKLOAD, "duration_s": 30, "threads": list(range(1, 65))}},
     "targets[0]", "use fewer steps or repetitions"),
    # issue 28 item 1: what a parameter group cannot hold, named where the spec says it
    ({**SPEC, "targets": [{"id": "db", "kind": "rds", "instance_class": "db.m6g.large", "mysql_config": "relaxed",
                           "server_options": {"innodb_flush_method": "O_DIRECT", "skip_name_resolve": "ON"},
                           "client": {"instance_type": "c6i.large"}}]},
     "targets[0].mysql_config", "log_bin (in workloads/mysql/relaxed.cnf): RDS does not let a parameter group"),
    # issue 41 item 3: what a cluster sets on its nodes itself wins over the target's setting (it ran with
    # wsrep_on ON and binlog_format ROW), so the target may not ask for another value
    ({**SPEC, "targets": [{"id": "pxc", "kind": "cluster", "flavor": "pxc-8.0", "nodes": 3,
                           "instance_type": "r6i.large", "proxy": "proxysql",
                           "server_options": {"wsrep_on": "OFF", "binlog_format": "STATEMENT"}}]},
     "targets[0].server_options.wsrep_on", "a cluster's nodes run wsrep_on = ON, not OFF"),
    # issue 41 item 6: a variant naming a cnf that does not exist was 500 "internal error"
    ({**SPEC, "variants": [{"id": "a"}, {"id": "b", "mysql_config": "nonexistent"}]},
     "variants[1].mysql_config", "nonexistent"),
    # issue 41 item 5: two existing targets on one agent host ran at once there (the agent's lock refused
    # one); an EC2 patch version ran Ubuntu's 8.0 and was recorded as the version given
    ({**SPEC, "targets": [{"id": f"db{i}", "kind": "existing", "host": f"db{i}.internal",
                           "instance_id": "i-0123456789abcdef0",
                           "password_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:db"}
                          for i in (1, 2)]},
     "targets[1].instance_id", "i-0123456789abcdef0 also runs targets[0]'s agent"),
    ({**SPEC, "targets": [{**SPEC["targets"][0], "engine": "mysql-8.0.999"}]},
     "targets[0].engine", "EC2 targets install Ubuntu's mysql 8.0 package, whose patch level Ubuntu decides"),
])
def test_cross_field_and_plan_refusals_name_the_spec_field(api, spec, field, words):
    status, body, _ = api("POST", "/runs", spec)
    assert status == 400, body
    assert body["field"] == field, body
    assert words in body["message"], body
    assert api.starts == 0


def test_an_rds_version_rds_does_not_offer_is_400_naming_the_engine(api):
    """Issue 41 item 5: engine mysql-8.0.999 on RDS was accepted (202) and failed at provision. The API
    plans as Plan does, looking the version up (DescribeDBEngineVersions; moto has none: a listing here)."""
    from benchfleet.aws import clients

    listing = {"DBEngineVersions": [{"Engine": "mysql", "EngineVersion": v, "DBParameterGroupFamily": "mysql8.0"}
                                    for v in ("8.0.36", "8.0.40")]}
    rds = type("Rds", (), {"describe_db_engine_versions": lambda self, **kw: listing})()
    clients.override("rds", lambda: rds)
    try:
        target = {"id": "db", "kind": "rds", "instance_class": "db.m6g.large", "client": {"instance_type": "c6i.large"}}
        status, body, _ = api("POST", "/runs", {**SPEC, "targets": [{**target, "engine": "mysql-8.0.999"}]})
        assert status == 400 and body["field"] == "targets[0].engine", body
        assert "no mysql engine version matches mysql-8.0.999 in us-east-1" in body["message"], body
        status, body, _ = api("POST", "/runs", {**SPEC, "targets": [{**target, "engine": "mysql-8.0.40"}]})
        assert status == 202, body
    finally:
        clients.override("rds", None)
    assert api.starts == 1
