"""What a run may cost: the server's rules, not the request's. The Plan Lambda applies them to
every execution (scheduled ones included) through ``benchfleet.aws.planning.runplan.check_plan``, and the
API applies the same function before it starts one; the estimate is hosts and control plane
together (Step Functions transitions, Lambda, the store: ``benchfleet.aws.planning.controlplane``).

- Prices come from the deployment's price tables (``benchfleet.cost.pricing``) only: a cloud target's
  ``price_per_hour`` is refused, since a request that names its own price (``0``) could otherwise
  walk past every budget.
- Every cloud target must be priced from the tables: a target they cannot price (a region they hold
  nothing for, a type they lack) is refused naming the field and the region, with or without
  ``budget_usd``, since an estimate that leaves a target out bounds nothing. ``existing`` targets are
  the owner's own hosts: benchfleet creates nothing for them, so they have no price and need none.
- A spec with ``budget_usd`` is held to it. A spec without one is held to the deployment's ceiling
  per run (CDK context key ``maxRunCostUsd`` -> ``MAX_RUN_COST_USD``, default $100).

Every refusal is a ``(field, message)`` pair naming the field to change. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchfleet.plan.model import Plan

DEFAULT_MAX_RUN_COST_USD = 100.0
ENV_KEY = "MAX_RUN_COST_USD"

Problem = tuple[str, str]


def max_run_cost(env: Mapping[str, str]) -> float:
    """The ceiling from the environment; the safe default when unset. A value that is not a positive
    number is a deployment error: raise rather than run without a ceiling."""
    raw = env.get(ENV_KEY, "").strip()
    if not raw:
        return DEFAULT_MAX_RUN_COST_USD
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{ENV_KEY}={raw!r} is not a number of USD") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{ENV_KEY}={raw!r} must be a positive number of USD")
    return value


def request_price_problems(targets: Sequence[Any]) -> list[Problem]:
    """A price in the request is refused: the server prices targets from its tables."""
    return [(f"targets[{i}].price_per_hour",
             "prices come from this deployment's price tables (workloads/pricing), not from the request; "
             "remove it (budget_usd bounds what a run may cost)")
            for i, target in enumerate(targets)
            if getattr(target, "kind", None) != "local" and getattr(target, "price_per_hour", None) is not None]


def _unpriced_field(index: int, target: Any) -> str:
    """The field of an unpriced target to change: the part the tables do not know."""
    where = f"targets[{index}]"
    if target is None:  # the spec's targets were not given: the target itself
        return where
    from benchfleet.cost.pricing import unpriced_field

    try:
        name = unpriced_field(target)
    except (OSError, ValueError, KeyError):  # no tables at all: the target's own type is as good as any
        name = ""
    if not name:
        name = "instance_type" if getattr(target, "kind", None) == "ec2" else "instance_class"
    return f"{where}.{name}"


def unpriced_reason(target: Any) -> str:
    """Why the price tables cannot price ``target`` (benchfleet.cost.pricing), for a refusal."""
    try:
        from benchfleet.cost.pricing import unpriced_reason as reason

        return reason(target) or "not in the price tables"
    except (ImportError, OSError, ValueError, KeyError):
        return "the price tables are not available"


def unpriced_problems(plan: Plan, targets: Sequence[Any],
                      unpriced_reason: Callable[[Any], str] = unpriced_reason) -> list[Problem]:
    """A refusal for every cloud target the tables cannot price (``existing`` ones need no price)."""
    index = {t.target_id: i for i, t in enumerate(plan.targets)}
    problems = []
    for t in plan.unpriced_targets:
        i = index[t]
        if plan.targets[i].kind == "existing":
            continue
        spec_target = targets[i] if i < len(targets) else None
        reason = unpriced_reason(spec_target) if spec_target is not None else "not in the price tables"
        problems.append((_unpriced_field(i, spec_target),
                         f"target {t} has no price ({reason}): every cloud target is priced from the tables "
                         "before it runs, so that budget_usd and the deployment's ceiling bound the whole run"))
    return problems


def _estimate(plan: Plan) -> str:
    """The estimate and its parts: hosts, Aurora I/O (estimated from the workload), control plane."""
    cp, used = plan.control_plane_usd, plan.usage_usd
    parts = [f"hosts ${plan.hosts_usd:.2f}"]
    if used:
        parts.append(f"Aurora I/O ${used:.2f} (estimated: `benchfleet plan` gives the assumption)")
    if cp:
        parts.append(f"control plane ${cp:.2f}")
    return f"the estimate is ${plan.estimated_cost_usd:.2f}" + (f" ({', '.join(parts)})" if len(parts) > 1 else "")


def cost_problems(plan: Plan, targets: Sequence[Any], ceiling: float,
                  unpriced_reason: Callable[[Any], str] = unpriced_reason) -> list[Problem]:
    """Refusals of a planned run: a price in the request; a target the tables cannot price; the
    run's budget, or without one the deployment's ceiling (``plan`` priced with its control plane's
    charges, when it has them)."""
    problems = request_price_problems(targets)
    if problems:  # the plan was priced with the request's own numbers: nothing else is meaningful
        return problems
    problems = unpriced_problems(plan, targets, unpriced_reason)
    if problems:
        return problems
    if plan.budget_usd is not None:
        if plan.over_budget:
            return [("budget_usd", f"{_estimate(plan)}, above the budget of ${plan.budget_usd:.2f}")]
        return []
    if plan.estimated_cost_usd > ceiling:
        return [("budget_usd", f"{_estimate(plan)}, above this deployment's ceiling of "
                               f"${ceiling:.2f} per run for a spec without budget_usd (CDK context key "
                               "maxRunCostUsd); set budget_usd to run it")]
    return []
