"""Prices of targets under every pricing model, from the dated tables in ``workloads/pricing/*.json``.

A target's price is a list of **lines** (:class:`Line`), each in USD per hour under every pricing
model (:data:`MODELS`: on-demand, 1- and 3-year standard reserved with no, partial or all upfront as
effective hourly rates, and spot): the instance, its storage split into capacity, provisioned IOPS
and provisioned throughput, and the client host that runs sysbench (RDS, Aurora). A line is
**serving** when it is part of what the database costs to run (instance, storage): cost per 1,000 tps
counts the serving lines only, so every kind is compared like with like (an EC2 target runs sysbench
on itself and has no client host; an RDS target's client is the benchmark's, not the database's).
What a run costs (the plan) counts every line, on-demand.

Reservations and spot apply to instances only: EBS and RDS storage, IOPS and throughput cost the
same under every model (seed 002: "IO provisioned volumes ... reserved instances do not provide much
savings"). Aurora's storage and I/O are billed by use and stay out of $/hour (a note says so).

Kinds build their lines in :data:`LINE_BUILDERS` (``ec2``, ``rds``, ``aurora``, ``existing`` with an
instance type, as ``import --instance-type`` records it, ``cluster``). A cluster (issue 25) has a
``nodes`` line (``quantity`` nodes), the node storage lines the same way (every striped volume of
every node), its proxy host when it has its own (serving), the cross-zone traffic (serving: AWS bills
$0.01 per GB each way between zones) and its client (not serving). The traffic is billed by use: the
plan's line is ``pending`` (priced after the run, never shown as $0), and the results replace it with
the bytes the nodes measured (:func:`with_cross_zone`, per thread count; the model is
``benchfleet.stats.cost.cross_zone_bytes_per_s``). A local cluster shows the line as what it ``would``
cost across zones, counted in no total.

A target the tables cannot price is **refused**, never shown as free: :attr:`TargetPrices.missing`
names the field (``region`` when the tables hold nothing for the region) and the reason. A target's
own ``price_per_hour`` is one "given" line, the same under every model; local targets cost 0 unless
they say so. A target without a region is priced in the ``home_region`` the caller gives (the
deployed stack's), else :data:`DEFAULT_REGION`.

Standard library and pydantic only (Lambdas import this module). The tables are found in
``$BENCHFLEET_PRICING`` or ``<workloads>/pricing``; each section is stamped with its ``as_of`` date
and its source (``python -m benchfleet.cost.catalogue_refresh --live`` rebuilds them from the AWS Price List
API and EC2's spot price history).

Why one module: a target's price is one walk over its parts with one set of tables, one Line type
and one list of models; the builders per kind (LINE_BUILDERS) call the same storage, I/O and traffic
lines, and split apart they would pass the tables and the models between modules for nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from benchfleet.cluster import jobs as clusterjob

DEFAULT_REGION = "us-east-1"
HOURS_PER_MONTH = 730

# ---- pricing models -------------------------------------------------------------------------------

# Reserved options as the tables key them (term_purchase option), standard offering class.
RESERVED_OPTIONS: tuple[str, ...] = ("1y_no_upfront", "1y_partial_upfront", "1y_all_upfront",
                                     "3y_no_upfront", "3y_partial_upfront", "3y_all_upfront")
MODELS: tuple[str, ...] = ("on_demand", *(f"reserved_{o}" for o in RESERVED_OPTIONS), "spot")
# What `results` shows unless asked otherwise: seed 002's pair (1-year, all upfront).
HEADLINE_MODELS: tuple[str, ...] = ("on_demand", "reserved_1y_all_upfront")
MODEL_LABELS: dict[str, str] = {
    "on_demand": "on-demand",
    **{f"reserved_{o}": f"{o[:2]} RI {o[3:].replace('_', ' ')}" for o in RESERVED_OPTIONS},
    "spot": "spot",
}
# Hours of a reservation's term: an upfront fee becomes an effective hourly rate over them (AWS's own
# "effective hourly" counts 365-day years).
TERM_HOURS = {"1y": 8760, "3y": 26280}

# Line items, in the order a breakdown lists them.
LINE_ITEMS: tuple[str, ...] = ("given", "instance", "nodes", "proxy", "storage", "iops", "throughput",
                               "cross_zone", "client")


def effective_hourly(upfront_usd: float, hourly_usd: float, term: str) -> float:
    """A reservation's cost per hour of its term: upfront / term hours + the hourly rate."""
    return upfront_usd / TERM_HOURS[term] + hourly_usd


