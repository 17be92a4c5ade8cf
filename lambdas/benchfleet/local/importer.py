"""``benchfleet import``: existing sysbench logs become a run (or a target of one), read by the one
sysbench parser.

Each folder given is one repetition of the target (its logs are its thread counts); loose files are
numbered per thread count in the order given. Every log is read twice, line by line, never whole: once
to check it (a complete final summary, its thread count, a content hash no other log of the run has)
before anything is written, once to stream its per-second samples into the store in batches.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchfleet.local.store import DuckDBStore, RunNotFound
from benchfleet.plan.naming import new_run_id
from benchfleet.spec.fields import SLUG
from benchfleet.stats.figures import weighted_cv
from benchfleet.workload.records import AgentOutput, Sample, StepSummary, sample_phase
from benchfleet.workload.sysbench import (
    MAX_LINE_CHARS,
    Interval,
    SysbenchOutput,
    SysbenchParseError,
    parse_output,
    step_accounting,
)
from benchfleet.workload.validation import PERCENTILES, figure_problem, figures_problem, summary_problem

# The most threads an imported log may say it ran (a spec's sweep goes to 4,096; this leaves room for
# any real run while keeping the figure inside the store's INTEGER column).
MAX_THREADS = 1_000_000


class ImportRefused(ValueError):
    """Logs (or options) that cannot be imported; the message names the file and line, or the option.
    The CLI reports it as bad input (exit 2)."""


_BATCH = 20_000  # samples per insert: bounds memory whatever the log's length
_SUFFIXES = (".log", ".txt")


@dataclass
class _Log:
    path: Path
    sha256: str
    out: SysbenchOutput
    threads: int
    repetition: int = 0


def _read_lines(path: Path, digest: Any | None = None) -> Iterator[str]:
    """The lines of ``path`` decoded leniently, at most MAX_LINE_CHARS + 1 bytes at a time (so one
    endless line cannot take all memory: the parser refuses it), feeding ``digest`` the raw bytes."""
    with path.open("rb") as f:
        while True:
            raw = f.readline(MAX_LINE_CHARS + 1)
            if not raw:
                return
            if digest is not None:
                digest.update(raw)
            yield raw.decode("utf-8", errors="replace")


def _groups(paths: list[Path]) -> list[list[Path]]:
    """One group per folder (a repetition) and one per loose file."""
    groups: list[list[Path]] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
            if not files:
                raise ImportRefused(f"{path}: no sysbench logs (*.log, *.txt) in this folder")
            groups.append(files)
        elif path.is_file():
            groups.append([path])
        elif path.exists():  # a FIFO would block the reader, a device never end
            raise ImportRefused(f"{path}: not a regular file or a folder")
        else:
            raise ImportRefused(f"{path}: no such file or folder")
    return groups


def _check_interval(path: Path, interval: Interval, most: list[Interval]) -> None:
    """Every figure of an interval line as local runs and cloud collect hold theirs (benchfleet.workload.validation);
    ``most`` keeps the interval with the most threads, checked against the log's thread count."""
    problem = figures_problem(vars(interval))
    if problem is None and interval.latency_pct and interval.latency_pct not in PERCENTILES:
        problem = f"lat (ms,{interval.latency_pct}%): sysbench reports percentiles from 1 to 100"
    if problem:
        raise ImportRefused(f"{path}:{interval.line}: {problem}")
    if not most or interval.threads > most[0].threads:
        most[:] = [interval]


