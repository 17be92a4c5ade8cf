"""One machine, one benchmark (benchfleet.local.machine): the machine-wide lock of local runs, as a
second process meets it, and the watch that records load and foreign benchmarks. Real processes, a
lock file of the test's own (BENCHFLEET_MACHINE_LOCK), no servers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchfleet.local import machine

REPO = Path(__file__).resolve().parents[2]

HOLD = textwrap.dedent("""
    import sys, time
    from benchfleet.local.machine import machine_lock
    with machine_lock("holder-run"):
        print("held", flush=True)
        time.sleep(float(sys.argv[1]))
""")


def _env(lock: Path, home: Path) -> dict[str, str]:
    return dict(os.environ, BENCHFLEET_MACHINE_LOCK=str(lock), BENCHFLEET_HOME=str(home),
                PYTHONPATH=str(REPO / "lambdas"))


def _holder(env: dict[str, str], seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(seconds)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_refuses_with_no_wait_naming_the_holder(tmp_path: Path) -> None:
    """`run --no-wait` while another process holds the machine: exit 75 before anything starts, naming
    whose run holds it. Before, two local runs at once both ran and both were stored as clean."""
    env = _env(tmp_path / "machine.lock", tmp_path / "home")
    holder = _holder(env, 60)
    try:
        done = subprocess.run([sys.executable, "-m", "benchfleet.cli", "run", "--no-wait",
                               str(REPO / "workloads" / "comparisons" / "demo-durability.yaml")],
                              env=env, capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == machine.EXIT_BUSY, done.stdout + done.stderr
    assert "holder-run" in done.stderr and f"pid {holder.pid}" in done.stderr
    assert not (tmp_path / "home" / "benchfleet.duckdb").exists()  # no run recorded, no server started


def test_a_second_run_waits_saying_for_whom_then_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(tmp_path / "machine.lock", tmp_path / "home")
    monkeypatch.setenv(machine.ENV, env[machine.ENV])
    holder = _holder(env, 1.5)
    said: list[str] = []
    started = time.monotonic()
    try:
        with machine.machine_lock("second", say=said.append, poll_s=0.1):
            waited = time.monotonic() - started
            assert machine.holder(tmp_path / "machine.lock")["run"] == "second"
    finally:
        holder.kill()
        holder.wait()
    assert waited >= 0.5
    assert len(said) == 1 and "waiting for run holder-run" in said[0] and f"pid {holder.pid}" in said[0]


def test_the_lock_is_reentrant_in_one_process_and_released_by_a_killed_holder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI takes it, then the runner again (no self-deadlock); a holder killed with SIGKILL leaves
    the machine free (the kernel drops a flock with its process)."""
    monkeypatch.setenv(machine.ENV, str(tmp_path / "machine.lock"))
    with machine.machine_lock("outer", wait=False), machine.machine_lock("inner", wait=False):
        pass
    holder = _holder(_env(tmp_path / "machine.lock", tmp_path / "home"), 60)
    with pytest.raises(machine.MachineBusy, match="holder-run"), machine.machine_lock("mine", wait=False):
        pass
    holder.kill()
    holder.wait()
    with machine.machine_lock("mine", wait=False):
        pass


def test_the_product_default_is_the_machine_wide_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a path can be given: an empty value is the machine's lock, never none."""
    monkeypatch.setenv(machine.ENV, "")
    assert machine.lock_path() == machine.DEFAULT_PATH


def test_the_watch_finds_a_foreign_sysbench_and_not_its_own(tmp_path: Path) -> None:
    """A process named sysbench that is not this run's (started apart: reparented away from us) is an
    overlapping benchmark; one this process started (as the agent starts sysbench) is not."""
    fake = tmp_path / "sysbench"
    shutil.copy("/bin/sleep", fake)
    own = subprocess.Popen([str(fake), "30"])
    # setsid + a shell that exits at once: the sleeping "sysbench" is no longer our descendant.
    subprocess.run(["setsid", "sh", "-c", f"'{fake}' 30 >/dev/null 2>&1 &"], check=True)
    try:
        deadline = time.monotonic() + 5
        found: list[dict[str, object]] = []
        while time.monotonic() < deadline and not found:
            found = [f for f in machine.foreign_benchmarks() if str(fake) in str(f["command"])]
            time.sleep(0.05)
        assert len(found) == 1 and found[0]["pid"] != own.pid
        with machine.MachineWatch(interval_s=0.05) as watch:
            time.sleep(0.2)
        summary = watch.summary()
        assert [o["pid"] for o in summary["overlapped"] if str(fake) in o["command"]] == [found[0]["pid"]]
        assert summary["load_mean"] is not None and summary["samples"] >= 2
    finally:
        own.kill()
        own.wait()
        for f in machine.foreign_benchmarks():
            if str(fake) in str(f["command"]):
                os.kill(int(str(f["pid"])), 9)
