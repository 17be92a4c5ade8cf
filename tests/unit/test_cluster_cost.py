"""What a cluster costs (issue 25 item 5, issue 27's cluster lines), held against hand computations from
the price tables: every node with its striped storage, the proxy's own host, the client, and the
traffic crossing availability zones measured from the nodes' status rows; cost per 1,000 tps per
thread count with the traffic of that thread count, in every view (JSON, terminal, report, the
dashboards' SQL); a local cluster's traffic as what it would cost."""

from __future__ import annotations

import io
import math
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchfleet import stats
from benchfleet.cli import ui_cost
from benchfleet.cost import pricing
from benchfleet.local.store import DuckDBStore
from benchfleet.spec.loading import parse_spec
from benchfleet.stats.cost import cross_zone_bytes_per_s
from benchfleet.workload import serverstatus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from synthetic import fill_node_status, fill_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dataset_sql import dataset, timestream_dataset

GB = 2 ** 30
R6I_LARGE_OD, R6I_LARGE_1Y_AU = 0.126, 0.07346       # ec2.json, us-east-1
C6I_LARGE_OD, C6I_LARGE_1Y_AU = 0.085, 0.04956
C6I_XLARGE_OD = 0.17
GP3_GB = 0.08                                          # ebs.json gp3, per GB-month
IPV4 = 0.005                                           # ec2.json addresses: per public IPv4 address-hour
HOSTS = 5                                              # CLUSTER_SPEC's: 3 nodes, the proxy's host, the client
CLUSTER_SPEC = {"id": "pxc", "kind": "cluster", "flavor": "pxc-8.0", "instance_type": "r6i.large",
                "region": "us-east-1", "storage": {"type": "gp3", "size_gb": 100, "volumes": 2, "raid": 0},
                "proxy": {"software": "haproxy", "instance_type": "c6i.large"}}
LOCAL_SPEC = {"id": "galera", "kind": "local", "cluster": {"nodes": 3}}
# Per thread, bytes per second each node's counters grow by: n1 takes the writes (the client's zone).
NODE_RATES = {
    "n1": {"wsrep_replicated_bytes": 1_000_000, "wsrep_received_bytes": 20_000, "Bytes_sent": 400_000,
           "Bytes_received": 300_000, "Threads_running": 0},
    "n2": {"wsrep_replicated_bytes": 10_000, "wsrep_received_bytes": 1_010_000, "Bytes_sent": 50_000,
           "Bytes_received": 20_000},
    "n3": {"wsrep_replicated_bytes": 10_000, "wsrep_received_bytes": 1_010_000, "Bytes_sent": 30_000,
           "Bytes_received": 10_000},
    "proxy/n2": {"bin": 9_999_999},  # a proxy's backend statistics: not a node, never counted
}
# By hand, per thread: replication (1e6 + 1e4 + 1e4) x 2 other nodes; client: n2's and n3's bytes both ways.
BYTES_PER_THREAD = (1_000_000 + 10_000 + 10_000) * 2 + (50_000 + 20_000) + (30_000 + 10_000)


def target(row: dict[str, Any]) -> dict[str, Any]:
    """A target of the synthetic filler (tests/browser/synthetic.py) from its spec."""
    return {"id": row["id"], "kind": row["kind"], "instance_type": row.get("instance_type"), "capacity": 1500.0,
            "vcpus": 2, "cpu_model": "Intel", "arch": "x86_64", "price": None, "spec": row}


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    store = DuckDBStore(tmp_path_factory.mktemp("cluster-cost") / "benchfleet.duckdb")
    try:
        # A cloud cluster and a local one (same node rates) in one run: one store, one comparison.
        run_id = fill_store(store, "pxc-20261122t100000-abcd",
                            targets=[target(CLUSTER_SPEC), target(LOCAL_SPEC)], reps=3, threads=(2, 8),
                            seconds=4, warmup_s=2)
        fill_node_status(store, run_id, ["pxc", "galera"], NODE_RATES)
        doc = stats.run_comparison(store, run_id)
        doc["_sql"] = [r for r in store.query(dataset("target_costs")) if r["target_id"] == "pxc"]
        doc["_timestream"] = store.query(timestream_dataset("target_costs", store))
        doc["_tps"] = {th: [float(s["tps"]) for s in sorted(store.summaries(run_id), key=lambda s: s["repetition"])
                            if s["phase"] == "measure" and s["threads"] == th and s["target_id"] == "pxc"]
                       for th in (2, 8)}
        yield doc
    finally:
        store.close()


