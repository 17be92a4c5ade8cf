"""Whether agent output is a measurement of its plan step: one check for local runs and cloud collect.

A step's rows are stored only if this module finds nothing wrong with them (``output_problem``), and
``benchfleet import`` holds every figure of a log to the same limits (``figure_problem``). The two
backends checking differently is how a cloud run once stored what local mode refused: a 0.002 s run
for a 3 s step, NaN, negative or 1e308 tps, negative latency.

What is checked:
- the rows are this step's (run, target, repetition, step, variant and block), from one run of sysbench: one summary,
  sample times that never go back, at most one fingerprint;
- every figure is finite, not negative and below what no database can do (``LIMITS``); CPU shares
  are percentages; no row is timed after its output was read;
- a timed step ran for its planned duration and has about one sample per report interval
  (a stalled host, a server stopped and resumed, or sysbench cut short all fail here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from benchfleet.spec.workload import MAX_STEP_SECONDS
from benchfleet.workload import serverstatus
from benchfleet.workload.records import AgentOutput

# Above these no figure can be real: 100 million transactions or queries per second is two orders of
# magnitude past the largest published sysbench results; a latency of a day, a run of three step-lengths.
MAX_RATE = 1e8
MAX_LATENCY_MS = 86_400_000.0
MAX_COUNT = 10**15
LIMITS: dict[str, float] = {
    **dict.fromkeys(("tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "errors_per_s",
                     "reconnects_per_s"), MAX_RATE),
    **dict.fromkeys(("latency_ms", "latency_min_ms", "latency_avg_ms", "latency_max_ms", "latency_pct_ms"),
                    MAX_LATENCY_MS),
    **dict.fromkeys(("cpu_steal_pct", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct"), 100.0),
    **dict.fromkeys(("transactions", "queries", "reads", "writes", "other", "ignored_errors", "reconnects",
                     "events"), MAX_COUNT),
    "second": 3.0 * MAX_STEP_SECONDS, "total_time_s": 3.0 * MAX_STEP_SECONDS, "interval_s": 3.0 * MAX_STEP_SECONDS,
    # Threads fairness: events per thread and seconds per thread (averages and their spread).
    "fairness_events_avg": MAX_COUNT, "fairness_events_stddev": MAX_COUNT,
    "fairness_time_avg_s": 3.0 * MAX_STEP_SECONDS, "fairness_time_stddev_s": 3.0 * MAX_STEP_SECONDS,
}
# sysbench's --percentile takes 1-100 (0 turns percentiles off: no summary line, 0 in interval lines).
PERCENTILES = range(1, 101)
# The final summary prints latencies with two decimals and fairness averages with four.
LATENCY_ROUNDING_MS = 0.01
# go-tpc's total time is New-Order's: go-tpc 1.0.7 starts a type's clock as its first transaction
# completes (pkg/measurement: the histogram is made at the first measure), so the total falls short
# of the step by the time to open the connections and complete that New-Order: 0.03 to 0.23 s here
# (3 s smoke blocks, 1 and 4 threads, load average 7 on 2 cores). A run go-tpc left early is refused
# by the agent (a signal or a failure in its output), not by this bound.
GOTPC_CLOCK_START_S = 1.0
# A row may be timed this much after its output was read (the clocks of two hosts; Timestream takes
# times up to 15 minutes ahead), and never before benchfleet existed.
CLOCK_SLACK = timedelta(minutes=15)
EARLIEST = datetime(2020, 1, 1, tzinfo=UTC)


def figure_problem(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be figure ``name`` (None: it can): not finite, negative, or above LIMITS."""
    if value is None or name not in LIMITS or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        return f"{name} is {value!r}, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} is {value}, not a finite number"
    if value < 0:
        return f"{name} is {value}, below zero"
    if value > LIMITS[name]:
        return f"{name} is {value:g}, above {LIMITS[name]:g}: no database does that"
    return None


def figures_problem(row: Mapping[str, Any]) -> str | None:
    """The first figure of ``row`` (a sample or a summary, as a mapping) that cannot be real."""
    for name, value in row.items():
        problem = figure_problem(name, value)
        if problem:
            return problem
    return None


def summary_problem(summary: Mapping[str, Any], threads: int | None = None) -> str | None:
    """Why a final summary contradicts itself or the ``threads`` it ran (None: it does not). Each
    figure may be possible alone and the set still impossible: an edited log imported a '150th
    percentile' (shown as 'p150 ms'), a minimum latency above the maximum, 1 event against 2,912
    transactions. sysbench 1.0.20 prints one counter as both (its SQL statistics' transactions are its
    events), so where the log has SQL statistics the two are equal; its threads fairness is the events
    per thread (events / threads, printed with four decimals)."""
    pct = summary.get("latency_pct")
    if pct is not None and pct not in PERCENTILES:
        return f"a {pct}th percentile: sysbench reports percentiles from 1 to 100"
    low, avg, high = (summary.get(k) for k in ("latency_min_ms", "latency_avg_ms", "latency_max_ms"))
    if low is not None and avg is not None and high is not None and not (
            low - LATENCY_ROUNDING_MS <= avg <= high + LATENCY_ROUNDING_MS and low <= high):
        return f"latency min {low:g} ms, avg {avg:g} ms, max {high:g} ms: not min <= avg <= max"
    events, transactions = summary.get("events"), summary.get("transactions")
    # go-tpc's summary (it carries tpmC) counts New-Order as its transactions and every type as events.
    if summary.get("tpmc") is None and transactions and events is not None and events != transactions:
        return f"{events:,} events against {transactions:,} transactions: sysbench counts one event per transaction"
    per_thread = summary.get("fairness_events_avg")
    if per_thread is not None and threads and events is not None \
            and abs(per_thread * threads - events) > 0.01 + threads * 5e-5:
        return (f"threads fairness says {per_thread:g} events per thread, x {threads} threads = "
                f"{per_thread * threads:,.0f}, not the run's {events:,} events")
    return None


