"""Prices of targets: on-demand list prices from ``workloads/pricing/*.json``, converted to $/hour.

``price_per_hour(target)`` is what a target costs while it exists: the instance, plus for RDS and
Aurora the EC2 client that runs sysbench, plus EBS/RDS storage converted from per-month to per-hour
(AWS bills a month as 730 hours). Aurora's storage and I/O are billed by use and left out. Anything
the tables do not know gives None: the plan then lists the target as unpriced rather than guessing.
A target's own ``price_per_hour`` overrides the tables; local targets cost 0 unless they say so.

Standard library and pydantic only (Lambdas import this module). The tables are found in
``$BENCHFLEET_PRICING`` or ``<workloads>/pricing``; each is stamped with its ``as_of`` date.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_REGION = "us-east-1"
HOURS_PER_MONTH = 730


class StorageRate(BaseModel):
    """Monthly rates of one volume type in one region."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    gb_month: float = Field(ge=0)
    iops_month: float | None = Field(None, ge=0, description="per provisioned IOPS above included_iops")
    throughput_mbps_month: float | None = Field(None, ge=0)
    included_iops: int = 0
    included_throughput_mbps: int = 0
    iops_tiers: list[tuple[int | None, float]] | None = Field(
        None, description="(upper bound of the tier or None, $/IOPS-month), in order (io2)")


class PriceTable(BaseModel):
    """One file of workloads/pricing: instance prices by region and type, optional storage rates."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    service: str
    as_of: str
    currency: str = "USD"
    price_type: str
    unit: str
    regions: dict[str, dict[str, Any]]
    storage: dict[str, Any] = {}
    notes: dict[str, str] = {}

    def instance(self, region: str, type_: str) -> float | None:
        value = self.regions.get(region, {}).get(type_)
        return float(value) if isinstance(value, int | float) else None

    def storage_rate(self, region: str, volume_type: str, by_region: bool = False) -> StorageRate | None:
        """The storage rates of ``volume_type`` in ``region`` (EBS keeps them under ``regions``)."""
        source = self.regions if by_region else self.storage
        rate = source.get(region, {}).get(volume_type)
        return StorageRate.model_validate(rate) if isinstance(rate, dict) else None


class Prices(BaseModel):
    model_config = ConfigDict(frozen=True)

    ec2: PriceTable
    rds: PriceTable
    aurora: PriceTable
    ebs: PriceTable

    def stamps(self) -> dict[str, str]:
        """``as_of`` date of each table, for reports ("on-demand list prices as of ...")."""
        return {name: getattr(self, name).as_of for name in ("ec2", "rds", "aurora", "ebs")}


def pricing_dir() -> Path:
    env = os.environ.get("BENCHFLEET_PRICING")
    if env:
        return Path(env)
    from benchfleet.spec import workloads_dir

    return workloads_dir() / "pricing"


@lru_cache(maxsize=8)
def _load(directory: str) -> Prices:
    root = Path(directory)
    tables = {}
    for name in ("ec2", "rds", "aurora", "ebs"):
        with (root / f"{name}.json").open() as f:
            tables[name] = PriceTable.model_validate(json.load(f))
    return Prices.model_validate(tables)


def load_prices(directory: Path | None = None) -> Prices:
    """The price tables (cached per directory)."""
    return _load(str(directory or pricing_dir()))


def storage_per_hour(rate: StorageRate, size_gb: int, iops: int | None = None,
                     throughput_mbps: int | None = None) -> float:
    """$/hour of a volume: (size x $/GB-month + IOPS and throughput beyond what the type includes x
    their monthly rates) / 730. io1/io2 bill every provisioned IOPS; gp3 only those above 3000."""
    monthly = size_gb * rate.gb_month
    if iops and rate.iops_month is not None:
        billable = max(0, iops - rate.included_iops)
        if rate.iops_tiers:
            lower = 0
            for upper, price in rate.iops_tiers:
                top = billable if upper is None else min(billable, upper)
                if top > lower:
                    monthly += (top - lower) * price
                lower = upper if upper is not None else billable
        else:
            monthly += billable * rate.iops_month
    if throughput_mbps and rate.throughput_mbps_month is not None:
        monthly += max(0, throughput_mbps - rate.included_throughput_mbps) * rate.throughput_mbps_month
    return monthly / HOURS_PER_MONTH


def _storage(target: object) -> tuple[str, int, int | None, int | None] | None:
    storage = getattr(target, "storage", None)
    if storage is None:
        return None
    return (str(storage.type), int(storage.size_gb), getattr(storage, "iops", None),
            getattr(storage, "throughput_mbps", None))


def price_breakdown(target: object, prices: Prices | None = None) -> dict[str, float | None]:
    """$/hour of each part of a target: ``instance``, ``client`` (rds/aurora), ``storage``; ``total``
    is their sum, or None when any part is unknown. A target's ``price_per_hour`` is the total."""
    override = getattr(target, "price_per_hour", None)
    kind = getattr(target, "kind", None)
    if override is not None:
        return {"instance": float(override), "client": None, "storage": None, "total": float(override)}
    if kind == "local":
        return {"instance": 0.0, "client": None, "storage": None, "total": 0.0}
    if kind not in ("ec2", "rds", "aurora"):
        return {"instance": None, "client": None, "storage": None, "total": None}
    prices = prices or load_prices()
    region = getattr(target, "region", None) or DEFAULT_REGION
    parts: dict[str, float | None] = {"instance": None, "client": None, "storage": None}
    volume = _storage(target)
    if kind == "ec2":
        parts["instance"] = prices.ec2.instance(region, str(getattr(target, "instance_type", "")))
        parts["client"] = 0.0  # sysbench runs on the target itself
        if volume:
            rate = prices.ebs.storage_rate(region, volume[0], by_region=True)
            parts["storage"] = storage_per_hour(rate, *volume[1:]) if rate else None
        else:
            parts["storage"] = 0.0
    else:
        table = prices.rds if kind == "rds" else prices.aurora
        parts["instance"] = table.instance(region, str(getattr(target, "instance_class", "")))
        client = getattr(target, "client", None)
        parts["client"] = prices.ec2.instance(region, str(getattr(client, "instance_type", "")))
        if kind == "rds" and volume:
            rate = table.storage_rate(region, volume[0])
            parts["storage"] = storage_per_hour(rate, *volume[1:]) if rate else None
        else:
            parts["storage"] = 0.0  # Aurora storage and I/O are billed by use (see module doc)
    known = [v for v in parts.values() if v is not None]
    parts["total"] = round(sum(known), 6) if len(known) == len(parts) else None
    return parts