def _check(path: Path, threads_given: int | None) -> _Log:
    """Read one log to check it; nothing kept but its summary (intervals are only counted)."""
    digest = hashlib.sha256()
    most: list[Interval] = []
    try:
        out = parse_output(_read_lines(path, digest), on_interval=lambda i: _check_interval(path, i, most))
    except SysbenchParseError as e:
        where = f"{path}:{e.line}" if e.line is not None else str(path)
        raise ImportRefused(f"{where}: {e.reason}") from None
    except OSError as e:
        raise ImportRefused(f"{path}: cannot read: {e.strerror or e}") from None
    if out.errors:
        raise ImportRefused(f"{path}: sysbench reported a failure: {out.errors[0]}")
    if out.summary is None:
        what = (f"its final summary is incomplete (no {', '.join(out.summary_missing)})" if out.summary_missing
                else "it has no final summary")
        raise ImportRefused(f"{path}: not imported: {what}; a run that was cut short has no result")
    for name, value in vars(out.summary).items():
        problem = figure_problem(name, value)
        if problem:
            line = out.summary_lines.get(name)
            raise ImportRefused(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")
    if out.summary.events == 0 or out.summary.total_time_s <= 0:
        raise ImportRefused(f"{path}: not imported: sysbench completed no event")
    threads = out.threads
    if threads is None:
        if threads_given is None:
            raise ImportRefused(f"{path}: the log does not say its thread count (no 'Number of threads:' line); "
                           "give it with --threads N")
        threads = threads_given
    elif threads_given is not None and threads_given != threads:
        raise ImportRefused(f"{path}: the log says {threads} threads, --threads says {threads_given}")
    # An edited log: 0 reached the store's model (an internal ValidationError), 10^23 the store itself
    # ("cannot use this results store: Conversion Error", blaming the store).
    if threads < 1:
        raise ImportRefused(f"{path}: not imported: the log says {threads} threads (sysbench runs at least 1)")
    if threads > MAX_THREADS:
        raise ImportRefused(f"{path}: not imported: the log says {threads} threads, more than {MAX_THREADS:,} "
                            "(no sysbench run starts that many)")
    # A log that contradicts itself: each figure possible, the set not (benchfleet.workload.validation).
    if most and most[0].threads > threads:
        said = "'Number of threads'" if out.threads is not None else "--threads"
        raise ImportRefused(f"{path}:{most[0].line}: not imported: an interval ran {most[0].threads} threads "
                            f"in a run of {threads} ({said})")
    problem = summary_problem(vars(out.summary), threads)
    if problem:
        raise ImportRefused(f"{path}: not imported: {problem}")
    return _Log(path, digest.hexdigest(), out, threads)


def _known_hashes(spec: dict[str, Any]) -> dict[str, str]:
    """sha256 -> what it was imported as, for the logs a run already holds."""
    known = {}
    for item in spec.get("imported_from") or []:
        if isinstance(item, dict) and item.get("sha256"):
            known[item["sha256"]] = f"{item.get('path')} (target {item.get('target_id')})"
    return known


def _plan(groups: list[list[Path]], threads_given: int | None, known: dict[str, str]) -> list[_Log]:
    logs: list[_Log] = []
    seen = dict(known)
    per_threads: Counter[int] = Counter()
    for group in groups:
        in_group: dict[int, Path] = {}
        checked = [_check(path, threads_given) for path in group]
        for log in checked:
            if log.sha256 in seen:
                raise ImportRefused(f"{log.path}: the same content as {seen[log.sha256]}: one run of sysbench "
                               "imported twice would count as two repetitions")
            seen[log.sha256] = str(log.path)
            if log.threads in in_group:
                raise ImportRefused(f"{log.path.parent}: two logs for {log.threads} threads ({in_group[log.threads]} "
                               f"and {log.path}); a folder is one repetition: give each repetition its own "
                               "folder")
            in_group[log.threads] = log.path
        for log in checked:
            per_threads[log.threads] += 1
            log.repetition = per_threads[log.threads]
            logs.append(log)
    return logs


def _instance(instance_type: str | None, region: str | None) -> dict[str, Any]:
    """What ``--instance-type`` / ``--region`` record for the target: its type (so it is priced and
    joins its family in the speedup table) and where it ran; refused naming the option when the
    catalogue or the price tables do not know it."""
    from benchfleet.cost import pricing
    from benchfleet.cost.catalogue import load_catalogue

    if instance_type is None:
        if region is not None:
            raise ImportRefused("--region says where an --instance-type ran: give --instance-type too")
        return {}
    cat = load_catalogue()
    if cat.instance_type(instance_type) is None:
        raise ImportRefused(f"--instance-type {instance_type}: not an EC2 instance type (workloads/catalogue/aws.json, "
                       f"as of {cat.as_of})")
    if region is not None and region not in cat.regions:
        raise ImportRefused(f"--region {region}: not an AWS region")
    meta = {"kind": "existing", "instance_type": instance_type, "region": region}
    found = pricing.target_prices(meta)
    if found.missing:
        raise ImportRefused(f"--instance-type {instance_type}: {found.missing[0][1]}")
    return {"instance_type": instance_type, "region": region, "price_per_hour": found.total("on_demand"),
            "prices": pricing.recorded_prices(meta)}


def _imported_elsewhere(store: DuckDBStore, logs: list[_Log], run_id: str | None) -> dict[str, str]:
    """sha256 -> the other run (and file) that already holds a log of the same content."""
    wanted = {log.sha256 for log in logs}
    found: dict[str, str] = {}
    rows = store.query("SELECT run_id, spec FROM runs WHERE mode = 'import' AND run_id <> ?", [run_id or ""])
    for row in rows:
        spec = row["spec"] if isinstance(row["spec"], dict) else json.loads(row["spec"] or "{}")
        for item in spec.get("imported_from") or []:
            if isinstance(item, dict) and item.get("sha256") in wanted:
                found.setdefault(item["sha256"], f"run {row['run_id']} ({item.get('path')})")
    return found


def import_logs(store: DuckDBStore, paths: list[Path], target_id: str, name: str | None,
                into: str | None = None, threads: int | None = None, instance_type: str | None = None,
                region: str | None = None, notice: Callable[[str], None] | None = None) -> str:
    """Import ``paths`` as target ``target_id``: a new run named ``name`` (default
    ``import-<target>``), or, with ``into``, a new target of that existing run (id or unique
    prefix). ``instance_type`` (and ``region``, default us-east-1 for its price) say what the logs
    ran on: the target is priced, and grouped with its family for the speedup table. Returns the run
    id. ImportRefused naming the file or option for anything refused; nothing is written unless
    every log is accepted. A log another run already holds is imported, flagged to ``notice`` and
    in the run's ``imported_from`` (``also_in``): the same measurement in two runs is not two results."""
    if into is not None and name is not None:
        raise ImportRefused("give either --run NAME (a new run) or --into RUN (an existing one), not both")
    if threads is not None and threads < 1:
        raise ImportRefused(f"--threads {threads}: must be at least 1")
    name = name or f"import-{target_id}"
    for label, value in (("--target", target_id), ("--run", name)):
        if not re.match(SLUG, value, re.ASCII):
            raise ImportRefused(f"{label} {value!r}: use lower-case letters, digits and dashes")
    spec: dict[str, Any]
    if into is not None:
        try:
            run = store.run(into)
        except RunNotFound as e:
            raise ImportRefused(f"--into: {e}") from None
        run_id, spec = str(run["run_id"]), dict(run["spec"])
        if any(t.get("target_id") == target_id for t in store.targets(run_id)):
            raise ImportRefused(f"--target {target_id}: run {run_id} already has this target")
    else:
        run_id, spec = new_run_id(name), {"name": name, "imported_from": [], "targets": []}
    instance = _instance(instance_type, region)
    logs = _plan(_groups(paths), threads, _known_hashes(spec))
    elsewhere = _imported_elsewhere(store, logs, run_id)
    for log in logs:
        if log.sha256 in elsewhere and notice is not None:
            notice(f"{log.path}: the same content is already imported in {elsewhere[log.sha256]}; "
                   "one measurement in two runs is not two results")
    described = {k: v for k, v in instance.items() if k in ("instance_type", "region") and v is not None}
    spec["targets"] = [*(spec.get("targets") or []), {"id": target_id, "kind": "existing", **described}]
    spec["imported_from"] = [*(x for x in spec.get("imported_from") or [] if isinstance(x, dict)),
                             *({"path": str(log.path), "sha256": log.sha256, "target_id": target_id,
                                "repetition": log.repetition, "threads": log.threads,
                                **({"also_in": elsewhere[log.sha256]} if log.sha256 in elsewhere else {})}
                               for log in logs)]
    if into is None:
        store.create_run(run_id, name, spec, "import", None)
    try:
        for rep in range(1, max(log.repetition for log in logs) + 1):
            store.add_target(run_id, target_id, rep, {"kind": "existing", **instance}, None)
        for log in logs:
            _store_log(store, run_id, target_id, log)
    except BaseException:
        if into is None:
            store.delete_run(run_id)
        else:
            store.delete_target(run_id, target_id)
        raise
    if into is None:
        store.finish_run(run_id, "succeeded", f"imported {len(logs)} log(s)")
    else:
        store.set_spec(run_id, spec)
    return run_id


def _store_log(store: DuckDBStore, run_id: str, target_id: str, log: _Log) -> None:
    """Stream the log's intervals into the store, then its step summary with the per-second figures."""
    summary = log.out.summary
    assert summary is not None
    end = datetime.fromtimestamp(log.path.stat().st_mtime, tz=UTC)
    start = end - timedelta(seconds=summary.total_time_s)
    base = {"run_id": run_id, "target_id": target_id, "repetition": log.repetition, "workload": "imported",
            "step": f"t{log.threads:04d}", "phase": "measure", "threads": log.threads}
    seconds, tps, lengths = array("d"), array("d"), array("d")
    batch: list[Sample] = []

    def take(i: Interval) -> None:
        phase = sample_phase("measure", len(seconds))
        seconds.append(i.second)
        if phase != "ramp":  # the ramp's rates are left out of the step's jitter, as for a run's
            tps.append(i.tps)
            lengths.append(i.interval_s if i.interval_s is not None else 1.0)
        batch.append(Sample(**{**base, "phase": phase}, time=start + timedelta(seconds=i.second), second=i.second,
                            tps=i.tps,
                            qps=i.qps, reads_per_s=i.reads_per_s, writes_per_s=i.writes_per_s,
                            other_per_s=i.other_per_s, latency_ms=i.latency_ms, latency_pct=i.latency_pct,
                            errors_per_s=i.errors_per_s, reconnects_per_s=i.reconnects_per_s,
                            interval_s=i.interval_s))
        if len(batch) >= _BATCH:
            store.add_output(AgentOutput(samples=batch))
            batch.clear()

    if log.out.interval_count:
        parse_output(_read_lines(log.path), on_interval=take)
    jitter = weighted_cv(tps, lengths)
    figures = {**step_accounting(seconds, summary.total_time_s, log.out.report_interval_s),
               "tps_cv": round(jitter, 6) if jitter is not None else None}
    step = StepSummary(**{**base, **vars(summary), **figures}, time=end, sysbench_version=log.out.version)
    store.add_output(AgentOutput(samples=batch, summaries=[step]))
