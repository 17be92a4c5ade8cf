"""The API as deployed (issue 28 item 7): the real handler, built from the environment the synthesized
template gives the API function (its data read from the function's own asset), against moto.

- 202 only for a run that can run: the API refuses what the Plan state would (a cnf the target's
  server_options cannot render, a Lua helper module as the test), naming the field;
- a retried Idempotency-Key is 200 ``created: false`` (Step Functions answers a StartExecution of the
  same name and input with success, as if it had started it);
- list, get and POST show the same estimate (POST's: the deployed results store priced);
- GET /runs and DELETE survive an execution whose input is not a run request (its row is marked);
- CSV results of a finished run are its rows, from the summary.json Summarize writes;
- run ids ``callbacks`` and ``map-results`` (prefixes under runs/ in the bucket) are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from synth import Template
from tests.functional.test_api import event

from benchfleet.aws import clients
from benchfleet.aws.planning import runplan
from benchfleet.aws.store.summary import summarize
from benchfleet.cli.remote import inline_spec

WORKLOAD = {"name": "ro", "test": "oltp_read_only", "threads": [1, 4], "duration_s": 30, "warmup_s": 0}
SPEC = {"name": "deployed-api", "workload": WORKLOAD, "repetitions": 2, "budget_usd": 50,
        "targets": [{"id": "m6i", "kind": "ec2", "instance_type": "m6i.large"}]}
# What `run --remote` sends for the shipped cluster comparison (read here: the deployed fixture points the
# workload library at the API function's asset, which ships only workloads/lua).
PXC_ON_AWS = inline_spec(Path(__file__).resolve().parents[2] / "workloads" / "comparisons" / "pxc-on-aws.yaml")


def api_environment(template: Template) -> dict[str, str]:
    """The API function's environment variables, its /var/task (the function's code) being the
    synthesized asset it runs from."""
    (function,) = [r for r in template.of_type("AWS::Lambda::Function").values()
                   if r["Properties"].get("Handler") == "handlers.api.handler"]
    asset = template.out_dir / f"asset.{function['Properties']['Code']['S3Key'].removesuffix('.zip')}"
    assert (asset / "workloads" / "lua").is_dir()
    env = template.resolve(function["Properties"]["Environment"]["Variables"])
    return {k: str(v).replace("/var/task", str(asset)) for k, v in env.items()}


@pytest.fixture
def deployed(synthesized: Template, monkeypatch: pytest.MonkeyPatch) -> Any:
    env = api_environment(synthesized)
    for key, value in {**env, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    from handlers import api

    with mock_aws():
        clients.reset()
        sfn, s3 = boto3.client("stepfunctions"), boto3.client("s3")
        role = boto3.client("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        name = env["STATE_MACHINE_ARN"].rsplit(":", 1)[1]
        definition = json.dumps({"StartAt": "Plan", "States": {"Plan": {"Type": "Pass", "End": True}}})
        assert sfn.create_state_machine(name=name, definition=definition, roleArn=role)["stateMachineArn"] \
            == env["STATE_MACHINE_ARN"]
        s3.create_bucket(Bucket=env["RESULTS_BUCKET"])
        api.configure(None)  # the handler builds its service from the environment, as in Lambda

        def call(*args: Any, **kwargs: Any) -> tuple[int, Any]:
            response = api.handler(event(*args, **kwargs), None)
            body = response["body"]
            return response["statusCode"], json.loads(body) if body and body[0] in "[{" else body

        yield call, sfn, s3, env
        api.configure(None)
        clients.reset()


def test_the_deployed_api_answers_202_only_for_runs_that_can_run(deployed: Any) -> None:
    call, sfn, s3, env = deployed
    refusals = {  # each started a run before, which failed at Plan a moment later (or at prepare)
        "targets[0].server_options": {**SPEC, "targets": [{**SPEC["targets"][0],
                                                           "server_options": {"max_connections": "50%"}}]},
        "workload.test": {**SPEC, "workload": {**WORKLOAD, "test": "lua/benchfleet_common.lua"}},
    }
    for field, spec in refusals.items():
        status, body = call("POST", "/runs", spec)
        assert (status, body["field"]) == (400, field), body
    assert sfn.list_executions(stateMachineArn=env["STATE_MACHINE_ARN"])["executions"] == []

    # A retried key: the same run, 200 and created false; another spec under that key: 409.
    status, posted = call("POST", "/runs", SPEC, {"Idempotency-Key": "nightly-1"})
    assert status == 202 and posted["created"] is True
    status, again = call("POST", "/runs", SPEC, {"Idempotency-Key": "nightly-1"})
    assert status == 200 and again["created"] is False and again["run_id"] == "nightly-1"
    assert again["estimated_cost_usd"] == posted["estimated_cost_usd"]
    assert call("POST", "/runs", {**SPEC, "repetitions": 3}, {"Idempotency-Key": "nightly-1"})[0] == 409
    for reserved in ("callbacks", "map-results"):
        status, body = call("POST", "/runs", SPEC, {"Idempotency-Key": reserved})
        assert status == 400 and body["field"] == "Idempotency-Key" and "reserved" in body["message"]
        status, body = call("GET", f"/runs/{reserved}")
        assert status == 400 and "reserved" in body["message"]

    # Executions whose input is not a run request: the list shows them marked, DELETE answers.
    for name, text in (("by-hand", '{"spec": {"targets": 5, "name": ["x"]}, "run_id": {"a": 1}}'),
                       ("a-list", "[1, 2]")):
        sfn.start_execution(stateMachineArn=env["STATE_MACHINE_ARN"], name=name, input=text)
    status, listed = call("GET", "/runs")
    assert status == 200, listed
    rows = {r["execution_name"]: r for r in listed["runs"]}
    assert rows["by-hand"]["unreadable"] and rows["a-list"]["unreadable"]
    # One estimate: list, get and POST say the same.
    assert rows["nightly-1"]["estimated_cost_usd"] == posted["estimated_cost_usd"]
    assert call("GET", "/runs/nightly-1")[1]["estimated_cost_usd"] == posted["estimated_cost_usd"]
    for name in ("by-hand", "a-list"):
        status, body = call("DELETE", f"/runs/{name}")
        assert status in (200, 202), body

    # A finished run's CSV: its rows, from the summary.json Summarize writes.
    plan = runplan.plan_run(runplan.RunRequest(spec=json.loads(sfn.describe_execution(
        executionArn=env["STATE_MACHINE_ARN"].replace(":stateMachine:", ":execution:") + ":nightly-1")["input"])[
        "spec"]), execution_name="nightly-1")
    state = runplan.state_of(plan, s3, env["RESULTS_BUCKET"])
    for rep in (1, 2):
        steps = [{"step": s["name"], "variant": "", "block": None, "samples": s["duration_s"], "summaries": 1,
                  "cloud_metrics": 0, "fingerprints": 0, "targets": 0, "notices": [], "tps": 900.0 + rep}
                 for s in plan["targets"][0]["steps"] if s["kind"] != "prepare"]
        s3.put_object(Bucket=env["RESULTS_BUCKET"], Key=f"runs/nightly-1/m6i/rep-{rep}/outcome.json", Body=json.dumps(
            {"target_id": "m6i", "repetition": rep, "steps": steps, "error": None,
             "teardown": {"left": []}, "teardown_error": None}).encode())
    summarize(s3, env["RESULTS_BUCKET"], run_id="nightly-1", plan=state, error=None)
    status, text = call("GET", "/runs/nightly-1/results", query={"format": "csv"})
    assert status == 200
    lines = str(text).splitlines()
    # As collect returns each step (test_collect_validation): its variant and block beside it.
    assert lines[0].startswith("target_id,repetition,repetition_status,step,variant,block,samples")
    assert len(lines) == 1 + 2 * 2 and "901.0" in text and "902.0" in text  # two steps, two repetitions
    # A summary.json that is not what Summarize writes: no rows, or 502 naming the run; never a 500.
    for body, expected in ((b'{"targets": 5, "rows": "x"}', 200), (b"[" * 50_000 + b"]" * 50_000, 502)):
        s3.put_object(Bucket=env["RESULTS_BUCKET"], Key="runs/nightly-1/summary.json", Body=body)
        assert call("GET", "/runs/nightly-1/results", query={"format": "csv"})[0] == expected


def test_the_api_prices_the_store_the_template_deploys(synthesized: Template) -> None:
    env = api_environment(synthesized)
    assert env["RESULTS_STORE"]  # the estimate's store writes: the deployment's, as Plan prices them
    assert Path(env["BENCHFLEET_WORKLOADS"], "lua", "iibench.lua").is_file()


def test_the_deployed_api_refuses_gp3_throughput_its_iops_cannot_carry(deployed: Any) -> None:
    """Issue 41 item 9: gp3 allows 0.25 MiB/s per provisioned IOPS (EC2 User Guide); 1000 MiB/s on the
    included 3,000 IOPS was 202, and RunInstances would refuse it minutes later."""
    call, sfn, _, env = deployed
    target = {**SPEC["targets"][0], "storage": {"type": "gp3", "size_gb": 100, "throughput_mbps": 1000}}
    status, body = call("POST", "/runs", {**SPEC, "targets": [target]})
    assert (status, body["field"]) == (400, "targets[0].storage.throughput_mbps"), body
    assert "at least 4000" in body["message"], body
    assert sfn.list_executions(stateMachineArn=env["STATE_MACHINE_ARN"])["executions"] == []
    target["storage"]["iops"] = 4000
    assert call("POST", "/runs", {**SPEC, "targets": [target]})[0] == 202


def test_the_deployed_api_says_why_an_agnostic_stack_cannot_place_a_3_node_cluster(deployed: Any) -> None:
    """Issue 41 item 10: synthesized without its account (as `cdk synth` offline, or a deploy that did not
    pass the CLI's account on), the stack's VPC has 2 zones whatever maxAzs says (3 in cdk.json); the shipped
    pxc-on-aws was refused telling the user to raise maxAzs, already 3. The refusal names the cause."""
    call, sfn, _, env = deployed
    assert len(env["SUBNET_ZONES"].split(",")) == 2, env["SUBNET_ZONES"]
    status, refused = call("POST", "/runs", PXC_ON_AWS)
    assert (status, refused["field"]) == (400, "targets[0].nodes"), refused
    assert "account and region" in refused["message"] and "npx cdk deploy" in refused["message"], refused
    assert sfn.list_executions(stateMachineArn=env["STATE_MACHINE_ARN"])["executions"] == []
