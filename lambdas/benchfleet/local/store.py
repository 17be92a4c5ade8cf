"""The local results store: DuckDB at ``<home>/benchfleet.duckdb``, the data model's tables.

Why one module: the schema of every table, its migrations and the queries that write and read it
stay together, so that a column is added in one place.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from benchfleet.workload.records import AgentOutput, Fingerprint, Sample, StatusSample, StepSummary

_SAMPLE_COLUMNS = [
    "time", "run_id", "target_id", "repetition", "workload", "step", "threads", "phase", "second",
    "tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "latency_ms", "latency_pct",
    "errors_per_s", "reconnects_per_s", "cpu_steal_pct", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct",
    "interval_s", "arrived_s", "variant", "block", "disk_reads_per_s", "disk_writes_per_s",
    "disk_read_mib_per_s", "disk_write_mib_per_s", "disk_await_ms", "rows_in_table", "tpmc", "tx_per_s",
]
_SUMMARY_COLUMNS = [
    "time", "run_id", "target_id", "repetition", "workload", "step", "threads", "phase", "total_time_s",
    "transactions", "tps", "queries", "qps", "reads", "writes", "other", "ignored_errors", "errors_per_s",
    "reconnects", "reconnects_per_s", "events", "latency_min_ms", "latency_avg_ms", "latency_max_ms",
    "latency_pct", "latency_pct_ms", "sysbench_version", "samples", "tps_cv", "steal_mean_pct",
    "samples_expected", "covered_s", "missing_final", "variant", "block", "settings", "latency_percentiles_ms",
    "tpmc", "tx_per_s",
]
_STATUS_COLUMNS = ["time", "run_id", "target_id", "variant", "block", "repetition", "workload", "step", "threads",
                   "phase", "second", "source", "counter", "value", "rate"]
_SUMMARY_KEY = ("run_id", "target_id", "repetition", "step")  # step_summaries' primary key
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
    steal_source VARCHAR, prices JSON, PRIMARY KEY (run_id, target_id, repetition));
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
-- SHOW GLOBAL STATUS per second, per source (server, cluster node, proxy backend): benchfleet.workload.serverstatus.
CREATE TABLE IF NOT EXISTS status_samples (
    time TIMESTAMPTZ NOT NULL, run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL,
    variant VARCHAR DEFAULT '', block INTEGER, repetition INTEGER NOT NULL, workload VARCHAR,
    step VARCHAR NOT NULL, threads INTEGER, phase VARCHAR, second DOUBLE, source VARCHAR NOT NULL,
    counter VARCHAR NOT NULL, value DOUBLE, rate DOUBLE);
CREATE TABLE IF NOT EXISTS cloud_metrics (
    time TIMESTAMPTZ NOT NULL, run_id VARCHAR NOT NULL, target_id VARCHAR NOT NULL, metric VARCHAR NOT NULL,
    value DOUBLE, unit VARCHAR);
-- Stores written before these columns existed: the server's effective variables as measured, and
-- whose CPU the steal figures are (server: the server's host; client: this machine, not the server's).
ALTER TABLE targets ADD COLUMN IF NOT EXISTS server_variables JSON;
ALTER TABLE targets ADD COLUMN IF NOT EXISTS steal_source VARCHAR;
-- A cluster target: its nodes, flavor and proxy (software, version, settings, configuration hash).
ALTER TABLE targets ADD COLUMN IF NOT EXISTS cluster JSON;
-- Where a cloud target really ran (collect's targets rows); empty for local targets.
ALTER TABLE targets ADD COLUMN IF NOT EXISTS availability_zone VARCHAR;
-- Every line of the target's price by pricing model, as recorded with the run (benchfleet.cost.pricing).
ALTER TABLE targets ADD COLUMN IF NOT EXISTS prices JSON;
-- Per-second accounting (interval_s) and a step's samples expected vs present.
ALTER TABLE samples ADD COLUMN IF NOT EXISTS interval_s DOUBLE;
-- When the agent saw each report arrive (interval lengths measured, not sysbench's rounded seconds).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS arrived_s DOUBLE;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS samples_expected INTEGER;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS covered_s DOUBLE;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS missing_final BOOLEAN;
-- Variants (issue 24): which variant a row measured ('' in runs without variants, and in every run
-- stored before variants existed), the block of a measured step split into blocks, and the settings
-- a variant's step ran with (requested and effective).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS variant VARCHAR DEFAULT '';
ALTER TABLE samples ADD COLUMN IF NOT EXISTS block INTEGER;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS variant VARCHAR DEFAULT '';
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS block INTEGER;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS settings JSON;
-- The data directory's disk per second (/proc/diskstats), the rows in an insert workload's table,
-- and the storage layout the figures were measured on (issue 26).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS disk_reads_per_s DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS disk_writes_per_s DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS disk_read_mib_per_s DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS disk_write_mib_per_s DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS disk_await_ms DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS rows_in_table BIGINT;
ALTER TABLE targets ADD COLUMN IF NOT EXISTS storage_layout JSON;
-- What the machine did while a local run went (benchfleet.local.machine.MachineWatch): load average, and
-- any other benchmark it overlapped; between-run verdicts caveat a run by it.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS machine JSON;
-- A step's latency distribution (issue 39): {"50", "90", "95", "99", "99.9", "max"} in ms.
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS latency_percentiles_ms JSON;
-- go-tpc steps (issue 39): New-Order per minute and each transaction type's rate ({type: per s}).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS tpmc DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS tx_per_s JSON;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS tpmc DOUBLE;
ALTER TABLE step_summaries ADD COLUMN IF NOT EXISTS tx_per_s JSON;
"""


