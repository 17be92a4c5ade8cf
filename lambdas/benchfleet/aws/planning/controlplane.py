"""What a run costs beyond its hosts: Step Functions transitions, Lambda, CloudWatch, store writes.

Counts come from the deployed definition walked with the plan (``benchfleet.aws.planning.asl_walk``): per
repetition, the readiness checks the readiness handler's schedule makes over its provisioning time
(``benchfleet.aws.planning.readywait``); steps do not poll (their Run Command status change completes them),
so each step adds one step_callback invocation, made by EventBridge, not the definition (AWS service
events on the default bus are free). Metrics requested per collect are the queries
``benchfleet.aws.steps.cloudwatch.queries`` makes for the target; Timestream writes are what the store's
own record builders and batcher (``benchfleet.aws.store.timestream``) make of a step's rows of the plan's
shape (every measure present), metered as Timestream meters them. Prices and the assumed Lambda
durations are dated data in ``workloads/pricing/control-plane.json``. Run Command and
GetCommandInvocation are free; data transfer and log ingestion are left out (cents per thousand runs).
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchfleet.aws.planning import asl_walk, readywait
from benchfleet.aws.settings import DEFAULT_RESULTS_STORE
from benchfleet.aws.steps import cloudwatch
from benchfleet.aws.store import timestream
from benchfleet.cost.pricing import pricing_dir
from benchfleet.plan import naming
from benchfleet.plan.model import Plan, PlanStep, RunCharge, TargetPlan
from benchfleet.stats.verdict import DEFAULT_MARGIN_PCT
from benchfleet.workload import records, serverstatus
from benchfleet.workload.records import Sample, StatusSample, StepSummary
from benchfleet.workload.sysbench import LATENCY_DISTRIBUTION_KEYS

PRICES_FILE = "control-plane.json"
# The Lambda EventBridge invokes when a step's Run Command ends (one per step).
CALLBACK_HANDLER = "step_callback"


class _Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    usd: float
    unit: str


class ControlPlanePrices(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    as_of: str
    prices: dict[str, _Price]
    # memory_mib / duration_ms by handler module
    lambda_: dict[str, Any]
    requests: dict[str, Any]

    def usd(self, name: str) -> float:
        return self.prices[name].usd


@lru_cache(maxsize=4)
def _load(path: str) -> ControlPlanePrices:
    with open(path) as f:
        data = json.load(f)
    data["lambda_"] = data.pop("lambda")
    return ControlPlanePrices.model_validate(data)


def load_prices(directory: Path | None = None) -> ControlPlanePrices:
    return _load(str((directory or pricing_dir()) / PRICES_FILE))


# ---- the plan as the walker sees it -------------------------------------------------------------

@dataclass
class _Undecided:
    def choose(self, state: Mapping[str, Any]) -> str | None:
        return None


class StepScope(_Undecided):
    """One step: no loop (it waits for its callback)."""

    def items(self) -> Sequence[asl_walk.Scope]:
        return []

    def laps(self, handlers: frozenset[str]) -> int:
        return 0


@dataclass
class RepetitionScope:
    steps: list[StepScope]
    ready_checks: int  # readiness invocations, the first included
    # rds / aurora: provision makes parameter groups, the repetition waits, provision makes the database.
    settles: bool = False

    def items(self) -> Sequence[asl_walk.Scope]:
        return self.steps

    def laps(self, handlers: frozenset[str]) -> int:
        return self.ready_checks - 1 if "readiness" in handlers else 0

    def choose(self, state: Mapping[str, Any]) -> str | None:
        for choice in state.get("Choices", []):
            if choice.get("Variable") == asl_walk.GROUPS_SETTLE_VARIABLE:
                return str(choice["Next"]) if self.settles else str(state["Default"])
        return None


@dataclass
class TargetScope(_Undecided):
    repetitions: list[RepetitionScope]

    def items(self) -> Sequence[asl_walk.Scope]:
        return self.repetitions

    def laps(self, handlers: frozenset[str]) -> int:
        return 0


@dataclass
class RunScope(_Undecided):
    targets: list[TargetScope] = field(default_factory=list)

    def items(self) -> Sequence[asl_walk.Scope]:
        return self.targets

    def laps(self, handlers: frozenset[str]) -> int:
        return 0


def expected_scope(plan: Plan, ready_poll_s: Mapping[str, int]) -> RunScope:
    """What a successful run of ``plan`` is expected to do: the readiness checks of a target that is
    ready at its planned provisioning time, on the handler's own schedule (``readywait``)."""
    targets = []
    for t in plan.targets:
        ready = readywait.expected_checks(t.provision_s, ready_poll_s[t.kind])
        # A cluster's set-up steps run in "Run each step" before its benchmark's (runplan.cluster_setup).
        targets.append(TargetScope([RepetitionScope([StepScope() for _ in range(t.setup_steps + len(t.steps_of(r)))],
                                                    ready, settles=t.settle_s > 0)
                                    for r in range(1, t.repetitions + 1)]))
    return RunScope(targets)


