"""Cost per 1,000 tps by pricing model with its interval, the price breakdown, and the speedup table
with efficiency per doubling, each figure held against a hand computation from the price tables
(workloads/pricing/*.json, whose figures are written out here) and the tps of the runs: a synthetic
run of three repetitions, and the published study's real logs imported with --instance-type."""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from pathlib import Path

import pytest
from tests.conftest import SHARED_FIXTURES

from benchfleet import stats
from benchfleet.cli.main import main
from benchfleet.cost import pricing
from benchfleet.local.store import DuckDBStore
from benchfleet.spec.loading import parse_spec
from benchfleet.stats.tdist import t_quantile

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from synthetic import fill_store  # noqa: E402

# shared/ beside the checkout (as CI lays it), or beside a worktree's parent folder.
STUDY = next((p / "percona-2021-arm-m6" for p in (SHARED_FIXTURES, REPO.parents[1] / "shared" / "fixtures")
              if p.is_dir()), SHARED_FIXTURES / "percona-2021-arm-m6")
needs_study = pytest.mark.skipif(not STUDY.is_dir(), reason=f"{STUDY} is not beside this checkout")

# The tables' figures (us-east-1) the hand computations use.
M6I_LARGE_OD, M6I_LARGE_1Y_AU = 0.096, 0.05597       # ec2.json: regions / reserved 1y_all_upfront
M6I_XLARGE_OD, M6I_XLARGE_1Y_AU = 0.192, 0.11194
IPV4 = 0.005  # ec2.json addresses: a host's public IPv4 address, per hour
C6G_LARGE_OD, C6G_LARGE_1Y_AU = 0.068, 0.03964
C6G_2XLARGE_OD, C6G_2XLARGE_1Y_AU = 0.272, 0.15858
GP3_GB, GP3_IOPS, GP3_MBPS = 0.08, 0.005, 0.04        # ebs.json gp3, per month
RDS_R6G_LARGE_OD, RDS_R6G_LARGE_1Y_AU = 0.215, 0.13975  # rds.json
RDS_IO1_GB, RDS_IO1_IOPS = 0.125, 0.1
C6I_XLARGE_OD, C6I_XLARGE_1Y_AU = 0.17, 0.09911


def target(**kwargs: object) -> object:
    return parse_spec({"name": "p", "workload": "w", "targets": [{"id": "t", **kwargs}]}).targets[0]


def test_the_tables_hold_the_figures_this_test_computes_with() -> None:
    prices = pricing.load_prices()
    for type_, od, au in (("m6i.large", M6I_LARGE_OD, M6I_LARGE_1Y_AU),
                          ("m6i.xlarge", M6I_XLARGE_OD, M6I_XLARGE_1Y_AU),
                          ("c6g.large", C6G_LARGE_OD, C6G_LARGE_1Y_AU),
                          ("c6g.2xlarge", C6G_2XLARGE_OD, C6G_2XLARGE_1Y_AU),
                          ("c6i.xlarge", C6I_XLARGE_OD, C6I_XLARGE_1Y_AU)):
        assert prices.ec2.rate("us-east-1", type_, "on_demand") == od
        assert prices.ec2.rate("us-east-1", type_, "reserved_1y_all_upfront") == au
    assert prices.rds.rate("us-east-1", "db.r6g.large", "reserved_1y_all_upfront") == RDS_R6G_LARGE_1Y_AU
    assert prices.ec2.rate("us-east-1", "m6i.large", "spot") is None  # no spot snapshot shipped
    assert prices.ec2.reserved.approximate and not prices.ebs.reserved.regions