# ---- the tables -----------------------------------------------------------------------------------

class Allowance(BaseModel):
    """What a volume of ``from_gb`` GiB or more includes instead of the type's smaller allowance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    from_gb: int = Field(ge=1)
    included_iops: int = Field(ge=0)
    included_throughput_mbps: int = Field(ge=0)


class StorageRate(BaseModel):
    """Monthly rates of one volume type in one region."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    gb_month: float = Field(ge=0)
    iops_month: float | None = Field(None, ge=0, description="per provisioned IOPS above included_iops")
    throughput_mbps_month: float | None = Field(None, ge=0)
    included_iops: int = 0
    included_throughput_mbps: int = 0
    # RDS gp3 includes 12,000 IOPS and 500 MiB/s from 400 GiB (3,000 / 125 below): billing the larger
    # volume's baseline as provisioned doubled an RDS target's $/h (issue 41 item 2).
    larger: list[Allowance] = Field([], description="larger allowances by volume size (RDS gp3)")
    iops_tiers: list[tuple[int | None, float]] | None = Field(
        None, description="(upper bound of the tier or None, $/IOPS-month), in order (io2)")

    def included(self, size_gb: int) -> tuple[int, int]:
        """(IOPS, MiB/s) a volume of ``size_gb`` includes: the largest allowance it reaches."""
        reached = [a for a in self.larger if size_gb >= a.from_gb]
        if not reached:
            return self.included_iops, self.included_throughput_mbps
        top = max(reached, key=lambda a: a.from_gb)
        return top.included_iops, top.included_throughput_mbps


class Section(BaseModel):
    """Prices of one model family beyond on-demand (reserved, spot), with their own date and source.
    ``approximate``: written by hand, not read from AWS: refresh before relying on a figure."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    as_of: str | None = None
    source: str = ""
    approximate: bool = False
    regions: dict[str, dict[str, Any]] = {}


class PriceTable(BaseModel):
    """One file of workloads/pricing: on-demand instance prices by region and type (``regions``),
    ``reserved`` (effective hourly by option) and ``spot`` sections, optional storage rates."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    service: str
    as_of: str
    currency: str = "USD"
    price_type: str
    unit: str
    source: str = ""
    regions: dict[str, dict[str, Any]]
    reserved: Section = Section()
    spot: Section = Section()
    storage: dict[str, Any] = {}
    data_transfer: dict[str, float] = {}
    # ec2: ``public_ipv4_usd_per_hour`` (AWS bills every public IPv4 address, a running instance's
    # included, since February 2024: $0.005 an hour).
    addresses: dict[str, float] = {}
    notes: dict[str, str] = {}

    def instance(self, region: str, type_: str) -> float | None:
        """On-demand $/hour of an instance type (None: not in the table)."""
        value = self.regions.get(region, {}).get(type_)
        return float(value) if isinstance(value, int | float) else None

    def rate(self, region: str, type_: str, model: str) -> float | None:
        """$/hour of an instance type under ``model`` (one of :data:`MODELS`), None when not listed."""
        if model == "on_demand":
            return self.instance(region, type_)
        if model == "spot":
            value = self.spot.regions.get(region, {}).get(type_)
        else:
            options = self.reserved.regions.get(region, {}).get(type_) or {}
            value = options.get(model.removeprefix("reserved_"))
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

    def sources(self) -> dict[str, dict[str, Any]]:
        """Per table and section: its date, its source and whether it is approximate (for notes)."""
        out: dict[str, dict[str, Any]] = {}
        for name in ("ec2", "rds", "aurora", "ebs"):
            table: PriceTable = getattr(self, name)
            out[name] = {"on_demand": {"as_of": table.as_of, "source": table.source}}
            for section in ("reserved", "spot"):
                s: Section = getattr(table, section)
                if s.regions or s.as_of:
                    out[name][section] = {"as_of": s.as_of, "source": s.source, "approximate": s.approximate}
        return out

    def regions(self) -> list[str]:
        """Regions with any instance price."""
        return sorted({r for t in (self.ec2, self.rds, self.aurora) for r, v in t.regions.items() if v})