def test_the_cluster_default_set_reads_what_crosses_zones() -> None:
    counters = serverstatus.counters_for(None, True)
    for name in ("wsrep_replicated_bytes", "wsrep_received_bytes", "Bytes_sent", "Bytes_received"):
        assert name in counters, name
    assert "Bytes_sent" not in serverstatus.counters_for(None, False)  # a single server has no zones to cross


def test_cross_zone_model_by_hand() -> None:
    found = cross_zone_bytes_per_s({n: r for n, r in NODE_RATES.items() if "/" not in n})
    assert found == {"replication": 2_040_000, "client": 110_000, "total": BYTES_PER_THREAD}
    # Five nodes: each write-set leaves its node four times.
    five = {f"n{i}": {"wsrep_replicated_bytes": 100.0} for i in range(1, 6)}
    assert cross_zone_bytes_per_s(five) == {"replication": 2000.0, "client": 0.0, "total": 2000.0}
    assert cross_zone_bytes_per_s({"n1": {"Bytes_sent": 5.0}, "n2": {"wsrep_replicated_bytes": 1.0}}) is None


def test_a_cluster_plan_lists_every_host_and_prices_the_traffic_after_the_run() -> None:
    (spec_target,) = parse_spec({"name": "c", "workload": {"name": "w", "test": "oltp_read_write", "threads": [1]},
                                 "targets": [CLUSTER_SPEC]}).targets
    tp = pricing.target_prices(spec_target)
    lines = {line.item: line for line in tp.lines}
    assert [line.item for line in tp.lines] == ["nodes", "proxy", "storage", "cross_zone", "client", "public_ipv4"]
    assert lines["public_ipv4"].quantity == HOSTS and not lines["public_ipv4"].serving  # nodes, proxy, client
    assert lines["nodes"].usd_per_hour["on_demand"] == pytest.approx(3 * R6I_LARGE_OD)
    # Two striped volumes on each of three nodes.
    assert lines["storage"].quantity == 6
    assert lines["storage"].usd_per_hour["on_demand"] == pytest.approx(6 * 100 * GP3_GB / 730)
    assert lines["proxy"].usd_per_hour["reserved_1y_all_upfront"] == C6I_LARGE_1Y_AU and lines["proxy"].serving
    assert lines["cross_zone"].basis == "pending" and lines["cross_zone"].usd_per_hour["on_demand"] is None
    serving = 3 * R6I_LARGE_OD + 6 * 100 * GP3_GB / 730 + C6I_LARGE_OD
    assert tp.total("on_demand", serving_only=True) == pytest.approx(serving)
    assert pricing.price_per_hour(spec_target) == pytest.approx(serving + C6I_XLARGE_OD + HOSTS * IPV4)  # the run rents
    doc = pricing.plan_breakdowns([spec_target])["pxc"]
    assert doc["cross_zone_usd_per_gb_each_way"] == 0.01
    out = io.StringIO()
    ui_cost.print_plan_breakdown(Console(file=out, width=200), {"targets": [{"target_id": "pxc", "kind": "cluster"}],
                                                                "prices": {"pxc": doc}})
    text = out.getvalue()
    assert "after the run" in text and "$0.00000" not in text, text  # never silently $0


