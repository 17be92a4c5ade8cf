"""The agent's go-tpc step on go-tpc's real output (tests/fixtures/go-tpc-1.0.7) replayed by a stand-in
binary: the records it writes, the step it fails, and the one binary it runs (never one a job names)."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import pytest
from tests.agent_modules import imported, load
from tests.conftest import FIXTURES

from benchfleet.workload.records import parse_agent_lines

agent, emitting = load("benchfleet_agent"), load("benchfleet_emit")
# The run main() calls (the one to patch) and the JobError it raises.
running, jobcheck = imported("benchfleet_run"), imported("benchfleet_job")
OURS = FIXTURES / "go-tpc-1.0.7"
JOB = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "tpcc",
       "step": {"name": "t0001", "kind": "measure", "threads": 2, "duration_s": 6}, "report_interval_s": 2,
       "gotpc": {"test": "tpcc", "warehouses": 1, "percentile": 99}, "db": {"password": "pw"}}


def replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           *texts: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    """Run the step against a go-tpc that prints ``texts`` (and records its argv)."""
    out = tmp_path / "out.log"
    out.write_text("".join(texts))
    fake = tmp_path / "go-tpc-amd64"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/argv\ncat {out}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(running, "gotpc_binary", lambda: str(fake))
    code = agent.main(["--job-json", json.dumps(JOB)])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return code, records, (tmp_path / "argv").read_text().split()


def test_a_step_writes_a_sample_per_interval_and_go_tpcs_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, records, argv = replay(tmp_path, monkeypatch, capsys, (OURS / "run.log").read_text())
    assert code == 0, records
    assert argv[-1] == "run" and argv[argv.index("--time") + 1] == "6s" and "--ignore-error" in argv
    assert argv[argv.index("--interval") + 1] == "2s" and argv[argv.index("--threads") + 1] == "2"
    out = parse_agent_lines("\n".join(json.dumps(r) for r in records))
    assert [s.second for s in out.samples] == [2.0, 4.0] and [s.tpmc for s in out.samples] == [8765.2, 8778.8]
    assert all(s.qps is None and s.latency_pct == 99 and s.tx_per_s for s in out.samples)
    assert out.samples[0].latency_ms == 16.3  # New-Order's 99th of the first interval
    (summary,) = out.summaries
    assert summary.tpmc == 9021.6 and summary.transactions == 897 and summary.latency_pct_ms == 19.9
    assert summary.latency_percentiles_ms == {"50": 6.3, "90": 10.5, "95": 12.1, "99": 19.9, "99.9": 30.4,
                                              "max": 41.9}
    assert summary.samples == 2 and summary.samples_expected == 2  # 5.97 s at 2 s reports


@pytest.mark.parametrize(("log", "fragment"), [
    ("run_killed.log", "go-tpc was stopped (terminated)"),
    ("run_errors.log", "execute run failed"),
])
def test_a_stopped_or_failed_run_is_a_failed_step(log: str, fragment: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, records, _ = replay(tmp_path, monkeypatch, capsys, (OURS / log).read_text())
    assert code == emitting.EXIT_FAILED
    assert records[-1]["type"] == "error" and fragment in records[-1]["message"]
    assert not any(r["type"] == "summary" for r in records)


def test_a_line_no_go_tpc_prints_ends_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, records, _ = replay(tmp_path, monkeypatch, capsys, "x" * (1 << 20) + "y\n", (OURS / "run.log").read_text())
    assert code == emitting.EXIT_FAILED
    assert records[-1]["message"] == "go-tpc printed a line of more than 1,048,576 characters: not go-tpc output"
    assert not any(r["type"] in ("sample", "summary") for r in records)


def test_a_deadlock_is_counted_and_the_step_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    deadlock = ("[2026-12-07 02:29:09] execute run failed, err Error 1213: Deadlock found when trying to get "
                "lock; try restarting transaction\n")
    code, records, _ = replay(tmp_path, monkeypatch, capsys, deadlock, (OURS / "run.log").read_text())
    assert code == 0 and records[-1]["type"] == "summary" and records[-1]["tolerated_errors"] == 1


def test_the_binary_is_the_bundles_for_this_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    with pytest.raises(jobcheck.JobError, match="no go-tpc for riscv64 in the agent bundle"):
        running.gotpc_binary()