# Local bookkeeping, not part of the data model (the Athena store has no such tables): which
# process on which host is writing a run, so a run whose process is gone can be told from a live one;
# and which runs are copies of cloud runs loaded from their raw output (benchfleet.local.rawsync): from where,
# as of which status of the execution, how many raw files. A copy of a run that had ended is final (its
# raw output never changes again): it is not downloaded again. A copy of a running run is partial.
# calibrations: the variance components `benchfleet calibrate` measured for a spec on this machine
# (benchfleet.stats.resolution), per thread count; the newest replaces the one before.
OWNERS = """
CREATE TABLE IF NOT EXISTS run_owners (
    run_id VARCHAR PRIMARY KEY, host VARCHAR NOT NULL, pid INTEGER NOT NULL, started VARCHAR);
CREATE TABLE IF NOT EXISTS cloud_copies (
    run_id VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, cloud_status VARCHAR NOT NULL,
    raw_files INTEGER NOT NULL, loaded_at TIMESTAMPTZ NOT NULL);
CREATE TABLE IF NOT EXISTS calibrations (
    spec_name VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL, threads INTEGER NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, machine JSON NOT NULL, run_ids JSON NOT NULL, runs INTEGER NOT NULL,
    repetitions INTEGER NOT NULL, blocks INTEGER NOT NULL, sd_block DOUBLE, sd_repetition DOUBLE,
    sd_run DOUBLE, sd_repetition_total DOUBLE, sd_paired DOUBLE,
    PRIMARY KEY (spec_name, fingerprint, threads));
"""
# How long to wait for another benchfleet process's write (milliseconds) or read to finish.
LOCK_WAIT_S = 60.0
# What DuckDB may hold for the reads (its cache of the file's blocks included; left alone it takes 80%
# of the machine's memory for a cache): `results` and `report` of a 200-target 24 h soak stay within
# 1 GB with it. The per-step percentiles, which cannot spill, are computed in batches that fit
# (benchfleet/stats/step_sql.py); what can spill goes to a private temporary directory, not beside
# the store, which may be read-only.
READ_MEMORY_LIMIT = "512MB"


# DuckDB keeps one database per file per process and refuses a connection of the other mode (read-only
# vs read-write) to it while one is open, even from another DuckDBStore: so before a write, every store
# of this process on the same file lets go of its read connection (it opens again on its next read).
_READERS: dict[Path, weakref.WeakSet[DuckDBStore]] = {}


class RunNotFound(LookupError):
    pass


