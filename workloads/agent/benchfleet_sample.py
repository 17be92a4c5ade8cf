"""The agent's sampling: what it reads while a step's tool runs, one sample per interval the tool reports.

sysbench (``read_sysbench``) and go-tpc (``read_gotpc``) print a report per interval. As each report
arrives the agent reads the CPU times (``CpuTimes``: /proc/stat's aggregate line, one pread) and the
data directory's disk (benchfleet_diskstats) and counts the rows in the table (benchfleet_rows), and
emits a ``sample`` record with the tool's rates beside those readings over the same interval and the
interval's length as the agent saw it arrive (``arrived_s``). When the tool ends, the same reader
emits the step's ``summary`` from the tool's own final figures, or the error that fails the step.
The server status read beside it every second, on a thread of its own, is benchfleet_status's
StatusPoller, which benchfleet_run starts and stops around the step.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import time
from typing import Any, Deque, Dict, Iterator, List, Optional, Tuple

import benchfleet_diskstats
import benchfleet_rows
import benchfleet_status
from benchfleet.workload import gotpc
from benchfleet.workload.sysbench import (
    MAX_LINE_CHARS,
    Interval,
    SysbenchParseError,
    parse_interval,
    parse_output,
)
from benchfleet_emit import Emitter

# The line sysbench prints as its run's clock starts (sysbench.c, threads_started_callback).
THREADS_STARTED = "Threads started!"
# sysbench's run output kept for its summary: its header, and enough of its end for the summary and
# a latency histogram (a few hundred lines).
KEPT_HEAD_LINES = 100
KEPT_TAIL_LINES = 2000
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class CpuTimes:
    """The aggregate ``cpu`` line of /proc/stat, read once per sample for the agent's whole step.

    The file stays open and each reading is one pread of its head: no open/close and no file object
    per second, which is most of what sampling costs the host (the agent's CPU share per measured
    second is what tests/perf/harness_overhead.py prints as ``agent_cpu_share``)."""

    # The aggregate line is the first; 10 counters of at most 20 digits fit well inside this.
    HEAD_BYTES = 512

    def __init__(self, path: str = "/proc/stat") -> None:
        try:
            self.fd: Optional[int] = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def read(self) -> Optional[List[int]]:
        """The counters as jiffies (user, nice, system, idle, iowait, irq, softirq, steal), or None
        where there is no /proc."""
        if self.fd is None:
            return None
        try:
            head = os.pread(self.fd, self.HEAD_BYTES, 0)
        except OSError:
            return None
        first = head.split(b"\n", 1)[0].split()
        if not first or first[0] != b"cpu":
            return None
        values = [int(v) for v in first[1:9]]
        values += [0] * (8 - len(values))
        return values

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_cpu_times(path: str = "/proc/stat") -> Optional[List[int]]:
    """One reading of the aggregate ``cpu`` line of /proc/stat as jiffies, or None without /proc."""
    reader = CpuTimes(path)
    try:
        return reader.read()
    finally:
        reader.close()


def cpu_percentages(before: Optional[List[int]], after: Optional[List[int]]) -> Dict[str, Optional[float]]:
    """Share of all CPU time between two readings spent in steal, user (+nice), system (+irq), iowait."""
    empty = {"cpu_steal_pct": None, "cpu_user_pct": None, "cpu_system_pct": None, "cpu_iowait_pct": None}
    if before is None or after is None:
        return empty
    delta = dict(zip(_CPU_FIELDS, (a - b for a, b in zip(after, before))))
    total = sum(delta.values())
    if total <= 0:
        return empty

    def pct(*names: str) -> float:
        return round(100.0 * sum(delta[n] for n in names) / total, 3)

    return {"cpu_steal_pct": pct("steal"), "cpu_user_pct": pct("user", "nice"),
            "cpu_system_pct": pct("system", "irq", "softirq"), "cpu_iowait_pct": pct("iowait")}


class Meters:
    """What the agent reads each time sysbench reports, beside its rates: the CPU times and the data
    directory's disk (each with its previous reading) and the rows in the table."""

    def __init__(self, cpu: CpuTimes, before: Optional[List[int]], disk: "benchfleet_diskstats.DiskStats",
                 disk_before: "Optional[benchfleet_diskstats.Reading]", rows: "benchfleet_rows.RowCounter",
                 rows_at_start: Optional[float]) -> None:
        self.cpu, self.before, self.disk, self.disk_before = cpu, before, disk, disk_before
        self.rows, self.rows_at_start = rows, rows_at_start