def _strays(rows: Iterable[Any], key: tuple[str, str, int, str], variant: tuple[str, int | None]) -> Any:
    """The first row that is not the step's: another run, target, repetition or step, or (samples,
    summaries and status rows, which carry them) another variant or block, which is what results are
    paired by."""
    return next((r for r in rows if (r.run_id, r.target_id, r.repetition, r.step) != key
                 or (hasattr(r, "variant") and (r.variant, r.block) != variant)), None)


def output_problem(output: AgentOutput, *, run_id: str, target_id: str, repetition: int, step: str,
                   kind: str, duration_s: int, report_interval_s: int,
                   read_at: datetime | None = None, check_plan: bool = True, variant: str | None = None,
                   block: int | None = None, sources: tuple[int, str] | None = None) -> str | None:
    """Why ``output`` cannot be stored as step ``step``'s result (None: it can). ``variant`` and
    ``block``: the plan step's (None: a spec without variants, a step not split). ``read_at``: when the
    output was read; no row can be timed after it (beyond CLOCK_SLACK). ``check_plan`` False leaves
    the timing to the caller (``plan_problem``: the local runner says it stalled). ``sources``: the
    target's cluster nodes (0: one server) and proxy, whose status rows the step must hold and no
    others (``serverstatus.source_problem``)."""
    key = (run_id, target_id, repetition, step)
    stray = _strays([*output.samples, *output.summaries, *output.status, *output.fingerprints], key,
                    (variant or "", block))
    if stray is not None:
        labels = "".join(f" {name} {value}" for name, value in (("variant", getattr(stray, "variant", "")),
                                                               ("block", getattr(stray, "block", None))) if value)
        return (f"rows of another step ({stray.run_id} {stray.target_id} rep {stray.repetition} {stray.step}"
                f"{labels}) in this step's output")
    # A cluster's step past prepare reads every source's status every second (its health among them):
    # none at all is a step whose cluster may not have stayed whole, not one with nothing to say.
    reads_status = bool(sources and sources[0]) and kind != "prepare"
    problem = serverstatus.source_problem((r.source for r in output.status), *sources,
                                          rows_required=reads_status) if sources else None
    if problem:
        return f"step {step}: {problem}"
    if len(output.fingerprints) > 1:
        return f"{len(output.fingerprints)} fingerprints: one step's output holds one"
    seconds = [s.second for s in output.samples]
    back = next((i for i in range(1, len(seconds)) if seconds[i] < seconds[i - 1]), None)
    if back is not None:
        return (f"sample at {seconds[back]:g} s follows one at {seconds[back - 1]:g} s: the output of two runs "
                "of sysbench, not one")
    for sample in output.samples:
        problem = figures_problem(sample.model_dump())
        if problem:
            return f"sample at {sample.second:g} s: {problem}"
    for summary in output.summaries:
        problem = figures_problem(summary.model_dump()) or summary_problem(summary.model_dump(), summary.threads)
        if problem:
            return f"summary: {problem}"
    latest = (read_at + CLOCK_SLACK) if read_at is not None else None
    for at in [*(s.time for s in output.samples), *(s.time for s in output.summaries)]:
        if at < EARLIEST or (latest is not None and at > latest):
            return (f"a row timed {at:%Y-%m-%d %H:%M:%S} UTC, "
                    + (f"after the output was read ({read_at:%Y-%m-%d %H:%M:%S} UTC)" if at >= EARLIEST
                       else "before any benchfleet run"))
    if not check_plan:
        return None
    return plan_problem(output, kind=kind, duration_s=duration_s, report_interval_s=report_interval_s, step=step)


def plan_problem(output: AgentOutput, *, kind: str, duration_s: int, report_interval_s: int,
                 step: str) -> str | None:
    """A timed step: sysbench's own run time and the number of per-second samples against the plan."""
    if kind == "prepare":
        return None
    if not output.summaries:
        return "sysbench printed no final summary"
    if len(output.summaries) > 1:
        return f"{len(output.summaries)} final summaries: the output of several runs of sysbench, not one"
    summary = output.summaries[0]
    ran = summary.total_time_s
    # go-tpc's clock starts late by the time to its first New-Order (GOTPC_CLOCK_START_S).
    tool, late = ("go-tpc", GOTPC_CLOCK_START_S) if summary.tpmc is not None else ("sysbench", 0.0)
    # sysbench stops at --time and reports a little more; less is a run cut short. More than the
    # slack is a stall (a stopped server, an overloaded host) that its figures would hide.
    if ran < duration_s * 0.99 - 0.1 - late or ran > duration_s + max(3.0, duration_s * 0.1):
        return f"{tool} ran {ran:.3g} s for a {duration_s} s step"
    expected = duration_s // report_interval_s
    samples = len([s for s in output.samples if s.step == step])
    if abs(samples - expected) > max(2, expected // 10):
        return f"{samples} per-second samples for a {duration_s} s step (expected about {expected})"
    return None
