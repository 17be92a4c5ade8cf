"""Aggregation across seconds and repetitions: the figures users defend in front of stakeholders.

Pure Python and the standard library only (Lambdas import this module). Conventions:

- A **step** is one thread count of one repetition of one target. Its per-second samples of the
  ``measure`` phase give the per-step figures (warm-up never counts).
- Across **repetitions** (each on its own host where the kind allows) a mean-like figure (tps) is
  reported as mean, min, max and a Student-t confidence interval of the mean; a **percentile** is
  never averaged: it is reported as the median and the range of the per-repetition percentiles.
- A percentile of a series uses linear interpolation between closest ranks (Hyndman & Fan type 7,
  the same as DuckDB's ``quantile_cont``), so SQL and Python give the same numbers.
- Relative differences compare target means with a Welch interval on the log of the ratio of means
  (delta method), which takes the baseline's own uncertainty into account.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Literal, Protocol

CONFIDENCE = 0.95
Verdict = Literal["faster", "slower", "no significant difference", "insufficient data"]


def comparison_table(summaries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per target x threads over the measure steps' summaries.

    - ``tps_mean``/``tps_min``/``tps_max``: mean, min and max across repetitions of sysbench's own
      tps for the whole step;
    - ``tps_ci_low``/``tps_ci_high``: 95 % Student-t confidence interval of that mean (None below two
      repetitions);
    - ``latency_pct_ms_median``/``_min``/``_max``: median and range across repetitions of sysbench's
      step percentile (``latency_pct``, e.g. 95);
    - ``tps_cv_mean``: mean across repetitions of each step's CV of per-second tps (jitter);
    - ``steal_mean_pct``: mean across repetitions of each step's mean per-second CPU steal;
    - ``samples``: per-second samples of all repetitions together.
    """
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for s in summaries:
        if s["phase"] == "measure":
            groups[(s["target_id"], int(s["threads"]))].append(s)
    rows = []
    for (target_id, threads), items in sorted(groups.items()):
        tps = [float(s["tps"]) for s in items]
        lat = [float(s["latency_pct_ms"]) for s in items if s.get("latency_pct_ms") is not None]
        steal = [float(s["steal_mean_pct"]) for s in items if s.get("steal_mean_pct") is not None]
        cvs = [float(s["tps_cv"]) for s in items if s.get("tps_cv") is not None]
        ci = mean_ci(tps)
        rows.append({
            "target_id": target_id, "threads": threads, "repetitions": len(items),
            "tps_mean": statistics.fmean(tps), "tps_min": min(tps), "tps_max": max(tps),
            "tps_ci_low": ci[0] if ci else None, "tps_ci_high": ci[1] if ci else None,
            "latency_pct": items[0].get("latency_pct"),
            "latency_pct_ms_median": statistics.median(lat) if lat else None,
            "latency_pct_ms_min": min(lat) if lat else None,
            "latency_pct_ms_max": max(lat) if lat else None,
            "tps_cv_mean": statistics.fmean(cvs) if cvs else None,
            "steal_mean_pct": statistics.fmean(steal) if steal else None,
            "samples": sum(int(s.get("samples") or 0) for s in items),
        })
    return rows


# ---- Student's t ----------------------------------------------------------------------------------
# No scipy. For an integer number of degrees of freedom nu, the two-sided mass P(|T| <= t) of
# Student's t has a closed form as a finite trigonometric series (Abramowitz & Stegun 26.7.3/26.7.4,
# theta = atan(t / sqrt(nu))); for a non-integer nu (Welch-Satterthwaite) it is 1 - I_x(nu/2, 1/2)
# with x = cos^2 theta, the regularized incomplete beta function evaluated by its continued fraction
# (DLMF 8.17.22, modified Lentz). Either is monotone in theta, so the quantile is found by bisection
# on theta to ~1e-12. Above _T_SERIES_MAX_DF the Cornish-Fisher expansion of t around the normal
# quantile (A&S 26.7.5, four terms) is used: its error there is below 1e-7.
_T_SERIES_MAX_DF = 200


