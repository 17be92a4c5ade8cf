"""Scales of a spec: ``full`` as written, ``smoke`` small enough to try any spec locally in a minute."""

from __future__ import annotations

from benchfleet.spec import LoadedSpec

SCALES = ("full", "smoke")


def apply_scale(loaded: LoadedSpec, scale: str) -> LoadedSpec:
    """The same comparison at another scale; the workload's shape (test, options, sweep) is kept."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: expected one of {', '.join(SCALES)}")
    if scale == "full":
        return loaded
    w = loaded.workload
    threads = sorted({t for t in (min(w.threads), max(w.threads)) if t <= 8} or {1})
    smoke = w.model_copy(update={
        "tables": min(w.tables, 2), "table_size": min(w.table_size, 2000),
        "prepare_threads": min(w.prepare_threads, 2), "warmup_s": min(w.warmup_s, 2),
        "threads": threads, "duration_s": min(w.duration_s, 5), "cooldown_s": 0})
    spec = loaded.spec.model_copy(update={"repetitions": 1})
    return loaded.model_copy(update={"workload": smoke, "spec": spec})
