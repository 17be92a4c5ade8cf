#!/usr/bin/env python3
"""How honest is ``benchfleet plan`` about a local run's wall time? (Benchmark, not a test.)

Runs a spec locally (the demo by default; ``--scale smoke`` for a smoke run) with an observer that
times every phase, and prints ``name=value`` lines: the plan's estimate, the actual wall time and
their ratio (the target is 0.75..1.25), then the measured phase figures the plan's model of local
overheads is calibrated from (benchfleet.plan.model LOCAL_*): server setup, teardown, each step's overhead
over its planned seconds, and the prepare step's load rate.

    .venv/bin/python tests/perf/local_estimate.py [SPEC] [--scale smoke]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lambdas"))

from benchfleet.cost.pricing import price_per_hour  # noqa: E402
from benchfleet.local.runner import run_local  # noqa: E402
from benchfleet.local.store import open_store  # noqa: E402
from benchfleet.plan.model import PlanStep, make_plan  # noqa: E402
from benchfleet.plan.scale import apply_scale  # noqa: E402
from benchfleet.spec.loading import load_spec  # noqa: E402
from benchfleet.workload.records import AgentOutput  # noqa: E402


class Timer:
    """An Observer that keeps the time of each phase of the run."""

    def __init__(self) -> None:
        self.mark = time.monotonic()
        self.setup: list[float] = []
        self.teardown: list[float] = []
        self.step_overhead: dict[str, list[float]] = {"prepare": [], "warmup": [], "measure": []}
        self.prepare_s: list[float] = []
        self.last_step_end = self.mark

    def _lap(self) -> float:
        now = time.monotonic()
        lap, self.mark = now - self.mark, now
        return lap

    def target_started(self, target_id: str, repetition: int, steps: list[PlanStep]) -> None:
        self._lap()

    def target_ready(self, target_id: str, repetition: int) -> None:
        self.setup.append(self._lap())

    def step_started(self, target_id: str, repetition: int, step: PlanStep) -> None:
        self._lap()

    def sample(self, target_id: str, step: PlanStep, second: float, tps: float) -> None:
        pass

    def step_finished(self, target_id: str, repetition: int, step: PlanStep, output: AgentOutput) -> None:
        lap = self._lap()
        if step.kind == "prepare":
            self.prepare_s.append(lap)
        else:
            self.step_overhead[step.kind].append(lap - step.duration_s)
        # The cooldown sleep follows step_finished; it is counted with the next phase's lap otherwise.
        self.mark += step.cooldown_s

    def target_finished(self, target_id: str, repetition: int) -> None:
        self.teardown.append(self._lap())

    def message(self, text: str) -> None:
        print(f"# notice: {text}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", nargs="?", default=str(REPO / "workloads" / "comparisons" / "demo-durability.yaml"))
    parser.add_argument("--scale", default="full", choices=("full", "smoke"))
    args = parser.parse_args()
    loaded = apply_scale(load_spec(args.spec), args.scale)
    plan = make_plan(loaded, price_per_hour)
    name = f"{Path(args.spec).stem}_{args.scale}"
    timer = Timer()
    with tempfile.TemporaryDirectory(prefix="benchfleet-estimate-") as home, open_store(Path(home)) as store:
        started = time.monotonic()
        result = run_local(loaded, plan, store, Path(home), timer)
        actual = time.monotonic() - started
    if result.status != "succeeded":
        print(f"# run {result.status}: {result.message}")
        return 1
    rows = loaded.workload.tables * loaded.workload.table_size
    print(f"{name}_estimate_s={plan.wall_s}")
    print(f"{name}_actual_s={actual:.1f}")
    print(f"{name}_ratio={plan.wall_s / actual:.3f}")
    print(f"local_setup_s_median={statistics.median(timer.setup):.2f}")
    print(f"local_teardown_s_median={statistics.median(timer.teardown):.2f}")
    for kind, laps in timer.step_overhead.items():
        if laps:
            print(f"local_{kind}_step_overhead_s_median={statistics.median(laps):.2f}")
    print(f"local_prepare_s_median={statistics.median(timer.prepare_s):.2f}")
    print(f"local_prepare_rows={rows}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
