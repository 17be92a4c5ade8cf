"""A cloud run's raw agent output in S3 rebuilds the local store (results/report --remote)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from tests.conftest import FIXTURES

from benchfleet.cli.main import main
from benchfleet.local import rawsync
from benchfleet.local.store import DuckDBStore
from benchfleet.plan.naming import raw_key

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
    # The server's status every second (a cluster's: every node's), as collect stores it on AWS.
    status = [r for batch in store.status_batches(RUN_ID) for r in batch]
    assert {r["target_id"] for r in status} == {"m6i", "m6g"} and len({r["time"] for r in status}) >= 200
    assert store.run(RUN_ID)["status"] == "succeeded"
    assert (tmp_path / "raw" / RUN_ID / "m6i" / "rep-1" / "t0001.jsonl").exists()


def test_results_remote_goes_through_the_api_then_s3(bucket, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from benchfleet.cli import remote

    monkeypatch.setenv("BENCHFLEET_BUCKET", "results")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(remote, "get_run", lambda run_id, api_url=None: {
        "run_id": run_id, "name": "cloudy", "status": "SUCCEEDED"})
    assert main(["results", RUN_ID, "--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["target_id"] for r in doc["comparison"]} == {"m6i", "m6g"}
    assert all(r["tps_mean"] > 0 for r in doc["comparison"])


def test_results_remote_judge_verdicts_by_the_runs_own_margin_and_baseline(
        bucket, bf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The API's run carries no spec: the spec.json Summarize stored beside the raw output does. Before,
    the verdicts of a margin_pct 2 run said "within ±5%" (the default) and took the first target as
    the baseline; locally the same run said ±2% against its own baseline."""
    from benchfleet.cli import remote

    s3, _ = bucket
    spec = {"name": "cloudy", "margin_pct": 2.0, "baseline": "m6i",
            "targets": [{"id": "m6i", "kind": "ec2", "instance_type": "m6i.large"},
                        {"id": "m6g", "kind": "ec2", "instance_type": "m6g.large"}]}
    s3.put_object(Bucket="results", Key=f"runs/{RUN_ID}/spec.json", Body=json.dumps(spec).encode())
    monkeypatch.setenv("BENCHFLEET_BUCKET", "results")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(remote, "get_run", lambda run_id, api_url=None: {
        "run_id": run_id, "name": "cloudy", "status": "SUCCEEDED"})
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    assert main(["results", RUN_ID, *api, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    statistics = doc["statistics"]
    assert (statistics["margin_pct"], statistics["baseline"]) == (2.0, "m6i")
    (row,) = [r for r in statistics["rows"] if r["target_id"] == "m6g"]
    assert row["relative"]["margin_pct"] == 2.0
    assert main(["results", RUN_ID, *api]) == 0  # the table says so too
    out = " ".join(capsys.readouterr().out.split())
    assert "margin ±2%" in out and "±5%" not in out


def test_a_raw_file_gone_while_loading_leaves_the_earlier_copy_and_is_skipped(bucket, tmp_path: Path) -> None:
    """A raw file listed, then removed before it is read (a lifecycle rule): the load fails naming it and
    the store keeps the copy it had, whole (before: the run was deleted first, then loaded file by file);
    a history skips the run saying so."""
    s3, _ = bucket
    store = DuckDBStore(tmp_path / "db.duckdb")
    run = {"run_id": RUN_ID, "name": "cloudy", "status": "RUNNING"}
    assert rawsync.sync_run(s3, "results", run, store, tmp_path) == 4
    samples = len(store.samples(RUN_ID))
    gone = raw_key(RUN_ID, "m6i", 1, "t0001")

    def remove_after_listing(**_: object) -> None:
        s3.meta.events.unregister("after-call.s3.ListObjectsV2", remove_after_listing)
        s3.delete_object(Bucket="results", Key=gone)

    s3.meta.events.register("after-call.s3.ListObjectsV2", remove_after_listing)
    with pytest.raises(rawsync.RawOutputMissing, match=f"s3://results/{gone} is gone"):
        rawsync.sync_run(s3, "results", {**run, "status": "SUCCEEDED"}, store, tmp_path)
    assert len(store.samples(RUN_ID)) == samples and store.cloud_copy(RUN_ID)["cloud_status"] == "RUNNING"

    s3.put_object(Bucket="results", Key=gone, Body=b"")
    s3.meta.events.register("after-call.s3.ListObjectsV2", remove_after_listing)
    loaded = rawsync.load_history(s3, "results", [{**run, "status": "SUCCEEDED"}], store, tmp_path, 30)
    assert loaded.started == {} and loaded.skipped == [
        (RUN_ID, f"its raw output s3://results/{gone} is gone (removed while it was being read)")]


def test_a_bad_run_id_is_refused(bucket, tmp_path: Path) -> None:
    s3, _ = bucket
    with pytest.raises(ValueError):
        rawsync.sync_run(s3, "results", {"run_id": "../../etc"}, DuckDBStore(tmp_path / "d.duckdb"), tmp_path)


CANARY = Path(__file__).resolve().parents[2] / "workloads" / "comparisons" / "canary.yaml"


def test_run_remote_reads_back_and_lists_what_the_run_left(bucket, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """After the run ends, `run --remote` reads the results back and lists the run's tags: one host still
    running is named and the exit is 1 although the run SUCCEEDED; a run whose results cannot be read
    back still has its tags listed (and exits 1), never a traceback that skips the check."""
    from benchfleet.cli import remote

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("BENCHFLEET_BUCKET", "results")
    run = {"run_id": RUN_ID, "name": "cloudy", "status": "SUCCEEDED"}
    monkeypatch.setattr(remote, "submit", lambda loaded, api_url=None: RUN_ID)
    monkeypatch.setattr(remote, "get_run", lambda run_id, api_url=None: run)
    monkeypatch.setattr(remote, "wait", lambda run_id, api_url=None, on_update=None, **kw: run)
    ec2 = boto3.client("ec2", region_name="us-east-1")
    left = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": [{"Key": "benchfleet:run-id", "Value": RUN_ID}]}])["Instances"][0]
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    assert main(["run", str(CANARY), *api]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "m6i" in out and "m6g" in out  # the results, read back
    assert f"left behind: arn:aws:ec2:us-east-1:123456789012:instance/{left['InstanceId']} (running)" in out
    assert f"run {RUN_ID} left 1 resource(s) in us-east-1" in out

    ec2.terminate_instances(InstanceIds=[left["InstanceId"]])
    assert main(["run", str(CANARY), *api]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"nothing of run {RUN_ID} is left (its tags listed in us-east-1)" in out

    monkeypatch.setenv("BENCHFLEET_BUCKET", "no-such-bucket")
    assert main(["run", str(CANARY), *api]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"run {RUN_ID}'s results could not be read back" in out and "NoSuchBucket" in out
    assert f"nothing of run {RUN_ID} is left" in out
