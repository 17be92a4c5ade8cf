"""Run and target metadata (issue 4) against moto: collect turns the prepare step's fingerprint into
the repetition's ``targets`` row, summarize writes the run's row; both reach the Athena store's
tables (which its dashboards join on) and S3 (spec.json, targets.json) for every store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from tests.glue_tables import create_glue_tables

from benchfleet.aws.steps.collect import collect_step
from benchfleet.aws.store.athena_store import AthenaStore
from benchfleet.aws.store.results_store import TimestreamStore
from benchfleet.aws.store.summary import summarize
from benchfleet.plan import naming

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests/fixtures/agent/prepare.jsonl"
BUCKET, DATABASE, WORKGROUP = "bf-meta", "bf_meta", "bf-meta"
RUN = "meta-20261122t000000-abcd"
TARGET = {"id": "m6g-large", "kind": "ec2", "instance_type": "m6g.large", "engine": "mysql-8.0",
          "mysql_config": "cpu-bound", "region": "us-east-1", "price_per_hour": 0.077,
          "storage": {"type": "gp3", "size_gb": 200}}
SPEC = {"name": "meta", "workload": {"name": "w"}, "targets": [TARGET], "margin_pct": 2.0}
# Where the step's Run Command output would be (these steps' raw keys are already written).
OUTPUT = naming.host_output_prefix("arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0", RUN,
                                   TARGET["id"], 1, "prepare")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    for k, v in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        s3, glue = boto3.client("s3"), boto3.client("glue")
        s3.create_bucket(Bucket=BUCKET)
        create_glue_tables(glue, DATABASE, BUCKET)
        yield s3


def raw_prepare(s3: Any) -> None:
    lines = []
    for line in FIXTURE.read_text().splitlines():
        record = json.loads(line)
        record.update(run_id=RUN, target_id=TARGET["id"], repetition=1, step="prepare")
        lines.append(json.dumps(record))
    s3.put_object(Bucket=BUCKET, Key=naming.raw_key(RUN, TARGET["id"], 1, "prepare"), Body="\n".join(lines).encode())


def collect_prepare(s3: Any, store: Any) -> dict[str, Any]:
    raw_prepare(s3)
    return collect_step(s3, boto3.client("cloudwatch"), store, BUCKET, run_id=RUN, target=TARGET, kind="ec2",
                        repetition=1, step={"name": "prepare", "kind": "prepare"},
                        # what provision returns: where it created the host
                        resources={"instance_id": "i-0123456789abcdef0", "instance_type": "m6g.large",
                                   "region": "us-east-1", "zone": "us-east-1a"},
                        started_at="2026-11-22T00:00:00Z", output_prefix=OUTPUT)


def finish(s3: Any, store: Any) -> dict[str, Any]:
    outcome = {"target_id": TARGET["id"], "repetition": 1, "steps": [], "error": {}, "teardown": {"left": []},
               "teardown_error": {}}
    # What Plan and the state machine's "Record the outcome" leave in S3 (summarize reads them there).
    s3.put_object(Bucket=BUCKET, Key=naming.plan_targets_key(RUN),
                  Body=json.dumps([{"target_id": TARGET["id"], "repetitions": [1]}]).encode())
    s3.put_object(Bucket=BUCKET, Key=naming.outcome_key(RUN, TARGET["id"], 1), Body=json.dumps(outcome).encode())
    plan = {"run_id": RUN, "name": "nightly", "started_at": "2026-11-22T00:00:00Z", "estimated_cost_usd": 1.25,
            "targets_key": naming.plan_targets_key(RUN)}
    return summarize(s3, BUCKET, run_id=RUN, plan=plan, error=None, store=store, spec=SPEC)


def body(s3: Any, key: str) -> Any:
    text = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    return json.loads(text) if key.endswith(".json") and not key.startswith("tables/") else \
        [json.loads(line) for line in text.splitlines()]


def test_athena_store_gets_the_targets_and_runs_rows(aws):
    s3 = aws
    store = AthenaStore(BUCKET, DATABASE, WORKGROUP, s3=s3, glue=boto3.client("glue"), athena=boto3.client("athena"))
    collected = collect_prepare(s3, store)
    assert collected["targets"] == 1 and collected["fingerprints"] == 1
    (row,) = body(s3, f"tables/targets/run_id={RUN}/{TARGET['id']}.rep-1.json")
    assert row["kind"] == "ec2" and row["instance_type"] == "m6g.large" and row["price_per_hour"] == 0.077
    assert row["engine"] == "mysql-8.0" and row["mysql_config"] == "cpu-bound" and row["region"] == "us-east-1"
    assert row["cpu_model"] and row["vcpus"] and row["sysbench_version"] and row["recorded_at"]
    assert json.loads(row["storage"]) == {"type": "gp3", "size_gb": 200}
    assert body(s3, f"runs/{RUN}/{TARGET['id']}/rep-1/target.json")["cpu_model"] == row["cpu_model"]

    result = finish(s3, store)
    assert result["status"] == "SUCCEEDED"
    (run,) = body(s3, f"tables/runs/run_id={RUN}/run.json")
    assert run["name"] == "nightly" and run["status"] == "succeeded" and run["mode"] == "aws"
    assert json.loads(run["spec"]) == SPEC and run["estimated_cost_usd"] == 1.25 and run["ended_at"]
    assert body(s3, f"runs/{RUN}/spec.json") == SPEC
    # The API's results (summary.json) say by which margin the run's verdicts are judged.
    assert body(s3, naming.summary_key(RUN))["margin_pct"] == 2.0
    assert [t["target_id"] for t in body(s3, f"runs/{RUN}/targets.json")] == [TARGET["id"]]
    partitions = boto3.client("glue").get_partitions(DatabaseName=DATABASE, TableName="runs")["Partitions"]
    assert [p["Values"] for p in partitions] == [[RUN]]


def test_timestream_keeps_run_and_target_metadata_in_s3_only(aws):
    s3 = aws
    ts = boto3.client("timestream-write")
    ts.create_database(DatabaseName="bf")
    for table in ("samples", "status_samples", "step_summaries", "cloud_metrics"):
        ts.create_table(DatabaseName="bf", TableName=table)
    store = TimestreamStore(ts, "bf")
    assert store.write_targets([{"run_id": RUN}]) == [] and store.write_run({"run_id": RUN}) is None
    collect_prepare(s3, store)
    finish(s3, store)
    assert [t["kind"] for t in body(s3, f"runs/{RUN}/targets.json")] == ["ec2"]
    assert body(s3, f"runs/{RUN}/spec.json") == SPEC
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert not any(k.startswith("tables/") for k in keys)


def test_a_store_that_refuses_the_run_row_fails_the_run_naming_it_and_still_writes_the_status(aws):
    s3 = aws

    class Broken(TimestreamStore):
        def write_run(self, run):
            raise RuntimeError("glue is down")

    result = finish(s3, Broken(None, "bf"))
    summary = json.loads(s3.get_object(Bucket=BUCKET, Key=naming.summary_key(RUN))["Body"].read())
    assert "glue is down" in summary["metadata"]["error"]
    assert result["status"] == summary["status"] == "FAILED"
    assert result["error"]["error"] == "StoreFailed" and "glue is down" in result["error"]["cause"]


def raw_prepare_on(s3: Any, target_id: str, **placement: str) -> None:
    """The prepare step's output as the agent writes it on a host that read ``placement`` from IMDS."""
    lines = []
    for line in FIXTURE.read_text().splitlines():
        record = json.loads(line)
        record.update(run_id=RUN, target_id=target_id, repetition=1, step="prepare")
        if record["type"] == "fingerprint":
            record.update(placement)
        lines.append(json.dumps(record))
    s3.put_object(Bucket=BUCKET, Key=naming.raw_key(RUN, target_id, 1, "prepare"), Body="\n".join(lines).encode())


