"""The report's per-second chart data (benchfleet/report/data.py): downsampled in SQL to buckets whose
mean, min and max are those of the samples in them, so the chart's envelope hides no second."""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from benchfleet.local.store import DuckDBStore
from benchfleet.report import data

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from synthetic import fill_demo_pair, fill_store


@pytest.mark.parametrize("total_points", [60_000, 12 * 10])
def test_timeline_buckets_are_the_samples_they_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   total_points: int) -> None:
    monkeypatch.setattr(data, "MAX_POINTS_TOTAL", total_points)
    monkeypatch.setattr(data, "MIN_POINTS_PER_SERIES", 10)
    store = DuckDBStore(tmp_path / "b.duckdb")
    try:
        run_id = fill_store(store, "timeline-20261122t100000-abcd", reps=2, threads=(1, 4), seconds=40, warmup_s=10)
        result = data.timeline(store, run_id)
        samples = store.samples(run_id)
    finally:
        store.close()
    width = result["width_s"]
    assert width == (1 if total_points == 60_000 else math.ceil(90 / (120 // 6)))  # 6 series of 90 s
    expected: dict[tuple[str, int], dict[int, list[dict[str, object]]]] = defaultdict(lambda: defaultdict(list))
    t0 = {}
    for s in samples:
        key = (s["target_id"], s["repetition"])
        t0[key] = min(t0.get(key, s["time"]), s["time"])
    for s in samples:
        key = (s["target_id"], s["repetition"])
        expected[key][math.floor((s["time"] - t0[key]).total_seconds() / width)].append(s)
    assert [(s["target_id"], s["repetition"]) for s in result["series"]] == sorted(expected)
    for series in result["series"]:
        buckets = expected[(series["target_id"], series["repetition"])]
        assert series["t"] == [b * width for b in sorted(buckets)]
        for i, b in enumerate(sorted(buckets)):
            tps = [float(s["tps"]) for s in buckets[b]]
            assert series["tps"][i] == pytest.approx(round(statistics.fmean(tps), 3), abs=1e-3)
            assert series["tps_min"][i] == round(min(tps), 3) and series["tps_max"][i] == round(max(tps), 3)
            assert series["threads"][i] == max(int(s["threads"]) for s in buckets[b])
            steal = statistics.fmean(float(s["cpu_steal_pct"]) for s in buckets[b])
            assert series["steal"][i] == pytest.approx(round(steal, 3), abs=1e-3)


def test_evenly_spaced_points_are_drawn_from_x0_and_dx_and_a_gap_keeps_its_times() -> None:
    from benchfleet.report import timecharts

    def series(target: str, t: list[int]) -> dict[str, object]:
        n = len(t)
        return {"target_id": target, "repetition": 1, "t": t, "tps": [1.0] * n, "tps_min": [0.5] * n,
                "tps_max": [2.0] * n, "steal": [0.1] * n, "iowait": [None] * n, "qps": [9.0] * n,
                "threads": [4] * n}

    fig = timecharts.timeline({"width_s": 5, "series": [series("a", [0, 5, 10, 15]), series("b", [0, 5, 20])]},
                          {"a": "#1f77b4", "b": "#d62728"})
    lines = {t["name"]: t for t in fig["data"] if "min-max" not in t["name"]}
    assert {k: lines["a rep 1"].get(k) for k in ("x", "x0", "dx")} == {"x": None, "x0": 0, "dx": 5}
    assert {k: lines["a rep 1 steal %"].get(k) for k in ("x", "x0", "dx")} == {"x": None, "x0": 0, "dx": 5}
    assert lines["b rep 1"]["x"] == [0, 5, 20] and "x0" not in lines["b rep 1"]
    band = next(t for t in fig["data"] if t["name"] == "a rep 1 min-max")
    assert band["x"] == [0, 5, 10, 15, 15, 10, 5, 0]  # the envelope is drawn around, on explicit times


def test_the_variants_alternating_are_drawn_block_by_block_in_their_colours(tmp_path: Path) -> None:
    """Issue 38 item 3: the per-second charts drew one line per repetition, the blocks of durable and relaxed
    that alternate inside it in one colour, joined: the design that makes the verdict paired was not shown.
    Now each variant has its colour (the one the other charts give it) and its line breaks between its
    blocks; a chart of blocks draws one panel per repetition, every block shaded in its variant's colour
    from its first second to its last, named b1/b2."""
    import json
    import re

    from benchfleet.report import charts, html

    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id, _ = fill_demo_pair(store)
        page = html.render_report(store, run_id)
        rows = store.query("SELECT repetition, variant, block, threads, min(second) AS first, max(second) AS last, "
                           "epoch(min(time)) AS t FROM samples WHERE run_id = ? AND phase = 'measure' "
                           "GROUP BY ALL ORDER BY repetition, t", [run_id])
        spans = {r["repetition"]: r["t0"] for r in data.timeline(store, run_id)["spans"]}
    finally:
        store.close()
    figs = {key: json.loads(fig) for fig, key in re.findall(r'var f=(\{.*?\});Plotly\.newPlot\("chart-([^"]+)"', page)}
    palette = charts.colors(["durable", "relaxed"])
    blocks = figs["blocks"]
    # One panel per repetition, each variant's line in its colour.
    assert [blocks["layout"][f"yaxis{'' if i == 1 else i}"]["domain"][0] < 1 for i in (1, 2, 3)] == [True] * 3
    assert {(t["name"], t["yaxis"], t["line"]["color"]) for t in blocks["data"]} == {
        (v, axis, palette[v]) for v in ("durable", "relaxed") for axis in ("y", "y2", "y3")}
    # Every block of every repetition shaded in its variant's colour, around the seconds it measured.
    rects = [s for s in blocks["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == len(rows) == 3 * 2 * 2 * 2  # repetitions x thread counts x blocks x variants
    for shape, row in zip(rects, rows, strict=True):
        assert shape["yref"] == f"{'y' if row['repetition'] == 1 else 'y' + str(row['repetition'])} domain"
        assert shape["fillcolor"] == charts.rgba_of(palette[row["variant"]], 0.13)
        start = row["t"] - spans[row["repetition"]]
        assert shape["x0"] < start < shape["x1"], (shape, row)
    labels = [a["text"] for a in blocks["layout"]["annotations"] if a["text"] in ("b1", "b2")]
    assert labels.count("b1") == labels.count("b2") == 12
    # The timeline: one line per variant and repetition in the variant's colour, broken between its blocks.
    lines = {t["name"]: t for t in figs["timeline"]["data"] if t.get("yaxis") is None}
    assert {name: t["line"]["color"] for name, t in lines.items()} == {
        f"{v} rep {r}": palette[v] for v in ("durable", "relaxed") for r in (1, 2, 3)}
    assert all(None in t["y"] for t in lines.values())
