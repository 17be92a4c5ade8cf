"""Local mode end to end against a real MariaDB server and the real sysbench binary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO
from tests.per_second import assert_per_second

from benchfleet.cli.main import main

pytestmark = pytest.mark.integration

DURATION = 6


def write_spec(tmp_path: Path, duration: int = DURATION, threads: list[int] | None = None, **target: object) -> Path:
    spec = {"name": "it", "repetitions": 1,
            "workload": {"name": "it", "test": "oltp_read_only", "tables": 1, "table_size": 2000, "warmup_s": 2,
                         "threads": threads or [2], "duration_s": duration},
            "targets": [{"id": "solo", "kind": "local", "memory_mb": 256, **target}]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def mariadb_processes(home: Path) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "mariadbd" in line and str(home) in line]


def test_a_short_run_has_a_sample_for_every_second_and_leaves_nothing(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(write_spec(tmp_path, cpus=[0]))]) == 0
    printed = capsys.readouterr().out
    assert main(["results", "it-", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (step,) = [s for s in doc["steps"] if s["phase"] == "measure"]
    assert step["tps"] > 0 and step["threads"] == 2
    # The finished step's line printed the tps the results compare (ramp left out), sysbench's labelled.
    ((stored,),) = [row["steps"] for row in doc["statistics"]["rows"]]
    assert f"{stored['tps']:,.1f} tps ({step['summary_tps']:,.1f} incl. ramp), " in printed, printed
    assert step["tps"] == round(stored["tps"], 2)  # the export's tps is the table's (its ramp left out)
    # The step's latency distribution from sysbench's histogram: its own percentile among it (printed to
    # two decimals, the bucket to three), and in the comparison the median over the one repetition.
    dist = step["latency_percentiles_ms"]
    assert list(dist) == ["50", "90", "95", "99", "99.9", "max"] and dist["50"] <= dist["95"] <= dist["max"]
    assert dist["95"] == pytest.approx(step["latency_pct_ms"], abs=0.005) and step["latency_pct"] == 95
    (row,) = doc["comparison"]
    assert row["latency_percentiles_ms"] == dist
    assert main(["results", "it-", "--percentiles"]) == 0  # the table, with p50/p99/p99.9 on request
    table = capsys.readouterr().out
    assert "p99.9 ms" in table and f"{dist['99.9']:,.2f}" in table, table
    (target,) = doc["targets"]
    assert target["sysbench_version"].startswith("sysbench 1.0") and "MariaDB" in target["engine_version"]
    assert target["config_hash"] and target["cpus"] == "0" and target["vcpus"] >= 1
    raw = sorted((bf_home / "raw").rglob("*.jsonl"))
    assert [p.name for p in raw] == ["prepare.jsonl", "t0002.jsonl", "warmup.jsonl"]
    # Every report sysbench printed (on one pinned CPU of a loaded machine it skips some), in order,
    # and the step's accounting of them exact: the file, the summary and the results agree.
    seconds = [json.loads(line)["second"] for line in (raw[1]).read_text().splitlines()
               if '"type":"sample"' in line]
    assert_per_second(seconds, DURATION, step)
    # steal/user/system/iowait sampled for each of those seconds
    samples = [json.loads(line) for line in raw[1].read_text().splitlines() if '"type":"sample"' in line]
    assert all(s["cpu_user_pct"] is not None and s["cpu_steal_pct"] is not None for s in samples)
    assert list((bf_home / "servers").iterdir()) == []
    assert mariadb_processes(bf_home) == []


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_killing_a_run_midway_cleans_up(bf_home: Path, tmp_path: Path, how: str) -> None:
    spec = write_spec(tmp_path, duration=60)
    env = dict(os.environ, BENCHFLEET_HOME=str(bf_home), PYTHONPATH=str(REPO / "lambdas"))
    # SIGINT at its default, as in a terminal: a shell's `&` job (no job control) inherits it ignored,
    # and the CLI, like any Unix program, then keeps ignoring Ctrl-C.
    proc = subprocess.Popen([sys.executable, "-m", "benchfleet.cli", "run", str(spec)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    raw = bf_home / "raw"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not list(raw.rglob("t0002.jsonl")):
        time.sleep(0.2)
    assert list(raw.rglob("t0002.jsonl")), "the measure step never started"
    time.sleep(2)
    assert mariadb_processes(bf_home), "a server should be running mid-run"
    # Ctrl-C in a terminal reaches the whole foreground process group.
    os.killpg(proc.pid, getattr(signal, how)) if how == "SIGINT" else os.kill(proc.pid, getattr(signal, how))
    output = proc.communicate(timeout=90)[0]
    if how == "SIGKILL":
        # The kernel takes the server down with its owner; the next command removes the data dir.
        deadline = time.monotonic() + 30
        while mariadb_processes(bf_home) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert main(["validate", str(spec)]) == 0
        assert list((bf_home / "servers").iterdir()) != []  # validate does not touch servers
        from benchfleet.local.mariadb import reap_leftovers

        assert reap_leftovers(bf_home)
    else:
        assert proc.returncode in (130, 1), output
        assert "Traceback" not in output
        assert main(["runs", "--format", "json"]) == 0
    assert mariadb_processes(bf_home) == []
    assert list((bf_home / "servers").iterdir()) == []


def test_an_agent_failure_fails_the_run_and_still_cleans_up(bf_home: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    data = yaml.safe_load(spec.read_text())
    data["workload"]["test"] = "lua/no-such-script.lua"
    spec.write_text(yaml.safe_dump(data))
    assert main(["run", str(spec)]) == 2  # refused before anything starts: the script does not exist
    data["workload"]["test"] = "oltp_read_only"
    # An engine the server does not have: sysbench's CREATE TABLE fails (NO_ENGINE_SUBSTITUTION).
    data["workload"]["options"] = {"mysql_storage_engine": "nosuchengine"}
    spec.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert main(["run", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "failed" in out and "prepare" in out
    assert mariadb_processes(bf_home) == [] and list((bf_home / "servers").iterdir()) == []