def test_cluster_cost_per_1000_tps_counts_the_traffic_of_each_thread_count_by_hand(cluster_run: dict) -> None:
    serving = {"on_demand": 3 * R6I_LARGE_OD + 6 * 100 * GP3_GB / 730 + C6I_LARGE_OD,
               "reserved_1y_all_upfront": 3 * R6I_LARGE_1Y_AU + 6 * 100 * GP3_GB / 730 + C6I_LARGE_1Y_AU}
    for th in (2, 8):
        row = next(r for r in cluster_run["rows"] if r["threads"] == th and r["target_id"] == "pxc")
        gb_h = BYTES_PER_THREAD * th * 3600 / GB
        traffic = gb_h * 2 * 0.01
        cz = row["cross_zone"]
        assert cz["basis"] == "measured" and cz["steps"] == 3 and "cross_zone" in cluster_run["notes"]
        assert cz["gb_per_hour"] == pytest.approx(gb_h)
        assert cz["replication_gb_per_hour"] == pytest.approx(2_040_000 * th * 3600 / GB)
        assert cz["usd_per_hour"] == pytest.approx(traffic)
        tps = cluster_run["_tps"][th]
        mean = statistics.fmean(tps)
        half = 4.302653 * statistics.stdev(tps) / (mean * math.sqrt(3))  # t(0.975, 2), log scale
        for model, price in serving.items():
            cost = row["cost"][model]
            assert cost["usd_per_hour"] == pytest.approx(price + traffic)
            assert cost["per_1000_tps"] == pytest.approx((price + traffic) * 1000 / mean)
            assert cost["ci_low"] == pytest.approx((price + traffic) * 1000 / (mean * math.exp(half)), rel=1e-6)
            assert cost["ci_high"] == pytest.approx((price + traffic) * 1000 / (mean * math.exp(-half)), rel=1e-6)
        # The dashboards' SQL says the same.
        for r in (r for r in cluster_run["_sql"] if r["threads"] == th and r["pricing_model"] in serving):
            assert isinstance(r["cross_zone_gb_per_hour"], float) and isinstance(r["cross_zone_usd_per_hour"], float)
            assert r["cross_zone_gb_per_hour"] == pytest.approx(gb_h)
            assert r["cross_zone_usd_per_hour"] == pytest.approx(traffic)
            assert r["price_per_hour"] == pytest.approx(serving[r["pricing_model"]] + traffic)
            assert r["cost_per_1000_tps"] == pytest.approx(row["cost"][r["pricing_model"]]["per_1000_tps"])
        # Timestream holds no prices: its dataset gives the traffic, the same GB/hour, and no cost.
        (ts,) = [r for r in cluster_run["_timestream"] if r["threads"] == th and r["target_id"] == "pxc"]
        assert ts["cross_zone_gb_per_hour"] == pytest.approx(gb_h) and ts["cross_zone_usd_per_hour"] is None
    # The breakdown: the traffic measured at the mean of the thread counts, in the database's total.
    t = next(t for t in cluster_run["targets"] if t["target_id"] == "pxc")
    lines = {line["item"]: line for line in t["prices"]["lines"]}
    mean_gb = statistics.fmean(BYTES_PER_THREAD * th * 3600 / GB for th in (2, 8))
    assert lines["cross_zone"]["basis"] == "measured" and lines["cross_zone"]["gb_per_hour"] == pytest.approx(mean_gb)
    assert t["prices"]["serving"]["on_demand"] == pytest.approx(serving["on_demand"] + mean_gb * 0.02)
    assert t["prices"]["run"]["on_demand"] == pytest.approx(serving["on_demand"] + mean_gb * 0.02 + C6I_XLARGE_OD
                                                            + HOSTS * IPV4)


def test_the_terminal_and_the_report_show_the_cross_zone_line(cluster_run: dict) -> None:
    from benchfleet.report.html import _breakdown_table, _cross_zone_table

    out = io.StringIO()
    console = Console(file=out, width=250)
    ui_cost.print_breakdown(console, cluster_run)
    ui_cost.print_cross_zone(console, cluster_run)
    text = out.getvalue()
    row8 = next(r for r in cluster_run["rows"] if r["threads"] == 8 and r["target_id"] == "pxc")
    assert "cross_zone" in text and "cross-zone traffic" in text
    assert f"{row8['cross_zone']['gb_per_hour']:,.3f}" in text and "in cost per 1,000 tps" in text
    html = _breakdown_table(cluster_run) + _cross_zone_table(cluster_run)
    assert "GB/h across zones, measured" in html and "Cross-zone traffic" in html


def test_a_local_cluster_shows_what_its_traffic_would_cost_and_stays_free(cluster_run: dict) -> None:
    for row in (r for r in cluster_run["rows"] if r["target_id"] == "galera"):
        assert row["cross_zone"]["basis"] == "would"
        assert row["cross_zone"]["usd_per_hour"] == pytest.approx(BYTES_PER_THREAD * row["threads"] * 3600 / GB * 0.02)
        assert all(c is None for c in row["cost"].values())  # a local server is free: no cost per 1,000 tps
    t = next(t for t in cluster_run["targets"] if t["target_id"] == "galera")
    (line,) = t["prices"]["lines"]
    assert line["basis"] == "would" and "local: would cost" in line["what"]
    assert set(t["prices"]["serving"].values()) == {0}  # free: the would-be traffic is in no total
    out = io.StringIO()
    ui_cost.print_cross_zone(Console(file=out, width=250), cluster_run)
    assert "would cost across zones" in out.getvalue()
