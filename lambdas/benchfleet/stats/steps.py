"""One step's figures as the comparison reads them: its tps, its per-second accounting, its blocks.

``step_tps`` is the figure every verdict compares (sysbench's own count less the ramp's);
``per_second_accounting`` says which reports came, late or silenced; a step split into blocks of
alternating variants has its blocks merged back into one row per step (``merge_blocks``: sums,
extremes and time-weighted means, a pooled spread) and their tps kept apart for the paired verdicts
(``tps_by_block``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any


def tps_by_block(summaries: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]) -> dict[Any, float]:
    """(repetition, block) -> the tps of each block of a step split into blocks (:func:`step_tps`: its
    ramp left out, like every step's); empty otherwise."""
    step_of = {(int(s["repetition"]), int(s["block"])): s for s in steps if s.get("block") is not None}
    out: dict[Any, float] = {}
    for r in summaries:
        if r.get("block") is None:
            continue
        key = (int(r["repetition"]), int(r["block"]))
        figure = step_tps(r, step_of.get(key, {}))
        if figure is not None:
            out[key] = figure
    return out


# How the blocks of a step split into blocks make one row per repetition (merge_blocks): counts and
# lengths add up; extremes and percentiles take the block that says the most (a percentile of seconds
# or transactions cannot be rebuilt from the blocks' own, and the highest never understates); rates are
# weighted by what they are rates of.
_SUMMED = frozenset({"seconds", "samples", "samples_expected", "transactions", "queries", "reads", "writes", "other",
                     "ignored_errors", "reconnects", "events", "total_time_s", "covered_s", "ramp_s",
                     "ramp_transactions", "duplicate_timestamps", "missing_final"})
_LOWEST = frozenset({"latency_min_ms", "tps_min"})
_HIGHEST = frozenset({"latency_max_ms", "tps_max", "steal_max_pct", "latency_pct_ms", "latency_series_p50_ms",
                      "latency_series_p95_ms", "latency_series_p99_ms"})
# key -> the key of its weight: summary rates over each block's time, the latency mean over its events,
# per-second means over the seconds they cover (tps, as the step's own mean is) or count (steal, errors).
_WEIGHTED = {"tps": "total_time_s", "qps": "total_time_s", "errors_per_s": "total_time_s",
             "reconnects_per_s": "total_time_s", "latency_avg_ms": "events", "tps_mean": "covered_s",
             "steal_mean_pct": "seconds", "errors_per_s_mean": "seconds"}


def merge_blocks(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One row per repetition: the blocks of a step split into blocks together, so that the step's tps
    (:func:`step_tps`) is the blocks' transactions less their ramps over their time less their ramps,
    exactly as for a step in one piece. Rules by key: ``_SUMMED``, ``_LOWEST``, ``_HIGHEST``,
    ``_WEIGHTED``; ``missing_final`` counts the blocks whose final report sysbench silenced;
    ``tps_stdev`` is pooled exactly (the same interval-length weights as each block's, around the
    merged mean) and ``tps_cv`` is it over ``tps_mean``; ``intervals_measured`` holds when it holds for
    every block. Left as the mean of the blocks' (labelled in NOTES): ``tps_median`` and
    ``latency_series_cv``, which the blocks' figures cannot rebuild. Rows without blocks pass as they are."""
    whole = [r for r in rows if r.get("block") is None]
    parts: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("block") is not None:
            parts[int(r["repetition"])].append(r)
    for blocks in parts.values():
        merged: dict[str, Any] = dict(blocks[0])
        for key in blocks[0]:
            if key in ("repetition", "threads", "block"):
                continue
            values = [b.get(key) for b in blocks]
            if key == "intervals_measured" and all(v is not None for v in values):
                merged[key] = all(values)
                continue
            if key == "latency_percentiles_ms":
                # Percentiles of blocks cannot be combined into the step's: each is the highest of the
                # blocks' (an upper bound, as latency_pct_ms in _HIGHEST), none when a block has none.
                tables = [v for v in values if isinstance(v, dict)]
                merged[key] = ({k: max(float(t[k]) for t in tables) for k in tables[0]}
                               if tables and len(tables) == len(values) else None)
                continue
            numbers = [float(v) for v in values if isinstance(v, int | float)]
            if not numbers or len(numbers) != len(values):
                continue
            if key in _SUMMED:
                merged[key] = sum(numbers)
            elif key in _LOWEST:
                merged[key] = min(numbers)
            elif key in _HIGHEST:
                merged[key] = max(numbers)
            elif key in _WEIGHTED:
                merged[key] = _weighted(numbers, [b.get(_WEIGHTED[key]) for b in blocks])
            else:
                merged[key] = statistics.fmean(numbers)
        if "tps_stdev" in merged:
            merged["tps_stdev"] = _pooled_stdev(blocks, merged.get("tps_mean"))
            sd, mean = merged["tps_stdev"], merged.get("tps_mean")
            merged["tps_cv"] = sd / mean if sd is not None and mean else None
        merged["block"] = None
        merged["blocks"] = len(blocks)
        whole.append(merged)
    return whole


def _weighted(values: Sequence[float], weights: Sequence[Any]) -> float:
    """The mean of ``values`` weighted by ``weights``; the plain mean where a weight is missing."""
    ws = [float(w) for w in weights if isinstance(w, int | float)]
    if len(ws) != len(values) or sum(ws) <= 0:
        return statistics.fmean(values)
    return math.fsum(v * w for v, w in zip(values, ws, strict=True)) / math.fsum(ws)


def _pooled_stdev(blocks: Sequence[Mapping[str, Any]], mean: Any) -> float | None:
    """The per-second tps standard deviation of the blocks' seconds together, from each block's weight
    total w_i (covered_s), mean m_i and standard deviation s_i (frequency weights, as step_sql has them):
    sqrt(sum((w_i - 1) s_i^2 + w_i (m_i - m)^2) / (sum w_i - 1)) around the merged mean m."""
    try:
        parts = [(float(b["covered_s"]), float(b["tps_mean"]), float(b["tps_stdev"])) for b in blocks]
        m = float(mean)
    except (KeyError, TypeError, ValueError):
        return None
    total = math.fsum(w for w, _, _ in parts)
    if total <= 1:
        return None
    return math.sqrt(math.fsum((w - 1) * s * s + w * (mi - m) ** 2 for w, mi, s in parts) / (total - 1))


def step_tps(summary: Mapping[str, Any], step: Mapping[str, Any]) -> float | None:
    """A step's tps, the figure every verdict compares: sysbench's own transaction count over the step
    less those of its ramp (the first report, phase ``ramp``: ramp_transactions = its rate x its
    length), over sysbench's total time less the ramp's length. Exact but for the ramp's rate, which
    sysbench prints to 0.01 tps. A step without per-second reports (an imported summary-only log) keeps
    sysbench's tps over the whole step; one without a summary, the weighted mean of its per-second tps."""
    total, transactions = summary.get("total_time_s"), summary.get("transactions")
    ramp_s, ramp_tx = step.get("ramp_s"), step.get("ramp_transactions")
    if (total is not None and transactions is not None and ramp_s is not None and ramp_tx is not None
            and float(total) - float(ramp_s) > 0):
        return max(0.0, float(transactions) - float(ramp_tx)) / (float(total) - float(ramp_s))
    if summary.get("tps") is not None:
        return float(summary["tps"])
    return float(step["tps_mean"]) if step.get("tps_mean") is not None else None


def per_second_accounting(summary: Mapping[str, Any], step: Mapping[str, Any]) -> dict[str, Any]:
    """A step's per-second accounting from its summary and per-second figures:

    - ``samples`` present and ``samples_expected`` (total time / report interval);
    - ``final_silenced``: the report that would end the step (any of its blocks) was not printed. That
      is sysbench's normal end of run (it silences its report thread as the workers stop, so with short transactions the
      last report never comes): labelled, and no doubt on the step; its transactions are in the
      step's tps (sysbench's count);
    - ``reported_late``: seconds known only as part of a longer interval (sysbench reported late under
      load), beyond the silenced final report; ``gap`` is True when there are any;
    - ``duplicate_timestamps``: reports printed with the same rounded second as the one before (two
      reports within one second: rounded lengths would weigh them 1 and 0);
    - ``interval_lengths``: ``measured`` (the agent timed each report's arrival) or ``rounded``
      (sysbench's printed seconds, ±0.5 s: imported logs, rows stored before the agent timed them);
    - ``ramp_s``: the length of the ramp left out of the step's figures (None: none was)."""
    present, expected = summary.get("samples"), summary.get("samples_expected")
    # A count where the blocks of a step are merged (one silenced report per block at most).
    silenced = int(summary.get("missing_final") or 0)
    late = (max(0, int(expected) - int(present) - silenced)
            if expected is not None and present is not None else None)
    measured = step.get("intervals_measured")
    return {"samples": present, "samples_expected": expected, "missing_final": summary.get("missing_final"),
            "final_silenced": silenced > 0, "reported_late": late, "gap": bool(late),
            "duplicate_timestamps": step.get("duplicate_timestamps"),
            "interval_lengths": None if measured is None else "measured" if measured else "rounded",
            "ramp_s": step.get("ramp_s")}
