"""The S3 + Glue + Athena results store (``RESULTS_STORE=athena``): works in every account.

Rows are written as JSON Lines objects in the results bucket, one Glue table per record type::

    tables/<table>/run_id=<run_id>/<target_id>.rep-<n>.<step>.<digest>.jsonl   samples, status_samples,
                                                                               step_summaries
    tables/cloud_metrics/run_id=<run_id>/<target_id>.<digest>.jsonl
    tables/targets/run_id=<run_id>/<target_id>.rep-<n>.json
    tables/runs/run_id=<run_id>/run.json

``run_id`` is the Hive partition key (a path segment, not a data column). Partition projection's
``injected`` type would force every query (and every QuickSight dashboard) to name one run, so the
writer registers each run's partition in Glue itself (``BatchCreatePartition``, idempotent); an
operator can rebuild the partitions from S3 with ``MSCK REPAIR TABLE <table>``.

Object names are a digest of their content, so a retried Collect rewrites the same object instead of
doubling rows, while two different batches of one step never overwrite each other. Timestamps are
written as ``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC: the form Athena's ``timestamp`` type reads from JSON.

Standard library and boto3 only: this module is imported by Lambdas.
"""

from __future__ import annotations

import hashlib
import json
import os
import time as _time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from pydantic import BaseModel

from benchfleet.workload.records import Sample, StatusSample, StepSummary

if TYPE_CHECKING:
    from benchfleet.aws.settings import Settings

TABLES_PREFIX = "tables/"
PARTITION_KEY = "run_id"

# Data columns of each Glue table, in table order (run_id is the partition key, not among them).
# cdk/lib/sql/glue-tables.json declares the same columns with their types; a functional test checks it.
SAMPLE_COLUMNS: tuple[str, ...] = tuple(f for f in Sample.model_fields if f != PARTITION_KEY)
SUMMARY_COLUMNS: tuple[str, ...] = tuple(f for f in StepSummary.model_fields if f != PARTITION_KEY)
STATUS_COLUMNS: tuple[str, ...] = tuple(f for f in StatusSample.model_fields if f != PARTITION_KEY)
CLOUD_METRIC_COLUMNS: tuple[str, ...] = ("time", "target_id", "repetition", "step", "metric", "value",
                                         "unit", "period_s")
TARGET_COLUMNS: tuple[str, ...] = (
    "target_id", "repetition", "kind", "instance_type", "engine", "mysql_config", "region", "availability_zone",
    "storage",
    "cpus", "price_per_hour", "cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os",
    "sysbench_version", "engine_version", "config_hash", "recorded_at", "server_variables", "steal_source",
    "prices", "storage_layout", "cluster")
RUN_COLUMNS: tuple[str, ...] = (
    "name", "spec", "status", "mode", "started_at", "ended_at", "message", "estimated_cost_usd",
    "actual_cost_usd")

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "samples": SAMPLE_COLUMNS,
    "status_samples": STATUS_COLUMNS,
    "step_summaries": SUMMARY_COLUMNS,
    "cloud_metrics": CLOUD_METRIC_COLUMNS,
    "targets": TARGET_COLUMNS,
    "runs": RUN_COLUMNS,
}

Row = Mapping[str, Any] | BaseModel


class AthenaStoreError(RuntimeError):
    """A row the store cannot write, or a query Athena did not finish."""


def athena_timestamp(value: datetime) -> str:
    """UTC ``YYYY-MM-DD HH:MM:SS.ffffff`` (naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _as_dict(row: Row) -> dict[str, Any]:
    return row.model_dump() if isinstance(row, BaseModel) else dict(row)


def _cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return athena_timestamp(value)
    if isinstance(value, dict | list):
        # Nested values (a run's spec) are stored as JSON text in a string column.
        return json.dumps(value, sort_keys=True, default=str)
    return value


def json_lines(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> bytes:
    """One JSON object per line with exactly ``columns`` (missing ones as null), in column order."""
    lines = [json.dumps({c: _cell(row.get(c)) for c in columns}, separators=(",", ":"), default=str)
             for row in rows]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _safe_segment(value: Any, what: str) -> str:
    text = "" if value is None else str(value)
    if not text or "/" in text or text in {".", ".."} or any(c.isspace() for c in text):
        raise AthenaStoreError(f"{what} {text!r} cannot be part of an S3 key")
    return text


def partition_prefix(table: str, run_id: str) -> str:
    """``tables/<table>/run_id=<run_id>/``: the location of one run's partition of one table."""
    return f"{TABLES_PREFIX}{table}/{PARTITION_KEY}={_safe_segment(run_id, 'run_id')}/"


