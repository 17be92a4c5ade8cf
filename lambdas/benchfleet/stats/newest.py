"""The newest runs of a history against the stable runs before them: the test that lets ``results
--history`` see a drop one or two runs after it happened.

E-Divisive (:mod:`benchfleet.stats.changepoints`) finds a level shift from the runs on both sides of it; its
permutation test cannot find a change in a lone last run (p >= ~2/11 after 10 runs), so a scheduled
history learnt of a true 10 % drop two runs after it in 0.39 of simulated histories. Here the newest
``m`` runs (1, 2, or those since E-Divisive's last change: benchfleet.stats.history) are judged against the
**reference**: the runs before them since the last change E-Divisive finds among those runs. The
reference's own scatter is the measured between-run noise (run means differ by their repetitions' spread
and by whatever moves a whole run): under a stable level the mean of ``m`` new runs minus the
reference's mean, on the log scale, is Student's t with the reference's n - 1 degrees of freedom and
standard error s sqrt(1/m + 1/n) (the prediction interval of the mean of m new observations). That
interval is a ``Relative`` (design ``prediction``), read by the same words as every change of a series
(:func:`benchfleet.stats.verdict.change_of`).

**Multiplicity.** A scheduled history is judged after every run, each time with TESTS_PER_LOOK tails in
each series: many looks at data that has not changed. Each test is made at the family rate divided by
the tests (Bonferroni): FAMILY_ALPHA (5 %) over LOOKS runs x 3 tests x the history's series, one-sided
(only drops fail a history), so a history of LOOKS runs where nothing changes has at most a 5 % chance
of ever failing on this test. A history longer than LOOKS looks more often than that budget; the words
of the rule say so. Standard library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from benchfleet.stats.runnoise import MIN_RUNS
from benchfleet.stats.tdist import t_quantile
from benchfleet.stats.verdict import Relative, _finish

FAMILY_ALPHA = 0.05
# The looks the family rate is shared by: a nightly history judged after each of its runs, the
# horizon the product's false-alarm rate is measured over (tests/perf/resolution.py: 20-run histories).
LOOKS = 20
# The newest runs tested: a drop is seen the run it happens and, with twice the runs, the run after; the
# runs since the last change E-Divisive finds are a third test of each look (benchfleet.stats.history).
TAIL_RUNS = (1, 2)
TESTS_PER_LOOK = len(TAIL_RUNS) + 1
# Reference runs needed before a test: the run-to-run noise counts as measured from as many (runnoise).
MIN_REFERENCE = MIN_RUNS


def look_confidence(series: int = 1) -> float:
    """The two-sided confidence of each look's interval: its lower tail holds FAMILY_ALPHA shared by
    LOOKS x TESTS_PER_LOOK x ``series`` one-sided tests (module docstring)."""
    return 1 - 2 * FAMILY_ALPHA / (LOOKS * TESTS_PER_LOOK * max(1, series))


def newest_against(reference: Sequence[float], newest: Sequence[float], confidence: float,
                   margin_pct: float) -> Relative | None:
    """The newest runs' mean tps (one figure per run) against the reference runs' (module docstring);
    None when the reference has fewer than MIN_REFERENCE runs or a figure is not positive."""
    if len(reference) < MIN_REFERENCE or not newest or min([*reference, *newest]) <= 0:
        return None
    ref = [math.log(x) for x in reference]
    n, m = len(ref), len(newest)
    d = statistics.fmean(math.log(x) for x in newest) - statistics.fmean(ref)
    half = t_quantile(0.5 + confidence / 2, n - 1) * statistics.stdev(ref) * math.sqrt(1 / m + 1 / n)
    return _finish(d, half, float(n - 1), True, confidence, margin_pct, True, (m, n), lambda: None,
                   100 * math.expm1(d), "prediction", None, None)
