#!/usr/bin/env python3
"""How fine a difference can a verdict resolve, and how often does it cry wolf? (Benchmark, not a test:
prints ``name=value`` figures.) Everything is judged by benchfleet's own code (benchfleet.stats.verdict,
benchfleet.stats.history), on noise measured here rather than assumed.

1. **A local A/A run of at least 8 repetitions** (``--repetitions``, default 8): the spec
   workloads/comparisons/aa-resolution.yaml (two identical variants on one pinned server, interleaved in 2
   blocks per step, 30 s warm-up so the first checkpoint flushing lands before the blocks) with its
   repetitions raised, through ``benchfleet run``. From its blocks, the variance components of log tps
   (benchfleet.stats.resolution.components: between blocks of a repetition, between repetitions, and the
   paired A/A repetition's log ratio), each with a 95% bootstrap interval (repetitions resampled with
   replacement, ``--boot`` times): ``sd_block_pct_t<threads>=``, ``sd_repetition_pct_t<threads>=``,
   ``sd_paired_pct_t<threads>=``.

2. **Simulation on resampled real residuals**, through ``compare_units(..., "block")`` (what ``results``
   runs): each simulated comparison has 3 repetitions; each repetition takes the block log ratios of a real
   repetition drawn at random (centered on the run's mean: an A/A has no true effect; kept together, so the
   blocks of one repetition stay as alike or unlike as they were; a shrunk smoothed bootstrap of their
   levels, so a small pool gives no ties: ``smoothed_draw``), plus a between-repetition effect drawn
   from N(0, tau). ``aa_false_positive_rate_tau2=``: the share called faster or slower at tau = 2% (target
   0.03-0.07); ``aa_false_positive_rate_tau0=`` beside it. This tests the verdict against the machine's
   real noise, not against the normal noise its t interval assumes; the residuals are resampled from a
   handful of repetitions (their number is printed), so a heavy tail in them is in the rate.

3. **Histories at the study's spread** (DESIGN.md: 3 repetitions on separate EC2 hosts, CV between
   repetitions 1.8% median, 3.8% p90; each simulated history draws its CV from a lognormal through those
   two) **plus the between-run noise** measured here (``sd_run`` of the home's A/A runs, which needs two
   of them; else 0, said in ``history_run_sd_pct=``; ``--run-sd-pct`` sets it): 20 runs of 3
   repetitions, judged by the product's own ``benchfleet.stats.history.history`` (threshold 10%) as a
   scheduled history grows, after each run, as ``results --history`` would be run. The signal counted
   is the user-facing one, its exit code: exit 1 (``latest_regressions``: the newest run lies after a
   change flagged ``regression`` or ``possible regression`` by the newest-runs test of
   benchfleet.stats.newest, at the look confidence that shares 5% among 20 runs x 3 tests).
   ``history_false_alarm_rate=``: the share of A/A histories that exit 1 after any of their runs
   (target <= 0.05); ``history_detection_rate_10pct=``: with a true 10% drop from run 11 on, the share
   that exit 1 after run 11 or 12 (target >= 0.9); ``..._within5=``: after run 11 to 15.
   ``history_rows_flagged_*``: the same for a row of the newest run flagged ``regression`` or ``possible
   regression`` against the run before (printed, never the exit code): what this script counted before
   the change points were merged (0.035 / 0.889 at seed 37), and why the product does not exit on it:
   with between-run noise it cries wolf (``--run-sd-pct 2``: 0.18 of A/A histories; 5: 0.42).
   Before the newest-runs test (E-Divisive alone, exit 1 on a change point whose Welch estimate over run
   means lay beyond -10% with its interval below 0) detection within 2 runs was 0.37-0.39 (1000
   histories, seed 37; 0.43 of 300, within 5 runs 0.65, false alarms 0.000); with it, 0.95 of the same
   300 (within 5 runs 0.97) and false alarms 0.003 (1 of 300). Before, after run 11 one run lay after
   the drop and E-Divisive's permutation test cannot find a change in a lone last point (p >= ~2/11:
   0.005 found); after run 12 it found 0.92, the
   Welch interval (df ~ 1) lay below 0 in 0.75 and the estimate beyond -10% in 0.44 (a true drop of
   exactly the threshold is beyond it half the time, by construction). The newest-runs test has the
   reference's n - 1 df instead, and fails on ``possible regression`` too. Its trade-off, measured
   (seed 37, no between-run noise; per-look one-sided alpha: false alarm / detection within 2 runs):
   0.05: 0.043 / 0.990; 0.01: 0.033 / 0.993; 0.0025: 0.007 / 0.977; 0.00125: 0.003 / 0.967; 0.0005:
   0.000 / 0.947 (300 histories each, the newest 1 and 2 runs only). The product takes 5% / (20 x 3):
   the Bonferroni share of the family rate, not a point picked from this curve. The study measured
   host-to-host spread only: a history whose runs also differ by time of day is noisier than this
   (``--run-sd-pct 2``, 150 histories: false alarms 0.047, detection within 2 runs 0.81, within 5 runs
   0.96: below the target within 2 runs, the price of a false-alarm rate held at 5%).

4. **A known host effect, injected here**: the same A/A spec with ``--repetitions`` repetitions, while a
   CPU hog pinned to the server's CPU burns a different share of it in each repetition (0, 60, 30, 90%,
   repeating; switched as the run starts each repetition's server). Both variants of a repetition share
   its hog, as variants on one host share that host's speed; two targets on separate hosts would not.
   ``injected_host_paired_halfwidth_pct=``: the paired verdict's half-width (mean over thread counts);
   ``injected_host_welch_halfwidth_pct=``: the same measurements as two separate targets (Welch on each
   side's per-repetition tps). ``injected_host_effect_pct_t<threads>=``: the spread the hog made (CV of
   the baseline's per-repetition tps), so the gain is read against it.

Findings of the script before issue 37 (write-back bursts, 3-6 s episodes of slow seconds, the first
checkpoint flushing of each fresh server splitting 1-thread block pairs: why aa-resolution warms up 30 s)
are in its docstring at commit c5d848a; ``flush_onset_in_warmup=k/n`` still says in how many repetitions
that flushing began within the warm-up.

Local figures depend on what else this 2-core machine runs: ``load_avg_1m_before=``/``_after=`` are
printed around each run. ``--home DIR`` reads the newest runs of both specs from a benchfleet home instead
of running them (``--keep DIR`` keeps the runs this invocation makes there). ``BENCHFLEET_LAMBDAS`` points
the script at another copy of benchfleet's code (the code before a change, for before/after figures).

    .venv/bin/python tests/perf/resolution.py [--repetitions 8] [--sims 4000] [--histories 1000] [--home D]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.environ.get("BENCHFLEET_LAMBDAS") or str(REPO / "lambdas"))

from benchfleet.stats.history import Point, history  # noqa: E402
from benchfleet.stats.verdict import compare_units, relative_difference  # noqa: E402

# The published study (Percona, 2021, 3 repetitions on separate EC2 hosts): CV between repetitions.
STUDY_CV_MEDIAN, STUDY_CV_P90 = 0.018, 0.038
Z90 = statistics.NormalDist().inv_cdf(0.90)
SPEC = REPO / "workloads" / "comparisons" / "aa-resolution.yaml"
# The share of the server's CPU the hog burns in repetition r (cycled): the injected host effect.
HOG_DUTY = (0.0, 0.6, 0.3, 0.9)
HISTORY_RUNS, DROP_AT = 20, 11
# The counter whose first rise marks the server's first checkpoint flushing (aa-resolution.yaml).
FLUSHED = "Innodb_buffer_pool_pages_flushed"


def flush_onsets(rows: list[dict[str, object]]) -> dict[int, float | None]:
    """Per repetition, seconds from its warm-up's first status reading to the first reading whose
    ``FLUSHED`` rose (None: it never did within the run); {} when the run did not read ``FLUSHED``."""
    mine = [r for r in rows if r.get("counter") == FLUSHED]
    onsets: dict[int, float | None] = {}
    for rep in sorted({int(str(r["repetition"])) for r in mine}):
        readings = sorted((str(r["time"]), r) for r in mine if int(str(r["repetition"])) == rep)
        start = next((t for t, r in readings if r.get("phase") == "warmup"), readings[0][0])
        first = next((t for t, r in readings if float(str(r.get("rate") or 0)) > 0), None)
        onsets[rep] = None if first is None else (_seconds(first) - _seconds(start))
    return onsets


def _seconds(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


# ---- the local runs --------------------------------------------------------------------------------

def spec_with(repetitions: int, suffix: str, spec: Path) -> Path:
    """The A/A spec with ``repetitions`` and a name of its own (``<name>-<suffix>``), in a temporary file."""
    doc = yaml.safe_load(spec.read_text())
    doc["repetitions"] = repetitions
    doc["name"] = f"{doc['name']}-{suffix}"
    out = Path(tempfile.mkdtemp(prefix="bf-resolution-spec-")) / f"{doc['name']}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


HOG = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[2])})
path = sys.argv[1]
while True:
    try:
        duty = float(open(path).read() or 0)
    except (OSError, ValueError):
        duty = 0.0
    start = time.monotonic()
    while time.monotonic() - start < 0.1 * duty:
        pass
    time.sleep(max(0.0, 0.1 * (1 - duty)))
"""


