"""history: trend of consecutive runs of one name and regression flags."""

from __future__ import annotations

import math

import pytest

from benchfleet.history import Point, history, point_from_row, points_from_comparison, render_text, trend


def p(run: str, tps: float | None, low: float | None = None, high: float | None = None, *,
      target: str = "m6i", threads: int = 8, day: int = 1) -> Point:
    return Point(run_id=run, started_at=f"2026-11-{day:02d}T02:00:00Z", target_id=target, threads=threads,
                 tps_mean=tps, tps_ci_low=low, tps_ci_high=high)


def by_run(rows):
    return {r.run_id: r for r in rows}


def test_regression_needs_a_big_drop_and_separate_intervals():
    rows = by_run(trend([p("r1", 1000, 980, 1020, day=1), p("r2", 850, 830, 870, day=2)]))
    assert rows["r1"].verdict == "first"
    assert rows["r2"].verdict == "regression" and rows["r2"].delta_pct == -15.0
    assert rows["r2"].ci_overlap is False and rows["r2"].previous_run_id == "r1"


def test_big_drop_with_overlapping_intervals_is_only_a_drop():
    rows = by_run(trend([p("r1", 1000, 700, 1300, day=1), p("r2", 850, 600, 1100, day=2)]))
    assert rows["r2"].verdict == "drop" and rows["r2"].ci_overlap is True


def test_drop_without_intervals_is_not_claimed_as_regression():
    rows = by_run(trend([p("r1", 1000, day=1), p("r2", 500, day=2)]))
    assert rows["r2"].verdict == "drop" and rows["r2"].ci_overlap is None


def test_small_significant_drop_is_steady():
    rows = by_run(trend([p("r1", 1000, 999, 1001, day=1), p("r2", 950, 949, 951, day=2)]))
    assert rows["r2"].verdict == "steady"


def test_threshold_is_a_parameter():
    rows = by_run(trend([p("r1", 1000, 999, 1001, day=1), p("r2", 950, 949, 951, day=2)], threshold_pct=3))
    assert rows["r2"].verdict == "regression"


def test_improvement_and_order_by_start_not_input_order():
    pts = [p("r3", 1300, 1290, 1310, day=3), p("r1", 1000, 990, 1010, day=1), p("r2", 1010, 1000, 1020, day=2)]
    rows = trend(pts)
    assert [r.run_id for r in rows] == ["r1", "r2", "r3"]
    assert [r.verdict for r in rows] == ["first", "steady", "improvement"]
    assert rows[2].vs_first_pct == 30.0 and rows[2].previous_run_id == "r2"


def test_each_target_and_thread_count_is_its_own_series():
    pts = [p("r1", 100, 99, 101, target="a"), p("r2", 50, 49, 51, target="a", day=2),
           p("r1", 100, 99, 101, target="b"), p("r2", 100, 99, 101, target="b", day=2),
           p("r1", 200, 199, 201, threads=16), p("r2", 210, 209, 211, threads=16, day=2)]
    verdicts = {(r.target_id, r.threads, r.run_id): r.verdict for r in trend(pts)}
    assert verdicts[("a", 8, "r2")] == "regression"
    assert verdicts[("b", 8, "r2")] == "steady"
    assert verdicts[("m6i", 16, "r2")] == "steady"


def test_a_run_without_data_does_not_break_the_chain():
    rows = by_run(trend([p("r1", 1000, 990, 1010, day=1), p("r2", None, day=2),
                         p("r3", 800, 790, 810, day=3)]))
    assert rows["r2"].verdict == "no data"
    assert rows["r3"].previous_run_id == "r1" and rows["r3"].verdict == "regression"


def test_history_document_lists_latest_regressions():
    doc = history("nightly", [p("r1", 1000, 990, 1010, day=1), p("r2", 700, 690, 710, day=2),
                              p("r3", 710, 700, 720, day=3)])
    assert doc["runs"] == ["r1", "r2", "r3"]
    assert [r["run_id"] for r in doc["regressions"]] == ["r2"]
    assert doc["latest_regressions"] == []
    assert "10%" in doc["rule"]
    text = render_text(doc)
    assert "REGRESSION" in text and text.count("\n") == 2 + 3


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
