"""go-tpc (github.com/pingcap/go-tpc, pinned in workloads/gotpc/go.mod): the command builder and the one
output parser for its TPC-C workload.

Shipped next to the agent like benchfleet/workload/sysbench.py, so it is standard library only and Python 3.8
compatible. go-tpc 1.0.7 prints, every ``--interval``, one ``[Current]`` line per transaction type that
completed any (DELIVERY, NEW_ORDER, ORDER_STATUS, PAYMENT, STOCK_LEVEL, and ``<TYPE>_ERR`` for those that
failed), in that sorted order; at the end ``Finished``, one ``[Summary]`` line per type over the whole
run and ``tpmC: <New-Order per minute>, efficiency: <%>``. Each type line carries Takes(s) (the seconds
it covers, to 0.1), Count, TPM, Sum/Avg (ms), the 50th/90th/95th/99th/99.9th percentiles and Max (ms),
from go-tpc's HDR histogram of that interval or of the run. It prints no time stamps: an interval's
place is its order. Failures: ``execute run failed, err ...`` (go-tpc then stops, still exiting 0 with
a summary of what it did), ``Got signal [...] to exit.`` (stopped from outside: the summary that
follows covers a step cut short).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

__all__ = ["NEW_ORDER", "PERCENTILES", "GoTpcOutput", "GoTpcParseError", "TxLine", "build_command",
           "interval_fields", "parse_line", "parse_output", "summary_fields"]

NEW_ORDER = "NEW_ORDER"
# The percentiles go-tpc prints, as benchfleet's keys (latency_percentiles_ms) name them.
PERCENTILES = ("50", "90", "95", "99", "99.9")
# The workload's percentile (the one per-second latency) must be one go-tpc prints.
WORKLOAD_PERCENTILES = (50, 90, 95, 99)
MAX_WAREHOUSES = 10_000

_F = r"[0-9]+(?:\.[0-9]+)?"
_TX = re.compile(
    rf"^\[(?P<kind>Current|Summary)\]\s+(?P<name>[A-Z][A-Z_]*)\s+-\s+Takes\(s\):\s*(?P<takes>{_F}),\s*"
    rf"Count:\s*(?P<count>\d+),\s*TPM:\s*(?P<tpm>{_F}),\s*Sum\(ms\):\s*(?P<sum>{_F}),\s*Avg\(ms\):\s*(?P<avg>{_F}),\s*"
    rf"50th\(ms\):\s*(?P<p50>{_F}),\s*90th\(ms\):\s*(?P<p90>{_F}),\s*95th\(ms\):\s*(?P<p95>{_F}),\s*"
    rf"99th\(ms\):\s*(?P<p99>{_F}),\s*99\.9th\(ms\):\s*(?P<p999>{_F}),\s*Max\(ms\):\s*(?P<max>{_F})\s*$")
_TPMC = re.compile(rf"^tpmC:\s*(?P<tpmc>{_F}),\s*efficiency:\s*(?P<eff>{_F})%\s*$")
_FAILED = re.compile(r"^(?:\[[0-9: -]+\]\s*)?execute (?:run|prepare|check) failed|^panic:|^Error:|\bfailed\b.*\berr\b")
_SIGNAL = re.compile(r"^Got signal \[(?P<signal>[^\]]{1,40})\] to exit")
# What a TPC-C mix meets under contention and retries by itself (the agent runs go-tpc with --ignore-error,
# so the thread goes on): deadlocks and lock wait timeouts, counted in <TYPE>_ERR. sysbench's default
# --mysql-ignore-errors treats the same two alike. Any other failure ends the step.
TOLERATED_ERRORS = ("Error 1213", "Error 1205")
MAX_LINE_CHARS = 1 << 20


class GoTpcParseError(ValueError):
    """Output that cannot be read as go-tpc 1.0.x output, naming the line."""


@dataclass
class TxLine:
    """One transaction type's line: its figures over an interval (``Current``) or the run (``Summary``)."""

    kind: str
    name: str
    takes_s: float
    count: int
    tpm: float
    sum_ms: float
    avg_ms: float
    percentiles_ms: Dict[str, float]
    max_ms: float

    @property
    def failed(self) -> bool:
        """A ``<TYPE>_ERR`` line: the transactions of that type go-tpc counted as failed."""
        return self.name.endswith("_ERR")

    def distribution(self) -> Dict[str, float]:
        """latency_percentiles_ms: the percentiles and max, as benchfleet stores every step's."""
        return dict(self.percentiles_ms, max=self.max_ms)


