"""The report of two runs (issue 29 item 3): `report RUN --against BASE` and `compare BASE RUN --report`
write one self-contained page with the verdicts of `compare` (relative bars, caveats), throughput and
latency percentiles of both runs, their CloudWatch metrics and server status per second where present.

The pair is the Aurora primary-key one of seed 003 in miniature: two runs of one target each (an
auto-increment key and a random one), the second slower, with WriteLatency and status counters.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from benchfleet.cli.main import main
from benchfleet.local.store import DuckDBStore
from benchfleet.report import html, pair

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from synthetic import TARGETS, fill_cloud_and_status, fill_demo_pair, fill_store  # noqa: E402

BASE, OTHER = "pk-auto-20261126t100000-aaaa", "pk-uuid-20261126t120000-bbbb"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("pair")
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        fill_store(store, BASE, targets=[{**TARGETS[0], "id": "pk-auto"}], reps=3, threads=(4, 16), seconds=12,
                   warmup_s=3, seed=1)
        fill_store(store, OTHER, targets=[{**TARGETS[0], "id": "pk-uuid", "capacity": 1800.0}], reps=3,
                   threads=(4, 16), seconds=12, warmup_s=3, seed=2)
        fill_cloud_and_status(store, BASE, 1.2, {"Innodb_data_fsyncs": 40.0, "Threads_running": 3.0})
        fill_cloud_and_status(store, OTHER, 3.5, {"Innodb_data_fsyncs": 90.0, "Threads_running": 6.0})
    finally:
        store.close()
    return home


def _figures(page: str) -> dict[str, dict]:
    return {key: json.loads(fig) for fig, key in
            re.findall(r'var f=(\{.*?\});Plotly\.newPlot\("chart-([^"]+)"', page)}


def test_report_against_draws_verdicts_latency_cloud_metrics_and_status(home: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    out = tmp_path / "pair.html"
    assert main(["report", OTHER[:10], "--against", BASE[:10], "-o", str(out)]) == 0
    page = out.read_text()
    assert page.count(html.plotly_js()[:200]) == 1, "one inlined copy of the bundle"
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", page)
    assert "<h1>pk-uuid against pk-auto</h1>" in page
    verdicts = page.split("<h2>Verdicts</h2>", 1)[1].split("</table>")[0]
    assert verdicts.count("pk-uuid</td><td class='l'>pk-auto") == 2 and "slower" in verdicts
    figs = _figures(page)
    assert {"relative", "throughput", "latency", "latency-series", "timeline-0", "timeline-1", "rows",
            "cloud-WriteLatency-Milliseconds", "status-0", "status-1"} <= set(figs)
    for key, fig in figs.items():
        go.Figure(fig)
        assert {t["type"] for t in fig["data"]} <= html.BUNDLE_TRACES
        # No line through a single point (it reads as a bare dot): one thread count draws bars.
        assert not [t for t in fig["data"] if "lines" in str(t.get("mode", "")) and not t.get("fill")
                    and len(t.get("x") or t.get("y") or []) == 1], key
    # iiBench's view of both runs on one chart: every repetition of each run's target, rows rising, and
    # the throughput verdict of each compared thread count written above.
    rows = figs["rows"]
    assert sorted(t["name"] for t in rows["data"]) == sorted(
        f"{run}: {run} rep {r}" for run in ("pk-auto", "pk-uuid") for r in (1, 2, 3))
    assert all(t["x"][-1] > t["x"][0] for t in rows["data"])
    words = rows["layout"]["annotations"][0]["text"]
    assert words.startswith("pk-uuid vs pk-auto: pk-uuid vs pk-auto · 4 thr: Welch: slower")
    assert "pk-uuid vs pk-auto · 16 thr: Welch: slower" in words
    assert pair._has_rows({"series": [{"rows": [None, None]}]}) is False
    # A run that counted no rows (here: the baseline's row counts erased) is named instead of a chart.
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        store.execute("UPDATE samples SET rows_in_table = NULL WHERE run_id = ?", [BASE])
        page = pair.render_pair_report(store, BASE, OTHER)
        store.execute("UPDATE samples SET rows_in_table = 1000 + second * 100 WHERE run_id = ?", [BASE])
    finally:
        store.close()
    assert "rows" not in _figures(page) and "Only pk-uuid counts the rows in its table" in page
    rel = figs["relative"]
    assert rel["data"][0]["y"] == ["pk-uuid vs pk-auto · 4 thr", "pk-uuid vs pk-auto · 16 thr"]
    assert all(a["text"].startswith("Welch: slower") for a in rel["layout"]["annotations"])
    # Both runs' series in each chart, named by run: latency percentiles per repetition and WriteLatency.
    names = {t["name"] for t in figs["latency"]["data"]}
    assert {"pk-auto: pk-auto", "pk-uuid: pk-uuid"} <= names
    cloud = {t["name"]: t["y"] for t in figs["cloud-WriteLatency-Milliseconds"]["data"]}
    assert set(cloud) == {"pk-auto: pk-auto", "pk-uuid: pk-uuid"}
    assert max(cloud["pk-auto: pk-auto"]) < min(cloud["pk-uuid: pk-uuid"])
    # Each run's status under its own throughput (the run report's chart): a counter picker, fsyncs first
    # (flow-control pause would be first in a cluster), one line per repetition x source.
    for i, (target, lo, hi) in enumerate((("pk-auto", 30, 50), ("pk-uuid", 70, 110))):
        status = figs[f"status-{i}"]
        assert [b["label"] for b in status["layout"]["updatemenus"][0]["buttons"]] == [
            "Innodb_data_fsyncs per second", "Threads_running per second"]
        shown = [t for t in status["data"] if t.get("yaxis") == "y2" and t["visible"]]
        assert sorted(t["name"] for t in shown) == [f"{target} rep {r} server" for r in (1, 2, 3)]
        ys = [y for t in shown for y in t["y"] if y is not None]
        assert lo < sum(ys) / len(ys) < hi


def test_compare_report_writes_the_same_page_and_a_pair_with_nothing_in_common_is_refused(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    assert main(["compare", BASE, OTHER, "--report"]) == 0
    written = home / "reports" / f"{OTHER}-vs-{BASE}.html"
    assert str(written) in capsys.readouterr().out
    assert "<h1>pk-uuid against pk-auto</h1>" in written.read_text()
    # A run against itself pairs its target; one with another target and a second run with two targets
    # shares none: exit 2 naming both runs, nothing written.
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        third = fill_store(store, "other-20261126t140000-cccc", targets=TARGETS[:2], reps=1, threads=(4,),
                           seconds=3, warmup_s=2)
    finally:
        store.close()
    out = tmp_path / "none.html"
    assert main(["report", third, "--against", BASE, "-o", str(out)]) == 2
    assert "no target x threads in common" in capsys.readouterr().err and not out.exists()


def test_runs_reporting_different_percentiles_share_no_latency_axis(tmp_path: Path) -> None:
    """The pair report drew both runs' step latency on one axis labelled with the first run's
    percentile: a run of a workload with percentile 99 was read as p95. Said instead of drawn."""
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        fill_store(store, BASE, targets=[{**TARGETS[0], "id": "pk-auto"}], reps=3, threads=(4,), seconds=6,
                   warmup_s=3, seed=1)
        fill_store(store, OTHER, targets=[{**TARGETS[0], "id": "pk-uuid"}], reps=3, threads=(4,), seconds=6,
                   warmup_s=3, seed=2)
        for table in ("samples", "step_summaries"):  # the second run's workload reports p99
            store.execute(f"UPDATE {table} SET latency_pct = 99 WHERE run_id = ?", [OTHER])
        page = pair.render_pair_report(store, BASE, OTHER)
    finally:
        store.close()
    assert not {"latency", "latency-series"} & set(_figures(page))
    assert page.count("The runs report different latency percentiles (p95, p99") == 2


def test_two_demo_runs_with_every_kind_of_verdict_report_in_their_series_colours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of the demo's shape (variants on one server) whose verdicts, run against run, are decisive,
    inconclusive and too few: `report RUN2 --against RUN1` ended with 'error: ValueError: invalid literal
    for int() with base 16', exit 1 (a variant's verdict bar found no colour in the palette, and the
    hatched bar's fallback '#555' was read as six hex digits). Each bar is drawn in the colour of the
    second run's series it compares."""
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        base, other = fill_demo_pair(store)
    finally:
        store.close()
    out = tmp_path / "pair.html"
    assert main(["report", other, "--against", base, "-o", str(out)]) == 0, capsys.readouterr().err
    assert main(["compare", base, other, "--report", "-o", str(tmp_path / "compare.html")]) == 0
    figs = _figures(out.read_text())
    styles = {t["name"]: t for t in figs["relative"]["data"]}
    assert set(styles) == set(html.charts.STYLES.values())
    # The throughput chart's series (two thread counts: a line each) and the bars of their verdicts.
    throughput = {t["name"]: t["line"]["color"] for t in figs["throughput"]["data"] if t["mode"] == "lines+markers"}
    assert len(set(throughput.values())) == 4, throughput  # two runs x two variants
    for trace in figs["relative"]["data"]:
        for name, color in zip(trace["y"], trace["marker"]["line"]["color"], strict=True):
            variant = name.split("/", 1)[1].split(" ")[0]  # "local-512mb/relaxed vs ... · 4 thr"
            assert color == throughput[f"{other}: {variant}"], (name, color, throughput)
