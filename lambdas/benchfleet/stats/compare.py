"""Two runs side by side (``benchfleet compare RUN RUN``): the second against the first, per target x
threads; always ``welch``: two runs never share a host's minute, and the second run's margin
(``margin_pct``) applies. The interval adds the series' run-to-run noise (:mod:`benchfleet.stats.runnoise`),
and says so while it is not yet measured; every row carries the between-run caveats (workload, the
servers' settings as run, the machine) beside its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchfleet.stats import caveats
from benchfleet.stats.runnoise import RunNoise, between_runs
from benchfleet.stats.verdict import CONFIDENCE, DEFAULT_MARGIN_PCT, multiplicity

Series = tuple[str, str, int]  # target x variant x threads of one spec (tps)


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


def _key(row: Mapping[str, Any]) -> tuple[str, str, int]:
    return str(row["target_id"]), str(row.get("variant") or ""), int(row["threads"])


def compared_label(row: Mapping[str, Any]) -> str:
    """How a compared row (or an unmatched one) is named: its target, and its variant when it has one."""
    variant = row.get("variant") or ""
    return f"{row['target_id']}/{variant}" if variant else str(row["target_id"])


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any], confidence: float = CONFIDENCE,
                 noise: Mapping[Series, RunNoise] | None = None) -> dict[str, Any]:
    """``a`` and ``b`` are run comparison documents (:func:`benchfleet.stats.run_comparison`). Keys:
    ``baseline_run``/``run`` (ids), ``rows`` (one per matched target x variant x threads: ``target_id``,
    ``vs_target_id``, ``variant`` (the same variant id in both runs; "" without variants), ``threads``,
    ``tps`` (b's spread), ``baseline_tps`` (a's), ``relative``, ``cost`` and ``baseline_cost`` (cost per
    1,000 tps by pricing model with intervals, b's and a's), ``caveats``
    (:mod:`benchfleet.stats.caveats`: what differed between the two besides the run)),
    ``unmatched`` (targets of either run that have no partner, and ``target/variant`` for a variant only
    one run measured). ``noise``: the run-to-run noise of each of b's series (target x variant x
    threads); a series without is "not yet measured"."""
    margin = float(b.get("margin_pct") or DEFAULT_MARGIN_PCT)
    # A run with variants has one row per target x variant x threads: keyed by target and threads alone,
    # the last variant's row stood for the target and the others were dropped, silently.
    rows_a = {_key(r): r for r in a.get("rows") or []}
    rows_b = {_key(r): r for r in b.get("rows") or []}
    variant_order = list(dict.fromkeys(v for _, v, _ in rows_b))
    pairs = _pairs(a, b)
    targets_a = {t["target_id"]: t for t in a.get("targets") or []}
    targets_b = {t["target_id"]: t for t in b.get("targets") or []}
    out = []
    for target_a, target_b in pairs:
        for (tid, variant, threads), row_b in rows_b.items():
            row_a = rows_a.get((target_a, variant, threads))
            if tid != target_b or row_a is None:
                continue
            rel = between_runs(row_b["tps"]["values"], row_a["tps"]["values"],
                               (noise or {}).get((target_b, variant, threads), RunNoise(0)), confidence,
                               margin_pct=margin)
            out.append({"target_id": target_b, "vs_target_id": target_a, "variant": variant, "threads": threads,
                        "repetitions": row_b["repetitions"], "tps": row_b["tps"], "baseline_tps": row_a["tps"],
                        "relative": {"vs": f"{a['run']['run_id']}:{target_a}", **rel},
                        "cost": row_b.get("cost"), "baseline_cost": row_a.get("cost"),
                        "caveats": caveats.row_caveats(row_b, row_a, targets_b.get(target_b), targets_a.get(target_a))
                        + caveats.between_runs(b, a, target_b, target_a)})
    out.sort(key=lambda r: ([p[1] for p in pairs].index(r["target_id"]), r["threads"],
                            variant_order.index(r["variant"])))
    matched_a, matched_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    unmatched = ([t["target_id"] for t in a.get("targets") or [] if t["target_id"] not in matched_a]
                 + [t["target_id"] for t in b.get("targets") or [] if t["target_id"] not in matched_b])
    for target_a, target_b in pairs:  # a variant of a matched target that the other run did not measure
        variants_a = {v for t, v, _ in rows_a if t == target_a}
        variants_b = {v for t, v, _ in rows_b if t == target_b}
        unmatched += [compared_label({"target_id": target_a, "variant": v}) for v in sorted(variants_a - variants_b)]
        unmatched += [compared_label({"target_id": target_b, "variant": v}) for v in sorted(variants_b - variants_a)]
    return {"baseline_run": a["run"]["run_id"], "run": b["run"]["run_id"], "confidence": confidence,
            "margin_pct": margin, "rows": out, "unmatched": unmatched,
            "multiplicity": multiplicity((r["relative"] for r in out), confidence)}
