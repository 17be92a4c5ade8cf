"""The local DuckDB store under faults (issue 13): readable while a run writes, readable on a
read-only home, a damaged file never written into, a run whose process died marked interrupted,
schema drift refused before anything is benchmarked."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO

from benchfleet.local.store import DuckDBStore, StoreError
from benchfleet.workload.records import parse_agent_lines

OUTPUT = parse_agent_lines((REPO / "tests" / "fixtures" / "agent" / "t0001.jsonl").read_text())
RUN = OUTPUT.samples[0].run_id


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, BENCHFLEET_HOME=str(home), PYTHONPATH=str(REPO / "lambdas"))
    return subprocess.run([sys.executable, "-m", "benchfleet.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def filled(home: Path) -> Path:
    store = DuckDBStore(home / "benchfleet.duckdb")
    store.create_run(RUN, "fixture", {"name": "fixture"}, "local", 0.0)
    store.add_output(OUTPUT)
    store.finish_run(RUN, "succeeded")
    store.close()
    return home / "benchfleet.duckdb"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_other_commands_read_while_a_run_holds_the_store_open(tmp_path: Path) -> None:
    writer = DuckDBStore(tmp_path / "benchfleet.duckdb")  # what `benchfleet run` holds for the whole run
    writer.create_run("live-1", "live", {"name": "live"}, "local", 0.0)
    result = cli(tmp_path, "runs", "--format", "json")  # before: "Could not set lock on file"
    assert result.returncode == 0, result.stderr
    assert [(r["run_id"], r["status"]) for r in json.loads(result.stdout)] == [("live-1", "running")]
    writer.add_output(OUTPUT)  # and the run writes on afterwards
    writer.finish_run("live-1", "succeeded")
    writer.close()


def test_a_write_waits_out_a_reader_instead_of_failing(tmp_path: Path) -> None:
    path = filled(tmp_path)
    script = textwrap.dedent(f"""
        import sys, time, duckdb
        db = duckdb.connect({str(path)!r}, read_only=True)
        db.execute("SELECT count(*) FROM samples").fetchall()
        print("reading", flush=True)
        time.sleep(2)
        db.close()
    """)
    reader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
    started = time.monotonic()
    store = DuckDBStore(path)
    store.finish_run(RUN, "succeeded", "written after the reader let go")
    assert time.monotonic() - started > 0.5  # it waited for the reader
    assert store.run(RUN)["message"] == "written after the reader let go"
    store.close()
    reader.wait(timeout=30)


@pytest.fixture
def read_only_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    filled(home)
    mounted = subprocess.run(["mount", "--bind", str(home), str(home)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.strip()}")
    try:
        remount = subprocess.run(["mount", "-o", "remount,bind,ro", str(home)], capture_output=True, text=True)
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        with pytest.raises(OSError):
            (home / "probe").write_text("x")
        yield home
    finally:
        subprocess.run(["umount", str(home)], check=False)


def test_read_commands_work_on_a_read_only_home(read_only_home: Path) -> None:
    before = digest(read_only_home / "benchfleet.duckdb")
    runs = cli(read_only_home, "runs", "--format", "json")
    assert runs.returncode == 0, runs.stderr
    assert [r["run_id"] for r in json.loads(runs.stdout)] == [RUN]
    results = cli(read_only_home, "results", RUN, "--format", "json")
    assert results.returncode == 0, results.stderr
    assert json.loads(results.stdout)["steps"][0]["step"] == "t0001"
    assert digest(read_only_home / "benchfleet.duckdb") == before


def test_reading_an_absent_store_creates_nothing(tmp_path: Path) -> None:
    result = cli(tmp_path / "nothing-here", "runs", "--format", "json")
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stderr
    assert not (tmp_path / "nothing-here").exists()


@pytest.mark.parametrize("damage", ["truncated-half", "truncated-header", "empty", "garbage", "flipped"])
def test_a_damaged_store_is_never_written_into(tmp_path: Path, damage: str) -> None:
    path = filled(tmp_path)
    data = path.read_bytes()
    if damage == "truncated-half":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "truncated-header":
        path.write_bytes(data[:100])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    else:  # the file's header checksum no longer matches
        path.write_bytes(data[:4096] + bytes(b ^ 0xFF for b in data[4096:8192]) + data[8192:])
    before = digest(path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "s", "workload": {"name": "w", "test": "oltp_read_only",
                                                             "threads": [1], "duration_s": 1},
                                    "targets": [{"id": "a", "kind": "local"}]}))
    for args in (["runs"], ["results", RUN], ["import", str(tmp_path / "none.log"), "--target", "x"],
                 ["run", str(spec)]):
        result = cli(tmp_path, *args)
        assert result.returncode in (1, 2), (args, result.stdout, result.stderr)
        if args[0] != "import":  # import refuses the missing log first
            assert str(path) in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
        assert digest(path) == before, args
    assert not (tmp_path / "servers").exists() or not list((tmp_path / "servers").iterdir())


def test_a_run_whose_process_died_is_marked_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "benchfleet.duckdb"
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from benchfleet.local.store import DuckDBStore
        store = DuckDBStore(Path({str(path)!r}))
        store.create_run("dead-1", "dead", {{"name": "dead"}}, "local", 0.0)
        os._exit(9)  # killed mid-run: no finish_run, no clean-up
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO / "lambdas"))
    assert subprocess.run([sys.executable, "-c", script], env=env, check=False).returncode == 9
    # a live run of this very process is left alone
    mine = DuckDBStore(path)
    mine.create_run("live-1", "live", {"name": "live"}, "local", 0.0)
    mine.close()
    before = digest(path)
    reader = DuckDBStore(path, write=False)  # a read-only open shows it, and writes nothing
    assert {r["run_id"]: r["status"] for r in reader.runs()} == {"dead-1": "interrupted", "live-1": "running"}
    reader.close()
    assert digest(path) == before
    result = cli(tmp_path, "runs", "--format", "json")  # the next command records it
    status = {r["run_id"]: (r["status"], r["message"]) for r in json.loads(result.stdout)}
    assert status["dead-1"][0] == "interrupted" and "ended before the run did" in status["dead-1"][1]
    store = DuckDBStore(path)
    assert store.run("dead-1")["status"] == "interrupted" and store.run("dead-1")["ended_at"] is not None
    assert store.run("live-1")["status"] == "running"
    store.close()


def test_schema_drift_fails_the_run_before_anything_starts(tmp_path: Path) -> None:
    path = filled(tmp_path)
    import duckdb

    db = duckdb.connect(str(path))
    db.execute("ALTER TABLE step_summaries DROP COLUMN tps_cv")
    db.close()
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "s", "workload": {"name": "w", "test": "oltp_read_only",
                                                             "threads": [1], "duration_s": 1},
                                    "targets": [{"id": "a", "kind": "local"}]}))
    started = time.monotonic()
    result = cli(tmp_path, "run", str(spec))
    assert result.returncode == 1, result.stdout + result.stderr
    assert str(path) in result.stderr and "step_summaries.tps_cv" in result.stderr, result.stderr
    assert time.monotonic() - started < 30
    assert not (tmp_path / "servers").exists() or not list((tmp_path / "servers").iterdir())
    with pytest.raises(StoreError):
        DuckDBStore(path)
    runs = DuckDBStore(path, write=False).runs()
    assert [r["run_id"] for r in runs] == [RUN]  # no new run row, none left "running"


# What an earlier version's store lacks: tables and columns SCHEMA adds since (the write path migrates them).
EARLIER = {"tables": ("status_samples", "cloud_metrics"),
           "columns": (("samples", "variant"), ("samples", "block"), ("samples", "arrived_s"),
                       ("samples", "rows_in_table"), ("step_summaries", "variant"), ("step_summaries", "block"),
                       ("step_summaries", "settings"), ("targets", "prices"), ("targets", "cluster"),
                       ("targets", "storage_layout"))}


def test_a_store_an_earlier_version_wrote_is_read_without_writing_to_it(tmp_path: Path) -> None:
    """`results` and `report` open the store for reading only, so they cannot migrate it: before, they
    failed on the first table or column added since ("Table with name status_samples does not exist",
    "Referenced column variant not found")."""
    current = cli(filled(tmp_path / "current").parent, "results", RUN, "--format", "json")
    assert current.returncode == 0, current.stderr
    path = filled(tmp_path / "earlier")
    import duckdb

    db = duckdb.connect(str(path))
    for table in EARLIER["tables"]:
        db.execute(f"DROP TABLE {table}")
    for table, column in EARLIER["columns"]:
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.close()
    before = digest(path)
    results = cli(path.parent, "results", RUN, "--format", "json")
    assert results.returncode == 0, results.stderr
    earlier, now = json.loads(results.stdout), json.loads(current.stdout)
    assert earlier["steps"] == now["steps"]  # the figures the earlier store holds, as a current one shows them
    # and what it cannot hold is said, not made up: no status per second, interval lengths rounded
    assert earlier["status"]["counters"] == [] and now["status"]["counters"]
    assert [s["interval_lengths"] for s in earlier["statistics"]["rows"][0]["steps"]] == ["rounded"]
    report = cli(path.parent, "report", RUN, "-o", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    assert digest(path) == before  # read, never written
    DuckDBStore(path).close()  # a write open migrates it, as before
    assert json.loads(cli(path.parent, "results", RUN, "--format", "json").stdout)["steps"] == now["steps"]


def test_concurrent_writers_each_get_their_turn(tmp_path: Path) -> None:
    path = tmp_path / "benchfleet.duckdb"
    DuckDBStore(path).close()
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from benchfleet.local.store import DuckDBStore
        store = DuckDBStore(Path({str(path)!r}))
        for i in range(10):
            store.create_run(f"w{{sys.argv[1]}}-{{i}}", "w", {{}}, "local", 0.0)
            store.runs()
        store.close()
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO / "lambdas"))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)], env=env, stderr=subprocess.PIPE, text=True)
             for n in range(3)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.communicate()[1]
    assert len(DuckDBStore(path, write=False).runs()) == 30


def test_no_progress_bar_is_drawn_on_stdout(tmp_path: Path) -> None:
    """DuckDB draws one on stdout once a query passes 2 s (the 17M-sample soak's did, inside the JSON
    of `results --format json`): every connection of the store has it off."""
    store = DuckDBStore(filled(tmp_path))
    try:
        setting = "SELECT current_setting('enable_progress_bar') AS on"
        assert store.query(setting) == [{"on": False}]
        with store.transaction() as db:
            assert db.execute(setting).fetchone() == (False,)
    finally:
        store.close()


def test_a_write_through_one_store_lets_go_of_another_stores_reads_in_the_process(tmp_path: Path) -> None:
    """DuckDB refuses a read-write connection to a file this process holds read-only (another store of
    it reading, as a test or `results --remote` beside `report` does): the write goes through and the
    reader reads on, seeing it."""
    path = filled(tmp_path)
    reader = DuckDBStore(path, write=False)
    writer = DuckDBStore(path)
    try:
        assert [r["run_id"] for r in reader.runs()] == [RUN]
        writer.create_run("after-1", "after", {"name": "after"}, "local", 0.0)
        assert sorted(r["run_id"] for r in reader.runs()) == sorted([RUN, "after-1"])
    finally:
        writer.close()
        reader.close()
