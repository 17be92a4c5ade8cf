"""Aggregation across seconds and repetitions.

Every figure's docstring says exactly what it is. Percentiles are never averaged as if they were
means: across repetitions a latency percentile is reported as the median and the range of the
per-repetition percentiles.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any


def comparison_table(summaries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per target x threads over the measure steps' summaries.

    - ``tps_mean``/``tps_min``/``tps_max``: mean, min and max across repetitions of sysbench's own
      tps for the whole step;
    - ``latency_pct_ms_median``/``_min``/``_max``: median and range across repetitions of sysbench's
      step percentile (``latency_pct``, e.g. 95);
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
        rows.append({
            "target_id": target_id, "threads": threads, "repetitions": len(items),
            "tps_mean": statistics.fmean(tps), "tps_min": min(tps), "tps_max": max(tps),
            "latency_pct": items[0].get("latency_pct"),
            "latency_pct_ms_median": statistics.median(lat) if lat else None,
            "latency_pct_ms_min": min(lat) if lat else None,
            "latency_pct_ms_max": max(lat) if lat else None,
            "steal_mean_pct": statistics.fmean(steal) if steal else None,
            "samples": sum(int(s.get("samples") or 0) for s in items),
        })
    return rows
