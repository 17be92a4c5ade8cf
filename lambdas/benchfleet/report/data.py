"""What the report reads from the store beyond ``stats.run_comparison``: the per-second timeline,
aggregated in DuckDB so a million samples arrive as a few thousand points."""

from __future__ import annotations

import math
from typing import Any

from benchfleet.local.store import DuckDBStore

# Points per series of the per-second chart, and for all series together: beyond that the browser
# gains nothing a reader can see, and the file grows.
MAX_POINTS_PER_SERIES = 1200
MAX_POINTS_TOTAL = 60_000
MIN_POINTS_PER_SERIES = 150

_SPANS_SQL = """
SELECT target_id, repetition, epoch(max(time)) - epoch(min(time)) + 1 AS span_s, count(*) AS n
FROM samples WHERE run_id = ? AND phase IN ('warmup', 'measure')
GROUP BY target_id, repetition
"""

# Seconds since each target x repetition's first warm-up/measure sample, bucketed by ``width``
# seconds: mean, min and max tps of the bucket (an envelope, so no spike disappears), mean CPU steal
# and the thread count (the highest in the bucket, which is where a step boundary falls).
_TIMELINE_SQL = """
WITH firsts AS (
    SELECT target_id, repetition, min(time) AS t0 FROM samples
    WHERE run_id = ? AND phase IN ('warmup', 'measure') GROUP BY target_id, repetition)
SELECT s.target_id, s.repetition,
       CAST(floor((epoch(s.time) - epoch(f.t0)) / ?) AS BIGINT) AS bucket,
       avg(s.tps) AS tps, min(s.tps) AS tps_min, max(s.tps) AS tps_max,
       avg(s.cpu_steal_pct) AS steal, avg(s.cpu_iowait_pct) AS iowait, avg(s.qps) AS qps,
       max(s.threads) AS threads, count(*) AS n
FROM samples s JOIN firsts f USING (target_id, repetition)
WHERE s.run_id = ? AND s.phase IN ('warmup', 'measure')
GROUP BY ALL
ORDER BY s.target_id, s.repetition, bucket
"""


def timeline(store: DuckDBStore, run_id: str) -> dict[str, Any]:
    """The per-second series, downsampled: ``width_s`` (seconds per point; 1 = raw) and ``series``,
    one per target x repetition: ``{target_id, repetition, t, tps, tps_min, tps_max, steal, iowait,
    qps, threads}``
    with ``t`` the bucket start in seconds since the series' first sample."""
    spans = store.query(_SPANS_SQL, [run_id])
    if not spans:
        return {"width_s": 1, "series": []}
    per_series = max(MIN_POINTS_PER_SERIES, min(MAX_POINTS_PER_SERIES, MAX_POINTS_TOTAL // len(spans)))
    longest = max(float(s["span_s"]) for s in spans)
    width = max(1, math.ceil(longest / per_series))
    cursor = store.db.execute(_TIMELINE_SQL, [run_id, width, run_id])
    series: dict[tuple[str, int], dict[str, list[Any]]] = {}
    for target_id, repetition, bucket, tps, tps_min, tps_max, steal, iowait, qps, threads, _n in cursor.fetchall():
        s = series.setdefault((target_id, repetition), {k: [] for k in (
            "t", "tps", "tps_min", "tps_max", "steal", "iowait", "qps", "threads")})
        s["t"].append(bucket * width)
        s["tps"].append(_r(tps))
        s["tps_min"].append(_r(tps_min))
        s["tps_max"].append(_r(tps_max))
        s["steal"].append(_r(steal))
        s["iowait"].append(_r(iowait))
        s["qps"].append(_r(qps))
        s["threads"].append(threads)
    return {"width_s": width,
            "series": [{"target_id": t, "repetition": r, **values} for (t, r), values in series.items()]}


def _r(value: float | None) -> float | None:
    """Three significant decimals are plenty for a chart and keep the file small."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 3)


def fingerprint_values(comparison: dict[str, Any], target_id: str, key: str) -> str:
    """Distinct values of one fingerprint field over a target's repetitions ('a | b' when they
    differ: two repetitions on different CPU models is worth seeing)."""
    for t in comparison["targets"]:
        if t["target_id"] == target_id:
            values = []
            for f in t.get("fingerprints") or []:
                v = f.get(key)
                if v is not None and str(v) not in values:
                    values.append(str(v))
            return " | ".join(values)
    return ""
