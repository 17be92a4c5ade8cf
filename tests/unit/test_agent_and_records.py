"""The agent's pieces that need no server, and the one reader of its JSON lines."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.agent_modules import imported, load
from tests.conftest import REPO

from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import PlanStep
from benchfleet.spec.workload import Workload
from benchfleet.workload.mysqlcnf import CnfError, render
from benchfleet.workload.records import RecordError, parse_agent_lines
from benchfleet.workload.sysbench import parse_output

AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"
FIXTURES = REPO / "tests" / "fixtures" / "sysbench-1.0.20"
jobcheck = imported("benchfleet_job")  # the JobError the agent's own modules raise
sampling, running = load("benchfleet_sample"), load("benchfleet_run")

BASE = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w", "step": "t0002", "phase": "measure",
        "threads": 2}


def sample(second: float, tps: float, steal: float | None = 1.0) -> str:
    return json.dumps({"type": "sample", **BASE, "time": 1_700_000_000 + second, "second": second, "tps": tps,
                       "qps": tps * 20, "reads_per_s": 1, "writes_per_s": 1, "other_per_s": 1, "latency_ms": 2.5,
                       "latency_pct": 95, "errors_per_s": 0, "reconnects_per_s": 0, "cpu_steal_pct": steal})


SUMMARY = json.dumps({"type": "summary", **BASE, "time": 1_700_000_010, "total_time_s": 3.0, "transactions": 300,
                      "tps": 100.0, "queries": 6000, "qps": 2000.0, "reads": 4200, "writes": 1200, "other": 600,
                      "ignored_errors": 0, "errors_per_s": 0, "reconnects": 0, "reconnects_per_s": 0,
                      "events": 300, "latency_min_ms": 1, "latency_avg_ms": 2, "latency_max_ms": 9,
                      "latency_pct": 95, "latency_pct_ms": 3.1})


def test_cpu_percentages_from_proc_stat_deltas() -> None:
    before = [100, 0, 50, 800, 10, 0, 0, 40]
    after = [160, 0, 70, 880, 20, 0, 0, 50]  # +60 user, +20 system, +80 idle, +10 iowait, +10 steal = 180
    pct = sampling.cpu_percentages(before, after)
    assert pct == {"cpu_steal_pct": round(1000 / 180, 3), "cpu_user_pct": round(6000 / 180, 3),
                   "cpu_system_pct": round(2000 / 180, 3), "cpu_iowait_pct": round(1000 / 180, 3)}
    assert sampling.cpu_percentages(None, after)["cpu_steal_pct"] is None
    assert sampling.cpu_percentages(after, after)["cpu_user_pct"] is None


def test_proc_stat_is_read_here() -> None:
    values = sampling.read_cpu_times()
    assert values is not None and len(values) == 8 and sum(values) > 0


def test_cpu_times_reads_the_open_file_again_each_time() -> None:
    cpu = sampling.CpuTimes()
    try:
        first = cpu.read()
        sum(range(200_000))  # let a tick pass on some CPU
        second = cpu.read()
    finally:
        cpu.close()
    assert first is not None and second is not None and len(second) == 8
    assert all(b >= a for a, b in zip(first, second, strict=True)) and sum(second) >= sum(first)
    assert cpu.read() is None  # closed
    assert sampling.CpuTimes("/nonexistent/stat").read() is None


def test_summary_gets_jitter_and_mean_steal_from_its_seconds() -> None:
    # The first report is the step's ramp: counted in the accounting, left out of the figures.
    out = parse_agent_lines("\n".join([sample(1, 70, 9.0), sample(2, 90, 1.0), sample(3, 110, 3.0),
                                       SUMMARY.replace('"total_time_s": 3.0', '"total_time_s": 4.0')]))
    (s,) = out.summaries
    assert s.samples == 3 and s.steal_mean_pct == 2.0
    assert s.tps_cv == pytest.approx(14.1421356 / 100, abs=1e-6)  # stdev(90,110)=14.14, mean 100
    assert s.tps == 100.0  # sysbench's own figure, not the mean of seconds
    # total time 4 s, report interval 1 s: four samples expected, three present, the last silenced.
    assert (s.samples_expected, s.covered_s, s.missing_final) == (4, 3.0, True)


def test_samples_carry_the_seconds_they_cover_and_jitter_is_weighted_by_them() -> None:
    # Reports at 1, 3 and 4 s: the second sample stands for two seconds (the first is the ramp).
    out = parse_agent_lines("\n".join([sample(1, 100), sample(3, 50), sample(4, 100), SUMMARY.replace(
        '"total_time_s": 3.0', '"total_time_s": 4.0')]))
    assert [x.interval_s for x in out.samples] == [1, 2, 1]
    assert [x.phase for x in out.samples] == ["ramp", "measure", "measure"]
    (s,) = out.summaries
    assert (s.samples, s.samples_expected, s.covered_s, s.missing_final) == (3, 4, 4.0, False)
    # after the ramp: weighted mean 200/3 over 3 s; weighted variance (2 (50 - m)^2 + (100 - m)^2) / 2
    m = 200 / 3
    assert s.tps_cv == pytest.approx(math.sqrt((2 * (50 - m) ** 2 + (100 - m) ** 2) / 2) / m, abs=1e-6)


def test_the_report_interval_comes_with_the_summary_not_from_a_guess() -> None:
    # --report-interval=2 on a loaded host: the lengths [2, 1, 3] would not say it; sysbench's header does,
    # and the parser keeps it with the summary the agent writes.
    text = (FIXTURES / "run_ri.log").read_text().replace("every 1 second(s)", "every 2 second(s)")
    summary = parse_output(text).summary
    assert summary is not None and summary.report_interval_s == 2
    record = json.loads(SUMMARY.replace('"total_time_s": 3.0', '"total_time_s": 6.0'))
    record["report_interval_s"] = summary.report_interval_s
    out = parse_agent_lines("\n".join([sample(2, 100), sample(3, 100), sample(6, 100), json.dumps(record)]))
    assert (out.summaries[0].samples, out.summaries[0].samples_expected) == (3, 3)


def test_the_summary_keeps_the_step_latency_distribution_and_refuses_one_no_step_has() -> None:
    # What the agent writes for a step run with --histogram=on: the parser's distribution of the step.
    parsed = parse_output((FIXTURES / "run_hist_intervals.log").read_text()).summary
    assert parsed is not None
    record = {**json.loads(SUMMARY), "latency_percentiles_ms": parsed.latency_percentiles_ms}
    (s,) = parse_agent_lines(json.dumps(record)).summaries
    assert s.latency_percentiles_ms == {"50": 1.824, "90": 5.986, "95": 16.706, "99": 38.942, "99.9": 65.645,
                                        "max": 77.84}
    for bad, fragment in ((dict(parsed.latency_percentiles_ms, **{"99": 1.0}), "must not fall"),
                          ({"50": 1.0, "95": 2.0}, "keys must be"),
                          (dict(parsed.latency_percentiles_ms, max=float("inf")), "from 0 to")):
        with pytest.raises(RecordError, match=fragment):
            parse_agent_lines(json.dumps({**record, "latency_percentiles_ms": bad}), "raw.jsonl")


@pytest.mark.parametrize(("text", "fragment"), [
    ("not json", ":1:"),
    ('{"type": "sample"}', ":1: run_id"),
    ('{"type": "bogus"}', "unknown record type"),
    ("[1, 2]", "not an object"),
])
def test_malformed_agent_output_names_the_line(text: str, fragment: str) -> None:
    with pytest.raises(RecordError) as e:
        parse_agent_lines(sample(1, 1) + "\n" + text, "raw.jsonl")
    assert "raw.jsonl:2" in str(e.value) and fragment.replace(":1", "") in str(e.value)


def test_job_carries_workload_options_and_nothing_reserved() -> None:
    workload = Workload(name="w", test="oltp_read_only", options={"db_ps_mode": "disable"}, rand_type="pareto")
    step = PlanStep(index=2, name="t0008", kind="measure", threads=8, duration_s=30)
    job = agent_job(run_id="r", target_id="a", repetition=2, workload=workload, step=step,
                    db={"host": "h", "port": 1, "user": "u", "password": "p", "database": "d"})
    assert job["step"] == {"name": "t0008", "kind": "measure", "threads": 8, "duration_s": 30}
    opts = job["sysbench"]["options"]
    assert opts["db-ps-mode"] == "disable" and opts["rand-type"] == "pareto" and opts["percentile"] == 95
    conn = running.connect(job)
    try:
        argv = running.sysbench_argv(job, "run", {"threads": 8, "time": 30}, conn)
        # Options the agent sets are never taken from a job: refused, not silently overridden.
        for smuggled in ("config-file", "mysql-password", "mysql_host"):
            bad = {**job, "sysbench": {**job["sysbench"], "options": {**opts, smuggled: "x"}}}
            with pytest.raises(jobcheck.JobError, match=smuggled):
                running.sysbench_argv(bad, "run", {}, conn)
    finally:
        conn.close()
    assert argv[:2] == ["sysbench", "oltp_read_only"] and argv[-1] == "run"
    assert "--threads=8" in argv and "--mysql-host=h" in argv and "--mysql-ssl=off" in argv
    # The password is in the option file.
    assert f"--config-file={conn.sysbench_config}" in argv
    assert not any(a.startswith("--mysql-password") for a in argv)


def on_path(fake: Path) -> dict[str, str]:
    """The environment that puts ``fake`` (a script named sysbench) first on PATH: the agent runs the
    host's sysbench, never a binary a job names."""
    return {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}


