"""Variants on one booted ec2 host (issue 24 item 1, assignment item 6), through the synthesized agent
document with jobs from start_step: the server installed with the first variant's settings, then a
SET GLOBAL variant (a dynamic setting) and a restart variant (innodb_log_buffer_size, static on
MariaDB), each step recording the requested values beside the ones the server reports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from deployed import plan
from hostfleet import Fleet
from onehost import booted_host
from runcommand import RunCommand

from benchfleet.aws.steps import commands

RUN = "host-tier-variants"
VOLUME = "vol-0f1e2d3c4b5a69788"
SPEC = {
    "name": "host-variants",
    "workload": {"name": "host-wo", "test": "oltp_write_only", "tables": 1, "table_size": 1000,
                 "prepare_threads": 1, "warmup_s": 0, "threads": [2], "duration_s": 3},
    "targets": [{"id": "m6g", "kind": "ec2", "instance_type": "m6g.large", "engine": "mariadb",
                 "mysql_config": "durable"}],
    "variants": [{"id": "durable"},
                 {"id": "relaxed", "server_options": {"innodb_flush_log_at_trx_commit": 2, "sync_binlog": 0}},
                 {"id": "biglog", "server_options": {"innodb_log_buffer_size": "32M"}}],
}


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"type"')]


@pytest.fixture(scope="module")
def steps(fleet: Fleet, run_command: RunCommand) -> dict[str, list[dict[str, Any]]]:
    """Every step of the plan's one repetition, in its order, on one fresh host: name -> records."""
    planned = plan(SPEC, RUN)
    (target,) = planned["targets"]
    order = [target["steps"][i]["name"] for i in target["sequence"][0]]
    assert order == ["prepare", "t0002.durable", "t0002.relaxed", "t0002.biglog"]
    out: dict[str, list[dict[str, Any]]] = {}
    with booted_host(fleet, run_command, "variants", planned, VOLUME, "i-0fedcba9876543210") as host:
        for name in order:
            run = host.send(name).step(commands.AGENT_PLUGIN)
            assert run.status == "Success", (name, run.stdout[-3000:] + run.stderr[-3000:])
            out[name] = records_of(run.stdout)
    return out


def summary_settings(records: list[dict[str, Any]]) -> dict[str, Any]:
    (summary,) = [r for r in records if r["type"] == "summary"]
    return dict(summary["settings"])


def switches(records: list[dict[str, Any]]) -> list[str]:
    return [r["method"] for r in records if r["type"] == "install" and r.get("action") == "variant"]


def test_each_variant_runs_with_its_settings_switched_by_set_global_or_a_restart(steps: Any) -> None:
    # The install wrote the first variant's cnf: its step switches nothing.
    (fp,) = [r for r in steps["prepare"] if r["type"] == "fingerprint"]
    assert fp["server_variables"]["innodb_flush_log_at_trx_commit"] == "1"
    assert switches(steps["t0002.durable"]) == []
    durable = summary_settings(steps["t0002.durable"])
    assert durable["method"] == "none" and durable["effective"]["innodb_flush_log_at_trx_commit"] == "1"
    # A dynamic difference: SET GLOBAL, the server reports the new values.
    assert switches(steps["t0002.relaxed"]) == ["set-global"]
    relaxed = summary_settings(steps["t0002.relaxed"])
    assert relaxed["requested"]["innodb_flush_log_at_trx_commit"] == "2"
    assert relaxed["effective"]["innodb_flush_log_at_trx_commit"] == "2"
    assert relaxed["effective"]["sync_binlog"] == "0" and relaxed["differences"] == []
    # A static one: the variant's cnf and a restart on the same data; the others back to the cnf's.
    assert switches(steps["t0002.biglog"]) == ["restart"]
    biglog = summary_settings(steps["t0002.biglog"])
    assert biglog["effective"]["innodb_log_buffer_size"] == str(32 * 1024 * 1024)
    assert biglog["effective"]["innodb_flush_log_at_trx_commit"] == "1" and biglog["differences"] == []
    # Every variant measured, on the one data set the prepare loaded.
    for name in ("t0002.durable", "t0002.relaxed", "t0002.biglog"):
        (summary,) = [r for r in steps[name] if r["type"] == "summary"]
        assert summary["tps"] > 0 and summary["variant"] == name.split(".")[1]
