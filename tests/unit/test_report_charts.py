"""The report's charts say what the verdicts say, and the bundle that draws them is the one npm ships.

- The vendored Plotly bundle is byte for byte npm's plotly.js-basic-dist-min (package.json pins it) at
  the plotly.js version plotly.py validates against, so plotly.py's validator speaks for what the
  browser draws; every figure of three reports (a sweep, one thread count, an imported one-repetition
  study) validates there and uses only the bundle's trace types.
- Relative bars: every verdict's interval as whiskers, solid / hatched / hollow by verdict, the words
  (paired or Welch) beside each bar, bars named by their series.
- Caveats: computed from the figures with their thresholds, in results, compare and the terminal.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs_version
from tests.sysbench_logs import run_log

from benchfleet import stats
from benchfleet.local.importer import import_logs
from benchfleet.local.store import DuckDBStore
from benchfleet.report import charts, html, timecharts
from benchfleet.report.data import timeline
from benchfleet.stats import caveats
from benchfleet.stats.compare import compare_runs
from benchfleet.stats.verdict import paired_difference, relative_difference

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from synthetic import DEMO_TARGETS, TARGETS, fill_demo_pair, fill_store  # noqa: E402


def test_the_bundle_is_npms_basic_distribution_at_plotly_pys_version() -> None:
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["plotly.js-basic-dist-min"]
    npm_copy = REPO / "node_modules" / "plotly.js-basic-dist-min" / "plotly-basic.min.js"
    assert html.BUNDLE.read_bytes() == npm_copy.read_bytes()
    header = html.BUNDLE.read_text()[:200]
    assert f"plotly.js (basic - minified) v{pinned}" in header
    assert pinned == get_plotlyjs_version()
    assert len(html.plotly_js()) < 1_300_000


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[DuckDBStore, str]]:
    tmp = tmp_path_factory.mktemp("charts")
    out = {}
    store = DuckDBStore(tmp / "sweep.duckdb")
    out["sweep"] = (store, fill_store(store, threads=(1, 4, 16), seconds=10, warmup_s=3))
    store = DuckDBStore(tmp / "one.duckdb")
    out["demo"] = (store, fill_store(store, "demo-20261126t100000-abcd", targets=DEMO_TARGETS, threads=(4,),
                                     seconds=8, warmup_s=3))
    store = DuckDBStore(tmp / "import.duckdb")
    run_id = None
    for target, per_thread in (("c5-large", 9000), ("c6g-large", 8000)):
        logs = tmp / target
        logs.mkdir()
        for threads in (1, 64):
            (logs / f"t{threads}.log").write_text(run_log([], [], threads=threads, transactions=per_thread * threads))
        run_id = import_logs(store, [logs], target, None if run_id else "study", run_id)
    assert run_id
    out["imported"] = (store, run_id)
    yield out
    for store, _ in out.values():
        store.close()


def _figures(store: DuckDBStore, run_id: str) -> tuple[dict, dict[str, charts.Figure]]:
    doc = stats.run_comparison(store, run_id)
    palette = charts.colors([t["target_id"] for t in doc["targets"]])
    figs = {"throughput": charts.throughput(doc, palette), "latency": charts.latency(doc, palette),
            "relative": charts.relative(doc, palette), "qps": charts.qps(doc, palette),
            "cost": charts.cost(doc, palette)}
    series = timeline(store, doc["run"]["run_id"])
    if series["series"]:
        figs["timeline"] = timecharts.timeline(series, palette)
        figs["rows"] = timecharts.insert_rate(series, palette)
    return doc, figs


@pytest.mark.parametrize("name", ["sweep", "demo", "imported"])
def test_every_figure_validates_and_uses_only_the_bundles_traces(stores: dict, name: str) -> None:
    _, figs = _figures(*stores[name])
    for key, fig in figs.items():
        go.Figure(fig)  # raises on any property plotly.js 4.1.1 does not know
        types = {t["type"] for t in fig["data"]}
        assert types <= html.BUNDLE_TRACES, (key, types)


def test_a_long_insert_curve_stays_on_the_bundles_traces() -> None:
    """A soak's rows-against-rate curve has thousands of points: still a plain scatter (the basic bundle
    has no WebGL traces), every point kept, the disk panels on their own axes under the throughput."""
    n = 3000
    series = {"width_s": 1, "series": [{
        "target_id": "a", "repetition": 1, "t": list(range(n)), "tps": [500.0 - i / 10 for i in range(n)],
        "rows": [1000 + 500 * i for i in range(n)], "threads": [1] * n, "steal": [0.1] * n, "iowait": [0.2] * n,
        "disk_iops": [90.0] * n, "disk_mib_s": [1.5] * n, "disk_await_ms": [0.6] * n, "steps": []}]}
    palette = charts.colors(["a"])
    rows = timecharts.insert_rate(series, palette)
    assert {t["type"] for t in rows["data"]} <= html.BUNDLE_TRACES and len(rows["data"][0]["x"]) == n
    go.Figure(rows)
    timeline = timecharts.timeline(series, palette)
    go.Figure(timeline)
    assert {t["yaxis"] for t in timeline["data"] if "yaxis" in t} == {"y2", "y3", "y4", "y5", "y6"}
    assert [timeline["layout"][f"yaxis{i}"]["title"]["text"] for i in (4, 5, 6)] == [
        "disk IO/s", "disk MiB/s", "await ms"]
    assert timeline["layout"]["xaxis"]["anchor"] == "y6"  # the time axis under the lowest panel


def test_one_thread_count_draws_bars_with_whiskers_and_a_log_axis_where_latency_spans_decades(stores: dict) -> None:
    _, figs = _figures(*stores["demo"])
    bars = [t for t in figs["throughput"]["data"] if t["type"] == "bar"]
    assert [b["x"] for b in bars] == [["durable"], ["relaxed"]]
    assert all(b["error_y"]["visible"] and b["error_y"]["array"][0] > 0 for b in bars)
    # Imported: 1 and 64 threads, latency from 2.8 ms up: both axes logarithmic, ticks written out.
    _, figs = _figures(*stores["imported"])
    layout = figs["latency"]["layout"]
    assert layout["xaxis"]["type"] == "log"
    assert layout["yaxis"].get("type") != "log"  # sysbench_logs gives every step the same p95
    axis = charts._value_axis([0.5, 2.0, 40.0], "ms")
    assert axis["type"] == "log" and axis["ticktext"][:4] == ["0.1", "0.2", "0.5", "1"]
    assert charts._value_axis([2.0, 9.0], "ms") == {"title": {"text": "ms"}}


def _one_point_lines(fig: charts.Figure) -> list[str]:
    """Traces drawn as a line through a single point (a bare dot that reads as a finding)."""
    return [t.get("name", "?") for t in fig["data"] if "lines" in str(t.get("mode", ""))
            and not t.get("fill") and len(t.get("x") or t.get("y") or []) == 1]


def test_one_thread_count_draws_every_per_thread_chart_as_bars_or_points_named_so(stores: dict) -> None:
    """Throughput, latency, qps and cost at one thread count: bars per series (points for percentiles,
    never averaged), whiskers where there is an interval, an x axis naming the series and the thread
    count; no chart of the report draws a line through one point. qps and cost were one-point lines."""
    _, figs = _figures(*stores["demo"])
    sweep, _ = _figures(*stores["sweep"])
    # The sweep at one of its thread counts: priced targets, so the cost chart has bars.
    priced = {**sweep, "rows": [r for r in sweep["rows"] if r["threads"] == 4]}
    palette = charts.colors([t["target_id"] for t in priced["targets"]])
    figs["cost"] = charts.cost(priced, palette)
    for key, fig in figs.items():
        assert not _one_point_lines(fig), (key, _one_point_lines(fig))
        go.Figure(fig)
    for key in ("throughput", "latency", "qps", "cost"):
        assert figs[key]["layout"]["xaxis"]["title"]["text"] == "series (all at 4 threads)", key
        assert "at 4 threads" in figs[key]["layout"]["title"]["text"], key
    qps = [t for t in figs["qps"]["data"] if t["type"] == "bar"]
    assert [b["x"] for b in qps] == [["durable"], ["relaxed"]]
    assert all(b["error_y"]["visible"] and b["error_y"]["array"][0] > 0 for b in qps)
    cost = figs["cost"]["data"]
    assert {t["type"] for t in cost} == {"bar"} and figs["cost"]["layout"]["barmode"] == "group"
    assert {t["offsetgroup"] for t in cost} == {"on_demand", "reserved_1y_all_upfront"}
    assert all(t["error_y"]["visible"] for t in cost)
    assert (charts.threads_words(1), charts.threads_words(8)) == ("1 thread", "8 threads")  # a soak's one step
    # Across thread counts they stay lines.
    _, swept = _figures(*stores["sweep"])
    assert {t["type"] for t in swept["qps"]["data"]} == {"scatter"}


def _row(target: str, threads: int, rel: object | None, **extra: object) -> dict:
    from dataclasses import asdict
    return {"target_id": target, "threads": threads, "relative": None if rel is None else {"vs": "base", **asdict(rel)},
            **extra}


def test_relative_bars_draw_each_verdict_as_what_it_is() -> None:
    rows = [
        _row("fast", 1, paired_difference([110, 111, 109], [100, 100, 100], "repetition")),
        _row("unsure", 1, relative_difference([120, 90, 140], [100, 95, 105])),
        _row("single", 1, relative_difference([90], [100])),
        _row("base", 1, None),
    ]
    assert [r["relative"]["verdict"] for r in rows[:3]] == ["faster", "inconclusive", "too few repetitions"]
    fig = charts.relative_bars(rows, charts.colors(["fast", "unsure", "single"]), "t", 5.0)
    traces = {t["name"]: t for t in fig["data"]}
    solid, hatched, hollow = (traces[charts.STYLES[k]] for k in ("finding", "inconclusive", "too few"))
    assert solid["y"] == ["fast (1 thr)"] and "pattern" not in solid["marker"]
    assert hatched["y"] == ["unsure (1 thr)"] and hatched["marker"]["pattern"]["shape"] == "/"
    assert hollow["y"] == ["single (1 thr)"] and hollow["marker"]["color"] == "rgba(255,255,255,0)"
    # Whiskers wherever there is an interval: the inconclusive one reaches below 0.
    rel = rows[1]["relative"]
    assert hatched["error_x"]["arrayminus"] == [pytest.approx(rel["pct"] - rel["ci_low_pct"])]
    assert rel["ci_low_pct"] < 0 < rel["ci_high_pct"]
    assert not hollow["error_x"]["visible"]
    words = [a["text"] for a in fig["layout"]["annotations"]]
    assert words[0].startswith("paired: faster · +10.0% [")
    assert re.match(r"Welch: inconclusive \(-\d+%\.\.\+\d+%\) ~\d+ reps · \+\d+\.\d% \[-", words[1])
    assert words[2] == "Welch: too few reps: 3+ each · -10.0%, no interval (n=1)"
    go.Figure(fig)
    # A series the palette does not name is drawn in the fallback grey, hatched too (it crashed: '#555').
    unnamed = {t["name"]: t for t in charts.relative_bars(rows, {}, "t", 5.0)["data"]}
    assert unnamed[charts.STYLES["inconclusive"]]["marker"]["color"] == ["rgba(85,85,85,0.12)"]


def test_an_inconclusive_bar_without_a_palette_entry_is_drawn_in_the_fallback_grey() -> None:
    """`report RUN --against BASE` of two demo runs (variants, inconclusive between runs) stopped with
    "ValueError: invalid literal for int() with base 16": the pair report's fallback colour "#555"
    reached the hatched bar's fill, which read it as six hex digits."""
    rows = [_row("unsure", 1, relative_difference([120, 90, 140], [100, 95, 105]))]
    fig = charts.relative_bars(rows, {"unsure": "#555"}, "t", 5.0)
    (bar,) = fig["data"]
    assert bar["marker"]["color"] == ["rgba(85,85,85,0.12)"]


