"""Functional: the Athena results store against moto's S3, Glue and Athena.

The Glue tables are created from cdk/lib/sql/glue-tables.json, the same file the CDK app reads, so
these tests also pin the deployed table schema to the rows the writer produces.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws.store.athena_store import (
    TABLE_COLUMNS,
    AthenaStore,
    AthenaStoreError,
    athena_timestamp,
)
from benchfleet.workload.records import Sample, StepSummary

REPO = Path(__file__).resolve().parents[2]
GLUE_TABLES: dict[str, list[list[str]]] = json.loads(
    (REPO / "cdk/lib/sql/glue-tables.json").read_text())["tables"]
BUCKET = "benchfleet-results-test"
DATABASE = "benchfleet_test"
WORKGROUP = "benchfleet-test"
RUN = "graviton-vs-intel-20261102t101500-ab12"
T0 = datetime(2026, 11, 2, 10, 15, tzinfo=UTC)

# Python type of a record field -> the Glue types that hold it without loss.
# A dict (a variant step's settings) is written as its JSON text.
GLUE_TYPES = {int: {"int", "bigint"}, float: {"double"}, str: {"string"}, datetime: {"timestamp"}, bool: {"boolean"},
              dict: {"string"}}


def sample(target: str = "m6i-large", rep: int = 1, step: str = "measure-t8", second: int = 1,
           **over: Any) -> Sample:
    values: dict[str, Any] = dict(
        run_id=RUN, target_id=target, repetition=rep, workload="oltp-read-only-sweep", step=step,
        phase="measure", threads=8, time=T0 + timedelta(seconds=second), second=float(second),
        tps=1200.5 + second, qps=19208.0, reads_per_s=16807.0, writes_per_s=0.0, other_per_s=2401.0,
        latency_ms=9.06, latency_pct=95, errors_per_s=0.0, reconnects_per_s=0.0, cpu_steal_pct=0.4,
        cpu_user_pct=71.2, cpu_system_pct=18.3, cpu_iowait_pct=None)
    values.update(over)
    return Sample(**values)


def summary(target: str = "m6i-large", rep: int = 1, step: str = "measure-t8") -> StepSummary:
    return StepSummary(
        run_id=RUN, target_id=target, repetition=rep, workload="oltp-read-only-sweep", step=step,
        phase="measure", threads=8, time=T0 + timedelta(seconds=60), total_time_s=60.0, transactions=72030,
        tps=1200.5, queries=1152480, qps=19208.0, reads=1008420, writes=0, other=144060, ignored_errors=0,
        errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0, events=72030, latency_min_ms=2.1,
        latency_avg_ms=6.66, latency_max_ms=48.3, latency_pct=95, latency_pct_ms=9.06,
        sysbench_version="1.0.20", samples=60, tps_cv=0.031, steal_mean_pct=0.4)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        s3 = boto3.client("s3")
        glue = boto3.client("glue")
        athena = boto3.client("athena")
        s3.create_bucket(Bucket=BUCKET)
        glue.create_database(DatabaseInput={"Name": DATABASE})
        for table, columns in GLUE_TABLES.items():
            glue.create_table(DatabaseName=DATABASE, TableInput={
                "Name": table, "TableType": "EXTERNAL_TABLE",
                "PartitionKeys": [{"Name": "run_id", "Type": "string"}],
                "StorageDescriptor": {
                    "Columns": [{"Name": n, "Type": t} for n, t in columns],
                    "Location": f"s3://{BUCKET}/tables/{table}/",
                    "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
                    "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                    "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
                }})
        athena.create_work_group(Name=WORKGROUP, Configuration={
            "ResultConfiguration": {"OutputLocation": f"s3://{BUCKET}/athena-results/"}})
        yield {"s3": s3, "glue": glue, "athena": athena}


@pytest.fixture
def store(aws: dict[str, Any]) -> AthenaStore:
    return AthenaStore(BUCKET, DATABASE, WORKGROUP, **aws, poll_seconds=0)


def read_lines(s3: Any, key: str) -> list[dict[str, Any]]:
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    return [json.loads(line) for line in body.splitlines()]


def keys(s3: Any, prefix: str = "tables/") -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def test_samples_land_under_the_run_partition_and_parse_back_to_the_same_rows(store, aws):
    rows = [sample(second=s) for s in (1, 2, 3)] + [sample(rep=2, second=1)]
    assert store.write_samples(rows) == 4  # rows stored (the ResultsStore protocol)
    written = store.keys_written

    assert len(written) == 2  # one object per target x repetition x step
    assert keys(aws["s3"]) == sorted(written)
    for key in written:
        assert key.startswith(f"tables/samples/run_id={RUN}/m6i-large.rep-")
        assert key.endswith(".jsonl")
        assert key.count("/") == 3  # flat inside the partition
    back = []
    for key in written:
        for line in read_lines(aws["s3"], key):
            assert list(line) == list(TABLE_COLUMNS["samples"])  # exactly the Glue columns, in order
            assert "run_id" not in line  # the partition key comes from the path
            line["time"] = datetime.strptime(line["time"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
            back.append(Sample(run_id=RUN, **line))
    assert sorted(back, key=lambda s: (s.repetition, s.second)) == rows


def test_summaries_and_partitions_are_registered_once(store, aws):
    store.write_summaries([summary(), summary(target="m6g-large")])
    store.write_summaries([summary(rep=2)])

    parts = aws["glue"].get_partitions(DatabaseName=DATABASE, TableName="step_summaries")["Partitions"]
    assert [p["Values"] for p in parts] == [[RUN]]
    sd = parts[0]["StorageDescriptor"]
    assert sd["Location"] == f"s3://{BUCKET}/tables/step_summaries/run_id={RUN}/"
    assert sd["SerdeInfo"]["SerializationLibrary"] == "org.openx.data.jsonserde.JsonSerDe"
    objects = keys(aws["s3"], "tables/step_summaries/")
    assert len(objects) == 3
    line = read_lines(aws["s3"], objects[0])[0]
    assert line["transactions"] == 72030 and line["latency_pct_ms"] == 9.06


def test_partition_registered_by_another_writer_is_not_an_error(store, aws):
    other = AthenaStore(BUCKET, DATABASE, WORKGROUP, **aws)
    other.write_samples([sample()])
    store.write_samples([sample(second=9)])  # a new process: AlreadyExists from Glue is success
    parts = aws["glue"].get_partitions(DatabaseName=DATABASE, TableName="samples")["Partitions"]
    assert len(parts) == 1


def test_a_retried_write_rewrites_the_same_object(store, aws):
    rows = [sample(second=s) for s in range(1, 6)]
    store.write_samples(rows)
    store.write_samples(rows)
    first, second = store.keys_written
    assert first == second
    assert len(keys(aws["s3"], "tables/samples/")) == 1
    # A different batch of the same step is a different object, never an overwrite.
    store.write_samples([sample(second=6)])
    assert store.keys_written[-1] != first
    assert len(keys(aws["s3"], "tables/samples/")) == 2


def test_cloud_metrics_targets_and_runs(store, aws):
    CloudMetric = pytest.importorskip("benchfleet.aws.store.timestream").CloudMetric
    metrics = [
        CloudMetric(time=T0, run_id=RUN, target_id="aurora-r6g", repetition=1, step="measure-t8",
                    metric="WriteLatency", value=1.7, unit="Milliseconds", period_s=60),
        CloudMetric(time=T0 + timedelta(minutes=1), run_id=RUN, target_id="aurora-r6g", repetition=1,
                    step="measure-t8", metric="CommitLatency", value=2.4, unit="Milliseconds", period_s=60),
    ]
    assert store.write_cloud_metrics(metrics) == 2
    (mkey,) = store.keys_written
    assert mkey.startswith(f"tables/cloud_metrics/run_id={RUN}/aurora-r6g.")
    lines = read_lines(aws["s3"], mkey)
    assert lines[0] == {"time": athena_timestamp(T0), "target_id": "aurora-r6g", "repetition": 1,
                        "step": "measure-t8", "metric": "WriteLatency", "value": 1.7, "unit": "Milliseconds",
                        "period_s": 60}
    assert lines[0]["time"] == "2026-11-02 10:15:00.000000"

    (tkey,) = store.write_targets([{"run_id": RUN, "target_id": "aurora-r6g", "repetition": 1,
                                    "kind": "aurora", "instance_type": "db.r6g.large",
                                    "price_per_hour": 0.29, "vcpus": 2}])
    assert tkey == f"tables/targets/run_id={RUN}/aurora-r6g.rep-1.json"
    target = read_lines(aws["s3"], tkey)[0]
    assert list(target) == list(TABLE_COLUMNS["targets"])
    assert target["price_per_hour"] == 0.29 and target["engine"] is None

    spec = {"name": "graviton-vs-intel", "baseline": "m6i-large", "targets": [{"id": "m6i-large"}]}
    rkey = store.write_run({"run_id": RUN, "name": "graviton-vs-intel", "spec": spec, "status": "running",
                            "mode": "aws", "started_at": T0})
    store.write_run({"run_id": RUN, "name": "graviton-vs-intel", "spec": spec, "status": "succeeded",
                     "mode": "aws", "started_at": T0, "ended_at": T0 + timedelta(hours=1)})
    assert rkey == f"tables/runs/run_id={RUN}/run.json"
    run = read_lines(aws["s3"], rkey)
    assert len(run) == 1 and run[0]["status"] == "succeeded"
    assert json.loads(run[0]["spec"]) == spec  # stored as JSON text in a string column
    for table in ("cloud_metrics", "targets", "runs"):
        parts = aws["glue"].get_partitions(DatabaseName=DATABASE, TableName=table)["Partitions"]
        assert [p["Values"] for p in parts] == [[RUN]]


@pytest.mark.parametrize("bad", ["", "a/b", "..", "has space"])
def test_ids_that_cannot_be_key_segments_are_refused(store, bad):
    with pytest.raises(AthenaStoreError):
        store.write_cloud_metrics([{"run_id": bad, "target_id": "x", "time": T0, "metric": "m", "value": 1}])
    with pytest.raises(AthenaStoreError):
        store.write_run({"run_id": bad, "name": "n", "spec": {}, "status": "running"})


def test_glue_columns_match_the_records_fields():
    assert set(GLUE_TABLES) == set(TABLE_COLUMNS)
    for table, columns in GLUE_TABLES.items():
        assert [n for n, _ in columns] == list(TABLE_COLUMNS[table]), table
    for table, model in (("samples", Sample), ("step_summaries", StepSummary)):
        glue = dict(GLUE_TABLES[table])
        assert set(model.model_fields) - {"run_id"} == set(glue)
        for name, field in model.model_fields.items():
            if name == "run_id":
                continue
            annotation = str if get_origin(field.annotation) is Literal else field.annotation
            python_types = [t for t in GLUE_TYPES if t is annotation or t in get_args(annotation)
                            or t in [get_origin(a) for a in get_args(annotation)]]
            assert python_types, f"{table}.{name}: unmapped type {field.annotation}"
            assert glue[name] in GLUE_TYPES[python_types[0]], f"{table}.{name}: {glue[name]}"


def test_glue_columns_match_the_local_duckdb_schema(tmp_path):
    """The same data model in both stores: the dataset SQL runs on either."""
    from benchfleet.local.store import DuckDBStore

    db = DuckDBStore(tmp_path / "b.duckdb")
    try:
        for table, columns in GLUE_TABLES.items():
            local = [r["column_name"] for r in db.query(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "ORDER BY ordinal_position", [table])]
            # cloud_metrics in the cloud also carry the step window they were collected for and the
            # CloudWatch period of each point.
            extra = {"repetition", "step", "period_s"} if table == "cloud_metrics" else set()
            # runs.machine is the local machine's own record (load average, other benchmarks it overlapped):
            # a cloud target has its own host, whose steal and fingerprint the cloud tables carry.
            local_only = {"machine"} if table == "runs" else set()
            assert set(local) - {"run_id"} - local_only == {n for n, _ in columns} - extra, table
    finally:
        db.close()


def test_from_settings_is_the_factory_results_store_calls(aws, monkeypatch):
    settings = pytest.importorskip("benchfleet.aws.settings").Settings(results_bucket=BUCKET,
                                                                        results_store="athena")
    monkeypatch.setenv("GLUE_DATABASE", DATABASE)
    monkeypatch.setenv("ATHENA_WORKGROUP", WORKGROUP)
    results_store = pytest.importorskip("benchfleet.aws.store.results_store")
    store = results_store.store_from_settings(settings, lambda service: aws[service])
    assert isinstance(store, AthenaStore)
    assert store.write_samples([sample()]) == 1


def test_from_env_names_what_is_missing(aws):
    with pytest.raises(AthenaStoreError, match="GLUE_DATABASE, ATHENA_WORKGROUP"):
        AthenaStore.from_env({"RESULTS_BUCKET": BUCKET})
    store = AthenaStore.from_env({"RESULTS_BUCKET": BUCKET, "GLUE_DATABASE": DATABASE,
                                  "ATHENA_WORKGROUP": WORKGROUP})
    assert (store.bucket, store.database, store.workgroup) == (BUCKET, DATABASE, WORKGROUP)


class FakeAthena:
    """Athena's paging and header row, which moto does not model."""

    def __init__(self, pages: list[list[list[str | None]]], state: str = "SUCCEEDED") -> None:
        self.pages, self.state, self.requests = pages, state, []

    def start_query_execution(self, **request):
        self.requests.append(request)
        return {"QueryExecutionId": "q-1"}

    def get_query_execution(self, QueryExecutionId):
        return {"QueryExecution": {"Status": {"State": self.state, "StateChangeReason": "syntax"}}}

    def get_query_results(self, QueryExecutionId, NextToken=None):
        index = int(NextToken or 0)
        page = {"ResultSet": {"Rows": [{"Data": [{} if v is None else {"VarCharValue": v} for v in row]}
                                       for row in self.pages[index]],
                              "ResultSetMetadata": {"ColumnInfo": [{"Name": "target_id"}, {"Name": "tps"}]}}}
        if index + 1 < len(self.pages):
            page["NextToken"] = str(index + 1)
        return page