def test_breakdown_lines_by_hand() -> None:
    # EC2 with gp3 beyond its allowance: capacity, 3000 IOPS and 125 MB/s above what gp3 includes.
    ec2 = pricing.target_prices(target(kind="ec2", instance_type="m6i.large",
                                       storage={"type": "gp3", "size_gb": 200, "iops": 6000, "throughput_mbps": 250}))
    lines = {line.item: line for line in ec2.lines}
    assert list(lines) == ["instance", "storage", "iops", "throughput", "public_ipv4"]
    assert lines["storage"].usd_per_hour["on_demand"] == pytest.approx(200 * GP3_GB / 730)
    assert lines["iops"].usd_per_hour["on_demand"] == pytest.approx(3000 * GP3_IOPS / 730)
    assert lines["throughput"].usd_per_hour["on_demand"] == pytest.approx(125 * GP3_MBPS / 730)
    storage = (200 * GP3_GB + 3000 * GP3_IOPS + 125 * GP3_MBPS) / 730
    # Storage has no reservation: only the instance line changes with the model.
    assert lines["iops"].usd_per_hour["reserved_3y_all_upfront"] == lines["iops"].usd_per_hour["on_demand"]
    assert ec2.total("reserved_1y_all_upfront") == pytest.approx(M6I_LARGE_1Y_AU + storage + IPV4)
    # The host's public IPv4 address is in what the run rents, not in what the database costs.
    assert ec2.total("on_demand", serving_only=True) == pytest.approx(M6I_LARGE_OD + storage)
    assert ec2.total("on_demand") == pytest.approx(M6I_LARGE_OD + storage + IPV4)
    # RDS on io1: IOPS dominate, so a reservation saves little (seed 002); the client is not the database's.
    rds = pricing.target_prices(target(kind="rds", instance_class="db.r6g.large",
                                       storage={"type": "io1", "size_gb": 200, "iops": 10000}))
    assert [(line.item, line.serving) for line in rds.lines] == [
        ("instance", True), ("storage", True), ("iops", True), ("client", False), ("public_ipv4", False)]
    io1 = (200 * RDS_IO1_GB + 10000 * RDS_IO1_IOPS) / 730
    assert rds.total("on_demand", serving_only=True) == pytest.approx(RDS_R6G_LARGE_OD + io1)
    assert rds.total("reserved_1y_all_upfront", serving_only=True) == pytest.approx(RDS_R6G_LARGE_1Y_AU + io1)
    assert rds.total("on_demand") == pytest.approx(RDS_R6G_LARGE_OD + io1 + C6I_XLARGE_OD + IPV4)
    assert rds.total("reserved_1y_all_upfront") == pytest.approx(RDS_R6G_LARGE_1Y_AU + io1 + C6I_XLARGE_1Y_AU + IPV4)
    assert rds.total("spot") is None  # databases have no spot price
    # A given price is one line, the same under every model; a cluster's lines would slot in the same way.
    given = pricing.target_prices(target(kind="local", price_per_hour=0.25))
    assert {given.total(m) for m in pricing.MODELS} == {0.25}
    cross = pricing.cross_zone_line(pricing.load_prices(), gb_per_hour=3.0)
    assert cross.usd_per_hour["on_demand"] == pytest.approx(3.0 * 2 * 0.01)


def ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% interval on the log scale, by hand (t(0.975, 2) = 4.302653)."""
    mean = statistics.fmean(values)
    half = 4.302653 * statistics.stdev(values) / (mean * math.sqrt(len(values)))
    return mean, mean * math.exp(-half), mean * math.exp(half)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict:
    store = DuckDBStore(tmp_path_factory.mktemp("cost") / "benchfleet.duckdb")
    try:
        run_id = fill_store(store, "cost-20261122t100000-abcd", reps=3, threads=(4,), seconds=5, warmup_s=2)
        doc = stats.run_comparison(store, run_id)
        doc["_tps"] = {(s["target_id"], int(s["threads"])): [] for s in store.summaries(run_id)}
        for s in sorted(store.summaries(run_id), key=lambda s: s["repetition"]):
            if s["phase"] == "measure":
                doc["_tps"][(s["target_id"], int(s["threads"]))].append(float(s["tps"]))
        return doc
    finally:
        store.close()


def test_cost_per_1000_tps_by_model_with_its_interval_by_hand(synthetic: dict) -> None:
    row = next(r for r in synthetic["rows"] if r["target_id"] == "m6i-large" and r["threads"] == 4)
    mean, low, high = ci(synthetic["_tps"][("m6i-large", 4)])
    storage = 100 * GP3_GB / 730  # the spec's default volume: gp3 100 GB
    for model, instance in (("on_demand", M6I_LARGE_OD), ("reserved_1y_all_upfront", M6I_LARGE_1Y_AU)):
        price = instance + storage
        cost = row["cost"][model]
        assert cost["usd_per_hour"] == pytest.approx(price, abs=1e-8)
        assert cost["per_1000_tps"] == pytest.approx(price * 1000 / mean)
        # The interval is the tps interval carried through: its ends swap.
        assert cost["ci_low"] == pytest.approx(price * 1000 / high, rel=1e-6)
        assert cost["ci_high"] == pytest.approx(price * 1000 / low, rel=1e-6)
    assert row["cost"]["spot"] is None
    assert row["cost_per_1000_tps"] == pytest.approx((M6I_LARGE_OD + storage) * 1000 / mean)
    (m6i,) = [t for t in synthetic["targets"] if t["target_id"] == "m6i-large"]
    assert m6i["prices"]["sources"]["ec2"]["reserved"]["approximate"] is True


def test_speedup_per_thread_count_with_interval_and_efficiency_by_hand(synthetic: dict) -> None:
    (group,) = synthetic["speedup"]
    assert group["baseline_target"] == "m6i-large" and group["threads"] == [4]
    big = next(r for r in group["rows"] if r["target_id"] == "m6i-xlarge")
    assert big["size"] == 4 and big["doublings"] == 1.0
    small_tps, big_tps = synthetic["_tps"][("m6i-large", 4)], synthetic["_tps"][("m6i-xlarge", 4)]
    ms, mb = statistics.fmean(small_tps), statistics.fmean(big_tps)
    vs, vb = statistics.variance(small_tps) / ms**2 / 3, statistics.variance(big_tps) / mb**2 / 3
    df = (vs + vb) ** 2 / (vs**2 / 2 + vb**2 / 2)  # Welch-Satterthwaite, n = 3 each
    half = t_quantile(0.975, df) * math.sqrt(vs + vb)
    cell = big["by_threads"]["4"]
    assert cell["speedup"] == pytest.approx(mb / ms)
    assert cell["ci_low"] == pytest.approx(mb / ms * math.exp(-half), rel=1e-9)
    assert cell["ci_high"] == pytest.approx(mb / ms * math.exp(half), rel=1e-9)
    # 2 -> 4 vCPUs is one doubling: efficiency per doubling equals the speedup.
    assert cell["per_doubling"] == pytest.approx(mb / ms)
    assert cell["repetitions"] == [3, 3]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """The published study's c6g.large and c6g.2xlarge logs, imported with their instance types."""
    home = tmp_path_factory.mktemp("study")
    mp = pytest.MonkeyPatch()
    mp.setenv("BENCHFLEET_HOME", str(home))
    try:
        assert main(["import", str(STUDY / "c6g.large"), "--target", "c6g-large", "--run", "study",
                     "--instance-type", "c6g.large"]) == 0
        assert main(["import", str(STUDY / "c6g.2xlarge"), "--target", "c6g-2xlarge", "--into", "study",
                     "--instance-type", "c6g.2xlarge", "--region", "us-east-1"]) == 0
        from contextlib import redirect_stdout
        from io import StringIO

        out = StringIO()
        with redirect_stdout(out):
            assert main(["results", "study", "--format", "json"]) == 0
        doc = json.loads(out.getvalue())
        table = StringIO()
        from benchfleet.cli import ui

        ui.console.file = table
        try:
            assert main(["results", "study"]) == 0
        finally:
            ui.console.file = None  # back to the process's stdout
        return doc, table.getvalue(), home
    finally:
        mp.undo()


