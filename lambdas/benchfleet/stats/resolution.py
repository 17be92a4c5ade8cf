"""How many repetitions a spec needs to resolve its margin, and the variance components that say it.

Standard library only. Two sources of spread, both as standard deviations of log tps (about a CV):

- a **calibration** (``benchfleet calibrate SPEC``): the spec's baseline run as an A/A experiment on this
  machine, K runs of R repetitions of B blocks of two identical variants; :func:`components` splits
  the log tps into what varies between blocks of one repetition, between repetitions of one run and
  between runs (a nested random-effects model by the method of moments: each variance is what its
  level's mean square says beyond what the level below it explains, floored at 0), and measures the
  spread of the paired per-repetition A/A log ratio directly (what a paired verdict's interval sees);
- the **published study** for cloud hosts (DESIGN.md, Percona 2021: 3 repetitions on separate EC2
  hosts): CV between repetitions 1.8 % median, 3.8 % p90.

A spec resolves its margin ±m at n repetitions when an interval of that spread around no difference lies
inside ±m: t(df) x sd_d / sqrt(n) <= ln(1 + m/100), with sd_d the spread of one unit's log ratio and
df = n - 1 (paired by repetition or round) or 2 (n - 1) (Welch, equal spreads). Fewer than
MIN_REPETITIONS never reach a verdict at all.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from benchfleet.stats.tdist import t_quantile
from benchfleet.stats.verdict import CONFIDENCE, MAX_REPETITIONS_ADVISED, MIN_REPETITIONS

Design = Literal["paired", "welch"]

# DESIGN.md, "Facts checked in the third review": 3 repetitions on separate EC2 hosts.
PUBLISHED_CV_MEDIAN_PCT = 1.8
PUBLISHED_CV_P90_PCT = 3.8
PUBLISHED_SOURCE = ("the published study's spread (Percona 2021, repetitions on separate EC2 hosts): CV between "
                    f"repetitions {PUBLISHED_CV_MEDIAN_PCT}% median, {PUBLISHED_CV_P90_PCT}% p90")


def halfwidth_pct(sd_log: float, n: int, design: Design, confidence: float = CONFIDENCE) -> float:
    """The half-width (in %, 100 (exp(h) - 1)) of a verdict's interval at n repetitions when one unit's log
    ratio has spread ``sd_log`` (paired), or each side's log figure has spread ``sd_log`` (welch)."""
    if design == "paired":
        h = t_quantile(0.5 + confidence / 2, n - 1) * sd_log / math.sqrt(n)
    else:
        h = t_quantile(0.5 + confidence / 2, 2 * (n - 1)) * sd_log * math.sqrt(2 / n)
    return 100 * math.expm1(h)


def repetitions_to_resolve(sd_log: float, margin_pct: float, design: Design,
                           confidence: float = CONFIDENCE) -> int | None:
    """The fewest repetitions (at least MIN_REPETITIONS) at which an interval of spread ``sd_log`` around
    no difference lies inside ±margin; None beyond MAX_REPETITIONS_ADVISED."""
    limit = 100 * math.expm1(math.log1p(margin_pct / 100))  # the margin itself, on the same scale
    if sd_log <= 0:
        return MIN_REPETITIONS
    for n in range(MIN_REPETITIONS, MAX_REPETITIONS_ADVISED + 1):
        if halfwidth_pct(sd_log, n, design, confidence) <= limit:
            return n
    return None


def _pooled_var(groups: Iterable[Sequence[float]]) -> tuple[float | None, int]:
    """The pooled variance of values within their groups, and its degrees of freedom."""
    ss, df = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            m = statistics.fmean(g)
            ss += math.fsum((x - m) ** 2 for x in g)
            df += len(g) - 1
    return (ss / df if df else None), df


