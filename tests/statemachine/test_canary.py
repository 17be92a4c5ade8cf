"""The canary (workloads/comparisons/canary.yaml, issue 30 item 5) on the offline executor: one small
Graviton host, one 60 s step, through every data path a deployment has: provision of an arm64 host,
the agent's step and its callback, the CloudWatch agent's steal (played by the harness), the default
record store (Athena: JSON Lines under tables/ and their Glue partitions), the raw output read back
the way `run --remote` reads it, and teardown checked by listing the run's tags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from sm_harness import leftovers
from sm_world import BUCKET, REGION
from tests.glue_tables import create_glue_tables

from benchfleet.cli.main import main
from benchfleet.cli.reading import run_results
from benchfleet.local.store import open_store

REPO = Path(__file__).resolve().parents[2]
CANARY = REPO / "workloads" / "comparisons" / "canary.yaml"
DATABASE, WORKGROUP = "bf_results", "Benchfleet-results"


@pytest.fixture
def athena(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default record store, as the CDK app's athena-store.ts makes it (tables from the same file)."""
    glue = boto3.client("glue", region_name=REGION)
    if DATABASE not in {d["Name"] for d in glue.get_databases()["DatabaseList"]}:
        create_glue_tables(glue, DATABASE, BUCKET)
        boto3.client("athena", region_name=REGION).create_work_group(Name=WORKGROUP)
    for key, value in {"RESULTS_STORE": "athena", "GLUE_DATABASE": DATABASE, "ATHENA_WORKGROUP": WORKGROUP}.items():
        monkeypatch.setenv(key, value)


def test_the_canary_crosses_every_data_path(harness: Any, athena: None, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`benchfleet run canary.yaml --remote` as a user runs it after deploying: the API's submit and
    status played by the offline execution, everything after it (read back, tags listed) real."""
    from benchfleet.cli import remote

    harness.agent.steal = True
    executed: dict[str, Any] = {}

    def submit(loaded: Any, api_url: str | None = None) -> str:
        executed["spec"] = remote.inline_spec(loaded)
        executed["result"] = harness.run(executed["spec"], name="canary-offline")
        return "canary-offline"

    def get_run(run_id: str, api_url: str | None = None) -> dict[str, Any]:
        return {"run_id": run_id, "name": "canary", "status": executed["result"]["status"], "spec": executed["spec"]}

    monkeypatch.setattr(remote, "submit", submit)
    monkeypatch.setattr(remote, "get_run", get_run)
    monkeypatch.setattr(remote, "wait", lambda run_id, api_url=None, on_update=None, **kw: get_run(run_id))
    monkeypatch.setenv("BENCHFLEET_BUCKET", BUCKET)
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    assert main(["run", str(CANARY), *api]) == 0
    result = executed["result"]
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    # One arm64 host (t4g: Graviton), from the arm64 Ubuntu AMI parameter.
    (provision,) = harness.calls_of("provision")
    assert provision.event["target"]["instance_type"] == "t4g.small"
    assert any("/arm64/" in name for name in harness.gaps.ami_requests)
    # The step's samples and the host's steal went to the record store: Athena's JSON Lines and partitions.
    (measured,) = [c.result for c in harness.calls_of("collect") if c.event["step"]["name"] == "t0001"]
    assert measured["samples"] == 60 and measured["cloud_metrics"] > 0
    objects = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET, Prefix="tables/")["Contents"]
    tables = {o["Key"].split("/")[1] for o in objects if "run_id=canary-offline" in o["Key"]}
    assert {"samples", "step_summaries", "cloud_metrics", "targets", "runs"} <= tables
    partitions = boto3.client("glue", region_name=REGION).get_partitions(DatabaseName=DATABASE, TableName="samples")
    assert ["canary-offline"] in [p["Values"] for p in partitions["Partitions"]]
    # run --remote read the raw output back from S3 into the local store and printed its results...
    out = capsys.readouterr().out
    assert "graviton" in out
    with open_store(bf_home) as store:
        (step,) = run_results(store, "canary-offline")["steps"]
    assert (step["target_id"], step["step"], step["samples"]) == ("graviton", "t0001", 60) and step["tps"] > 0
    # ...and listed the run's tags: the host is listed, terminated, so nothing is left.
    assert f"nothing of run canary-offline is left (its tags listed in {REGION})" in " ".join(out.split())
    tagged = boto3.client("resourcegroupstaggingapi", region_name=REGION).get_resources(
        TagFilters=[{"Key": "benchfleet:run-id", "Values": ["canary-offline"]}])["ResourceTagMappingList"]
    assert len(tagged) == 1
    assert leftovers("canary-offline") == []
