"""Local runs under faults, against a real MariaDB and sysbench: a stopped server or agent, a full
disk, benchfleet killed while its server is stuck. Each ended in a hang, a stalled step stored as a
success, or a server outliving its owner before issue 13.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO

from benchfleet.local.watchdog import process_state

pytestmark = pytest.mark.integration


def write_spec(tmp_path: Path, duration: int = 10, tables: int = 1, table_size: int = 2000,
               mysql_config: str = "default") -> Path:
    spec = {"name": "faults", "repetitions": 1,
            "workload": {"name": "faults", "test": "oltp_read_only", "tables": tables, "table_size": table_size,
                         "warmup_s": 0, "threads": [2], "duration_s": duration},
            "targets": [{"id": "solo", "kind": "local", "memory_mb": 256, "mysql_config": mysql_config}]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def start_run(home: Path, spec: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, BENCHFLEET_HOME=str(home), PYTHONPATH=str(REPO / "lambdas"))
    return subprocess.Popen([sys.executable, "-m", "benchfleet.cli", "run", str(spec)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def wait_for(what: str, check: object, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def server_pid(home: Path) -> int | None:
    for record in (home / "servers").glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            pid = json.loads(record.read_text()).get("server_pid")
            if pid:
                return int(pid)
    return None


def samples_in(home: Path, step: str) -> int:
    return sum(f.read_text().count('"type":"sample"') for f in (home / "raw").rglob(f"{step}.jsonl"))


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, BENCHFLEET_HOME=str(home), PYTHONPATH=str(REPO / "lambdas"))
    return subprocess.run([sys.executable, "-m", "benchfleet.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@contextlib.contextmanager
def resumed_at_end(*pids: int) -> Iterator[None]:
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def assert_nothing_left(home: Path, proc: subprocess.Popen[str]) -> None:
    assert list((home / "servers").iterdir()) == []
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert not [line for line in out.splitlines() if "mariadbd" in line and str(home) in line]


def the_run(home: Path) -> dict[str, object]:
    result = cli(home, "runs", "--format", "json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    return dict(run)


@pytest.mark.parametrize("whom", ["server", "agent"])
def test_a_stopped_server_or_agent_fails_the_step_with_the_reason(bf_home: Path, tmp_path: Path,
                                                                  whom: str) -> None:
    proc = start_run(bf_home, write_spec(tmp_path, duration=10))
    wait_for("the measure step's first samples", lambda: samples_in(bf_home, "t0002") >= 2)
    if whom == "server":
        pid = server_pid(bf_home)
    else:
        children = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(proc.pid)], capture_output=True,
                                  text=True).stdout
        pid = next(int(line.split()[0]) for line in children.splitlines() if "benchfleet_agent" in line)
    assert pid
    started = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    with resumed_at_end(pid):
        assert the_run(bf_home)["status"] == "running"  # the store is readable while the run goes on
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 1, output
    assert "stopped for" in output and "t0002" in output, output
    assert time.monotonic() - started < 60  # before: still running after 150 s
    run = the_run(bf_home)
    assert run["status"] == "failed" and "stopped for" in str(run["message"])
    result = cli(bf_home, "results", str(run["run_id"]), "--format", "json")
    assert "t0002" not in [s["step"] for s in json.loads(result.stdout)["steps"]]  # not stored
    assert_nothing_left(bf_home, proc)


# The library's cnf that no workload of the library is paired with: started here, on a server this test
# starts anyway, instead of a server of its own in test_workloads_smoke (which starts every other cnf).
UNPAIRED_CNF = "relaxed"


def test_benchfleet_killed_while_its_server_is_stopped_takes_the_server_with_it(bf_home: Path,
                                                                                tmp_path: Path) -> None:
    proc = start_run(bf_home, write_spec(tmp_path, duration=60, mysql_config=UNPAIRED_CNF))
    wait_for("the measure step's first samples", lambda: samples_in(bf_home, "t0002") >= 1)
    pid = server_pid(bf_home)
    assert pid
    # The server measured runs the library's relaxed.cnf as rendered (its settings in its my.cnf).
    (record,) = (bf_home / "servers").glob("*.json")
    rendered = (Path(json.loads(record.read_text())["dir"]) / "my.cnf").read_text()
    assert "innodb_flush_log_at_trx_commit = 2" in rendered and "sync_binlog = 0" in rendered, rendered
    os.kill(pid, signal.SIGSTOP)  # a stopped server never acts on SIGTERM
    with resumed_at_end(pid):
        proc.kill()
        proc.communicate(timeout=30)
        wait_for("the server to die with its owner", lambda: process_state(pid) in (None, "Z"), timeout=10)
    run = the_run(bf_home)  # the next command finds the run's process gone
    assert run["status"] == "interrupted", run


def test_a_full_disk_during_prepare_fails_the_run_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "small"
    home.mkdir()
    # The empty server takes about 126 MB (96 MB of redo log); the binlog and 8 x 60,000 rows do not fit.
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=150m", "tmpfs", str(home)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        proc = start_run(home, write_spec(tmp_path, duration=5, tables=8, table_size=60_000,
                                          mysql_config="durable"))
        try:
            output = proc.communicate(timeout=400)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("benchfleet run hung on a full disk: " + (proc.communicate()[0] or "")[-2000:])
        assert proc.returncode == 1, output
        assert "prepare" in output and "Traceback" not in output, output
        assert_nothing_left(home, proc)
        subprocess.run(["df", "-h", str(home)], check=False)
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)