@dataclass
class GoTpcOutput:
    intervals: List[List[TxLine]] = field(default_factory=list)
    summary: List[TxLine] = field(default_factory=list)
    tpmc: Optional[float] = None
    finished: bool = False
    errors: List[str] = field(default_factory=list)
    tolerated: int = 0  # deadlocks and lock wait timeouts go-tpc reported (TOLERATED_ERRORS)
    stopped_by: Optional[str] = None


def parse_line(line: str) -> Optional[TxLine]:
    """One ``[Current]`` or ``[Summary]`` line; None for any other line."""
    m = _TX.match(line.strip())
    if not m:
        return None
    g = m.groupdict()
    return TxLine(kind=g["kind"], name=g["name"], takes_s=float(g["takes"]), count=int(g["count"]),
                  tpm=float(g["tpm"]), sum_ms=float(g["sum"]), avg_ms=float(g["avg"]),
                  percentiles_ms={"50": float(g["p50"]), "90": float(g["p90"]), "95": float(g["p95"]),
                                  "99": float(g["p99"]), "99.9": float(g["p999"])},
                  max_ms=float(g["max"]))


class IntervalGrouper:
    """``[Current]`` lines into intervals: go-tpc prints each interval's types in sorted order, so a type
    not after the previous one (or one seen already) starts the next interval. ``feed`` returns the
    interval a line completed, which is known only when the next one starts (or at ``flush``)."""

    def __init__(self) -> None:
        self.current: List[TxLine] = []

    def feed(self, tx: TxLine) -> Optional[List[TxLine]]:
        done = None
        if self.current and tx.name <= self.current[-1].name:
            done, self.current = self.current, []
        self.current.append(tx)
        return done

    def flush(self) -> Optional[List[TxLine]]:
        done, self.current = self.current, []
        return done or None


def parse_output(text: Union[str, Iterable[str]]) -> GoTpcOutput:
    """A whole ``go-tpc tpcc run`` output (a string or lines). Failures are kept in ``errors`` and a stop
    from outside in ``stopped_by``, not raised: the caller decides the step failed. A line that is not
    go-tpc's is ignored (the driver's own log lines); one too long to be go-tpc's is an error."""
    out = GoTpcOutput()
    grouper = IntervalGrouper()
    lines = text.splitlines() if isinstance(text, str) else text
    for number, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_CHARS:
            raise GoTpcParseError("line {}: a line of {:,}+ characters is not go-tpc output".format(
                number, MAX_LINE_CHARS))
        line = raw.strip()
        tx = parse_line(line)
        if tx is not None:
            if tx.kind == "Current":
                if out.finished:
                    raise GoTpcParseError("line {}: an interval after the summary: the output of two runs"
                                          .format(number))
                done = grouper.feed(tx)
                if done:
                    out.intervals.append(done)
            else:
                out.summary.append(tx)
            continue
        if line == "Finished":
            if out.finished:
                raise GoTpcParseError("line {}: a second 'Finished': the output of two runs".format(number))
            out.finished = True
            last = grouper.flush()
            if last:
                out.intervals.append(last)
            continue
        m = _TPMC.match(line)
        if m:
            out.tpmc = float(m.group("tpmc"))
            continue
        m = _SIGNAL.match(line)
        if m:
            out.stopped_by = m.group("signal")
            continue
        if _FAILED.search(line):
            if any(code in line for code in TOLERATED_ERRORS):
                out.tolerated += 1
            elif len(out.errors) < 20:
                out.errors.append(line[:2000])
    last = grouper.flush()
    if last:
        out.intervals.append(last)
    return out


def _per_s(tx: TxLine) -> float:
    return round(tx.tpm / 60.0, 4)