class ToolOutput:
    """What a measuring tool (sysbench or go-tpc) prints, read line by line as it arrives and kept for its
    final summary and an error's tail: the head (its options) and the last lines, never all of a step's
    output in memory. A line longer than MAX_LINE_CHARS is not the tool's output: the tool is killed and
    the reading ends with ``too_long`` set."""

    def __init__(self, tool: str, proc: "subprocess.Popen[str]") -> None:
        self.tool, self.proc = tool, proc
        self.head: List[str] = []
        self.tail: Deque[str] = collections.deque(maxlen=KEPT_TAIL_LINES)
        self.too_long = False

    def lines(self) -> Iterator[Tuple[str, float]]:
        """Each line with the monotonic time it arrived."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline(MAX_LINE_CHARS + 1)
            if not line:
                return
            arrived = time.monotonic()
            if len(line) > MAX_LINE_CHARS:
                self.proc.kill()
                self.proc.wait()
                self.too_long = True
                return
            (self.head if len(self.head) < KEPT_HEAD_LINES else self.tail).append(line)
            yield line, arrived

    def text(self) -> str:
        return "".join(self.head) + "".join(self.tail)

    def too_long_error(self, emit: Emitter) -> int:
        return emit.error("run", "{} printed a line of more than {:,} characters: not {} output".format(
            self.tool, MAX_LINE_CHARS, self.tool), output_tail="".join(self.tail)[-4000:])


@contextlib.contextmanager
def reading(proc: "subprocess.Popen[str]", cpu: CpuTimes) -> Iterator[None]:
    """While a tool's output is read. Stopped from outside (Ctrl-C, SIGTERM from the runner or SSM), the
    tool must not outlive the agent; the CPU meter's file is closed either way."""
    try:
        yield
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    finally:
        cpu.close()


class Ended:
    """A measuring tool that has ended: its exit code and what it printed (ToolOutput.text), the cluster
    status poller stopped; ``problem`` is the error record to return when the poller found one."""

    def __init__(self, output: ToolOutput, poller: Optional[benchfleet_status.StatusPoller], emit: Emitter) -> None:
        self.emit = emit
        self.code = output.proc.wait()
        self.text = output.text()
        self.problem: Optional[int] = None
        if poller is not None:
            poller.stop()
            poller.join()
            if poller.problem:
                self.problem = emit.error("cluster", poller.problem, exit_code=self.code,
                                          output_tail=self.text[-4000:])

    def failed(self, message: str) -> int:
        """The step's error record: ``message``, the tool's exit code and the end of what it printed."""
        return self.emit.error("run", message, exit_code=self.code, output_tail=self.text[-4000:])


def read_sysbench(job: Dict[str, Any], emit: Emitter, proc: "subprocess.Popen[str]", meters: Meters,
                   started: float, duration: int,
                   poller: Optional[benchfleet_status.StatusPoller], settings: Optional[Dict[str, Any]]) -> int:
    cpu, before, disk, disk_before = meters.cpu, meters.before, meters.disk, meters.disk_before
    rows, rows_at_start = meters.rows, meters.rows_at_start
    output = ToolOutput("sysbench", proc)
    failures: List[str] = []
    # sysbench writes unbuffered and starts its clock as it prints "Threads started!"; each report's
    # rates are over the real time since the previous report, but it prints that time rounded to the
    # second. The agent sees each line arrive, so it measures the seconds every report covers
    # (``arrived_s``: since "Threads started!" arrived, on the monotonic clock).
    threads_started: Optional[float] = None
    with reading(proc, cpu):
        for line, arrived in output.lines():
            if ("FATAL" in line or line.startswith("ALERT")) and len(failures) < 5:
                failures.append(line.strip())  # even from the middle of a long step's output
            if threads_started is None and line.startswith(THREADS_STARTED):
                threads_started = arrived
                continue
            interval = parse_interval(line)
            if interval is None:
                continue
            # Sampled when sysbench reports, so each CPU and disk figure covers the same second as the rates.
            after, disk_after = cpu.read(), disk.read()
            elapsed = round(arrived - threads_started, 6) if threads_started is not None else None
            emit.emit("sample", time=time.time(), arrived_s=elapsed, **_sample_fields(interval),
                      **cpu_percentages(before, after), **benchfleet_diskstats.disk_rates(disk_before, disk_after),
                      rows_in_table=rows.sample(interval.second, interval.tps))
            before, disk_before = after, disk_after
    if output.too_long:
        return output.too_long_error(emit)
    ended = Ended(output, poller, emit)
    if ended.problem is not None:
        return ended.problem
    try:
        parsed = parse_output(ended.text)
    except SysbenchParseError as e:
        return ended.failed("sysbench's output cannot be read: {}".format(e))
    errors = parsed.errors + [f for f in failures if f not in parsed.errors]
    if ended.code != 0 or errors:
        return ended.failed("; ".join(errors[:5]) or "sysbench exited with code {}".format(ended.code))
    if parsed.summary is None:
        return ended.failed("sysbench printed no final summary")
    if parsed.summary.events == 0:
        return ended.failed("sysbench completed no event in {} s".format(duration))
    fields = dict(parsed.summary.__dict__)
    if settings is not None:
        fields["settings"] = settings
    rows.finish(int(fields.get("transactions") or 0), rows_at_start)
    emit.emit("summary", time=time.time(), started=started, sysbench_version=parsed.version,
              histogram=parsed.histogram or None, **fields)
    return 0