def test_caveats_are_computed_with_their_figures_and_thresholds() -> None:
    base_t = {"target_id": "a", "instance_type": "m6i.large", "engine": "mysql-8.0",
              "fingerprints": [{"kernel": "6.8", "cpu_model": "Xeon", "engine_version": "8.0.40",
                                "sysbench_version": "1.0.20"}]}
    cand_t = {**base_t, "target_id": "b", "fingerprints": [{"kernel": "6.1", "cpu_model": "EPYC",
                                                             "engine_version": "8.0.40", "sysbench_version": "1.0.20"}]}
    steps = [{"samples": 59, "samples_expected": 60, "reported_late": 0, "gap": False}]
    gappy = [{"samples": 54, "samples_expected": 60, "reported_late": 6, "gap": True}]
    base = {"steal_mean_pct": 3.2, "iowait_mean_pct": 0.1, "steps": steps}
    found = caveats.row_caveats({"steal_mean_pct": 0.04, "iowait_mean_pct": 12.0, "steps": gappy}, base,
                                cand_t, base_t)
    assert [c["words"] for c in found] == [
        "steal 0.04% vs 3.2%", "iowait 12.0% vs 0.10%",
        "seconds reported late 10.0% (1 of 1 steps) vs 0.0% (0 of 1)", "kernel 6.1 vs 6.8",
        "CPU model EPYC vs Xeon"]
    # Below every threshold: nothing; another instance type: its CPU model is the question, not a caveat.
    quiet = {"steal_mean_pct": 2.3, "iowait_mean_pct": 4.0, "steps": steps}
    assert caveats.row_caveats(quiet, base, {**base_t, "target_id": "b"}, base_t) == []
    other = {**cand_t, "instance_type": "m6g.large"}
    assert [c["kind"] for c in caveats.row_caveats(quiet, base, other, base_t)] == ["kernel"]


