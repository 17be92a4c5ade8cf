"""Run-to-run noise: what a verdict between two runs must add to the spread of their repetitions.

A run's interval sees only its own repetitions, minutes apart on one machine (or one fleet). Two runs
hours apart differ by more: another moment of the host, the cloud, the disk's garbage collection. The
same demo run twice on a busy machine was called 57.6 % slower with an interval of its repetitions
alone. So a between-run verdict (``compare``, ``report --against``, ``results --history``) is taken
on the log of the ratio of the two runs' means with variance

    se_within^2 + 2 sigma_run^2

where se_within^2 is Welch's (the repetitions of both runs, :func:`benchfleet.stats.verdict.relative_difference`)
and sigma_run^2 the between-run component of that series (spec name x target x variant x threads x
tps), estimated from the store's earlier runs of the same spec by the mean squared successive
difference of their log means (half of it is the run-to-run variance; a difference across a change
point is the change and is left out, and a level shift no detector found costs one difference, not
the whole estimate) less what their own repetitions explain. Degrees of freedom by
Welch-Satterthwaite over the two parts (the noise's df: runs - 1). A stored calibration (an A/A series
of runs of the same spec on this machine) gives sigma_run where it exists.

Fewer than MIN_RUNS runs of the series and no calibration: the noise is unknown. The verdict is then
the repetitions' interval alone and its words say so ("run-to-run noise not yet measured: 2 runs"):
never a plain faster/slower. Standard library only (Lambdas import benchfleet.stats).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from benchfleet.stats.tdist import t_quantile
from benchfleet.stats.verdict import CONFIDENCE, DEFAULT_MARGIN_PCT, MIN_REPETITIONS, _finish, relative_difference

# Runs of a series (so MIN_RUNS - 1 successive differences) before its run-to-run noise counts as measured.
MIN_RUNS = 4


@dataclass(frozen=True)
class RunNoise:
    """The between-run component of one series: ``runs`` the runs it was estimated from, ``sd_log``
    sigma_run on the log scale (None: not yet measured), ``df`` its degrees of freedom, ``source``
    ``history`` (earlier runs in the store) or ``calibration``."""

    runs: int
    sd_log: float | None = None
    df: float | None = None
    source: str = "history"

    @property
    def measured(self) -> bool:
        return self.sd_log is not None

    @property
    def sd_pct(self) -> float | None:
        return None if self.sd_log is None else round(100 * math.expm1(self.sd_log), 3)

    def words(self) -> str:
        if self.sd_log is None:
            return f"run-to-run noise not yet measured: {self.runs} run{'s' if self.runs != 1 else ''}"
        return f"run-to-run noise ±{self.sd_pct:.1f}% ({self.source}, {self.runs} runs)"


UNKNOWN = RunNoise(0)


def estimate(runs: Sequence[Sequence[float]], source: str = "history", cuts: Sequence[int] = ()) -> RunNoise:
    """sigma_run of one series from its runs' per-repetition figures, in time order (module
    docstring). Runs without a positive figure are left out. ``cuts``: indices (into the runs with a
    figure) where a change point starts a new level: the difference across one is the change, not
    noise, and is left out. Measured from MIN_RUNS - 1 differences on."""
    logs: list[float] = []
    within: list[float] = []
    for values in runs:
        xs = [float(v) for v in values if v is not None and v > 0]
        if not xs:
            continue
        mean = statistics.fmean(xs)
        logs.append(math.log(mean))
        within.append(statistics.variance(xs) / (mean * mean) / len(xs) if len(xs) > 1 else 0.0)
    k = len(logs)
    diffs = [(logs[i] - logs[i - 1]) ** 2 for i in range(1, k) if i not in cuts]
    if len(diffs) < MIN_RUNS - 1:
        return RunNoise(k, source=source)
    mssd = math.fsum(diffs) / (2 * len(diffs))
    return RunNoise(k, math.sqrt(max(0.0, mssd - statistics.fmean(within))), float(len(diffs)), source)


def between_runs(candidate: Sequence[float], baseline: Sequence[float], noise: RunNoise,
                 confidence: float = CONFIDENCE, margin_pct: float = DEFAULT_MARGIN_PCT,
                 higher_is_better: bool = True) -> dict[str, Any]:
    """The verdict of one run's repetitions against another run's, with ``noise`` (module docstring),
    as the ``relative`` dict every document carries, plus ``run_to_run`` (runs, sd_pct, source,
    measured, words)."""
    rel = relative_difference(candidate, baseline, confidence, higher_is_better, margin_pct)
    info = {"measured": noise.measured, "runs": noise.runs, "sd_pct": noise.sd_pct, "source": noise.source,
            "words": noise.words()}
    if not noise.measured or noise.sd_log is None:
        if rel.verdict in ("insufficient data",):
            return {**asdict(rel), "run_to_run": info}
        return {**asdict(replace(rel, words=f"{rel.words} (repetitions only; {noise.words()})")), "run_to_run": info}
    if rel.pct is None or rel.pct <= -100 or rel.ci_high_pct is None:
        return {**asdict(rel), "run_to_run": info}
    log_ratio = math.log1p(rel.pct / 100)
    # Welch's part, read back from its interval: half-width = t(df) * se.
    half_w = math.log1p(rel.ci_high_pct / 100) - log_ratio
    var_w = (half_w / t_quantile(0.5 + confidence / 2, max(1.0, rel.df))) ** 2 if rel.df else 0.0
    var_r = 2 * noise.sd_log ** 2
    total = var_w + var_r
    if total <= 0:
        return {**asdict(rel), "run_to_run": info}
    parts = (var_w ** 2 / rel.df if rel.df else 0.0) + (var_r ** 2 / noise.df if noise.df else 0.0)
    df = total ** 2 / parts if parts > 0 else None
    half = t_quantile(0.5 + confidence / 2, max(1.0, df)) * math.sqrt(total) if df else 0.0
    enough = min(rel.repetitions) >= MIN_REPETITIONS
    widened = _finish(log_ratio, half, df, enough, confidence, margin_pct, higher_is_better, rel.repetitions,
                      lambda: None, rel.pct, "welch", None, None)
    return {**asdict(widened), "run_to_run": info}
