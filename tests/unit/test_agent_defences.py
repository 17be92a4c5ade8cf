"""The agent is the last line of defence (issue 28 item 6): whatever job reaches it (a bug upstream,
a hand-made Run Command), it ends with its own error record and exit code, runs only the host's
sysbench and the bundle's Lua scripts, writes nothing a value could smuggle into an option file, and
writes bounded lines. sysbench is a script on PATH that records whether it ran."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO

AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"
RUN_LOG = REPO / "tests" / "fixtures" / "sysbench-1.0.20" / "run_ri.log"


def base_job(**step: object) -> dict[str, Any]:
    return {"run_id": "run-1", "target_id": "t", "repetition": 1, "workload": "w",
            "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 1, **step},
            "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {"password": "pw"}}


@pytest.fixture
def host(tmp_path: Path) -> dict[str, str]:
    """An environment whose sysbench (first on PATH) logs its argv to ``ran`` and prints a real run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sysbench"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/ran\n"
                    f"[ \"$1\" = --version ] && {{ echo 'sysbench 1.0.20'; exit 0; }}\ncat {RUN_LOG}\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def agent(job: object, env: dict[str, str], raw: str | None = None) -> tuple[int, list[dict[str, Any]], str]:
    text = raw if raw is not None else json.dumps(job)
    done = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=text, capture_output=True, text=True,
                          timeout=60, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 64 * 1024 for line in lines)
    return done.returncode, [json.loads(line) for line in lines], done.stderr


def sysbench_ran(tmp_path: Path) -> bool:
    ran = tmp_path / "ran"
    return ran.exists() and any("--version" not in line for line in ran.read_text().splitlines())


@pytest.mark.parametrize(("change", "field"), [
    ({"step": {"name": "t0001", "kind": "measure", "threads": "lots", "duration_s": 1}}, "step.threads"),
    ({"step": {"name": "t0001", "kind": "measure", "threads": 10**9, "duration_s": 1}}, "step.threads"),
    ({"step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": -5}}, "step.duration_s"),
    ({"step": {"kind": "measure", "threads": 1, "duration_s": 1}}, "step.name"),
    ({"repetition": True}, "repetition"),
    ({"report_interval_s": 0}, "report_interval_s"),
    ({"sysbench": {"test": "oltp_read_only", "options": {"rate": [1, 2]}}}, "sysbench.options.rate"),
    ({"sysbench": {"test": "oltp_read_only", "options": {"mysql-dry-run": "on"}}}, "mysql-dry-run"),
    ({"sysbench": {}}, "sysbench.test"),
    ({"db": {"password": "pw", "port": "3306; rm"}}, "db.port"),
    ({"db": ["127.0.0.1"]}, "db must be an object"),
    ({"db": {"password": "pw", "expect_server": "x"}}, "db.expect_server"),
    # The keys of variants, blocks, row counts and disk figures (a traceback, or records labelled
    # {"a": 1}, before).
    ({"variant": {"a": 1}}, "variant"),
    ({"variant": "a\nb"}, "variant"),
    ({"variant": "a", "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 1, "block": "x"}},
     "step.block"),
    ({"variant": "a", "settings": ["x"]}, "settings must be an object"),
    ({"variant": "a", "settings": {"variant": "a", "wait_s": "abc"}}, "settings.wait_s"),
    ({"variant": "a", "settings": {"variant": "a", "requested": [1]}}, "settings.requested"),
    ({"rows": {"prepared": "lots", "state_dir": "/var/lib/benchfleet"}}, "rows.prepared"),
    ({"rows": {"prepared": 5, "state_dir": "../elsewhere"}}, "rows.state_dir"),
    ({"data_dir": 5}, "data_dir"),
    # issue 41 item 7: the agent writes the row count there, so not any folder; a step's records are
    # labelled with its variant and the server runs settings.variant's settings: one variant
    ({"rows": {"prepared": 5, "state_dir": "/etc"}}, "rows.state_dir must be /var/lib/benchfleet/state"),
    ({"rows": {"prepared": 5, "state_dir": "/tmp/state/other-run"}}, "rows.state_dir"),
    ({"variant": "a", "settings": {"variant": "b"}}, "settings.variant 'b' is not the step's variant 'a'"),
    ({"settings": {"variant": "b"}}, "settings.variant 'b' is not the step's variant None"),
    # The server status keys (issue 25): counters go into SQL, sources are connected to.
    ({"status": ["Threads_running"]}, "status must be an object"),
    ({"status": {"counters": ["Threads_running; DROP TABLE t"]}}, "status.counters"),
    ({"status": {"counters": ["Threads_running"], "interval_s": 0}}, "status.interval_s"),
    ({"status": {"counters": [], "sources": [{"name": "n1", "kind": "ssh"}]}}, "status.sources[0].kind"),
    ({"status": {"counters": [], "sources": [{"name": "../n1", "kind": "mysql"}]}}, "status.sources[0].name"),
    ({"status": {"counters": [], "sources": [{"name": "n1", "kind": "mysql", "port": "3306"}]}},
     "status.sources[0].port"),
])
def test_a_job_it_cannot_use_ends_with_its_own_error_record(host: dict[str, str], tmp_path: Path,
                                                            change: dict[str, object], field: str) -> None:
    code, records, _ = agent({**base_job(), **change}, host)
    assert code == 2 and records[-1]["type"] == "error" and records[-1]["stage"] == "job"
    assert field in records[-1]["message"]
    assert not sysbench_ran(tmp_path)


