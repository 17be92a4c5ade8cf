"""What a spec may say (issue 28): options that cannot change what is measured (item 4), tests that exist
(item 8), server options that stay inside the server's directory, one value per key, cnf files that are
files. Each refusal names the file and field; the agent refuses the same options (one rule,
benchfleet.workload.sysbench.option_refusal, used by benchfleet.spec.fields.check_workload_options)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO

from benchfleet.aws.api_service import ApiError, parse_json_body, validate_submission
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import load_spec, parse_spec
from benchfleet.workload import sysbench

INLINE = {"name": "w", "test": "oltp_read_only", "threads": [1], "duration_s": 5, "warmup_s": 0}
AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"

# Each faked or redirected the measurement when it was a plain option (issue 28: mysql-dry-run stored
# 917,610 tps for a workload that does about 600; db-driver + pgsql-host connected elsewhere).
HOSTILE_OPTIONS = {"mysql-dry-run": "on", "mysql_dry_run": True, "events": 100, "db-driver": "pgsql",
                   "pgsql-host": "elsewhere", "time": 1, "report_interval": 10, "warmup-time": 5,
                   "threads": 64, "mysql-socket": "/tmp/other.sock", "mysql-ssl-cipher": "NULL",
                   "histogram": "on", "verbosity": 0, "max-requests": 5, "forced-shutdown": 0,
                   "config-file": "x", "report-checkpoints": "1", "luajit-cmd": "off"}


def spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"name": "s", "workload": dict(INLINE), "targets": [{"id": "a", "kind": "local"}]}
    base.update(over)
    return base


def refusal(data: object) -> tuple[str, str]:
    with pytest.raises(SpecError) as e:
        parse_spec(data, "f.yaml")
    return e.value.problems[0]


@pytest.mark.parametrize(("name", "value"), HOSTILE_OPTIONS.items())
def test_options_that_change_what_is_measured_are_refused_in_workloads_and_variants(name: str, value: object) -> None:
    field, message = refusal(spec(workload={**INLINE, "options": {name: value}}))
    assert field == f"workload.options.{name}" and name in message
    variants = [{"id": "a", "options": {name: value}}, {"id": "b"}]
    field, message = refusal(spec(variants=variants))
    assert field == f"variants[0].options.{name}" and name in message
    assert sysbench.option_refusal(name, in_job=True) is not None  # the agent's copy of the rule agrees


def test_options_a_workload_may_give_pass_and_workload_keys_are_only_for_jobs() -> None:
    fine = {"mysql_ignore_errors": "1213,1020,1205", "rate": 100, "rand_seed": 7, "db-ps-mode": "disable",
            "skip_trx": True, "range_size": 10}
    assert parse_spec(spec(workload={**INLINE, "options": fine})).workload.options == fine  # type: ignore[union-attr]
    # A script's own option, for the script that reads it (oltp_read_only does not: test_sysbench_test_options).
    iibench = {**INLINE, "test": "lua/iibench.lua", "options": {"secondary_indexes": 3}}
    assert parse_spec(spec(workload=iibench)).workload.options == {"secondary_indexes": 3}  # type: ignore[union-attr]
    for key in ("tables", "table_size", "percentile", "rand-type"):
        assert "own key" in refusal(spec(workload={**INLINE, "options": {key: 1}}))[1]
        assert sysbench.option_refusal(key, in_job=True) is None  # agentjob passes the workload's keys this way


def test_the_api_refuses_them_naming_the_field() -> None:
    body = spec(workload={**INLINE, "options": {"mysql-dry-run": "on"}},
                targets=[{"id": "m", "kind": "ec2", "instance_type": "m6i.large"}])
    with pytest.raises(ApiError) as e:
        validate_submission(body, "us-east-1")
    assert e.value.status == 400 and e.value.field == "workload.options.mysql-dry-run"
    assert "mysql-dry-run" in e.value.message


def agent_refusal(tmp_path: Path, options: dict[str, object]) -> str:
    """The agent's error message for a measure step's job with these sysbench options, after checking
    that it ended with its own error record (exit 2), no traceback, and never ran sysbench."""
    called = tmp_path / "called"
    fake = tmp_path / "bin" / "sysbench"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {called}\necho 'sysbench 1.0.20'\n")
    fake.chmod(0o755)
    job = {"run_id": "r", "target_id": "a", "repetition": 1, "workload": "w",
           "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 1},
           "sysbench": {"test": "oltp_read_only", "options": options}, "db": {"password": "x"}}
    done = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job), capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    last = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 2 and last["type"] == "error"
    assert "Traceback" not in done.stderr
    assert not called.exists() or "run" not in called.read_text()
    return str(last["message"])


def test_the_agent_refuses_a_job_with_them_before_sysbench_runs(tmp_path: Path) -> None:
    assert "mysql-dry-run" in agent_refusal(tmp_path, {"mysql-dry-run": "on"})


def test_a_test_that_does_not_exist_is_refused_by_validate() -> None:
    field, message = refusal(spec(workload={**INLINE, "test": "oltp_readonly"}))
    assert field == "workload.test" and "did you mean oltp_read_only" in message
    for test in ("oltp_common", "cpu", "fileio"):
        assert "not a sysbench database test" in refusal(spec(workload={**INLINE, "test": test}))[1]


def test_a_lua_test_must_be_a_workload_in_the_bundle(tmp_path: Path) -> None:
    root = tmp_path / "workloads"
    (root / "lua").mkdir(parents=True)
    (root / "mysql").mkdir()
    (root / "mysql" / "default.cnf").write_text("[mysqld]\n")
    for lua in (REPO / "workloads" / "lua").glob("*.lua"):
        (root / "lua" / lua.name).write_text(lua.read_text())
    outside = tmp_path / "evil.lua"
    outside.write_text("function event() end\n")
    (root / "lua" / "linked.lua").symlink_to(outside)
    cases = {"lua/benchfleet_common.lua": "module the Lua workloads require",
             "lua/linked.lua": "not a Lua script in", "lua/missing.lua": "does not exist"}
    for test, fragment in cases.items():
        path = tmp_path / "s.json"
        path.write_text(json.dumps(spec(workload={**INLINE, "test": test})))
        with pytest.raises(SpecError) as e:
            load_spec(path, root)
        assert e.value.problems[0][0] == "workload.test" and fragment in e.value.problems[0][1]
    path.write_text(json.dumps(spec(workload={**INLINE, "test": "lua/insert_pk_seq.lua"})))
    assert load_spec(path, root).workload.test == "lua/insert_pk_seq.lua"


@pytest.mark.parametrize(("options", "fragment"), [
    ({"general_log_file": "/etc/cron.d/x"}, "is a path"),
    ({"innodb_log_group_home_dir": ".."}, "is a path"),
    ({"aria_log_dir_path": "../../tmp"}, "is a path"),
    ({"slow_query_log_file": "logs/slow.log"}, "is a path"),
    ({"datadir": "x"}, "set by benchfleet"),
    ({"loose-plugin-load-add": "ha_x.so"}, "set by benchfleet"),
    ({"skip_networking": True}, "set by benchfleet"),
    ({"init_file": "boot.sql"}, "set by benchfleet"),
])
def test_server_options_stay_inside_the_server_directory(options: dict[str, object], fragment: str) -> None:
    field, message = refusal(spec(targets=[{"id": "a", "kind": "local", "server_options": options}]))
    assert field == "targets[0].server_options" and fragment in message
    field, _ = refusal(spec(variants=[{"id": "a", "server_options": options}, {"id": "b"}]))
    assert field == "variants[0].server_options"


def test_a_plain_file_name_for_a_log_is_fine() -> None:
    target = {"id": "a", "kind": "local", "server_options": {"general_log_file": "general.log", "general_log": 1}}
    assert parse_spec(spec(targets=[target])).targets[0].server_options["general_log_file"] == "general.log"


def test_a_key_given_twice_is_refused_in_yaml_json_and_the_api(tmp_path: Path) -> None:
    yaml_spec = tmp_path / "s.yaml"
    yaml_spec.write_text("name: s\nworkload: demo-durability\nrepetitions: 1\ntargets:\n"
                         "  - {id: a, kind: local}\nrepetitions: 3\n")
    with pytest.raises(SpecError) as e:
        load_spec(yaml_spec)
    assert "'repetitions' is given twice (lines 3 and 6)" in str(e.value) and str(yaml_spec) in str(e.value)
    nested = tmp_path / "n.yaml"
    nested.write_text("name: s\nworkload: {name: w, test: oltp_read_only, threads: [1], threads: [64]}\n"
                      "targets: [{id: a, kind: local}]\n")
    with pytest.raises(SpecError, match="'threads' is given twice"):
        load_spec(nested)
    json_spec = tmp_path / "s.json"
    json_spec.write_text('{"name": "s", "workload": "demo-durability", "targets": [{"id": "a", "kind": "local", '
                         '"kind": "ec2"}]}')
    with pytest.raises(SpecError, match="'kind' is given twice"):
        load_spec(json_spec)
    with pytest.raises(ApiError) as api:
        parse_json_body('{"name": "s", "name": "t"}')
    assert api.value.status == 400 and "'name' is given twice" in api.value.message


@pytest.mark.timeout(20)
def test_a_cnf_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "workloads"
    (root / "mysql").mkdir(parents=True)
    os.mkfifo(root / "mysql" / "piped.cnf")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec(targets=[{"id": "a", "kind": "local", "mysql_config": "piped"}])))
    with pytest.raises(SpecError) as e:
        load_spec(path, root)
    assert e.value.problems[0][0] == "targets[0].mysql_config" and "FIFO" in e.value.problems[0][1]
