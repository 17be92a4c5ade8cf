"""A history's newest runs against the stable runs before them (issue 37, items 4 and 7): a true 10 %
drop fails `results --history` the run it happens and the run after, and a history where nothing
changed stays quiet however often it is looked at (benchfleet.stats.newest, benchfleet.stats.history)."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from benchfleet.stats.changepoints import find
from benchfleet.stats.history import FLAGGED, Point, history, point_from_row, render_text
from benchfleet.stats.newest import LOOKS, TESTS_PER_LOOK, look_confidence, newest_against


def simulated(seed: int, cv: float, runs: int = 20, drop_at: int | None = None) -> list[Point]:
    """A nightly history: each run 3 repetitions on hosts spread by ``cv`` (the published study: 1.8 %
    median, 3.8 % p90); from run ``drop_at`` on, 10 % fewer tps."""
    rng = random.Random(seed)
    return [point_from_row(f"r{k:02d}", f"2026-11-{k:02d}T02:00:00Z", {
        "target_id": "db", "threads": 4,
        "tps_values": [1000 * (0.9 if drop_at and k >= drop_at else 1.0) * math.exp(rng.gauss(0, cv))
                       for _ in range(3)]}) for k in range(1, runs + 1)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_ten_percent_drop_fails_the_history_the_run_it_happens_and_the_run_after(seed: int) -> None:
    """At the study's median spread. Before: E-Divisive cannot find a change in a lone last run, and with
    two its Welch interval over run means (df ~1) rarely lay beyond -10 %: exit 0 both times."""
    points = simulated(seed, 0.018, drop_at=11)
    assert history("n", points[:10])["latest_regressions"] == []
    for runs in (11, 12):
        doc = history("n", points[:runs])
        (fail,) = doc["latest_regressions"]
        assert fail in doc["change_points"] and fail["method"] == "newest runs"
        assert (fail["run_id"], fail["series"], fail["runs_after"], fail["last_run_after"]) == (
            "r11", "db @ 4 thr", runs - 10, f"r{runs:02d}")
        assert fail["pct"] == pytest.approx(-10, abs=3) and fail["change"] in FLAGGED
        rel = fail["relative"]
        assert rel["design"] == "prediction" and rel["confidence"] == look_confidence(1)
        assert rel["ci_high_pct"] < 0 and rel["ci_low_pct"] < -10
        assert f"<-- {'REGRESSION' if fail['change'] == 'regression' else fail['change']}" in render_text(doc)


def test_the_drop_keeps_failing_the_history_while_the_newest_run_lies_after_it() -> None:
    points = simulated(1, 0.018, drop_at=11)
    for runs in range(13, 21):
        (fail,) = history("n", points[:runs])["latest_regressions"]
        assert fail["run_id"] == "r11" and fail["last_run_after"] == f"r{runs:02d}"


def test_an_aa_history_looked_at_after_every_run_never_fails() -> None:
    """A noisy A/A history (6 % between repetitions, the study's worst hosts) where the newest runs
    against the runs before at a plain 95 % would have cried 'possible regression' three times: each
    look tests at the confidence that shares 5 % among the looks, and none fails."""
    points = simulated(3, 0.06)

    def plain(upto: int) -> bool:
        means = [p.tps_mean for p in points[:upto] if p.tps_mean is not None]
        for m in (1, 2):
            body = means[:-m]
            cuts = find(body)
            rel = newest_against(body[cuts[-1] if cuts else 0:], means[-m:], 0.95, 10.0)
            if rel is not None and rel.ci_high_pct is not None and rel.ci_low_pct is not None \
                    and rel.ci_high_pct < 0 and rel.ci_low_pct < -10:
                return True
        return False

    assert [k for k in range(2, 21) if plain(k)] == [6, 7, 11]
    assert [k for k in range(2, 21) if history("n", points[:k])["latest_regressions"]] == []


def test_the_newest_runs_interval_is_the_prediction_interval_of_their_mean() -> None:
    reference, newest = [1000.0, 1012.0, 991.0, 1004.0, 997.0], [950.0, 940.0]
    rel = newest_against(reference, newest, 0.99, 10.0)
    assert rel is not None
    logs = [math.log(x) for x in reference]
    d = (math.log(950) + math.log(940)) / 2 - sum(logs) / 5
    half = stats.t.ppf(0.995, 4) * stats.tstd(logs) * math.sqrt(1 / 2 + 1 / 5)
    assert rel.pct == pytest.approx(100 * math.expm1(d), rel=1e-12)
    assert rel.ci_low_pct == pytest.approx(100 * math.expm1(d - half), rel=1e-9)
    assert rel.ci_high_pct == pytest.approx(100 * math.expm1(d + half), rel=1e-9)
    assert (rel.df, rel.repetitions, rel.design, rel.verdict) == (4.0, (2, 5), "prediction", "slower")
    # Fewer reference runs than the run-to-run noise needs to count as measured: no test.
    assert newest_against(reference[:3], newest, 0.99, 10.0) is None


def test_the_looks_share_the_false_alarm_rate_and_the_rule_says_so() -> None:
    assert look_confidence(1) == pytest.approx(1 - 2 * 0.05 / (LOOKS * TESTS_PER_LOOK))
    assert look_confidence(4) == pytest.approx(1 - 2 * 0.05 / (LOOKS * TESTS_PER_LOOK * 4))
    doc = history("n", simulated(1, 0.018, runs=5))
    assert doc["look_confidence"] == look_confidence(1)
    assert f"5% chance of a false alarm among {LOOKS} runs x {TESTS_PER_LOOK} tests x 1 series" \
        in doc["change_point_rule"]
