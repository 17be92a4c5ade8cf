"""The whole comparison of a run, from a store: per-step SQL, per target x threads rows, baseline."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import date, datetime
from typing import Any, Protocol

from benchfleet.cost.run_prices import cross_zone_prices, row_cross_zone, spec_target_price, target_prices
from benchfleet.stats import caveats, settings_refusal
from benchfleet.stats.cost import (
    CROSS_ZONE_SQL,
    cost_per_1000_tps,
    cross_zone_by_row,
    row_costs,
    speedup_table,
    target_group_and_size,
    transactions_per_usd,
)
from benchfleet.stats.figures import mean_spread, percentile_spread, step_stats
from benchfleet.stats.step_sql import step_stats_in_store
from benchfleet.stats.steps import merge_blocks, per_second_accounting, step_tps, tps_by_block
from benchfleet.stats.verdict import CONFIDENCE, DEFAULT_MARGIN_PCT, compare_units, multiplicity
from benchfleet.workload.sysbench import LATENCY_DISTRIBUTION_KEYS

# ---- a whole run ----------------------------------------------------------------------------------

def comparison_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The flat view of a comparison's rows (:func:`comparison`: one per target x variant x threads), for
    the ``comparison`` of ``results --format json``: the same figures as the rows, never others.

    - ``tps_mean``/``tps_min``/``tps_max``/``tps_ci_low``/``tps_ci_high``: the rows' ``tps`` (each
      repetition's step tps, ramp left out, blocks together; a Student-t interval of the mean on the log
      scale); ``qps_mean`` likewise for sysbench's qps;
    - ``latency_pct_ms_median``/``_min``/``_max``: sysbench's step percentile (``latency_pct``) across
      repetitions (median for odd counts only, see :func:`percentile_spread`);
    - ``latency_percentiles_ms``: each step's latency distribution (p50 ... p99.9, max) across
      repetitions, the median of each key (None for an even number of repetitions, as above);
    - ``tps_cv_mean``: mean across repetitions of each step's CV of per-second tps (jitter);
    - ``steal_mean_pct``: mean across repetitions of each step's mean per-second CPU steal;
    - ``samples``: per-second samples of all repetitions together;
    - ``design``/``verdict``/``words``: the row's verdict against its baseline (None for a baseline);
      ``refused``: why it must not be read (:mod:`benchfleet.stats.settings_refusal`), else None.
    """
    out = []
    for r in rows:
        tps, lat, rel = r.get("tps") or {}, r.get("latency_step_pct_ms") or {}, r.get("relative") or {}
        out.append({
            "target_id": r["target_id"], "variant": r.get("variant") or "", "threads": r["threads"],
            "repetitions": r.get("repetitions"),
            "tps_mean": tps.get("mean"), "tps_min": tps.get("min"), "tps_max": tps.get("max"),
            "qps_mean": (r.get("qps") or {}).get("mean"),
            "tps_ci_low": tps.get("ci_low"), "tps_ci_high": tps.get("ci_high"),
            "latency_pct": r.get("latency_pct"),
            "latency_pct_ms_median": lat.get("median"), "latency_pct_ms_min": lat.get("min"),
            "latency_pct_ms_max": lat.get("max"),
            "latency_percentiles_ms": distribution_medians(r.get("latency_distribution_ms")),
            "tps_cv_mean": (r.get("jitter") or {}).get("tps_cv_mean"),
            "steal_mean_pct": r.get("steal_mean_pct"),
            "samples": sum(int(s.get("samples") or 0) for s in r.get("steps") or []),
            "design": rel.get("design"), "verdict": rel.get("verdict"), "words": rel.get("words"),
            "refused": (rel.get("refused") or {}).get("words"),
        })
    return out


