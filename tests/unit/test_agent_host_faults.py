"""The agent's defences on a shared or unhealthy host (issue 12): one agent at a time, output kept on
the host, a missing CloudWatch agent recorded not fatal, TLS chosen for the client library sysbench
links, and the server's effective settings compared with the cnf. sysbench is a script printing
real sysbench 1.0.20 output (tests/fixtures); the booted-host tier (tests/host) runs the real one."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tests.agent_modules import load
from tests.conftest import REPO

AGENT_DIR = REPO / "workloads" / "agent"
AGENT = AGENT_DIR / "benchfleet_agent.py"
sys.path.insert(0, str(AGENT_DIR))
_spec = importlib.util.spec_from_file_location("benchfleet_dbclient", AGENT_DIR / "benchfleet_dbclient.py")
assert _spec and _spec.loader
dbclient = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dbclient)
RUN_LOG = REPO / "tests" / "fixtures" / "sysbench-1.0.20" / "run_ri.log"


def fake_sysbench(tmp_path: Path, *, hold: bool = False) -> Path:
    """Prints a real run's output and logs its argv and working directory; with ``hold``, only once
    the test creates ``release`` (at most 60 s)."""
    fake = tmp_path / ("held" if hold else "bin") / "sysbench"  # the agent runs the sysbench on PATH
    fake.parent.mkdir(exist_ok=True)
    release = tmp_path / "release"
    wait = f"i=0; while [ ! -f {release} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n" if hold else ""
    fake.write_text(f"#!/bin/sh\necho \"$PWD $*\" >> {tmp_path}/argv.log\n"
                    f"[ \"$1\" = --version ] && {{ echo 'sysbench 1.0.20'; exit 0; }}\n"
                    f"{wait}cat {RUN_LOG}\n")
    fake.chmod(0o755)
    return fake


def job(fake: Path, step: str = "t0001", **extra: object) -> dict[str, object]:
    return {"run_id": "run-1", "target_id": "m6g", "repetition": 1, "workload": "w", "_bin": str(fake.parent),
            "step": {"name": step, "kind": "measure", "threads": 1, "duration_s": 1},
            "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {"password": "pw"}, **extra}


def start_agent(j: dict[str, object], *args: str) -> subprocess.Popen[str]:
    """The agent on job ``j``, with the fake sysbench of ``job`` first on its PATH."""
    j = dict(j)
    env = {**os.environ, "PATH": f"{j.pop('_bin')}:{os.environ['PATH']}"} if "_bin" in j else None
    return subprocess.Popen([sys.executable, str(AGENT), "--job-json", json.dumps(j), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def records(proc: subprocess.Popen[str]) -> tuple[int, list[dict[str, object]]]:
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    return proc.returncode, [json.loads(line) for line in out.splitlines()]


def test_a_second_agent_on_a_busy_host_is_refused_and_names_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / "run" / "agent.lock"
    first = start_agent(job(fake_sysbench(tmp_path, hold=True)), "--lock", str(lock))
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text()):  # the holder writes itself once it has the lock
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    code, out = records(start_agent(job(fake_sysbench(tmp_path), step="t0001"), "--lock", str(lock)))
    assert code == 4
    assert out[-1]["type"] == "error" and out[-1]["stage"] == "lock"
    assert '"step": "t0001"' in str(out[-1]["message"]) and '"run_id": "run-1"' in str(out[-1]["message"])
    (tmp_path / "release").touch()
    code, out = records(first)
    assert code == 0 and [r["type"] for r in out].count("summary") == 1
    # Released with its holder: the next step runs.
    code, _ = records(start_agent(job(fake_sysbench(tmp_path), step="t0002"), "--lock", str(lock)))
    assert code == 0


def test_output_is_kept_on_the_host_and_a_missing_cloudwatch_agent_is_a_notice(tmp_path: Path) -> None:
    keep = tmp_path / "output"
    code, out = records(start_agent(job(fake_sysbench(tmp_path)), "--keep-dir", str(keep),
                                    "--cloudwatch-agent", "not-installed"))
    assert code == 0
    notice = next(r for r in out if r["type"] == "notice")
    assert notice["stage"] == "cloudwatch-agent" and "not-installed" in str(notice["message"])
    assert notice["step"] == "t0001" and notice["run_id"] == "run-1"
    assert sum(r["type"] == "sample" for r in out) > 0 and out[-1]["type"] == "summary"
    kept = keep / "run-1" / "m6g" / "rep-1" / "t0001.jsonl"
    assert [json.loads(line) for line in kept.read_text().splitlines()] == out
    # A run id that would climb out of the directory is refused.
    code, out = records(start_agent({**job(fake_sysbench(tmp_path)), "run_id": "../etc"}, "--keep-dir", str(keep)))
    assert code == 2 and "safe path component" in str(out[-1]["message"])


def test_sysbench_gets_no_password_on_its_command_line_and_runs_in_a_private_directory(tmp_path: Path) -> None:
    code, _ = records(start_agent(job(fake_sysbench(tmp_path))))
    assert code == 0
    line = next(x for x in (tmp_path / "argv.log").read_text().splitlines() if " oltp_read_only " in x)
    cwd, argv = line.split(" ", 1)
    assert "pw" not in argv.split() and "--mysql-password" not in argv and f"--config-file={cwd}/" in argv
    assert not Path(cwd).exists()  # removed with the password in it


@pytest.mark.parametrize(("library", "tls", "files", "ssl"), [
    ("libmysqlclient", "required", False, "off"),   # the library's default ssl-mode PREFERRED negotiates TLS
    ("libmariadb", "required", True, "on"),
    ("libmariadb", "preferred", False, "off"),
    ("libmariadb", "off", True, "off"),
])
def test_tls_follows_the_client_library_sysbench_links(tmp_path: Path, library: str, tls: str, files: bool,
                                                        ssl: str) -> None:
    db: dict[str, object] = {"host": "db.example", "tls": tls}
    if files:
        for key, name in (("ssl_ca", "ca.pem"), ("ssl_cert", "c.pem"), ("ssl_key", "k.pem")):
            (tmp_path / name).write_text(key)
            db[key] = str(tmp_path / name)
    conn = dbclient.Connection(db, "pw", library=library)
    try:
        assert conn.sysbench_options()["mysql-ssl"] == ssl
        if ssl == "on":  # the fixed names sysbench 1.0.20 hands libmariadb, in its working directory
            for name, key in (("cacert.pem", "ssl_ca"), ("client-cert.pem", "ssl_cert"), ("client-key.pem", "ssl_key")):
                assert (Path(conn.dir) / name).read_text() == key
                assert oct(os.stat(Path(conn.dir) / name).st_mode & 0o777) == "0o600"
    finally:
        conn.close()


def test_tls_required_without_the_files_libmariadb_needs_names_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(dbclient.ClientError, match=r"db\.ssl_ca, db\.ssl_cert, db\.ssl_key"):
        dbclient.Connection({"tls": "required"}, "pw", library="libmariadb")
    with pytest.raises(dbclient.ClientError, match=r"db\.tls must be one of"):
        dbclient.Connection({"tls": "always"}, "pw", library="libmariadb")
    assert list(tmp_path.iterdir()) == []  # the refused job's private directory is gone


def test_effective_server_variables_are_compared_with_the_cnf() -> None:
    requested = {"table_open_cache": "200000", "innodb_log_buffer_size": "64M", "skip_log_bin": "",
                 "performance_schema": "OFF", "innodb_flush_method": "O_DIRECT", "ssl": "0",
                 "innodb_buffer_pool_size": "3906M", "skip_name_resolve": ""}
    effective = {"table_open_cache": "7985", "innodb_log_buffer_size": "67108864", "log_bin": "OFF",
                 "performance_schema": "OFF", "innodb_flush_method": "O_DIRECT",
                 "innodb_buffer_pool_size": "4094689280", "skip_name_resolve": "ON"}
    changed, unverified = dbclient.differences(requested, effective)
    assert changed == [{"option": "table_open_cache", "requested": "200000", "effective": "7985"},
                       {"option": "innodb_buffer_pool_size", "requested": "3906M", "effective": "4094689280"}]
    assert unverified == ["ssl"]


def test_a_value_the_server_shows_with_decimals_is_compared_as_a_number() -> None:
    """Issue 41 item 3: MariaDB shows innodb_max_dirty_pages_pct (a double) as 50.000000, and the run
    said 'the server runs with other values than the cnf asked for: innodb_max_dirty_pages_pct 50 ->
    50.000000'. A value the server did change is still one."""
    assert dbclient.differences({"innodb_max_dirty_pages_pct": "50", "innodb_max_dirty_pages_pct_lwm": "0.5"},
                                {"innodb_max_dirty_pages_pct": "50.000000",
                                 "innodb_max_dirty_pages_pct_lwm": "0.500000"}) == ([], [])
    assert dbclient.differences({"innodb_max_dirty_pages_pct": "50"}, {"innodb_max_dirty_pages_pct": "75.000000"}) == (
        [{"option": "innodb_max_dirty_pages_pct", "requested": "50", "effective": "75.000000"}], [])


