"""What a real sysbench step's per-second samples must satisfy at any machine speed.

sysbench 1.0's reporting thread skips the reports it fell behind on and may lose the one due as
--time ends: on a loaded machine a 12 s step on one pinned CPU printed 1, 2, 5, 7, 8, 9, 11, 11, 12
(tests/sysbench_logs.py LOADED_SECONDS), and under a load of 20 a 5 s step printed 3 lines. Counting
lines (or asking for no gap) measures the machine, not benchfleet. What benchfleet owes is to keep
every report sysbench printed, in order, and to account for the seconds exactly: samples present,
samples expected from sysbench's total time, the seconds covered, and a lost final report flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def assert_per_second(seconds: Sequence[float], duration_s: float, accounting: Mapping[str, Any] | None = None,
                      every: float = 1.0) -> None:
    """``seconds``: the samples' timestamps of one step of ``duration_s`` reporting every ``every`` s,
    in the order stored. ``accounting``: the step's summary (``samples``, ``samples_expected``,
    ``covered_s``, ``missing_final``, ``total_time_s``) when the caller has it."""
    what = f"{list(seconds)} for a {duration_s} s step"
    assert seconds, f"no sample at all: {what}"
    assert list(seconds) == sorted(seconds), f"out of order: {what}"
    # sysbench's own timestamps: whole intervals since the step's start, none before the first
    # interval, none past the step (its last report can print one interval late when it was starved).
    assert all(s / every == round(s / every) and every <= s <= duration_s + every for s in seconds), what
    if accounting is None:
        return
    total, covered = float(accounting["total_time_s"]), max(seconds)
    assert duration_s <= total < duration_s + 60, f"total time {total} s: {what}"
    assert accounting["samples"] == len(seconds), (accounting, what)
    assert accounting["samples_expected"] == int(total // every), (accounting, what)
    assert accounting["covered_s"] == covered, (accounting, what)
    assert accounting["missing_final"] == (covered + every / 2 < total), (accounting, what)