# ---- charges ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ControlPlane:
    counts: asl_walk.Counts
    charges: list[RunCharge]
    measure_steps: int

    @property
    def usd(self) -> float:
        return round(sum(c.cost_usd for c in self.charges), 4)


def _metric_queries(t: TargetPlan) -> list[cloudwatch.Query]:
    ec2 = next((h.instance_type for h in t.hosts if h.service == "ec2"), None)
    db = next((h.instance_type for h in t.hosts if h.service == "rds"), None)
    resources = {"instance_id": "i-planned", "instance_type": ec2, "db_instance_id": "planned",
                 "db_cluster_id": "planned"}
    return cloudwatch.queries(t.kind, resources, {"instance_type": ec2, "instance_class": db})


# A representative time and sysbench version (the one the agent installs): a record's metered size
# depends on the length of its strings, not on its figures (8 bytes each).
_WHEN = datetime(2026, 1, 1, tzinfo=UTC)
_STRINGS = {"sysbench_version": "1.0.20"}
# Mapping measures at their heaviest: go-tpc's every transaction type, failed ones too, and a whole
# latency distribution (increasing, as the record requires).
_TPCC_MEASURES = ("tpmc", "tx_per_s")
_TX_TYPES = ("DELIVERY", "NEW_ORDER", "ORDER_STATUS", "PAYMENT", "STOCK_LEVEL")
_MAPPINGS: dict[str, dict[str, float]] = {
    "tx_per_s": {name: 1.0 for t in _TX_TYPES for name in (t, f"{t}_ERR")},
    "latency_percentiles_ms": {k: float(i + 1) for i, k in enumerate(LATENCY_DISTRIBUTION_KEYS)},
}
# A variant's step records the settings it ran with: two settings, requested and effective.
_SETTINGS: dict[str, Any] = {
    "variant": "relaxed", "method": "set-global", "differences": [], "error": None,
    "requested": {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"},
    "effective": {"innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"}}


# Sample measures the agent writes only where they exist: the data directory's disk on a host
# that holds it (ec2 targets), the rows in the table for workloads that insert one row per event.
_DISK_MEASURES = ("disk_reads_per_s", "disk_writes_per_s", "disk_read_mib_per_s", "disk_write_mib_per_s",
                  "disk_await_ms")


def _every_measure(model: type[BaseModel], *, absent: tuple[str, ...] = (), **given: Any) -> Any:
    """A row of ``model`` with every measure present but ``absent`` (the most a record can weigh):
    numbers where the field is numeric, a representative string where it is text (a text field
    without one in _STRINGS fails every plan test: add it there; a mapping, in _MAPPINGS)."""
    values = dict(given)
    for name, info in model.model_fields.items():
        if name in values or name in absent:
            continue
        kinds = set(typing.get_args(info.annotation)) if isinstance(info.annotation, types.UnionType) \
            else {info.annotation}
        values[name] = (True if bool in kinds else 1 if int in kinds else 1.0 if float in kinds
                        else _MAPPINGS[name] if name in _MAPPINGS else _STRINGS[name])
    return model.model_validate(values)


def step_writes(t: TargetPlan, step: PlanStep, *, run_id: str, workload: str, repetition: int,
                report_interval_s: int, counts_rows: bool = False, tpcc: bool = False) -> timestream.Writes:
    """What collecting ``step`` writes to Timestream: a sample per report interval and the summary
    (not for prepare), and per CloudWatch query the points its window overlaps, made into requests
    by the store's own record builders and batcher. A sample has disk figures on ec2 targets and
    rows in the table when the workload counts them (``counts_rows``), go-tpc's tpmC and per-type rates
    when it is TPC-C (``tpcc``)."""
    rows = {"run_id": run_id, "target_id": t.target_id, "repetition": repetition}
    step_rows: dict[str, Any] = rows | {"workload": workload, "step": step.name, "phase": step.kind,
                                       "threads": step.threads, "variant": step.variant or "", "block": step.block,
                                       "settings": _SETTINGS if step.settings else None}
    writes = timestream.Writes()
    if step.kind != "prepare":
        # A measure step's first report is its ramp (records.sample_phase): a phase of its own, so
        # records of its own dimensions and a request of their own.
        reports = step.duration_s // max(1, report_interval_s)
        phases = [records.sample_phase(step.kind, i) for i in range(reports)]
        only_tpcc = () if tpcc else _TPCC_MEASURES
        absent = (() if t.kind == "ec2" else _DISK_MEASURES) + (() if counts_rows else ("rows_in_table",)) + only_tpcc
        for phase in sorted(set(phases)):
            sample = timestream.sample_record(_every_measure(Sample, absent=absent, time=_WHEN,
                                                             **(step_rows | {"phase": phase})))
            writes += timestream.repeated_writes(timestream.TABLE_SAMPLES, sample, phases.count(phase))
        # A measure step's with the spec's margin, as collect writes it (a DOUBLE: its size whatever the value).
        summary = timestream.summary_record(_every_measure(StepSummary, absent=only_tpcc, time=_WHEN, **step_rows),
                                            DEFAULT_MARGIN_PCT if step.kind == "measure" else None)
        readings = reports
        writes += timestream.repeated_writes(timestream.TABLE_SUMMARIES, summary, 1)
        # Requests group the rows of one source's counter, one record per reading (the baseline at
        # 0 s included, without a rate; levels and ``answered`` never have one).
        for source, counter in t.status_series:
            row = _every_measure(StatusSample, time=_WHEN, source=source, counter=counter, **step_rows)
            level = row.model_copy(update={"rate": None})
            total = counter != "answered" and not serverstatus.is_gauge(counter)
            writes += timestream.repeated_writes(
                timestream.TABLE_STATUS, timestream.status_record(row if total else level), readings + 1,
                first=timestream.status_record(level))
    # Collect runs as the step ends: the age of its padded window decides the period CloudWatch has.
    window_start = _WHEN - timedelta(seconds=step.duration_s) - cloudwatch.PAD
    for q in _metric_queries(t):
        period = cloudwatch.retained_period(q.period, window_start, _WHEN)
        point = timestream.cloud_record(timestream.CloudMetric(
            time=_WHEN, step=step.name, metric=q.name, value=1.0, unit=q.unit, period_s=period, **rows))
        writes += timestream.repeated_writes(timestream.TABLE_CLOUD, point,
                                             cloudwatch.points_overlapping(step.duration_s, period))
    return writes


def _repetition_writes(plan: Plan, t: TargetPlan, report_interval_s: int, repetition: int) -> timestream.Writes:
    """One repetition's Timestream writes (its number as long as the target's last one's)."""
    run_id = naming.new_run_id(plan.name, _WHEN)
    return sum((step_writes(t, s, run_id=run_id, workload=plan.workload, repetition=t.repetitions,
                            counts_rows=plan.counts_rows, tpcc=plan.tpcc,
                            report_interval_s=report_interval_s) for s in t.steps_of(repetition)),
               timestream.Writes())


def _steps_run(t: TargetPlan, setup: bool = True) -> int:
    """Steps the target runs over all its repetitions (``setup``: a cluster's set-up steps too)."""
    return sum((t.setup_steps if setup else 0) + len(t.steps_of(r)) for r in range(1, t.repetitions + 1))


def _charge(prices: ControlPlanePrices, item: str, price: str, quantity: float) -> RunCharge:
    usd = prices.usd(price)
    return RunCharge(item=item, quantity=round(quantity, 3), unit=prices.prices[price].unit, usd_per_unit=usd,
                     cost_usd=round(quantity * usd, 6))


def estimate(plan: Plan, definition: Mapping[str, Any], *, ready_poll_s: Mapping[str, int],
             report_interval_s: int, store: str = DEFAULT_RESULTS_STORE,
             prices: ControlPlanePrices | None) -> ControlPlane:
    """Counts of the run, and its charges priced by ``prices`` (none without a price table)."""
    scope = expected_scope(plan, ready_poll_s)
    counts = asl_walk.walk(definition["States"], definition["StartAt"], scope)
    counts.invocations[CALLBACK_HANDLER] += sum(_steps_run(t) for t in plan.targets)
    measure = sum(1 for t in plan.targets for r in range(1, t.repetitions + 1) for s in t.steps_of(r)
                  if s.kind == "measure")
    if prices is None:
        return ControlPlane(counts=counts, charges=[], measure_steps=measure)
    memory = prices.lambda_["memory_mib"]
    duration = prices.lambda_["duration_ms"]
    gb_s = sum(n * memory[h] / 1024 * duration[h] / 1000 for h, n in counts.invocations.items())
    metrics = puts = metric_hours = agent_flushes = 0
    writes = timestream.Writes()
    req = prices.requests
    for t in plan.targets:
        metrics += len(_metric_queries(t)) * _steps_run(t, setup=False)  # a set-up's collect reads no metrics
        if store == "timestream":
            if t.sequence:
                writes += sum((_repetition_writes(plan, t, report_interval_s, r) for r in range(1, t.repetitions + 1)),
                              timestream.Writes())
            else:
                writes += _repetition_writes(plan, t, report_interval_s, 1).times(t.repetitions)
        # A set-up step's output is kept like a step's (stdout, stderr, the raw copy, its token and
        # command); its collect writes no table.
        athena = req["athena_s3_puts_per_step"] * _steps_run(t, setup=False) if store == "athena" else 0
        puts += req["s3_puts_per_step"] * _steps_run(t) + athena + req["s3_puts_per_repetition"] * t.repetitions
        # The CloudWatch agent on each EC2 host: its metrics are billed per hour they receive data,
        # and each flush is one PutMetricData request (cdk/lib/target-fleet.ts's config).
        ec2_hosts = sum(1 for h in t.hosts if h.service == "ec2") or (1 if t.kind == "existing" else 0)
        metric_hours += (ec2_hosts * req["cloudwatch_agent_metrics_per_host"]
                         * math.ceil(t.repetition_s / 3600) * t.repetitions)
        agent_flushes += ec2_hosts * math.ceil(t.repetition_s / req["cloudwatch_agent_flush_s"]) * t.repetitions
    puts += req["s3_puts_per_run"]
    charges = [
        _charge(prices, "Step Functions state transitions", "state_transition", counts.transitions),
        _charge(prices, "Lambda requests", "lambda_request", counts.invocation_total),
        _charge(prices, "Lambda compute (GB-s)", "lambda_gb_second", gb_s),
        _charge(prices, "CloudWatch GetMetricData metrics", "metric_requested", metrics),
        _charge(prices, "CloudWatch agent custom metric-hours", "custom_metric_hour", metric_hours),
        _charge(prices, "CloudWatch agent PutMetricData requests", "put_metric_data_request", agent_flushes),
        _charge(prices, "S3 PUT requests", "s3_put", puts),
    ]
    if store == "timestream":
        charges.append(_charge(prices, "Timestream writes", "timestream_write", writes.units))
    return ControlPlane(counts=counts, charges=charges, measure_steps=measure)
