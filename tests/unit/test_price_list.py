"""`catalogue_refresh --live` rebuilds the price tables from the AWS Price List API and EC2's spot
price history, offline: botocore's Stubber answers GetProducts and DescribeSpotPriceHistory with
products shaped as the Price List API returns them (aws_v1), and the tables it writes are the ones
`benchfleet.cost.pricing` reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from benchfleet.cost import catalogue_refresh, pricing
from benchfleet.cost.catalogue import load_catalogue
from benchfleet.spec.loading import parse_spec

REGION = "eu-west-1"
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def product(attrs: dict[str, str], od: tuple[str, float] | None,
            reserved: list[tuple[str, str, float, float]] = ()) -> str:
    """One GetProducts item: a product's attributes, its OnDemand term and its Reserved terms
    (LeaseContractLength, PurchaseOption, upfront fee, hourly rate)."""
    sku = f"SKU{abs(hash(json.dumps(attrs, sort_keys=True))) % 10**8}"
    terms: dict[str, Any] = {"OnDemand": {}, "Reserved": {}}
    if od:
        terms["OnDemand"][f"{sku}.JRTCKXETXF"] = {"priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
            "unit": od[0], "pricePerUnit": {"USD": f"{od[1]:.10f}"}, "description": "on demand"}}}
    for i, (length, option, upfront, hourly) in enumerate(reserved):
        dims = {f"{sku}.R{i}.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": f"{hourly:.10f}"}}}
        if upfront:
            dims[f"{sku}.R{i}.2TG2D8R56U"] = {"unit": "Quantity", "pricePerUnit": {"USD": f"{upfront}"}}
        terms["Reserved"][f"{sku}.R{i}"] = {"priceDimensions": dims, "termAttributes": {
            "LeaseContractLength": length, "OfferingClass": "standard", "PurchaseOption": option}}
    # A convertible reservation the tables leave out.
    terms["Reserved"][f"{sku}.CV"] = {"priceDimensions": {"x": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0001"}}},
                                      "termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "convertible",
                                                         "PurchaseOption": "No Upfront"}}
    return json.dumps({"product": {"productFamily": "x", "attributes": {"regionCode": REGION, **attrs}, "sku": sku},
                       "serviceCode": "x", "terms": terms, "version": "20261101", "publicationDate": "2026-11-01"})


M6I_RESERVED = [("1yr", "No Upfront", 0, 0.0674), ("1yr", "Partial Upfront", 289, 0.033),
                ("1yr", "All Upfront", 566, 0), ("3yr", "No Upfront", 0, 0.0465),
                ("3yr", "Partial Upfront", 598, 0.0228), ("3yr", "All Upfront", 1124, 0)]


def ec2_filters(family: str) -> list[dict[str, str]]:
    base = {"regionCode": REGION, "productFamily": family}
    if family == "Compute Instance":
        base |= {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
                 "licenseModel": "No License required"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in base.items()]


def stub_everything(pricing_stub: Stubber, ec2_stub: Stubber) -> None:
    def answer(service: str, items: list[str], filters: list[dict[str, str]] | Any = ANY, token: str | None = None,
               next_token: str | None = None) -> None:
        params: dict[str, Any] = {"ServiceCode": service, "FormatVersion": "aws_v1", "Filters": filters}
        if token:
            params["NextToken"] = token
        response: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": items}
        if next_token:
            response["NextToken"] = next_token
        pricing_stub.add_response("get_products", response, params)

    # EC2 instances, over two pages; a type outside the catalogue and a Windows-only price are left out.
    answer("AmazonEC2", [product({"instanceType": "m6i.large"}, ("Hrs", 0.107), M6I_RESERVED),
                         product({"instanceType": "p4d.24xlarge"}, ("Hrs", 32.7726))],
           ec2_filters("Compute Instance"), next_token="page-2")
    answer("AmazonEC2", [product({"instanceType": "c6i.xlarge"}, ("Hrs", 0.192),
                                 [("1yr", "All Upfront", 1011, 0)])],
           ec2_filters("Compute Instance"), token="page-2")
    ec2_stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [
        {"InstanceType": "m6i.large", "AvailabilityZone": f"{REGION}{z}", "SpotPrice": p,
         "ProductDescription": "Linux/UNIX", "Timestamp": NOW - timedelta(minutes=m)}
        for z, p, m in (("a", "0.0400", 5), ("b", "0.0380", 3), ("c", "0.0450", 1), ("a", "0.0990", 90))]},
        {"ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY})
    # EBS: capacity, IOPS (io2 in three tiers), gp3 throughput (stated per GiBps-month).
    answer("AmazonEC2", [product({"volumeApiName": v}, ("GB-Mo", p)) for v, p in
                         (("gp2", 0.11), ("gp3", 0.088), ("io1", 0.138), ("io2", 0.138))], ec2_filters("Storage"))
    answer("AmazonEC2", [product({"volumeApiName": "io1", "usagetype": "EU-EBS:VolumeP-IOPS.piops"},
                                 ("IOPS-Mo", 0.072)),
                         product({"volumeApiName": "gp3", "usagetype": "EU-EBS:VolumeP-IOPS.gp3"}, ("IOPS-Mo", 0.0055)),
                         product({"volumeApiName": "io2", "usagetype": "EU-EBS:VolumeP-IOPS.io2"}, ("IOPS-Mo", 0.072)),
                         product({"volumeApiName": "io2", "usagetype": "EU-EBS:VolumeP-IOPS.io2.tier2"},
                                 ("IOPS-Mo", 0.0504)),
                         product({"volumeApiName": "io2", "usagetype": "EU-EBS:VolumeP-IOPS.io2.tier3"},
                                 ("IOPS-Mo", 0.0353))], ec2_filters("System Operation"))
    answer("AmazonEC2", [product({"volumeApiName": "gp3"}, ("GiBps-mo", 45.056))],
           ec2_filters("Provisioned Throughput"))
    # RDS for MySQL and Aurora MySQL instances (Aurora's I/O-Optimized configuration is left out).
    answer("AmazonRDS", [product({"instanceType": "db.r6g.large", "usagetype": "EU-InstanceUsage:db.r6g.large"},
                                 ("Hrs", 0.24), [("1yr", "All Upfront", 1310, 0), ("3yr", "All Upfront", 2541, 0)])])
    answer("AmazonRDS", [product({"instanceType": "db.r6g.large", "usagetype": "EU-InstanceUsage:db.r6g.large"},
                                 ("Hrs", 0.29), [("1yr", "Partial Upfront", 600, 0.1)]),
                         product({"instanceType": "db.r6g.large",
                                  "usagetype": "EU-InstanceUsageIOOptimized:db.r6g.large"}, ("Hrs", 0.377))])
    # RDS storage, IOPS, throughput.
    answer("AmazonRDS", [product({"volumeType": "General Purpose-GP3"}, ("GB-Mo", 0.127)),
                         product({"volumeType": "Provisioned IOPS"}, ("GB-Mo", 0.138))])
    answer("AmazonRDS", [product({"usagetype": "EU-RDS:PIOPS"}, ("IOPS-Mo", 0.11)),
                         product({"usagetype": "EU-RDS:GP3-PIOPS"}, ("IOPS-Mo", 0.022))])
    answer("AmazonRDS", [product({"usagetype": "EU-RDS:GP3-PTP"}, ("MBPS-Mo", 0.088))])
    # Aurora storage and I/O as the Price List has them (issue 41 item 14): databaseEngine "Any", Aurora
    # Standard's storage by its volume type, I/O-Optimized's beside it (usage type IO-Optimized, hyphenated:
    # a search for "IOOptimized" kept it), the I/O requests among other System Operation rows.
    def aurora(family: str, **more: str) -> list[dict[str, str]]:
        return [{"Type": "TERM_MATCH", "Field": k, "Value": v}
                for k, v in {"regionCode": REGION, "productFamily": family, **more}.items()]

    answer("AmazonRDS", [
        product({"usagetype": "EU-Aurora:StorageUsage", "databaseEngine": "Any",
                 "volumeType": "General Purpose-Aurora"}, ("GB-Mo", 0.11)),
        product({"usagetype": "EU-Aurora:IO-OptimizedStorageUsage", "databaseEngine": "Any",
                 "volumeType": "IO Optimized-Aurora"}, ("GB-Mo", 0.248))],
        aurora("Database Storage", volumeType="General Purpose-Aurora"))
    answer("AmazonRDS", [
        product({"usagetype": "EU-Aurora:StorageIOUsage", "databaseEngine": "Any"}, ("IOs", 0.00000022)),
        product({"usagetype": "EU-Aurora:BacktrackUsage", "databaseEngine": "Aurora MySQL"}, ("IOs", 0.0000012))],
        aurora("System Operation"))


@pytest.fixture
def refreshed(tmp_path: Path) -> Path:
    pricing_client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x",
                                  aws_secret_access_key="x")
    ec2_client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(pricing_client) as ps, Stubber(ec2_client) as es:
        stub_everything(ps, es)
        shutil_copy_notes(tmp_path)
        written = catalogue_refresh.refresh_prices(pricing_client, lambda region: ec2_client, tmp_path, [REGION])
        ps.assert_no_pending_responses()
        es.assert_no_pending_responses()
    assert sorted(p.name for p in written) == ["aurora.json", "ebs.json", "ec2.json", "rds.json"]
    return tmp_path


def shutil_copy_notes(directory: Path) -> None:
    """The files a refresh replaces: their notes are kept."""
    (directory / "ec2.json").write_text(json.dumps({"notes": {"m2": "kept"}}))


def target(**kwargs: object) -> object:
    return parse_spec({"name": "p", "workload": "w", "targets": [{"id": "t", "region": REGION, **kwargs}]}).targets[0]


def test_the_refreshed_tables_price_a_region_the_shipped_ones_refuse(refreshed: Path) -> None:
    prices = pricing.load_prices(refreshed)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert prices.ec2.as_of == prices.ec2.reserved.as_of == prices.ec2.spot.as_of == today
    assert "Price List API" in prices.ec2.source and not prices.ec2.reserved.approximate
    assert json.loads((refreshed / "ec2.json").read_text())["notes"] == {"m2": "kept"}
    # Only catalogue families; convertible reservations left out; effective hourly = upfront / hours + hourly.
    assert prices.ec2.regions[REGION] == {"c6i.xlarge": 0.192, "m6i.large": 0.107}
    assert prices.ec2.reserved.regions[REGION]["m6i.large"] == pytest.approx({
        "1y_no_upfront": 0.0674, "1y_partial_upfront": 289 / 8760 + 0.033, "1y_all_upfront": 566 / 8760,
        "3y_no_upfront": 0.0465, "3y_partial_upfront": 598 / 26280 + 0.0228, "3y_all_upfront": 1124 / 26280},
        abs=1e-6)
    # Spot: each zone's latest price (a's older 0.099 is history), median over the zones.
    assert prices.ec2.spot.regions[REGION] == {"m6i.large": 0.04}
    gp3 = prices.ebs.storage_rate(REGION, "gp3", by_region=True)
    assert gp3 is not None and (gp3.gb_month, gp3.iops_month, gp3.included_iops) == (0.088, 0.0055, 3000)
    assert gp3.throughput_mbps_month == pytest.approx(45.056 / 1024)
    io2 = prices.ebs.storage_rate(REGION, "io2", by_region=True)
    assert io2 is not None and io2.iops_tiers == [(32000, 0.072), (64000, 0.0504), (None, 0.0353)]
    assert prices.rds.instance(REGION, "db.r6g.large") == 0.24
    assert prices.aurora.instance(REGION, "db.r6g.large") == 0.29  # not the I/O-Optimized 0.377
    assert prices.rds.storage[REGION]["gp3"] == {"gb_month": 0.127, "iops_month": 0.022,
                                                 "throughput_mbps_month": 0.088, "included_iops": 3000,
                                                 "included_throughput_mbps": 125, "larger": [
        {"from_gb": 400, "included_iops": 12000, "included_throughput_mbps": 500}]}
    assert prices.aurora.storage[REGION] == {"gb_month": 0.11, "io_per_million": 0.22}


def test_a_target_in_the_refreshed_region_is_priced_under_every_model_by_hand(refreshed: Path) -> None:
    prices = pricing.load_prices(refreshed)
    ec2 = pricing.target_prices(target(kind="ec2", instance_type="m6i.large",
                                       storage={"type": "gp3", "size_gb": 200, "iops": 4000}), prices)
    storage = (200 * 0.088 + 1000 * 0.0055) / 730  # 1000 IOPS above the 3000 included
    ipv4 = 0.005  # the host's public IPv4 address
    assert ec2.total("on_demand") == pytest.approx(0.107 + storage + ipv4, abs=1e-8)
    # Effective hourly rates are kept to 6 decimals ($0.000001 per hour).
    assert ec2.total("reserved_1y_all_upfront") == pytest.approx(566 / 8760 + storage + ipv4, abs=1e-6)
    assert ec2.total("spot") == pytest.approx(0.04 + storage + ipv4, abs=1e-8)
    rds = pricing.target_prices(target(kind="rds", instance_class="db.r6g.large",
                                       storage={"type": "io1", "size_gb": 100, "iops": 3000}), prices)
    # The client (c6i.xlarge, default) is in what the run costs, not in what the database costs.
    assert rds.total("on_demand", serving_only=True) == pytest.approx(0.24 + (100 * 0.138 + 3000 * 0.11) / 730)
    assert rds.total("on_demand") == pytest.approx(0.24 + 0.192 + (100 * 0.138 + 3000 * 0.11) / 730 + ipv4)
    assert rds.total("reserved_3y_all_upfront", serving_only=True) == pytest.approx(
        2541 / 26280 + (100 * 0.138 + 3000 * 0.11) / 730, abs=1e-6)
    assert rds.total("reserved_1y_no_upfront") is None  # not offered in the price list: no figure, not zero


def test_pricing_needs_live_and_the_shipped_tables_are_in_the_refresh_format() -> None:
    with pytest.raises(SystemExit) as e:
        catalogue_refresh.main(["--only", "pricing"])
    assert e.value.code == 2
    from benchfleet.cost.price_list import dumps_table

    for name in ("ec2", "ebs", "rds", "aurora"):
        path = pricing.pricing_dir() / f"{name}.json"
        assert dumps_table(json.loads(path.read_text())) == path.read_text(), name
    assert set(load_catalogue().regions) >= set(pricing.load_prices().regions())
