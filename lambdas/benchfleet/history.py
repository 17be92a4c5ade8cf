"""The trend of consecutive runs of one comparison (``benchfleet results --history NAME``).

Scheduled comparisons run the same spec under one name again and again; this module lines their
results up per target x variant x threads (each variant of a spec with variants is its own series,
judged against itself in the run before, never against another variant) and judges each run against
the one before it with the verdict ``compare`` gives (benchfleet.stats.verdict: the Welch interval of
the ratio of the two runs' mean tps from their repetitions; two runs never share a host's minute, so
never paired), with the threshold (``threshold_pct``, 10 % by default) as the margin:

- ``regression`` / ``improvement``: the interval excludes 0 (slower / faster) and lies wholly beyond
  the threshold: a real change larger than it;
- ``possible regression`` / ``possible improvement``: the interval excludes 0 and reaches past the
  threshold, its harmless end inside it: real, and perhaps larger than the threshold, perhaps not
  (a significant -1 % whose interval reaches -12 % was called a regression);
- ``drop`` / ``rise``: the interval excludes 0 and lies inside ±threshold: real, and smaller;
- ``steady``: the interval contains 0 and lies inside ±threshold (equivalent within it);
- ``inconclusive``: the interval contains 0 and reaches beyond ±threshold;
- ``too few repetitions``: fewer than 3 on a side and the interval contains 0.

(The rule this replaces asked two 95 % intervals of the means not to overlap: a test at about
0.6 % rather than 5 %, which flagged a true 10 % drop at 3 repetitions a quarter of the time.)
A slow slide of small steps is visible in ``vs_first_pct``.

Pure functions over plain rows (standard library only): the CLI feeds them one ``stats.run_comparison``
document per run from the local store (with ``--remote``, after loading each cloud run's raw output
into it, as ``results RUN --remote`` does: the API's summary.json holds no comparison rows).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from benchfleet.stats import CONFIDENCE, Relative, mean_ci, multiplicity, relative_difference
from benchfleet.stats.verdict import change_of

DEFAULT_THRESHOLD_PCT = 10.0
Verdict = Literal["first", "regression", "possible regression", "improvement", "possible improvement", "drop",
                  "rise", "steady", "inconclusive", "too few repetitions", "no data"]
# What the history flags (and exits 1 on when the newest run has it): a real drop that may exceed the
# threshold, whether it surely does or not; the words tell the two apart.
FLAGGED = ("regression", "possible regression")


@dataclass(frozen=True)
class Point:
    """One run's figure for one target x threads."""

    run_id: str
    started_at: str | None
    target_id: str
    threads: int
    tps_mean: float | None
    tps_ci_low: float | None = None
    tps_ci_high: float | None = None
    repetitions: int | None = None
    latency_ms: float | None = None
    values: tuple[float, ...] = ()  # per-repetition tps: what the verdict's interval is computed from
    variant: str = ""  # "" for a run without variants


@dataclass(frozen=True)
class TrendRow:
    run_id: str
    started_at: str | None
    target_id: str
    threads: int
    tps_mean: float | None
    tps_ci_low: float | None
    tps_ci_high: float | None
    previous_run_id: str | None
    delta_pct: float | None
    vs_first_pct: float | None
    verdict: Verdict
    latency_ms: float | None = None
    latency_delta_pct: float | None = None
    # The verdict against the previous run (benchfleet.stats.verdict.Relative as a dict), None for the first.
    relative: dict[str, Any] | None = None
    variant: str = ""


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _started(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value) if value else None