def test_caveats_reach_results_compare_and_the_terminal(stores: dict, capsys: pytest.CaptureFixture[str]) -> None:
    store, run_id = stores["demo"]
    doc = stats.run_comparison(store, run_id)
    relaxed = next(r for r in doc["rows"] if r["target_id"] == "relaxed")
    assert [c["kind"] for c in relaxed["caveats"]] == ["steal"]
    assert re.fullmatch(r"steal 0\.\d+% vs 3\.\d%", relaxed["caveats"][0]["words"])
    assert relaxed["iowait_mean_pct"] == pytest.approx(0.1) and doc["caveats_count"] == 1
    # Two runs: the demo against itself with relaxed as the only target of the second: steal differs.
    other = {**doc, "run": {**doc["run"], "run_id": "second"}, "targets": [t for t in doc["targets"]
                                                                              if t["target_id"] == "relaxed"],
             "rows": [r for r in doc["rows"] if r["target_id"] == "relaxed"]}
    first = {**doc, "targets": [t for t in doc["targets"] if t["target_id"] == "durable"],
             "rows": [r for r in doc["rows"] if r["target_id"] == "durable"]}
    pair = compare_runs(first, other)
    assert [c["kind"] for c in pair["rows"][0]["caveats"]] == ["steal"]
    # Runs of different workloads (a renamed copy of the same one is no difference): every verdict says so.
    renamed = {**doc["workload"], "name": "renamed", "description": "the same, renamed"}
    assert [c["kind"] for c in compare_runs(first, {**other, "workload": renamed})["rows"][0]["caveats"]] == ["steal"]
    longer = {**doc["workload"], "duration_s": doc["workload"]["duration_s"] * 10}
    rows = compare_runs(first, {**other, "workload": longer})["rows"]
    assert rows and all(r["caveats"][-1]["kind"] == "workload" for r in rows)
    step = doc["workload"]["duration_s"]
    assert rows[0]["caveats"][-1]["words"] == f"workload duration_s {step * 10} vs {step}"
    from benchfleet.cli.ui import console, print_comparison

    with console.capture() as captured:
        print_comparison(run_id, {"statistics": doc, "targets": []})
    text = captured.get()
    assert "caveats" in text and "differs: steal 0." in text and "vs 3." in text


