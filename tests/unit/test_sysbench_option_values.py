"""The value rule of sysbench options (benchfleet.workload.sysbench.OPTION_VALUES, issue 28's leftover): values
sysbench 1.0.20 refuses mid-run or misreads (``rate: -5``, ``point_selects: 1e308``, ``skip_trx: 1``)
are refused by validate, the API, Plan (one rule: benchfleet.spec.fields.check_workload_options) and the agent,
naming the option and the accepted values; and every extreme the rule accepts runs on the real binary
(``--mysql-dry-run``: sysbench parses every option and runs its scripts' transactions without a server)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO
from tests.unit.test_spec_integrity import INLINE, agent_refusal, refusal, spec

from benchfleet.aws.api_service import ApiError, validate_submission
from benchfleet.spec.workload import Workload
from benchfleet.workload import sysbench
from benchfleet.workload.sysbench import OPTION_VALUES, OptionValue

LUA = REPO / "workloads" / "lua"

# Each was taken by validate before, and sysbench died mid-step or measured something else.
MISREAD = [
    ({"rate": -5}, "-5 is not a whole number from 0 to 100,000"),
    ({"thread_init_timeout": 1e308}, "thread_init_timeout is not a sysbench 1.0.20 option"),
    ({"point_selects": 1e308}, "1e+308 is not a whole number from 0 to 10,000"),
    ({"point_selects": -1}, "-1 is not a whole number"),
    ({"tables": 2.5}, "tables must be set through the workload's own key"),
    ({"range_size": 1.5}, "1.5 is not a whole number from 1 to 1,000,000"),
    ({"skip_trx": 1}, "1 is not true or false"),
    ({"auto_inc": "yes"}, "'yes' is not true or false"),
    ({"rand_seed": True}, "True is not a whole number"),
    ({"rand_pareto_h": 0}, "0 is not a number from 0.01 to 0.99"),
    ({"db_ps_mode": "off"}, "'off' is not one of auto, disable"),
    ({"mysql_ignore_errors": "1213,abc"}, "'1213,abc' is not all, none, or a comma-separated"),
    ({"secondary_indexes": 4}, "4 is not a whole number from 0 to 3"),
]


@pytest.mark.parametrize(("options", "message"), MISREAD)
def test_values_sysbench_refuses_or_misreads_are_refused_naming_the_option_and_range(
        options: dict[str, object], message: str) -> None:
    ((name, value),) = options.items()
    field, text = refusal(spec(workload={**INLINE, "options": options}))
    assert field == f"workload.options.{name}" and text.startswith(message)
    field, text = refusal(spec(variants=[{"id": "a", "options": options}, {"id": "b"}]))
    assert field == f"variants[0].options.{name}" and text.startswith(message)
    if not message.startswith(f"{name} must be set"):  # a workload key arrives in a job as its option
        assert (sysbench.option_refusal(name, in_job=True, value=value) or "").startswith(message)


def test_the_api_answers_400_naming_the_field_and_range() -> None:
    body = spec(workload={**INLINE, "options": {"rate": -5}},
                targets=[{"id": "m", "kind": "ec2", "instance_type": "m6i.large"}])
    with pytest.raises(ApiError) as e:
        validate_submission(body, "us-east-1")
    assert e.value.status == 400 and e.value.field == "workload.options.rate"
    assert e.value.message.startswith("workload.options.rate: -5 is not a whole number from 0 to 100,000")


def test_the_agent_refuses_a_job_value_before_sysbench_runs(tmp_path: Path) -> None:
    message = agent_refusal(tmp_path, {"point-selects": 1e308})
    assert "sysbench.options.point-selects: 1e+308 is not a whole number from 0 to 10,000" in message


# Which script defines each option (sysbench refuses an option its test does not define).
FAMILIES: dict[str, list[str]] = {
    "oltp_read_write": ["rate", "tx-rate", "validate", "rand-type", "rand-spec-iter", "rand-spec-pct",
                        "rand-spec-res", "rand-seed", "rand-pareto-h", "percentile", "db-ps-mode",
                        "mysql-ignore-errors", "mysql-compression", "tables", "table-size", "point-selects",
                        "simple-ranges", "sum-ranges", "order-ranges", "distinct-ranges", "index-updates",
                        "non-index-updates", "delete-inserts", "range-size", "range-selects", "auto-inc",
                        "skip-trx", "secondary", "create-secondary", "mysql-storage-engine"],
    "select_random_points": ["random-points"],
    "select_random_ranges": ["number-of-ranges", "delta"],
    "iibench.lua": ["prepare-batch", "secondary-indexes", "partition-rows", "partitions"],
}
TEXT_EXTREMES = {
    "mysql-ignore-errors": ("all", ",".join(str(1000 + i) for i in range(32))),
    "mysql-storage-engine": ("innodb", "InnoDB"),
}


def extreme(name: str, rule: OptionValue, high: bool) -> Any:
    if rule.kind in ("int", "number"):
        return (int if rule.kind == "int" else float)(rule.high if high else rule.low)
    if rule.kind == "bool":
        return high
    if rule.kind == "choice":
        return rule.choices[-1 if high else 0]
    return TEXT_EXTREMES[name][high]


def test_every_option_with_a_value_rule_is_run_below_and_the_workload_keys_agree() -> None:
    assert sorted(name for names in FAMILIES.values() for name in names) == sorted(OPTION_VALUES)
    # A job passes the workload's keys as options: their rule is the key's own range.
    for key, option in (("tables", "tables"), ("table_size", "table-size"), ("percentile", "percentile")):
        bounds = {type(m).__name__: m for m in Workload.model_fields[key].metadata}
        assert (bounds["Ge"].ge, bounds["Le"].le) == (OPTION_VALUES[option].low, OPTION_VALUES[option].high)
    assert Workload.model_fields["rand_type"].annotation.__args__ == OPTION_VALUES["rand-type"].choices  # type: ignore[union-attr]


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs the sysbench binary")
@pytest.mark.parametrize("high", [False, True], ids=["lowest", "highest"])
@pytest.mark.parametrize("test", sorted(FAMILIES))
def test_each_accepted_extreme_runs_on_the_real_sysbench(test: str, high: bool) -> None:
    options = {name: extreme(name, OPTION_VALUES[name], high) for name in FAMILIES[test]}
    for name, value in options.items():
        assert sysbench.option_refusal(name, in_job=True, value=value) is None, name
        # One past the extreme is refused (a whole-number rule's neighbour; a choice's misspelling).
        rule = OPTION_VALUES[name]
        if rule.kind in ("int", "number"):
            beyond = rule.high + 1 if high else rule.low - (1 if rule.kind == "int" else 0.001)
            assert sysbench.option_refusal(name, in_job=True, value=beyond) is not None, name
    # The run's own size: a tiny data set, one thread, one second (the agent sets these for real steps).
    options.update({"threads": 1, "time": 1, "mysql-dry-run": True})
    if test == "iibench.lua":
        options.update({"tables": 1, "table-size": 10})
    script = str(LUA / test) if test.endswith(".lua") else test
    argv = sysbench.build_command(script, "run", options)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=LUA)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "invalid option" not in out and "FATAL" not in out, out
    assert "transactions:" in out or "events (avg/stddev)" in out, out