def _t_two_sided_mass(theta: float, nu: int) -> float:
    """P(|T| <= sqrt(nu) * tan(theta)) for Student's t with ``nu`` (integer >= 1) degrees of freedom."""
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    total, term = 1.0, 1.0
    if nu % 2 == 0:
        for k in range(1, nu // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if nu == 1:
        return 2 * theta / math.pi
    for k in range(1, (nu - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + s * c * total)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (DLMF 8.17.22), by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1 and a, b > 0."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (a * math.log(x) + b * math.log1p(-x)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1 - math.exp(log_front) * _betacf(b, a, 1 - x) / b


@lru_cache(maxsize=4096)
def _t_quantile_cached(p: float, nu: float) -> float:
    if p == 0.5:
        return 0.0
    mass = abs(2 * p - 1)
    if nu == int(nu):
        def mass_at(theta: float) -> float:
            return _t_two_sided_mass(theta, int(nu))
    else:
        def mass_at(theta: float) -> float:
            return 1 - regularized_beta(math.cos(theta) ** 2, nu / 2, 0.5)
    if nu > _T_SERIES_MAX_DF:
        z = statistics.NormalDist().inv_cdf(0.5 + mass / 2)
        g1 = (z ** 3 + z) / 4
        g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
        g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
        t = z + g1 / nu + g2 / nu ** 2 + g3 / nu ** 3
    else:
        lo, hi = 0.0, math.pi / 2
        for _ in range(64):
            mid = (lo + hi) / 2
            if mass_at(mid) < mass:
                lo = mid
            else:
                hi = mid
        t = math.sqrt(nu) * math.tan((lo + hi) / 2)
    return t if p > 0.5 else -t


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (df >= 1, may be
    non-integer). E.g. ``t_quantile(0.975, 4)`` = 2.7764 (two-sided 95 %). See the comment above for
    the method and its accuracy."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if not df >= 1 or math.isnan(df):
        raise ValueError(f"df must be >= 1, not {df}")
    return _t_quantile_cached(p, float(df))


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


def mean_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Student-t confidence interval of the mean of ``values`` (independent repetitions):
    mean -/+ t(1 - alpha/2, n - 1) * s / sqrt(n). None below two values."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    half = t_quantile(0.5 + confidence / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean - half, mean + half


def step_stats(tps: Sequence[float], latency_ms: Sequence[float],
               steal_pct: Sequence[float | None] = ()) -> dict[str, float | int | None]:
    """Figures of one step from its measure-phase per-second samples:

    - ``seconds``: number of per-second samples;
    - ``tps_mean``/``tps_median``/``tps_stdev``/``tps_min``/``tps_max``: of per-second tps;
    - ``tps_cv``: jitter, stdev / mean of per-second tps;
    - ``latency_series_p50_ms``/``_p95_ms``/``_p99_ms``: the 50th/95th/99th percentile *across seconds*
      of the per-second latency (each second's value is sysbench's ``latency_pct`` percentile of that
      second's events) -- how bad the worst seconds were, not a percentile of all events;
    - ``latency_series_cv``: stdev / mean of the per-second latency (latency jitter);
    - ``steal_mean_pct``/``steal_max_pct``: mean and max of per-second CPU steal (None if unmeasured).
    """
    steal = [float(s) for s in steal_pct if s is not None]
    n = len(tps)
    return {
        "seconds": n,
        "tps_mean": statistics.fmean(tps) if tps else None,
        "tps_median": statistics.median(tps) if tps else None,
        "tps_stdev": statistics.stdev(tps) if n > 1 else None,
        "tps_min": min(tps) if tps else None,
        "tps_max": max(tps) if tps else None,
        "tps_cv": cv(tps),
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
    """A percentile across repetitions, never averaged: ``median``, ``min`` and ``max`` of the
    per-repetition percentiles, ``n`` and the per-repetition ``values``."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "n": 0, "values": []}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs), "values": xs}


@dataclass(frozen=True)
class Relative:
    """Relative difference of a candidate's mean to a baseline's mean, in percent:
    ``pct`` = 100 * (mean(candidate) / mean(baseline) - 1), with a ``confidence`` interval
    [``ci_low_pct``, ``ci_high_pct``] from Welch's approach on the log of the ratio of means
    (delta method: se^2 = s_c^2/(n_c m_c^2) + s_b^2/(n_b m_b^2), Welch-Satterthwaite degrees of
    freedom ``df``), back-transformed, so it is asymmetric. ``verdict``: ``faster`` when the whole
    interval says better, ``slower`` when it says worse, ``no significant difference`` when it
    contains 0, ``insufficient data`` below two repetitions on either side."""

    pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    df: float | None
    verdict: Verdict
    confidence: float = CONFIDENCE


def relative_difference(candidate: Sequence[float], baseline: Sequence[float],
                        confidence: float = CONFIDENCE, higher_is_better: bool = True) -> Relative:
    """See :class:`Relative`. ``higher_is_better`` is True for throughput, False for latency."""
    if not candidate or not baseline:
        return Relative(None, None, None, None, "insufficient data", confidence)
    mc, mb = statistics.fmean(candidate), statistics.fmean(baseline)
    if mc <= 0 or mb <= 0:
        return Relative(None, None, None, None, "insufficient data", confidence)
    ratio = mc / mb
    pct = 100 * (ratio - 1)
    nc, nb = len(candidate), len(baseline)
    if nc < 2 or nb < 2:
        return Relative(pct, None, None, None, "insufficient data", confidence)
    vc = statistics.variance(candidate) / (nc * mc * mc)
    vb = statistics.variance(baseline) / (nb * mb * mb)
    se2 = vc + vb
    better = 1 if higher_is_better else -1
    if se2 == 0:
        sign = (ratio > 1) - (ratio < 1)
        verdict: Verdict = ("no significant difference" if sign == 0 else
                            "faster" if sign == better else "slower")
        return Relative(pct, pct, pct, None, verdict, confidence)
    df = se2 ** 2 / (vc ** 2 / (nc - 1) + vb ** 2 / (nb - 1))
    half = t_quantile(0.5 + confidence / 2, max(1.0, df)) * math.sqrt(se2)
    log_ratio = math.log(ratio)
    low, high = 100 * (math.exp(log_ratio - half) - 1), 100 * (math.exp(log_ratio + half) - 1)
    if low > 0:
        verdict = "faster" if higher_is_better else "slower"
    elif high < 0:
        verdict = "slower" if higher_is_better else "faster"
    else:
        verdict = "no significant difference"
    return Relative(pct, low, high, df, verdict, confidence)


# ---- cost -----------------------------------------------------------------------------------------

def cost_per_1000_tps(price_per_hour: float | None, tps: float | None) -> float | None:
    """USD per hour for each 1000 transactions per second sustained: price_per_hour / (tps / 1000).
    E.g. $0.192/h at 2400 tps -> $0.08 per hour per 1000 TPS. None when unpriced or tps <= 0."""
    if price_per_hour is None or tps is None or tps <= 0:
        return None
    return price_per_hour * 1000 / tps


def transactions_per_usd(price_per_hour: float | None, tps: float | None) -> float | None:
    """Transactions one US dollar buys at this throughput: tps * 3600 / price_per_hour.
    None when unpriced, free (price 0) or tps is unknown."""
    if not price_per_hour or tps is None:
        return None
    return tps * 3600 / price_per_hour


# ---- speedup by size ------------------------------------------------------------------------------

def speedup_table(targets: Sequence[Mapping[str, Any]],
                  tps_by_target: Mapping[str, Mapping[int, float]]) -> list[dict[str, Any]]:
    """Speedup of throughput with size, per group of targets that differ only in size.

    ``targets``: mappings with ``target_id``, ``group`` (family/config key; None = not comparable) and
    ``size`` (vCPUs or CPUs; None = unknown). ``tps_by_target``: mean tps by threads per target.
    For each group with at least two sizes: rows sorted by size, each with ``peak_tps`` (the highest
    mean tps over the thread sweep), ``speedup`` = peak_tps / the smallest size's peak_tps, and
    ``by_threads``: the same ratio at each thread count both targets ran. The smallest size is 1.0.
    """
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in targets:
        if t.get("group") and t.get("size") and tps_by_target.get(t["target_id"]):
            groups[str(t["group"])].append(t)
    out = []
    for group, members in sorted(groups.items()):
        if len({m["size"] for m in members}) < 2:
            continue
        members = sorted(members, key=lambda m: (float(m["size"]), m["target_id"]))
        base = tps_by_target[members[0]["target_id"]]
        base_peak = max(base.values())
        rows = []
        for m in members:
            mine = tps_by_target[m["target_id"]]
            peak = max(mine.values())
            rows.append({
                "target_id": m["target_id"], "size": m["size"], "peak_tps": peak,
                "peak_threads": max(mine, key=lambda k: mine[k]),
                "speedup": peak / base_peak if base_peak > 0 else None,
                "by_threads": {str(th): mine[th] / base[th] for th in sorted(mine)
                               if th in base and base[th] > 0},
            })
        out.append({"group": group, "baseline_target": members[0]["target_id"], "rows": rows})
    return out


# ---- a whole run ----------------------------------------------------------------------------------

class QueryStore(Protocol):
    """What :func:`run_comparison` needs of a store (``benchfleet.local.store.DuckDBStore``)."""

    def run(self, run_id: str) -> dict[str, Any]: ...
    def targets(self, run_id: str) -> list[dict[str, Any]]: ...
    def summaries(self, run_id: str) -> list[dict[str, Any]]: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...


# Per-step figures of step_stats(), computed by the store (DuckDB) so a million samples never travel
# to Python. quantile_cont is type 7, the same as percentile() above.
STEP_STATS_SQL = """
SELECT target_id, repetition, step, any_value(threads) AS threads, count(*) AS seconds,
       avg(tps) AS tps_mean, median(tps) AS tps_median, stddev_samp(tps) AS tps_stdev,
       min(tps) AS tps_min, max(tps) AS tps_max,
       CASE WHEN count(*) > 1 AND avg(tps) <> 0 THEN stddev_samp(tps) / avg(tps) END AS tps_cv,
       quantile_cont(latency_ms, 0.50) AS latency_series_p50_ms,
       quantile_cont(latency_ms, 0.95) AS latency_series_p95_ms,
       quantile_cont(latency_ms, 0.99) AS latency_series_p99_ms,
       CASE WHEN count(latency_ms) > 1 AND avg(latency_ms) <> 0
            THEN stddev_samp(latency_ms) / avg(latency_ms) END AS latency_series_cv,
       avg(cpu_steal_pct) AS steal_mean_pct, max(cpu_steal_pct) AS steal_max_pct,
       avg(errors_per_s) AS errors_per_s_mean, any_value(latency_pct) AS latency_pct
FROM samples WHERE run_id = ? AND phase = 'measure'
GROUP BY target_id, repetition, step
ORDER BY target_id, threads, repetition
"""


def step_stats_from_samples(samples: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of STEP_STATS_SQL computed in Python from sample rows (for stores without SQL)."""
    groups: dict[tuple[str, int, str], list[Mapping[str, Any]]] = defaultdict(list)
    for s in samples:
        if s.get("phase") == "measure":
            groups[(s["target_id"], int(s["repetition"]), s["step"])].append(s)
    out = []
    for (target_id, repetition, step), rows in groups.items():
        figures = step_stats([float(r["tps"]) for r in rows],
                             [float(r["latency_ms"]) for r in rows if r.get("latency_ms") is not None],
                             [r.get("cpu_steal_pct") for r in rows])
        errors = [float(r["errors_per_s"]) for r in rows if r.get("errors_per_s") is not None]
        out.append({"target_id": target_id, "repetition": repetition, "step": step,
                    "threads": int(rows[0]["threads"]), **figures,
                    "errors_per_s_mean": statistics.fmean(errors) if errors else None,
                    "latency_pct": rows[0].get("latency_pct")})
    return sorted(out, key=lambda r: (r["target_id"], r["threads"], r["repetition"]))


def run_comparison(store: QueryStore, run_id: str, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The full comparison of a run as a JSON-serialisable dict (``benchfleet results --format json``,
    the HTML report, the API). Per-step figures come from the store's SQL (STEP_STATS_SQL)."""
    run = store.run(run_id)
    run_id = run["run_id"]
    return comparison(run, store.targets(run_id), store.summaries(run_id),
                      store.query(STEP_STATS_SQL, [run_id]), confidence, price_of=spec_target_price)


def spec_target_price(spec_target: Mapping[str, Any]) -> float | None:
    """$/hour of a target as the spec wrote it, from the price tables (for runs whose targets rows
    carry no price_per_hour). None when the target does not validate here or is unpriced."""
    from pydantic import TypeAdapter, ValidationError

    from benchfleet import pricing
    from benchfleet.spec import Target

    try:
        target = TypeAdapter(Target).validate_python(dict(spec_target))
        return pricing.price_per_hour(target)
    except (ValidationError, OSError, ValueError):
        return None


def comparison(run: Mapping[str, Any], targets: Sequence[Mapping[str, Any]],
               summaries: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]],
               confidence: float = CONFIDENCE,
               size_of: Callable[[Mapping[str, Any]], tuple[str | None, float | None]] | None = None,
               price_of: Callable[[Mapping[str, Any]], float | None] | None = None,
               ) -> dict[str, Any]:
    """The comparison from rows: the run, its ``targets`` rows (one per target x repetition, with the
    environment fingerprint and price_per_hour), its step ``summaries`` and per-step figures
    (``steps``: rows of STEP_STATS_SQL or :func:`step_stats_from_samples`). ``price_of(spec target)``
    prices targets whose rows carry no price_per_hour.

    Keys: ``run``; ``confidence``; ``baseline`` (spec's ``baseline`` or the first target);
    ``targets`` (one per target: kind, type, price, group and size for speedup, fingerprints,
    ``peak``); ``rows`` (one per target x threads, see :func:`_row`); ``speedup``
    (:func:`speedup_table`); ``notes`` (what the figures are).
    """
    spec = run.get("spec") or {}
    if isinstance(spec, str):
        import json
        spec = json.loads(spec)
    size_of = size_of or target_group_and_size
    target_meta = _targets(spec, targets, size_of)
    if price_of is not None:
        spec_targets = {t.get("id"): t for t in (spec.get("targets") or []) if isinstance(t, dict)}
        for meta in target_meta.values():
            if meta.get("price_per_hour") is None and meta["target_id"] in spec_targets:
                meta["price_per_hour"] = price_of(spec_targets[meta["target_id"]])

    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for s in summaries:
        if s.get("phase") == "measure":
            entry = by_key.setdefault((s["target_id"], int(s["threads"])), {"summaries": [], "steps": []})
            entry["summaries"].append(s)
    for st in steps:
        entry = by_key.setdefault((st["target_id"], int(st["threads"])), {"summaries": [], "steps": []})
        entry["steps"].append(st)
    for target_id, _ in by_key:
        if target_id not in target_meta:
            target_meta[target_id] = {"target_id": target_id, "kind": None, "price_per_hour": None,
                                      "group": None, "size": None, "fingerprints": []}

    order = {t: i for i, t in enumerate(target_meta)}
    baseline = spec.get("baseline") if isinstance(spec, dict) else None
    if baseline not in target_meta:
        baseline = next(iter(target_meta), None)

    rows: list[dict[str, Any]] = []
    tps_values: dict[tuple[str, int], list[float]] = {}
    for (target_id, threads), entry in sorted(by_key.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        row = _row(target_id, threads, entry["summaries"], entry["steps"],
                   target_meta[target_id].get("price_per_hour"), confidence)
        tps_values[(target_id, threads)] = row["tps"]["values"]
        rows.append(row)
    for row in rows:
        base = tps_values.get((baseline, row["threads"])) if baseline else None
        if row["target_id"] == baseline or base is None:
            row["relative"] = None
            continue
        rel = relative_difference(row["tps"]["values"], base, confidence)
        row["relative"] = {"vs": baseline, **asdict(rel)}

    tps_by_target: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        if row["tps"]["mean"] is not None:
            tps_by_target[row["target_id"]][row["threads"]] = row["tps"]["mean"]
    for meta in target_meta.values():
        mine = tps_by_target.get(meta["target_id"])
        if mine:
            peak_threads = max(mine, key=lambda k: mine[k])
            price = meta.get("price_per_hour")
            meta["peak"] = {"threads": peak_threads, "tps_mean": mine[peak_threads],
                            "cost_per_1000_tps": cost_per_1000_tps(price, mine[peak_threads]),
                            "transactions_per_usd": transactions_per_usd(price, mine[peak_threads])}
        else:
            meta["peak"] = None

    result: dict[str, Any] = _clean({
        "run": {k: run.get(k) for k in ("run_id", "name", "status", "mode", "started_at", "ended_at",
                                        "estimated_cost_usd", "actual_cost_usd", "message")},
        "workload": spec.get("workload") if isinstance(spec, dict) else None,
        "repetitions": spec.get("repetitions") if isinstance(spec, dict) else None,
        "confidence": confidence,
        "baseline": baseline,
        "targets": list(target_meta.values()),
        "rows": rows,
        "speedup": speedup_table(list(target_meta.values()), tps_by_target),
        "notes": NOTES,
    })
    return result


NOTES = {
    "tps": "sysbench's own tps of each measure step (exact over the step), across repetitions: mean, "
           "min, max and a Student-t confidence interval of the mean",
    "latency_step_pct_ms": "sysbench's latency percentile (latency_pct) over each whole step; across "
                           "repetitions the median and range, never a mean",
    "latency_series_p95_ms": "95th percentile across the step's seconds of the per-second latency "
                             "percentile (worst seconds); across repetitions median and range",
    "tps_cv": "jitter: stdev / mean of per-second tps within a step (warm-up excluded)",
    "relative": "100 * (mean tps / baseline mean tps - 1) at the same threads; Welch interval on the "
                "log ratio; verdict from whether the interval contains 0",
    "cost_per_1000_tps": "price_per_hour (instance + client + storage, on-demand list) / (tps / 1000): "
                         "USD per hour for each 1000 TPS",
    "speedup": "peak mean tps over the thread sweep / that of the smallest size of the same family "
               "and configuration",
}


def _row(target_id: str, threads: int, summaries: Sequence[Mapping[str, Any]],
         steps: Sequence[Mapping[str, Any]], price: float | None, confidence: float) -> dict[str, Any]:
    """One target x threads. ``tps``: :func:`mean_spread` of per-repetition step tps (sysbench's
    summary; the mean of per-second tps where a step has no summary). ``tps_per_second_median``:
    :func:`mean_spread` of each step's median per-second tps. ``latency_step_pct_ms``,
    ``latency_series_p95_ms``, ``latency_series_p99_ms``: :func:`percentile_spread`. ``jitter``:
    ``tps_cv_mean``/``tps_cv_max`` (mean / max across repetitions of each step's CV of per-second tps),
    ``latency_series_cv_mean``. ``steal_mean_pct``: mean across repetitions of each step's mean
    per-second steal; ``steal_max_pct``: the highest single second. ``cost_per_1000_tps`` and
    ``transactions_per_usd`` at the mean tps. ``steps``: the per-repetition figures."""
    summary_by_rep = {int(s["repetition"]): s for s in summaries}
    step_by_rep = {int(s["repetition"]): s for s in steps}
    reps = sorted(set(summary_by_rep) | set(step_by_rep))
    tps: list[float] = []
    for rep in reps:
        if rep in summary_by_rep and summary_by_rep[rep].get("tps") is not None:
            tps.append(float(summary_by_rep[rep]["tps"]))
        elif rep in step_by_rep and step_by_rep[rep].get("tps_mean") is not None:
            tps.append(float(step_by_rep[rep]["tps_mean"]))

    def col(rows: Mapping[int, Mapping[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in rows.values() if r.get(key) is not None]

    cvs = col(step_by_rep, "tps_cv")
    lat_cvs = col(step_by_rep, "latency_series_cv")
    steal_means = col(step_by_rep, "steal_mean_pct")
    steal_max = col(step_by_rep, "steal_max_pct")
    errors = col(step_by_rep, "errors_per_s_mean")
    pct = next((s.get("latency_pct") for s in [*summaries, *steps] if s.get("latency_pct")), None)
    spread = mean_spread(tps, confidence)
    mean = spread["mean"]
    return {
        "target_id": target_id, "threads": threads, "repetitions": len(reps),
        "tps": spread,
        "tps_per_second_median": mean_spread(col(step_by_rep, "tps_median"), confidence),
        "latency_pct": pct,
        "latency_step_pct_ms": percentile_spread([s.get("latency_pct_ms") for s in summary_by_rep.values()]),
        "latency_avg_ms": mean_spread(col(summary_by_rep, "latency_avg_ms"), confidence),
        "latency_series_p95_ms": percentile_spread([s.get("latency_series_p95_ms")
                                                    for s in step_by_rep.values()]),
        "latency_series_p99_ms": percentile_spread([s.get("latency_series_p99_ms")
                                                    for s in step_by_rep.values()]),
        "jitter": {"tps_cv_mean": statistics.fmean(cvs) if cvs else None,
                   "tps_cv_max": max(cvs) if cvs else None,
                   "latency_series_cv_mean": statistics.fmean(lat_cvs) if lat_cvs else None},
        "steal_mean_pct": statistics.fmean(steal_means) if steal_means else None,
        "steal_max_pct": max(steal_max) if steal_max else None,
        "errors_per_s_mean": statistics.fmean(errors) if errors else None,
        "seconds": int(sum(col(step_by_rep, "seconds"))),
        "price_per_hour": price,
        "cost_per_1000_tps": cost_per_1000_tps(price, mean),
        "transactions_per_usd": transactions_per_usd(price, mean),
        "steps": [{"repetition": rep, **{k: v for k, v in step_by_rep.get(rep, {}).items()
                                          if k not in ("target_id", "repetition", "threads")},
                   "summary_tps": summary_by_rep.get(rep, {}).get("tps"),
                   "summary_latency_pct_ms": summary_by_rep.get(rep, {}).get("latency_pct_ms")}
                  for rep in reps],
    }


# Sizes for the speedup table: the vCPU count of AWS size names for the general families
# (large = 2, xlarge = 4, Nxlarge = 4N). Burstable t* sizes are not in a linear ladder; they are
# left to the fingerprint's vcpus.
def vcpus_from_size(instance_type: str | None) -> float | None:
    """vCPUs implied by an EC2/RDS size name (``m6i.2xlarge`` -> 8, ``db.r6g.large`` -> 2); None
    when the name says nothing reliable (t*, metal, micro...)."""
    if not instance_type:
        return None
    parts = instance_type.split(".")
    family, size = parts[-2], parts[-1]
    if family.startswith("t"):
        return None
    if size == "medium":
        return 1
    if size == "large":
        return 2
    if size == "xlarge":
        return 4
    if size.endswith("xlarge") and size[:-6].isdigit():
        return 4 * int(size[:-6])
    return None


def _cpus_count(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return len(value) or None
    text = str(value).strip("[] ")
    return len([p for p in text.split(",") if p.strip()]) or None


def target_group_and_size(meta: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """The family/configuration group and the size of a target, for the speedup table.

    EC2: ``ec2:<family>:<engine>:<mysql_config>:<storage type>``, size = vCPUs (fingerprint, else the
    size name). RDS/Aurora: ``<kind>:<db family>:<engine>:<mysql_config>``. Local:
    ``local:<engine>:<mysql_config>``, size = number of pinned CPUs (else usable CPUs)."""
    kind = meta.get("kind")
    engine, config = meta.get("engine") or "", meta.get("mysql_config") or ""
    if kind == "local":
        size = _cpus_count(meta.get("cpus")) or meta.get("cpus_usable") or meta.get("vcpus")
        return f"local:{engine}:{config}", float(size) if size else None
    type_ = meta.get("instance_type") or meta.get("instance_class")
    if not type_ or kind not in ("ec2", "rds", "aurora"):
        return None, None
    family = type_.rsplit(".", 1)[0]
    size = meta.get("vcpus") or vcpus_from_size(type_)
    storage = meta.get("storage")
    storage_type = storage.get("type") if isinstance(storage, Mapping) else (
        _storage_type(storage) if kind == "ec2" else "")
    return f"{kind}:{family}:{engine}:{config}:{storage_type or ''}".rstrip(":"), (
        float(size) if size else None)


def _storage_type(value: Any) -> str:
    if not value:
        return ""
    text = str(value)
    if text.startswith("{"):
        import json
        try:
            data = json.loads(text)
            return str(data.get("type") or "") if isinstance(data, dict) else ""
        except ValueError:
            return ""
    return text.split(":")[0]


_META_KEYS = ("kind", "instance_type", "instance_class", "engine", "mysql_config", "region", "storage",
              "cpus", "price_per_hour")
_FINGERPRINT_KEYS = ("repetition", "cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os",
                     "sysbench_version", "engine_version", "config_hash", "recorded_at")


def _targets(spec: Any, rows: Sequence[Mapping[str, Any]],
             size_of: Callable[[Mapping[str, Any]], tuple[str | None, float | None]],
             ) -> dict[str, dict[str, Any]]:
    """One entry per target in spec order, merged from the spec and the targets rows."""
    out: dict[str, dict[str, Any]] = {}
    spec_targets = spec.get("targets") if isinstance(spec, dict) else None
    for t in spec_targets or []:
        if isinstance(t, dict) and t.get("id"):
            out[t["id"]] = {"target_id": t["id"], **{k: t.get(k) for k in _META_KEYS}, "fingerprints": []}
    for r in rows:
        meta = out.setdefault(r["target_id"], {"target_id": r["target_id"], **{k: None for k in _META_KEYS},
                                               "fingerprints": []})
        for k in _META_KEYS:
            if r.get(k) is not None:
                meta[k] = r[k]
        meta["fingerprints"].append({k: r.get(k) for k in _FINGERPRINT_KEYS})
    for meta in out.values():
        vcpus = [f["vcpus"] for f in meta["fingerprints"] if f.get("vcpus")]
        usable = [f["cpus_usable"] for f in meta["fingerprints"] if f.get("cpus_usable")]
        group, size = size_of({**meta, "vcpus": max(vcpus) if vcpus else None,
                               "cpus_usable": max(usable) if usable else None})
        meta["group"], meta["size"] = group, size
    return out


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None, datetimes -> ISO 8601, tuples -> lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, int | str | bool) or value is None:
        return value
    if hasattr(value, "__float__"):  # Decimal and friends
        return _clean(float(value))
    return str(value)