def run_spec(home: Path, spec: Path, inject_on: int | None) -> str | None:
    """``benchfleet run spec`` with ``home``; with ``inject_on`` (a CPU), a hog on that CPU whose duty
    changes as each repetition's server starts (HOG_DUTY). Why not, or None."""
    env = {**os.environ, "BENCHFLEET_HOME": str(home), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    duty = Path(tempfile.mkdtemp(prefix="bf-hog-")) / "duty"
    duty.write_text("0")
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(duty), str(inject_on)]) if inject_on is not None else None
    try:
        proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "benchfleet"), "run", str(spec)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        tail: list[str] = []
        for line in proc.stdout:
            tail = [*tail, line.rstrip()][-5:]
            if " repetition " in line and "starting MariaDB" in line:
                rep = int(line.split(" repetition ")[1].split(":")[0])
                duty.write_text(str(HOG_DUTY[(rep - 1) % len(HOG_DUTY)]))
        if proc.wait() != 0:
            return f"not run ({(tail or ['no output'])[-1][:200]})"
        return None
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def newest_run(store: Any, name: str) -> str | None:
    mine = [r for r in store.runs() if r["name"] == name and r["status"] == "succeeded"]
    return max(mine, key=lambda r: str(r["started_at"]))["run_id"] if mine else None


