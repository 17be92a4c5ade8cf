"""Verdicts: the difference of a candidate to a baseline, its interval, the design that gave it, and
the words that say what the interval allows. Standard library only (Lambdas import it).

**Two designs.**

- ``paired``: both sides were measured in the same unit (the same host and repetition, or the same
  block of one step, or the same round of local servers run side by side). Each unit gives one log
  ratio d_i = ln(candidate_i / baseline_i); the interval is Student's t on their mean with n - 1
  degrees of freedom (a one-sample t interval of the d_i, ``scipy.stats.ttest_1samp`` on them gives
  the same), back-transformed. ``pct`` is then 100 (exp(mean d) - 1), the geometric mean of the
  per-unit ratios. What the units share (the host's speed, the minute's noise) cancels in each ratio.
  **The repetition is the unit**: the blocks of one repetition share its server and its moment, so
  they are not independent pairs. A step split into blocks gives one d per repetition, the mean of its
  blocks' log ratios (:func:`paired_blocks`), and the interval is taken over repetitions (df =
  repetitions - 1); ``blocks`` says how many block pairs went into them. Treating blocks as pairs made
  the interval too narrow whenever the effect varies between repetitions (an A/A false-positive rate
  of 0.146 instead of 0.05 at 2 % between-repetition variation, issue 37).
- ``welch``: the sides ran apart (separate hosts, runs on different days). The interval is Welch's
  on the log of the ratio of means (delta method: se^2 = s_c^2/(n_c m_c^2) + s_b^2/(n_b m_b^2),
  Welch-Satterthwaite degrees of freedom), back-transformed; ``pct`` = 100 (m_c / m_b - 1).
- ``prediction``: the newest runs of a history against the stable runs before them, the reference's
  scatter as the noise (:mod:`benchfleet.stats.newest`); ``repetitions`` counts runs there.

**Words.** With the interval [low, high] (in %) at ``confidence`` and the equivalence margin ±m
(``margin_pct``, a spec key, 5 by default; as a ratio, 1 - m/100 .. 1 + m/100):

- ``faster``/``slower``: the interval excludes 0 (for throughput, above 0 is faster). This is the
  only claim of a direction, so a comparison where nothing differs gets one by chance with
  probability 1 - confidence. When the whole interval also lies inside ±m, ``within_margin`` is
  True and the words add "within ±m%": the difference is real and smaller than the margin.
- ``equivalent``: the interval contains 0 and lies inside ±m: "equivalent within ±m%" (the same
  interval as every other verdict, so at 95% this is two one-sided tests at 2.5% each: stricter
  than the usual 90% TOST, never looser).
- ``inconclusive``: the interval contains 0 and reaches beyond ±m: "inconclusive (-60%..+190%)", both
  ends of the interval (asymmetric once back-transformed: one half-width would hide a side); never
  "no difference".
- ``too few repetitions``: the interval contains 0 and a side (welch) or the pairs (paired) number
  fewer than MIN_REPETITIONS: we cannot tell yet.
- ``insufficient data``: nothing to compare (no baseline figure, a baseline at 0).

``repetitions_needed`` (for inconclusive and too few): the repetitions per target (welch) or paired
repetitions (paired) at which an interval of this spread around this difference would be decisive,
i.e. exclude 0 or fit inside ±m. An estimate: the next repetitions have their own spread.

**Changes of one series** (a run against the run before, :func:`change_of`): a significant drop is a
``regression`` when its whole interval lies beyond -m, a ``possible regression`` when the interval
reaches past -m but its harmless end lies inside it (the drop is real; whether it matters is not yet
known), a ``drop`` when the whole interval lies inside ±m; rises likewise (``improvement``,
``possible improvement``, ``rise``). All words are made here (:func:`words_of`, :func:`change_of`),
so every command says them alike.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from benchfleet.stats.tdist import t_quantile

CONFIDENCE = 0.95
DEFAULT_MARGIN_PCT = 5.0
Design = Literal["paired", "welch", "prediction"]
Verdict = Literal["faster", "slower", "equivalent", "inconclusive", "too few repetitions", "insufficient data"]
# Below this many repetitions on a side (pairs when paired), an interval that contains 0 says "we cannot
# tell yet": with 2 the t quantile alone is 12.7 (df 1) and a 2x gap can look like noise.
MIN_REPETITIONS = 3
# Beyond this many repetitions per target, "how many would do" is not a plan anyone runs.
MAX_REPETITIONS_ADVISED = 50


@dataclass(frozen=True)
class Relative:
    """A verdict: the candidate's difference to the baseline (the ``relative`` of every comparison row
    in results, compare, history and the report). See the module docstring for the definitions.

    ``pct``: the difference in %; ``ci_low_pct``/``ci_high_pct``: its interval at ``confidence``
    (asymmetric: back-transformed from the log scale); ``halfwidth_pct``: 100 (exp(h) - 1) for the
    half-width h on the log scale, the "±x%" of the words; ``df``: degrees of freedom; ``verdict``:
    the category; ``words``: what the table prints; ``design``: ``paired``, ``welch`` or ``prediction``;
    ``unit``: what a pair is (``repetition`` or ``round``; None for welch); ``pairs``: how
    many units were paired; ``margin_pct``: the equivalence margin; ``within_margin``: the whole
    interval lies inside ±margin; ``repetitions``: (candidate, baseline) counts of repetitions (never
    of blocks); ``repetitions_needed``: see the module docstring; ``blocks``: the block pairs averaged
    into the repetitions' log ratios (None when the steps were not split into blocks)."""

    pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    df: float | None
    verdict: Verdict
    confidence: float = CONFIDENCE
    repetitions: tuple[int, int] = (0, 0)
    repetitions_needed: int | None = None
    design: Design = "welch"
    unit: str | None = None
    pairs: int | None = None
    halfwidth_pct: float | None = None
    margin_pct: float = DEFAULT_MARGIN_PCT
    within_margin: bool | None = None
    words: str = ""
    blocks: int | None = None


