"""The prepare step's planned seconds from the instance and the storage, and the remote timeout derived
from them (issue 30 item 4): a 200M-row random-key load was planned at 625 s whatever the target, and
its Run Command could be cut off at about 50 minutes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.steps import commands
from benchfleet.plan import estimates
from benchfleet.spec.loading import LoadedSpec, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]
COMPARISONS = REPO / "workloads" / "comparisons"


# Seed 003's comparison: one Aurora writer, its two primary keys as variants.
AURORA = load_spec(COMPARISONS / "aurora-pk-order.yaml")


def one_workload(spec: LoadedSpec, variant: str, **changes: Any) -> dict[str, Any]:
    """The spec as a run of one variant's workload alone (its prepare is the only one of the plan)."""
    body = spec.spec.model_dump(mode="json", exclude_none=True, exclude={"variants", "blocks", "order"})
    return {**body, "workload": {**spec.workload_of(variant).model_dump(mode="json"), **changes}}


def test_a_random_key_load_past_the_buffer_pool_is_planned_at_what_its_storage_sustains():
    random, sequential = AURORA.workload_of("random"), AURORA.workload_of("seq")
    (writer,) = AURORA.spec.targets
    rows = random.tables * random.table_size
    assert rows == 200_000_000
    # By hand: db.r6g.large has 2 vCPUs (2 threads) and 16 GiB, 75 % of it a pool of 250-byte rows;
    # the rest of the rows read and write a random page each, on storage taken at 30,000 IOPS.
    fitting = int(16 * 1024**3 * 0.75 / 250)
    expected = math.ceil(fitting / (13_000 * 2) + (rows - fitting) * 2 / 30_000)
    assert estimates.prepare_seconds(random, writer) == expected > 3 * 3600
    # The same rows in key order, on the same writer: bound by its two threads, not its storage.
    assert estimates.prepare_seconds(sequential, writer) == math.ceil(rows / 26_000) < expected
    # The old flat rate gave 625 s to both, on any target.
    assert rows // (40_000 * 8) == 625


def test_storage_and_instance_size_change_the_estimate():
    spec = {"name": "s", "workload": {"name": "w", "test": "lua/insert_pk_random.lua", "tables": 4,
                                      "table_size": 25_000_000, "prepare_threads": 4, "threads": [1],
                                      "duration_s": 60, "warmup_s": 0}}
    targets = {
        "gp3": {"id": "gp3", "kind": "ec2", "instance_type": "r6i.large", "storage": {"type": "gp3", "size_gb": 200}},
        "io2": {"id": "io2", "kind": "ec2", "instance_type": "r6i.large",
                "storage": {"type": "io2", "size_gb": 200, "iops": 20_000}},
        "big": {"id": "big", "kind": "ec2", "instance_type": "r6i.4xlarge", "storage": {"type": "gp3", "size_gb": 200}},
    }
    parsed = parse_spec({**spec, "targets": list(targets.values())}, "s")
    seconds = {t.id: estimates.prepare_seconds(parsed.workload, t) for t in parsed.targets}
    assert seconds["io2"] < seconds["gp3"]  # more IOPS past the pool
    assert seconds["big"] < seconds["io2"]  # 128 GiB: every row fits, 4 threads
    assert seconds["big"] == math.ceil(100_000_000 / (13_000 * 4))


def test_the_local_figure_is_the_measured_one():
    """tests/perf/local_estimate.py measured 800,000 rows in 30.6 s with 2 prepare threads here."""
    local = parse_spec({"name": "l", "workload": {"name": "w", "test": "oltp_read_only", "tables": 2,
                                                  "table_size": 400_000, "prepare_threads": 2, "threads": [1],
                                                  "duration_s": 2, "warmup_s": 0},
                        "targets": [{"id": "l", "kind": "local", "memory_mb": 1024, "cpus": [0, 1]}]}, "l")
    assert estimates.prepare_seconds(local.workload, local.targets[0]) == pytest.approx(30.6, abs=1)


def test_the_remote_prepare_timeout_is_three_times_the_load_plus_its_installs():
    request = runplan.RunRequest(spec=one_workload(AURORA, "random"))
    planned = runplan.plan_run(request)
    (prepare,) = [s for s in planned["targets"][0]["steps"] if s["kind"] == "prepare"]
    assert prepare["duration_s"] > 3 * 3600
    # start_step's Run Command execution timeout: the step, its setup and 600 s.
    execution = prepare["duration_s"] + prepare["setup_s"] + 600
    assert execution == 3 * prepare["duration_s"] + runplan.SETUP_S["prepare"] + 600
    assert execution <= commands.MAX_EXECUTION_TIMEOUT_S
    assert prepare["timeout_s"] == commands.DELIVERY_TIMEOUT_S + execution + runplan.CALLBACK_MARGIN_S


def test_a_load_run_command_could_cut_off_is_refused_naming_the_table_size():
    request = runplan.RunRequest(spec={**one_workload(AURORA, "random", table_size=150_000_000), "budget_usd": 1000})
    with pytest.raises(PlanRejected, match=r"workload.table_size: aurora-r6g-large's load is planned at .* "
                                           r"Run Command's 172800 s limit"):
        runplan.plan_run(request, max_run_hours=1000)
