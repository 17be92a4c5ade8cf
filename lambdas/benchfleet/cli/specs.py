"""A spec file as a command reads it: loaded, scaled and planned, with what would stop it running.

``load_plan`` turns a spec path into (LoadedSpec, Plan), a bad file into exit 2 naming the file and
field; ``home_region`` / ``home_targets`` are the deployment's region and its published targets
(``plan`` and ``run --remote``); ``unpriced_problem`` and ``fit_problem`` say why a cloud run would be
refused (no price, over the region's caps) before anything starts.
"""

from __future__ import annotations

import os
from typing import Any

from benchfleet.cli.base import EXIT_USAGE, CliError
from benchfleet.cost.pricing import price_per_hour
from benchfleet.plan.model import Plan, make_plan
from benchfleet.spec.loading import LoadedSpec, load_spec


def load_plan(path: str, scale: str = "full", local: bool = False) -> tuple[LoadedSpec, Plan]:
    from benchfleet.plan.scale import apply_scale, as_local

    loaded = apply_scale(load_spec(path), scale)
    if local and not loaded.spec.is_local:
        loaded = as_local(loaded)
    if loaded.spec.is_local:
        return loaded, make_plan(loaded, price_per_hour)
    # A cloud run: planned as the deployed state machine runs it, control plane included, every target
    # where it will run (one without a region: in the stack's home region, priced there).
    from benchfleet.aws.errors import PlanRejected
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.regions import TargetRegions
    from benchfleet.cost.catalogue import spec_problems

    # What exists on AWS (types, regions, engines, storage a type can hold), refused here as the API
    # and Plan refuse it, rather than after the spec has been sent.
    home = home_region()[0]
    problems = spec_problems(list(loaded.spec.targets), home_region=home)
    if problems:
        raise CliError(f"{path}: " + "; ".join(f"{field}: {message}" for field, message in problems), EXIT_USAGE)
    loaded = TargetRegions.of(home).resolve(loaded)
    try:
        plan, _, _ = runplan.aws_plan(loaded, price_per_hour, within=region_caps())
    except PlanRejected as e:
        raise CliError(f"{path}: {e}", EXIT_USAGE) from None
    return loaded, plan


def home_region() -> tuple[str, str]:
    """The region the stack is deployed in, as this machine knows it, and where that came from:
    AWS_REGION, AWS_DEFAULT_REGION, the AWS configuration's region, else us-east-1 (said so)."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(name):
            return os.environ[name], name
    try:
        import boto3

        configured = boto3.session.Session().region_name
    except Exception:  # an unreadable AWS configuration: as if there were none
        configured = None
    if configured:
        return str(configured), "the AWS configuration's region"
    from benchfleet.cost.pricing import DEFAULT_REGION

    return DEFAULT_REGION, "no AWS region is configured here (set AWS_REGION to the stack's region)"


def home_targets(path: str, plan: Plan) -> dict[str, Any] | None:
    """Which cloud targets of the spec as written name no region (they run in the home region)."""
    if plan.mode == "local":
        return None
    written = load_spec(path).spec.targets
    ids = [t.id for t in written if t.kind in ("ec2", "rds", "aurora", "cluster") and not getattr(t, "region", None)]
    if not ids:
        return None
    region, source = home_region()
    return {"region": region, "source": source, "targets": ids}


def unpriced_problem(plan: Plan, loaded: LoadedSpec) -> str | None:
    """A cloud target the price tables cannot price is refused here as the deployed stack refuses it
    (benchfleet.cost.ceiling), naming the field and the region."""
    if plan.mode == "local":
        return None
    from benchfleet.cost.ceiling import unpriced_problems

    problems = unpriced_problems(plan, list(loaded.spec.targets))
    return f"{problems[0][0]}: {problems[0][1]}" if problems else None


def region_caps() -> Any:
    """The deployment's per-region caps (its context keys maxVcpusPerRegion / maxHostsPerRegion), here
    from $BENCHFLEET_MAX_VCPUS_PER_REGION / $BENCHFLEET_MAX_HOSTS_PER_REGION, else the defaults."""
    from benchfleet.aws.planning import runplan

    def cap(name: str) -> int | None:
        value = os.environ.get(name, "")
        return int(value) if value.isdigit() and int(value) > 0 else None

    return runplan.caps(cap("BENCHFLEET_MAX_VCPUS_PER_REGION"), cap("BENCHFLEET_MAX_HOSTS_PER_REGION"))


def fit_problem(plan: Plan) -> str | None:
    """Why the deployed state machine would refuse a cloud plan (its caps: ``region_caps``), or the local
    runner a local one (a spacing it would not keep: it went by silently, repetitions back to back)."""
    if plan.mode == "local":
        from benchfleet.plan.model import spacing_problem

        return spacing_problem(plan, "the local runner")
    from benchfleet.aws.planning import runplan

    within = region_caps()
    return runplan.fit_problem(plan, max_vcpus=within.max_vcpus, max_hosts=within.max_hosts)