def test_a_binary_log_base_name_is_not_a_difference() -> None:
    """durable.cnf / relaxed.cnf say ``log_bin = binlog`` (the files' base name) and the server's log_bin
    variable says ON: every demo run recorded "log_bin binlog -> ON" as a setting not taken. A log_bin
    the server runs without is still one."""
    assert dbclient.differences({"log_bin": "binlog"}, {"log_bin": "ON"}) == ([], [])
    assert dbclient.differences({"log_bin": "binlog"}, {"log_bin": "OFF"}) == (
        [{"option": "log_bin", "requested": "binlog", "effective": "OFF"}], [])


def test_what_the_server_adjusts_as_it_documents_is_told_apart_from_a_setting_it_does_not_run() -> None:
    """Issue 41 item 11: a target fails on a setting its server runs with another value, except the
    adjustments the server documents: the buffer pool rounded to a multiple of chunk size x instances,
    table_open_cache lowered to the open-files limit, MariaDB's table_open_cache_instances as a maximum.
    Raising a value (innodb_io_capacity 50 -> 100, a table cache above the one asked for) is none."""
    variables = {"innodb_buffer_pool_chunk_size": "134217728", "innodb_buffer_pool_instances": "8"}
    changed = [{"option": "innodb_buffer_pool_size", "requested": "5734M", "effective": str(6 * 1024 ** 3)},
               {"option": "table_open_cache", "requested": "200000", "effective": "7985"},
               {"option": "table_open_cache_instances", "requested": "64", "effective": "1"},
               {"option": "innodb_io_capacity", "requested": "50", "effective": "100"},
               {"option": "table_open_cache_instances", "requested": "4", "effective": "8"}]
    assert dbclient.adjusted(changed, variables) == changed[:3]
    # A buffer pool a whole unit away from what was asked is not a rounding of it.
    far = {"option": "innodb_buffer_pool_size", "requested": "4G", "effective": str(5 * 1024 ** 3)}
    assert dbclient.adjusted([far], {"innodb_buffer_pool_chunk_size": "134217728"}) == []


def test_the_prepare_step_fails_on_the_targets_settings_but_not_the_variants(monkeypatch) -> None:
    running = load("benchfleet_run")
    found = {"config_differences": [{"option": "innodb_io_capacity", "requested": "50", "effective": "100"},
                                    {"option": "max_connections", "requested": "5", "effective": "10"},
                                    {"option": "table_open_cache", "requested": "200000", "effective": "7985"}]}
    found["config_adjusted"] = found["config_differences"][2:]
    assert running.target_differences({}, found) == found["config_differences"][:2]
    job = {"verify": {"varying": ["innodb-io-capacity"]}}
    assert running.target_differences(job, found) == found["config_differences"][1:2]
    # A managed server's value that arrives while the agent waits (verify.settle_s) passes.
    reads = iter([{"config_differences": []}])
    monkeypatch.setattr(running.benchfleet_dbclient, "server_state", lambda conn, requested: next(reads))
    monkeypatch.setattr(running, "SETTLE_POLL_S", 0.01)
    assert running.unmet_settings({"verify": {"settle_s": 5}}, None, {}, found) == []
    assert running.unmet_settings({}, None, {}, found) == found["config_differences"][:2]