def price_per_hour(target: object) -> float | None:
    """On-demand list $/hour of a spec target (instance + client for rds/aurora + storage); its own
    ``price_per_hour`` wins; local targets 0; None when a part is not in the tables. Fits
    ``plan.make_plan(loaded, price_lookup=price_per_hour)``."""
    return price_breakdown(target)["total"]


def unpriced_reason(target: object, prices: Prices | None = None) -> str | None:
    """Why a target has no price (None when it has one): names the missing table entry."""
    parts = price_breakdown(target, prices)
    if parts["total"] is not None:
        return None
    kind = getattr(target, "kind", None)
    region = getattr(target, "region", None) or DEFAULT_REGION
    if kind not in ("ec2", "rds", "aurora"):
        return f"{kind} targets have no list price; set price_per_hour on the target"
    missing = [name for name, value in parts.items() if value is None and name != "total"]
    return f"no on-demand price in workloads/pricing for its {', '.join(missing)} in {region}"


# ---- cost of a run ------------------------------------------------------------------------------

def estimated_cost(plan: Any) -> dict[str, Any]:
    """Cost estimate of a ``plan.Plan``: ``total_usd`` (priced targets only), per target
    ``{target_id, price_per_hour, hours, cost_usd}`` and ``unpriced`` target ids."""
    targets = [{"target_id": t.target_id, "price_per_hour": t.price_per_hour,
                "hours": round(t.total_s / 3600, 4), "cost_usd": t.estimated_cost_usd}
               for t in plan.targets]
    return {"total_usd": plan.estimated_cost_usd, "targets": targets, "unpriced": plan.unpriced_targets}


def cost_of_durations(prices: Mapping[str, float | None],
                      durations_s: Mapping[str, float]) -> dict[str, Any]:
    """Actual cost from how long each target existed: ``durations_s`` by target id (all repetitions
    together), ``prices`` $/hour by target id. ``total_usd`` sums the priced targets; ``unpriced``
    lists the others."""
    targets = []
    total = 0.0
    unpriced = []
    for target_id, seconds in durations_s.items():
        price = prices.get(target_id)
        cost = None if price is None else round(price * seconds / 3600, 6)
        if cost is None:
            unpriced.append(target_id)
        else:
            total += cost
        targets.append({"target_id": target_id, "price_per_hour": price, "hours": round(seconds / 3600, 6),
                        "cost_usd": cost})
    return {"total_usd": round(total, 6), "targets": targets, "unpriced": unpriced}


def measured_durations(store: Any, run_id: str,
                       overhead_s: Mapping[str, float] | None = None) -> dict[str, float]:
    """Seconds each target was measured, from its samples: the span between the first and last
    sample of each repetition (all phases), summed over repetitions, plus ``overhead_s`` per
    repetition by target id (e.g. provisioning and teardown, which samples do not see)."""
    rows = store.query(
        "SELECT target_id, repetition, epoch(max(time)) - epoch(min(time)) + 1 AS seconds "
        "FROM samples WHERE run_id = ? GROUP BY target_id, repetition", [run_id])
    out: dict[str, float] = {}
    for row in rows:
        extra = (overhead_s or {}).get(row["target_id"], 0.0)
        out[row["target_id"]] = out.get(row["target_id"], 0.0) + float(row["seconds"]) + extra
    return out
