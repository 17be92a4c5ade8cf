"""``benchfleet import``: existing sysbench logs become a run, read by the one sysbench parser."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchfleet.cli import EXIT_USAGE, CliError
from benchfleet.local.store import DuckDBStore
from benchfleet.naming import new_run_id
from benchfleet.records import AgentOutput, Sample, StepSummary
from benchfleet.spec import SLUG
from benchfleet.stats.figures import cv
from benchfleet.sysbench import SysbenchOutput, SysbenchParseError, parse_output


def _files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".log", ".txt"))
        elif path.is_file():
            found.append(path)
        else:
            raise CliError(f"{path}: no such file or folder", EXIT_USAGE)
    if not found:
        raise CliError("no sysbench logs (*.log, *.txt) found in the given paths", EXIT_USAGE)
    return found


def import_logs(store: DuckDBStore, paths: list[Path], target_id: str, name: str | None) -> str:
    import re

    name = name or f"import-{target_id}"
    for label, value in (("--target", target_id), ("--run", name)):
        if not re.match(SLUG, value):
            raise CliError(f"{label} {value!r}: use lower-case letters, digits and dashes", EXIT_USAGE)
    parsed: list[tuple[Path, SysbenchOutput]] = []
    for path in _files(paths):
        try:
            out = parse_output(path.read_text(errors="replace"))
        except SysbenchParseError as e:
            raise CliError(f"{path}: {e}", EXIT_USAGE) from None
        if out.errors:
            raise CliError(f"{path}: sysbench reported a failure: {out.errors[0]}", EXIT_USAGE)
        if out.summary is None:
            raise CliError(f"{path}: no final summary (an interrupted run?)", EXIT_USAGE)
        parsed.append((path, out))
    run_id = new_run_id(name)
    store.create_run(run_id, name, {"name": name, "imported_from": [str(p) for p, _ in parsed],
                                    "targets": [{"id": target_id, "kind": "existing"}]}, "import", None)
    repetitions: Counter[int] = Counter()
    output = AgentOutput()
    for path, out in parsed:
        assert out.summary is not None
        threads = out.threads or (out.intervals[0].threads if out.intervals else 1)
        repetitions[threads] += 1
        rep = repetitions[threads]
        end = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        start = end - timedelta(seconds=out.summary.total_time_s)
        base = {"run_id": run_id, "target_id": target_id, "repetition": rep, "workload": "imported",
                "step": f"t{threads:04d}", "phase": "measure", "threads": threads}
        samples = [Sample(**base, time=start + timedelta(seconds=i.second), second=i.second, tps=i.tps,
                          qps=i.qps, reads_per_s=i.reads_per_s, writes_per_s=i.writes_per_s,
                          other_per_s=i.other_per_s, latency_ms=i.latency_ms, latency_pct=i.latency_pct,
                          errors_per_s=i.errors_per_s, reconnects_per_s=i.reconnects_per_s)
                   for i in out.intervals]
        output.samples += samples
        output.summaries.append(StepSummary(**base, **vars(out.summary) | {"latency_pct": out.summary.latency_pct},
                                            time=end, sysbench_version=out.version, samples=len(samples),
                                            tps_cv=cv([s.tps for s in samples])))
    for rep in range(1, max(repetitions.values()) + 1):
        store.add_target(run_id, target_id, rep, {"kind": "existing"}, None)
    store.add_output(output)
    store.finish_run(run_id, "succeeded", f"imported {len(parsed)} log(s)")
    return run_id
