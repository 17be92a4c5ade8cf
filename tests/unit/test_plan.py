"""Plan arithmetic: steps, wall time per backend, cost, budget, expiry."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

from tests.conftest import REPO

from benchfleet.plan.estimates import (
    PARAMETER_GROUPS_SETTLE_S,
    PREPARE_MIN_SECONDS,
    PROVISION_SECONDS,
    STEP_OVERHEAD_SECONDS,
    TEARDOWN_SECONDS,
)
from benchfleet.plan.model import EXPIRY_MARGIN, make_plan
from benchfleet.spec.loading import load_spec, parse_spec, resolve

WORKLOAD = {"name": "w", "test": "oltp_read_only", "threads": [4, 1, 2], "duration_s": 60,
            "cooldown_s": 10, "warmup_s": 30, "tables": 2, "table_size": 100_000, "prepare_threads": 2}


def loaded(targets: list[dict[str, object]], **over: object):
    return resolve(parse_spec({"name": "p", "workload": WORKLOAD, "targets": targets, **over}), "p")


def test_steps_are_prepare_warmup_then_the_sorted_sweep() -> None:
    plan = make_plan(loaded([{"id": "a", "kind": "local"}]))
    steps = plan.targets[0].steps
    assert [(s.name, s.kind, s.threads) for s in steps] == [
        ("prepare", "prepare", 2), ("warmup", "warmup", 4), ("t0001", "measure", 1), ("t0002", "measure", 2),
        ("t0004", "measure", 4)]
    # 200k rows at 13k rows/s/thread with 2 threads (a local target on every CPU: no pinning): 7.7 s,
    # rounded up, never under the fixed cost (benchfleet.plan.estimates.prepare_seconds).
    assert steps[0].duration_s == max(8, PREPARE_MIN_SECONDS)
    assert sum(s.estimated_s for s in steps) == steps[0].duration_s + 30 + 3 * (60 + 10)


def test_local_targets_run_one_after_another_and_cost_nothing() -> None:
    plan = make_plan(loaded([{"id": "a", "kind": "local"}, {"id": "b", "kind": "local"}], repetitions=2))
    # Each of the 5 steps (agent start, connect, summary) costs its overhead on top of its seconds.
    steps = plan.targets[0].steps
    per_rep = (PROVISION_SECONDS["local"] + sum(s.estimated_s for s in steps)
               + len(steps) * STEP_OVERHEAD_SECONDS["local"] + TEARDOWN_SECONDS["local"])
    assert plan.targets[0].repetition_s == per_rep
    assert plan.wall_s == 2 * 2 * per_rep
    assert plan.estimated_cost_usd == 0 and plan.unpriced_targets == []


def test_cloud_targets_run_side_by_side_and_are_priced() -> None:
    targets = [{"id": "m6i", "kind": "ec2", "instance_type": "m6i.large", "price_per_hour": 0.096},
               {"id": "aur", "kind": "aurora", "instance_class": "db.r6g.large", "price_per_hour": 0.30}]
    plan = make_plan(loaded(targets, repetitions=3, budget_usd=1.0))
    ec2, aurora = plan.targets
    # Aurora's repetition also waits 5 minutes between its new parameter groups and its database (AWS's
    # advice; issue 41 item 11), an item of its own in the plan's wall time.
    assert aurora.repetition_s - ec2.repetition_s == (1200 + 300 + 900) - (300 + 60)
    assert aurora.parts(1)["parameter groups settle"] == PARAMETER_GROUPS_SETTLE_S == 300
    assert ec2.parts(1)["parameter groups settle"] == 0
    assert plan.wall_s == aurora.total_s == 3 * aurora.repetition_s
    assert ec2.estimated_cost_usd == round(0.096 * ec2.total_s / 3600, 4)
    assert plan.estimated_cost_usd == round(ec2.estimated_cost_usd + aurora.estimated_cost_usd, 4)
    assert plan.over_budget is (plan.estimated_cost_usd > 1.0)


def test_unpriced_cloud_targets_are_listed() -> None:
    plan = make_plan(loaded([{"id": "x", "kind": "ec2", "instance_type": "zz9.huge"}]), price_lookup=lambda t: None)
    assert plan.unpriced_targets == ["x"] and plan.estimated_cost_usd == 0


def test_expiry_covers_the_whole_plan_plus_margin() -> None:
    plan = make_plan(loaded([{"id": "a", "kind": "local"}]))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert plan.expires_at(start) == start + timedelta(seconds=plan.wall_s) + EXPIRY_MARGIN


def test_smoke_and_stand_in_runs_are_marked_as_not_the_spec() -> None:
    from benchfleet.plan.scale import trial

    spec = load_spec(str(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml")).spec
    assert trial(spec, "full", False) is None
    smoke = trial(spec, "smoke", True)
    assert smoke is not None and smoke["substituted"] == ["aurora-r6g-large"]
    assert "smoke scale" in str(smoke["label"]) and "stand-ins for aurora-r6g-large" in str(smoke["label"])


def test_an_aurora_plan_prices_its_io_requests_as_their_own_line_in_the_total_and_the_budget() -> None:
    """Issue 41 item 14: Aurora's I/O requests were left out: the shipped aurora-pk-order planned
    $4.81 against a $5 budget, though its random-key load and inserts read a page beyond the buffer
    pool for nearly every row. The plan now estimates them from the workload, at the tables' rate."""
    from benchfleet.cost.pricing import aurora_io_rate, price_per_hour
    from benchfleet.plan.estimates import AURORA_TPS_PER_THREAD, ROW_BYTES
    from benchfleet.plan.model import aurora_io_requests

    shipped = load_spec(str(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml"))
    doc = shipped.inline() | {"budget_usd": 5}
    plan = make_plan(resolve(parse_spec(doc), "p"), price_per_hour)
    (t,) = plan.targets
    rate = aurora_io_rate("us-east-1")
    assert rate == 0.2 and t.io_usd_per_million == rate
    # Seq's load: 200 M rows of 250 bytes in 4 KiB redo writes, no reads (key order); random's: the
    # same writes and one read a row beyond a db.r6g.large's 12 GiB pool (51.5 M rows of 250 bytes).
    seq, rnd = (shipped.workload_of(v) for v in ("seq", "random"))
    prepare = {s.variant: s for s in t.steps if s.kind == "prepare"}
    rows = 8 * 25_000_000
    writes = -(-rows * ROW_BYTES // 4096)
    assert aurora_io_requests(seq, prepare["seq"], _aurora()) == writes
    assert aurora_io_requests(rnd, prepare["random"], _aurora()) == writes + rows - int(16 * 1024**3 * 0.75 / ROW_BYTES)
    # A measured step: 15 threads x 200 tps x 3,600 s, a write each, and a read each with random keys.
    block = next(s for s in t.steps if s.name == "t0015.b1.random")
    assert aurora_io_requests(rnd, block, _aurora()) == 15 * AURORA_TPS_PER_THREAD * 3600 * 2
    assert t.io_requests is not None and t.io_requests > 200_000_000
    assert plan.usage_usd == t.io_usd == round(t.io_requests * rate / 1e6, 4)
    assert plan.estimated_cost_usd == round(plan.hosts_usd + plan.usage_usd + plan.control_plane_usd, 4)
    assert plan.over_budget and plan.estimated_cost_usd > 50
    (line,) = plan.summary()["usage"]
    assert line["item"] == "Aurora I/O requests" and line["cost_usd"] == t.io_usd and "assumed" in line["assumption"]


def test_io_is_not_charged_for_reads_a_buffer_pool_holds_nor_writes_of_a_test_that_only_reads() -> None:
    from benchfleet.plan.model import aurora_io_requests

    plan = make_plan(loaded([AURORA]))
    measure = next(s for s in plan.targets[0].steps if s.kind == "measure")
    assert aurora_io_requests(loaded([AURORA]).workload, measure, _aurora()) == 0  # oltp_read_only, 200k rows
    # Without prices (validate's plan) the load's writes are counted, and the target is unpriced.
    assert plan.targets[0].io_requests == math.ceil(2 * 100_000 * 250 / 4096) and plan.unpriced_targets == ["au"]


AURORA = {"id": "au", "kind": "aurora", "instance_class": "db.r6g.large", "region": "us-east-1"}


def _aurora():
    return loaded([AURORA]).spec.targets[0]


def test_benchfleet_plan_prints_the_aurora_io_line_with_its_assumption_and_counts_it(capsys) -> None:
    from benchfleet.cli.main import main

    path = str(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml")
    assert main(["plan", path, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (line,) = summary["usage"]
    assert line["target_id"] == "aurora-r6g-large" and line["cost_usd"] == summary["usage_usd"] > 50
    assert summary["estimated_cost_usd"] > summary["hosts_usd"] + summary["usage_usd"] and not summary["over_budget"]
    assert main(["plan", path]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "Aurora I/O requests" in out and "assumed: a load writes its rows' bytes" in out
    assert f"+ Aurora I/O ${summary['usage_usd']:.2f} +" in out


def test_benchfleet_plan_shows_the_wait_for_new_parameter_groups(capsys) -> None:
    """Issue 41 item 11: each repetition of an rds / aurora target waits 5 minutes between creating its
    parameter groups and the database that uses them (AWS's advice); `plan` shows that time in the
    wall time's items and counts it in the estimate."""
    from benchfleet.cli.main import main

    path = str(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml")
    assert main(["plan", path, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # Along the repetitions that end last.
    assert summary["wall_parts"]["parameter groups settle"] == PARAMETER_GROUPS_SETTLE_S
    assert main(["plan", path]) == 0
    assert "parameter groups settle 5m" in " ".join(capsys.readouterr().out.split())
