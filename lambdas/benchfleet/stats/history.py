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

Each verdict between two runs adds the series' **run-to-run noise** (:mod:`benchfleet.stats.runnoise`),
estimated from the series' runs between breaks; while they are fewer than ``runnoise.MIN_RUNS`` the
words say "run-to-run noise not yet measured: N runs" (the same demo run twice was flagged REGRESSION
by its repetitions' spread alone). Each carries the caveats ``compare`` gives (steal, iowait, gaps,
fingerprint, machine load and overlap).

A **break**: a run whose series measures something else than the run before it (workload: test, table
size, options...; latency percentile; engine version; server settings as the servers ran them) starts
a new segment, said so with both values (``verdict: break``), never judged against the run before (a
point_select -> read_only history was "REGRESSION -95.1%"; a p95 -> p99 import "latency +59.8%").

**Change points** (``change_points``) are found in each segment's run means by E-Divisive
(:mod:`benchfleet.stats.changepoints`), each reported with the first run after it, its size and its interval
(Welch over the runs' means on either side, up to the neighbouring change points: the run-to-run
spread is in it). E-Divisive needs runs on both sides of a change (a drop was found in 0.005 of
simulated histories one run after it), so the newest runs of each series' newest segment are also
judged against the stable runs before them (:mod:`benchfleet.stats.newest`: the newest 1 and 2 runs,
and the runs since E-Divisive's last change; a prediction interval whose noise is the reference runs'
own scatter) at the **look confidence**, which shares a 5 % chance of a false alarm among the looks a
scheduled history takes (20 runs x 3 tests x its series). A change found so is one change point
(``method: newest runs``) in place of E-Divisive's at or after its first run. The history fails
(``latest_regressions``, exit 1) only when the newest run lies after such a change that is a drop
flagged ``regression`` (its interval wholly beyond -threshold) or ``possible regression`` (below 0 and
reaching past -threshold): a true drop of exactly the threshold is beyond it half the time, so a rule
on the point estimate found it half the time.

Pure functions over plain rows (standard library only): the CLI feeds them one ``stats.run_comparison``
document per run from the local store (with ``--remote``, after loading each cloud run's raw output
into it, as ``results RUN --remote`` does: the API's summary.json holds no comparison rows).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from typing import Any, Literal

from benchfleet.stats import CONFIDENCE, Relative, mean_ci, multiplicity, relative_difference
from benchfleet.stats import caveats as cav
from benchfleet.stats.newest import FAMILY_ALPHA, LOOKS, TAIL_RUNS, TESTS_PER_LOOK, look_confidence, newest_against
from benchfleet.stats.runnoise import RunNoise, between_runs, estimate
from benchfleet.stats.verdict import change_of

DEFAULT_THRESHOLD_PCT = 10.0
Verdict = Literal["first", "break", "regression", "possible regression", "improvement", "possible improvement",
                  "drop", "rise", "steady", "inconclusive", "too few repetitions", "no data"]
# What a history row flags: a real drop that may exceed the threshold, whether it surely does or not (the
# words tell the two apart). The exit code is the change points' (history()), never one row's.
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
    latency_pct: float | None = None  # the percentile latency_ms is (95, 99...)
    # What the series measured in this run (workload, percentile, engine version, settings as run): a
    # change from the run before is a break. Empty: unknown, never a break.
    context: Mapping[str, Any] = field(default_factory=dict)
    doc: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)  # the run's document
    row: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)  # its comparison row


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
    caveats: list[dict[str, Any]] = field(default_factory=list)
    # For a break: what changed from the run before, each with both values.
    break_words: str | None = None


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
                 variant=str(row.get("variant") or ""), latency_pct=_num(row.get("latency_pct")))