def _margin_logs(margin_pct: float) -> tuple[float, float]:
    if not 0 < margin_pct < 100:
        raise ValueError(f"margin_pct must be in (0, 100), not {margin_pct}")
    return math.log1p(-margin_pct / 100), math.log1p(margin_pct / 100)


def _decisive(log_ratio: float, half: float, margin_pct: float) -> bool:
    """An interval log_ratio ± half excludes 0 or lies inside the margin."""
    low, high = _margin_logs(margin_pct)
    return abs(log_ratio) > half or (low <= log_ratio - half and log_ratio + half <= high)


def pct_text(value: float) -> str:
    """A signed percentage as the words print it: "+190%", "-60%", "+1.5%" (one decimal below 10 %, where
    a whole number would round a small effect away; the sign as every other figure of the tables)."""
    return (f"{value:+.1f}" if abs(value) < 9.95 else f"{value:+.0f}") + "%"


def interval_text(low_pct: float, high_pct: float) -> str:
    """Both ends of an interval: "-60%..+190%"."""
    return f"{pct_text(low_pct)}..{pct_text(high_pct)}"


def words_of(verdict: Verdict, margin_pct: float, halfwidth_pct: float | None, within_margin: bool | None,
             repetitions_needed: int | None, ci_low_pct: float | None = None,
             ci_high_pct: float | None = None) -> str:
    """The words of a verdict, as the table, the report and the JSON say them. An inconclusive interval
    is named by both its ends (``ci_low_pct``/``ci_high_pct``): back-transformed from the log scale it
    is asymmetric, and "±x%" said one side of [-60%, +190%] only. "±x%" (the half-width on the log
    scale) is kept for a caller that has no ends."""
    m = f"{margin_pct:g}"
    if verdict in ("faster", "slower"):
        return f"{verdict}, within ±{m}%" if within_margin else verdict
    if verdict == "equivalent":
        return f"equivalent within ±{m}%"
    if verdict == "inconclusive":
        if ci_low_pct is not None and ci_high_pct is not None:
            return f"inconclusive ({interval_text(ci_low_pct, ci_high_pct)})"
        return f"inconclusive (±{halfwidth_pct:.1f}%)" if halfwidth_pct is not None else "inconclusive"
    if verdict == "too few repetitions":
        return f"too few reps: ~{repetitions_needed} each" if repetitions_needed else \
            f"too few reps: {MIN_REPETITIONS}+ each"
    return verdict


def _verdict(log_ratio: float, half: float, enough: bool, margin_pct: float,
             higher_is_better: bool) -> tuple[Verdict, bool]:
    """Category and within_margin of an interval log_ratio ± half."""
    low, high = _margin_logs(margin_pct)
    inside = low <= log_ratio - half and log_ratio + half <= high
    if log_ratio - half > 0:
        return ("faster" if higher_is_better else "slower"), inside
    if log_ratio + half < 0:
        return ("slower" if higher_is_better else "faster"), inside
    if not enough:
        return "too few repetitions", inside
    return ("equivalent" if inside else "inconclusive"), inside