def _alpha(color: str) -> float:
    return float(color.rsplit(",", 1)[1].rstrip(")")) if color.startswith("rgba(") else 1.0


def solid_without_whiskers(fig: charts.Figure) -> list[str]:
    """Every bar drawn solid (filled, not hatched) that has no whisker: a figure drawn more certain than it is."""
    found = []
    for trace in fig["data"]:
        if trace.get("type") != "bar":
            continue
        horizontal = trace.get("orientation") == "h"
        values = trace["x"] if horizontal else trace["y"]
        error = trace.get("error_x" if horizontal else "error_y") or {}
        marker = trace.get("marker") or {}
        shapes = (marker.get("pattern") or {}).get("shape", "")
        for i in range(len(values)):
            color = marker["color"][i] if isinstance(marker.get("color"), list) else marker.get("color", "#000")
            shape = shapes[i] if isinstance(shapes, list) else shapes
            whisker = error.get("visible") and ((error.get("array") or [0] * len(values))[i]
                                                or (error.get("arrayminus") or [0] * len(values))[i])
            if _alpha(color) >= 0.25 and not shape and not whisker:
                found.append(f"{fig['layout']['title']['text'][:40]}: {trace['name']} #{i}")
    return found


def _page_figures(page: str) -> dict[str, dict]:
    return {key: json.loads(fig) for fig, key in re.findall(r'var f=(\{.*?\});Plotly\.newPlot\("chart-([^"]+)"', page)}