def pricing_dir() -> Path:
    env = os.environ.get("BENCHFLEET_PRICING")
    if env:
        return Path(env)
    from benchfleet.spec.documents import workloads_dir

    return workloads_dir() / "pricing"


TABLE_NAMES = ("ec2", "rds", "aurora", "ebs")


@lru_cache(maxsize=8)
def _load(directory: str) -> Prices:
    root = Path(directory)
    tables = {}
    for name in TABLE_NAMES:
        with (root / f"{name}.json").open() as f:
            tables[name] = PriceTable.model_validate(json.load(f))
    return Prices.model_validate(tables)


def load_prices(directory: Path | None = None) -> Prices:
    """The price tables (cached per directory)."""
    return _load(str(directory or pricing_dir()))


# ---- lines ----------------------------------------------------------------------------------------

# How a line's price is known (``Line.basis``): from the tables (``list``), from what the run measured
# (``measured``: cross-zone traffic), not yet (``pending``: the plan's cross-zone line, priced after the
# run; its $/hour is None and no total counts it), or hypothetically (``would``: a local cluster's
# traffic as it would cost across zones; never in a total, the target is free).
BASES: tuple[str, ...] = ("list", "measured", "pending", "would")


@dataclass(frozen=True)
class Line:
    """One part of a target's price: ``usd_per_hour`` by model (None: not in the tables for that
    model), for ``quantity`` hosts or volumes together. ``serving``: counted in cost per 1,000 tps.
    ``basis``: how it is known (:data:`BASES`); ``gb_per_hour``: the traffic a cross-zone line prices."""

    item: str
    what: str
    usd_per_hour: Mapping[str, float | None]
    serving: bool = True
    quantity: int = 1
    basis: str = "list"
    gb_per_hour: float | None = None
    usd_per_gb_each_way: float | None = None

    @property
    def counted(self) -> bool:
        """In a total: neither pending (not yet known) nor hypothetical."""
        return self.basis in ("list", "measured")

    def as_dict(self) -> dict[str, Any]:
        out = {"item": self.item, "what": self.what, "quantity": self.quantity, "serving": self.serving,
               "basis": self.basis, "usd_per_hour": {m: _round(v) for m, v in self.usd_per_hour.items()}}
        if self.gb_per_hour is not None:
            out["gb_per_hour"] = _round(self.gb_per_hour)
        if self.usd_per_gb_each_way is not None:
            out["usd_per_gb_each_way"] = self.usd_per_gb_each_way
        return out


def same_for_every_model(usd_per_hour: float) -> dict[str, float | None]:
    return dict.fromkeys(MODELS, usd_per_hour)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


