"""Every workload of the library runs, at smoke scale, against a real MariaDB through the real agent.

- Every sysbench workload file runs all its plan steps (prepare, warm-up, sweep) at smoke scale through
  ``workloads/agent/benchfleet_agent.py`` (job JSON on stdin), custom Lua scripts included, and gives
  samples and a summary per step. Workloads share one server per cnf, so every cnf of the library is
  also started on MariaDB 10.11 once (the one no workload is paired with, relaxed, by a server
  test_local_faults starts anyway; go-tpc's, whose one warehouse takes minutes to load, run in
  test_local_gotpc). Insert scripts add exactly one row per event: the table's
  COUNT(*) equals prepared rows + the summaries' transactions (the iiBench "rows inserted" axis).
- The primary-key-order variants (comparisons/local-pk-order.yaml) show random-key inserts slower
  than sequential ones where they must be: a 51 MB buffer pool the random-key table outgrows.
- A cloud spec with a Lua workload runs through `benchfleet run --scale smoke --local`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO
from tests.per_second import assert_per_second

from benchfleet.local.mariadb import Connection, LocalServer
from benchfleet.local.runner import state_dir as run_state_dir
from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import make_plan, workload_steps
from benchfleet.plan.scale import smoke_workload
from benchfleet.spec.loading import load_spec, load_workload
from benchfleet.spec.targets import LocalTarget
from benchfleet.spec.workload import Workload
from benchfleet.workload.records import AgentOutput, StepSummary, parse_agent_lines, sample_phase

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs the sysbench binary"),
]

WORKLOADS = REPO / "workloads"
AGENT = WORKLOADS / "agent" / "benchfleet_agent.py"
SMOKE_MEMORY_MB = 256
# Tables each insert script creates (see workloads/lua/*.lua), for the row-count check.
INSERT_TABLES = {"lua/insert_pk_seq.lua": "seqpk", "lua/insert_pk_random.lua": "randpk",
                 "lua/iibench.lua": "purchases"}


def _cnf_of_workloads() -> dict[str, list[str]]:
    """Each workload on the cnf a spec of the library pairs it with (else default); every cnf once."""
    paired: dict[str, str] = {}
    for path in sorted((WORKLOADS / "comparisons").glob("*.yaml")):
        loaded = load_spec(path)
        paired.setdefault(loaded.workload.name, loaded.spec.targets[0].mysql_config)
    groups: dict[str, list[str]] = {p.stem: [] for p in sorted((WORKLOADS / "mysql").glob("*.cnf"))}
    for path in sorted(WORKLOADS.glob("*.yaml")):
        # go-tpc loads a whole warehouse (minutes on 2 cores): test_local_gotpc runs it, once.
        if load_workload(path.stem, WORKLOADS).tool == "sysbench":
            groups[paired.get(path.stem, "default")].append(path.stem)
    return groups


GROUPS = _cnf_of_workloads()


def test_every_cnf_of_the_library_is_started_once() -> None:
    """A cnf with workloads is started by test_every_workload_runs_at_smoke_scale; the one without
    (relaxed) by a fault test's server (test_local_faults.UNPAIRED_CNF), not by a server of its own
    that would run nothing."""
    from tests.integration.test_local_faults import UNPAIRED_CNF

    assert [cnf for cnf, workloads in GROUPS.items() if not workloads] == [UNPAIRED_CNF]


def run_agent(job: dict[str, Any]) -> AgentOutput:
    done = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job),
                          capture_output=True, text=True, timeout=300, check=False)
    output = parse_agent_lines(done.stdout, f"agent {job['step']['name']}")
    assert done.returncode == 0 and not output.errors, (
        f"{job['workload']} {job['step']['name']}: {output.errors[:1]} {done.stderr[-2000:]}")
    return output


def run_workload(workload: Workload, conn: Connection, config_hash: str, target_id: str,
                 state_dir: Path | None = None,
                 after_prepare: Callable[[], None] | None = None) -> list[StepSummary]:
    """Every plan step of the workload, in order, as the local runner would; the step summaries.
    ``after_prepare`` is called once the data set is loaded, before the first measured step."""
    summaries: list[StepSummary] = []
    for step in workload_steps(workload):
        job = agent_job(run_id="smoke", target_id=target_id, repetition=1, workload=workload, step=step,
                        db=conn.as_job(), config_hash=config_hash,
                        state_dir=str(state_dir) if state_dir else None)
        output = run_agent(job)
        if step.kind == "prepare":
            assert len(output.fingerprints) == 1
            if after_prepare is not None:
                after_prepare()
            continue
        assert len(output.summaries) == 1, f"{workload.name} {step.name}: no summary"
        summary = output.summaries[0]
        assert summary.events > 0 and summary.tps > 0
        # Not one line per second (a starved sysbench skips reports): the exact accounting of them.
        assert_per_second([s.second for s in output.samples], step.duration_s, summary.model_dump(),
                          every=workload.report_interval_s)
        # The agent timed every report's arrival, and a measure step's first report is its ramp.
        assert all(s.phase == sample_phase(step.kind, i) and s.threads == step.threads and s.arrived_s is not None
                   for i, s in enumerate(output.samples))
        summaries.append(summary)
    return summaries


def query(conn: Connection, sql: str) -> list[list[str]]:
    client = shutil.which("mariadb") or shutil.which("mysql")
    assert client is not None
    done = subprocess.run([client, "-h", conn.host, "-P", str(conn.port), "-u", conn.user, "-N", "-B",
                           conn.database, "-e", sql], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "MYSQL_PWD": conn.password})
    return [line.split("\t") for line in done.stdout.splitlines()]


@pytest.mark.parametrize("cnf", [c for c, workloads in GROUPS.items() if workloads])
def test_every_workload_runs_at_smoke_scale(cnf: str, bf_home: Path) -> None:
    workloads = [smoke_workload(load_workload(name, WORKLOADS)) for name in GROUPS[cnf]]
    server = LocalServer(bf_home, f"smoke-{cnf}", (WORKLOADS / "mysql" / f"{cnf}.cnf").read_text(),
                         SMOKE_MEMORY_MB, cnf_name=f"{cnf}.cnf")
    state = run_state_dir(bf_home, "smoke")  # the agent writes only into a run's state/<run id>
    with server as conn:
        for workload in workloads:
            summaries = run_workload(workload, conn, server.config_hash, f"smoke-{cnf}", state)
            assert [s.step for s in summaries][-len(workload.threads):] == [
                f"t{t:04d}" for t in workload.threads]
            prefix = INSERT_TABLES.get(workload.test)
            if prefix is None:
                continue
            # One event = one row: what the samples' tps add up to is what the tables hold.
            rows = sum(int(query(conn, f"SELECT COUNT(*) FROM {prefix}{i}")[0][0])
                       for i in range(1, workload.tables + 1))
            assert rows == workload.tables * workload.table_size + sum(s.transactions for s in summaries)
            # The agent's own count (benchfleet_rows.py), what every sample's rows_in_table came from.
            kept = state / "smoke" / f"smoke-{cnf}" / "rep-1" / "sbtest" / f"{workload.name}.rows.json"
            assert json.loads(kept.read_text()) == {"rows": rows}
            if workload.name.startswith("iibench"):
                indexes = query(conn, f"SELECT COUNT(DISTINCT index_name) - 1 FROM information_schema.statistics"
                                      f" WHERE table_schema = 'sbtest' AND table_name = '{prefix}1'")
                assert int(indexes[0][0]) == workload.options["secondary_indexes"]
                # Range partitions as the seed made them: partitions of partition_rows, then one open.
                parts = query(conn, "SELECT partition_description FROM information_schema.partitions WHERE "
                                    f"table_schema = 'sbtest' AND table_name = '{prefix}1' "
                                    "ORDER BY partition_ordinal_position")
                size, n = workload.options["partition_rows"], workload.options["partitions"]
                assert [p[0] for p in parts] == [str((i + 1) * size) for i in range(n)] + ["MAXVALUE"]


def test_random_primary_keys_insert_slower_than_sequential_ones(
        bf_home: Path, record_property: Any) -> None:
    """comparisons/local-pk-order.yaml's two variants as written: 300,000 rows, a 64 MB server whose
    80% pool (51 MB) holds the sequential table as loaded but not the random-key one once it grows.

    Sizes are read when they matter: the sequential table right after its load (how many rows the
    step then appends depends on the machine's speed: CI's faster machine took it past the pool,
    which costs sequential inserts nothing since they only touch the index's right edge), the
    random-key table after its step (the random inserts are what outgrow the pool)."""
    results: dict[str, StepSummary] = {}
    sizes: dict[str, float] = {}
    pool_mb = 0.0
    loaded = load_spec(WORKLOADS / "comparisons" / "local-pk-order.yaml")
    target = loaded.spec.targets[0]
    assert isinstance(target, LocalTarget) and target.memory_mb <= 128
    assert make_plan(loaded).wall_s < 120

    def size_mb(conn: Connection, table: str) -> float:
        query(conn, f"ANALYZE TABLE {table}")
        rows = query(conn, "SELECT (data_length + index_length) / 1048576 FROM information_schema.tables"
                           f" WHERE table_schema = 'sbtest' AND table_name = '{table}'")
        return float(rows[0][0])

    for order, prefix in (("seq", "seqpk"), ("random", "randpk")):
        server = LocalServer(bf_home, f"pk-{order}", (WORKLOADS / "mysql" / f"{target.mysql_config}.cnf")
                             .read_text(), target.memory_mb)
        with server as conn:
            def loaded_size(conn: Connection = conn, order: str = order, prefix: str = prefix) -> None:
                sizes[f"{order}-loaded"] = size_mb(conn, f"{prefix}1")
            summaries = run_workload(loaded.workload_of(order), conn, server.config_hash, target.id,
                                     after_prepare=loaded_size)
            results[order] = summaries[-1]
            pool_mb = int(query(conn, "SELECT @@innodb_buffer_pool_size")[0][0]) / 2**20
            sizes[order] = size_mb(conn, f"{prefix}1")
    ratio = results["seq"].tps / results["random"].tps
    report = (f"sequential {results['seq'].tps:.0f} inserts/s, random {results['random'].tps:.0f} inserts/s: "
              f"random is {ratio:.2f}x slower (p95 {results['seq'].latency_pct_ms} vs "
              f"{results['random'].latency_pct_ms} ms); buffer pool {pool_mb:.0f} MB, tables as loaded "
              f"{sizes['seq-loaded']:.0f} MB (sequential) vs {sizes['random-loaded']:.0f} MB (random), after "
              f"the step {sizes['seq']:.0f} vs {sizes['random']:.0f} MB")
    print(report)
    record_property("pk_order", report)
    # The precondition of the effect: the sequential data set as loaded fits the pool, the random-key
    # table does not once its step has inserted into it.
    assert sizes["random"] > pool_mb > sizes["seq-loaded"], report
    assert ratio > 1.5, report


def test_a_cloud_spec_with_a_lua_workload_runs_locally_at_smoke_scale(
        bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchfleet.cli.main import main
    from benchfleet.local.store import open_store

    code = main(["run", str(WORKLOADS / "comparisons" / "aurora-pk-order.yaml"), "--scale", "smoke",
                 "--local"])
    assert code == 0, capsys.readouterr()
    with open_store(bf_home) as store:
        (run,) = store.runs()
        assert run["status"] == "succeeded"
        summaries = store.summaries(run["run_id"])
    assert {(s["target_id"], s["variant"]) for s in summaries} == {("aurora-r6g-large", "seq"),
                                                                   ("aurora-r6g-large", "random")}
    assert any(s["phase"] == "measure" and s["tps"] > 0 for s in summaries)
    # Marked wherever it is shown, and never part of the spec's history.
    assert "smoke scale" in run["trial"] and "stand-ins for aurora-r6g-large" in run["trial"]
    out = capsys.readouterr().out
    assert "not the spec's result" in out
    assert main(["results", run["run_id"], "--format", "csv"]) == 0
    csv_text = capsys.readouterr().out
    assert csv_text.splitlines()[0].endswith(",trial") and "smoke scale" in csv_text
    assert main(["results", "--history", run["name"]]) == 2
    # The per-second export: the rows in the table of this insert workload (counted by the agent),
    # and the local server's data directory disk beside every second (issue 26).
    assert main(["results", run["run_id"], "--per-second", "--format", "json"]) == 0
    seconds = [r for r in json.loads(capsys.readouterr().out) if r["phase"] == "measure"]
    # Each variant counts its own table (sbtest, sbtest_random), growing in the order it was measured.
    assert {r["variant"] for r in seconds} == {"seq", "random"}
    for variant in ("seq", "random"):
        rows = [r["rows_in_table"] for r in sorted(seconds, key=lambda r: r["time"]) if r["variant"] == variant]
        assert all(n is not None for n in rows) and rows == sorted(rows) and rows[0] > 0
    sys.path.insert(0, str(WORKLOADS / "agent"))
    import benchfleet_diskstats

    on_disk = benchfleet_diskstats.device_of(str(bf_home))[0] is not None  # not on a tmpfs home
    assert all((r["disk_writes_per_s"] is not None) is on_disk for r in seconds)
