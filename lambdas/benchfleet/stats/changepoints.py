"""Change points of a history (``results --history``): E-Divisive from MongoDB's
``signal-processing-algorithms``, the detector their performance CI replaced per-run threshold alerts
with (Daly et al., ICPE 2020: the alerts drowned engineers in false positives). Kept as the library
made for it rather than written here; CLI only (numpy), no Lambda imports it.

E-Divisive's significance is a permutation test drawn from numpy's global generator: the draw is
seeded from the series itself, so one history always gives the same answer, and the caller's
generator state is put back.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from functools import lru_cache

PVALUE = 0.05
PERMUTATIONS = 200


def find(means: Sequence[float], pvalue: float = PVALUE, permutations: int = PERMUTATIONS) -> list[int]:
    """Indices i (sorted) where a new level starts in ``means`` (one figure per run, in time order),
    found on the log scale (a 10 % drop is the same change at any level). Fewer than 4 runs: none."""
    if len(means) < 4 or any(m <= 0 for m in means):
        return []
    return list(_find(tuple(float(m) for m in means), pvalue, permutations))


# One history asks for the same series more than once (its run-to-run noise, its change points, the runs
# before its newest ones), and a history grown run by run asks for every prefix again: the answer is a
# function of the figures (the permutations are seeded from them), so it is kept.
@lru_cache(maxsize=4096)
def _find(means: tuple[float, ...], pvalue: float, permutations: int) -> tuple[int, ...]:
    import numpy as np
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    logs = [math.log(m) for m in means]
    state = np.random.get_state()
    try:
        np.random.seed(zlib.crc32(repr([round(x, 9) for x in logs]).encode()))
        found = e_divisive(logs, pvalue=pvalue, permutations=permutations)
    finally:
        np.random.set_state(state)
    return tuple(sorted(int(i) for i in found if 0 < int(i) < len(means)))
