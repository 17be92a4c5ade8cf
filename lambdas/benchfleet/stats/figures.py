"""Figures of one series and across repetitions: percentiles, CV, confidence intervals, relative
differences with their Welch interval. Every docstring says exactly what a figure is."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from benchfleet.stats.tdist import t_quantile

CONFIDENCE = 0.95
Verdict = Literal["faster", "slower", "no significant difference", "too few repetitions", "insufficient data"]
# Below this many repetitions on a side, an interval that contains 0 says "we cannot tell yet", not
# "there is no difference": with 2 the t quantile alone is 12.7 (df 1) and a 2x gap can look like noise.
MIN_REPETITIONS = 3
# Beyond this many repetitions per target, "how many would do" is not a plan anyone runs.
MAX_REPETITIONS_ADVISED = 50

# ---- figures of one series ------------------------------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation between closest ranks
    (type 7; DuckDB ``quantile_cont``). None for no values."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in 0..100, not {q}")
    xs = sorted(values)
    h = (len(xs) - 1) * q / 100
    i = math.floor(h)
    if i + 1 >= len(xs):
        return float(xs[-1])
    return float(xs[i] + (h - i) * (xs[i + 1] - xs[i]))


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation: sample standard deviation / mean. None below two values or at mean 0.
    Used as *jitter*: the CV of per-second tps of a step says how steady its throughput was."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0 or math.isnan(mean):
        return None
    return statistics.stdev(values) / mean


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """sum(w x) / sum(w): a rate averaged over intervals of different lengths (``weights`` in
    seconds) is the events over the time. None when the weights add up to 0."""
    total = math.fsum(weights)
    if total <= 0:
        return None
    return math.fsum(w * x for x, w in zip(values, weights, strict=True)) / total


def weighted_cv(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """CV of a rate over intervals of different lengths: the weighted mean, and the variance with
    frequency weights sum(w (x - m)^2) / (sum(w) - 1), which is the sample variance when every
    weight is 1. None as for :func:`cv`."""
    if len(values) < 2:
        return None
    mean = weighted_mean(values, weights)
    total = math.fsum(weights)
    if mean is None or mean == 0 or math.isnan(mean) or total <= 1:
        return None
    var = math.fsum(w * (x - mean) ** 2 for x, w in zip(values, weights, strict=True)) / (total - 1)
    return math.sqrt(var) / mean


def mean_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Confidence interval of the mean of ``values`` (independent repetitions of a throughput), on
    the log scale so that it never goes below zero: mean * exp(-/+ t(1 - alpha/2, n - 1) * cv / sqrt(n))
    with cv = s / mean (the delta method, as for :class:`Relative`). Asymmetric: a wide interval
    stretches up, not into negative throughput. None below two values or at a mean of 0."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    half = t_quantile(0.5 + confidence / 2, n - 1) * statistics.stdev(values) / (mean * math.sqrt(n))
    return mean * math.exp(-half), mean * math.exp(half)


def step_stats(tps: Sequence[float], latency_ms: Sequence[float],
               steal_pct: Sequence[float | None] = (),
               interval_s: Sequence[float] | None = None) -> dict[str, float | int | None]:
    """Figures of one step from its measure-phase per-second samples, each covering ``interval_s``
    seconds (1 each when not given):

    - ``seconds``: number of per-second samples; ``covered_s``: the seconds they cover;
    - ``tps_mean``: of per-second tps weighted by interval length (events / time);
    - ``tps_median``/``tps_stdev``/``tps_min``/``tps_max``: of per-second tps;
    - ``tps_cv``: jitter, weighted stdev / weighted mean of per-second tps (:func:`weighted_cv`);
    - ``latency_series_p50_ms``/``_p95_ms``/``_p99_ms``: the 50th/95th/99th percentile *across seconds*
      of the per-second latency (each second's value is sysbench's ``latency_pct`` percentile of that
      second's events) -- how bad the worst seconds were, not a percentile of all events;
    - ``latency_series_cv``: stdev / mean of the per-second latency (latency jitter);
    - ``steal_mean_pct``/``steal_max_pct``: mean and max of per-second CPU steal (None if unmeasured).
    """
    steal = [float(s) for s in steal_pct if s is not None]
    n = len(tps)
    weights = list(interval_s) if interval_s is not None else [1.0] * n
    return {
        "seconds": n,
        "covered_s": math.fsum(weights) if tps else None,
        "tps_mean": weighted_mean(tps, weights) if tps else None,
        "tps_median": statistics.median(tps) if tps else None,
        "tps_stdev": statistics.stdev(tps) if n > 1 else None,
        "tps_min": min(tps) if tps else None,
        "tps_max": max(tps) if tps else None,
        "tps_cv": weighted_cv(tps, weights),
        "latency_series_p50_ms": percentile(latency_ms, 50),
        "latency_series_p95_ms": percentile(latency_ms, 95),
        "latency_series_p99_ms": percentile(latency_ms, 99),
        "latency_series_cv": cv(latency_ms),
        "steal_mean_pct": statistics.fmean(steal) if steal else None,
        "steal_max_pct": max(steal) if steal else None,
    }


# ---- across repetitions ---------------------------------------------------------------------------

def mean_spread(values: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """A mean-like figure across repetitions: ``mean``, ``min``, ``max``, ``stdev`` (sample), ``n``,
    ``ci_low``/``ci_high`` (Student-t interval of the mean at ``confidence``; None below two values)
    and the per-repetition ``values``."""
    if not values:
        return {"mean": None, "min": None, "max": None, "stdev": None, "n": 0,
                "ci_low": None, "ci_high": None, "values": []}
    ci = mean_ci(values, confidence)
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else None, "n": len(values),
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None, "values": list(values)}


def percentile_spread(values: Sequence[float | None]) -> dict[str, Any]:
    """A percentile across repetitions, never averaged: ``median`` (only for an odd number of
    repetitions, where it is one repetition's own figure; of an even number the median would be an
    average of two, so it is None and the range speaks), ``min`` and ``max`` of the per-repetition
    percentiles, ``n`` and the per-repetition ``values``."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "n": 0, "values": []}
    median = statistics.median(xs) if len(xs) % 2 == 1 else None
    return {"median": median, "min": min(xs), "max": max(xs), "n": len(xs), "values": xs}


@dataclass(frozen=True)
class Relative:
    """Relative difference of a candidate's mean to a baseline's mean, in percent:
    ``pct`` = 100 * (mean(candidate) / mean(baseline) - 1), with a ``confidence`` interval
    [``ci_low_pct``, ``ci_high_pct``] from Welch's approach on the log of the ratio of means
    (delta method: se^2 = s_c^2/(n_c m_c^2) + s_b^2/(n_b m_b^2), Welch-Satterthwaite degrees of
    freedom ``df``), back-transformed, so it is asymmetric.

    ``verdict``: ``faster``/``slower`` when the whole interval is on one side of 0; when it contains
    0, ``too few repetitions`` below MIN_REPETITIONS on either side, else ``no significant
    difference``; ``insufficient data`` without a baseline figure. A candidate at 0 against a
    working baseline is -100 % and ``slower`` (nothing to take a log of, nothing to doubt).
    ``repetitions``: (candidate, baseline) counts. ``repetitions_needed``: when the interval
    contains 0, the repetitions per target at which an interval of this difference and this spread
    would exclude 0 (None when it cannot be estimated: one repetition, no spread, or more than
    MAX_REPETITIONS_ADVISED)."""

    pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    df: float | None
    verdict: Verdict
    confidence: float = CONFIDENCE
    repetitions: tuple[int, int] = (0, 0)
    repetitions_needed: int | None = None


def relative_difference(candidate: Sequence[float], baseline: Sequence[float],
                        confidence: float = CONFIDENCE, higher_is_better: bool = True) -> Relative:
    """See :class:`Relative`. ``higher_is_better`` is True for throughput, False for latency."""
    nc, nb = len(candidate), len(baseline)
    counts = (nc, nb)
    if not candidate or not baseline:
        return Relative(None, None, None, None, "insufficient data", confidence, counts)
    mc, mb = statistics.fmean(candidate), statistics.fmean(baseline)
    if mb <= 0 or mc < 0:
        return Relative(None, None, None, None, "insufficient data", confidence, counts)
    if mc == 0:
        return Relative(-100.0, None, None, None, "slower" if higher_is_better else "faster", confidence, counts)
    ratio = mc / mb
    pct = 100 * (ratio - 1)
    log_ratio = math.log(ratio)
    better = 1 if higher_is_better else -1
    if nc < 2 or nb < 2:
        return Relative(pct, None, None, None, "too few repetitions", confidence, counts)
    vc = statistics.variance(candidate) / (mc * mc)
    vb = statistics.variance(baseline) / (mb * mb)
    se2 = vc / nc + vb / nb
    if se2 == 0:
        sign = (ratio > 1) - (ratio < 1)
        verdict: Verdict = ("no significant difference" if sign == 0 else
                            "faster" if sign == better else "slower")
        return Relative(pct, pct, pct, None, verdict, confidence, counts)
    df = se2 ** 2 / ((vc / nc) ** 2 / (nc - 1) + (vb / nb) ** 2 / (nb - 1))
    half = t_quantile(0.5 + confidence / 2, max(1.0, df)) * math.sqrt(se2)
    low, high = 100 * (math.exp(log_ratio - half) - 1), 100 * (math.exp(log_ratio + half) - 1)
    needed = None
    if low > 0:
        verdict = "faster" if higher_is_better else "slower"
    elif high < 0:
        verdict = "slower" if higher_is_better else "faster"
    else:
        needed = repetitions_needed(log_ratio, vc, vb, confidence)
        verdict = "too few repetitions" if min(nc, nb) < MIN_REPETITIONS else "no significant difference"
    return Relative(pct, low, high, df, verdict, confidence, counts, needed)


def repetitions_needed(log_ratio: float, cv2_candidate: float, cv2_baseline: float,
                       confidence: float = CONFIDENCE) -> int | None:
    """The smallest n (repetitions per target, at least MIN_REPETITIONS) at which the Welch interval
    of a log ratio ``log_ratio`` with squared CVs ``cv2_candidate``/``cv2_baseline`` (the spread
    seen so far) excludes 0: t(df(n)) * sqrt((cv2_c + cv2_b) / n) < |log_ratio|, df(n) =
    (n - 1)(cv2_c + cv2_b)^2 / (cv2_c^2 + cv2_b^2). None when the difference is 0 or it would take
    more than MAX_REPETITIONS_ADVISED. An estimate: the next repetitions have their own spread."""
    total = cv2_candidate + cv2_baseline
    if log_ratio == 0 or total <= 0:
        return None
    for n in range(MIN_REPETITIONS, MAX_REPETITIONS_ADVISED + 1):
        df = (n - 1) * total ** 2 / (cv2_candidate ** 2 + cv2_baseline ** 2)
        if t_quantile(0.5 + confidence / 2, df) * math.sqrt(total / n) < abs(log_ratio):
            return n
    return None
