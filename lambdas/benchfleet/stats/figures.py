"""Figures of one series and across repetitions: percentiles, CV, confidence intervals of a mean (verdicts
between targets: :mod:`benchfleet.stats.verdict`). Every docstring says exactly what a figure is."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchfleet.stats.tdist import t_quantile
from benchfleet.stats.verdict import CONFIDENCE

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


def weighted_stdev(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """Standard deviation of a rate over intervals of different lengths, with the weights of its
    :func:`weighted_mean` as frequency weights: sqrt(sum(w (x - m)^2) / (sum(w) - 1)), the sample
    standard deviation when every weight is 1 (an interval of w seconds counts as w seconds at its
    rate). None below two values or a weight total of 1 or less."""
    if len(values) < 2:
        return None
    mean = weighted_mean(values, weights)
    total = math.fsum(weights)
    if mean is None or math.isnan(mean) or total <= 1:
        return None
    return math.sqrt(math.fsum(w * (x - mean) ** 2 for x, w in zip(values, weights, strict=True)) / (total - 1))


def weighted_cv(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """CV of a rate over intervals of different lengths: :func:`weighted_stdev` / :func:`weighted_mean`
    (the same weights for both). None as for :func:`cv`."""
    sd = weighted_stdev(values, weights)
    mean = weighted_mean(values, weights) if sd is not None else None
    if sd is None or not mean:
        return None
    return sd / mean


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
    - ``tps_stdev``: with the same weights (:func:`weighted_stdev`); ``tps_cv``: jitter, tps_stdev /
      tps_mean (:func:`weighted_cv`);
    - ``tps_median``/``tps_min``/``tps_max``: of the reported per-second tps (unweighted);
    - ``latency_series_p50_ms``/``_p95_ms``/``_p99_ms``: the 50th/95th/99th percentile *across the
      step's seconds* of the per-second latency percentile (each second's value is sysbench's
      ``latency_pct`` percentile of that second's events): "the p95 of the per-second p95", how bad the
      worst seconds were, never a percentile of the step's transactions (that is sysbench's own
      ``latency_pct_ms`` of the whole step);
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
        "tps_stdev": weighted_stdev(tps, weights),
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


def percentile_of(rows: Iterable[Mapping[str, Any]], default: float = 95) -> str:
    """The latency percentile result rows report, as its label says it ('95', '99.9'; never '95.0')."""
    value = next((r["latency_pct"] for r in rows if r.get("latency_pct")), default)
    return f"{float(value):g}"
