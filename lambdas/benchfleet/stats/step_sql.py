"""Per-step figures of :func:`benchfleet.stats.step_stats`, computed by the store (DuckDB) so that
millions of samples never travel to Python, in memory bounded whatever the size of the run.

Two passes. The first is one scan of streaming aggregates (counts, sums, extremes): its state is a
few numbers per step. The second needs what the first found: the spread of per-second tps around
the step's *weighted* mean (interval_s weights, see NOTES["per_second"]) and the exact percentiles,
whose DuckDB state holds every value of its group and cannot spill to disk. So it runs over batches
of steps holding at most ``batch_samples`` samples together: a 200-target 24 h soak (17M samples)
then needs a few hundred MB instead of GBs, and the numbers are those of one query over all
steps (tests/unit/test_stats.py keeps that query as the reference and compares on the real fixture).

quantile_cont is type 7, the same as :func:`benchfleet.stats.percentile`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

# Samples whose values the percentile states of one batch hold (8 bytes each, two aggregates).
BATCH_SAMPLES = 4_000_000

# Rates are weighted by the seconds each sample covers (interval_s; 1 for rows stored before it
# existed): under load sysbench reports late and one sample can stand for three seconds. Every figure is
# over the measured seconds (phase 'measure'); the step's ramp (phase 'ramp', its first report) gives
# only its length and transactions, which the step's tps leaves out (stats.run).
# The scan groups by phase too and a few rows per step are then combined: the same figures as FILTER
# clauses on one grouping, at 40% of their CPU (a filter per aggregate and row; the 17M-sample soak's
# report spent 1.9 CPU seconds here, now 0.8: tests/perf/report_before_after.py).
_STREAMING_SQL = """
WITH p AS (
    SELECT target_id, repetition, step, phase, any_value(threads) AS threads, any_value(variant) AS variant,
           any_value(block) AS block, count(*) AS n, sum(coalesce(interval_s, 1.0)) AS covered_s,
           sum(coalesce(interval_s, 1.0) * tps) AS transactions, min(tps) AS tps_min, max(tps) AS tps_max,
           CASE WHEN count(latency_ms) > 1 AND avg(latency_ms) <> 0
                THEN stddev_samp(latency_ms) / avg(latency_ms) END AS latency_series_cv,
           avg(cpu_steal_pct) AS steal_mean_pct, max(cpu_steal_pct) AS steal_max_pct,
           avg(errors_per_s) AS errors_per_s_mean, any_value(latency_pct) AS latency_pct,
           bool_and(arrived_s IS NOT NULL) AS intervals_measured,
           min(second) AS second_min, max(second) AS second_max, bool_and(second = floor(second)) AS seconds_whole
    FROM samples WHERE run_id = ? AND phase IN ('measure', 'ramp')
    GROUP BY target_id, repetition, step, phase)
SELECT target_id, repetition, step, any_value(threads) AS threads, any_value(variant) AS variant,
       any_value(block) AS block,
       coalesce(sum(n) FILTER (WHERE phase = 'measure'), 0) AS seconds,
       sum(covered_s) FILTER (WHERE phase = 'measure') AS covered_s,
       sum(transactions) FILTER (WHERE phase = 'measure')
           / nullif(sum(covered_s) FILTER (WHERE phase = 'measure'), 0) AS tps_mean,
       min(tps_min) FILTER (WHERE phase = 'measure') AS tps_min,
       max(tps_max) FILTER (WHERE phase = 'measure') AS tps_max,
       max(latency_series_cv) FILTER (WHERE phase = 'measure') AS latency_series_cv,
       max(steal_mean_pct) FILTER (WHERE phase = 'measure') AS steal_mean_pct,
       max(steal_max_pct) FILTER (WHERE phase = 'measure') AS steal_max_pct,
       max(errors_per_s_mean) FILTER (WHERE phase = 'measure') AS errors_per_s_mean,
       any_value(latency_pct) AS latency_pct,
       sum(covered_s) FILTER (WHERE phase = 'ramp') AS ramp_s,
       sum(transactions) FILTER (WHERE phase = 'ramp') AS ramp_transactions,
       bool_and(intervals_measured) AS intervals_measured,
       min(second_min) AS second_min, max(second_max) - min(second_min) AS second_span,
       bool_and(seconds_whole) AS seconds_whole
FROM p GROUP BY target_id, repetition, step
"""

# One batch of steps (parallel lists, zipped by unnest) with their weighted mean and weight total.
# tps_stdev has the same weights as the mean (frequency weights: sum w (x - m)^2 / (sum w - 1), the
# sample variance when every weight is 1), and tps_cv is tps_stdev / tps_mean. Two samples of one step
# with the same printed second (sysbench reported twice within one rounded second) are counted:
# {distinct} is the number of distinct seconds. sysbench prints whole seconds, so it is usually the bits
# set in a bitmap of the step's seconds (second - second_min, at most {span} apart: a constant of the
# batch), a few kB per step and half the CPU of count(DISTINCT), which hashes every second (the 17M-sample
# soak's report: 2.5 of its 4.3 CPU seconds here); a batch with a fractional second counts them exactly.
# The range on target_id lets DuckDB skip the row groups of other batches' targets.
_BATCH_SQL = """
WITH b AS (
    SELECT unnest(CAST(? AS VARCHAR[])) AS target_id, unnest(CAST(? AS INTEGER[])) AS repetition,
           unnest(CAST(? AS VARCHAR[])) AS step, unnest(CAST(? AS DOUBLE[])) AS wmean,
           unnest(CAST(? AS DOUBLE[])) AS wsum, unnest(CAST(? AS DOUBLE[])) AS second_min)
