"""A cluster's report and results per node (issue 38 item 5): PMM's Galera view, one panel per figure (flow
control paused, replicated and received bytes, send and receive queues, certification failures,
brute-force aborts, the proxy's sessions per backend), one line per node per second, the blocks of each
route shaded; and in the terminal, a table per node. Before, per-node figures were only in
`results --status --format csv|json`, the terminal and the report showing aggregates."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from benchfleet.cli.main import main
from benchfleet.local.store import DuckDBStore
from benchfleet.report import charts, html

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from synthetic import CLUSTER_NODE_RATES, fill_cluster_run

THREADS = 4


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("cluster")
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        fill_cluster_run(store)
    finally:
        store.close()
    return home


def test_the_cluster_report_draws_each_nodes_figures_per_second(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    out = home / "cluster.html"
    assert main(["report", "local-galera", "-o", str(out)]) == 0
    page = out.read_text()
    figs = {key: json.loads(fig) for fig, key in
            re.findall(r'var f=(\{.*?\});Plotly\.newPlot\("chart-([^"]+)"', page)}
    nodes = figs["nodes"]
    titles = [re.sub(r"<[^>]+>", "", a["text"]) for a in nodes["layout"]["annotations"] if a["xref"] == "paper"]
    assert titles == ["flow control paused (% of the time)", "flow-control messages sent per second",
                      "replicated KiB per second", "received KiB per second", "local send queue (write-sets)",
                      "local receive queue (write-sets)", "certification failures per second",
                      "brute-force aborts per second", "the proxy's sessions per backend node"]
    axis = {title: "y" if i == 0 else f"y{i + 1}" for i, title in enumerate(titles)}
    lines = {(t["yaxis"], t["name"]): t for t in nodes["data"]}
    # One line per node in its own colour, every point the node's rate at 4 threads (as filled), scaled.
    expected = {"replicated KiB per second": ("wsrep_replicated_bytes", 1 / 1024),
                "received KiB per second": ("wsrep_received_bytes", 1 / 1024),
                "flow control paused (% of the time)": ("wsrep_flow_control_paused_ns", 1e-7),
                "local receive queue (write-sets)": ("wsrep_local_recv_queue", 1.0)}
    for title, (counter, scale) in expected.items():
        for node in ("n1", "n2", "n3"):
            ys = {y for y in lines[(axis[title], node)]["y"] if y is not None}
            assert ys == {round(CLUSTER_NODE_RATES[node][counter] * THREADS * scale, 3)}, (title, node, ys)
    assert len({lines[(axis["replicated KiB per second"], n)]["line"]["color"] for n in ("n1", "n2", "n3")}) == 3
    sessions = {n: {y for y in lines[(axis["the proxy's sessions per backend node"], n)]["y"] if y is not None}
                for n in ("n1", "n2", "n3")}
    assert sessions == {"n1": {4.0}, "n2": {0.0}, "n3": {0.0}}
    # Each route's blocks shaded in its colour in every panel: 3 blocks x 2 routes x 9 panels.
    palette = charts.colors(["direct", "proxy"])
    rects = [s for s in nodes["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == 3 * 2 * 9
    assert {s["fillcolor"] for s in rects} == {charts.rgba_of(palette[v], 0.10) for v in ("direct", "proxy")}
    assert "Cluster nodes per second" in page and html.escape(html.NODES_NOTE[:40]) in page


def test_results_prints_a_table_per_node(home: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    assert main(["results", "local-galera"]) == 0
    out = capsys.readouterr().out
    table = out.split("cluster status per node", 1)[1]
    rows = {m.group(1): m.group(0).split() for m in re.finditer(r"galera-3 · (?:direct|proxy) +4 (n\d) .*", table)}
    assert sorted(rows) == ["n1", "n2", "n3"]
    # n2: fc paused 2e6 ns/s x 4 = 0.80%; sent 2.0/s; receive queue 4.0; cert 1.0/s; received 160 KiB/s.
    _, _, _, _, _, fc, sent, sendq, recvq, cert, bf, repl, recv, proxy = rows["n2"]
    assert (fc, sent, sendq, recvq, cert, bf, repl, recv, proxy) == (
        "0.80%", "2.0", "0.0", "4.0", "1.0", "0.0", "0.0", "160", "0.0")
    assert rows["n1"][-3:] == ["160", "1.0", "4.0"]
    doc = json.loads((capsys.readouterr(), main(["results", "local-galera", "--format", "json"]),
                      capsys.readouterr().out)[2])
    assert {(r["node"], r["variant"]) for r in doc["status"]["nodes"]} == {
        (n, v) for n in ("n1", "n2", "n3") for v in ("direct", "proxy")}