def point_from_row(run_id: str, started_at: Any, row: Mapping[str, Any],
                   confidence: float = CONFIDENCE) -> Point:
    """A Point from one comparison row. Understands ``stats.comparison`` rows (``tps`` a mapping
    with ``mean``/``ci_low``/``ci_high``/``values``) and flat rows (``tps_mean``, ``tps_ci_low``,
    ``tps_ci_high``, ``tps_values``); the interval is computed from per-repetition values when only
    they are given."""
    tps = row.get("tps")
    if isinstance(tps, Mapping):
        mean, low, high = _num(tps.get("mean")), _num(tps.get("ci_low")), _num(tps.get("ci_high"))
        values = tps.get("values")
        n = tps.get("n")
    else:
        mean = _num(row.get("tps_mean") if "tps_mean" in row else tps)
        low, high = _num(row.get("tps_ci_low")), _num(row.get("tps_ci_high"))
        values = row.get("tps_values")
        n = row.get("repetitions")
    xs = ([v for v in (_num(x) for x in values) if v is not None]
          if isinstance(values, Sequence) and not isinstance(values, str) else [])
    if low is None or high is None:
        ci = mean_ci(xs, confidence)
        if ci is not None:
            low, high = ci
        if mean is None and xs:
            mean = statistics.fmean(xs)
    latency = row.get("latency_step_pct_ms")
    lat = _num(latency.get("median")) if isinstance(latency, Mapping) else _num(
        row.get("latency_pct_ms_median", row.get("latency_ms")))
    return Point(run_id=run_id, started_at=_started(started_at), target_id=str(row["target_id"]),
                 threads=int(row["threads"]), tps_mean=mean, tps_ci_low=low, tps_ci_high=high,
                 repetitions=int(n) if isinstance(n, int) else None, latency_ms=lat, values=tuple(xs),
                 variant=str(row.get("variant") or ""))


def points_from_comparison(doc: Mapping[str, Any], run_id: str | None = None,
                           started_at: Any = None) -> list[Point]:
    """All Points of one run's comparison document (``stats.comparison`` / summary.json)."""
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    assert isinstance(run, Mapping)
    rid = run_id or str(run.get("run_id") or doc.get("run_id") or "")
    started = started_at or run.get("started_at") or doc.get("started_at")
    rows = doc.get("rows") or doc.get("comparison") or []
    return [point_from_row(rid, started, r) for r in rows
            if isinstance(r, Mapping) and "target_id" in r and "threads" in r]