@needs_study
def test_an_imported_study_prices_its_targets_and_ranks_its_sizes_by_hand(study: tuple[dict, str, Path]) -> None:
    doc, table, _ = study
    rows = {(r["target_id"], r["threads"]): r for r in doc["statistics"]["rows"]}
    # sysbench's own summaries at 16 threads: 1065.98 and 5271.34 transactions per second.
    small, big = rows[("c6g-large", 16)], rows[("c6g-2xlarge", 16)]
    assert small["tps"]["mean"] == 1065.98 and big["tps"]["mean"] == 5271.34
    assert small["cost"]["on_demand"]["per_1000_tps"] == pytest.approx(C6G_LARGE_OD * 1000 / 1065.98)
    assert small["cost"]["reserved_1y_all_upfront"]["per_1000_tps"] == pytest.approx(C6G_LARGE_1Y_AU * 1000 / 1065.98)
    assert big["cost"]["on_demand"]["per_1000_tps"] == pytest.approx(C6G_2XLARGE_OD * 1000 / 5271.34)
    # One repetition each: no interval, and the table says so rather than inventing one.
    assert small["cost"]["on_demand"]["ci_low"] is None
    (group,) = doc["statistics"]["speedup"]
    cell = next(r for r in group["rows"] if r["target_id"] == "c6g-2xlarge")["by_threads"]["16"]
    assert cell["speedup"] == pytest.approx(5271.34 / 1065.98)
    assert cell["per_doubling"] == pytest.approx((5271.34 / 1065.98) ** 0.5)  # 2 -> 8 vCPUs: two doublings
    (target,) = [t for t in doc["statistics"]["targets"] if t["target_id"] == "c6g-large"]
    assert target["instance_type"] == "c6g.large" and target["group"] == "existing:c6g" and target["size"] == 2
    assert [line["what"] for line in target["prices"]["lines"]] == ["c6g.large"]
    # The terminal says the same: cost by model, the breakdown, the speedup table.
    assert f"${C6G_LARGE_OD * 1000 / 1065.98:.4f}" in table and f"${C6G_LARGE_1Y_AU * 1000 / 1065.98:.4f}" in table
    assert "price breakdown" in table and "c6g.large" in table
    assert "speedup by size: c6g-2xlarge (8 vCPUs) against c6g-large (2)" in table
    assert f"{5271.34 / 1065.98:.2f}x" in table
    assert f"{(5271.34 / 1065.98) ** 0.5:.2f}x" in table
    assert "approximate prices: ec2 reserved" in " ".join(table.split())  # a note, wrapped at the terminal's width


