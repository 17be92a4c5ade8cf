"""Plan arithmetic: steps, wall time per backend, cost, budget, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import REPO

from benchfleet.plan import (
    EXPIRY_MARGIN,
    PREPARE_MIN_SECONDS,
    PROVISION_SECONDS,
    STEP_OVERHEAD_SECONDS,
    TEARDOWN_SECONDS,
    make_plan,
)
from benchfleet.spec import load_spec, parse_spec, resolve

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
    # rounded up, never under the fixed cost (benchfleet.plan.prepare_seconds).
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
    assert aurora.repetition_s - ec2.repetition_s == (1200 + 900) - (300 + 60)
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
    from benchfleet.scale import trial

    spec = load_spec(str(REPO / "workloads" / "comparisons" / "aurora-pk-order.yaml")).spec
    assert trial(spec, "full", False) is None
    smoke = trial(spec, "smoke", True)
    assert smoke is not None and smoke["substituted"] == ["aurora-r6g-large"]
    assert "smoke scale" in str(smoke["label"]) and "stand-ins for aurora-r6g-large" in str(smoke["label"])