@pytest.mark.parametrize(("raw", "fragment"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[1, 2]", "must be an object"),
])
def test_a_job_that_is_not_a_job_is_an_error_record(host: dict[str, str], raw: str, fragment: str) -> None:
    code, records, _ = agent(None, host, raw=raw)
    assert code == 2 and records[-1]["type"] == "error" and fragment in records[-1]["message"]


def test_the_sysbench_binary_is_the_hosts_never_the_jobs(host: dict[str, str], tmp_path: Path) -> None:
    other = tmp_path / "not-sysbench"
    other.write_text(f"#!/bin/sh\ntouch {tmp_path}/other-ran\n")
    other.chmod(0o755)
    code, records, _ = agent({**base_job(), "sysbench_binary": str(other)}, host)
    assert code == 0 and records[-1]["type"] == "summary"
    assert sysbench_ran(tmp_path) and not (tmp_path / "other-ran").exists()


def test_a_test_is_a_built_in_or_a_script_of_the_bundle(host: dict[str, str], tmp_path: Path) -> None:
    """Issue 41 item 7: an absolute sysbench.test ran whatever Lua file it named and gave a summary."""
    script = tmp_path / "anything.lua"
    script.write_text("function event() end\n")
    for test in (str(script), "anything.lua", "./lua/oltp.lua"):
        job = base_job()
        job["sysbench"]["test"] = test
        code, records, _ = agent(job, host)
        assert code == 2 and "sysbench.test must be a built-in test" in records[-1]["message"], records
    assert not sysbench_ran(tmp_path)


def test_the_hosts_state_folder_is_the_one_the_cloud_jobs_name() -> None:
    from benchfleet.aws.steps import jobs

    sys.path.insert(0, str(AGENT.parent))
    import benchfleet_job

    assert benchfleet_job.HOST_STATE_DIR == jobs.STATE_DIR