def latency_distribution_spread(summaries: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Each key of the steps' latency distributions (``latency_percentiles_ms``, one per repetition) as a
    :func:`percentile_spread` across repetitions; None when no step has one (a run from before it)."""
    distributions = [s.get("latency_percentiles_ms") for s in summaries]
    if not any(distributions):
        return None
    return {key: percentile_spread([(d or {}).get(key) for d in distributions]) for key in LATENCY_DISTRIBUTION_KEYS}


def distribution_medians(spread: Mapping[str, Mapping[str, Any]] | None) -> dict[str, float | None] | None:
    """The median across repetitions of each key of :func:`latency_distribution_spread`."""
    return {key: figures.get("median") for key, figures in spread.items()} if spread else None


class QueryStore(Protocol):
    """What :func:`run_comparison` needs of a store (``benchfleet.local.store.DuckDBStore``)."""

    def run(self, run_id: str) -> dict[str, Any]: ...
    def targets(self, run_id: str) -> list[dict[str, Any]]: ...
    def summaries(self, run_id: str) -> list[dict[str, Any]]: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...


def step_stats_from_samples(samples: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of :func:`step_stats_in_store` computed in Python from sample rows (for stores without SQL)."""
    groups: dict[tuple[str, int, str], list[Mapping[str, Any]]] = defaultdict(list)
    for s in samples:
        if s.get("phase") in ("measure", "ramp"):
            groups[(s["target_id"], int(s["repetition"]), s["step"])].append(s)
    out = []

    def weight(r: Mapping[str, Any]) -> float:
        return float(r["interval_s"]) if r.get("interval_s") is not None else 1.0

    for (target_id, repetition, step), both in groups.items():
        rows = [r for r in both if r.get("phase") == "measure"]
        ramp = [r for r in both if r.get("phase") == "ramp"]
        identity = {"variant": both[0].get("variant") or "", "block": both[0].get("block")}
        figures = step_stats([float(r["tps"]) for r in rows],
                             [float(r["latency_ms"]) for r in rows if r.get("latency_ms") is not None],
                             [r.get("cpu_steal_pct") for r in rows], [weight(r) for r in rows])
        errors = [float(r["errors_per_s"]) for r in rows if r.get("errors_per_s") is not None]
        out.append({"target_id": target_id, "repetition": repetition, "step": step,
                    "threads": int(both[0]["threads"]), **identity, **figures,
                    "errors_per_s_mean": statistics.fmean(errors) if errors else None,
                    "latency_pct": both[0].get("latency_pct"),
                    "ramp_s": math.fsum(weight(r) for r in ramp) if ramp else None,
                    "ramp_transactions": math.fsum(weight(r) * float(r["tps"]) for r in ramp) if ramp else None,
                    "intervals_measured": all(r.get("arrived_s") is not None for r in both),
                    "duplicate_timestamps": len(both) - len({float(r["second"]) for r in both})})
    return sorted(out, key=lambda r: (r["target_id"], r["threads"], r["repetition"]))


def run_comparison(store: QueryStore, run_id: str, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The full comparison of a run as a JSON-serialisable dict (``benchfleet results --format json``,
    the HTML report, the API). Per-step figures come from the store's SQL (:func:`step_stats_in_store`)."""
    run = store.run(run_id)
    run_id = run["run_id"]
    result = comparison(run, store.targets(run_id), store.summaries(run_id),
                        step_stats_in_store(store, run_id), confidence, price_of=spec_target_price,
                        cross_zone=cross_zone_by_row(store.query(CROSS_ZONE_SQL, [run_id])))
    caveats.attach(result, _iowait(store, run_id))
    # What between-run verdicts compare besides the figures: the servers' settings as they ran them.
    result["server_settings"] = caveats.settings_by_target(store.query(caveats.SETTINGS_SQL, [run_id]))
    return result


def _iowait(store: QueryStore, run_id: str) -> dict[tuple[str, str, int], float]:
    """Mean per-second iowait per target x variant x threads (measure seconds), for the caveats."""
    has_variant = store.query("SELECT count(*) AS n FROM information_schema.columns "
                              "WHERE table_name = 'samples' AND column_name = 'variant'")
    variant = "coalesce(variant, '')" if has_variant and has_variant[0]["n"] else "''"
    return caveats.iowait_by_row(store.query(caveats.IOWAIT_SQL.format(variant=variant), [run_id]))


def comparison(run: Mapping[str, Any], targets: Sequence[Mapping[str, Any]],
               summaries: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]],
               confidence: float = CONFIDENCE,
               size_of: Callable[[Mapping[str, Any]], tuple[str | None, float | None]] | None = None,
               price_of: Callable[[Mapping[str, Any]], float | None] | None = None,
               prices_of: Callable[[Mapping[str, Any], Mapping[str, Any] | None], dict[str, Any] | None]
               | None = target_prices,
               cross_zone: Mapping[tuple[str, str, int], Mapping[str, Any]] | None = None,
               ) -> dict[str, Any]:
    """The comparison from rows: the run, its ``targets`` rows (one per target x repetition, with the
    environment fingerprint and price_per_hour), its step ``summaries`` and per-step figures
    (``steps``: rows of :func:`step_stats_in_store` or :func:`step_stats_from_samples`). ``price_of(spec target)``
    prices targets whose rows carry no price_per_hour; ``prices_of(target, spec target)`` gives each
    target's ``prices`` (lines and totals by pricing model, :func:`target_prices`). ``cross_zone``: the
    GB per hour a cluster's traffic crossed zones per target x variant x threads
    (``benchfleet.stats.cost.cross_zone_by_row``): each row of a cluster target prices it into its own
    serving $/hour (the traffic grows with throughput), and the target's breakdown shows its mean over
    the rows; a local cluster's rows and breakdown show it as what it would cost, in no total.

    Keys: ``run``; ``confidence``; ``baseline`` (spec's ``baseline`` or the first target);
    ``targets`` (one per target: kind, type, the price recorded with the run, ``prices`` (every line
    by pricing model), group and size for speedup, fingerprints, ``peak``); ``rows`` (one per target
    x threads, see :func:`_row`; cost per 1,000 tps by pricing model with intervals); ``speedup``
    (:func:`speedup_table`, per thread count with intervals); ``notes`` (what the figures are).
    """
    spec = run.get("spec") or {}
    if isinstance(spec, str):
        import json
        spec = json.loads(spec)
    size_of = size_of or target_group_and_size
    target_meta = _targets(spec, targets, size_of)
    spec_targets = {t.get("id"): t for t in (spec.get("targets") or []) if isinstance(t, dict)}
    if price_of is not None:
        for meta in target_meta.values():
            if meta.get("price_per_hour") is None and meta["target_id"] in spec_targets:
                meta["price_per_hour"] = price_of(spec_targets[meta["target_id"]])
    if prices_of is not None:
        for meta in target_meta.values():
            meta["prices"] = prices_of(meta, spec_targets.get(meta["target_id"]))
    traffic = cross_zone_prices(target_meta, cross_zone or {})

    # One row per target x variant ("" without variants) x threads.
    by_key: dict[tuple[str, str, int], dict[str, Any]] = {}
    for s in summaries:
        if s.get("phase") == "measure":
            entry = by_key.setdefault((s["target_id"], s.get("variant") or "", int(s["threads"])),
                                      {"summaries": [], "steps": []})
            entry["summaries"].append(s)
    for st in steps:
        entry = by_key.setdefault((st["target_id"], st.get("variant") or "", int(st["threads"])),
                                  {"summaries": [], "steps": []})
        entry["steps"].append(st)
    for target_id, _, _ in by_key:
        if target_id not in target_meta:
            target_meta[target_id] = {"target_id": target_id, "kind": None, "price_per_hour": None,
                                      "group": None, "size": None, "fingerprints": []}

    order = {t: i for i, t in enumerate(target_meta)}
    variants = _variant_ids(spec, by_key)
    baseline, base_variant = _baselines(spec, list(target_meta), variants)

    margin = _margin(spec)
    ran = order_run(summaries)
    rows: list[dict[str, Any]] = []
    tps_units: dict[tuple[str, str, int], dict[Any, float]] = {}  # repetition -> tps
    block_units: dict[tuple[str, str, int], dict[Any, float]] = {}
    for key, entry in sorted(by_key.items(), key=lambda kv: (order[kv[0][0]], variants.index(kv[0][1]), kv[0][2])):
        target_id, variant, threads = key
        block_units[key] = tps_by_block(entry["summaries"], entry["steps"])
        serving = (traffic.get(target_id) or {}).get("serving") or \
            (target_meta[target_id].get("prices") or {}).get("serving") or {}
        crossing = row_cross_zone(traffic.get(target_id), (cross_zone or {}).get(key))
        if crossing is not None and crossing["basis"] == "measured":
            serving = {m: None if v is None else v + crossing["usd_per_hour"] for m, v in serving.items()}
        row = _row(target_id, threads, merge_blocks(entry["summaries"]), merge_blocks(entry["steps"]),
                   serving, confidence)
        if crossing is not None:
            row["cross_zone"] = crossing
        tps_units[key] = dict(row.pop("_tps_by_repetition"))
        rows.append({"variant": variant, "label": _label(target_id, variant, len(target_meta)), **row})
    for row in rows:
        key = (row["target_id"], row["variant"], row["threads"])
        base_key: tuple[str, str, int] | None = None
        unit: str | None = None
        candidate: dict[Any, float] = tps_units[key]
        base: dict[Any, float] | None = None
        if row["variant"] != base_variant:
            # A variant against the baseline variant on the same target: measured on one host, paired by
            # the repetition (or the block of a step split into blocks) both were measured in.
            base_key, unit = (row["target_id"], base_variant, row["threads"]), "repetition"
            base = tps_units.get(base_key)
            if block_units[key] and block_units.get(base_key):
                candidate, base, unit = block_units[key], block_units[base_key], "block"
        elif baseline is not None and row["target_id"] != baseline:
            base_key = (baseline, base_variant, row["threads"])
            base = tps_units.get(base_key)
            unit = pairing_unit(target_meta, ran, row["target_id"], baseline)
        if base is None or base_key is None:
            row["relative"] = None
            continue
        rel = compare_units(candidate, base, unit, confidence, margin_pct=margin)
        row["relative"] = {"vs": base_key[0], "vs_variant": base_key[1], **asdict(rel)}
        if row["variant"] != base_variant:  # two variants whose servers ran alike: no verdict to give
            refused = settings_refusal.refusal(by_key[key]["summaries"], by_key[base_key]["summaries"],
                                               (row["variant"], base_variant))
            if refused:
                row["relative"]["refused"] = refused

    # Peaks and speedup compare targets: at the baseline variant (each target's own settings).
    tps_by_target: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        if row["tps"]["mean"] is not None and row["variant"] == base_variant:
            tps_by_target[row["target_id"]][row["threads"]] = row["tps"]["mean"]
    for meta in target_meta.values():
        mine = tps_by_target.get(meta["target_id"])
        # Where the mean was highest: a description of the sweep, not a figure to price (the best of
        # noisy means is biased up; cost per 1,000 tps is given at every thread count instead).
        meta["peak"] = {"threads": max(mine, key=lambda k: mine[k]), "tps_mean": max(mine.values())} if mine else None

    result: dict[str, Any] = _clean({
        "run": {k: run.get(k) for k in ("run_id", "name", "status", "mode", "started_at", "ended_at",
                                        "estimated_cost_usd", "actual_cost_usd", "message", "machine")},
        "trial": _trial(spec),
        "workload": spec.get("workload") if isinstance(spec, dict) else None,
        "repetitions": spec.get("repetitions") if isinstance(spec, dict) else None,
        "confidence": confidence,
        "margin_pct": margin,
        "baseline": baseline,
        "variants": [v for v in variants if v],
        "baseline_variant": base_variant or None,
        "order": spec.get("order") if isinstance(spec, dict) else None,
        "targets": list(target_meta.values()),
        "rows": rows,
        "multiplicity": multiplicity((r["relative"] for r in rows if not (r["relative"] or {}).get("refused")),
                                     confidence),
        "order_run": ran,
        "speedup": speedup_table(
            list(target_meta.values()),
            [{**r, "tps_by_repetition": tps_units[(r["target_id"], r["variant"], r["threads"])]}
             for r in rows if r["variant"] == base_variant], confidence,
            pairing=lambda candidate, base: pairing_unit(target_meta, ran, candidate, base)),
        "notes": NOTES,
    })
    return result


