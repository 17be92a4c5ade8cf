"""Two runs side by side (``benchfleet compare RUN RUN``): the second against the first, per target x
threads, with the same verdict as a target against its baseline within a run; always ``welch``: two runs
never share a host's minute, and the second run's margin (``margin_pct``) applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from benchfleet.stats.caveats import row_caveats
from benchfleet.stats.verdict import CONFIDENCE, DEFAULT_MARGIN_PCT, multiplicity, relative_difference


def _pairs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Targets to compare: those with the same id in both runs, in the first run's order; when the
    runs share none and each has one target (the same question asked twice with a different setup,
    e.g. two primary-key orders), those two."""
    ids_a = [t["target_id"] for t in a.get("targets") or []]
    ids_b = [t["target_id"] for t in b.get("targets") or []]
    common = [(t, t) for t in ids_a if t in ids_b]
    if not common and len(ids_a) == 1 and len(ids_b) == 1:
        return [(ids_a[0], ids_b[0])]
    return common


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """``a`` and ``b`` are run comparison documents (:func:`benchfleet.stats.run_comparison`). Keys:
    ``baseline_run``/``run`` (ids), ``rows`` (one per matched target x threads: ``target_id``,
    ``vs_target_id``, ``threads``, ``tps`` (b's spread), ``baseline_tps`` (a's), ``relative``, ``cost``
    and ``baseline_cost`` (cost per 1,000 tps by pricing model with intervals, b's and a's), ``caveats``
    (:mod:`benchfleet.stats.caveats`: what differed between the two besides the run)),
    ``unmatched`` (targets of either run that have no partner)."""
    margin = float(b.get("margin_pct") or DEFAULT_MARGIN_PCT)
    rows_a = {(r["target_id"], r["threads"]): r for r in a.get("rows") or []}
    rows_b = {(r["target_id"], r["threads"]): r for r in b.get("rows") or []}
    pairs = _pairs(a, b)
    targets_a = {t["target_id"]: t for t in a.get("targets") or []}
    targets_b = {t["target_id"]: t for t in b.get("targets") or []}
    out = []
    for target_a, target_b in pairs:
        for (tid, threads), row_b in rows_b.items():
            row_a = rows_a.get((target_a, threads))
            if tid != target_b or row_a is None:
                continue
            rel = relative_difference(row_b["tps"]["values"], row_a["tps"]["values"], confidence,
                                      margin_pct=margin)
            out.append({"target_id": target_b, "vs_target_id": target_a, "threads": threads,
                        "repetitions": row_b["repetitions"], "tps": row_b["tps"], "baseline_tps": row_a["tps"],
                        "relative": {"vs": f"{a['run']['run_id']}:{target_a}", **asdict(rel)},
                        "cost": row_b.get("cost"), "baseline_cost": row_a.get("cost"),
                        "caveats": row_caveats(row_b, row_a, targets_b.get(target_b), targets_a.get(target_a))})
    out.sort(key=lambda r: ([p[1] for p in pairs].index(r["target_id"]), r["threads"]))
    matched_a, matched_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    unmatched = ([t["target_id"] for t in a.get("targets") or [] if t["target_id"] not in matched_a]
                 + [t["target_id"] for t in b.get("targets") or [] if t["target_id"] not in matched_b])
    return {"baseline_run": a["run"]["run_id"], "run": b["run"]["run_id"], "confidence": confidence,
            "margin_pct": margin, "rows": out, "unmatched": unmatched,
            "multiplicity": multiplicity((r["relative"] for r in out), confidence)}