def interval_fields(interval: List[TxLine], percentile: int) -> Dict[str, Any]:
    """A sample's figures from one interval: ``tps`` is New-Order transactions per second (tpmC / 60: the
    TPC-C figure, which every benchfleet verdict compares), ``tpmc`` New-Order per minute, ``tx_per_s``
    every type's rate (failed ones as ``<TYPE>_ERR``), ``errors_per_s`` the failed ones together and
    ``latency_ms`` New-Order's ``percentile`` in the interval. Rates are go-tpc's TPM (over the exact
    time each type's histogram covers), not Count over the rounded Takes(s)."""
    by_name = {tx.name: tx for tx in interval}
    new_order = by_name.get(NEW_ORDER)
    key = "{:g}".format(percentile)
    return {
        "tps": _per_s(new_order) if new_order else 0.0,
        "tpmc": new_order.tpm if new_order else 0.0,
        "tx_per_s": {name: _per_s(tx) for name, tx in sorted(by_name.items())},
        "errors_per_s": round(sum(_per_s(tx) for tx in interval if tx.failed), 4),
        "latency_ms": new_order.percentiles_ms[key] if new_order else 0.0,
        "latency_pct": percentile,
    }


def summary_fields(out: GoTpcOutput, percentile: int) -> Optional[Dict[str, Any]]:
    """The step summary from go-tpc's own figures over the run (None without New-Order in its summary).

    ``transactions``/``tps``: New-Order's count and tpmC / 60 (``tpmc``: go-tpc's tpmC line);
    ``total_time_s``: the seconds that count covers at that rate (Count / (TPM / 60), exact where
    Takes(s) is rounded to 0.1 s); ``events``: transactions of every type that completed;
    ``ignored_errors``/``errors_per_s``: the failed ones; latency: New-Order's (its ``percentile``, avg,
    max and ``latency_percentiles_ms``). What go-tpc does not measure (queries, reads, writes, other,
    reconnects, the minimum latency) is None, never 0."""
    by_name = {tx.name: tx for tx in out.summary}
    new_order = by_name.get(NEW_ORDER)
    if new_order is None or new_order.count == 0 or new_order.tpm <= 0:
        return None
    tpmc = out.tpmc if out.tpmc is not None else new_order.tpm
    total = round(new_order.count / (new_order.tpm / 60.0), 3)
    failed = [tx for tx in out.summary if tx.failed]
    key = "{:g}".format(percentile)
    return {
        "total_time_s": total, "transactions": new_order.count, "tps": round(tpmc / 60.0, 4), "tpmc": tpmc,
        "events": sum(tx.count for tx in out.summary if not tx.failed),
        "ignored_errors": sum(tx.count for tx in failed),
        "errors_per_s": round(sum(tx.count for tx in failed) / total, 4),
        "queries": None, "qps": None, "reads": None, "writes": None, "other": None,
        "reconnects": None, "reconnects_per_s": None,
        "latency_min_ms": None, "latency_avg_ms": new_order.avg_ms, "latency_max_ms": new_order.max_ms,
        "latency_pct": percentile, "latency_pct_ms": new_order.percentiles_ms[key],
        "latency_percentiles_ms": new_order.distribution(),
        "tx_per_s": {name: _per_s(tx) for name, tx in sorted(by_name.items())},
    }


_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$")
_DB = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def build_command(binary: str, command: str, *, warehouses: int, threads: int, db: Mapping[str, Any],
                  time_s: Optional[int] = None, interval_s: Optional[int] = None) -> List[str]:
    """argv of ``go-tpc tpcc <command>`` (prepare, run or cleanup), never through a shell. go-tpc 1.0.7 reads the
    password only from its command line (no option file): it is visible in the host's process list for
    the step, which on a benchmark host holds nobody else's processes."""
    if command not in ("prepare", "run", "cleanup"):
        raise ValueError("invalid go-tpc command: {!r}".format(command))
    if not (isinstance(warehouses, int) and 1 <= warehouses <= MAX_WAREHOUSES):
        raise ValueError("invalid warehouses: {!r}".format(warehouses))
    host, database = str(db.get("host") or "127.0.0.1"), str(db.get("database") or "")
    if not _HOST.match(host) or not _DB.match(database):
        raise ValueError("invalid go-tpc host or database: {!r} {!r}".format(host, database))
    argv = [binary, "tpcc", "--warehouses", str(warehouses), "--host", host, "--port", str(int(db["port"])),
            "--user", str(db["user"]), "--password", str(db.get("password") or ""), "--db", database,
            "--threads", str(threads)]
    if command == "run":
        # Without it a thread whose transaction fails stops for good, and the step goes on with fewer
        # threads than it says; with it the failure is printed and counted, and the agent ends the step
        # on any but TOLERATED_ERRORS.
        argv.append("--ignore-error")
    if command == "run":
        argv += ["--time", "{}s".format(int(time_s or 0)), "--interval", "{}s".format(int(interval_s or 1))]
    return [*argv, command]