def test_the_targets_row_says_where_the_host_really_ran_not_what_the_spec_said(aws):
    s3 = aws
    store = TimestreamStore(None, "bf")
    # The spec says us-east-1; the host's instance metadata says eu-north-1b. The measurement wins.
    raw_prepare_on(s3, TARGET["id"], region="eu-north-1", availability_zone="eu-north-1b")
    collect_step(s3, boto3.client("cloudwatch"), store, BUCKET, run_id=RUN, target=TARGET, kind="ec2",
                 repetition=1, step={"name": "prepare", "kind": "prepare"},
                 resources={"instance_id": "i-0123456789abcdef0", "region": "eu-north-1", "zone": "eu-north-1b"},
                 started_at="2026-11-22T00:00:00Z", output_prefix=OUTPUT)
    row = body(s3, f"runs/{RUN}/{TARGET['id']}/rep-1/target.json")
    assert (row["region"], row["availability_zone"]) == ("eu-north-1", "eu-north-1b")

    from benchfleet.stats import comparison
    result = comparison({"spec": SPEC}, [row], [], [])
    meta = next(t for t in result["targets"] if t["target_id"] == TARGET["id"])
    assert (meta["region"], meta["availability_zone"]) == ("eu-north-1", "eu-north-1b")


def test_without_instance_metadata_the_row_falls_back_to_where_provision_created_it(aws):
    s3 = aws
    raw_prepare_on(s3, TARGET["id"])  # a fingerprint with no placement (IMDS did not answer)
    collect_step(s3, boto3.client("cloudwatch"), TimestreamStore(None, "bf"), BUCKET, run_id=RUN, target=TARGET,
                 kind="ec2", repetition=1, step={"name": "prepare", "kind": "prepare"},
                 resources={"instance_id": "i-0123456789abcdef0", "region": "us-west-1", "zone": "us-west-1c"},
                 started_at="2026-11-22T00:00:00Z", output_prefix=OUTPUT)
    row = body(s3, f"runs/{RUN}/{TARGET['id']}/rep-1/target.json")
    assert (row["region"], row["availability_zone"]) == ("us-west-1", "us-west-1c")