def _pct(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or old == 0:
        return None
    return round(100.0 * (new / old - 1.0), 3)


def _values(p: Point) -> list[float]:
    """The repetitions' tps; a point known only by its mean is one value (too few to decide)."""
    return list(p.values) if p.values else ([p.tps_mean] if p.tps_mean is not None else [])


def _verdict(rel: Relative) -> Verdict:
    return change_of(rel)[0]


def trend(points: Iterable[Point], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> list[TrendRow]:
    """Per target x variant x threads, runs in order of start (then run id), each against the previous."""
    series: dict[tuple[str, str, int], list[Point]] = {}
    for p in points:
        series.setdefault((p.target_id, p.variant, p.threads), []).append(p)
    out: list[TrendRow] = []
    for _, items in sorted(series.items()):
        items.sort(key=lambda p: (p.started_at or "", p.run_id))
        first = next((p for p in items if p.tps_mean is not None), None)
        prev: Point | None = None
        for p in items:
            delta: float | None
            verdict: Verdict
            relative: dict[str, Any] | None = None
            if prev is None:
                delta, verdict = None, "first"
            else:
                delta = _pct(p.tps_mean, prev.tps_mean)
                rel = relative_difference(_values(p), _values(prev), CONFIDENCE, margin_pct=threshold_pct)
                verdict = _verdict(rel) if p.tps_mean is not None else "no data"
                relative = asdict(rel)
            out.append(TrendRow(
                run_id=p.run_id, started_at=p.started_at, target_id=p.target_id, threads=p.threads,
                tps_mean=p.tps_mean, tps_ci_low=p.tps_ci_low, tps_ci_high=p.tps_ci_high,
                previous_run_id=prev.run_id if prev else None, delta_pct=delta,
                vs_first_pct=_pct(p.tps_mean, first.tps_mean) if first and p is not first else None,
                verdict=verdict, latency_ms=p.latency_ms,
                latency_delta_pct=_pct(p.latency_ms, prev.latency_ms) if prev else None, relative=relative,
                variant=p.variant))
            if p.tps_mean is not None:
                prev = p
    return out


def too_few_runs(name: str, runs: int, where: str) -> str | None:
    """What a history of ``runs`` judged runs of ``name`` says first when they are too few for a trend
    (``where``: "here", "in the cloud"); None from two runs on. Local and remote say the same."""
    if runs == 0:
        return f"no succeeded runs named {name!r} {where}"
    if runs == 1:
        return f"only one succeeded run named {name!r} {where}: nothing to judge it against yet (a trend needs two)"
    return None


def history(name: str, points: Iterable[Point], threshold_pct: float = DEFAULT_THRESHOLD_PCT,
            skipped: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The whole history document: ``rows`` (every TrendRow), ``runs`` (run ids in order),
    ``regressions`` (rows flagged anywhere), ``latest_regressions`` (those of the newest run), the
    rule that flagged them, and ``skipped``: the runs left out, each with why (``run_id``, ``reason``)."""
    rows = trend(points, threshold_pct)
    order: dict[str, str] = {}
    for r in rows:
        order.setdefault(r.run_id, r.started_at or "")
    runs = sorted(order, key=lambda rid: (order[rid], rid))
    latest = runs[-1] if runs else None
    regressions = [asdict(r) for r in rows if r.verdict in FLAGGED]
    return {
        "name": name, "runs": runs, "threshold_pct": threshold_pct, "confidence": CONFIDENCE,
        "rule": f"regression: the {CONFIDENCE:.0%} Welch interval of the change from the previous run (the "
                f"interval compare uses) lies below -{threshold_pct:g}%; possible regression: below 0 and "
                f"reaching past -{threshold_pct:g}%; drop: below 0 and inside ±{threshold_pct:g}%; steady: "
                f"contains 0 inside ±{threshold_pct:g}%",
        "rows": [asdict(r) for r in rows],
        "multiplicity": multiplicity((r.relative for r in rows), CONFIDENCE),
        "regressions": regressions,
        "latest_regressions": [r for r in regressions if r["run_id"] == latest],
        "skipped": [{"run_id": run_id, "reason": reason} for run_id, reason in skipped],
    }


def render_text(doc: Mapping[str, Any]) -> str:
    """A plain table of the history document (for terminals without rich)."""
    lines = [f"history of {doc['name']}: {len(doc['runs'])} run(s); {doc['rule']}"]
    header = f"{'target':<20} {'thr':>5} {'run':<40} {'tps':>12} {'Δ prev':>8} {'Δ 95% CI':>17}  verdict"
    lines.append(header)
    for r in doc["rows"]:
        rel = r.get("relative") or {}
        ci = (f"{rel['ci_low_pct']:+.1f}..{rel['ci_high_pct']:+.1f}%"
              if rel.get("ci_low_pct") is not None and rel.get("ci_high_pct") is not None else "-")
        tps = f"{r['tps_mean']:.1f}" if r["tps_mean"] is not None else "-"
        delta = f"{r['delta_pct']:+.1f}%" if r["delta_pct"] is not None else "-"
        flag = {"regression": "  <-- REGRESSION", "possible regression": "  <-- possible regression"}.get(
            r["verdict"], "")
        name = f"{r['target_id']} · {r['variant']}" if r.get("variant") else r["target_id"]
        lines.append(f"{name:<20} {r['threads']:>5} {r['run_id'][:40]:<40} {tps:>12} {delta:>8} {ci:>17}  "
                     f"{r['verdict']}{flag}")
    found = doc.get("multiplicity") or {}
    if found.get("comparisons"):
        lines.append(str(found["words"]))
    return "\n".join(lines) + "\n"