class AthenaStore:
    """Writes the data model's rows to S3 for Athena and reads them back through Athena.

    Implements benchfleet.aws.store.results_store.ResultsStore (``write_samples``, ``write_summaries``,
    ``write_cloud_metrics``: each returns the rows stored; a retry is harmless) plus ``write_targets``
    and ``write_run``, which the dashboards' datasets join on (target prices and fingerprints, run
    names and baselines). ``keys_written`` lists the objects put, in order.
    """

    def __init__(self, bucket: str, database: str, workgroup: str, *, s3: Any = None, glue: Any = None,
                 athena: Any = None, poll_seconds: float = 0.5) -> None:
        self.bucket = bucket
        self.database = database
        self.workgroup = workgroup
        self.s3 = s3 or boto3.client("s3")
        self.glue = glue or boto3.client("glue")
        self.athena = athena or boto3.client("athena")
        self.poll_seconds = poll_seconds
        self.keys_written: list[str] = []
        self._registered: set[tuple[str, str]] = set()
        self._descriptors: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **clients: Any) -> AthenaStore:
        """From RESULTS_BUCKET, GLUE_DATABASE and ATHENA_WORKGROUP (set by the CDK app)."""
        env = os.environ if env is None else env
        missing = [k for k in ("RESULTS_BUCKET", "GLUE_DATABASE", "ATHENA_WORKGROUP") if not env.get(k)]
        if missing:
            raise AthenaStoreError(f"RESULTS_STORE=athena needs {', '.join(missing)} in the environment")
        return cls(env["RESULTS_BUCKET"], env["GLUE_DATABASE"], env["ATHENA_WORKGROUP"], **clients)

    # ---- writes --------------------------------------------------------------------------------
    def write_samples(self, samples: Sequence[Sample]) -> int:
        """Per-second samples, one object per run x target x repetition x step."""
        self._write_steps("samples", SAMPLE_COLUMNS, samples)
        return len(samples)

    def write_status(self, rows: Sequence[StatusSample]) -> int:
        """Server status rows (one per source, counter and reading), one object per step."""
        self._write_steps("status_samples", STATUS_COLUMNS, rows)
        return len(rows)

    def write_summaries(self, summaries: Sequence[StepSummary], margin_pct: float | None = None) -> int:
        """Step summaries, one object per step (the margin is the runs row's spec's: not repeated here)."""
        self._write_steps("step_summaries", SUMMARY_COLUMNS, summaries)
        return len(summaries)

    def write_cloud_metrics(self, metrics: Sequence[Row]) -> int:
        """CloudMetric rows (time, run_id, target_id, repetition, step, metric, value, unit, period_s)."""
        groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for metric in metrics:
            row = _as_dict(metric)
            groups[(_run_id(row), _safe_segment(row.get("target_id"), "target_id"))].append(row)
        keys = []
        for (run_id, target_id), rows in groups.items():
            body = json_lines(rows, CLOUD_METRIC_COLUMNS)
            keys.append(self._put("cloud_metrics", run_id, f"{target_id}.{_digest(body)}.jsonl", body))
        return len(metrics)

    def write_targets(self, targets: Sequence[Row]) -> list[str]:
        """One row per run x target x repetition (the DuckDB ``targets`` columns); replaces earlier."""
        keys = []
        for target in targets:
            row = _as_dict(target)
            name = (f"{_safe_segment(row.get('target_id'), 'target_id')}"
                    f".rep-{_safe_segment(row.get('repetition'), 'repetition')}.json")
            keys.append(self._put("targets", _run_id(row), name, json_lines([row], TARGET_COLUMNS)))
        return keys

    def write_run(self, run: Row) -> str:
        """The run's row (name, spec, status, times, costs); rewritten on every status change."""
        row = _as_dict(run)
        return self._put("runs", _run_id(row), "run.json", json_lines([row], RUN_COLUMNS))

    def _write_steps(self, table: str, columns: Sequence[str],
                     rows: Sequence[Sample | StatusSample | StepSummary]) -> list[str]:
        groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            groups[(r.run_id, r.target_id, r.repetition, r.step)].append(r.model_dump())
        keys = []
        for (run_id, target_id, repetition, step), items in groups.items():
            body = json_lines(items, columns)
            # Flat within the partition: every object of a run sits directly under its location.
            name = (f"{_safe_segment(target_id, 'target_id')}.rep-{repetition}."
                    f"{_safe_segment(step, 'step')}.{_digest(body)}.jsonl")
            keys.append(self._put(table, run_id, name, body))
        return keys

    def _put(self, table: str, run_id: str, name: str, body: bytes) -> str:
        key = partition_prefix(table, run_id) + name
        content_type = "application/x-ndjson" if name.endswith(".jsonl") else "application/json"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type)
        self.register_partition(table, run_id)
        self.keys_written.append(key)
        return key

    # ---- partitions ----------------------------------------------------------------------------
    def register_partition(self, table: str, run_id: str) -> None:
        """Add the run's partition to the Glue table once (AlreadyExists is success)."""
        if (table, run_id) in self._registered:
            return
        descriptor = dict(self._descriptor(table))
        descriptor["Location"] = f"s3://{self.bucket}/{partition_prefix(table, run_id)}"
        response = self.glue.batch_create_partition(
            DatabaseName=self.database, TableName=table,
            PartitionInputList=[{"Values": [run_id], "StorageDescriptor": descriptor}])
        for error in response.get("Errors", []):
            code = error.get("ErrorDetail", {}).get("ErrorCode")
            if code != "AlreadyExistsException":
                raise AthenaStoreError(
                    f"registering partition {run_id} of {table}: {error.get('ErrorDetail')}")
        self._registered.add((table, run_id))

    def _descriptor(self, table: str) -> dict[str, Any]:
        if table not in self._descriptors:
            sd = self.glue.get_table(DatabaseName=self.database, Name=table)["Table"]["StorageDescriptor"]
            keep = ("Columns", "InputFormat", "OutputFormat", "SerdeInfo", "Compressed", "Parameters")
            self._descriptors[table] = {k: sd[k] for k in keep if k in sd}
        return self._descriptors[table]

    # ---- reads (API results route) -----------------------------------------------------------
    def summaries(self, run_id: str) -> list[dict[str, Any]]:
        """The run's step summaries, ordered like DuckDBStore.summaries."""
        _safe_segment(run_id, "run_id")
        return self.query(
            "SELECT run_id, " + ", ".join(SUMMARY_COLUMNS) + " FROM step_summaries WHERE run_id = ? "
            "ORDER BY target_id, threads, repetition, step", [run_id])

    def query(self, sql: str, params: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Run SQL in the workgroup (its enforced result location and encryption apply).

        ``?`` placeholders are passed as ExecutionParameters (string literals), never formatted in.
        Values come back as Athena returns them: strings, or None for SQL NULL.
        """
        request: dict[str, Any] = {"QueryString": sql, "WorkGroup": self.workgroup,
                                   "QueryExecutionContext": {"Database": self.database}}
        if params:
            request["ExecutionParameters"] = ["'" + p.replace("'", "''") + "'" for p in params]
        execution_id = self.athena.start_query_execution(**request)["QueryExecutionId"]
        while True:
            execution = self.athena.get_query_execution(QueryExecutionId=execution_id)
            status = execution["QueryExecution"]["Status"]
            state = status["State"]
            if state == "SUCCEEDED":
                break
            if state in ("FAILED", "CANCELLED"):
                raise AthenaStoreError(f"Athena query {execution_id} {state}: "
                                       f"{status.get('StateChangeReason', 'no reason given')}")
            _time.sleep(self.poll_seconds)
        rows: list[dict[str, Any]] = []
        names: list[str] | None = None
        token: str | None = None
        while True:
            page = self.athena.get_query_results(
                QueryExecutionId=execution_id, **({"NextToken": token} if token else {}))
            result = page["ResultSet"]
            if names is None:
                names = [c["Name"] for c in result.get("ResultSetMetadata", {}).get("ColumnInfo", [])]
                data = result.get("Rows", [])[1:]  # the first row of the first page is the header
            else:
                data = result.get("Rows", [])
            for r in data:
                values = [cell.get("VarCharValue") for cell in r.get("Data", [])]
                rows.append(dict(zip(names, values, strict=False)))
            token = page.get("NextToken")
            if not token:
                return rows


def from_settings(settings: Settings, client: Callable[[str], Any],
                  env: Mapping[str, str] | None = None) -> AthenaStore:
    """The factory benchfleet.aws.store.results_store.store_from_settings calls for RESULTS_STORE=athena.

    RESULTS_BUCKET comes from the settings; GLUE_DATABASE and ATHENA_WORKGROUP (set by the CDK app's
    athena store) from the environment.
    """
    env = os.environ if env is None else env
    return AthenaStore.from_env({**env, "RESULTS_BUCKET": settings.results_bucket or env.get("RESULTS_BUCKET", "")},
                                s3=client("s3"), glue=client("glue"), athena=client("athena"))


def _run_id(row: Mapping[str, Any]) -> str:
    return _safe_segment(row.get("run_id"), "run_id")


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:16]