SELECT s.target_id, s.repetition, s.step, median(s.tps) FILTER (WHERE s.phase = 'measure') AS tps_median,
       CASE WHEN count(*) FILTER (WHERE s.phase = 'measure') > 1 AND any_value(b.wsum) > 1
            THEN sqrt(sum(coalesce(s.interval_s, 1.0) * (s.tps - b.wmean) ^ 2) FILTER (WHERE s.phase = 'measure')
                      / (any_value(b.wsum) - 1)) END AS tps_stdev,
       quantile_cont(s.latency_ms, [0.50, 0.95, 0.99]) FILTER (WHERE s.phase = 'measure') AS latency_series_ms,
       count(*) - {distinct} AS duplicate_timestamps
FROM samples s JOIN b USING (target_id, repetition, step)
WHERE s.run_id = ? AND s.target_id BETWEEN ? AND ? AND s.phase IN ('measure', 'ramp')
GROUP BY s.target_id, s.repetition, s.step
"""
_DISTINCT_BITS = "bit_count(bitstring_agg(CAST(s.second - b.second_min AS BIGINT), 0, {span}))"
_DISTINCT_HASHED = "count(DISTINCT s.second)"
# The bitmaps of one batch together at most this many bytes (a step of 30 days is 324 kB); above it, hashed.
BITMAP_BYTES = 64_000_000

# The keys of each step's row, in this order (as step_stats_from_samples gives them).
STEP_KEYS = ("target_id", "repetition", "step", "threads", "variant", "block", "seconds", "covered_s", "tps_mean",
             "tps_median", "tps_stdev", "tps_min", "tps_max", "tps_cv", "latency_series_p50_ms",
             "latency_series_p95_ms", "latency_series_p99_ms", "latency_series_cv", "steal_mean_pct", "steal_max_pct",
             "errors_per_s_mean", "latency_pct", "ramp_s", "ramp_transactions", "intervals_measured",
             "duplicate_timestamps")


class SQLStore(Protocol):
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...


def step_stats_in_store(store: SQLStore, run_id: str, batch_samples: int = BATCH_SAMPLES) -> list[dict[str, Any]]:
    """One row per measure step of ``run_id`` (keys STEP_KEYS), ordered by target, threads and
    repetition."""
    steps = {_key(r): r for r in store.query(_STREAMING_SQL, [run_id])}
    for batch in _batches(sorted(steps.values(), key=_key), batch_samples):
        params: list[Any] = [[r["target_id"] for r in batch], [r["repetition"] for r in batch],
                             [r["step"] for r in batch], [r["tps_mean"] for r in batch],
                             [r["covered_s"] for r in batch], [r["second_min"] for r in batch], run_id,
                             batch[0]["target_id"], batch[-1]["target_id"]]
        for row in store.query(_batch_sql(batch), params):
            p50, p95, p99 = row.pop("latency_series_ms") or (None, None, None)
            step = steps[_key(row)]
            mean, sd = step.get("tps_mean"), row.get("tps_stdev")
            step.update(row, latency_series_p50_ms=p50, latency_series_p95_ms=p95, latency_series_p99_ms=p99,
                        tps_cv=sd / mean if sd is not None and mean else None)
    rows = [{k: r.get(k) for k in STEP_KEYS} for r in steps.values()]
    return sorted(rows, key=lambda r: (r["target_id"], r["threads"] is None, r["threads"] or 0,
                                       r["repetition"], r["step"]))


def _batch_sql(batch: list[dict[str, Any]]) -> str:
    """The batch query, counting distinct seconds by bitmap where every second of the batch is whole."""
    span = int(max(r["second_span"] or 0 for r in batch))
    if all(r["seconds_whole"] for r in batch) and len(batch) * (span + 1) / 8 <= BITMAP_BYTES:
        return _BATCH_SQL.format(distinct=_DISTINCT_BITS.format(span=span))
    return _BATCH_SQL.format(distinct=_DISTINCT_HASHED)


def _key(row: Mapping[str, Any]) -> tuple[str, int, str]:
    return (row["target_id"], row["repetition"], row["step"])


def _batches(steps: list[dict[str, Any]], limit: int) -> Iterator[list[dict[str, Any]]]:
    """Consecutive steps holding at most ``limit`` samples together; a larger step is a batch alone."""
    batch: list[dict[str, Any]] = []
    held = 0
    for step in steps:
        if batch and held + step["seconds"] > limit:
            yield batch
            batch, held = [], 0
        batch.append(step)
        held += step["seconds"]
    if batch:
        yield batch
