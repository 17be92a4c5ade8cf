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
from synthetic import fill_store


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
    from benchfleet.report import charts

    def series(target: str, t: list[int]) -> dict[str, object]:
        n = len(t)
        return {"target_id": target, "repetition": 1, "t": t, "tps": [1.0] * n, "tps_min": [0.5] * n,
                "tps_max": [2.0] * n, "steal": [0.1] * n, "iowait": [None] * n, "qps": [9.0] * n,
                "threads": [4] * n}

    fig = charts.timeline({"width_s": 5, "series": [series("a", [0, 5, 10, 15]), series("b", [0, 5, 20])]},
                          {"a": "#1f77b4", "b": "#d62728"})
    lines = {t["name"]: t for t in fig["data"] if "min-max" not in t["name"]}
    assert {k: lines["a rep 1"].get(k) for k in ("x", "x0", "dx")} == {"x": None, "x0": 0, "dx": 5}
    assert {k: lines["a rep 1 steal %"].get(k) for k in ("x", "x0", "dx")} == {"x": None, "x0": 0, "dx": 5}
    assert lines["b rep 1"]["x"] == [0, 5, 20] and "x0" not in lines["b rep 1"]
    band = next(t for t in fig["data"] if t["name"] == "a rep 1 min-max")
    assert band["x"] == [0, 5, 10, 15, 15, 10, 5, 0]  # the envelope is drawn around, on explicit times