def _finish(log_ratio: float, half: float, df: float | None, enough: bool, confidence: float,
            margin_pct: float, higher_is_better: bool, counts: tuple[int, int],
            needed: Callable[[], int | None], pct: float, design: Design, unit: str | None,
            pairs: int | None, blocks: int | None = None) -> Relative:
    verdict, inside = _verdict(log_ratio, half, enough, margin_pct, higher_is_better)
    reps = needed() if verdict in ("inconclusive", "too few repetitions") else None
    halfwidth = 100 * math.expm1(half)
    low, high = 100 * math.expm1(log_ratio - half), 100 * math.expm1(log_ratio + half)
    return Relative(pct, low, high, df, verdict, confidence, counts, reps, design, unit, pairs, halfwidth,
                    margin_pct, inside, words_of(verdict, margin_pct, halfwidth, inside, reps, low, high), blocks)


def _plain(pct: float | None, verdict: Verdict, confidence: float, counts: tuple[int, int], margin_pct: float,
           design: Design, unit: str | None = None, pairs: int | None = None,
           needed: int | None = None, blocks: int | None = None) -> Relative:
    """A verdict without an interval."""
    return Relative(pct, None, None, None, verdict, confidence, counts, needed, design, unit, pairs, None,
                    margin_pct, None, words_of(verdict, margin_pct, None, None, needed), blocks)


def relative_difference(candidate: Sequence[float], baseline: Sequence[float],
                        confidence: float = CONFIDENCE, higher_is_better: bool = True,
                        margin_pct: float = DEFAULT_MARGIN_PCT) -> Relative:
    """The ``welch`` verdict of two independent samples (module docstring). A candidate at 0 against a
    working baseline is -100 % and ``slower`` (nothing to take a log of, nothing to doubt)."""
    _margin_logs(margin_pct)
    nc, nb = len(candidate), len(baseline)
    counts = (nc, nb)
    if not candidate or not baseline:
        return _plain(None, "insufficient data", confidence, counts, margin_pct, "welch")
    mc, mb = statistics.fmean(candidate), statistics.fmean(baseline)
    if mb <= 0 or mc < 0:
        return _plain(None, "insufficient data", confidence, counts, margin_pct, "welch")
    if mc == 0:
        return _plain(-100.0, "slower" if higher_is_better else "faster", confidence, counts, margin_pct, "welch")
    log_ratio = math.log(mc / mb)
    pct = 100 * math.expm1(log_ratio)
    if nc < 2 or nb < 2:
        return _plain(pct, "too few repetitions", confidence, counts, margin_pct, "welch")
    vc = statistics.variance(candidate) / (mc * mc)
    vb = statistics.variance(baseline) / (mb * mb)
    se2 = vc / nc + vb / nb
    enough = min(nc, nb) >= MIN_REPETITIONS
    if se2 == 0:
        return _finish(log_ratio, 0.0, None, enough, confidence, margin_pct, higher_is_better, counts,
                       lambda: None, pct, "welch", None, None)
    df = se2 ** 2 / ((vc / nc) ** 2 / (nc - 1) + (vb / nb) ** 2 / (nb - 1))
    half = t_quantile(0.5 + confidence / 2, max(1.0, df)) * math.sqrt(se2)
    return _finish(log_ratio, half, df, enough, confidence, margin_pct, higher_is_better, counts,
                   lambda: repetitions_needed(log_ratio, vc, vb, confidence, margin_pct), pct, "welch", None, None)


def paired_difference(candidate: Sequence[float], baseline: Sequence[float], unit: str = "repetition",
                      confidence: float = CONFIDENCE, higher_is_better: bool = True,
                      margin_pct: float = DEFAULT_MARGIN_PCT) -> Relative:
    """The ``paired`` verdict of measurements aligned by unit (``candidate[i]`` and ``baseline[i]`` were
    measured in the same unit; see the module docstring). A unit with a figure at or below 0 on either
    side has no log ratio: the verdict is then ``insufficient data`` (or -100 % when the candidate is
    0 in every unit)."""
    _margin_logs(margin_pct)
    if len(candidate) != len(baseline):
        raise ValueError(f"paired figures must align: {len(candidate)} candidate, {len(baseline)} baseline")
    return _paired([[(c, b)] for c, b in zip(candidate, baseline, strict=True)], unit, confidence,
                   higher_is_better, margin_pct, None)


