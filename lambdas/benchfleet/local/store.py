"""The local results store: DuckDB at ``<home>/benchfleet.duckdb``, the data model's tables."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from benchfleet.records import AgentOutput, Fingerprint, Sample, StepSummary

_SAMPLE_COLUMNS = [
    "time", "run_id", "target_id", "repetition", "workload", "step", "threads", "phase", "second",
    "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "latency_ms", "latency_pct",
    "errors_per_s", "reconnects_per_s", "cpu_steal_pct", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct",
    "interval_s",
]
_SUMMARY_COLUMNS = [
    "time", "run_id", "target_id", "repetition", "workload", "step", "threads", "phase", "total_time_s",
    "transactions", "tps", "queries", "qps", "reads", "writes", "other", "ignored_errors", "errors_per_s",
    "reconnects", "reconnects_per_s", "events", "latency_min_ms", "latency_avg_ms", "latency_max_ms",
    "latency_pct", "latency_pct_ms", "sysbench_version", "samples", "tps_cv", "steal_mean_pct",
    "samples_expected", "covered_s", "missing_final",
]
_FINGERPRINT_COLUMNS = ["cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os",
                        "sysbench_version", "engine_version", "config_hash"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, spec JSON NOT NULL, status VARCHAR NOT NULL,
    mode VARCHAR NOT NULL, started_at TIMESTAMPTZ NOT NULL, ended_at TIMESTAMPTZ, message VARCHAR,
    estimated_cost_usd DOUBLE, actual_cost_usd DOUBLE);
CREATE TABLE IF NOT EXISTS targets (
    run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL, repetition INTEGER NOT NULL, kind VARCHAR,
    instance_type VARCHAR, engine VARCHAR, mysql_config VARCHAR, region VARCHAR, availability_zone VARCHAR,
    storage VARCHAR,
    cpus VARCHAR, price_per_hour DOUBLE, cpu_model VARCHAR, vcpus INTEGER, cpus_usable INTEGER,
    memory_mb BIGINT, arch VARCHAR, kernel VARCHAR, os VARCHAR, sysbench_version VARCHAR,
    engine_version VARCHAR, config_hash VARCHAR, recorded_at TIMESTAMPTZ, server_variables JSON,
    steal_source VARCHAR, PRIMARY KEY (run_id, target_id, repetition));
CREATE TABLE IF NOT EXISTS samples (
    time TIMESTAMPTZ NOT NULL, run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL,
    repetition INTEGER NOT NULL, workload VARCHAR, step VARCHAR NOT NULL, threads INTEGER, phase VARCHAR,
    second DOUBLE, tps DOUBLE, qps DOUBLE, reads_per_s DOUBLE, writes_per_s DOUBLE, other_per_s DOUBLE,
    latency_ms DOUBLE, latency_pct INTEGER, errors_per_s DOUBLE, reconnects_per_s DOUBLE,
    cpu_steal_pct DOUBLE, cpu_user_pct DOUBLE, cpu_system_pct DOUBLE, cpu_iowait_pct DOUBLE);
CREATE TABLE IF NOT EXISTS step_summaries (
    time TIMESTAMPTZ NOT NULL, run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL,
    repetition INTEGER NOT NULL, workload VARCHAR, step VARCHAR NOT NULL, threads INTEGER, phase VARCHAR,
    total_time_s DOUBLE, transactions BIGINT, tps DOUBLE, queries BIGINT, qps DOUBLE, reads BIGINT,
    writes BIGINT, other BIGINT, ignored_errors BIGINT, errors_per_s DOUBLE, reconnects BIGINT,
    reconnects_per_s DOUBLE, events BIGINT, latency_min_ms DOUBLE, latency_avg_ms DOUBLE,
    latency_max_ms DOUBLE, latency_pct INTEGER, latency_pct_ms DOUBLE, sysbench_version VARCHAR,
    samples INTEGER, tps_cv DOUBLE, steal_mean_pct DOUBLE,
    PRIMARY KEY (run_id, target_id, repetition, step));
CREATE TABLE IF NOT EXISTS cloud_metrics (
    time TIMESTAMPTZ NOT NULL, run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL, metric VARCHAR NOT NULL,
    value DOUBLE, unit VARCHAR);
-- Stores written before these columns existed: the server's effective variables as measured, and
-- whose CPU the steal figures are (server: the server's host; client: this machine, not the server's).
ALTER TABLE targets ADD COLUMN IF NOT EXISTS server_variables JSON;
ALTER TABLE targets ADD COLUMN IF NOT EXISTS steal_source VARCHAR;
-- Where a cloud target really ran (collect's targets rows); empty for local targets.
ALTER TABLE targets ADD COLUMN IF NOT EXISTS availability_zone VARCHAR;
-- Per-second accounting (interval_s) and a step's samples expected vs present.
ALTER TABLE samples ADD COLUMN IF NOT EXISTS interval_s DOUBLE;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS samples_expected INTEGER;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS covered_s DOUBLE;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS missing_final BOOLEAN;
"""


