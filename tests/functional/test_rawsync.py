"""A cloud run's raw agent output in S3 rebuilds the local store (results/report --remote)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from tests.conftest import FIXTURES

from benchfleet import rawsync
from benchfleet.cli import main
from benchfleet.local.store import DuckDBStore
from benchfleet.naming import raw_key

RUN_ID = "cloudy-20261122t030000-ab12"


def relabel(text: str, target_id: str, step: str) -> str:
    lines = []
    for line in text.splitlines():
        record = json.loads(line)
        record.update(run_id=RUN_ID, target_id=target_id, repetition=1, step=step)
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


@pytest.fixture
def bucket():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="results")
        for target in ("m6i", "m6g"):
            for step in ("prepare", "t0001"):
                text = (FIXTURES / "agent" / f"{step}.jsonl").read_text()
                s3.put_object(Bucket="results", Key=raw_key(RUN_ID, target, 1, step),
                              Body=relabel(text, target, step).encode())
        s3.put_object(Bucket="results", Key=f"runs/{RUN_ID}/summary.json", Body=b"{}")
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        yield s3, cfn


def test_sync_loads_every_raw_file_once(bucket, tmp_path: Path) -> None:
    s3, _ = bucket
    store = DuckDBStore(tmp_path / "db.duckdb")
    run = {"run_id": RUN_ID, "name": "cloudy", "status": "SUCCEEDED", "spec": {"name": "cloudy"}}
    assert rawsync.sync_run(s3, "results", run, store, tmp_path) == 4
    assert rawsync.sync_run(s3, "results", run, store, tmp_path) == 4  # again: replaced, not doubled
    summaries = store.summaries(RUN_ID)
    assert sorted({(s["target_id"], s["step"]) for s in summaries}) == [("m6g", "t0001"), ("m6i", "t0001")]
    samples = store.samples(RUN_ID, "measure") + store.samples(RUN_ID, "ramp")  # a step's first report: its ramp
    assert len(samples) == 2 * summaries[0]["samples"] and summaries[0]["samples"] >= 200
    assert {t["target_id"] for t in store.targets(RUN_ID)} == {"m6i", "m6g"}
    assert store.run(RUN_ID)["status"] == "succeeded"
    assert (tmp_path / "raw" / RUN_ID / "m6i" / "rep-1" / "t0001.jsonl").exists()


def test_results_remote_goes_through_the_api_then_s3(bucket, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from benchfleet import remote

    monkeypatch.setenv("BENCHFLEET_BUCKET", "results")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(remote, "get_run", lambda run_id, api_url=None: {
        "run_id": run_id, "name": "cloudy", "status": "SUCCEEDED"})
    assert main(["results", RUN_ID, "--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["target_id"] for r in doc["comparison"]} == {"m6i", "m6g"}
    assert all(r["tps_mean"] > 0 for r in doc["comparison"])


def test_a_bad_run_id_is_refused(bucket, tmp_path: Path) -> None:
    s3, _ = bucket
    with pytest.raises(ValueError):
        rawsync.sync_run(s3, "results", {"run_id": "../../etc"}, DuckDBStore(tmp_path / "d.duckdb"), tmp_path)