class StoreError(RuntimeError):
    """The store cannot be used; the message names the file and what to do. Raised when the store
    is opened, so a run fails before anything is benchmarked."""


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` (clock ticks since boot): with the pid, it names one process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_alive(host: str | None, pid: int | None, started: str | None) -> bool:
    if host is None or pid is None:
        return False  # a run from before owners were recorded: nothing can still be writing it
    if host != socket.gethostname():
        return True  # another machine's process: we cannot tell, so we do not judge
    return _process_start(pid) == started


class DuckDBStore:
    """Results of local runs and imports, at ``path``.

    No connection is held between operations: each write opens the file, writes in one transaction
    and closes it, and reads share one read-only connection until the next write (through any store of
    this process on the file) or ``close()``.
    So ``runs`` and ``results`` work while a run is writing (each waits out the other's short
    turn), and reading needs no write access (a read-only home). A file DuckDB cannot read is never
    opened for writing. ``write=False``: open for reading only (no schema created or changed)."""

    def __init__(self, path: Path, write: bool = True) -> None:
        self.path = path
        self.write_mode = write
        self._reader: duckdb.DuckDBPyConnection | None = None
        self._spill: Path | None = None
        if path.exists():
            self._probe()
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._writing() as db:
                db.execute(SCHEMA + OWNERS)
                self._check_columns(db)
        self._mark_interrupted()

    # ---- connections ---------------------------------------------------------------------------
    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                db = duckdb.connect(str(self.path), read_only=read_only)
                db.execute("SET TimeZone = 'UTC'")
                # DuckDB draws a progress bar on stdout for a query past 2 s: in the middle of
                # `results --format json`, at the largest runs.
                db.execute("SET enable_progress_bar = false")
                return db
            except duckdb.IOException as e:
                if "lock" in str(e).lower() and time.monotonic() < deadline:
                    time.sleep(0.05)  # another benchfleet process is in its (short) turn
                    continue
                raise self._error(e) from None
            except duckdb.Error as e:
                raise self._error(e) from None

    def _error(self, e: BaseException) -> StoreError:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        return StoreError(f"{self.path}: cannot use this results store: {first}. It was left as it is; "
                          "move it away (or set BENCHFLEET_HOME) to start a new one")

    def _probe(self) -> None:
        """Read every table once, read-only: a damaged or foreign file fails here, before any write."""
        db = self._connect(read_only=True)
        try:
            tables = [r[0] for r in db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()]
            for table in tables:
                db.execute(f'SELECT count(*) FROM "{table}"').fetchall()
        except duckdb.Error as e:
            raise self._error(e) from None
        finally:
            db.close()

    def _check_columns(self, db: duckdb.DuckDBPyConnection) -> None:
        """Schema drift (a store from another version) fails now, not after benchmarking."""
        expected = duckdb.connect()
        try:
            expected.execute(SCHEMA + OWNERS)
            want = _columns(expected)
        finally:
            expected.close()
        have = _columns(db)
        missing = [f"{table}.{col}" for table, cols in want.items() for col in cols
                   if col not in have.get(table, set())]
        if missing:
            raise StoreError(f"{self.path}: this results store lacks columns {', '.join(missing[:10])} "
                             "(written by another benchfleet version). It was left as it is; move it away "
                             "(or set BENCHFLEET_HOME) to start a new one")

    @property
    def db(self) -> duckdb.DuckDBPyConnection:
        """The read connection (opened on first use; an empty in-memory store when there is no file)."""
        if self._reader is None:
            if self.path.exists():
                self._reader = self._connect(read_only=True)
                _READERS.setdefault(self.path.resolve(), weakref.WeakSet()).add(self)
                self._spill = Path(tempfile.gettempdir()) / f"benchfleet-duckdb-{os.getpid()}-{id(self):x}"
                self._reader.execute(f"SET memory_limit = '{READ_MEMORY_LIMIT}'")
                self._reader.execute("SET temp_directory = ?", [str(self._spill)])
                if not self.write_mode:
                    _overlay_later_schema(self._reader)
            else:
                self._reader = duckdb.connect()
                self._reader.execute("SET TimeZone = 'UTC'")
                self._reader.execute(SCHEMA + OWNERS)
        return self._reader

    @contextmanager
    def _writing(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One short write transaction on its own connection, closed at once."""
        if not self.write_mode:
            raise StoreError(f"{self.path}: opened for reading only")
        self._close_reader()  # its own too when that was the empty in-memory store of a file not yet there
        for store in list(_READERS.get(self.path.resolve(), ())):
            store._close_reader()
        db = self._connect(read_only=False)
        try:
            db.execute("BEGIN")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except duckdb.Error as e:
            raise self._error(e) from None
        finally:
            db.close()

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

    def close(self) -> None:
        self._close_reader()

    def _mark_interrupted(self) -> None:
        """Runs still 'running' whose process is gone end as 'interrupted' (in the file when it can
        be written, else as read)."""
        try:
            # A cloud run's copy is no local process's: a copy loaded while the run was running stays as
            # the cloud said it was (and is loaded again next time), never 'interrupted'.
            running = self._dicts("SELECT r.run_id, o.host, o.pid, o.started FROM runs r "
                                  "LEFT JOIN run_owners o USING (run_id) WHERE r.status = 'running' "
                                  "AND r.run_id NOT IN (SELECT run_id FROM cloud_copies)")
        except duckdb.CatalogException:  # read-only, from before owners were recorded (or no runs table)
            try:
                running = self._dicts("SELECT run_id, NULL AS host, NULL AS pid, NULL AS started FROM runs "
                                      "WHERE status = 'running'")
            except duckdb.CatalogException:
                running = []
        stale = [r["run_id"] for r in running if not _owner_alive(r["host"], r["pid"], r["started"])]
        self._interrupted = set(stale)
        if stale and self.write_mode:
            with self._writing() as db:
                db.executemany("UPDATE runs SET status = 'interrupted', ended_at = ?, message = ? "
                               "WHERE run_id = ? AND status = 'running'",
                               [[datetime.now(UTC), INTERRUPTED, run_id] for run_id in stale])
            self._interrupted = set()

    # ---- runs --------------------------------------------------------------------------------
    def create_run(self, run_id: str, name: str, spec: dict[str, Any], mode: str,
                   estimated_cost_usd: float | None) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT INTO runs (run_id, name, spec, status, mode, started_at, estimated_cost_usd) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?)",
                [run_id, name, json.dumps(spec), mode, datetime.now(UTC), estimated_cost_usd])
            db.execute("INSERT OR REPLACE INTO run_owners VALUES (?, ?, ?, ?)",
                       [run_id, socket.gethostname(), os.getpid(), _process_start(os.getpid())])

    def finish_run(self, run_id: str, status: str, message: str | None = None,
                   actual_cost_usd: float | None = None) -> None:
        with self._writing() as db:
            db.execute("UPDATE runs SET status = ?, message = ?, ended_at = ?, actual_cost_usd = ? "
                       "WHERE run_id = ?", [status, message, datetime.now(UTC), actual_cost_usd, run_id])

    def set_machine(self, run_id: str, machine: dict[str, Any]) -> None:
        with self._writing() as db:
            db.execute("UPDATE runs SET machine = ? WHERE run_id = ?", [json.dumps(machine), run_id])

    def delete_run(self, run_id: str) -> None:
        """Remove a run and all its rows (before loading a fresh copy of it)."""
        with self._writing() as db:
            _delete_run(db, run_id)

    def replace_cloud_copy(self, copy: CloudCopy) -> None:
        """A cloud run loaded from its raw output, in place of any earlier copy, in one transaction: the
        store holds the whole copy or the one before, never half of one (a copy is only recorded as a
        copy, see ``cloud_copy``, with all its rows)."""
        running = copy.cloud_status.upper() == "RUNNING"
        with self._writing() as db:
            _delete_run(db, copy.run_id)
            db.execute(
                "INSERT INTO runs (run_id, name, spec, status, mode, started_at, ended_at, message, "
                "estimated_cost_usd, actual_cost_usd) VALUES (?, ?, ?, ?, 'aws', ?, ?, ?, ?, ?)",
                [copy.run_id, copy.name, json.dumps(copy.spec), copy.cloud_status.lower(),
                 copy.started_at or datetime.now(UTC), None if running else copy.ended_at or datetime.now(UTC),
                 f"loaded from {copy.source} while the run was running: partial until it is loaded again"
                 if running else None, copy.estimated_cost_usd, copy.actual_cost_usd])
            for fp in copy.output.fingerprints:
                _insert_target(db, copy.run_id, fp.target_id, fp.repetition, {"kind": "aws"}, fp)
            _insert_output(db, copy.output)
            db.execute("INSERT INTO cloud_copies VALUES (?, ?, ?, ?, ?)",
                       [copy.run_id, copy.source, copy.cloud_status.upper(), copy.raw_files, datetime.now(UTC)])

    def cloud_copy(self, run_id: str) -> dict[str, Any] | None:
        """What ``replace_cloud_copy`` recorded of the run (source, cloud_status, raw_files, loaded_at), None
        when the store holds no whole copy of it (never loaded, or by a version that did not record it)."""
        rows = self._dicts("SELECT c.* FROM cloud_copies c JOIN runs r USING (run_id) WHERE c.run_id = ?",
                           [run_id])
        return rows[0] if rows else None

    def delete_target(self, run_id: str, target_id: str) -> None:
        """Remove one target's rows from a run (an import into the run that failed half-way)."""
        with self._writing() as db:
            for table in ("samples", "status_samples", "step_summaries", "cloud_metrics", "targets"):
                db.execute(f"DELETE FROM {table} WHERE run_id = ? AND target_id = ?", [run_id, target_id])

    def set_spec(self, run_id: str, spec: dict[str, Any]) -> None:
        """Replace a run's spec (an import adds a target to an existing run)."""
        with self._writing() as db:
            db.execute("UPDATE runs SET spec = ? WHERE run_id = ?", [json.dumps(spec), run_id])

    def runs(self) -> list[dict[str, Any]]:
        return self._as_interrupted(self._dicts(
            "SELECT run_id, name, status, mode, started_at, ended_at, estimated_cost_usd, "
            "actual_cost_usd, message, coalesce(json_extract_string(spec, '$.trial.label'), "
            "json_extract_string(spec, '$.variant.label')) AS trial "
            "FROM runs ORDER BY started_at DESC"))

    def _as_interrupted(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows of runs found interrupted in a store opened read-only (it could not record that)."""
        for row in rows:
            if row.get("run_id") in self._interrupted and row.get("status") == "running":
                row.update(status="interrupted", message=INTERRUPTED)
        return rows

    def run(self, run_id: str) -> dict[str, Any]:
        rows = self._dicts("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not rows and not run_id.strip():  # the empty prefix of every id: `report ""` took the only run
            raise RunNotFound(f"no run {run_id!r}: give a run id (or a unique prefix of one)")
        if not rows:
            # Unique prefixes are accepted: run ids are long.
            rows = self._dicts("SELECT * FROM runs WHERE starts_with(run_id, ?) ORDER BY started_at DESC",
                               [run_id])
            if len(rows) != 1:
                raise RunNotFound(f"no run {run_id!r}" if not rows else
                                  f"{run_id!r} matches {len(rows)} runs; give more of the id")
        row = self._as_interrupted(rows)[0]
        row["spec"] = json.loads(row["spec"])
        row["machine"] = json.loads(row["machine"]) if row.get("machine") else None
        return row

    # ---- rows --------------------------------------------------------------------------------
    def add_target(self, run_id: str, target_id: str, repetition: int, meta: dict[str, Any],
                   fingerprint: Fingerprint | None) -> None:
        with self._writing() as db:
            _insert_target(db, run_id, target_id, repetition, meta, fingerprint)

    def add_output(self, output: AgentOutput) -> None:
        """Insert samples and step summaries (in one transaction, so a step is there whole or not)."""
        with self._writing() as db:
            _insert_output(db, output)

    # ---- reads -------------------------------------------------------------------------------
    def targets(self, run_id: str) -> list[dict[str, Any]]:
        return self._dicts("SELECT * FROM targets WHERE run_id = ? ORDER BY target_id, repetition", [run_id])

    def summaries(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._dicts("SELECT * FROM step_summaries WHERE run_id = ? "
                           "ORDER BY target_id, variant, threads, repetition, block, step", [run_id])
        for row in rows:
            for column in ("settings", "latency_percentiles_ms", "tx_per_s"):
                if isinstance(row.get(column), str):
                    row[column] = json.loads(row[column])
        return rows

    def samples(self, run_id: str, phase: str | None = None) -> list[dict[str, Any]]:
        return [row for batch in self.sample_batches(run_id, phase) for row in batch]

    def sample_batches(self, run_id: str, phase: str | None = None,
                       rows: int = 50_000) -> Iterator[list[dict[str, Any]]]:
        """A run's samples in order, a batch of rows at a time: a 24 h soak of 200 targets is 17M
        rows, which as one list of dicts would not fit in the memory the store's reads are held to."""
        query = "SELECT * FROM samples WHERE run_id = ?"
        params: list[Any] = [run_id]
        if phase:
            query += " AND phase = ?"
            params.append(phase)
        cursor = self.db.execute(query + " ORDER BY target_id, repetition, time", params)
        names = [d[0] for d in cursor.description]
        while batch := cursor.fetchmany(rows):
            yield [dict(zip(names, row, strict=True)) for row in batch]

    def status_batches(self, run_id: str, rows: int = 50_000) -> Iterator[list[dict[str, Any]]]:
        """A run's status rows (every source, counter and reading) in order, a batch at a time."""
        cursor = self.db.execute("SELECT * FROM status_samples WHERE run_id = ? "
                                 "ORDER BY target_id, variant, repetition, time, source, counter", [run_id])
        names = [d[0] for d in cursor.description]
        while batch := cursor.fetchmany(rows):
            yield [dict(zip(names, row, strict=True)) for row in batch]

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self._dicts(sql, params)

    # ---- calibrations ------------------------------------------------------------------------
    def replace_calibration(self, spec_name: str, fingerprint: str, machine: dict[str, Any],
                            run_ids: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
        """A spec's calibration on the machine ``fingerprint`` names: one row per thread count (each a
        :func:`benchfleet.stats.resolution.components` result with ``threads``), replacing any before."""
        now = datetime.now(UTC)
        with self._writing() as db:
            db.execute("DELETE FROM calibrations WHERE spec_name = ? AND fingerprint = ?", [spec_name, fingerprint])
            for r in rows:
                db.execute("INSERT INTO calibrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [spec_name, fingerprint, int(r["threads"]), now, json.dumps(machine, sort_keys=True),
                            json.dumps(list(run_ids)), r["runs"], r["repetitions"], r["blocks"], r["sd_block"],
                            r["sd_repetition"], r["sd_run"], r["sd_repetition_total"], r["sd_paired"]])

    def calibration(self, spec_name: str, fingerprint: str) -> list[dict[str, Any]]:
        """The stored calibration of ``spec_name`` on this machine, one row per thread count ([] if none)."""
        return self._dicts("SELECT * FROM calibrations WHERE spec_name = ? AND fingerprint = ? ORDER BY threads",
                           [spec_name, fingerprint])

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A statement that writes, in its own short transaction (``query`` only reads)."""
        with self._writing() as db:
            db.execute(sql, list(params))

    def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """Several writing statements on one connection, in one short transaction."""
        return self._writing()

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@dataclass(frozen=True)
class CloudCopy:
    """A cloud run as its raw output rebuilds it here (``DuckDBStore.replace_cloud_copy``)."""

    run_id: str
    name: str
    spec: dict[str, Any]
    cloud_status: str  # the execution's status when it was loaded: RUNNING, SUCCEEDED, FAILED...
    source: str  # where the raw output was read: s3://<bucket>/runs/<run id>/
    raw_files: int
    output: AgentOutput  # every raw file's rows and fingerprints together
    started_at: datetime | None = None  # when the run started in the cloud (else: now)
    ended_at: datetime | None = None
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None


def _delete_run(db: duckdb.DuckDBPyConnection, run_id: str) -> None:
    for table in ("samples", "status_samples", "step_summaries", "cloud_metrics", "targets", "run_owners",
                  "cloud_copies", "runs"):
        db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])


def _insert_target(db: duckdb.DuckDBPyConnection, run_id: str, target_id: str, repetition: int,
                   meta: dict[str, Any], fingerprint: Fingerprint | None) -> None:
    fp = fingerprint.model_dump() if fingerprint else {}
    layout = fp.get("storage_layout")
    values = {"run_id": run_id, "target_id": target_id, "repetition": repetition, **meta,
              **{k: fp.get(k) for k in _FINGERPRINT_COLUMNS}, "recorded_at": fp.get("time"),
              "storage_layout": json.dumps(layout, sort_keys=True) if layout else None}
    columns = list(values)
    db.execute(f"INSERT OR REPLACE INTO targets ({', '.join(columns)}) "
               f"VALUES ({', '.join('?' * len(columns))})", [values[c] for c in columns])


def _insert_output(db: duckdb.DuckDBPyConnection, output: AgentOutput) -> None:
    _insert(db, "samples", _SAMPLE_COLUMNS, output.samples)
    _insert(db, "status_samples", _STATUS_COLUMNS, output.status)
    _insert(db, "step_summaries", _SUMMARY_COLUMNS, output.summaries, key=_SUMMARY_KEY)


def _insert(db: duckdb.DuckDBPyConnection, table: str, columns: list[str],
            rows: Sequence[Sample | StepSummary | StatusSample], key: Sequence[str] = ()) -> None:
    """Rows in one statement: each column's values bound as one list, cast to the column's type and
    unnested side by side (executemany ran the statement once per row: ~1 s for one agent file's
    ~1,450 rows). With ``key`` (the table's primary key), a row replaces the stored one with its key,
    and of rows with the same key the last one is kept, as one statement per row left it."""
    if not rows:
        return
    if key:
        rows = list({tuple(getattr(r, k) for k in key): r for r in rows}.values())
    types = dict(db.execute("SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_schema = 'main' AND table_name = ?", [table]).fetchall())
    verb = "INSERT OR REPLACE" if key else "INSERT"
    db.execute(f"{verb} INTO {table} ({', '.join(columns)}) "
               f"SELECT {', '.join(f'unnest(?::{types[c]}[])' for c in columns)}",
               [[_value(getattr(r, c)) for r in rows] for c in columns])


def _value(value: Any) -> Any:
    """A JSON column's value as its text (DuckDB would take a dict for a STRUCT)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


# The tables and columns the write path adds to a store an earlier version wrote (SCHEMA's
# CREATE TABLE IF NOT EXISTS and ALTER TABLE ... ADD COLUMN IF NOT EXISTS).
_ADDED_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)")


def _overlay_later_schema(reader: duckdb.DuckDBPyConnection) -> None:
    """A store an earlier version wrote, read without writing to it (``write=False``: a read-only
    home, or `results` before the next run migrates it): what later versions added is read as the
    migration would fill it, through temporary objects of this connection that shadow the file's
    (a table added later: empty; a column added later: its default, NULL or ''). The file is not
    changed. Other drift is left to fail as it does when writing (``_check_columns``)."""
    have = _columns(reader)
    (catalog,) = reader.execute("SELECT current_database()").fetchone() or ("",)
    expected = duckdb.connect()
    try:
        expected.execute(SCHEMA + OWNERS)
        declared = {table: sql for table, sql in expected.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
        columns: dict[str, list[tuple[str, str, str | None]]] = {}
        for table, column, data_type, default in expected.execute(
                "SELECT table_name, column_name, data_type, column_default FROM information_schema.columns "
                "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall():
            columns.setdefault(table, []).append((column, data_type, default))
    finally:
        expected.close()
    added = {(table, column) for table, column in _ADDED_COLUMN.findall(SCHEMA)}
    for table, sql in declared.items():
        if table not in have:
            reader.execute(sql.replace("CREATE TABLE", "CREATE TEMPORARY TABLE", 1))
            continue
        missing = [c for c, _, _ in columns[table] if c not in have[table] and (table, c) in added]
        if not missing:
            continue
        select = ", ".join(f'"{c}"' if c in have[table] else f'CAST({default or "NULL"} AS {data_type}) AS "{c}"'
                           for c, data_type, default in columns[table]
                           if c in have[table] or c in missing)
        reader.execute(f'CREATE TEMPORARY VIEW "{table}" AS SELECT {select} FROM "{catalog}".main."{table}"')


def _columns(db: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for table, column in db.execute("SELECT table_name, column_name FROM information_schema.columns "
                                    "WHERE table_schema = 'main'").fetchall():
        out.setdefault(table, set()).add(column)
    return out


INTERRUPTED = "interrupted: the benchfleet process running it ended before the run did"


@contextmanager
def open_store(home: Path, write: bool = True) -> Iterator[DuckDBStore]:
    """The store of ``home``; ``write=False`` for commands that only read (they then work on a
    read-only home and never change the file)."""
    store = DuckDBStore(home / "benchfleet.duckdb", write=write)
    try:
        yield store
    finally:
        store.close()