def test_query_pages_skips_the_header_and_binds_parameters(aws):
    fake = FakeAthena([[["target_id", "tps"], ["a", "1.5"]], [["b", None]]])
    store = AthenaStore(BUCKET, DATABASE, WORKGROUP, s3=aws["s3"], glue=aws["glue"], athena=fake)
    rows = store.summaries("run-it's")
    assert rows == [{"target_id": "a", "tps": "1.5"}, {"target_id": "b", "tps": None}]
    request = fake.requests[0]
    assert request["WorkGroup"] == WORKGROUP
    assert request["QueryExecutionContext"] == {"Database": DATABASE}
    assert request["ExecutionParameters"] == ["'run-it''s'"]
    assert "?" in request["QueryString"] and "run-it" not in request["QueryString"]


def test_failed_query_raises_with_the_reason(aws):
    store = AthenaStore(BUCKET, DATABASE, WORKGROUP, s3=aws["s3"], glue=aws["glue"],
                        athena=FakeAthena([], state="FAILED"))
    with pytest.raises(AthenaStoreError, match="FAILED: syntax"):
        store.query("SELECT 1")


def test_query_through_moto_workgroup(store):
    # moto has no SQL engine; this checks the request shape is one Athena accepts.
    assert store.query("SELECT 1") == []
