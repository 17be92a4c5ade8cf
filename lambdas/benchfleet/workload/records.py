"""The data model's rows, read from the agent's raw JSON lines.

The agent writes JSON lines; this module is the one reader of them, used by the local runner and by
the collect Lambda alike, so raw files in ``.benchfleet/raw`` or S3 always rebuild the same rows.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchfleet.stats.figures import weighted_cv
from benchfleet.workload import serverstatus
from benchfleet.workload.sysbench import LATENCY_DISTRIBUTION_KEYS, interval_lengths, step_accounting

Phase = Literal["prepare", "warmup", "measure", "ramp"]
# Every measure step starts a fresh sysbench: its threads connect and prepare their statements during
# the first report interval, which runs up to 21% below the step's rate. That first report of every
# measure step is its ramp: phase "ramp" (the agent writes "measure"; this reader, the one every store is
# built by, relabels it), left out of every per-second figure and of the step's tps (benchfleet.stats).
RAMP_REPORTS = 1


def sample_phase(step_phase: str, index: int) -> str:
    """The phase of the ``index``-th (0-based) sample of a step of ``step_phase``."""
    return "ramp" if step_phase == "measure" and index < RAMP_REPORTS else step_phase


class RecordError(ValueError):
    """Agent output that is not what the agent writes (names the source and line)."""


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str
    target_id: str
    # The variant the step measured ("" in a spec without variants) and its block of a measured step
    # split by the spec's blocks (None when not split): with target_id and repetition, what pairs.
    variant: str = ""
    block: int | None = Field(None, ge=1)
    repetition: int = Field(ge=1)
    workload: str
    step: str
    phase: Phase
    threads: int = Field(ge=1)

    @field_validator("variant", mode="before")
    @classmethod
    def _no_variant(cls, v: Any) -> Any:
        return "" if v is None else v


class Sample(_Row):
    """One second of one step: sysbench's interval rates and /proc/stat CPU shares of that second."""

    time: datetime
    second: float
    # go-tpc steps (tool: go-tpc): tps is New-Order transactions per second (tpmc / 60, the TPC-C figure
    # every verdict compares), latency_ms New-Order's; what go-tpc does not measure (queries, reads,
    # writes, other, reconnects) is None, never 0.
    tps: float
    qps: float | None
    reads_per_s: float | None
    writes_per_s: float | None
    other_per_s: float | None
    latency_ms: float = Field(description="latency_pct percentile of the events of this second, ms")
    latency_pct: int
    errors_per_s: float
    reconnects_per_s: float | None
    tpmc: float | None = Field(None, description="go-tpc: New-Order transactions per minute in this interval")
    tx_per_s: dict[str, float] | None = Field(None, description="go-tpc: each transaction type's rate, "
                                              "failed ones as <TYPE>_ERR")
    cpu_steal_pct: float | None = None
    cpu_user_pct: float | None = None
    cpu_system_pct: float | None = None
    cpu_iowait_pct: float | None = None
    arrived_s: float | None = Field(None, description="when the agent saw this report arrive: seconds since "
                                    "sysbench started its clock (its 'Threads started!' line), monotonic")
    interval_s: float | None = Field(None, description="seconds this sample's rates cover: measured from "
                                     "arrived_s where the agent recorded it, else from sysbench's printed "
                                     "timestamps, which are rounded to the second (±0.5 s)")
    # The data directory's disk in the same second (/proc/diskstats; None where the server's data is
    # not on the agent's host or not on a block device).
    disk_reads_per_s: float | None = Field(None, description="reads completed per second")
    disk_writes_per_s: float | None = Field(None, description="writes completed per second")
    disk_read_mib_per_s: float | None = Field(None, description="MiB read per second")
    disk_write_mib_per_s: float | None = Field(None, description="MiB written per second")
    disk_await_ms: float | None = Field(None, description="mean time of the requests completed this second, "
                                        "queue and service, ms (iostat's await); None when none completed")
    rows_in_table: int | None = Field(None, description="insert workloads: rows in the table at the end of this "
                                      "second (prepared rows + events so far; benchfleet_rows.py)")