def test_rds_targets_are_placed_by_describe_db_instances(aws):
    s3 = aws
    rds = boto3.client("rds", region_name="eu-north-1")
    db = rds.create_db_instance(DBInstanceIdentifier="meta-db", DBInstanceClass="db.m6g.large", Engine="mysql",
                                MasterUsername="benchfleet", MasterUserPassword="x" * 12, AllocatedStorage=20,
                                AvailabilityZone="eu-north-1c")["DBInstance"]
    target = {**TARGET, "id": "rds-t", "kind": "rds", "instance_class": "db.m6g.large", "region": "eu-north-1"}
    # The fingerprint is the client host's; where the database ran is RDS's answer.
    raw_prepare_on(s3, "rds-t", region="eu-north-1", availability_zone="eu-north-1a")
    collect_step(s3, boto3.client("cloudwatch"), TimestreamStore(None, "bf"), BUCKET, run_id=RUN, target=target,
                 kind="rds", repetition=1, step={"name": "prepare", "kind": "prepare"},
                 resources={"instance_id": "i-0123456789abcdef0", "db_instance_id": db["DBInstanceIdentifier"]},
                 started_at="2026-11-22T00:00:00Z", output_prefix=OUTPUT, rds=rds)
    row = body(s3, f"runs/{RUN}/rds-t/rep-1/target.json")
    assert (row["region"], row["availability_zone"]) == ("eu-north-1", "eu-north-1c")


def test_summarize_reads_the_planned_target_rows_without_listing_the_run_s_raw_output(aws):
    # At 200 targets the run's prefix holds tens of thousands of raw step outputs: listing them to find
    # the target rows was most of Summarize's time (tests/perf/cloud_scale.py).
    s3 = aws
    store = AthenaStore(BUCKET, DATABASE, WORKGROUP, s3=s3, glue=boto3.client("glue"), athena=boto3.client("athena"))
    collect_prepare(s3, store)
    for step in range(50):  # the run's other raw output
        s3.put_object(Bucket=BUCKET, Key=naming.raw_key(RUN, TARGET["id"], 1, f"t{step:04d}"), Body=b"{}")
    listed: list[str] = []
    s3.meta.events.register("provide-client-params.s3.ListObjectsV2",
                            lambda params, **_: listed.append(params["Prefix"]))
    assert finish(s3, store)["status"] == "SUCCEEDED"
    (row,) = body(s3, f"runs/{RUN}/targets.json")
    assert row == body(s3, f"runs/{RUN}/{TARGET['id']}/rep-1/target.json") and row["kind"] == "ec2"
    assert listed == []