NOTES = {
    "tps": "each measure step's tps: sysbench's own transactions and time over the step less its ramp (the "
           "first report, up to 21% low as a fresh sysbench connects: its rate x its length); summary-only "
           "imported logs keep sysbench's whole-step tps. Across repetitions: mean, min, max and a Student-t "
           "confidence interval of the mean on the log scale (never below 0)",
    "latency_step_pct_ms": "sysbench's latency percentile (latency_pct) over each whole step; across "
                           "repetitions the range, and the median only for an odd number of repetitions "
                           "(of an even number it would be an average of two); never a mean",
    "per_second": "each sample's rates cover the seconds since sysbench's previous report (interval_s): "
                  "measured by the agent from each report's arrival ('measured'), or from sysbench's printed "
                  "seconds, rounded to the second ('rounded': imported logs); per-second figures are weighted "
                  "by them and leave out the step's ramp (its first report). The final report sysbench "
                  "silences as its run ends is labelled 'final report silenced', not a gap; seconds reported "
                  "late (inside a longer interval) and two reports with one printed second are counted",
    "latency_series_p95_ms": "the 95th percentile across a step's seconds of sysbench's per-second latency "
                             "percentile (the p95 of the per-second p95: how bad the worst seconds were), "
                             "never a percentile of transactions; across repetitions median and range",
    "tps_cv": "jitter: stdev / mean of per-second tps within a step, both weighted by interval length "
              "(warm-up and ramp excluded)",
    "blocks": "a step split into blocks (the spec's blocks) is one repetition: its tps is the blocks' "
              "transactions less their ramps over their time less their ramps; counts add up, the per-second "
              "mean and stdev are pooled exactly, extremes and latency percentiles are the highest (or lowest) "
              "block's (never averaged); the per-second median and latency CV are the mean of the blocks'. "
              "Paired verdicts pair block by block and average the blocks' log ratios within each repetition: "
              "the repetition is the unit (repetitions and df count repetitions; relative.blocks the blocks)",
    "relative": "the verdict against the baseline at the same threads (benchfleet.stats.verdict): design "
                "'paired' (per-unit log ratios of units both sides share: repetition or round, a repetition's "
                "the mean of its blocks'; t interval of their mean over repetitions; pct is the geometric mean "
                "of the ratios) or 'welch' (sides measured "
                "apart: Welch interval on the log of the ratio of means); words: faster/slower when the "
                "interval excludes 0 ('within ±m%' when it also lies inside the margin), 'equivalent within "
                "±m%' when it contains 0 inside the margin, 'inconclusive (-x%..+y%)' (both ends) when it "
                "reaches beyond it, "
                "'too few repetitions' below 3 on a side, with the repetitions that would decide; 0 tps is "
                "-100%. refused: two variants whose servers ran a setting the spec varies with the same "
                "value (the server did not take one side's) get no verdict, only the reason",
    "multiplicity": "how many verdicts with an interval the document holds, and how many of them would be "
                    "faster/slower by chance alone if nothing differed (comparisons x (1 - confidence))",
    "cost_per_1000_tps": "the database's price per hour (instance, storage, provisioned IOPS and throughput: "
                         "client hosts are counted for no kind, so kinds compare like with like) / (mean tps / "
                         "1000), at every thread count and under every pricing model (cost); its interval is the "
                         "tps interval carried through (the price is a constant); the price tables' dates and "
                         "sources are in each target's prices; a cluster's price is every node, its storage, its "
                         "proxy's own host and the cross-zone traffic of that row (cross_zone)",
    "cross_zone": "a cluster's traffic between availability zones at that thread count, from its nodes' status "
                  "counters: replicated bytes x (nodes - 1) + the client bytes sent and received by the nodes "
                  "outside the client's zone (the first node's), per second, as GB (2^30 bytes) per hour; "
                  "usd_per_hour = GB/hour x 2 (billed each way) x $0.01; basis 'would' for a local cluster (in no "
                  "cost: what it would cost across zones)",
    "speedup": "tps / that of the smallest size of the same family and configuration at the same thread "
               "count, with the verdict's interval and design: paired by round for local servers run in rounds "
               "(geometric mean of the per-round ratios), else Welch on the log of the ratio of means; "
               "per_doubling = speedup ** (1 / doublings of vCPUs): 2.0 is linear scaling",
}


