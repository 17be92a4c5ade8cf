"""history: trend of consecutive runs of one name and regression flags."""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest

from benchfleet.stats import mean_ci, relative_difference
from benchfleet.stats.history import Point, history, point_from_row, points_from_comparison, render_text, trend
from benchfleet.stats.verdict import change_of


def p(run: str, *values: float, target: str = "m6i", threads: int = 8, day: int = 1) -> Point:
    """A run's point from its repetitions' tps (none: a run without data)."""
    return point_from_row(run, f"2026-11-{day:02d}T02:00:00Z",
                          {"target_id": target, "threads": threads, "tps_values": list(values)}) if values else \
        Point(run_id=run, started_at=f"2026-11-{day:02d}T02:00:00Z", target_id=target, threads=threads, tps_mean=None)


def by_run(rows):
    return {r.run_id: r for r in rows}


def test_regression_is_compares_verdict_slower_beyond_the_threshold():
    rows = by_run(trend([p("r1", 990, 1000, 1010, day=1), p("r2", 840, 850, 860, day=2)]))
    assert rows["r1"].verdict == "first" and rows["r1"].relative is None
    assert rows["r2"].verdict == "regression" and rows["r2"].delta_pct == -15.0
    assert rows["r2"].relative["design"] == "welch" and rows["r2"].relative["ci_high_pct"] < 0
    # compare's interval; with two runs the run-to-run noise is unknown, and the words say so.
    expected = asdict(relative_difference([840, 850, 860], [990, 1000, 1010], margin_pct=10))
    assert {k: v for k, v in rows["r2"].relative.items() if k not in ("words", "run_to_run")} == {
        k: v for k, v in expected.items() if k != "words"}
    assert rows["r2"].relative["words"] == "slower (repetitions only; run-to-run noise not yet measured: 2 runs)"
    assert rows["r2"].previous_run_id == "r1"


def test_a_real_drop_whose_two_intervals_overlap_is_flagged():
    # 12 % down, 3 % spread: each run's own 95 % interval overlaps the other's (the old rule said only
    # "drop"), but the interval of the change, the one compare uses, is clearly below 0. It reaches past
    # -10 % with its harmless end inside: a possible regression, flagged, in those words.
    r1, r2 = [1000.0, 1030.0, 970.0], [880.0, 910.0, 850.0]
    assert mean_ci(r1)[0] < mean_ci(r2)[1]
    rows = by_run(trend([p("r1", *r1, day=1), p("r2", *r2, day=2)]))
    assert rows["r2"].verdict == "possible regression"
    assert rows["r2"].relative["ci_low_pct"] < -10 < rows["r2"].relative["ci_high_pct"] < 0
    doc = history("n", [p("r1", *r1, day=1), p("r2", *r2, day=2)])
    assert [r["run_id"] for r in doc["regressions"]] == ["r2"]
    # Flagged, never failing on its own: the exit code is the change points' (two runs have none).
    assert doc["latest_regressions"] == []
    assert "<-- possible regression" in render_text(doc) and "REGRESSION" not in render_text(doc)


def test_a_drop_significant_by_a_hair_and_reaching_past_the_threshold_is_no_plain_regression():
    # Issue 37: a drop whose interval's harmless end was about -1 % and whose other end reached past
    # -10 % was printed '<-- REGRESSION'. Only an interval wholly beyond -10 % is one.
    r1, r2 = [1000.0, 1030.0, 970.0], [930.0, 960.0, 900.0]
    rows = by_run(trend([p("r1", *r1, day=1), p("r2", *r2, day=2)]))
    rel = rows["r2"].relative
    assert rel["ci_low_pct"] < -10 and -2 < rel["ci_high_pct"] < 0
    assert rows["r2"].verdict == "possible regression"
    words = change_of(relative_difference(r2, r1, margin_pct=10))[1]
    assert words.startswith("possible regression") and "-10%" in words
    rows = by_run(trend([p("r1", *r1, day=1), p("r2", 800.0, 810.0, 820.0, day=2)]))
    assert rows["r2"].relative["ci_high_pct"] < -10 and rows["r2"].verdict == "regression"


def test_a_wide_change_is_inconclusive_and_one_repetition_too_few():
    rows = by_run(trend([p("r1", 700, 1000, 1300, day=1), p("r2", 600, 850, 1100, day=2)]))
    assert rows["r2"].verdict == "inconclusive" and rows["r2"].relative["words"].startswith("inconclusive (-")
    rows = by_run(trend([p("r1", 1000, day=1), p("r2", 500, day=2)]))
    assert rows["r2"].verdict == "too few repetitions"


def test_a_small_real_drop_is_a_drop_and_no_change_is_steady():
    rows = by_run(trend([p("r1", 999, 1000, 1001, day=1), p("r2", 949, 950, 951, day=2),
                         p("r3", 950, 951, 949, day=3)]))
    assert rows["r2"].verdict == "drop" and rows["r2"].relative["within_margin"] is True
    assert rows["r3"].verdict == "steady" and rows["r3"].relative["verdict"] == "equivalent"


