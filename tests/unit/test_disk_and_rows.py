"""The data directory's disk per second (benchfleet_diskstats.py) and the rows in an insert
workload's table (benchfleet_rows.py): hand-computed from /proc/diskstats lines and sysbench's
interval lines, then through the agent itself with a stand-in sysbench printing a real log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.agent_modules import AGENT_DIR, load
from tests.conftest import REPO

from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import PlanStep
from benchfleet.spec.workload import ONE_ROW_PER_EVENT, Workload
from benchfleet.workload.records import parse_agent_lines

diskstats: Any = load("benchfleet_diskstats")
rows_module: Any = load("benchfleet_rows")
LOG = REPO / "tests" / "fixtures" / "sysbench-1.0.20" / "run_ri.log"

# major minor name, then: reads merged sectors-read ms-reading writes merged sectors-written ms-writing
# in-flight ms-io weighted-ms (the 11 fields every kernel since 2.6 prints; newer ones add more).
BEFORE = " 259 1 nvme1n1 1000 5 80000 2000 3000 7 240000 9000 0 4000 11000 0 0 0 0\n"
AFTER = " 259 1 nvme1n1 1400 5 88192 2600 3600 9 264576 9900 2 4700 12500 0 0 0 0\n"


def test_disk_rates_are_iostats_figures_over_the_elapsed_time(tmp_path: Path) -> None:
    table = tmp_path / "diskstats"
    stats = diskstats.DiskStats(None, path=str(table))
    stats.device = "nvme1n1"
    times = iter([10.0, 12.0])
    stats.clock = lambda: next(times)
    table.write_text(BEFORE)
    first = stats.read()
    table.write_text(AFTER)
    second = stats.read()
    # Over 2 s: 400 reads, 600 writes; 8192 and 24576 sectors of 512 bytes; 600 + 900 ms for 1000 requests.
    assert diskstats.disk_rates(first, second) == {
        "disk_reads_per_s": 200.0, "disk_writes_per_s": 300.0,
        "disk_read_mib_per_s": round(8192 * 512 / 2**20 / 2, 4),
        "disk_write_mib_per_s": round(24576 * 512 / 2**20 / 2, 4),
        "disk_await_ms": 1.5}
    idle = (first[0] + 1, first[1])  # no request completed: no await, not 0
    assert diskstats.disk_rates(first, idle)["disk_await_ms"] is None
    assert diskstats.disk_rates(second, (13.0, first[1])) == diskstats.EMPTY  # counters went back: a reset
    assert diskstats.disk_rates(None, second) == diskstats.EMPTY


def test_the_data_directory_is_found_on_its_block_device(tmp_path: Path) -> None:
    name, why_not = diskstats.device_of(str(tmp_path))
    st = os.stat(tmp_path)
    table = Path("/proc/diskstats").read_text()
    if name is None:  # a tmpfs or overlay /tmp: said so, by name
        assert why_not and str(tmp_path) in why_not
    else:
        line = next(line.split() for line in table.splitlines() if line.split()[2] == name)
        via_mount = (int(line[0]), int(line[1])) != (os.major(st.st_dev), os.minor(st.st_dev))
        assert why_not is None and (not via_mount or name)
    stats = diskstats.DiskStats(str(tmp_path / "missing"))
    assert stats.device is None and "cannot stat" in str(stats.why_not) and stats.read() is None


def test_rows_count_from_the_prepared_rows_through_every_step(tmp_path: Path) -> None:
    job = {"run_id": "r-1", "target_id": "t", "repetition": 2, "workload": "iibench-pk-only",
           "db": {"database": "sbtest"}, "rows": {"prepared": 1000, "state_dir": str(tmp_path)}}
    counter = rows_module.RowCounter(job)
    counter.prepared_now()
    kept = tmp_path / "r-1" / "t" / "rep-2" / "sbtest" / "iibench-pk-only.rows.json"
    assert json.loads(kept.read_text()) == {"rows": 1000}
    step = rows_module.RowCounter(job)
    step.start()
    # Interval lines at 1, 2 and 4 s (a late report covers two seconds).
    assert [step.sample(1, 850.33), step.sample(2, 1054.22), step.sample(4, 1005.09)] == [
        1850, 2905, round(1000 + 850.33 + 1054.22 + 2 * 1005.09)]
    step.finish(4000, 1000.0)  # the summary's exact transactions replace the running sum
    assert json.loads(kept.read_text()) == {"rows": 5000}
    # Variants on one host: each its own data set (db.database sbtest_<variant>), each its own count.
    other = {**job, "variant": "relaxed", "db": {"database": "sbtest_relaxed"}}
    rows_module.RowCounter(other).prepared_now()
    again = rows_module.RowCounter(job)
    again.start()
    assert again.rows == 5000 and json.loads(kept.read_text()) == {"rows": 5000}
    nothing = rows_module.RowCounter({**job, "repetition": 3})
    nothing.start()  # no prepare on this host for repetition 3: nothing guessed
    assert nothing.sample(1, 100.0) is None
    assert rows_module.RowCounter({**job, "target_id": "../etc"}).path is None
    assert not rows_module.RowCounter({k: v for k, v in job.items() if k != "rows"}).enabled


def test_only_one_row_per_event_workloads_count_rows() -> None:
    step = PlanStep(index=1, name="t0004", kind="measure", threads=4, duration_s=10)
    for test in ONE_ROW_PER_EVENT:
        job = agent_job(run_id="r", target_id="t", repetition=1, step=step, db={},
                        workload=Workload(name="w", test=test, tables=2, table_size=500), state_dir="/s")
        assert job["rows"] == {"prepared": 1000, "state_dir": "/s"}
    oltp = agent_job(run_id="r", target_id="t", repetition=1, step=step, db={}, data_dir="/var/lib/mysql",
                     workload=Workload(name="w", test="oltp_read_write"))
    assert "rows" not in oltp and oltp["data_dir"] == "/var/lib/mysql"


def test_the_agent_samples_the_disk_and_counts_rows_beside_sysbench(tmp_path: Path) -> None:
    fake = tmp_path / "sysbench"
    fake.write_text(f"#!/bin/sh\ncat {LOG}\n")
    fake.chmod(0o755)
    state = tmp_path / "state" / "r"  # a local run's own state folder, state/<run id>: the agent writes only there
    counter = state / "r" / "a" / "rep-1" / "sbtest" / "w.rows.json"
    counter.parent.mkdir(parents=True)
    counter.write_text(json.dumps({"rows": 1000}))
    job = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w",
           "step": {"name": "t0002", "kind": "measure", "threads": 2, "duration_s": 3},
           "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {"database": "sbtest"},
           "data_dir": str(tmp_path), "rows": {"prepared": 1000, "state_dir": str(state)}}
    # The agent runs the host's sysbench (the one on PATH), never a binary a job names.
    proc = subprocess.run([sys.executable, str(AGENT_DIR / "benchfleet_agent.py"), "--job", "-"],
                          input=json.dumps(job), capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = parse_agent_lines(proc.stdout)
    assert [s.rows_in_table for s in out.samples] == [1850, 2905, 3910]  # 1000 + 850.33 + 1054.22 + 1005.09, rounded
    assert json.loads(counter.read_text()) == {"rows": 1000 + 2912}  # the summary's transactions
    on_disk = diskstats.DiskStats(str(tmp_path)).device is not None
    for s in out.samples:  # every figure there, or none with a notice saying why
        figures = [s.disk_reads_per_s, s.disk_writes_per_s, s.disk_read_mib_per_s, s.disk_write_mib_per_s]
        assert all(f is not None and f >= 0 for f in figures) if on_disk else figures == [None] * 4
    assert bool(out.notices) is not on_disk


@pytest.mark.parametrize("field", ["disk_reads_per_s", "disk_write_mib_per_s", "disk_await_ms", "rows_in_table"])
def test_every_store_carries_the_new_per_second_columns(field: str) -> None:
    """One data model in every store: DuckDB, Athena/Glue, both dataset dialects, QuickSight's columns
    (Timestream's records are the Sample's fields themselves)."""
    from benchfleet.aws.store.athena_store import SAMPLE_COLUMNS
    from benchfleet.aws.store.timestream import sample_record
    from benchfleet.local.store import _SAMPLE_COLUMNS, SCHEMA
    from benchfleet.workload.records import Sample

    sql = REPO / "cdk" / "lib" / "sql"
    assert field in _SAMPLE_COLUMNS and field in SCHEMA and field in SAMPLE_COLUMNS
    assert field in {c for c, _ in json.loads((sql / "glue-tables.json").read_text())["tables"]["samples"]}
    assert field in {c for c, _ in json.loads((sql / "datasets.json").read_text())["datasets"]["samples"]["columns"]}
    for dialect in ("athena", "timestream"):
        assert field in (sql / dialect / "samples.sql").read_text()
    row = Sample(run_id="r", target_id="t", repetition=1, workload="w", step="s", phase="measure", threads=1,
                 time="2026-11-24T00:00:00Z", second=1, tps=1, qps=1, reads_per_s=0, writes_per_s=0, other_per_s=0,
                 latency_ms=1, latency_pct=95, errors_per_s=0, reconnects_per_s=0, **{field: 7})
    assert {"Name": field, "Value": "7", "Type": "BIGINT"} in sample_record(row)["MeasureValues"] or \
        {"Name": field, "Value": "7.0", "Type": "DOUBLE"} in sample_record(row)["MeasureValues"]
