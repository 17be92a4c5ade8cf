"""``benchfleet calibrate SPEC``: the spec's baseline as an A/A experiment on this machine.

The spec's baseline target (at its baseline variant's settings, if it has variants) is measured as two
identical variants, interleaved block by block, for R repetitions (a fresh server each), in K separate
runs. Every difference between the two variants is noise, so the runs give the spread a verdict has
to see through at each level (benchfleet.stats.resolution.components: between blocks, repetitions and
runs, and the paired per-repetition log ratio), stored per thread count for the spec and this
machine's fingerprint; ``plan`` then says how many repetitions resolve the spec's margin here.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.loading import LoadedSpec, resolve
from benchfleet.spec.variants import Variant
from benchfleet.stats.step_sql import step_stats_in_store
from benchfleet.stats.steps import step_tps

# Two identical variants: an A/A experiment (two identical variants measure the noise, as the spec
# model's own refusal of a single variant says).
AA_VARIANTS = ("aa-1", "aa-2")
DEFAULT_RUNS = 3  # K: about 10 minutes for the demo's spec on a 2-core machine; 2 degrees of freedom between runs
MIN_CALIBRATION_REPETITIONS = 3


def machine() -> dict[str, Any]:
    """What identifies this machine for a calibration: CPU model, CPUs, memory, architecture, kernel.
    A calibration holds for the machine it was measured on; another kernel or more memory is another."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "cpu model", "processor\t: arm")):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_mb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_mb = int(line.split()[1]) // 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu_model": cpu or platform.processor() or None, "vcpus": os.cpu_count(), "memory_mb": memory_mb,
            "arch": platform.machine(), "kernel": platform.release()}


def fingerprint(found: Mapping[str, Any]) -> str:
    """A short stable key of :func:`machine`'s figures."""
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()[:16]


def baseline_target_id(spec: ComparisonSpec) -> str:
    ids = [t.id for t in spec.targets]
    return spec.baseline if spec.baseline in ids else ids[0]


def aa_spec(loaded: LoadedSpec, repetitions: int) -> LoadedSpec:
    """The A/A experiment of ``loaded``: its baseline target alone, measured as two identical variants
    (each the baseline variant's settings, workload and route, when the spec has variants), interleaved,
    in the spec's blocks (2 when it has none and its steps divide in two), ``repetitions`` times."""
    spec = loaded.spec
    target = next(t for t in spec.targets if t.id == baseline_target_id(spec))
    base = next((v for v in spec.variants if v.id == spec.baseline), spec.variants[0] if spec.variants else None)
    template = base.model_dump(exclude={"id"}, exclude_none=True) if base else {}
    blocks = spec.blocks if spec.blocks > 1 else 2 if loaded.workload.duration_s % 2 == 0 else 1
    doc = spec.model_dump(mode="json", exclude_none=True)
    doc.update({"name": calibration_name(spec.name), "targets": [target.model_dump(mode="json", exclude_none=True)],
                "variants": [Variant(id=i, **template).model_dump(mode="json", exclude_none=True)
                             for i in AA_VARIANTS],
                "blocks": blocks, "order": "interleaved", "repetitions": repetitions})
    for key in ("baseline", "budget_usd", "repetition_spacing_s"):
        doc.pop(key, None)
    return resolve(ComparisonSpec.model_validate(doc), f"{loaded.source} (calibration)")


def calibration_name(name: str) -> str:
    """The runs of a calibration are named apart from the spec's (its history stays its own)."""
    return f"{name[:50].rstrip('-')}-calibration"


def units(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Every measured block of a calibration run: threads, repetition, block, variant, tps (the step's
    tps as every verdict computes it, its ramp left out)."""
    steps = {(s["target_id"], int(s["repetition"]), s["step"]): s for s in step_stats_in_store(store, run_id)}
    out = []
    for s in store.summaries(run_id):
        if s.get("phase") != "measure":
            continue
        tps = step_tps(s, steps.get((s["target_id"], int(s["repetition"]), s["step"]), {}))
        out.append({"run": run_id, "threads": int(s["threads"]), "repetition": int(s["repetition"]),
                    "block": s.get("block"), "variant": s.get("variant") or "", "tps": tps})
    return out


def by_threads(found: Iterable[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    out: dict[int, list[Mapping[str, Any]]] = {}
    for u in found:
        out.setdefault(int(u["threads"]), []).append(u)
    return dict(sorted(out.items()))


def worst(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The calibration a plan uses: per component the largest over thread counts (a spec's verdicts are
    made at every thread count; the noisiest decides how many repetitions it needs)."""
    rows = list(rows)
    if not rows:
        return None
    out: dict[str, Any] = {k: rows[0].get(k) for k in ("runs", "repetitions", "blocks", "created_at")}
    for key in ("sd_block", "sd_repetition", "sd_run", "sd_repetition_total", "sd_paired"):
        values = [float(r[key]) for r in rows if r.get(key) is not None]
        out[key] = max(values) if values else None
    created = out.get("created_at")
    out["created_at"] = created.strftime("%Y-%m-%d %H:%M") if isinstance(created, datetime) else created
    return out
