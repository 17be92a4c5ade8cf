"""What the targets of a stored run cost per hour: the figures its cost tables are built from.

A run's targets rows carry the price the run was planned with; older runs and imports carry none,
and the spec's target is priced from the tables instead (``spec_target_price``). ``target_prices``
gives every pricing model's hourly price of one stored target; ``cross_zone_prices`` and
``row_cross_zone`` the measured cross-zone traffic of a cluster (or what a local one would carry)
and what it costs.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Any


def spec_target_price(spec_target: Mapping[str, Any]) -> float | None:
    """$/hour of a target as the spec wrote it, from the price tables (for runs whose targets rows
    carry no price_per_hour). None when the target does not validate here or is unpriced."""
    from pydantic import ValidationError

    from benchfleet.cost import pricing

    try:
        target = _target_adapter().validate_python(dict(spec_target))
        return pricing.price_per_hour(target)
    except (ValidationError, OSError, ValueError):
        return None


@functools.cache
def _target_adapter() -> Any:
    """The spec's Target validator, built once: building it is ~2 ms of schema work, which a
    200-target run's report paid per target (0.4 s of its CPU)."""
    from pydantic import TypeAdapter

    from benchfleet.spec.targets import Target

    return TypeAdapter(Target)


def target_prices(meta: Mapping[str, Any], spec_target: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Every line of a target's price under every pricing model (``benchfleet.cost.pricing.target_prices``),
    from today's tables, for the region the target ran in (its targets rows), else its spec's: the spec
    target as validated (so its defaults, a gp3 100 GB volume, count), else what the rows say (an
    imported target with an instance type). A local target is priced by the price it recorded. None
    when nothing can be said (no tables, no kind)."""
    from pydantic import ValidationError

    from benchfleet.cost import pricing

    kind = meta.get("kind")
    given = dict(spec_target or {})
    region = meta.get("region") or given.get("region")
    subject: Any
    if kind == "local":
        recorded = meta.get("price_per_hour")
        subject = {"kind": "local", "price_per_hour": recorded if recorded else None}
    else:
        try:
            subject = _target_adapter().validate_python({**given, **({"region": region} if region else {})})
        except ValidationError:
            subject = {"kind": kind, "instance_type": meta.get("instance_type"), "region": region,
                       "price_per_hour": given.get("price_per_hour")}
    try:
        prices = pricing.load_prices()
        found = pricing.target_prices(subject, prices)
    except (OSError, ValueError):
        return None
    out = found.as_dict()
    used = _TABLES_OF_KIND.get(str(kind), ())
    out["sources"] = {k: v for k, v in prices.sources().items() if k in used and not found.free}
    return out


# The price tables a target of each kind is priced from (its instance, storage and client).
_TABLES_OF_KIND = {"ec2": ("ec2", "ebs"), "existing": ("ec2",), "rds": ("rds", "ec2"), "aurora": ("aurora", "ec2"),
                   "cluster": ("ec2", "ebs")}


def cross_zone_prices(target_meta: Mapping[str, dict[str, Any]],
                       cross_zone: Mapping[tuple[str, str, int], Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per target with measured cross-zone traffic: its ``serving`` $/hour without the traffic (each row
    adds its own), its ``rate`` (USD per GB crossing, both ways) and ``basis`` (``measured`` for a cloud
    cluster, ``would`` for a local one); the target's ``prices`` get the line at the mean GB/hour of
    its rows (:func:`benchfleet.cost.pricing.with_cross_zone`)."""
    from benchfleet.cost import pricing

    by_target: dict[str, list[float]] = defaultdict(list)
    for (target_id, _, _), figures in cross_zone.items():
        by_target[target_id].append(float(figures["gb_per_hour"]))
    out: dict[str, dict[str, Any]] = {}
    for target_id, values in by_target.items():
        meta = target_meta.get(target_id)
        doc = (meta or {}).get("prices")
        if meta is None or doc is None or meta.get("kind") not in ("cluster", "local"):
            continue
        would = meta.get("kind") == "local"
        try:
            prices = pricing.load_prices()
        except (OSError, ValueError):
            continue
        out[target_id] = {"serving": doc.get("serving") or {}, "rate": 2 * pricing.cross_zone_rate(prices),
                          "basis": "would" if would else "measured"}
        meta["prices"] = pricing.with_cross_zone(doc, statistics.fmean(values), prices, would=would)
    return out


def row_cross_zone(traffic: Mapping[str, Any] | None, figures: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A row's cross-zone traffic: GB/hour (replication, client, total), its $/hour (both ways, the
    same under every pricing model) and its basis (``would``: a local cluster's, in no total)."""
    if traffic is None or figures is None:
        return None
    return {**figures, "usd_per_hour": float(figures["gb_per_hour"]) * float(traffic["rate"]),
            "basis": traffic["basis"]}
