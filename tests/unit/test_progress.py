"""Progress of a local run: every planned phase counts, the bar ends at 100%, the ETA follows the pace."""

from __future__ import annotations

from benchfleet.cli.ui import RunProgress
from benchfleet.plan.model import make_plan
from benchfleet.spec.loading import parse_spec, resolve

WORKLOAD = {"name": "w", "test": "oltp_read_only", "threads": [1, 2], "duration_s": 10, "warmup_s": 5}


def test_the_bar_reaches_the_end_and_the_eta_scales_with_the_pace() -> None:
    spec = parse_spec({"name": "p", "workload": WORKLOAD, "repetitions": 2,
                       "targets": [{"id": "a", "kind": "local"}, {"id": "b", "kind": "local"}]})
    plan = make_plan(resolve(spec, "p"))
    now = [0.0]
    progress = RunProgress(plan, clock=lambda: now[0])
    assert progress.eta_s() == plan.wall_s  # nothing done yet: the plan's own figure
    assert progress.position("b", 2) == "target 2/2 b · rep 2/2"
    halfway = None
    for target in plan.targets:
        for _ in range(plan.repetitions):
            progress.finish_phase(target.provision_s)
            for step in target.steps:
                progress.finish_phase(step.estimated_s + target.step_overhead_s)
            progress.finish_phase(target.teardown_s)
            # This machine runs at half the plan's speed: the ETA says twice the plan's remainder.
            now[0] = 2 * progress.completed
            if halfway is None:
                halfway = progress.eta_s()
                assert halfway == 2 * (plan.wall_s - progress.completed)
    assert progress.completed == plan.wall_s and progress.eta_s() == 0