def order_run(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The order the run actually ran, from its steps' recorded times: ``repetitions`` (the
    target x repetitions in the order they started, so local rounds show) and per target x
    repetition the measured steps in the order they ran (their variant and block), so an
    interleaved order is there to check, not only planned."""
    measured = sorted((s for s in summaries if s.get("phase") == "measure" and s.get("time") is not None),
                      key=lambda s: s["time"])
    first: dict[tuple[str, int], Any] = {}
    steps: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for s in sorted((s for s in summaries if s.get("time") is not None), key=lambda s: s["time"]):
        first.setdefault((s["target_id"], int(s["repetition"])), s["time"])
    for s in measured:
        steps[(s["target_id"], int(s["repetition"]))].append(
            {"step": s["step"], "variant": s.get("variant") or "", "block": s.get("block"), "threads": s["threads"]})
    return {"repetitions": [{"target_id": t, "repetition": r} for t, r in sorted(first, key=lambda k: first[k])],
            "steps": [{"target_id": t, "repetition": r, "steps": found} for (t, r), found in steps.items()]}


def _trial(spec: Any) -> Any:
    """The mark of a smoke or --local run (``benchfleet.plan.scale.trial``); runs stored before it had its
    name kept it under ``variant``."""
    if not isinstance(spec, dict):
        return None
    found = spec.get("trial") or spec.get("variant")
    return found if isinstance(found, dict) else None


def _variant_ids(spec: Any, keys: Iterable[tuple[str, str, int]]) -> list[str]:
    """The run's variants in spec order ("" alone for a run without variants)."""
    ids = [v.get("id") for v in (spec.get("variants") or []) if isinstance(v, dict)] if isinstance(spec, dict) else []
    found = [str(i) for i in ids if i]
    for _, variant, _ in keys:
        if variant not in found:
            found.append(variant)
    return found or [""]