def context_of(doc: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """What one series measured in one run (see the module docstring: a change is a break)."""
    target: Mapping[str, Any] = next(
        (t for t in doc.get("targets") or [] if t.get("target_id") == row.get("target_id")), {})
    workload = doc.get("workload")
    return {
        # Not its name or description (a renamed copy measures alike), nor its thread sweep: each thread
        # count is its own series, and adding one to the sweep changes none of the others.
        "workload": {k: v for k, v in workload.items() if k not in ("name", "description", "threads")}
        if isinstance(workload, Mapping) else None,
        "percentile": _num(row.get("latency_pct")),
        "engine_version": sorted({str(f["engine_version"]) for f in target.get("fingerprints") or []
                                  if f.get("engine_version")}),
        "settings": dict((doc.get("server_settings") or {}).get(str(row.get("target_id"))) or {}),
        "config": sorted({str(f["config_hash"]) for f in target.get("fingerprints") or [] if f.get("config_hash")}),
    }


def points_from_comparison(doc: Mapping[str, Any], run_id: str | None = None,
                           started_at: Any = None) -> list[Point]:
    """All Points of one run's comparison document (``stats.comparison`` / summary.json)."""
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    assert isinstance(run, Mapping)
    rid = run_id or str(run.get("run_id") or doc.get("run_id") or "")
    started = started_at or run.get("started_at") or doc.get("started_at")
    rows = doc.get("rows") or doc.get("comparison") or []
    return [replace(point_from_row(rid, started, r), context=context_of(doc, r), doc=doc, row=r) for r in rows
            if isinstance(r, Mapping) and "target_id" in r and "threads" in r]


def break_words(now: Mapping[str, Any], before: Mapping[str, Any]) -> str | None:
    """What a series' context changed from the run before, each with both values; None: no break
    (an unknown side never breaks)."""
    if not now or not before:
        return None
    said: list[str] = []
    work = cav.workload_caveat(now.get("workload"), before.get("workload"))
    if work:
        said.append(str(work["words"]))
    if now.get("percentile") != before.get("percentile"):
        said.append(f"latency percentile p{_g(now.get('percentile'))} vs p{_g(before.get('percentile'))}")
    a, b = now.get("engine_version") or [], before.get("engine_version") or []
    if a and b and a != b:
        said.append(f"engine version {' | '.join(a)} vs {' | '.join(b)}")
    settings = cav.settings_caveat(now.get("settings"), before.get("settings"))
    if settings:
        said.append(str(settings["words"]))
    elif now.get("config") and before.get("config") and now.get("config") != before.get("config"):
        said.append("server configuration (its hash) changed")
    return "; ".join(said) or None


def _g(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _pct(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or old == 0:
        return None
    return round(100.0 * (new / old - 1.0), 3)


def _values(p: Point) -> list[float]:
    """The repetitions' tps; a point known only by its mean is one value (too few to decide)."""
    return list(p.values) if p.values else ([p.tps_mean] if p.tps_mean is not None else [])


def _verdict(rel: Mapping[str, Any]) -> Verdict:
    """The change words of a between-run verdict (stats.verdict.change_of, one place for them)."""
    return change_of(Relative(**{f.name: rel[f.name] for f in fields(Relative) if f.name in rel}))[0]


SeriesKey = tuple[str, str, int]


def _segments(items: list[Point]) -> list[tuple[list[Point], str | None]]:
    """A series' runs (those with a figure) cut at its breaks: (runs, what broke before them)."""
    out: list[tuple[list[Point], str | None]] = []
    for p in items:
        if p.tps_mean is None:
            continue
        broke = break_words(p.context, out[-1][0][-1].context) if out else None
        if not out or broke:
            out.append(([p], broke))
        else:
            out[-1][0].append(p)
    return out


def _caveats(p: Point, prev: Point) -> list[dict[str, Any]]:
    """The caveats compare gives this series' verdict against the run before (its row's and the runs')."""
    if p.doc is None or prev.doc is None or p.row is None or prev.row is None:
        return []
    targets = {t["target_id"]: t for t in p.doc.get("targets") or []}
    base = {t["target_id"]: t for t in prev.doc.get("targets") or []}
    return (cav.row_caveats(p.row, prev.row, targets.get(p.target_id), base.get(prev.target_id))
            + [c for c in cav.between_runs(p.doc, prev.doc, p.target_id, prev.target_id) if c["kind"] != "workload"])


def trend(points: Iterable[Point], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> list[TrendRow]:
    """Per target x variant x threads, runs in order of start (then run id), each against the previous
    in its segment (a break starts a new one), with the segment's run-to-run noise."""
    series: dict[SeriesKey, list[Point]] = {}
    for p in points:
        series.setdefault((p.target_id, p.variant, p.threads), []).append(p)
    out: list[TrendRow] = []
    for _, items in sorted(series.items()):
        items.sort(key=lambda p: (p.started_at or "", p.run_id))
        segments = _segments(items)
        segment_of = {id(p): (i, broke) for i, (seg, broke) in enumerate(segments) for p in seg}
        noise = [_noise(seg) for seg, _ in segments]
        prev: Point | None = None
        first: Point | None = None
        for p in items:
            delta: float | None
            verdict: Verdict
            relative: dict[str, Any] | None = None
            found = segment_of.get(id(p))
            broke = found[1] if found and found[0] > 0 and segments[found[0]][0][0] is p else None
            if broke:
                first = p
            if prev is None or broke:
                delta, verdict = None, ("break" if broke else "first")
            else:
                delta = _pct(p.tps_mean, prev.tps_mean)
                seg = found[0] if found else segment_of[id(prev)][0]
                relative = between_runs(_values(p), _values(prev), noise[seg], CONFIDENCE, margin_pct=threshold_pct)
                verdict = _verdict(relative) if p.tps_mean is not None else "no data"
            if first is None and p.tps_mean is not None:
                first = p
            same_pct = prev is not None and not broke and p.latency_pct == prev.latency_pct
            out.append(TrendRow(
                run_id=p.run_id, started_at=p.started_at, target_id=p.target_id, threads=p.threads,
                tps_mean=p.tps_mean, tps_ci_low=p.tps_ci_low, tps_ci_high=p.tps_ci_high,
                previous_run_id=prev.run_id if prev and not broke else None, delta_pct=delta,
                vs_first_pct=_pct(p.tps_mean, first.tps_mean) if first and p is not first else None,
                verdict=verdict, latency_ms=p.latency_ms,
                latency_delta_pct=_pct(p.latency_ms, prev.latency_ms) if prev and same_pct else None,
                relative=relative, variant=p.variant,
                caveats=_caveats(p, prev) if prev is not None and relative is not None else [],
                break_words=broke))
            if p.tps_mean is not None:
                prev = p
    return out


def noise_for(points: Iterable[Point], run_id: str) -> dict[SeriesKey, RunNoise]:
    """The run-to-run noise of each series of run ``run_id``, from the runs of its segment (those
    measuring what it measured, up to the next break) among ``points``."""
    series: dict[SeriesKey, list[Point]] = {}
    for p in points:
        series.setdefault((p.target_id, p.variant, p.threads), []).append(p)
    out: dict[SeriesKey, RunNoise] = {}
    for key, items in series.items():
        items.sort(key=lambda p: (p.started_at or "", p.run_id))
        for seg, _ in _segments(items):
            if any(p.run_id == run_id for p in seg):
                out[key] = _noise(seg)
    return out


def _noise(segment: Sequence[Point]) -> RunNoise:
    """The run-to-run noise of one segment of a series, the differences across its change points left out."""
    from benchfleet.stats.changepoints import find

    figures = [p for p in segment if _values(p)]
    return estimate([_values(p) for p in figures], cuts=find([statistics.fmean(_values(p)) for p in figures]))


# The runs a between-run verdict reads its noise from: enough for a stable estimate (29 differences),
# few enough that `compare` in a store of a year of nightly runs stays quick; the same as a remote history.
NOISE_RUNS = 30


def noise_from_store(store: Any, doc: Mapping[str, Any]) -> dict[SeriesKey, RunNoise]:
    """The run-to-run noise of each series of the run ``doc`` (a run comparison document) from the
    store's succeeded runs of the same spec name that started before it or with it, the newest
    NOISE_RUNS of them (trials left out: a smoke run measures another size)."""
    from benchfleet.stats import run_comparison

    run = doc.get("run") or {}
    started = _started(run.get("started_at")) or ""
    points: list[Point] = []
    used = 0
    for other in store.runs():  # newest first
        if other["name"] != run.get("name") or other["status"] != "succeeded" or other.get("trial"):
            continue
        if other["run_id"] != run.get("run_id") and (_started(other["started_at"]) or "") > started:
            continue
        used += 1
        if used > NOISE_RUNS:
            break
        other_doc = doc if other["run_id"] == run.get("run_id") else run_comparison(store, other["run_id"])
        points += points_from_comparison(other_doc, run_id=other["run_id"], started_at=other["started_at"])
    found = noise_for(points, str(run.get("run_id")))
    calibrated = calibration_noise(store, str(run.get("name") or ""))
    for key, noise in list(found.items()):
        if not noise.measured and key[2] in calibrated:
            found[key] = calibrated[key[2]]
    return found


CALIBRATION_SQL = """
SELECT threads, sd_run, runs FROM calibrations
WHERE spec_name = ? AND fingerprint = ? AND sd_run IS NOT NULL ORDER BY created_at
"""


def calibration_noise(store: Any, name: str, fingerprint: str | None = None) -> dict[int, RunNoise]:
    """The between-run component a stored calibration (``benchfleet calibrate``: the store's
    ``calibrations`` table, sd_run of log tps between its A/A runs) measured for the spec ``name`` on the
    machine ``fingerprint`` names (default: this one; a calibration holds only where it was measured),
    per thread count (the newest); {} when there is none or this store has no such table. It stands for
    every series of that thread count while the spec's own runs are too few to say."""
    if not store.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'calibrations'"):
        return {}
    if fingerprint is None:
        from benchfleet.local.calibration import fingerprint as key
        from benchfleet.local.calibration import machine

        fingerprint = key(machine())
    return {int(r["threads"]): RunNoise(int(r["runs"]), float(r["sd_run"]), float(max(1, int(r["runs"]) - 1)),
                                        "calibration")
            for r in store.query(CALIBRATION_SQL, [name, fingerprint])}


def _label(target_id: str, variant: str, threads: int) -> str:
    return f"{target_id} · {variant} @ {threads} thr" if variant else f"{target_id} @ {threads} thr"


def _change(seg: Sequence[Point], start: int, end: int, rel: Relative, method: str, runs_before: int,
            key: SeriesKey) -> dict[str, Any]:
    """One change point of a series' segment: the runs seg[start:end] after it, judged by ``rel``."""
    target_id, variant, threads = key
    change, words = change_of(rel)
    data = asdict(rel)
    return {"run_id": seg[start].run_id, "started_at": seg[start].started_at,
            "series": _label(target_id, variant, threads), "target_id": target_id, "variant": variant,
            "threads": threads, "pct": data["pct"], "ci_low_pct": data["ci_low_pct"],
            "ci_high_pct": data["ci_high_pct"], "relative": data, "method": method, "change": change,
            "words": words, "runs_before": runs_before, "runs_after": end - start,
            "last_run_after": seg[end - 1].run_id,
            "drop_beyond_threshold": data["pct"] is not None and data["pct"] < -rel.margin_pct
            and data["ci_high_pct"] is not None and data["ci_high_pct"] < 0,
            "flagged": change in FLAGGED}


def _newest(seg: Sequence[Point], confidence: float, threshold_pct: float) -> tuple[int, Relative] | None:
    """The newest runs of a segment against the stable runs before them (benchfleet.stats.newest): the
    run the change starts at and its verdict, when one of the tails differs at ``confidence``: the newest
    1 and 2 runs (a change too recent for E-Divisive) and the runs since the last change E-Divisive finds
    (a change it sees, judged by the same test while the newest run lies after it)."""
    from benchfleet.stats.changepoints import find

    means = [p.tps_mean for p in seg if p.tps_mean is not None]
    cuts = find(means)
    found: list[tuple[int, Relative]] = []
    for m in sorted({*TAIL_RUNS, len(means) - cuts[-1] if cuts else 0}, reverse=True):
        if not 0 < m < len(means):
            continue
        body = means[:-m]
        before = find(body)
        rel = newest_against(body[before[-1] if before else 0:], means[-m:], confidence, threshold_pct)
        if rel is not None and rel.verdict in ("faster", "slower"):
            found.append((len(means) - m, rel))
    # A drop the history is flagged for first; then the tail that stands out most from its interval (a drop
    # in the newest run only is diluted in the newest two; one in both is clearer in both).
    found.sort(key=lambda f: (change_of(f[1])[0] not in FLAGGED, -_standing(f[1])))
    return found[0] if found else None


def _standing(rel: Relative) -> float:
    """How far a verdict's estimate lies from 0 in half-widths of its interval (log scale)."""
    if rel.pct is None or not rel.halfwidth_pct:
        return math.inf
    return abs(math.log1p(rel.pct / 100)) / math.log1p(rel.halfwidth_pct / 100)


def change_points(points: Iterable[Point], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> list[dict[str, Any]]:
    """The change points of every series, segment by segment (module docstring): ``run_id`` (the first
    run after it), ``series``, ``target_id``/``variant``/``threads``, ``pct`` and its interval
    (``relative``), ``method`` (``e-divisive``: Welch over the runs' means before and after;
    ``newest runs``: the newest 1 or 2 runs of the series, or those since E-Divisive's last change,
    against the stable runs before them at the history's look confidence: benchfleet.stats.newest),
    ``change``/``words`` (the words of a change of a series: ``regression``, ``possible regression``,
    ``drop``...), ``flagged`` (a regression or possible regression), ``runs_before``/``runs_after``,
    ``last_run_after``, ``drop_beyond_threshold`` (the point estimate beyond -threshold and the
    interval below 0)."""
    from benchfleet.stats.changepoints import find

    series: dict[SeriesKey, list[Point]] = {}
    for p in points:
        series.setdefault((p.target_id, p.variant, p.threads), []).append(p)
    confidence = look_confidence(len(series))
    out: list[dict[str, Any]] = []
    for key, items in sorted(series.items()):
        items.sort(key=lambda p: (p.started_at or "", p.run_id))
        segments = [seg for seg, _ in _segments(items)]
        for n, seg in enumerate(segments):
            means = [p.tps_mean for p in seg if p.tps_mean is not None]
            # The newest runs are tested in the series' newest segment only; a change E-Divisive finds
            # among them is the same change, said once, with the interval that has the power.
            newest = _newest(seg, confidence, threshold_pct) if n == len(segments) - 1 else None
            cuts = [c for c in find(means) if newest is None or c < newest[0]]
            bounds = [0, *cuts, len(seg)]
            for i, cut in enumerate(cuts, start=1):
                before, after = means[bounds[i - 1]:cut], means[cut:bounds[i + 1]]
                rel = relative_difference(after, before, CONFIDENCE, margin_pct=threshold_pct)
                out.append(_change(seg, cut, bounds[i + 1], rel, "e-divisive", len(before), key))
            if newest is not None:
                start, rel = newest
                out.append(_change(seg, start, len(seg), rel, "newest runs", rel.repetitions[1], key))
    return out


def change_point_rule(threshold_pct: float, series: int) -> str:
    """The words of what fails a history (its ``change_point_rule``)."""
    return (f"change points: E-Divisive (MongoDB's signal-processing-algorithms, p < 0.05) over each series' run "
            f"means between breaks, and the newest 1 and 2 runs and those since the last change point against "
            f"the stable runs before them (prediction interval: their scatter is the run-to-run noise); exit 1 "
            f"only when the newest run lies after a drop whose {look_confidence(series):.2%} interval lies below 0 "
            f"and reaches past -{threshold_pct:g}% (a regression or possible regression). That confidence shares "
            f"a {FAMILY_ALPHA:.0%} chance of a false alarm among {LOOKS} runs x {TESTS_PER_LOOK} tests x {series} "
            f"series: a history judged after each run longer than {LOOKS} runs looks more often than that")


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
    ``regressions`` (rows whose verdict against the run before is ``regression``), ``breaks`` (rows
    that start a new segment, with what changed), ``change_points``, ``latest_regressions`` (the
    change points that are drops beyond the threshold and that the newest run lies after: what fails
    the history), the rules, and ``skipped``: the runs left out, each with why (``run_id``, ``reason``)."""
    points = list(points)
    rows = trend(points, threshold_pct)
    order: dict[str, str] = {}
    for r in rows:
        order.setdefault(r.run_id, r.started_at or "")
    runs = sorted(order, key=lambda rid: (order[rid], rid))
    latest = runs[-1] if runs else None
    regressions = [asdict(r) for r in rows if r.verdict in FLAGGED]
    changes = change_points(points, threshold_pct) if len(runs) > 2 else []
    series = len({(p.target_id, p.variant, p.threads) for p in points})
    # The newest run lies after a change when it is in the stretch that change opens; only the newest-runs
    # test, at the look confidence, fails a history (E-Divisive's own interval is at 95 % and picked where
    # the runs differ most: it cried wolf in simulated A/A histories).
    failing = [c for c in changes if c["method"] == "newest runs" and c["flagged"] and c["last_run_after"] == latest]
    return {
        "name": name, "runs": runs, "threshold_pct": threshold_pct, "confidence": CONFIDENCE,
        "rule": f"regression: the {CONFIDENCE:.0%} interval of the change from the previous run (compare's, with "
                f"the run-to-run noise) lies below -{threshold_pct:g}%; possible regression: below 0 and reaching "
                f"past -{threshold_pct:g}%; drop: below 0 and inside ±{threshold_pct:g}%; steady: contains 0 "
                f"inside ±{threshold_pct:g}%",
        "change_point_rule": change_point_rule(threshold_pct, series),
        "look_confidence": look_confidence(series),
        "rows": [asdict(r) for r in rows],
        "multiplicity": multiplicity((r.relative for r in rows), CONFIDENCE),
        "regressions": regressions,
        "breaks": [{"run_id": r.run_id, "series": _label(r.target_id, r.variant, r.threads), "words": r.break_words}
                   for r in rows if r.verdict == "break"],
        "change_points": changes,
        "latest_regressions": failing,
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
        noise = rel.get("run_to_run") or {}
        flag = ""
        if r["verdict"] in FLAGGED:
            # Never a bare REGRESSION while the run-to-run noise is unknown: the repetitions' spread alone
            # called the same demo run twice a regression.
            mark = "REGRESSION" if r["verdict"] == "regression" else "possible regression"
            flag = f"  <-- {mark}" + ("" if noise.get("measured") else f" ({noise.get('words')})")
        elif r["verdict"] == "break":
            flag = f"  (series broken: {r.get('break_words')})"
        elif rel and not noise.get("measured", True):
            flag = f"  ({noise.get('words')})"
        name = f"{r['target_id']} · {r['variant']}" if r.get("variant") else r["target_id"]
        lines.append(f"{name:<20} {r['threads']:>5} {r['run_id'][:40]:<40} {tps:>12} {delta:>8} {ci:>17}  "
                     f"{r['verdict']}{flag}")
        if r.get("caveats"):
            lines.append(f"{'':<20} {'':>5} {cav.words(r['caveats'])}")
    for c in doc.get("change_points") or []:
        lines.append(f"change point in {c['series']}: from run {c['run_id']} {c['pct']:+.1f}% "
                     + (f"[{c['ci_low_pct']:+.1f}, {c['ci_high_pct']:+.1f}]%" if c.get("ci_low_pct") is not None
                        else "(interval: too few runs)")
                     + f" ({c['runs_before']} runs before, {c['runs_after']} after)"
                     + (f" ({c['change']} at {c['relative']['confidence']:.2%}: the newest runs against the "
                        "stable runs before)" if c.get("method") == "newest runs" else "")
                     + (f"  <-- {'REGRESSION' if c.get('change') == 'regression' else c.get('change')} "
                        "(the newest run is after it)" if c in doc.get("latest_regressions", []) else ""))
    found = doc.get("multiplicity") or {}
    if found.get("comparisons"):
        lines.append(str(found["words"]))
    return "\n".join(lines) + "\n"