def block_units(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Every measured block: threads, repetition, block, variant, tps (as every verdict computes a step's
    tps, its ramp left out). Only what the store and stats had before issue 37, so BENCHFLEET_LAMBDAS can
    point at older code."""
    from benchfleet.stats.step_sql import step_stats_in_store
    from benchfleet.stats.steps import step_tps

    steps = {(s["target_id"], int(s["repetition"]), s["step"]): s for s in step_stats_in_store(store, run_id)}
    return [{"run": run_id, "threads": int(s["threads"]), "repetition": int(s["repetition"]), "block": s.get("block"),
             "variant": s.get("variant") or "",
             "tps": step_tps(s, steps.get((s["target_id"], int(s["repetition"]), s["step"]), {}))}
            for s in store.summaries(run_id) if s.get("phase") == "measure"]


def by(units: Sequence[Mapping[str, Any]], key: str) -> dict[Any, list[Mapping[str, Any]]]:
    out: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for u in units:
        out[u[key]].append(u)
    return dict(sorted(out.items()))


# ---- 1. components with bootstrap intervals --------------------------------------------------------

def bootstrap(units: Sequence[Mapping[str, Any]], figure: Callable[[list[Mapping[str, Any]]], float | None],
              rng: random.Random, times: int) -> tuple[float | None, float | None, float | None]:
    """``figure`` of the units, and its 95% percentile bootstrap interval over repetitions resampled with
    replacement (each drawn repetition renamed, so a repetition drawn twice counts twice)."""
    reps = by(units, "repetition")
    keys = list(reps)
    found = []
    for _ in range(times):
        sample: list[Mapping[str, Any]] = [{**u, "repetition": i} for i, k in enumerate(rng.choice(keys) for _ in keys)
                                           for u in reps[k]]
        value = figure(sample)
        if value is not None:
            found.append(value)
    found.sort()
    if not found:
        return figure(list(units)), None, None
    return figure(list(units)), found[int(0.025 * len(found))], found[min(len(found) - 1, int(0.975 * len(found)))]


# ---- 2. A/A on resampled real residuals ---------------------------------------------------------------

def repetition_residuals(units: Sequence[Mapping[str, Any]]) -> list[dict[int, float]]:
    """Per real repetition, its blocks' A/A log ratios (block -> ln(second variant / first)), centered on
    the mean over all repetitions: an A/A has no true effect."""
    variants = sorted({str(u["variant"]) for u in units})
    if len(variants) != 2:
        return []
    out = []
    for rep in by(units, "repetition").values():
        tps = {(str(u["variant"]), int(u["block"] or 0)): float(u["tps"]) for u in rep if u["tps"]}
        ratios = {b: math.log(tps[(variants[1], b)] / tps[(variants[0], b)])
                  for (v, b) in tps if v == variants[0] and (variants[1], b) in tps}
        if ratios:
            out.append(ratios)
    center = statistics.fmean(statistics.fmean(r.values()) for r in out) if out else 0.0
    return [{b: x - center for b, x in r.items()} for r in out]


def smoothed_draw(pool: Sequence[dict[int, float]], rng: random.Random) -> dict[int, float]:
    """One real repetition's block log ratios, drawn with replacement, its level (the blocks' mean) moved
    by Gaussian noise of Silverman's bandwidth and shrunk back to the pool's spread (a shrunk smoothed
    bootstrap): from a pool of a few repetitions a plain draw repeats one repetition within a comparison
    (identical log ratios, an interval too narrow: 0.08-0.09 A/A claims here) and a draw without
    replacement makes the draws negatively correlated (0.02); neither is the verdict's doing. The
    blocks keep their deviations from their repetition's level, so the blocks of one repetition stay as
    alike or unlike as they were."""
    levels = [statistics.fmean(p.values()) for p in pool]
    sd = statistics.stdev(levels) if len(levels) > 1 else 0.0
    h = 1.06 * sd * len(levels) ** -0.2
    shrink = 1 / math.sqrt(1 + (h / sd) ** 2) if sd > 0 else 1.0
    i = rng.randrange(len(pool))
    level = (levels[i] + rng.gauss(0, h)) * shrink
    return {b: x - levels[i] + level for b, x in pool[i].items()}


def aa_rate(pools: Sequence[list[dict[int, float]]], tau: float, sims: int, rng: random.Random, reps: int = 3) -> float:
    """The share of simulated A/A comparisons (``reps`` repetitions, real repetitions' block residuals,
    a between-repetition effect of spread ``tau``) the product calls faster or slower."""
    claims = 0
    for i in range(sims):
        pool = pools[i % len(pools)]
        cand: dict[tuple[int, int], float] = {}
        base: dict[tuple[int, int], float] = {}
        for r in range(1, reps + 1):
            effect = rng.gauss(0, tau)
            for b, x in smoothed_draw(pool, rng).items():
                base[(r, b)] = 1000.0
                cand[(r, b)] = 1000.0 * math.exp(effect + x)
        claims += compare_units(cand, base, "block").verdict in ("faster", "slower")
    return claims / sims


# ---- 3. histories at the study's spread --------------------------------------------------------------

def host_cv(rng: random.Random) -> float:
    """A history's host-to-host CV: lognormal with the study's median and 90th percentile."""
    return math.exp(rng.gauss(math.log(STUDY_CV_MEDIAN), math.log(STUDY_CV_P90 / STUDY_CV_MEDIAN) / Z90))


def history_points(rng: random.Random, drop: float, run_sd: float, reps: int = 3) -> list[Point]:
    """One simulated 20-run history: each run on hosts of its own (its repetitions spread by a host CV
    drawn per history, host_cv), the whole run moved by the between-run noise ``run_sd`` (log scale);
    from run DROP_AT on, tps is 1 - drop."""
    cv = host_cv(rng)
    points = []
    for k in range(1, HISTORY_RUNS + 1):
        level = 1000.0 * (1 - drop if k >= DROP_AT else 1.0) * math.exp(rng.gauss(0, run_sd))
        values = tuple(level * math.exp(rng.gauss(0, cv)) for _ in range(reps))
        points.append(Point(f"r{k:02d}", f"2026-11-{k:02d}T02:00:00Z", "t", 8, statistics.fmean(values),
                            values=values))
    return points


def alarms(points: Sequence[Point], upto: int) -> tuple[bool, bool]:
    """What ``results --history`` says once the first ``upto`` runs are stored: (exits 1: the newest run
    lies after a change point that is a drop beyond the threshold, ``latest_regressions``; the newest
    run's row is flagged ``regression`` or ``possible regression`` against the run before)."""
    doc = history("aa", points[:upto])
    newest = f"r{upto:02d}"
    return bool(doc["latest_regressions"]), any(r["run_id"] == newest for r in doc["regressions"])


def history_rates(histories: int, run_sd: float, rng: random.Random) -> dict[str, float]:
    """As a scheduled history grows run by run, what the user sees after each run. A/A: the share of
    histories that exit 1 after any of their 20 runs (``exit``), or flag the newest run's row after any
    (``row``). A true drop of 10 % from run DROP_AT: the share that exit 1 (flag the row) after run
    DROP_AT or DROP_AT + 1, i.e. within 2 runs of the drop (``within5``: exit 1 after DROP_AT to DROP_AT + 4)."""
    aa_exit = aa_row = hit_exit = hit_row = hit_late = 0
    for _ in range(histories):
        points = history_points(rng, 0.0, run_sd)
        seen = [alarms(points, k) for k in range(2, HISTORY_RUNS + 1)]
        aa_exit += any(e for e, _ in seen)
        aa_row += any(r for _, r in seen)
        points = history_points(rng, 0.10, run_sd)
        seen = [alarms(points, k) for k in range(DROP_AT, DROP_AT + 5)]
        hit_exit += any(e for e, _ in seen[:2])
        hit_row += any(r for _, r in seen[:2])
        hit_late += any(e for e, _ in seen)
    return {"history_false_alarm_rate": aa_exit / histories, "history_detection_rate_10pct": hit_exit / histories,
            "history_detection_rate_10pct_within5": hit_late / histories,
            "history_rows_flagged_false_alarm_rate": aa_row / histories,
            "history_rows_flagged_detection_rate_10pct": hit_row / histories}


# ---- main --------------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=8, help="repetitions of each local run (at least 8)")
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--histories", type=int, default=1000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--home", type=Path, help="read the newest runs from this home instead of running them")
    parser.add_argument("--keep", type=Path, help="run here (a benchfleet home) and keep the runs")
    parser.add_argument("--run-sd-pct", type=float,
                        help="the histories' between-run noise, %% (default: sd_run of the home's A/A runs; 0 below 2)")
    args = parser.parse_args()
    if args.repetitions < 8:
        parser.error("--repetitions: at least 8 (the between-repetition spread needs them)")
    rng = random.Random(args.seed)

    def show(name: str, value: object) -> None:
        print(f"{name}={value:.4f}" if isinstance(value, float) else f"{name}={value}", flush=True)

    aa_spec, host_spec = (spec_with(args.repetitions, s, args.spec) for s in ("aa", "host"))
    home = args.home or args.keep or Path(tempfile.mkdtemp(prefix="bf-resolution-"))
    if args.home is None:
        show("cpus", os.cpu_count())
        for spec, inject in ((aa_spec, None), (host_spec, 0)):
            show(f"load_avg_1m_before_{spec.stem}", os.getloadavg()[0])
            why = run_spec(home, spec, inject)
            show(f"load_avg_1m_after_{spec.stem}", os.getloadavg()[0])
            if why:
                show(f"local_run_{spec.stem}", why)
    from benchfleet.local.store import open_store
    from benchfleet.stats import run_comparison

    with open_store(home, write=False) as store:
        aa_run, host_run = newest_run(store, aa_spec.stem), newest_run(store, host_spec.stem)
        aa_units = block_units(store, aa_run) if aa_run else []
        # Every A/A run in the home: their number of runs says the between-run component (sd_run).
        all_aa = [u for r in store.runs() if r["name"] == aa_spec.stem and r["status"] == "succeeded"
                  for u in block_units(store, r["run_id"])]
        status = [r for batch in store.status_batches(aa_run) for r in batch] if aa_run else []
        host_doc = run_comparison(store, host_run) if host_run else None
    show("aa_run", aa_run or f"none in {home}")
    onsets = flush_onsets([{**r, "time": str(r["time"].isoformat() if hasattr(r["time"], "isoformat") else r["time"])}
                           for r in status])
    if onsets:  # where the first checkpoint flushing fell (aa-resolution.yaml: in the warm-up, or blocks split)
        warmup = float(yaml.safe_load(args.spec.read_text())["workload"]["warmup_s"])
        show("flush_onset_in_warmup", f"{sum(o is not None and o < warmup for o in onsets.values())}/{len(onsets)}")

    # 1. Components (the product's estimator when this code has it).
    try:
        from benchfleet.stats.resolution import components
    except ImportError:
        components = None  # type: ignore[assignment]
    if components is not None:
        for threads, units in by(aa_units, "threads").items():
            for key in ("sd_block", "sd_repetition", "sd_paired"):
                def figure(sample: list[Mapping[str, Any]], key: str = key) -> float | None:
                    value = components(sample)[key]
                    return None if value is None else 100 * float(value)

                value, low, high = bootstrap(units, figure, rng, args.boot)
                show(f"{key}_pct_t{threads}", "n/a" if value is None else
                     f"{value:.2f} [{low:.2f}, {high:.2f}]" if low is not None and high is not None else f"{value:.2f}")

    # 2. A/A through the product's verdict on the real residuals.
    pools = [p for p in (repetition_residuals(u) for u in by(aa_units, "threads").values()) if len(p) >= 2]
    if pools:
        show("residual_repetitions", "+".join(str(len(p)) for p in pools))
        show("aa_false_positive_rate_tau0", aa_rate(pools, 0.0, args.sims, rng))
        show("aa_false_positive_rate_tau2", aa_rate(pools, 0.02, args.sims, rng))
    else:
        show("aa_false_positive_rate_tau2", "n/a (no A/A run with two variants)")

    # 3. Histories, at the study's spread plus the between-run noise measured here (sd_run over the home's
    # A/A runs, the mean over thread counts), or --run-sd-pct.
    run_sds = [components(u)["sd_run"] for u in by(all_aa, "threads").values()] if components is not None else []
    measured = [float(v) for v in run_sds if v is not None]
    if args.run_sd_pct is not None:
        run_sd, source = args.run_sd_pct / 100, "--run-sd-pct"
    elif measured:
        run_sd, source = statistics.fmean(measured), f"sd_run of {len({u['run'] for u in all_aa})} A/A runs"
    else:
        run_sd, source = 0.0, (f"not measured: {len({u['run'] for u in all_aa})} A/A run(s) here, sd_run needs 2; "
                               "the study's host-to-host spread only")
    show("history_run_sd_pct", f"{100 * run_sd:.2f} ({source})")
    for name, rate in history_rates(args.histories, run_sd, rng).items():
        show(name, rate)

    # 4. The injected host effect: the product's paired verdict against Welch on the same figures.
    if host_doc is None:
        show("injected_host_paired_halfwidth_pct", f"n/a (no run of {host_spec.stem})")
        return 0
    paired, welch = [], []
    for row in host_doc["rows"]:
        rel = row.get("relative")
        if not rel or rel.get("design") != "paired" or rel.get("halfwidth_pct") is None:
            continue
        base = next(r for r in host_doc["rows"] if r["threads"] == row["threads"] and r.get("relative") is None)
        apart = relative_difference(row["tps"]["values"], base["tps"]["values"])
        if apart.halfwidth_pct is None:
            continue
        paired.append(float(rel["halfwidth_pct"]))
        welch.append(apart.halfwidth_pct)
        values = base["tps"]["values"]
        show(f"injected_host_effect_pct_t{row['threads']}", 100 * statistics.stdev(values) / statistics.fmean(values))
        levels: dict[float, list[float]] = defaultdict(list)
        for i, v in enumerate(values):  # repetition i + 1 ran beside the hog at HOG_DUTY[i % 4]
            levels[HOG_DUTY[i % len(HOG_DUTY)]].append(v)
        show(f"injected_host_tps_by_hog_t{row['threads']}",
             " ".join(f"{d:.0%}:{statistics.fmean(v):.0f}" for d, v in sorted(levels.items())))
        show(f"injected_host_paired_pct_t{row['threads']}", f"{rel['pct']:+.2f} [{rel['ci_low_pct']:+.2f}, "
                                                            f"{rel['ci_high_pct']:+.2f}] {rel['words']}")
    if paired:
        show("injected_host_paired_halfwidth_pct", statistics.fmean(paired))
        show("injected_host_welch_halfwidth_pct", statistics.fmean(welch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
