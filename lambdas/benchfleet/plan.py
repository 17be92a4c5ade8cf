"""spec -> Plan: every target x repetition x step, with durations and a cost estimate.

The plan is what both backends execute: the local runner walks it in order, the state machine maps
over it. Steps are ``prepare`` (load the data set and fingerprint), ``warmup`` and one ``measure``
step per thread count; each is one agent invocation.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from benchfleet.spec import ComparisonSpec, LoadedSpec, Workload

StepKind = Literal["prepare", "warmup", "measure"]

# Seconds a target takes to become usable, by kind: EC2 boot + package install, RDS/Aurora creation.
# Rough, documented figures: they only size estimates and timeouts, never measurements.
# The local figures are calibrated by tests/perf/local_estimate.py, which times every phase of a real
# local run (medians on a 2-core machine shared with other work, November 2026): a fresh MariaDB
# server (initialise, start, create the user) 5.3 s, its teardown 1.2 s. An existing server's safety
# check and clean-up are a few client round trips, within the step overheads' rounding.
PROVISION_SECONDS = {"local": 6, "existing": 0, "ec2": 300, "rds": 900, "aurora": 1200}
TEARDOWN_SECONDS = {"local": 2, "existing": 0, "ec2": 60, "rds": 600, "aurora": 900}
# Seconds each step takes beyond its planned duration when the agent runs here: starting the agent and
# sysbench, connecting, and the final summary (measured 0.9 s per warm-up or measure step). Cloud
# steps' overheads (SSM delivery, polling) are covered by their own waits, not by the estimate.
STEP_OVERHEAD_SECONDS = {"local": 1, "existing": 1}
# Rows per second sysbench prepare loads, per prepare thread (conservative, from local runs), and the
# prepare step's fixed cost (fingerprint, cleanup, connecting: 1.5 s measured for 4,000 rows).
PREPARE_ROWS_PER_S_PER_THREAD = 40_000
PREPARE_MIN_SECONDS = 2
# Margin added to the plan's wall time for the execution timeout and resource expiry.
EXPIRY_MARGIN = timedelta(hours=2)

PriceLookup = Callable[[object], float | None]


class PlanStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    kind: StepKind
    threads: int
    duration_s: int
    cooldown_s: int = 0

    @property
    def estimated_s(self) -> int:
        return self.duration_s + self.cooldown_s


class TargetPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    target_id: str
    kind: str
    # Where the target runs: its spec's region; None for a cloud target that names none (it runs in
    # the deployed stack's home region, which the plan resolves); "local" for local targets.
    region: str | None = None
    repetitions: int
    steps: list[PlanStep]
    provision_s: int
    teardown_s: int
    step_overhead_s: int = 0
    price_per_hour: float | None
    server_options: dict[str, bool | int | float | str] = {}

    @property
    def repetition_s(self) -> int:
        """One repetition: provision, every step with its overhead, teardown (each repetition on a
        fresh host)."""
        return (self.provision_s + sum(s.estimated_s + self.step_overhead_s for s in self.steps)
                + self.teardown_s)

    @property
    def total_s(self) -> int:
        return self.repetition_s * self.repetitions

    @property
    def estimated_cost_usd(self) -> float | None:
        if self.price_per_hour is None:
            return None
        return round(self.price_per_hour * self.total_s / 3600, 4)


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    workload: str
    mode: Literal["local", "aws"]
    repetitions: int
    targets: list[TargetPlan]
    budget_usd: float | None

    @property
    def wall_s(self) -> int:
        """Local targets run one after another (two databases on one machine disturb each other);
        AWS targets run side by side, repetitions one after another per target."""
        totals = [t.total_s for t in self.targets]
        return sum(totals) if self.mode == "local" else max(totals)

    @property
    def estimated_cost_usd(self) -> float:
        return round(sum(t.estimated_cost_usd or 0.0 for t in self.targets), 4)

    @property
    def unpriced_targets(self) -> list[str]:
        return [t.target_id for t in self.targets if t.price_per_hour is None and t.kind != "local"]

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.estimated_cost_usd > self.budget_usd

    def expires_at(self, start: datetime | None = None) -> datetime:
        """When anything this plan creates may be removed by the janitor."""
        start = start or datetime.now(UTC)
        return start + timedelta(seconds=self.wall_s) + EXPIRY_MARGIN

    def summary(self) -> dict[str, object]:
        return {
            "name": self.name, "workload": self.workload, "mode": self.mode,
            "repetitions": self.repetitions, "wall_s": self.wall_s,
            "estimated_cost_usd": self.estimated_cost_usd, "budget_usd": self.budget_usd,
            "over_budget": self.over_budget, "unpriced_targets": self.unpriced_targets,
            "targets": [
                {"target_id": t.target_id, "kind": t.kind, "region": t.region, "server_options": t.server_options,
                 "steps": [s.model_dump() for s in t.steps],
                 "repetition_s": t.repetition_s, "total_s": t.total_s,
                 "price_per_hour": t.price_per_hour, "estimated_cost_usd": t.estimated_cost_usd}
                for t in self.targets],
        }


def workload_steps(workload: Workload) -> list[PlanStep]:
    rows = workload.tables * workload.table_size
    prepare_s = max(PREPARE_MIN_SECONDS, rows // (PREPARE_ROWS_PER_S_PER_THREAD * max(
        1, min(workload.prepare_threads, workload.tables))))
    steps = [PlanStep(index=0, name="prepare", kind="prepare", threads=workload.prepare_threads,
                      duration_s=prepare_s)]
    if workload.warmup_s:
        steps.append(PlanStep(index=1, name="warmup", kind="warmup", threads=max(workload.threads),
                              duration_s=workload.warmup_s))
    for threads in workload.threads:
        steps.append(PlanStep(index=len(steps), name=f"t{threads:04d}", kind="measure", threads=threads,
                              duration_s=workload.duration_s, cooldown_s=workload.cooldown_s))
    return steps


def make_plan(loaded: LoadedSpec, price_lookup: PriceLookup | None = None) -> Plan:
    """Expand a resolved spec. ``price_lookup(target)`` gives $/hour (target plus its client)."""
    spec: ComparisonSpec = loaded.spec
    steps = workload_steps(loaded.workload)
    targets = []
    for target in spec.targets:
        price = target.price_per_hour
        if price is None and price_lookup is not None:
            price = price_lookup(target)
        # Run from here, nothing is rented: a local server, or the user's own server (its running cost
        # is theirs whether or not it is benchmarked).
        if price is None and (target.kind == "local" or spec.is_local):
            price = 0.0
        targets.append(TargetPlan(
            target_id=target.id, kind=target.kind,
            region=getattr(target, "region", None) or ("local" if spec.is_local else None),
            repetitions=spec.repetitions, steps=steps,
            provision_s=PROVISION_SECONDS[target.kind], teardown_s=TEARDOWN_SECONDS[target.kind],
            step_overhead_s=STEP_OVERHEAD_SECONDS.get(target.kind, 0) if spec.is_local else 0,
            price_per_hour=price, server_options=target.server_options))
    return Plan(name=spec.name, workload=loaded.workload.name, mode="local" if spec.is_local else "aws",
                repetitions=spec.repetitions, targets=targets, budget_usd=spec.budget_usd)
