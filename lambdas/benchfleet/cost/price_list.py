"""Rebuild ``workloads/pricing/{ec2,ebs,rds,aurora}.json`` from AWS: the Price List API (GetProducts)
for on-demand and reserved prices of instances, EBS and RDS/Aurora storage, and EC2's spot price
history for the spot snapshot. Run by ``python -m benchfleet.cost.catalogue_refresh --live``.

What is read, per region of the catalogue (``workloads/catalogue/aws.json``):

- **EC2** (``AmazonEC2``, Compute Instance, Linux, shared tenancy, no pre-installed software,
  capacity status Used): each catalogue family's types; on-demand $/hour and every standard
  reservation (1 and 3 years, no/partial/all upfront) as an effective hourly rate
  (:func:`benchfleet.cost.pricing.effective_hourly`).
- **EBS** (``AmazonEC2``): $/GB-month per volume type (Storage), $/IOPS-month (System Operation,
  EBS IOPS; io2's tiers by usage type), gp3's $/MB/s-month (Provisioned Throughput).
- **RDS for MySQL and Aurora MySQL** (``AmazonRDS``, Single-AZ): instance classes on demand and
  reserved; RDS storage, IOPS and throughput; Aurora (Standard) storage and I/O.
- **Spot** (EC2 ``DescribeSpotPriceHistory``, Linux/UNIX, the latest price of each type in each
  zone): the median over the region's zones.

Clients are injected (the Price List API answers from us-east-1; EC2 per region), so a test drives
the whole rebuild with botocore's Stubber. Standard library only beyond boto3's clients.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchfleet.cost.pricing import TERM_HOURS, effective_hourly

# Quantities the price list does not carry: what gp3 includes, io2's tier bounds (AWS's EBS pricing).
GP3_INCLUDED = {"included_iops": 3000, "included_throughput_mbps": 125}
# RDS gp3 includes more from 400 GiB (workloads/catalogue/aws.json: provisioned_from_gb, and the IOPS
# and throughput a provisioned volume starts from).
RDS_GP3_INCLUDED = {"included_iops": 3000, "included_throughput_mbps": 125,
                    "larger": [{"from_gb": 400, "included_iops": 12000, "included_throughput_mbps": 500}]}
IO2_TIER_BOUNDS: tuple[int | None, ...] = (32000, 64000, None)
IO2_TIER_OF_USAGE = {"": 0, "tier2": 1, "tier3": 2}

_PURCHASE = {"No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront"}
_TERM = {"1yr": "1y", "3yr": "3y", "1 yr": "1y", "3 yr": "3y"}
# RDS storage volume types as the price list names them.
_RDS_VOLUME = {"General Purpose": "gp2", "General Purpose-GP3": "gp3", "Provisioned IOPS": "io1",
               "Provisioned IOPS-IO2": "io2"}

Products = Callable[[str, Mapping[str, str]], Iterator[dict[str, Any]]]


def products_of(pricing_client: Any) -> Products:
    """GetProducts, paginated, every filter a TERM_MATCH; each product parsed from its JSON string."""
    def products(service: str, filters: Mapping[str, str]) -> Iterator[dict[str, Any]]:
        pages = pricing_client.get_paginator("get_products").paginate(
            ServiceCode=service, FormatVersion="aws_v1",
            Filters=[{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()])
        for page in pages:
            for item in page.get("PriceList", []):
                yield json.loads(item) if isinstance(item, str) else item
    return products


def _dimensions(term: Mapping[str, Any]) -> list[tuple[str, float]]:
    out = []
    for dim in (term.get("priceDimensions") or {}).values():
        usd = (dim.get("pricePerUnit") or {}).get("USD")
        if usd is not None:
            out.append((str(dim.get("unit", "")), float(usd)))
    return out


def on_demand(product: Mapping[str, Any]) -> tuple[str, float] | None:
    """The on-demand (unit, USD per unit) of a product: its first non-zero price dimension."""
    for term in ((product.get("terms") or {}).get("OnDemand") or {}).values():
        for unit, usd in _dimensions(term):
            if usd > 0:
                return unit, usd
    return None


def reserved(product: Mapping[str, Any]) -> dict[str, float]:
    """Standard reservations of a product as effective hourly rates, keyed ``1y_no_upfront``...
    (the tables' keys): upfront fee (unit Quantity) over the term's hours plus the hourly rate."""
    out: dict[str, float] = {}
    for term in ((product.get("terms") or {}).get("Reserved") or {}).values():
        attrs = term.get("termAttributes") or {}
        if attrs.get("OfferingClass", "standard") != "standard":
            continue
        length = _TERM.get(str(attrs.get("LeaseContractLength")))
        option = _PURCHASE.get(str(attrs.get("PurchaseOption")))
        if length is None or option is None:
            continue
        upfront = sum(usd for unit, usd in _dimensions(term) if unit == "Quantity")
        hourly = sum(usd for unit, usd in _dimensions(term) if unit.lower().startswith("hr"))
        out[f"{length}_{option}"] = round(effective_hourly(upfront, hourly, length), 6)
    return dict(sorted(out.items()))


def _attrs(product: Mapping[str, Any]) -> dict[str, str]:
    return dict((product.get("product") or {}).get("attributes") or {})


def _family_of(type_: str) -> str:
    return type_.removeprefix("db.").partition(".")[0]


def _instances(products: Products, service: str, filters: Mapping[str, str], families: Iterable[str],
               ) -> tuple[dict[str, float], dict[str, Any]]:
    """On-demand $/hour and reservations of the products of ``families`` that ``filters`` select;
    Aurora's I/O-Optimized configuration (a usage type of its own) is left out."""
    wanted = set(families)
    prices: dict[str, float] = {}
    reservations: dict[str, Any] = {}
    for product in products(service, filters):
        attrs = _attrs(product)
        type_ = attrs.get("instanceType", "")
        od = on_demand(product)
        if (_family_of(type_) not in wanted or od is None or not od[0].lower().startswith("hr")
                or "IOOptimized" in attrs.get("usagetype", "")):
            continue
        prices[type_] = od[1]
        if (res := reserved(product)):
            reservations[type_] = res
    return dict(sorted(prices.items())), dict(sorted(reservations.items()))


def ec2_instances(products: Products, region: str, families: Iterable[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """On-demand $/hour and reservations of the catalogue families' EC2 types in ``region``."""
    return _instances(products, "AmazonEC2", {
        "regionCode": region, "productFamily": "Compute Instance", "operatingSystem": "Linux", "tenancy": "Shared",
        "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required"}, families)


def ebs_rates(products: Products, region: str) -> dict[str, dict[str, Any]]:
    """Per volume type: $/GB-month, $/IOPS-month (io2 in tiers), gp3's $/MB/s-month and allowances."""
    rates: dict[str, dict[str, Any]] = {}
    tiers: dict[int, float] = {}
    for family, unit_kind in (("Storage", "gb"), ("System Operation", "iops"), ("Provisioned Throughput", "mbps")):
        for product in products("AmazonEC2", {"regionCode": region, "productFamily": family}):
            attrs = _attrs(product)
            volume = attrs.get("volumeApiName", "")
            od = on_demand(product)
            if not volume or od is None:
                continue
            unit, usd = od
            if unit_kind == "gb" and unit == "GB-Mo":
                rates.setdefault(volume, {})["gb_month"] = usd
            elif unit_kind == "iops" and unit == "IOPS-Mo":
                if volume == "io2":
                    tier = attrs.get("usagetype", "").rsplit("io2", 1)[-1].strip(".")
                    tiers[IO2_TIER_OF_USAGE.get(tier, 0)] = usd
                else:
                    rates.setdefault(volume, {})["iops_month"] = usd
            elif unit_kind == "mbps":
                # The price list states gp3 throughput per GiBps-month; the tables per MB/s (MiB/s).
                per = usd / 1024 if unit.lower().startswith("gibps") else usd
                rates.setdefault(volume, {})["throughput_mbps_month"] = round(per, 8)
    if tiers and "io2" in rates:
        rates["io2"]["iops_month"] = tiers.get(0)
        rates["io2"]["iops_tiers"] = [[bound, tiers[i]] for i, bound in enumerate(IO2_TIER_BOUNDS) if i in tiers]
    if "gp3" in rates:
        rates["gp3"].update(GP3_INCLUDED)
    rates = {k: v for k, v in rates.items() if "gb_month" in v}
    if rates:
        rates["instance-store"] = {"gb_month": 0}
    return dict(sorted(rates.items()))


def db_instances(products: Products, region: str, engine: str,
                 families: Iterable[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """On-demand and reserved $/hour of the catalogue's DB classes (``engine``: MySQL, Aurora MySQL),
    Single-AZ; Aurora's I/O-Optimized configuration is left out."""
    return _instances(products, "AmazonRDS", {"regionCode": region, "productFamily": "Database Instance",
                                              "databaseEngine": engine, "deploymentOption": "Single-AZ"}, families)


def rds_storage(products: Products, region: str) -> dict[str, dict[str, Any]]:
    """RDS for MySQL Single-AZ storage: $/GB-month by volume type, provisioned IOPS and gp3 throughput."""
    rates: dict[str, dict[str, Any]] = {}
    base = {"regionCode": region, "databaseEngine": "MySQL", "deploymentOption": "Single-AZ"}
    for product in products("AmazonRDS", {**base, "productFamily": "Database Storage"}):
        volume = _RDS_VOLUME.get(_attrs(product).get("volumeType", ""))
        od = on_demand(product)
        if volume and od and od[0] == "GB-Mo":
            rates.setdefault(volume, {})["gb_month"] = od[1]
    for family, key in (("Provisioned IOPS", "iops_month"), ("Provisioned Throughput", "throughput_mbps_month")):
        for product in products("AmazonRDS", {**base, "productFamily": family}):
            usage = _attrs(product).get("usagetype", "")
            od = on_demand(product)
            if od is None:
                continue
            volume = "gp3" if "GP3" in usage.upper() else "io2" if "IO2" in usage.upper() else "io1"
            rates.setdefault(volume, {})[key] = od[1]
    if "gp3" in rates:
        rates["gp3"].update(RDS_GP3_INCLUDED)
    return {k: v for k, v in sorted(rates.items()) if "gb_month" in v}


# The Price List's Aurora storage and I/O rows (AmazonRDS): their databaseEngine is "Any" in most regions
# (an engine's own, "Aurora MySQL", in some), so no engine filter; Aurora Standard's storage is the volume
# type "General Purpose-Aurora" (I/O-Optimized's is "IO Optimized-Aurora", usage type
# "...Aurora:IO-OptimizedStorageUsage", which a search for "IOOptimized" did not exclude); I/O requests
# are "...Aurora:StorageIOUsage", billed per request (unit IOs).
AURORA_ENGINES = frozenset({"Any", "Aurora MySQL"})
AURORA_STANDARD_VOLUME = "General Purpose-Aurora"


def aurora_storage(products: Products, region: str) -> dict[str, float]:
    """Aurora (Standard) storage $/GB-month and I/O $ per million requests."""
    out: dict[str, float] = {}
    base = {"regionCode": region}
    for product in products("AmazonRDS", {**base, "productFamily": "Database Storage",
                                          "volumeType": AURORA_STANDARD_VOLUME}):
        attrs, od = _attrs(product), on_demand(product)
        if (od and od[0] == "GB-Mo" and attrs.get("volumeType") == AURORA_STANDARD_VOLUME
                and attrs.get("databaseEngine", "Any") in AURORA_ENGINES):
            out["gb_month"] = od[1]
    for product in products("AmazonRDS", {**base, "productFamily": "System Operation"}):
        attrs, od = _attrs(product), on_demand(product)
        if (od and od[0] == "IOs" and attrs.get("usagetype", "").endswith("Aurora:StorageIOUsage")
                and attrs.get("databaseEngine", "Any") in AURORA_ENGINES):
            out["io_per_million"] = round(od[1] * 1_000_000, 6)
    return out


def spot_prices(ec2_client: Any, families: Iterable[str], now: datetime | None = None) -> dict[str, float]:
    """The median over the region's zones of each catalogue type's latest Linux/UNIX spot price."""
    wanted = set(families)
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    pages = ec2_client.get_paginator("describe_spot_price_history").paginate(
        ProductDescriptions=["Linux/UNIX"], StartTime=now or datetime.now(UTC))
    for page in pages:
        for item in page.get("SpotPriceHistory", []):
            type_, zone = item["InstanceType"], item["AvailabilityZone"]
            if _family_of(type_) not in wanted:
                continue
            seen = latest.get((type_, zone))
            if seen is None or item["Timestamp"] > seen[0]:
                latest[(type_, zone)] = (item["Timestamp"], float(item["SpotPrice"]))
    by_type: dict[str, list[float]] = {}
    for (type_, _), (_, price) in latest.items():
        by_type.setdefault(type_, []).append(price)
    return {t: round(statistics.median(v), 6) for t, v in sorted(by_type.items())}


def build_tables(products: Products, ec2_client_of: Callable[[str], Any], regions: Iterable[str],
                 catalogue: Any, *, today: str | None = None,
                 progress: Callable[[str], None] = lambda _: None) -> dict[str, dict[str, Any]]:
    """The four tables, in the shipped files' format, for ``regions``. A region the price list
    knows nothing of is left out (the code then refuses targets there, naming the region)."""
    today = today or datetime.now(UTC).strftime("%Y-%m-%d")
    api = f"AWS Price List API (GetProducts), read on {today} by `python -m benchfleet.cost.catalogue_refresh --live`"
    ec2_families = list(catalogue.ec2.families)
    tables: dict[str, dict[str, Any]] = {
        "ec2": _table("ec2", today, api, "USD per instance-hour",
                      "on-demand list price (Linux, shared tenancy); reserved (standard) and spot in their own "
                      "sections", basis="Linux, shared tenancy"),
        "ebs": _table("ebs", today, api, "USD per GB-month, per provisioned IOPS-month, per MB/s-month",
                      "on-demand list price: EBS has no reservation or spot price (the same under every pricing model)",
                      hours_per_month=730),
        "rds": _table("rds-mysql", today, api, "USD per instance-hour",
                      "on-demand list price; reserved instances in their own section (no spot for databases)",
                      basis="RDS for MySQL, Single-AZ"),
        "aurora": _table("aurora-mysql", today, api, "USD per instance-hour",
                         "on-demand list price; reserved instances in their own section (no spot for databases)",
                         basis="Aurora MySQL, Aurora Standard storage configuration, one writer"),
    }
    spot_source = (f"EC2 DescribeSpotPriceHistory (Linux/UNIX), read on {today}: the median over each region's "
                   "zones of each type's latest price. Spot prices move by the hour: a snapshot, not a quote")
    tables["ec2"]["spot"] = {"as_of": today, "source": spot_source, "approximate": False, "regions": {}}
    tables["ec2"]["data_transfer"] = {"inter_az_usd_per_gb_each_way": 0.01}
    # Every public IPv4 address, a running instance's included, since February 2024 (Amazon VPC pricing).
    tables["ec2"]["addresses"] = {"public_ipv4_usd_per_hour": 0.005}
    for region in regions:
        progress(region)
        od, res = ec2_instances(products, region, ec2_families)
        if not od:
            continue
        tables["ec2"]["regions"][region] = od
        tables["ec2"]["reserved"]["regions"][region] = res
        tables["ec2"]["spot"]["regions"][region] = spot_prices(ec2_client_of(region), ec2_families)
        tables["ebs"]["regions"][region] = ebs_rates(products, region)
        for name, engine, section in (("rds", "MySQL", catalogue.rds),
                                      ("aurora", "Aurora MySQL", catalogue.aurora)):
            od, res = db_instances(products, region, engine, section.classes)
            if od:
                tables[name]["regions"][region] = od
                tables[name]["reserved"]["regions"][region] = res
        tables["rds"]["storage"][region] = rds_storage(products, region)
        tables["aurora"]["storage"][region] = aurora_storage(products, region)
    return tables


def _table(service: str, today: str, source: str, unit: str, price_type: str, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"as_of": today, "currency": "USD", "price_type": price_type, "source": source,
                           "service": service, "unit": unit, **extra, "regions": {}}
    if service != "ebs":
        doc["reserved"] = {"as_of": today, "source": source, "approximate": False,
                           "unit": "effective USD per instance-hour over the term (upfront / term hours + hourly); "
                                   f"standard offering class; terms of {TERM_HOURS['1y']} and {TERM_HOURS['3y']} h",
                           "regions": {}}
    if service in ("rds-mysql", "aurora-mysql"):
        doc["storage"] = {}
    return doc


def dumps_table(doc: Mapping[str, Any]) -> str:
    """A table as the shipped files keep it: one line per instance type or volume type (a mapping of
    plain values short enough is written on one line), so a refresh's diff reads price by price."""
    def render(value: Any, depth: int) -> str:
        if not isinstance(value, dict) or not value:
            return json.dumps(value)
        one_line = json.dumps(value)
        if all(not isinstance(v, dict) for v in value.values()) and len(value) <= 12 and len(one_line) <= 200:
            return one_line
        pad = " " * depth
        inner = ",\n".join(f"{pad} {json.dumps(k)}: {render(v, depth + 1)}" for k, v in value.items())
        return "{\n" + inner + "\n" + pad + "}"
    return render(dict(doc), 0) + "\n"


def write_tables(tables: Mapping[str, Mapping[str, Any]], directory: Path,
                 keep_notes: bool = True) -> list[Path]:
    """Write the tables (the ``notes`` of the files they replace are kept)."""
    written = []
    for name, doc in tables.items():
        path = directory / f"{name}.json"
        out = dict(doc)
        if keep_notes and path.exists():
            old = json.loads(path.read_text()).get("notes")
            if old:
                out["notes"] = old
        path.write_text(dumps_table(out))
        written.append(path)
    return written