def test_threshold_is_the_margin():
    rows = by_run(trend([p("r1", 999, 1000, 1001, day=1), p("r2", 949, 950, 951, day=2)], threshold_pct=3))
    assert rows["r2"].verdict == "regression" and rows["r2"].relative["margin_pct"] == 3


def test_improvement_and_order_by_start_not_input_order():
    pts = [p("r3", 1290, 1300, 1310, day=3), p("r1", 999, 1000, 1001, day=1), p("r2", 1009, 1010, 1011, day=2)]
    rows = trend(pts)
    assert [r.run_id for r in rows] == ["r1", "r2", "r3"]
    assert [r.verdict for r in rows] == ["first", "rise", "improvement"]
    assert rows[2].vs_first_pct == 30.0 and rows[2].previous_run_id == "r2"


def test_each_target_and_thread_count_is_its_own_series():
    pts = [p("r1", 99, 100, 101, target="a"), p("r2", 49, 50, 51, target="a", day=2),
           p("r1", 99, 100, 101, target="b"), p("r2", 100, 99, 101, target="b", day=2),
           p("r1", 199, 200, 201, threads=16), p("r2", 201, 200, 202, threads=16, day=2)]
    verdicts = {(r.target_id, r.threads, r.run_id): r.verdict for r in trend(pts)}
    assert verdicts[("a", 8, "r2")] == "regression"
    assert verdicts[("b", 8, "r2")] == "steady"
    assert verdicts[("m6i", 16, "r2")] == "steady"


def test_each_variant_is_judged_against_itself_in_the_run_before():
    # Two runs of a spec with variants, nothing changed between them: relaxed is 1.5x durable in both.
    def run(run_id: str, day: int) -> dict[str, object]:
        return {"run": {"run_id": run_id, "started_at": f"2026-11-{day:02d}T02:00:00Z"},
                "rows": [{"target_id": "box", "variant": v, "threads": 4,
                          "tps": {"mean": tps, "n": 3, "values": [tps - 1, tps, tps + 1]}}
                         for v, tps in (("durable", 1000.0), ("relaxed", 1500.0))]}

    rows = trend(points_from_comparison(run("r1", 1)) + points_from_comparison(run("r2", 2)))
    assert {(r.variant, r.run_id): r.verdict for r in rows} == {
        ("durable", "r1"): "first", ("relaxed", "r1"): "first",
        ("durable", "r2"): "steady", ("relaxed", "r2"): "steady"}
    assert "box · relaxed" in render_text(history("n", points_from_comparison(run("r1", 1))))


def test_a_run_without_data_does_not_break_the_chain():
    rows = by_run(trend([p("r1", 990, 1000, 1010, day=1), p("r2", day=2),
                         p("r3", 790, 800, 810, day=3)]))
    assert rows["r2"].verdict == "no data"
    assert rows["r3"].previous_run_id == "r1" and rows["r3"].verdict == "regression"


def test_history_document_lists_latest_regressions():
    doc = history("nightly", [p("r1", 990, 1000, 1010, day=1), p("r2", 690, 700, 710, day=2),
                              p("r3", 700, 710, 720, day=3)])
    assert doc["runs"] == ["r1", "r2", "r3"]
    assert [r["run_id"] for r in doc["regressions"]] == ["r2"]
    assert doc["latest_regressions"] == []
    assert "10%" in doc["rule"] and doc["multiplicity"]["comparisons"] == 2
    text = render_text(doc)
    assert "REGRESSION" in text and text.count("\n") == 2 + 3 + 1 and "2 comparisons at 95%" in text


def test_rows_from_stats_comparison_documents():
    doc = {"run": {"run_id": "r1", "started_at": "2026-11-01T00:00:00Z"},
           "rows": [{"target_id": "m6i", "threads": 4,
                     "tps": {"mean": 100.0, "ci_low": 90.0, "ci_high": 110.0, "n": 3, "values": [90, 100, 110]},
                     "latency_step_pct_ms": {"median": 12.5}}]}
    (pt,) = points_from_comparison(doc)
    assert (pt.run_id, pt.tps_mean, pt.tps_ci_low, pt.tps_ci_high, pt.repetitions, pt.latency_ms) == (
        "r1", 100.0, 90.0, 110.0, 3, 12.5)


def test_interval_computed_from_values_when_missing():
    pt = point_from_row("r1", None, {"target_id": "a", "threads": 1, "tps_values": [90, 100, 110]})
    assert pt.tps_mean == 100.0
    # on the log scale: 100 * exp(-/+ t(0.975, 2) * (10 / 100) / sqrt(3)) = 100 * exp(-/+ 0.2484)
    assert pt.tps_ci_low == pytest.approx(100 * math.exp(-0.24842), abs=0.01)
    assert pt.tps_ci_high == pytest.approx(100 * math.exp(0.24842), abs=0.01)
    flat = point_from_row("r1", None, {"target_id": "a", "threads": 1, "tps_mean": 5, "tps_ci_low": 4,
                                       "tps_ci_high": 6})
    assert (flat.tps_mean, flat.tps_ci_low, flat.tps_ci_high) == (5.0, 4.0, 6.0)


def test_empty_history():
    doc = history("nothing", [])
    assert doc["runs"] == [] and doc["rows"] == [] and doc["latest_regressions"] == []
