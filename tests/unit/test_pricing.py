"""benchfleet.cost.pricing: the price tables (dated, list prices, the seeds' families) and $/hour of targets."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pydantic
import pytest

from benchfleet.cost import pricing
from benchfleet.local.store import DuckDBStore
from benchfleet.plan.model import make_plan
from benchfleet.spec.loading import LoadedSpec, parse_spec
from benchfleet.spec.workload import Workload
from benchfleet.workload.records import AgentOutput, Sample

TABLES = Path(__file__).resolve().parents[2] / "workloads" / "pricing"
IPV4 = 0.005  # $/hour of a public IPv4 address: every host a run launches gets one


def target(**kwargs: object) -> object:
    spec = parse_spec({"name": "p", "workload": "w", "targets": [{"id": "t", **kwargs}]})
    return spec.targets[0]


def on_demand_lines(target: object) -> dict[str, float | None]:
    """On-demand $/hour of each line of a target's price, by item, as plan and the targets rows
    read them (pricing.target_prices)."""
    return {line.item: line.usd_per_hour["on_demand"] for line in pricing.target_prices(target).lines}


@pytest.mark.parametrize("name", ["ec2", "rds", "aurora", "ebs"])
def test_every_table_is_dated_and_says_list_price(name: str) -> None:
    doc = json.loads((TABLES / f"{name}.json").read_text())
    assert date.fromisoformat(doc["as_of"])
    assert "on-demand list price" in doc["price_type"]
    assert "us-east-1" in doc["regions"]
    assert doc["currency"] == "USD"


def test_the_seeds_families_and_current_generations_are_priced() -> None:
    prices = pricing.load_prices(TABLES)
    east = prices.ec2.regions["us-east-1"]
    for family in ("t3", "m5", "c5", "c5a", "r4", "i3", "m2", "m6i", "m6a", "m6g", "c6i", "c6g", "c7i",
                   "c7g", "m7i", "m7g", "r6i", "r6g", "i4i", "t4g"):
        assert any(k.startswith(f"{family}.") for k in east), family
    assert all(v > 0 for v in east.values())
    for cls in ("db.r6g.large", "db.r6i.large", "db.m6g.large", "db.t3.medium"):
        assert prices.rds.instance("us-east-1", cls), cls
    for cls in ("db.r6g.large", "db.r6i.large", "db.t3.medium"):
        assert prices.aurora.instance("us-east-1", cls), cls
    for region in ("us-west-1", "eu-north-1"):
        assert prices.ec2.instance(region, "t3.large") and prices.ec2.instance(region, "m5.large")


@pytest.mark.parametrize(("type_", "price"), [
    # seed 003's price tables (us-east-1, on-demand)
    ("m6i.large", 0.096), ("m6a.2xlarge", 0.3456), ("m6g.16xlarge", 2.464), ("m5.4xlarge", 0.768),
    ("m5a.large", 0.086), ("c5.12xlarge", 2.04), ("c5a.16xlarge", 2.464), ("c6g.large", 0.068)])
def test_prices_agree_with_seed_003(type_: str, price: float) -> None:
    assert pricing.load_prices(TABLES).ec2.instance("us-east-1", type_) == pytest.approx(price)


def test_ec2_instance_plus_storage() -> None:
    t = target(kind="ec2", instance_type="m6i.large")  # default storage: gp3 100 GB
    assert pricing.price_per_hour(t) == pytest.approx(0.096 + 100 * 0.08 / 730 + IPV4, abs=1e-6)
    gp2 = target(kind="ec2", instance_type="m5.large", region="eu-north-1", storage={"type": "gp2", "size_gb": 200})
    assert pricing.price_per_hour(gp2) == pytest.approx(0.102 + 200 * 0.1045 / 730 + IPV4, abs=1e-6)
    nvme = target(kind="ec2", instance_type="i3.large", storage={"type": "instance-store", "size_gb": 400})
    assert pricing.price_per_hour(nvme) == pytest.approx(0.156 + IPV4)


def test_gp3_and_io_volumes_bill_iops_and_throughput() -> None:
    prices = pricing.load_prices(TABLES)
    gp3 = prices.ebs.storage_rate("us-east-1", "gp3", by_region=True)
    assert gp3 is not None
    # 3000 IOPS and 125 MB/s are included: only 1000 IOPS and 125 MB/s are billed
    assert pricing.storage_per_hour(gp3, 100, 4000, 250) == pytest.approx(
        (100 * 0.08 + 1000 * 0.005 + 125 * 0.04) / 730)
    io1 = prices.ebs.storage_rate("us-east-1", "io1", by_region=True)
    assert io1 is not None
    assert pricing.storage_per_hour(io1, 100, 3000) == pytest.approx((12.5 + 3000 * 0.065) / 730)
    io2 = prices.ebs.storage_rate("us-east-1", "io2", by_region=True)
    assert io2 is not None
    assert pricing.storage_per_hour(io2, 100, 40000) == pytest.approx(
        (12.5 + 32000 * 0.065 + 8000 * 0.0455) / 730)


def test_rds_and_aurora_include_the_client() -> None:
    rds = target(kind="rds", instance_class="db.r6g.large",
                 storage={"type": "io1", "size_gb": 100, "iops": 3000})
    parts = on_demand_lines(rds)
    assert parts["instance"] == pytest.approx(0.215)
    assert parts["client"] == pytest.approx(0.17)  # default client c6i.xlarge
    # RDS io1: $0.125/GB-month and $0.10 per provisioned IOPS-month, two lines of the storage.
    assert parts == pytest.approx({"instance": 0.215, "client": 0.17, "storage": 100 * 0.125 / 730,
                                   "iops": 3000 * 0.10 / 730, "public_ipv4": IPV4})  # the client's address
    assert pricing.price_per_hour(rds) == pytest.approx(0.215 + 0.17 + 312.5 / 730 + IPV4, abs=1e-6)
    aurora = target(kind="aurora", instance_class="db.r6g.large", client={"instance_type": "c6g.large"})
    assert pricing.price_per_hour(aurora) == pytest.approx(0.26 + 0.068 + IPV4)


def test_every_host_a_run_launches_pays_for_its_public_ipv4_address() -> None:
    """Issue 41 item 13: AWS bills each public IPv4 address $0.005 an hour since February 2024, a running
    instance's included, and every host gets one (MapPublicIpOnLaunch): the canary's t4g.small ($0.0168/h)
    was under-priced by about 30%. In what the run costs (plan, ceilings, results), not in cost per
    1,000 tps (the benchmark's way in, like the client host)."""
    def addresses(t: object) -> tuple[int, float | None, float | None]:
        (line,) = [x for x in pricing.target_prices(t).lines if x.item == "public_ipv4"]
        tp = pricing.target_prices(t)
        return line.quantity, tp.total("on_demand"), tp.total("on_demand", serving_only=True)

    canary = target(kind="ec2", instance_type="t4g.small", engine="mariadb")
    hosts, run, serving = addresses(canary)
    assert hosts == 1 and run is not None and serving is not None
    assert run - serving == pytest.approx(IPV4)  # the address only: an EC2 target has no client host
    assert pricing.price_per_hour(canary) == pytest.approx(0.0168 + 100 * 0.08 / 730 + IPV4, abs=1e-6)
    for kind, extra in (("rds", {}), ("aurora", {})):  # the database has no public address; its client has
        assert addresses(target(kind=kind, instance_class="db.r6g.large", **extra))[0] == 1
    cluster = target(kind="cluster", instance_type="m6i.large", nodes=3,
                     proxy={"software": "proxysql", "instance_type": "c6i.large"})
    assert addresses(cluster)[0] == 5  # 3 nodes, the proxy's host, the client
    assert addresses(target(kind="cluster", instance_type="m6i.large", nodes=5, proxy="haproxy"))[0] == 6
    imported = {"kind": "existing", "instance_type": "m6i.large"}  # as import --instance-type records it
    assert [x.item for x in pricing.target_prices(imported).lines] == ["instance"]  # the user's host


def test_rds_gp3_bills_only_what_its_size_does_not_include() -> None:
    """Issue 41 item 2: from 400 GiB RDS gp3 includes 12,000 IOPS and 500 MiB/s; those were billed as
    9,000 provisioned IOPS ($0.2466/h) and 375 MB/s ($0.0411/h): database $/h 0.565 instead of 0.278."""
    def rds(storage: dict[str, object]) -> dict[str, float | None]:
        return on_demand_lines(target(kind="rds", instance_class="db.r6g.large", storage=storage))

    at_baseline = rds({"type": "gp3", "size_gb": 400, "iops": 12000, "throughput_mbps": 500})
    assert at_baseline == pytest.approx({"instance": 0.215, "client": 0.17, "storage": 400 * 0.115 / 730,
                                         "public_ipv4": 0.005})  # the client's address (item 13)
    assert sum(v for k, v in at_baseline.items() if k not in ("client", "public_ipv4")) == \
        pytest.approx(0.278, abs=5e-4)
    above = rds({"type": "gp3", "size_gb": 1000, "iops": 15000, "throughput_mbps": 600})
    assert above["iops"] == pytest.approx(3000 * 0.02 / 730)
    assert above["throughput"] == pytest.approx(100 * 0.08 / 730)
    lines = pricing.target_prices(target(kind="rds", instance_class="db.r6g.large", storage={
        "type": "gp3", "size_gb": 1000, "iops": 15000, "throughput_mbps": 600})).lines
    assert [line.what for line in lines if line.item in ("iops", "throughput")] == [
        "3000 provisioned IOPS", "100 MB/s provisioned throughput"]
    # Below 400 GiB the smaller allowance (RDS takes no provisioned IOPS there: the catalogue refuses it).
    assert "iops" not in rds({"type": "gp3", "size_gb": 399})


def test_the_rds_gp3_allowances_are_the_catalogues() -> None:
    """The price table's larger allowance and the catalogue's rule (from which size RDS gp3 takes
    provisioned IOPS, and what a provisioned volume starts from) are one fact written twice: kept equal."""
    from benchfleet.cost import catalogue

    rule = catalogue.load_catalogue().storage["rds"]["gp3"]
    rate = pricing.load_prices().rds.storage_rate("us-east-1", "gp3")
    assert rate is not None and rule.iops is not None and rule.throughput_mbps is not None
    assert rate.included(rule.provisioned_from_gb or 0) == (rule.iops[0], rule.throughput_mbps[0])
    assert rate.included((rule.provisioned_from_gb or 0) - 1) == (3000, 125)


def test_overrides_local_existing_and_unknown() -> None:
    assert pricing.price_per_hour(target(kind="ec2", instance_type="m6i.large", price_per_hour=1.5)) == 1.5
    assert pricing.price_per_hour(target(kind="local")) == 0.0
    assert pricing.price_per_hour(target(kind="local", price_per_hour=0.25)) == 0.25
    assert pricing.price_per_hour(target(kind="existing", host="db.example.com")) is None
    unknown = target(kind="ec2", instance_type="x9z.large")
    assert pricing.price_per_hour(unknown) is None
    assert "instance" in (pricing.unpriced_reason(unknown) or "")
    far = target(kind="ec2", instance_type="m6i.large", region="ap-south-2")
    assert pricing.price_per_hour(far) is None
    assert "ap-south-2" in (pricing.unpriced_reason(far) or "")


def test_plan_uses_the_lookup_and_lists_unpriced_targets() -> None:
    spec = parse_spec({"name": "p", "workload": "w", "repetitions": 2, "targets": [
        {"id": "a", "kind": "ec2", "instance_type": "m6g.large"},
        {"id": "b", "kind": "ec2", "instance_type": "x9z.large"},
        {"id": "c", "kind": "local"}]})
    loaded = LoadedSpec(spec=spec, workload=Workload(name="w", test="oltp_read_only"), source="test")
    plan = make_plan(loaded, price_lookup=pricing.price_per_hour)
    assert plan.unpriced_targets == ["b"]
    a = plan.targets[0]
    assert a.price_per_hour == pytest.approx(0.077 + 8 / 730 + IPV4, abs=1e-6)
    estimate = pricing.estimated_cost(plan)
    assert estimate["unpriced"] == ["b"]
    assert estimate["total_usd"] == pytest.approx(a.price_per_hour * a.total_s / 3600, abs=1e-3)


def test_actual_cost_from_measured_durations(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "b.duckdb")
    try:
        from datetime import UTC, datetime, timedelta
        t0 = datetime(2026, 11, 1, tzinfo=UTC)
        samples = [Sample(run_id="r", target_id=tid, repetition=rep, workload="w", step="t0001", phase="measure",
                          threads=1, time=t0 + timedelta(seconds=s), second=float(s), tps=1, qps=1,
                          reads_per_s=0, writes_per_s=0, other_per_s=0, latency_ms=1, latency_pct=95,
                          errors_per_s=0, reconnects_per_s=0)
                   for tid in ("a", "b") for rep in (1, 2) for s in range(180)]
        store.add_output(AgentOutput(samples=samples))
        durations = pricing.measured_durations(store, "r", overhead_s={"a": 300})
        # 180 samples a repetition: the span is what counts, not how long (1,800 made this test 13 s).
        assert durations == {"a": pytest.approx(2 * 180 + 2 * 300), "b": pytest.approx(360)}
        cost = pricing.cost_of_durations({"a": 0.2, "b": None}, durations)
        assert cost["total_usd"] == pytest.approx(0.2 * 960 / 3600, abs=1e-5)
        assert cost["unpriced"] == ["b"]
    finally:
        store.close()


def test_recording_a_stored_targets_prices_builds_the_spec_validator_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every collected step, import and local run records its target's prices from the stored
    (mapping) target: the validator that reads it with the spec's defaults is built once, not per row."""
    stored = {"id": "db", "kind": "rds", "instance_class": "db.r6g.large"}
    first = pricing.recorded_prices(stored)
    built: list[object] = []
    real = pydantic.TypeAdapter

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return real(*args, **kwargs)
    for module in (pydantic, pricing):
        monkeypatch.setattr(module, "TypeAdapter", counted)
    assert pricing.recorded_prices(stored) == first and first is not None
    assert built == []
    # The defaults of the spec's model count: the RDS default storage is priced (gp3 100 GB).
    assert {line["item"] for line in json.loads(first)["lines"]} >= {"instance", "client", "storage"}