@pytest.mark.parametrize("where", ["out", "keep", "lock", "full"])
def test_output_it_cannot_write_is_an_error_record(host: dict[str, str], tmp_path: Path, where: str) -> None:
    """Issue 41 item 7: an unwritable --out, --keep-dir or --lock, or --out /dev/full, ended in a traceback
    (exit 1). Now an error record on stdout naming the path, and no traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = {"out": ["--out", str(blocker / "out.jsonl")], "keep": ["--keep-dir", str(blocker / "keep")],
            "lock": ["--lock", str(blocker / "agent.lock")], "full": ["--out", "/dev/full"]}[where]
    done = subprocess.run([sys.executable, str(AGENT), "--job", "-", *args], input=json.dumps(base_job()),
                          capture_output=True, text=True, timeout=60, env=host)
    assert "Traceback" not in done.stderr, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["type"] == "error" and done.returncode in (2, 3), (done.returncode, records)
    assert (str(blocker) if where != "full" else "/dev/full") in records[-1]["message"]
    assert records[-1]["stage"] == {"lock": "lock", "full": "output"}.get(where, "output")


@pytest.mark.parametrize("test", ["lua/../agent/benchfleet_agent.py", "lua/../../tests/conftest.lua",
                                  "lua/missing.lua"])
def test_a_lua_test_resolves_inside_the_bundle(host: dict[str, str], tmp_path: Path, test: str) -> None:
    job = base_job()
    job["sysbench"]["test"] = test
    code, records, _ = agent(job, host)
    assert code == 2 and "not a Lua script in the agent bundle" in records[-1]["message"]
    assert not sysbench_ran(tmp_path)


@pytest.mark.parametrize(("db", "field"), [
    ({"password": "pw\nmysql-host=elsewhere"}, "the database password"),
    ({"password": "pw", "user": "sbtest\nhost=elsewhere"}, "db.user"),
    ({"password": "pw", "database": "sb\x00test"}, "db.database"),
    ({"password": "pw", "host": "db\x0bexample"}, "db.host"),
])
def test_control_characters_never_reach_an_option_file(host: dict[str, str], tmp_path: Path,
                                                       db: dict[str, str], field: str) -> None:
    code, records, _ = agent({**base_job(), "db": db}, host)
    assert code == 2 and records[-1]["type"] == "error" and field in records[-1]["message"]
    assert "control character" in records[-1]["message"] and not sysbench_ran(tmp_path)


def test_output_lines_are_bounded(host: dict[str, str], tmp_path: Path) -> None:
    fake = Path(host["PATH"].split(":")[0]) / "sysbench"
    # A line of 2 MiB (no sysbench prints one): the step ends, saying so, in a bounded record.
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\nhead -c 2097152 /dev/zero | tr '\\0' x\necho\n")
    code, records, _ = agent(base_job(), host)
    assert code == 3 and "more than 1,048,576 characters" in records[-1]["message"]
    # A failure message of 300 KB: cut, its end kept.
    fake.write_text("#!/bin/sh\necho 'sysbench 1.0.20'\nprintf 'FATAL: '\nhead -c 300000 /dev/zero | tr '\\0' y\n"
                    "echo ' the end'\nexit 1\n")
    code, records, _ = agent(base_job(), host)
    assert code == 3 and str(records[-1]["message"]).endswith("the end")
    assert len(str(records[-1]["message"])) < 10_000


def test_a_closed_session_stops_the_agent_and_its_sysbench(host: dict[str, str], tmp_path: Path) -> None:
    """SIGHUP (an SSH session or terminal closed) is handled like SIGTERM: an error record, exit 130,
    and no sysbench left running."""
    import signal
    import time

    fake = Path(host["PATH"].split(":")[0]) / "sysbench"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\necho 'sysbench 1.0.20'\nexec sleep 30\n")
    proc = subprocess.Popen([sys.executable, str(AGENT), "--job-json", json.dumps(base_job(duration_s=30))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=host)
    deadline = time.monotonic() + 30
    while not (tmp_path / "pid").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err
    assert json.loads(out.splitlines()[-1])["message"] == "interrupted"
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "pid").read_text()), 0)


def test_an_output_file_lost_in_the_status_readers_thread_fails_the_step(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The status reader emits from its own thread: the output file failing there must not end that
    thread with a traceback and leave the step to succeed with an incomplete copy."""
    import threading

    sys.path.insert(0, str(AGENT.parent))
    import benchfleet_emit

    files = [open("/dev/full", "w") for _ in range(2)]  # noqa: SIM115 - closed below (closing fails too)
    emit = benchfleet_emit.Emitter(base_job(), files[0])
    reader = threading.Thread(target=emit.emit, args=("status",), kwargs={"values": {}})
    reader.start()
    reader.join()
    assert emit.lost is not None and "/dev/full" in emit.lost and emit.out is None
    with pytest.raises(benchfleet_emit.OutputLost):  # the step's own thread stops at once
        benchfleet_emit.Emitter(base_job(), files[1]).emit("sample")
    for f in files:
        with contextlib.suppress(OSError):
            f.close()
    capsys.readouterr()