def _baselines(spec: Any, targets: list[str], variants: list[str]) -> tuple[str | None, str]:
    """(baseline target, baseline variant): the spec's ``baseline`` names either; the first of each
    otherwise."""
    named = spec.get("baseline") if isinstance(spec, dict) else None
    target = named if named in targets else next(iter(targets), None)
    variant = named if named in variants else variants[0]
    return target, variant


def _label(target_id: str, variant: str, targets: int) -> str:
    """How a row is named in tables and charts: the target, the variant, or both."""
    if not variant:
        return target_id
    return variant if targets == 1 else f"{target_id} · {variant}"


def _margin(spec: Any) -> float:
    """The spec's equivalence margin (``margin_pct``), the default for runs stored before it existed."""
    value = spec.get("margin_pct") if isinstance(spec, dict) else None
    return float(value) if isinstance(value, int | float) and 0 < value < 100 else DEFAULT_MARGIN_PCT


def pairing_unit(targets: Mapping[str, Mapping[str, Any]], ran: Mapping[str, Any], candidate: str,
                 baseline: str) -> str | None:
    """What two targets' measurements share, so that they are compared pairwise: ``round`` for local
    targets (servers on this machine) that the run's recorded times show ran in rounds (``ran``:
    :func:`order_run`; repetition r of both before repetition r + 1 of either, so the minute's noise is
    common to the round); None (welch) for anything else, in particular targets on separate hosts, whose
    host-to-host spread no pairing removes, and runs that ran one target's repetitions all before the
    next's."""
    # What the run did, from the times its steps were recorded at, never the spec's wish: a runner that
    # ran one target after another gives pairs that share nothing.
    local = all((targets.get(t) or {}).get("kind") == "local" for t in (candidate, baseline))
    return "round" if local and ran_in_rounds(ran, (candidate, baseline)) else None


