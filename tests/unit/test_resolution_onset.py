"""tests/perf/resolution.py's A/A design: where each fresh server's first checkpoint flushing began
(``flush_onsets``) and a spec that warms up past it and reads the counter that shows it.

Why it matters (the script's docstring has the figures): a 1-thread block measured before that onset
runs up to twice as fast as one after it, so an onset inside the measured blocks splits pairs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from benchfleet.spec.loading import load_spec
from benchfleet.spec.workload import Workload

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("resolution", REPO / "tests" / "perf" / "resolution.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("resolution", module)
    spec.loader.exec_module(module)
    return module


def _reading(rep: int, at: str, phase: str, rate: float | None, counter: str = "") -> dict[str, object]:
    return {"repetition": rep, "time": f"2026-11-27T02:00:{at}+00:00", "phase": phase, "rate": rate,
            "counter": counter}


def test_the_onset_is_the_first_rise_of_pages_flushed_counted_from_the_warm_up() -> None:
    script = _script()
    flushed = script.FLUSHED
    rows = [
        _reading(1, "00", "warmup", None, flushed), _reading(1, "05", "warmup", 0.0, flushed),
        # a reading of another counter rising earlier is not the onset
        _reading(1, "06", "warmup", 9.0, "Innodb_data_fsyncs"),
        _reading(1, "12.5", "measure", 30.0, flushed), _reading(1, "13.5", "measure", 0.0, flushed),
        _reading(2, "20", "warmup", None, flushed), _reading(2, "40", "measure", 0.0, flushed),
    ]
    assert script.flush_onsets(rows) == {1: 12.5, 2: None}
    assert script.flush_onsets([_reading(1, "00", "warmup", 3.0, "Handler_write")]) == {}


def test_the_aa_spec_reads_the_counter_and_warms_up_as_long_as_the_default() -> None:
    loaded = load_spec(REPO / "workloads" / "comparisons" / "aa-resolution.yaml")
    assert _script().FLUSHED in (loaded.spec.status_counters or [])
    default = Workload.model_fields["warmup_s"].default
    assert loaded.workload.warmup_s >= default
    # otherwise the demo's design: its workload but for the warm-up, blocks, repetitions, server
    demo = load_spec(REPO / "workloads" / "comparisons" / "demo-durability.yaml")
    mine = loaded.workload.model_dump(exclude={"name", "description", "warmup_s"})
    assert mine == demo.workload.model_dump(exclude={"name", "description", "warmup_s"})
    assert (loaded.spec.blocks, loaded.spec.repetitions) == (demo.spec.blocks, demo.spec.repetitions)