@needs_study
def test_compare_shows_both_runs_cost_by_model(study: tuple[dict, str, Path], monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, _, home = study
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    assert main(["import", str(STUDY / "c6g.large"), "--target", "c6g-large", "--run", "again",
                 "--instance-type", "c6g.large"]) == 0
    capsys.readouterr()
    assert main(["compare", "study", "again", "--format", "json", "--pricing", "all"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = [r for r in doc["rows"] if r["threads"] == 16]
    assert row["cost"]["on_demand"]["per_1000_tps"] == row["baseline_cost"]["on_demand"]["per_1000_tps"] == (
        pytest.approx(C6G_LARGE_OD * 1000 / 1065.98))
    assert main(["compare", "study", "again", "--pricing", "reserved_1y_all_upfront"]) == 0
    out = capsys.readouterr().out
    assert "cost per 1,000 tps in both runs" in out and f"${C6G_LARGE_1Y_AU * 1000 / 1065.98:.4f}" in out
    assert main(["compare", "study", "again", "--pricing", "reserved_2y"]) == 2
    assert "reserved_2y is not a pricing model" in capsys.readouterr().err


@needs_study
def test_import_refuses_a_type_or_region_it_cannot_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    base = ["import", str(STUDY / "c5.large"), "--target", "c5"]
    assert main([*base, "--instance-type", "c5.huge"]) == 2
    assert "--instance-type c5.huge: not an EC2 instance type" in capsys.readouterr().err
    assert main([*base, "--instance-type", "c5.large", "--region", "eu-west-1"]) == 2
    assert "no ec2 prices for eu-west-1" in capsys.readouterr().err
    assert main([*base, "--region", "us-east-1"]) == 2
    assert main(["runs", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing written by a refused import


@pytest.mark.parametrize("spec", ["graviton-vs-intel-vs-amd", "storage"])
def test_the_specs_say_what_to_look_at_in_the_cost_and_scaling_views(spec: str) -> None:
    header = " ".join(line.lstrip("# ") for line in (REPO / "workloads" / "comparisons" / f"{spec}.yaml")
                      .read_text().splitlines() if line.startswith("#"))
    assert "cost per 1,000 tps on-demand and 1-year reserved" in header
    assert ("speedup tables" in header and "per doubling" in header) if spec.startswith("graviton") else (
        "price breakdown" in header)


def test_every_pricing_view_fits_100_columns_naming_every_target_and_thread_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38 item 6: `results RUN --pricing all` drew one table of every model, which rich cut at any
    terminal width: the target and thread columns gone, headers 'on-de…', figures '$0.10…'. Now as many
    tables as fit (one per model at 100 columns), each row naming its target and thread count; a model
    no target has a price under is said, not drawn as dashes, and spot says why: no snapshot ships (it
    said 'no target is priced (a local server is free...)' of priced EC2 targets)."""
    from benchfleet.cli import ui

    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id = fill_store(store, threads=(1, 4, 16), seconds=6, warmup_s=2)
    finally:
        store.close()
    monkeypatch.setattr(ui.console, "width", 100)
    capsys.readouterr()
    assert main(["results", run_id, "--pricing", "all"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100 and "…" not in out
    priced = [m for m in pricing.MODELS if m != "spot"]
    tables = out.split("cost per 1,000 tps: ")[1:len(priced) + 1]
    assert [t.split("\n", 1)[0].strip() for t in tables] == [pricing.MODEL_LABELS[m] for m in priced]
    for table in tables:
        rows = {(m.group(1), int(m.group(2))) for m in re.finditer(r"^ (m6[ig]-x?large) +(\d+) ", table, re.M)}
        assert rows == {(t, th) for t in ("m6i-large", "m6g-large", "m6i-xlarge") for th in (1, 4, 16)}, table
    assert ("cost per 1,000 tps: no spot price: m6i-large, m6g-large, m6i-xlarge are priced, but the price tables "
            "ship no spot snapshot") in " ".join(out.split())
    breakdowns = out.split("price breakdown (USD per hour)")[1:]
    assert len(breakdowns) > 1 and not any("spot" in b.split("───", 1)[0] for b in breakdowns)
    # Spot alone: the same reason, never 'no target is priced'.
    assert main(["results", run_id, "--pricing", "spot"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no spot price: m6i-large, m6g-large, m6i-xlarge are priced, but the price tables ship no spot" in out
    assert "no target is priced" not in out