def test_no_chart_draws_a_solid_bar_without_whiskers(stores: dict, tmp_path: Path) -> None:
    """Issue 38 item 4: the cluster report's first chart drew solid bars (204 vs 177 tps, one repetition, no
    whiskers) beside an inconclusive verdict, read as 'the proxy costs 13%'. Every bar of every chart of
    every report is solid only with its whiskers; one repetition is hollow and says 'no interval (n=1)',
    an inconclusive verdict hatched and said, too few repetitions hollow."""
    from benchfleet.report.pair import render_pair_report

    store = DuckDBStore(tmp_path / "more.duckdb")
    try:
        cluster = fill_store(store, "local-galera-20261126t100000-abcd", reps=1, threads=(4,), seconds=15,
                             warmup_s=3, blocks=3, seed=5,
                             targets=[{**DEMO_TARGETS[0], "id": "galera-3", "spec": {
                                 "id": "galera-3", "kind": "local", "memory_mb": 256}}],
                             variants=[{"id": "direct", "factor": 1.0, "cv": 0.3},
                                       {"id": "proxy", "factor": 0.87, "cv": 0.3}])
        unsure = fill_store(store, "tuning-20261126t100000-abcd", reps=3, threads=(8,), seconds=20, warmup_s=5,
                            host_cv=0.15, seed=3, targets=[dict(TARGETS[0]), {**TARGETS[0], "id": "m6i-tuned",
                                                                             "capacity": TARGETS[0]["capacity"] * 1.1}])
        base, other = fill_demo_pair(store)
        pages = {"cluster": html.render_report(store, cluster), "inconclusive": html.render_report(store, unsure),
                 "pair": render_pair_report(store, base, other)}
    finally:
        store.close()
    for name, (st, run_id) in stores.items():
        pages[name] = html.render_report(st, run_id)
    bad = []
    for name, page in pages.items():
        for key, fig in _page_figures(page).items():
            go.Figure(fig)
            bad += [f"{name}/{key}: {b}" for b in solid_without_whiskers(fig)]
    assert not bad, bad
    # The cluster's one repetition: each bar hollow, and says so over it.
    fig = _page_figures(pages["cluster"])["throughput"]
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    # One repetition of three blocks is too few for any verdict (blocks refine a repetition, they are no
    # repetitions: issue 37), so the proxy's bar is hollow like the baseline's, not hatched as inconclusive.
    assert [(t["name"], t["marker"]["color"], t["text"][0]) for t in bars] == [
        ("direct", charts.HOLLOW, "no interval (n=1)"), ("proxy", charts.HOLLOW, "no interval (n=1)")]
    assert (bars[1]["marker"].get("pattern") or {}).get("shape", "") == ""
    # ... under each bar's name on the axis, where a hatched bar would not hide them.
    assert fig["layout"]["xaxis"]["ticktext"] == ["direct<br><i>no interval (n=1)</i>",
                                                  "proxy<br><i>no interval (n=1)</i>"]
    # Hosts 15% apart, three repetitions: the candidate's bar hatched (its verdict inconclusive), with whiskers.
    bars = {t["name"]: t for t in _page_figures(pages["inconclusive"])["throughput"]["data"] if t["type"] == "bar"}
    assert bars["m6i-tuned"]["marker"]["pattern"]["shape"] == "/" and bars["m6i-tuned"]["text"] == ["inconclusive"]
    assert bars["m6i-large"]["text"] == [""] and "pattern" not in bars["m6i-large"]["marker"]


def test_the_latency_distribution_is_drawn_per_variant_and_thread_count() -> None:
    from benchfleet.stats.run import latency_distribution_spread

    def row(label: str, threads: int, *p50s: float) -> dict:
        steps = [{"latency_percentiles_ms": {"50": p, "90": 2 * p, "95": 3 * p, "99": 10 * p, "99.9": 40 * p,
                                             "max": 90 * p}} for p in p50s]
        return {"target_id": "local", "label": label, "threads": threads,
                "latency_distribution_ms": latency_distribution_spread(steps)}

    comparison = {"rows": [row("local/durable", 1, 1.0, 1.2, 1.1), row("local/relaxed", 1, 0.2, 0.3, 0.25),
                           row("local/relaxed", 4, 0.5, 0.4)]}
    fig = charts.latency_distribution(comparison, charts.colors(["local/durable", "local/relaxed"]))
    assert fig is not None
    go.Figure(fig)
    names = [t["name"] for t in fig["data"]]
    # four repetitions of relaxed at 4 threads: no median of an even count (percentiles are never averaged)
    assert names == ["local/durable, 1 thr", "local/relaxed, 1 thr"]
    assert fig["data"][0]["x"] == ["p50", "p90", "p95", "p99", "p99.9", "max"]
    assert fig["data"][0]["y"] == [1.1, 2.2, pytest.approx(3.3), 11.0, 44.0, pytest.approx(99.0)]
    assert fig["layout"]["yaxis"]["type"] == "log"  # 0.25 ms to 99 ms
    assert charts.latency_distribution({"rows": [{"target_id": "a", "threads": 1}]}, {}) is None