def paired_blocks(candidate: Mapping[tuple[int, int], float], baseline: Mapping[tuple[int, int], float],
                  confidence: float = CONFIDENCE, higher_is_better: bool = True,
                  margin_pct: float = DEFAULT_MARGIN_PCT) -> Relative:
    """The ``paired`` verdict of steps split into blocks, keyed by (repetition, block): each repetition's
    log ratio is the mean of those of the blocks both sides have in it, and the interval is taken over
    the repetitions (module docstring). ``unit`` is ``repetition``, ``repetitions`` and ``pairs`` count
    repetitions, ``blocks`` the block pairs."""
    _margin_logs(margin_pct)
    by_rep: dict[int, list[tuple[float, float]]] = {}
    for key in candidate:
        if key in baseline:
            by_rep.setdefault(int(key[0]), []).append((candidate[key], baseline[key]))
    return _paired([by_rep[r] for r in sorted(by_rep)], "repetition", confidence, higher_is_better, margin_pct,
                   sum(len(v) for v in by_rep.values()))


def _paired(units: Sequence[Sequence[tuple[float, float]]], unit: str, confidence: float, higher_is_better: bool,
            margin_pct: float, blocks: int | None) -> Relative:
    """The paired verdict of ``units``, each a list of (candidate, baseline) figures measured together
    (one per block of the unit, or one): d_i is the mean log ratio within unit i."""
    n = len(units)
    counts = (n, n)
    figures = [x for u in units for x in u]
    if n == 0 or any(b <= 0 for _, b in figures) or any(c < 0 for c, _ in figures):
        return _plain(None, "insufficient data", confidence, counts, margin_pct, "paired", unit, n, blocks=blocks)
    if all(c == 0 for c, _ in figures):
        return _plain(-100.0, "slower" if higher_is_better else "faster", confidence, counts, margin_pct,
                      "paired", unit, n, blocks=blocks)
    if any(c == 0 for c, _ in figures):
        return _plain(None, "insufficient data", confidence, counts, margin_pct, "paired", unit, n, blocks=blocks)
    d = [math.fsum(math.log(c / b) for c, b in u) / len(u) for u in units]
    mean = math.fsum(d) / n
    pct = 100 * math.expm1(mean)
    if n < 2:
        return _plain(pct, "too few repetitions", confidence, counts, margin_pct, "paired", unit, n, blocks=blocks)
    sd = statistics.stdev(d)
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n) if sd > 0 else 0.0
    return _finish(mean, half, float(n - 1), n >= MIN_REPETITIONS, confidence, margin_pct, higher_is_better, counts,
                   lambda: pairs_needed(mean, sd, confidence, margin_pct), pct, "paired", unit, n, blocks)


def repetitions_needed(log_ratio: float, cv2_candidate: float, cv2_baseline: float,
                       confidence: float = CONFIDENCE, margin_pct: float = DEFAULT_MARGIN_PCT) -> int | None:
    """The smallest n (repetitions per target, at least MIN_REPETITIONS) at which the Welch interval of a
    log ratio ``log_ratio`` with squared CVs ``cv2_candidate``/``cv2_baseline`` (the spread seen so far)
    is decisive: excludes 0 or lies inside ±margin. Half-width t(df(n)) sqrt((cv2_c + cv2_b) / n),
    df(n) = (n - 1)(cv2_c + cv2_b)^2 / (cv2_c^2 + cv2_b^2). None without spread or beyond
    MAX_REPETITIONS_ADVISED."""
    total = cv2_candidate + cv2_baseline
    if total <= 0:
        return None
    for n in range(MIN_REPETITIONS, MAX_REPETITIONS_ADVISED + 1):
        df = (n - 1) * total ** 2 / (cv2_candidate ** 2 + cv2_baseline ** 2)
        if _decisive(log_ratio, t_quantile(0.5 + confidence / 2, df) * math.sqrt(total / n), margin_pct):
            return n
    return None


def pairs_needed(mean_log_ratio: float, sd: float, confidence: float = CONFIDENCE,
                 margin_pct: float = DEFAULT_MARGIN_PCT) -> int | None:
    """As :func:`repetitions_needed` for the paired design: the smallest number of pairs n at which
    t(n - 1) sd / sqrt(n) around ``mean_log_ratio`` is decisive."""
    if sd <= 0:
        return None
    for n in range(MIN_REPETITIONS, MAX_REPETITIONS_ADVISED + 1):
        if _decisive(mean_log_ratio, t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n), margin_pct):
            return n
    return None


def design_words(relative: Mapping[str, Any] | Relative) -> str:
    """How a verdict was reached, as tables and the report name it: "Welch", "paired", or for steps split
    into blocks "paired (3 reps, 6 blocks)": the repetitions are the unit, the blocks refine them."""
    get = relative.get if isinstance(relative, Mapping) else lambda k: getattr(relative, k, None)
    if get("design") == "prediction":  # the newest runs of a history against the runs before (stats.newest)
        return "prediction interval"
    if get("design") != "paired":
        return "Welch"
    blocks, pairs = get("blocks"), get("pairs")
    return f"paired ({pairs} reps, {blocks} blocks)" if blocks and pairs is not None else "paired"