def ran_in_rounds(ran: Mapping[str, Any], targets: Sequence[str]) -> bool:
    """Whether ``targets`` ran in rounds: each has the same repetitions, and in the order the run started
    them (:func:`order_run`) no repetition of one began before an earlier repetition of another."""
    started = [(r["target_id"], int(r["repetition"])) for r in ran.get("repetitions") or []
               if r["target_id"] in targets]
    reps = {t: sorted(r for tid, r in started if tid == t) for t in targets}
    if len(set(targets)) < 2 or not started or any(reps[t] != reps[targets[0]] for t in targets):
        return False
    numbers = [r for _, r in started]
    return numbers == sorted(numbers)


def _row(target_id: str, threads: int, summaries: Sequence[Mapping[str, Any]],
         steps: Sequence[Mapping[str, Any]], serving: Mapping[str, float | None],
         confidence: float) -> dict[str, Any]:
    """One target x threads. ``tps``: :func:`mean_spread` of per-repetition step tps (:func:`step_tps`).
    ``tps_per_second_median``:
    :func:`mean_spread` of each step's median per-second tps. ``latency_step_pct_ms``,
    ``latency_series_p95_ms``, ``latency_series_p99_ms``: :func:`percentile_spread`. ``jitter``:
    ``tps_cv_mean``/``tps_cv_max`` (mean / max across repetitions of each step's CV of per-second tps),
    ``latency_series_cv_mean``. ``steal_mean_pct``: mean across repetitions of each step's mean
    per-second steal; ``steal_max_pct``: the highest single second. ``serving``: the database's $/hour
    by pricing model; ``cost``: cost per 1,000 tps under each with its interval (:func:`row_costs`);
    ``price_per_hour``, ``cost_per_1000_tps`` and ``transactions_per_usd``: on-demand, at the mean tps.
    ``steps``: the per-repetition figures."""
    summary_by_rep = {int(s["repetition"]): s for s in summaries}
    step_by_rep = {int(s["repetition"]): s for s in steps}
    reps = sorted(set(summary_by_rep) | set(step_by_rep))
    tps: list[float] = []
    tps_reps: list[int] = []
    for rep in reps:
        figure = step_tps(summary_by_rep.get(rep, {}), step_by_rep.get(rep, {}))
        if figure is not None:
            tps.append(figure)
            tps_reps.append(rep)

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
    price = serving.get("on_demand")
    return {
        "_tps_by_repetition": dict(zip(tps_reps, tps, strict=True)),
        "target_id": target_id, "threads": threads, "repetitions": len(reps),
        "tps": spread,
        "qps": mean_spread(col(summary_by_rep, "qps"), confidence),
        "tps_per_second_median": mean_spread(col(step_by_rep, "tps_median"), confidence),
        "latency_pct": pct,
        "latency_step_pct_ms": percentile_spread([s.get("latency_pct_ms") for s in summary_by_rep.values()]),
        "latency_distribution_ms": latency_distribution_spread(summary_by_rep.values()),
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
        "cost_per_1000_tps": cost_per_1000_tps(price, mean) if price else None,
        "transactions_per_usd": transactions_per_usd(price, mean),
        "cost": row_costs(spread, serving),
        "steps": [{"repetition": rep, **{k: v for k, v in step_by_rep.get(rep, {}).items()
                                          if k not in ("target_id", "repetition", "threads")},
                   "summary_tps": summary_by_rep.get(rep, {}).get("tps"),
                   "tps": step_tps(summary_by_rep.get(rep, {}), step_by_rep.get(rep, {})),
                   "summary_latency_pct_ms": summary_by_rep.get(rep, {}).get("latency_pct_ms"),
                   **per_second_accounting(summary_by_rep.get(rep, {}), step_by_rep.get(rep, {}))}
                  for rep in reps],
    }


# region and availability_zone: the targets rows carry where each target really ran; they win over
# the spec's region.
_META_KEYS = ("kind", "instance_type", "instance_class", "engine", "mysql_config", "region", "availability_zone",
              "storage", "cpus", "price_per_hour")
_FINGERPRINT_KEYS = ("repetition", "cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os",
                     "sysbench_version", "engine_version", "config_hash", "recorded_at", "storage_layout")


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
