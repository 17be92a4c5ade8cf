"""The local step watchdog's rules, on real agent output (tests/fixtures/agent: a 240 s step)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import FIXTURES

from benchfleet.local.watchdog import StepWatchdog, deadline_s, kill_group, process_state
from benchfleet.plan.model import PlanStep
from benchfleet.workload.records import AgentOutput, parse_agent_lines
from benchfleet.workload.validation import plan_problem

OUTPUT = parse_agent_lines((FIXTURES / "agent" / "t0001.jsonl").read_text())


def plan_mismatch(step: PlanStep, output: AgentOutput, every: int) -> str | None:
    """The plan check local runs and cloud collect share (benchfleet.workload.validation)."""
    return plan_problem(output, kind=step.kind, duration_s=step.duration_s, report_interval_s=every, step=step.name)


def step(duration: int, kind: str = "measure") -> PlanStep:
    return PlanStep(index=1, name="t0001", kind=kind, threads=1, duration_s=duration)  # type: ignore[arg-type]


def test_output_that_matches_its_plan_passes() -> None:
    assert plan_mismatch(step(240), OUTPUT, 1) is None


def test_a_stalled_then_resumed_step_is_not_a_result() -> None:
    # Before: a 10 s step, its server stopped and resumed, was stored with 152 samples over 152 s.
    reason = plan_mismatch(step(10), OUTPUT, 1)
    assert reason and "for a 10 s step" in reason


def test_too_few_samples_for_the_duration_is_not_a_result() -> None:
    thin = OUTPUT.model_copy(update={"samples": OUTPUT.samples[:200]})
    reason = plan_mismatch(step(240), thin, 1)
    assert reason and "200 per-second samples" in reason


def test_a_step_without_a_final_summary_is_not_a_result() -> None:
    assert plan_mismatch(step(240), OUTPUT.model_copy(update={"summaries": []}), 1) == \
        "sysbench printed no final summary"


def test_deadline_is_the_duration_plus_a_grace() -> None:
    assert deadline_s(step(10)) == 40 and deadline_s(step(600)) == 900
    # A prepare that hangs is stopped a minute past its plan (issue 28 item 8), not at 3x + 300 s.
    assert deadline_s(step(20, "prepare")) == 80 and deadline_s(step(600, "prepare")) == 900


def test_the_watchdog_fires_past_the_deadline_and_on_a_stopped_process(tmp_path: Path) -> None:
    fired: list[str] = []
    with StepWatchdog(60, [], fired.append) as dog:
        assert dog.check(time.monotonic()) is None
        assert "past its deadline of 60 s" in (dog.check(time.monotonic() + 61) or "")
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        os.kill(sleeper.pid, signal.SIGSTOP)
        with StepWatchdog(60, [("the server", sleeper.pid)], fired.append, poll_s=0.1, stopped_after_s=0.5) as dog:
            deadline = time.monotonic() + 10
            while dog.reason is None and time.monotonic() < deadline:
                time.sleep(0.1)
        assert dog.reason and "the server" in dog.reason and "stopped for" in dog.reason
        assert fired == [dog.reason]
    finally:
        kill_group(sleeper.pid, grace_s=2)
        sleeper.wait(timeout=10)
    assert process_state(sleeper.pid) is None


def test_a_disk_full_line_in_the_server_log_fires(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    log.write_text("2026-11-23  3:00:00 0 [Note] old news: Disk is full\n")  # before the step: ignored
    dog = StepWatchdog(60, [], lambda r: None, error_log=log)
    assert dog.check(time.monotonic()) is None
    with log.open("a") as f:
        f.write("2026-11-23  3:00:05 0 [Warning] mariadbd: Disk is full writing './binlog.000001' "
                "(Errcode: 28 \"No space left on device\"). Waiting for someone to free space...\n")
    assert "disk is full" in (dog.check(time.monotonic()) or "")