def run_agent(job: object, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, object]]]:
    proc = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job), capture_output=True,
                          text=True, timeout=60, env=env)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_bad_job_is_an_error_record_and_exit_2() -> None:
    code, records = run_agent({"step": {"kind": "dance"}})
    assert code == 2 and records[-1]["type"] == "error" and "step.kind" in records[-1]["message"]


def test_sysbench_failure_is_an_error_record_never_a_silent_zero(tmp_path: Path) -> None:
    fake = tmp_path / "sysbench"
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\necho 'FATAL: error 2013: Lost connection to MySQL server'\n"
                    "exit 0\n")
    fake.chmod(0o755)
    job = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w",
           "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 1},
           "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {}}
    code, records = run_agent(job, on_path(fake))
    assert code == 3
    assert records[-1]["type"] == "error" and "Lost connection" in records[-1]["message"]
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\nexit 0\n")
    code, records = run_agent(job, on_path(fake))
    assert code == 3 and "no final summary" in records[-1]["message"]


def test_a_line_no_sysbench_prints_ends_the_step_with_its_error_not_a_traceback(tmp_path: Path) -> None:
    fake = tmp_path / "sysbench"  # 1 MiB and a byte more, without a line break, then a second of waiting
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\nhead -c 1048577 /dev/zero | tr '\\0' x\nsleep 1\n")
    fake.chmod(0o755)
    job = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w",
           "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 1},
           "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {}}
    proc = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job), capture_output=True,
                          text=True, timeout=60, env=on_path(fake))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout.splitlines()[-1])
    assert error["type"] == "error" and error["stage"] == "run"
    assert error["message"] == "sysbench printed a line of more than 1,048,576 characters: not sysbench output"