def components(units: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Variance components of one thread count of an A/A calibration, from its units: mappings with
    ``run``, ``repetition``, ``block``, ``variant`` and ``tps`` (one measured block of one variant).

    Returns standard deviations of log tps (None where the design cannot tell: one block, one
    repetition, one run): ``sd_block`` (between blocks of one repetition, pooled within repetition x
    variant), ``sd_repetition`` (between repetitions of one run, beyond the blocks' share),
    ``sd_run`` (between runs, beyond the repetitions' share), ``sd_repetition_total`` (the spread of
    a repetition's figure within a run, what a Welch or round-paired verdict sees per side),
    ``sd_paired`` (the spread of a repetition's A/A log ratio, the mean of its blocks' log ratios
    between the two variants, around its run's mean: what a paired verdict's interval sees), and
    the counts ``runs``, ``repetitions`` (per run, the fewest), ``blocks`` (per repetition, the fewest)."""
    cells: dict[tuple[Any, int], dict[tuple[str, int], float]] = defaultdict(dict)
    for u in units:
        if u.get("tps") and float(u["tps"]) > 0:
            cells[(u["run"], int(u["repetition"]))][(str(u["variant"]), int(u.get("block") or 0))] = \
                math.log(float(u["tps"]))
    runs: dict[Any, list[tuple[int, dict[tuple[str, int], float]]]] = defaultdict(list)
    for (run, rep), values in cells.items():
        runs[run].append((rep, values))
    variants = sorted({v for values in cells.values() for v, _ in values})
    block_var, _ = _pooled_var([[y for (v, _), y in values.items() if v == variant]
                                for values in cells.values() for variant in variants])
    per_cell = min((len(values) for values in cells.values()), default=0)
    rep_means = {run: [statistics.fmean(values.values()) for _, values in reps] for run, reps in runs.items()}
    rep_var, rep_df = _pooled_var(rep_means.values())
    sd_rep = None
    if rep_var is not None:
        sd_rep = math.sqrt(max(0.0, rep_var - (block_var or 0.0) / max(1, per_cell)))
    sd_run = None
    run_means = [statistics.fmean(m) for m in rep_means.values() if m]
    reps_per_run = min((len(m) for m in rep_means.values()), default=0)
    if len(run_means) >= 2 and rep_var is not None:
        sd_run = math.sqrt(max(0.0, statistics.variance(run_means) - rep_var / max(1, reps_per_run)))
    paired: dict[Any, list[float]] = defaultdict(list)
    if len(variants) == 2:
        a, b = variants
        for run, reps in runs.items():
            for _, values in reps:
                logs = [values[(a, blk)] - values[(b, blk)] for v, blk in values if v == a and (b, blk) in values]
                if logs:
                    paired[run].append(statistics.fmean(logs))
    paired_var, _ = _pooled_var(paired.values())
    blocks = min((len({blk for _, blk in values}) for values in cells.values()), default=0)
    return {"runs": len(runs), "repetitions": reps_per_run, "blocks": blocks, "rep_df": rep_df,
            "sd_block": math.sqrt(block_var) if block_var is not None and blocks >= 2 else None,
            "sd_repetition": sd_rep, "sd_run": sd_run,
            "sd_repetition_total": math.sqrt(rep_var) if rep_var is not None else None,
            "sd_paired": math.sqrt(paired_var) if paired_var is not None else None}


def spec_resolution(repetitions: int, margin_pct: float, kinds: Sequence[str], has_variants: bool,
                    targets_compared: bool, calibration: Mapping[str, Any] | None = None,
                    cost_per_repetition_usd: float | None = None,
                    budget_usd: float | None = None) -> dict[str, Any]:
    """What a spec's repetitions can resolve: one entry per kind of verdict it makes (``variants``:
    paired on one host; ``targets``: against the baseline target), each with the spread it assumes and
    where that comes from, the repetitions that resolve ±margin (``needed``; at the study's p90 as
    well for cloud kinds, ``needed_p90``), the half-width the spec's repetitions give, and a status:
    ``cannot reach a verdict`` (fewer than MIN_REPETITIONS, or fewer than needed at the assumed
    spread), ``may not resolve`` (enough at the median spread, not at the p90), ``resolves``, or
    ``spread unknown`` (a local spec never calibrated on this machine: only the minimum is known).
    ``calibration``: the stored components for this spec and machine (worst thread count), if any.
    ``exploratory`` is True when any verdict cannot be reached; ``warnings`` say so in words."""
    cloud = any(k not in ("local", "existing") for k in kinds)
    checks: list[dict[str, Any]] = []
    wanted: list[tuple[str, Design]] = []
    if has_variants:
        wanted.append(("variants", "paired"))
    if targets_compared:
        wanted.append(("targets", "paired" if not cloud and all(k == "local" for k in kinds) else "welch"))
    for what, design in wanted:
        entry: dict[str, Any] = {"verdicts": what, "design": design, "repetitions": repetitions}
        sd: float | None = None
        sd_p90: float | None = None
        if calibration is not None and not cloud:
            # A paired variant verdict sees the A/A log ratio's spread; targets in rounds (two servers)
            # see two repetitions' figures, each with the repetition's spread.
            found = calibration.get("sd_paired") if what == "variants" else calibration.get("sd_repetition_total")
            if found is not None:
                sd = float(found) if what == "variants" else float(found) * math.sqrt(2)
                entry["source"] = f"calibration of {calibration.get('created_at', 'this machine')} " \
                                  f"({calibration.get('runs')} runs x {calibration.get('repetitions')} reps)"
        elif cloud:
            sd = PUBLISHED_CV_MEDIAN_PCT / 100 * (math.sqrt(2) if design == "paired" else 1.0)
            sd_p90 = PUBLISHED_CV_P90_PCT / 100 * (math.sqrt(2) if design == "paired" else 1.0)
            entry["source"] = PUBLISHED_SOURCE + (" (between hosts: a paired comparison on one host usually "
                                                  "needs fewer)" if design == "paired" else "")
        entry["spread_pct"] = None if sd is None else round(100 * sd, 3)
        entry["needed"] = None if sd is None else repetitions_to_resolve(sd, margin_pct, design)
        entry["needed_p90"] = None if sd_p90 is None else repetitions_to_resolve(sd_p90, margin_pct, design)
        entry["resolves_pct"] = (round(halfwidth_pct(sd, repetitions, design), 1)
                                 if sd is not None and repetitions >= 2 else None)
        needed = entry["needed"]
        if repetitions < MIN_REPETITIONS or (sd is not None and (needed is None or repetitions < needed)):
            entry["status"] = "cannot reach a verdict"
        elif sd is None:
            entry["status"] = "spread unknown"
        elif sd_p90 is not None and (entry["needed_p90"] is None or repetitions < entry["needed_p90"]):
            entry["status"] = "may not resolve"
        else:
            entry["status"] = "resolves"
        checks.append(entry)
    warnings = [_warning(c, margin_pct, cost_per_repetition_usd, budget_usd) for c in checks
                if c["status"] in ("cannot reach a verdict", "may not resolve", "spread unknown")]
    return {"margin_pct": margin_pct, "checks": checks,
            "exploratory": any(c["status"] == "cannot reach a verdict" for c in checks),
            "warnings": [w for w in warnings if w]}


def plan_resolution(spec: Any, plan: Any, calibration: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``spec_resolution`` of a ComparisonSpec as planned (a benchfleet.plan.model.Plan): what `benchfleet
    plan` prints and the API's answer to a run carries, one rule for both."""
    per_repetition = plan.estimated_cost_usd / spec.repetitions if plan.mode == "aws" else None
    return spec_resolution(spec.repetitions, spec.margin_pct, [t.kind for t in spec.targets], bool(spec.variants),
                           len(spec.targets) > 1, calibration, per_repetition, spec.budget_usd)


def _warning(check: Mapping[str, Any], margin_pct: float, per_rep_usd: float | None,
             budget_usd: float | None) -> str:
    """The plan's line about one check that does not resolve its margin."""
    m, n = f"{margin_pct:g}", check["repetitions"]
    reps = f"{n} repetition{'s' if n != 1 else ''}"
    what = "variant verdicts (paired on one host)" if check["verdicts"] == "variants" else \
        f"target verdicts ({check['design']})"
    needed, p90 = check.get("needed"), check.get("needed_p90")
    budget = f" (budget ${budget_usd:.2f})" if budget_usd else ""

    def at(count: int | None) -> str:
        if count is None:
            return f"more than {MAX_REPETITIONS_ADVISED} repetitions"
        return f"~{count} repetitions" + (f" (about ${per_rep_usd * count:.2f})" if per_rep_usd else "")

    source = f"; spread {check['spread_pct']:g}%: {check['source']}" if check.get("source") else ""
    if check["status"] == "cannot reach a verdict":
        if check.get("spread_pct") is None:
            return (f"cannot reach a verdict: exploratory: {what} with {reps} (a verdict needs "
                    f"{MIN_REPETITIONS}; how many resolve ±{m}% here: run `benchfleet calibrate`)")
        wanted = at(needed) + (f", {at(p90)} at the p90 spread" if p90 is not None and p90 != needed else "")
        return (f"cannot reach a verdict: exploratory: {what} with {reps}; resolving ±{m}% needs {wanted}"
                f"{budget}{source}")
    if check["status"] == "may not resolve":
        return (f"may not resolve ±{m}%: {what} with {reps} resolve about ±{check['resolves_pct']:g}% at the median "
                f"spread; at the p90 spread it needs {at(p90)}{budget}{source}")
    return (f"spread not yet measured here: {what} with {reps}; `benchfleet calibrate SPEC` measures it on this "
            "machine and plan then says how many repetitions resolve ±" + m + "%")