class StatusSample(_Row):
    """One ``SHOW GLOBAL STATUS`` counter of one source (a server, a cluster node ``n1``..., a proxy's
    backend ``proxy/n1``) at one reading of a step (``benchfleet.workload.serverstatus``). ``counter`` is
    ``answered`` (1 or 0) for whether the source answered that reading at all."""

    time: datetime
    second: float
    source: str
    counter: str
    value: float | None = Field(None, description="the value as the server printed it (state words as 0/1)")
    rate: float | None = Field(None, description="per second since the previous reading, for running "
                               "totals; None for levels (gauges) and the step's first reading")


class StepSummary(_Row):
    """One step: sysbench's own final figures (exact over the step) plus per-second derived figures."""

    time: datetime
    # go-tpc steps: transactions / tps are New-Order's (tps = tpmc / 60), events every type's completed
    # transactions, ignored_errors the failed ones; the latencies New-Order's; None what go-tpc does not
    # measure (benchfleet.workload.gotpc.summary_fields).
    total_time_s: float
    transactions: int
    tps: float
    queries: int | None
    qps: float | None
    reads: int | None
    writes: int | None
    other: int | None
    ignored_errors: int
    errors_per_s: float
    reconnects: int | None
    reconnects_per_s: float | None
    events: int
    latency_min_ms: float | None
    latency_avg_ms: float
    latency_max_ms: float
    latency_pct: int | None = None
    latency_pct_ms: float | None = Field(None, description="sysbench's percentile over the whole step")
    sysbench_version: str | None = None
    samples: int = Field(0, description="per-second samples of the step")
    samples_expected: int | None = Field(None, description="total time / report interval; None for a "
                                         "step without per-second data")
    covered_s: float | None = Field(None, description="seconds the samples account for (last timestamp)")
    missing_final: bool | None = Field(None, description="the step's last interval was never printed")
    tps_cv: float | None = Field(None, description="jitter: stdev/mean of per-second tps, weighted by "
                                 "interval length")
    steal_mean_pct: float | None = Field(None, description="mean of per-second CPU steal %")
    settings: dict[str, Any] | None = Field(None, description="a variant's step: the settings it ran with, "
                                            "{requested, effective, differences, method}")
    tpmc: float | None = Field(None, description="go-tpc: its tpmC, New-Order transactions per minute")
    tx_per_s: dict[str, float] | None = Field(None, description="go-tpc: each transaction type's rate over "
                                              "the step, failed ones as <TYPE>_ERR")
    latency_percentiles_ms: dict[str, float] | None = Field(
        None, description="the step's latency distribution, ms: percentiles 50, 90, 95, 99, 99.9 and max "
        "(sysbench: from its histogram of the whole step; go-tpc: its summary's); None when not measured")


    @field_validator("latency_percentiles_ms")
    @classmethod
    def _distribution(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        # Every key, each a latency no run exceeds (a day), none below the one before: percentiles of one
        # step's latencies cannot fall as the percentile rises, so a row that says so is not a measurement.
        if v is None:
            return None
        if sorted(v) != sorted(LATENCY_DISTRIBUTION_KEYS):
            raise ValueError(f"keys must be {', '.join(LATENCY_DISTRIBUTION_KEYS)}, not {', '.join(sorted(v))}")
        values = [v[k] for k in LATENCY_DISTRIBUTION_KEYS]
        if not all(math.isfinite(x) and 0 <= x <= 86_400_000 for x in values):
            raise ValueError(f"every latency must be from 0 to 86,400,000 ms, not {values}")
        if any(b < a for a, b in itertools.pairwise(values)):
            raise ValueError(f"percentiles must not fall as the percentile rises: {v}")
        return {k: v[k] for k in LATENCY_DISTRIBUTION_KEYS}


class Fingerprint(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    run_id: str
    target_id: str
    repetition: int
    time: datetime
    cpu_model: str | None = None
    vcpus: int | None = None
    cpus_usable: int | None = None
    memory_mb: int | None = None
    arch: str | None = None
    kernel: str | None = None
    os: str | None = None
    sysbench_version: str | None = None
    engine_version: str | None = None
    config_hash: str | None = None
    # EC2 hosts: where the host really ran, from the instance metadata (benchfleet_placement.py).
    region: str | None = None
    availability_zone: str | None = None
    instance_type: str | None = None


class AgentError(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str | None = None
    target_id: str | None = None
    repetition: int | None = None
    step: str | None = None
    stage: str
    message: str
    exit_code: int | None = None
    output_tail: str | None = None


class AgentNotice(BaseModel):
    """An ``install`` record (one setup action on a fresh host), a ``notice`` (something the run
    reports, e.g. cnf options the engine skipped) or a ``setup`` record (a cluster host's node or
    proxy set up: benchfleet.cluster.jobs); kept as the agent wrote them."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str
    stage: str | None = None
    action: str | None = None
    message: str | None = None


class AgentOutput(BaseModel):
    samples: list[Sample] = []
    summaries: list[StepSummary] = []
    fingerprints: list[Fingerprint] = []
    errors: list[AgentError] = []
    installs: list[AgentNotice] = []
    notices: list[AgentNotice] = []
    setups: list[AgentNotice] = []
    status: list[StatusSample] = []


def _ts(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):  # 1e300, NaN: no time at all
            raise ValueError(f"time {value!r} is not a time") from None
    return value


def parse_agent_lines(text: str, source: str = "agent output") -> AgentOutput:
    """Rows from the agent's JSON lines; summaries get their per-second derived figures."""
    out = AgentOutput()
    raw_summaries: list[dict[str, Any]] = []
    raw_status: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            kind = record.get("type")
            record = {**record, "time": _ts(record.get("time"))}
            if kind == "sample":
                out.samples.append(Sample.model_validate(record))
            elif kind == "summary":
                raw_summaries.append(record)
            elif kind == "fingerprint":
                out.fingerprints.append(Fingerprint.model_validate(record))
            elif kind == "error":
                out.errors.append(AgentError.model_validate(record))
            elif kind == "install":
                out.installs.append(AgentNotice.model_validate(record))
            elif kind == "notice":
                out.notices.append(AgentNotice.model_validate(record))
            elif kind == "setup":
                out.setups.append(AgentNotice.model_validate(record))
            elif kind == "status":
                _Row.model_validate(record)  # the row's keys, named here with the line
                if not isinstance(record.get("values"), dict | None) or not isinstance(record.get("source"), str):
                    raise ValueError("a status record needs a source and values (an object, or null)")
                raw_status.append(record)
            elif kind != "prepared":
                raise ValueError(f"unknown record type {kind!r}")
        except (ValueError, ValidationError, RecursionError) as e:
            detail = e.errors()[0] if isinstance(e, ValidationError) else None
            what = (f"{'.'.join(map(str, detail['loc']))}: {detail['msg']}" if detail
                    else "nested too deeply" if isinstance(e, RecursionError) else str(e))
            raise RecordError(f"{source}:{number}: {what}") from None
    out.samples = with_interval_lengths(out.samples)
    out.status = status_rows(raw_status)
    for record in raw_summaries:
        out.summaries.append(_summary(record, out.samples, source))
    return out


def status_rows(records: list[dict[str, Any]]) -> list[StatusSample]:
    """Status rows from the agent's status records, in the order written: per step and source, each
    counter's value and (for running totals) its rate per second since the previous reading."""
    previous: dict[tuple[Any, ...], tuple[float, dict[str, float]]] = {}
    rows: list[StatusSample] = []
    for record in records:
        key = (record.get("target_id"), record.get("variant"), record.get("repetition"), record.get("step"),
               record.get("block"), record["source"])
        base = {k: record.get(k) for k in ("run_id", "target_id", "variant", "block", "repetition", "workload",
                                           "step", "phase", "threads", "time", "second", "source")}
        values = record.get("values")
        answered = 0.0 if values is None else 1.0
        rows.append(StatusSample.model_validate({**base, "counter": "answered", "value": answered}))
        if values is None:
            continue
        numbers = {name: v for name, raw in values.items() if (v := serverstatus.number(raw)) is not None}
        second = float(record.get("second") or 0.0)
        before = previous.get(key)
        per_second = serverstatus.rates(before[1] if before else None, numbers, second - before[0] if before else None)
        previous[key] = (second, numbers)
        rows += [StatusSample.model_validate({**base, "counter": name, "value": value, "rate": per_second[name]})
                 for name, value in numbers.items()]
    return rows


def with_interval_lengths(samples: list[Sample]) -> list[Sample]:
    """Samples with ``interval_s`` and their phase (``ramp`` for the first of a measure step), per step
    in the order written. Under load sysbench reports late and a sample covers more than one report
    interval; the length is measured (consecutive ``arrived_s``, the first from sysbench's start) when
    every sample of the step has it, else taken from the printed ``second`` timestamps, rounded to the
    second (two reports in one rounded second then get lengths 1 and 0: see duplicate_timestamps)."""
    steps: dict[tuple[str, str, int, str], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        steps[(s.run_id, s.target_id, s.repetition, s.step)].append(i)
    out = list(samples)
    for indices in steps.values():
        elapsed = [samples[i].arrived_s for i in indices]
        measured = [e for e in elapsed if e is not None]
        lengths = interval_lengths(measured if len(measured) == len(indices)
                                   else [samples[i].second for i in indices])
        for k, (i, length) in enumerate(zip(indices, lengths, strict=True)):
            update: dict[str, Any] = {"phase": sample_phase(samples[i].phase, k)}
            if out[i].interval_s is None:
                update["interval_s"] = length
            out[i] = out[i].model_copy(update=update)
    return out


def per_second_figures(samples: list[Sample], total_time_s: float,
                       report_interval_s: float | None = None) -> dict[str, Any]:
    """A step's figures from its samples: accounting (:func:`step_accounting`, over every sample), and
    over the measured seconds (the ramp left out) ``tps_cv`` (jitter, weighted by interval length) and
    ``steal_mean_pct`` (mean per-second steal)."""
    measured = [s for s in samples if s.phase != "ramp"]
    weights = [s.interval_s if s.interval_s is not None else 1.0 for s in measured]
    steal = [s.cpu_steal_pct for s in measured if s.cpu_steal_pct is not None]
    jitter = weighted_cv([s.tps for s in measured], weights)
    return {**step_accounting([s.second for s in samples], total_time_s, report_interval_s),
            "tps_cv": round(jitter, 6) if jitter is not None else None,
            "steal_mean_pct": round(statistics.fmean(steal), 4) if steal else None}


def _summary(record: dict[str, Any], samples: list[Sample], source: str) -> StepSummary:
    mine = [s for s in samples if (s.target_id, s.repetition, s.step) ==
            (record.get("target_id"), record.get("repetition"), record.get("step"))]
    total, every = record.get("total_time_s"), record.get("report_interval_s")
    try:
        derived = per_second_figures(mine, float(total) if isinstance(total, int | float) else 0.0,
                                     float(every) if isinstance(every, int | float) and every > 0 else None)
    except (ArithmeticError, ValueError):
        # Samples no run prints (times going back, figures that are not numbers): nothing can be
        # derived from them, and benchfleet.workload.validation refuses the output, saying why.
        derived = {}
    try:
        return StepSummary.model_validate({**record, **derived})
    except ValidationError as e:
        detail = e.errors()[0]
        raise RecordError(f"{source}: summary of {record.get('step')}: "
                          f"{'.'.join(map(str, detail['loc']))}: {detail['msg']}") from None