def test_cnf_renders_memory_shares_and_reports_engine_only_options() -> None:
    source = "[mysqld]\ninnodb_buffer_pool_size = 80%\nskip-log-bin\n[mysqld:mysql]\ninnodb_dedicated_server=OFF\n"
    r = render(source, "mariadb-10.11", 1024 * 1024 * 1024)
    assert r.options == [("innodb_buffer_pool_size", "819M"), ("skip_log_bin", "")]
    assert r.skipped == ["innodb_dedicated_server (only for mysql)"] and "not applied on mariadb" in r.text
    assert ("innodb_dedicated_server", "OFF") in render(source, "mysql-8.0", 2**30).options
    for bad in ("max_connections = 50%\n", "innodb_buffer_pool_size = 95%\n", "[client]\nx=1\n"):
        with pytest.raises(CnfError):
            render("[mysqld]\n" + bad, "mariadb", 2**30)


def test_a_second_signal_during_clean_up_is_quiet(tmp_path: Path) -> None:
    """Ctrl-C reaches the agent and the runner then sends SIGTERM too: one interrupt, no traceback."""
    import contextlib
    import signal
    import time

    fake = tmp_path / "sysbench"
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\nexec sleep 30\n")
    fake.chmod(0o755)
    job = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w",
           "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 30},
           "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {}}
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job))
    proc = subprocess.Popen([sys.executable, str(AGENT), "--job", str(job_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=on_path(fake))
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    # A burst of SIGTERMs covers every moment of the agent's clean-up and exit.
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGTERM)
        time.sleep(0.0005)
    out, err = proc.communicate(timeout=30)
    # 130 from the interrupt; -15 when a SIGTERM lands while Python is finalising (handlers are
    # back to default then): both quiet. What must never happen is a traceback.
    assert proc.returncode in (130, -signal.SIGTERM), err
    assert "Traceback" not in err
    assert json.loads(out.splitlines()[-1])["message"] == "interrupted"


class _Variables:
    """A connection whose SHOW GLOBAL VARIABLES lists these rows."""

    def __init__(self, rows: list[list[str]]) -> None:
        self.rows = rows

    def query(self, sql: str) -> tuple[list[list[str]], None]:
        return self.rows, None


def test_a_variant_setting_no_server_variable_shows_is_recorded_and_said_unverified() -> None:
    """skip_log_bin (or a plugin's load option) has no variable of its own to read back: the step's
    settings recorded its effective value as a plain null, never saying it went unverified."""
    job = {"settings": {"variant": "nobinlog", "method": "restart",
                        "requested": {"innodb_flush_log_at_trx_commit": "2", "skip_log_bin": ""}}}
    settings = running.step_settings(job, _Variables([["innodb_flush_log_at_trx_commit", "2"],
                                                      ["version", "10.11.19-MariaDB"]]))
    assert settings["differences"] == [] and settings["unverified"] == ["skip_log_bin"]
    assert running.settings_notice(settings) == ("variant nobinlog: no server variable shows skip_log_bin: applied "
                                                 "as asked, its effect not verified")
    verified = running.step_settings({"settings": {**job["settings"], "requested": {"sync_binlog": "0"}}},
                                     _Variables([["sync_binlog", "0"]]))
    assert verified["unverified"] == [] and running.settings_notice(verified) is None