class RunNotFound(LookupError):
    pass


class DuckDBStore:
    """Results of local runs and imports. One writer at a time (DuckDB's own rule)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = duckdb.connect(str(path))
        self.db.execute("SET TimeZone = 'UTC'")
        self.db.execute(SCHEMA)

    def close(self) -> None:
        self.db.close()

    # ---- runs --------------------------------------------------------------------------------
    def create_run(self, run_id: str, name: str, spec: dict[str, Any], mode: str,
                   estimated_cost_usd: float | None) -> None:
        self.db.execute(
            "INSERT INTO runs (run_id, name, spec, status, mode, started_at, estimated_cost_usd) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?)",
            [run_id, name, json.dumps(spec), mode, datetime.now(UTC), estimated_cost_usd])

    def finish_run(self, run_id: str, status: str, message: str | None = None,
                   actual_cost_usd: float | None = None) -> None:
        self.db.execute("UPDATE runs SET status = ?, message = ?, ended_at = ?, actual_cost_usd = ? "
                        "WHERE run_id = ?", [status, message, datetime.now(UTC), actual_cost_usd, run_id])

    def delete_run(self, run_id: str) -> None:
        """Remove a run and all its rows (before loading a fresh copy of it)."""
        for table in ("samples", "step_summaries", "cloud_metrics", "targets", "runs"):
            self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def delete_target(self, run_id: str, target_id: str) -> None:
        """Remove one target's rows from a run (an import into the run that failed half-way)."""
        for table in ("samples", "step_summaries", "cloud_metrics", "targets"):
            self.db.execute(f"DELETE FROM {table} WHERE run_id = ? AND target_id = ?", [run_id, target_id])

    def set_spec(self, run_id: str, spec: dict[str, Any]) -> None:
        """Replace a run's spec (an import adds a target to an existing run)."""
        self.db.execute("UPDATE runs SET spec = ? WHERE run_id = ?", [json.dumps(spec), run_id])

    def runs(self) -> list[dict[str, Any]]:
        return self._dicts("SELECT run_id, name, status, mode, started_at, ended_at, estimated_cost_usd, "
                           "actual_cost_usd, message, json_extract_string(spec, '$.variant.label') AS variant "
                           "FROM runs ORDER BY started_at DESC")

    def run(self, run_id: str) -> dict[str, Any]:
        rows = self._dicts("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            # Unique prefixes are accepted: run ids are long.
            rows = self._dicts("SELECT * FROM runs WHERE starts_with(run_id, ?) ORDER BY started_at DESC",
                               [run_id])
            if len(rows) != 1:
                raise RunNotFound(f"no run {run_id!r}" if not rows else
                                  f"{run_id!r} matches {len(rows)} runs; give more of the id")
        row = rows[0]
        row["spec"] = json.loads(row["spec"])
        return row

    # ---- rows --------------------------------------------------------------------------------
    def add_target(self, run_id: str, target_id: str, repetition: int, meta: dict[str, Any],
                   fingerprint: Fingerprint | None) -> None:
        fp = fingerprint.model_dump() if fingerprint else {}
        values = {"run_id": run_id, "target_id": target_id, "repetition": repetition, **meta,
                  **{k: fp.get(k) for k in _FINGERPRINT_COLUMNS}, "recorded_at": fp.get("time")}
        columns = list(values)
        self.db.execute(
            f"INSERT OR REPLACE INTO targets ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [values[c] for c in columns])

    def add_output(self, output: AgentOutput) -> None:
        """Insert samples and step summaries (in one transaction, so a step is there whole or not)."""
        self.db.execute("BEGIN")
        try:
            self._insert("samples", _SAMPLE_COLUMNS, output.samples)
            self._insert("step_summaries", _SUMMARY_COLUMNS, output.summaries, replace=True)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _insert(self, table: str, columns: list[str], rows: Sequence[Sample | StepSummary],
                replace: bool = False) -> None:
        if not rows:
            return
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        self.db.executemany(
            f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [[getattr(r, c) for c in columns] for r in rows])

    # ---- reads -------------------------------------------------------------------------------
    def targets(self, run_id: str) -> list[dict[str, Any]]:
        return self._dicts("SELECT * FROM targets WHERE run_id = ? ORDER BY target_id, repetition", [run_id])

    def summaries(self, run_id: str) -> list[dict[str, Any]]:
        return self._dicts("SELECT * FROM step_summaries WHERE run_id = ? "
                           "ORDER BY target_id, threads, repetition, step", [run_id])

    def samples(self, run_id: str, phase: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT * FROM samples WHERE run_id = ?"
        params: list[Any] = [run_id]
        if phase:
            query += " AND phase = ?"
            params.append(phase)
        return self._dicts(query + " ORDER BY target_id, repetition, time", params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self._dicts(sql, params)

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@contextmanager
def open_store(home: Path) -> Iterator[DuckDBStore]:
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        yield store
    finally:
        store.close()