def read_gotpc(job: Dict[str, Any], emit: Emitter, proc: "subprocess.Popen[str]", meters: Meters,
                started: float, duration: int,
                poller: Optional[benchfleet_status.StatusPoller], settings: Optional[Dict[str, Any]]) -> int:
    """go-tpc's step, read as it prints (benchfleet.workload.gotpc): a sample per interval with the CPU and disk
    read as the interval's first line arrives (its lines come together, an interval after the one
    before; go-tpc prints no time stamps), then its summary."""
    cpu, before, disk, disk_before = meters.cpu, meters.before, meters.disk, meters.disk_before
    every = int(job.get("report_interval_s") or 1)
    percentile = int(job["gotpc"]["percentile"])
    output = ToolOutput("go-tpc", proc)
    grouper = gotpc.IntervalGrouper()
    opened: Optional[Tuple[float, Any, Any]] = None  # the interval being printed: its arrival, CPU, disk
    count = 0
    clock = time.monotonic()  # go-tpc's clock starts as it starts: it prints nothing before its first interval

    def emit_interval(lines: List[gotpc.TxLine], at: Tuple[float, Any, Any]) -> None:
        nonlocal before, disk_before, count
        count += 1
        emit.emit("sample", time=time.time(), arrived_s=round(at[0] - clock, 6), second=float(count * every),
                  qps=None, reads_per_s=None, writes_per_s=None, other_per_s=None, reconnects_per_s=None,
                  **gotpc.interval_fields(lines, percentile), **cpu_percentages(before, at[1]),
                  **benchfleet_diskstats.disk_rates(disk_before, at[2]), rows_in_table=None)
        before, disk_before = at[1], at[2]

    with reading(proc, cpu):
        for line, arrived in output.lines():
            tx = gotpc.parse_line(line)
            if tx is None or tx.kind != "Current":
                if line.strip() == "Finished" and opened is not None:
                    done = grouper.flush()
                    if done:
                        emit_interval(done, opened)
                    opened = None
                continue
            done = grouper.feed(tx)
            if done is not None or opened is None:
                if done is not None and opened is not None:
                    emit_interval(done, opened)
                opened = (arrived, cpu.read(), disk.read())
    if output.too_long:
        return output.too_long_error(emit)
    ended = Ended(output, poller, emit)
    if ended.problem is not None:
        return ended.problem
    try:
        parsed = gotpc.parse_output(ended.text)
    except gotpc.GoTpcParseError as e:
        return ended.failed("go-tpc's output cannot be read: {}".format(e))
    if parsed.stopped_by:
        return ended.failed("go-tpc was stopped ({}) before its {} s: its figures cover less".format(
            parsed.stopped_by, duration))
    if ended.code != 0 or parsed.errors:
        return ended.failed("; ".join(parsed.errors[:5]) or "go-tpc exited with code {}".format(ended.code))
    fields = gotpc.summary_fields(parsed, percentile) if parsed.finished else None
    if fields is None:
        return ended.failed("go-tpc printed no summary with New-Order transactions")
    if settings is not None:
        fields["settings"] = settings
    emit.emit("summary", time=time.time(), started=started, sysbench_version=None,
              report_interval_s=every, tolerated_errors=parsed.tolerated, **fields)
    return 0


def _sample_fields(interval: Interval) -> Dict[str, Any]:
    return {"second": interval.second, "tps": interval.tps, "qps": interval.qps,
            "reads_per_s": interval.reads_per_s, "writes_per_s": interval.writes_per_s,
            "other_per_s": interval.other_per_s, "latency_ms": interval.latency_ms,
            "latency_pct": interval.latency_pct, "errors_per_s": interval.errors_per_s,
            "reconnects_per_s": interval.reconnects_per_s}