Change = Literal["regression", "possible regression", "drop", "improvement", "possible improvement", "rise",
                 "steady", "inconclusive", "too few repetitions", "no data"]


def change_of(rel: Relative, higher_is_better: bool = True) -> tuple[Change, str]:
    """A verdict read as the change of one series from one run to the next (module docstring, "Changes
    of one series"), with its words. The margin is the verdict's. A significant drop is a
    ``regression`` only when its whole interval lies beyond -margin; a significant -1 % whose interval
    reaches -12 % is a ``possible regression`` (it may be harmless), never a plain regression."""
    m = f"{rel.margin_pct:g}"
    if rel.verdict == "insufficient data":
        return "no data", "no data"
    if rel.verdict in ("faster", "slower"):
        up = (rel.verdict == "faster") == higher_is_better
        low, high = rel.ci_low_pct, rel.ci_high_pct
        if rel.within_margin:
            return ("rise", f"rise within ±{m}%") if up else ("drop", f"drop within ±{m}%")
        span = f" ({interval_text(low, high)})" if low is not None and high is not None else ""
        # The whole interval beyond the margin on the side of the change; without an interval (a side
        # at 0 tps) the change is as large as it gets.
        beyond = low is None or high is None or (low > rel.margin_pct if up else high < -rel.margin_pct)
        if up:
            return ("improvement", f"improvement beyond +{m}%{span}") if beyond else \
                ("possible improvement", f"possible improvement: real, may be under +{m}%{span}")
        return ("regression", f"regression beyond -{m}%{span}") if beyond else \
            ("possible regression", f"possible regression: real, may be within -{m}%{span}")
    if rel.verdict == "equivalent":
        return "steady", f"steady within ±{m}%"
    if rel.verdict == "inconclusive":
        return "inconclusive", rel.words
    return "too few repetitions", rel.words


def multiplicity(verdicts: Iterable[Mapping[str, Any] | Relative | None],
                 confidence: float = CONFIDENCE) -> dict[str, Any]:
    """How many comparisons a document makes and what chance alone would claim among them:
    ``comparisons`` (verdicts with an interval), ``claims`` (faster/slower among them),
    ``expected_false_claims`` = comparisons x (1 - confidence): the faster/slower verdicts expected if
    nothing differed at all, and ``chance_of_any_false_claim`` = 1 - confidence^comparisons (as if the
    comparisons were independent; those sharing a baseline are not quite, so read it as "about")."""
    count = claims = 0
    for v in verdicts:
        if v is None:
            continue
        low = v.ci_low_pct if isinstance(v, Relative) else v.get("ci_low_pct")
        verdict = v.verdict if isinstance(v, Relative) else v.get("verdict")
        if low is None:
            continue
        count += 1
        claims += verdict in ("faster", "slower")
    alpha = 1 - confidence
    expected = count * alpha
    return {"comparisons": count, "claims": claims, "confidence": confidence,
            "expected_false_claims": round(expected, 3),
            "chance_of_any_false_claim": round(1 - confidence ** count, 3) if count else 0.0,
            "words": (f"{count} comparison{'s' if count != 1 else ''} at {confidence:.0%}: if nothing differed, "
                      f"about {expected:.2g} would still be called faster or slower by chance"
                      + (f" ({1 - confidence ** count:.0%} chance of at least one)" if count > 1 else ""))
            if count else "no comparison with an interval"}


def compare_units(candidate: Mapping[Any, float], baseline: Mapping[Any, float], unit: str | None,
                  confidence: float = CONFIDENCE, higher_is_better: bool = True,
                  margin_pct: float = DEFAULT_MARGIN_PCT) -> Relative:
    """The verdict of two sides keyed by unit (e.g. repetition, or (repetition, block) when ``unit`` is
    ``block``: :func:`paired_blocks`): ``paired`` over the units both sides have when ``unit`` names what
    they share, else ``welch`` over all values."""
    if unit is None:
        return relative_difference(list(candidate.values()), list(baseline.values()), confidence,
                                   higher_is_better, margin_pct)
    if unit == "block":  # keyed by (repetition, block): the repetition stays the unit
        return paired_blocks(candidate, baseline, confidence, higher_is_better, margin_pct)
    common = [k for k in candidate if k in baseline]
    return paired_difference([candidate[k] for k in common], [baseline[k] for k in common], unit, confidence,
                             higher_is_better, margin_pct)