@dataclass(frozen=True)
class TargetPrices:
    """Every line of a target's price, where it was priced, and what the tables lacked
    (``missing``: (field under the target, reason) pairs; empty when on-demand is fully known)."""

    region: str | None
    lines: tuple[Line, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    free: bool = False

    @property
    def priced(self) -> bool:
        return not self.missing

    def total(self, model: str = "on_demand", *, serving_only: bool = False) -> float | None:
        """$/hour under ``model``: every line (what a run rents) or the serving lines only (what
        cost per 1,000 tps counts). None when unpriced or a line has no price under ``model``."""
        if self.missing:
            return None
        values = [line.usd_per_hour.get(model) for line in self.lines
                  if line.counted and (line.serving or not serving_only)]
        if any(v is None for v in values):
            return None
        return round(sum(v for v in values if v is not None), 8)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, as the targets rows record it (``prices``) and ``results`` prints it. A cluster's
        also has ``cross_zone_usd_per_gb_each_way`` (the dashboards' SQL prices the measured bytes)."""
        out: dict[str, Any] = {
            "region": self.region, "lines": [line.as_dict() for line in self.lines],
            "serving": {m: self.total(m, serving_only=True) for m in MODELS}, "run": {m: self.total(m) for m in MODELS},
            "missing": [{"field": f, "reason": r} for f, r in self.missing], "notes": list(self.notes)}
        rate = next((x.usd_per_gb_each_way for x in self.lines if x.usd_per_gb_each_way is not None), None)
        if rate is not None:
            out["cross_zone_usd_per_gb_each_way"] = rate
        return out


def instance_line(table: PriceTable, region: str, type_: str, *, item: str = "instance", quantity: int = 1,
                  serving: bool = True) -> Line:
    """``quantity`` instances of ``type_`` under every model the table lists."""
    return Line(item, type_ if quantity == 1 else f"{quantity} x {type_}",
                {m: None if (r := table.rate(region, type_, m)) is None else r * quantity for m in MODELS},
                serving, quantity)


def storage_parts(rate: StorageRate, size_gb: int, iops: int | None = None,
                  throughput_mbps: int | None = None) -> dict[str, float]:
    """$/hour of one volume by part: ``storage`` (size x $/GB-month), ``iops`` (provisioned IOPS beyond
    what the type includes; io2's tiers), ``throughput`` (MB/s beyond what gp3 includes); monthly rates
    over 730 hours, as AWS bills."""
    included_iops, included_throughput = rate.included(size_gb)
    iops_month = 0.0
    if iops and rate.iops_month is not None:
        billable = max(0, iops - included_iops)
        if rate.iops_tiers:
            lower = 0
            for upper, price in rate.iops_tiers:
                top = billable if upper is None else min(billable, upper)
                if top > lower:
                    iops_month += (top - lower) * price
                lower = upper if upper is not None else billable
        else:
            iops_month = billable * rate.iops_month
    throughput_month = 0.0
    if throughput_mbps and rate.throughput_mbps_month is not None:
        throughput_month = max(0, throughput_mbps - included_throughput) * rate.throughput_mbps_month
    return {"storage": size_gb * rate.gb_month / HOURS_PER_MONTH, "iops": iops_month / HOURS_PER_MONTH,
            "throughput": throughput_month / HOURS_PER_MONTH}


def storage_per_hour(rate: StorageRate, size_gb: int, iops: int | None = None,
                     throughput_mbps: int | None = None) -> float:
    """$/hour of a volume: (size x $/GB-month + IOPS and throughput beyond what the type includes x
    their monthly rates) / 730. io1/io2 bill every provisioned IOPS; gp3 only those above what its size
    includes (3,000; on RDS 12,000 from 400 GiB)."""
    return sum(storage_parts(rate, size_gb, iops, throughput_mbps).values())


def volume_lines(rate: StorageRate | None, storage: Any, *, quantity: int = 1) -> list[Line]:
    """Lines of ``quantity`` volumes of ``storage`` (type, size_gb, iops, throughput_mbps): capacity,
    then provisioned IOPS and throughput when billed. The same under every pricing model (storage has
    no reservation or spot price). Empty for instance store (its price is in the instance's)."""
    if storage is None or str(storage.type) == "instance-store":
        return []
    assert rate is not None
    iops, throughput = getattr(storage, "iops", None), getattr(storage, "throughput_mbps", None)
    parts = storage_parts(rate, int(storage.size_gb), iops, throughput)
    included_iops, included_throughput = rate.included(int(storage.size_gb))
    each = "" if quantity == 1 else f"{quantity} x "
    lines = [Line("storage", f"{each}{storage.type} {storage.size_gb} GB",
                  same_for_every_model(parts["storage"] * quantity), quantity=quantity)]
    if parts["iops"]:
        billed = max(0, int(iops or 0) - included_iops)
        lines.append(Line("iops", f"{each}{billed} provisioned IOPS", same_for_every_model(parts["iops"] * quantity),
                          quantity=quantity))
    if parts["throughput"]:
        billed = max(0, int(throughput or 0) - included_throughput)
        lines.append(Line("throughput", f"{each}{billed} MB/s provisioned throughput",
                          same_for_every_model(parts["throughput"] * quantity), quantity=quantity))
    return lines


def aurora_io_rate(region: str, prices: Prices | None = None) -> float | None:
    """USD per million Aurora I/O requests in ``region`` (the aurora table's ``storage``
    ``io_per_million``, Aurora Standard's; None when the tables hold none for the region)."""
    rate = (prices or load_prices()).aurora.storage.get(region, {}).get("io_per_million")
    return None if rate is None else float(rate)


def cross_zone_rate(prices: Prices) -> float:
    """USD per GB crossing between availability zones, each way (the ec2 table's
    ``data_transfer.inter_az_usd_per_gb_each_way``; AWS: $0.01)."""
    return float(prices.ec2.data_transfer.get("inter_az_usd_per_gb_each_way", 0.01))


def public_ipv4_rate(prices: Prices) -> float:
    """USD per hour of one public IPv4 address (the ec2 table's ``addresses.public_ipv4_usd_per_hour``)."""
    return float(prices.ec2.addresses.get("public_ipv4_usd_per_hour", 0.005))


def public_ipv4_line(prices: Prices, hosts: int) -> Line:
    """The public IPv4 addresses of the ``hosts`` a repetition launches: every host gets one (the
    subnets map public IPs on launch; SSM and the package mirrors are reached through them, no NAT).
    Not serving: the benchmark's way in, not part of what the database costs to run."""
    rate = public_ipv4_rate(prices)
    what = f"{hosts} public IPv4 address{'es' if hosts != 1 else ''} (${rate:g}/h each)"
    return Line("public_ipv4", what, same_for_every_model(hosts * rate), serving=False, quantity=hosts)


def cross_zone_line(prices: Prices, gb_per_hour: float, *, would: bool = False) -> Line:
    """Data crossing availability zones, per hour of the run: billed each way (out of one zone and
    into the other), so 2 x :func:`cross_zone_rate` per GB. ``gb_per_hour``: from the bytes the nodes
    measured (``benchfleet.stats.cost.cross_zone_by_row``, its model in that module). ``would``: a
    local cluster's, as it would cost across zones (counted in no total)."""
    what = f"{gb_per_hour:,.3f} GB/h across zones, measured" + (" (local: would cost)" if would else "")
    rate = cross_zone_rate(prices)
    return Line("cross_zone", what, same_for_every_model(gb_per_hour * 2 * rate),
                basis="would" if would else "measured", gb_per_hour=gb_per_hour, usd_per_gb_each_way=rate)


def line_words(line: Mapping[str, Any]) -> tuple[str | None, str]:
    """How a view shows a line (a :meth:`Line.as_dict`): (text instead of its $/hour or None to show
    it, what the "in cost per 1,000 tps" column says). Pending: "after the run", never $0; would: in
    no total, its $/hour shown as what it would cost."""
    basis = line.get("basis") or "list"
    if basis == "pending":
        return "after the run", "yes, after the run"
    if basis == "would":
        return None, "no (would)"
    return None, "yes" if line.get("serving") else "no"


def pending_cross_zone_line(prices: Prices) -> Line:
    """A cluster's cross-zone line before the run: priced after it from the measured bytes (its $/hour
    is None, no total counts it, and every view says so rather than showing $0)."""
    return Line("cross_zone", f"across zones: priced after the run (${cross_zone_rate(prices):g}/GB each way)",
                dict.fromkeys(MODELS), basis="pending", usd_per_gb_each_way=cross_zone_rate(prices))


def with_cross_zone(doc: Mapping[str, Any], gb_per_hour: float, prices: Prices | None = None, *,
                    would: bool = False) -> dict[str, Any]:
    """A target's ``prices`` document (:meth:`TargetPrices.as_dict`) with its cross-zone line measured:
    the pending line replaced (or the line added) and, unless ``would``, the serving and run totals
    raised by it under every model (a total that is None stays None)."""
    line = cross_zone_line(prices or load_prices(), gb_per_hour, would=would)
    out = dict(doc)
    lines = [dict(x) for x in doc.get("lines") or [] if x.get("item") != "cross_zone"]
    at = next((i for i, x in enumerate(lines) if x.get("item") == "client"), len(lines))
    out["lines"] = [*lines[:at], line.as_dict(), *lines[at:]]
    out["cross_zone_usd_per_gb_each_way"] = line.usd_per_gb_each_way
    if not would:
        usd = line.usd_per_hour["on_demand"] or 0.0
        for total in ("serving", "run"):
            out[total] = {m: None if v is None else _round(v + usd) for m, v in (doc.get(total) or {}).items()}
    return out


Builder = Callable[[Any, Prices, str], tuple[list[Line], list[tuple[str, str]], list[str]]]
LINE_BUILDERS: dict[str, Builder] = {}


def builder(kind: str) -> Callable[[Builder], Builder]:
    """Register the line builder of a target kind: ``(target, prices, region) -> (lines, missing,
    notes)``."""
    def register(fn: Builder) -> Builder:
        LINE_BUILDERS[kind] = fn
        return fn
    return register


def _where(table: PriceTable, region: str, type_: str, field_name: str) -> list[tuple[str, str]]:
    """Why ``type_`` has no on-demand price in ``region`` (empty when it has one)."""
    if table.instance(region, type_) is not None:
        return []
    if not table.regions.get(region):
        return [("region", f"the price tables hold no {table.service} prices for {region} (as of {table.as_of}): "
                           "rebuild them for every region with `python -m benchfleet.cost.catalogue_refresh --live` "
                           "(AWS Price List API), or choose a priced region")]
    what = "instance class" if type_.startswith("db.") else "instance type"
    return [(field_name, f"{what} {type_} has no on-demand price in workloads/pricing/{_file(table)} for {region} "
                         f"(as of {table.as_of})")]


def _file(table: PriceTable) -> str:
    return {"aurora-mysql": "aurora.json", "rds-mysql": "rds.json"}.get(table.service, f"{table.service}.json")


def _storage_rate_lines(table: PriceTable, region: str, storage: Any, *, by_region: bool,
                        quantity: int = 1) -> tuple[list[Line], list[tuple[str, str]]]:
    if storage is None or str(storage.type) == "instance-store":
        return [], []
    rate = table.storage_rate(region, str(storage.type), by_region=by_region)
    if rate is None:
        return [], [("storage.type", f"{storage.type} storage has no price in workloads/pricing/{_file(table)} "
                                     f"for {region} (as of {table.as_of})")]
    return volume_lines(rate, storage, quantity=quantity), []


def _volumes(storage: Any) -> int:
    """Volumes of a target's storage (``storage.volumes``, striping; 1 when not given)."""
    return int(getattr(storage, "volumes", None) or 1)


Built = tuple[list[Line], list[tuple[str, str]], list[str]]


def _region_missing(missing: list[tuple[str, str]]) -> bool:
    """The tables hold nothing for the region: nothing else about the target is worth saying."""
    return bool(missing) and missing[0][0] == "region"


def _priced_instance(table: PriceTable, region: str, type_: str,
                     field_name: str) -> tuple[list[Line], list[tuple[str, str]]]:
    """The instance's line and what the tables lack; no line when they hold nothing for the region
    (nothing else about the target is then worth saying)."""
    missing = _where(table, region, type_, field_name)
    if _region_missing(missing):
        return [], missing
    return [instance_line(table, region, type_)], missing


@builder("ec2")
def _ec2(target: Any, prices: Prices, region: str) -> Built:
    lines, missing = _priced_instance(prices.ec2, region, str(target.instance_type), "instance_type")
    if not lines:
        return [], missing, []
    storage = getattr(target, "storage", None)
    volumes, more = _storage_rate_lines(prices.ebs, region, storage, by_region=True, quantity=_volumes(storage))
    return ([*lines, *volumes, public_ipv4_line(prices, 1)], missing + more,
            ["sysbench runs on the target itself: no client host"])


def _client(target: Any, prices: Prices, region: str, *,
            address: bool = True) -> tuple[list[Line], list[tuple[str, str]]]:
    """The client host's line and, with ``address``, its public IPv4 address's."""
    client = getattr(getattr(target, "client", None), "instance_type", None)
    if not client:
        return [], []
    missing = [("client.instance_type", reason) for f, reason in _where(prices.ec2, region, str(client), "")]
    # The benchmark's host, not the database's: in what the run costs, not in cost per 1,000 tps. The
    # database itself has no public address (PubliclyAccessible false); the client host has one.
    return [instance_line(prices.ec2, region, str(client), item="client", serving=False),
            *([public_ipv4_line(prices, 1)] if address else [])], missing


@builder("rds")
def _rds(target: Any, prices: Prices, region: str) -> Built:
    lines, missing = _priced_instance(prices.rds, region, str(target.instance_class), "instance_class")
    if not lines:
        return [], missing, []
    volumes, more = _storage_rate_lines(prices.rds, region, getattr(target, "storage", None), by_region=False)
    client, client_missing = _client(target, prices, region)
    return [*lines, *volumes, *client], missing + more + client_missing, []


@builder("aurora")
def _aurora(target: Any, prices: Prices, region: str) -> Built:
    lines, missing = _priced_instance(prices.aurora, region, str(target.instance_class), "instance_class")
    if not lines:
        return [], missing, []
    client, client_missing = _client(target, prices, region)
    rates = prices.aurora.storage.get(region) or {}
    note = ("Aurora storage and I/O are billed by use and not in $/hour"
            + (f" (${rates['gb_month']}/GB-month, ${rates['io_per_million']} per million I/O requests)"
               if {"gb_month", "io_per_million"} <= set(rates) else ""))
    return [*lines, *client], missing + client_missing, [note]


@builder("cluster")
def _cluster(target: Any, prices: Prices, region: str) -> Built:
    """A Galera cluster: every node's instance and storage (``nodes`` of each, every striped volume),
    the proxy's own host (serving: the cluster answers through it), the cross-zone traffic (serving;
    pending until the run measured its bytes: :func:`with_cross_zone`), and the client (not serving)."""
    nodes = int(getattr(target, "nodes", None) or 3)  # a stored target as written: the spec's default
    missing = _where(prices.ec2, region, str(target.instance_type), "instance_type")
    if _region_missing(missing):
        return [], missing, []
    lines = [instance_line(prices.ec2, region, str(target.instance_type), item="nodes", quantity=nodes)]
    storage = getattr(target, "storage", None)
    volumes, more = _storage_rate_lines(prices.ebs, region, storage, by_region=True,
                                        quantity=nodes * _volumes(storage))
    proxy: Any = getattr(target, "proxy", None)
    own = clusterjob.proxy_has_host(proxy)
    if own:
        type_ = str(proxy.instance_type)
        more += [("proxy.instance_type", reason) for _, reason in _where(prices.ec2, region, type_, "")]
        lines.append(instance_line(prices.ec2, region, type_, item="proxy"))
    client, client_missing = _client(target, prices, region, address=False)
    client.append(public_ipv4_line(prices, nodes + int(own) + int(bool(client))))  # every host it launches
    notes = ["cross-zone traffic is billed by use: results price it per thread count from the bytes the nodes "
             "measured (workloads/README.md, \"Cost of a cluster\")"]
    if not own and getattr(proxy, "software", "none") != "none":
        notes.append("the proxy runs on the client host (not in cost per 1,000 tps, like every kind's client)")
    cross = [pending_cross_zone_line(prices)]
    return [*lines, *volumes, *cross, *client], missing + more + client_missing, notes


@builder("existing")
def _existing(target: Any, prices: Prices, region: str) -> Built:
    """A server the user runs (or an import): priced only when it names its EC2 instance type."""
    type_ = getattr(target, "instance_type", None)
    if not type_:
        return [], [("instance_type", "an existing server has no list price: give its instance type "
                                      "(import --instance-type) or set price_per_hour")], []
    lines, missing = _priced_instance(prices.ec2, region, str(type_), "instance_type")
    return lines, missing, ["instance only: the server's storage is not known"] if lines else []


def _get(target: Any, key: str) -> Any:
    return target.get(key) if isinstance(target, Mapping) else getattr(target, key, None)


def target_prices(target: Any, prices: Prices | None = None, *, home_region: str | None = None) -> TargetPrices:
    """Every line of ``target``'s price (a spec target, or any object with its fields). A target
    without a region is priced in ``home_region``, else DEFAULT_REGION."""
    override = _get(target, "price_per_hour")
    kind = _get(target, "kind")
    if override is not None:
        region = _get(target, "region")
        given = Line("given", "price_per_hour given for the target", same_for_every_model(float(override)))
        return TargetPrices(region, (given,), notes=("a price given with the target: the same under every "
                                                     "pricing model",))
    if kind == "local":
        return TargetPrices("local", free=True, notes=("a local server: free unless price_per_hour is given",))
    build = LINE_BUILDERS.get(str(kind))
    if build is None:
        return TargetPrices(None, missing=(("kind", f"{kind} targets have no list price; set price_per_hour "
                                                    "on the target"),))
    region = str(_get(target, "region") or home_region or DEFAULT_REGION)
    lines, missing, notes = build(_Fields(target) if isinstance(target, Mapping) else target,
                                  prices or load_prices(), region)
    return TargetPrices(region, tuple(lines), tuple(missing), tuple(notes))


class _Fields:
    """Attribute access over a mapping (a stored spec target), nested mappings included."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        return _Fields(value) if isinstance(value, Mapping) else value


# ---- what the rest of the code asks -----------------------------------------------------------------

def recorded_prices(target: Any, *, plan_price: bool = False) -> str | None:
    """What a targets row records as ``prices`` (JSON: lines, serving and run totals by model, and the
    tables' dates): the QuickSight datasets read cost per 1,000 tps from it. ``plan_price``: the
    target's ``price_per_hour`` is the plan's estimate travelling with it (a cloud target), not a
    price given in the spec. None when the tables cannot be read."""
    if plan_price:
        target = {k: v for k, v in (target.items() if isinstance(target, Mapping) else vars(target).items())
                  if k != "price_per_hour"}
    try:
        prices = load_prices()
        doc = target_prices(_validated(target), prices).as_dict()
    except (OSError, ValueError):
        return None
    doc["as_of"] = {name: table.as_of for name, table in
                    (("ec2", prices.ec2), ("rds", prices.rds), ("aurora", prices.aurora), ("ebs", prices.ebs))}
    return json.dumps(doc, sort_keys=True)


def _validated(target: Any) -> Any:
    """A stored spec target as the spec model reads it (its defaults count: a gp3 100 GB volume),
    else as it is (an import's existing target with an instance type)."""
    if not isinstance(target, Mapping):
        return target
    try:
        return _target_adapter().validate_python(dict(target))
    except ValidationError:
        return target


@lru_cache(maxsize=1)
def _target_adapter() -> Any:
    """The spec's Target validator, built once per process: building one compiles the whole target
    union's schema, and every collected step and imported or local run records a target's prices.
    The spec's models are imported on first use, as before: what only prices need not load them."""
    from benchfleet.spec.targets import Target

    return TypeAdapter(Target)


def plan_breakdowns(targets: Any, *, home_region: str | None = None) -> dict[str, dict[str, Any]]:
    """Each cloud target's lines by pricing model (:meth:`TargetPrices.as_dict`) for ``plan``: what the
    run rents; a cluster's cross-zone line is pending (priced after the run). Local targets: none."""
    return {str(t.id): target_prices(t, home_region=home_region).as_dict() for t in targets
            if str(_get(t, "kind")) != "local"}


def price_per_hour(target: object, *, home_region: str | None = None) -> float | None:
    """On-demand list $/hour of a spec target, every line (instance, storage, client): what a run
    rents while the target exists. Its own ``price_per_hour`` wins; local targets 0; None when the
    tables cannot price it. Fits ``plan.make_plan(loaded, price_lookup=price_per_hour)``."""
    tp = target_prices(target, home_region=home_region)
    return 0.0 if tp.free else tp.total("on_demand")


def unpriced_reason(target: object, prices: Prices | None = None, *, home_region: str | None = None) -> str | None:
    """Why a target has no price (None when it has one): names the missing table entry."""
    tp = target_prices(target, prices, home_region=home_region)
    return "; ".join(reason for _, reason in tp.missing) or None


def unpriced_field(target: object, *, home_region: str | None = None) -> str:
    """The field of an unpriced target to change (``region``, ``instance_type``, ``storage.type``...)."""
    tp = target_prices(target, home_region=home_region)
    return tp.missing[0][0] if tp.missing else ""


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
