"""sysbench 1.0.x: the command builder and the one output parser.

This module is shipped next to the agent (workloads/agent/) and runs on benchmark targets, so it is
standard library only and stays Python 3.8 compatible (no ``match``, no ``X | Y`` at run time).

The parser understands what sysbench 1.0.x prints for ``run``:
- interval lines (``--report-interval``), with any ``--percentile`` and with ``--rate`` queue lines;
- the final summary (SQL statistics, General statistics, Latency, Threads fairness);
- the latency histogram (``--histogram=on``);
- FATAL/ALERT lines, which are failures even when sysbench exits 0.

It reads line by line (a file object streams; a multi-gigabyte log is never held whole), every pattern
is linear in the length of a line, and a number it cannot read is a SysbenchParseError naming the line.

Why one module: it is shipped to the hosts as one file next to the agent, and the command builder
and the parser share the tables of tests, options and output patterns of one sysbench version.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "BUILTIN_TESTS",
    "LATENCY_DISTRIBUTION_KEYS",
    "OPTION_VALUES",
    "TABLE_MARKER",
    "TEST_OPTIONS",
    "Interval",
    "OptionValue",
    "Summary",
    "SysbenchOutput",
    "SysbenchParseError",
    "build_command",
    "histogram_percentile",
    "interval_lengths",
    "latency_distribution",
    "option_refusal",
    "parse_interval",
    "parse_output",
    "script_option_refusal",
    "step_accounting",
    "tcp_host",
]

# Option names sysbench accepts are lower-case words joined by dashes or underscores; anything else
# (spaces, '=', shell metacharacters) is refused before it could reach a command line.
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_TEST_NAME = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")
_COMMANDS = ("prepare", "run", "cleanup", "help")

# sysbench 1.0.20's database workloads (its /usr/share/sysbench scripts; oltp_common is the module
# they share, not a workload, and cpu / fileio / memory / threads / mutex measure no database).
BUILTIN_TESTS = ("bulk_insert", "oltp_delete", "oltp_insert", "oltp_point_select", "oltp_read_only",
                 "oltp_read_write", "oltp_update_index", "oltp_update_non_index", "oltp_write_only",
                 "select_random_points", "select_random_ranges")

# The rule for sysbench options a workload (or a variant) may give, shared by benchfleet.spec.loading (validate,
# the API, Plan) and the agent, which enforces it again on every job. Names are compared with dashes
# (sysbench reads table_size and table-size alike).
#
# Set by the agent for every step, from the step and the target: never from a job's options.
AGENT_OPTIONS = frozenset({
    "threads", "num-threads", "time", "max-time", "report-interval", "config-file",
    "mysql-host", "mysql-port", "mysql-socket", "mysql-user", "mysql-password", "mysql-db",
})
# Set from the workload's own keys (tables, table_size, percentile, rand_type): in a job, never in a spec.
WORKLOAD_KEY_OPTIONS = frozenset({"tables", "table-size", "percentile", "rand-type"})
# Would fake the figures, end the step early, change what the agent parses, or connect elsewhere.
MEASUREMENT_OPTIONS = frozenset({
    "mysql-dry-run", "events", "max-requests", "warmup-time", "forced-shutdown", "report-checkpoints",
    "histogram", "verbosity", "debug", "db-debug", "mysql-debug", "help", "version", "db-driver",
    "luajit-cmd",
})
# TLS is the target's setting (db.tls); PostgreSQL options would point a pgsql driver elsewhere.
MEASUREMENT_PREFIXES = ("pgsql-", "mysql-ssl")


# The script options each test reads, dash-spelled: ``sysbench.opt.<name>`` in its script and in the
# oltp_common.lua functions it runs (prepare creates the tables: auto-inc, secondary, create-secondary,
# mysql-storage-engine), for sysbench 1.0.20's scripts and benchfleet's workloads/lua (its own and
# benchfleet_common.lua's). Every script that requires oltp_common *defines* all of oltp_common's
# options, so sysbench takes --range-size on oltp_insert and ignores it: the spec refuses it instead
# (``script_option_refusal``). Derived once from the scripts; tests/unit/test_sysbench_test_options.py
# derives it again from the installed scripts and workloads/lua and compares.
_OLTP_TABLES = ("tables", "table-size", "auto-inc", "secondary", "create-secondary", "mysql-storage-engine")
_OLTP_RANGES = ("range-selects", "range-size", "simple-ranges", "sum-ranges", "order-ranges", "distinct-ranges")
_OLTP_WRITES = ("index-updates", "non-index-updates", "delete-inserts")
_OURS = ("tables", "table-size", "prepare-batch", "mysql-storage-engine")
TEST_OPTIONS: Dict[str, FrozenSet[str]] = {name: frozenset(options) for name, options in {
    "bulk_insert": (),
    "oltp_delete": _OLTP_TABLES,
    "oltp_insert": _OLTP_TABLES,
    "oltp_point_select": (*_OLTP_TABLES, "point-selects"),
    "oltp_read_only": (*_OLTP_TABLES, "point-selects", "skip-trx", *_OLTP_RANGES),
    "oltp_read_write": (*_OLTP_TABLES, "point-selects", "skip-trx", *_OLTP_RANGES, *_OLTP_WRITES),
    "oltp_update_index": (*_OLTP_TABLES, "index-updates"),
    "oltp_update_non_index": (*_OLTP_TABLES, "non-index-updates"),
    "oltp_write_only": (*_OLTP_TABLES, "skip-trx", *_OLTP_WRITES),
    "select_random_points": (*_OLTP_TABLES, "random-points"),
    "select_random_ranges": (*_OLTP_TABLES, "number-of-ranges", "delta"),
    "lua/iibench.lua": (*_OURS, "secondary-indexes", "partition-rows", "partitions"),
    "lua/insert_pk_random.lua": _OURS,
    "lua/insert_pk_seq.lua": _OURS,
}.items()}
# Options some script defines: the others (rate, rand-*, db-ps-mode, mysql-ignore-errors, ...) are
# sysbench's own and apply to every test.
SCRIPT_OPTIONS = frozenset().union(*TEST_OPTIONS.values(), ("pgsql-variant",))


def script_option_refusal(test: str, name: str) -> Optional[str]:
    """Why a workload running ``test`` may not give script option ``name`` (None: it may, or the test
    is a Lua script of the user's own, whose options only sysbench knows)."""
    option = name.replace("_", "-")
    reads = TEST_OPTIONS.get(test)
    if reads is None or option not in SCRIPT_OPTIONS or option in reads:
        return None
    given = sorted(o for o in reads if o not in WORKLOAD_KEY_OPTIONS)
    return ("{} is not an option of {} (sysbench would take it and ignore it, or refuse it); {} reads {}"
            .format(name, test, test, ", ".join(given) if given else "none a workload gives"))


# The comment on every table benchfleet's prepare step created on a server it did not set up (an
# existing server): only tables that carry it are benchfleet's to clean up and drop. A table of a
# benchfleet name without it (the user's own sbtest1) makes the run refuse before anything is written.
TABLE_MARKER = "benchfleet:"


def tcp_host(host: str) -> str:
    """The address sysbench and the mysql clients are given for ``host``. Their client libraries read
    ``localhost`` as "the default Unix socket", whatever the port: a run given localhost and a port
    was checked over TCP and measured another server through the socket. benchfleet speaks TCP
    everywhere, so ``localhost`` is 127.0.0.1."""
    return "127.0.0.1" if host.strip().lower() == "localhost" else host


@dataclass(frozen=True)
class OptionValue:
    """What one sysbench option takes: ``kind`` is ``int`` (a whole number from ``low`` to ``high``),
    ``number`` (any from ``low`` to ``high``), ``bool`` (on/off, or true/false), ``choice`` (one of
    ``choices``) or ``text`` (matching ``pattern``); ``note`` says what the values mean."""

    kind: str
    low: float = 0
    high: float = 0
    choices: Tuple[str, ...] = ()
    pattern: str = ""
    note: str = ""

    def accepted(self) -> str:
        """The accepted values, in words."""
        if self.kind == "int":
            return "a whole number from {:,} to {:,}".format(int(self.low), int(self.high))
        if self.kind == "number":
            return "a number from {} to {}".format(self.low, self.high)
        if self.kind == "bool":
            return "true or false (on/off)"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        return self.note

    def problem(self, value: Any) -> Optional[str]:
        """Why ``value`` is not one this option takes (None: it is)."""
        if self.kind == "bool":
            ok = isinstance(value, bool) or value in ("on", "off")
        elif self.kind in ("int", "number"):
            number = isinstance(value, int) or (self.kind == "number" and isinstance(value, float))
            ok = number and not isinstance(value, bool) and self.low <= value <= self.high
        elif self.kind == "choice":
            ok = value in self.choices
        else:
            ok = isinstance(value, str) and re.match(self.pattern, value) is not None
        return None if ok else "{!r} is not {}".format(value, self.accepted())


def _int(low: int, high: int, note: str = "") -> OptionValue:
    return OptionValue("int", low, high, note=note)


_BOOL = OptionValue("bool")
_INT_MAX = 2**31 - 1
# The per-transaction query counts of sysbench's OLTP scripts: past 10,000 one transaction is a step.
_QUERIES = _int(0, 10_000)

# The value of every option a workload may give, and of the workload keys a job passes as options, as
# sysbench 1.0.20 reads them (src/sysbench.c, sb_options.c, sb_rand.c, lua/oltp_common.lua and
# benchfleet's workloads/lua): C integer options go through strtol, which stops sysbench on a value
# beyond a C int or with a fraction, but takes a negative one (--rate=-5 dies mid-step: "event queue
# is full"); booleans are on/off/true/false/1/0; a Lua script's numbers go through strtod, which reads
# "abc" as 0 and 1e308 as such. So the ranges are checked here, and each extreme of each range runs
# (tests/integration/test_sysbench_option_values.py, on the real binary). An option not listed is one
# sysbench 1.0.20 refuses ("invalid option") or one benchfleet refuses above.
OPTION_VALUES: Dict[str, OptionValue] = {
    # General (sysbench.c). The event queue holds 131,072 events: a rate the server cannot keep up
    # with ends the step, sooner the higher it is.
    "rate": _int(0, 100_000, "transactions per second, 0: unlimited"),
    "tx-rate": _int(0, 100_000, "deprecated alias of rate"),
    "validate": _BOOL,
    # Random numbers (sb_rand.c): no range checks of its own.
    "rand-type": OptionValue("choice", choices=("uniform", "gaussian", "special", "pareto")),
    "rand-spec-iter": _int(1, 100),
    "rand-spec-pct": _int(0, 100),
    "rand-spec-res": _int(0, 100),
    "rand-seed": _int(0, _INT_MAX, "0: the current time"),
    "rand-pareto-h": OptionValue("number", 0.01, 0.99),
    "percentile": _int(1, 99),
    # The database driver (sb_db.c, drv_mysql.c).
    "db-ps-mode": OptionValue("choice", choices=("auto", "disable")),
    "mysql-ignore-errors": OptionValue("text", pattern=r"^(?:all|none|[1-9][0-9]{0,4}(?:,[1-9][0-9]{0,4}){0,31})$",
                                       note="all, none, or a comma-separated list of MySQL error codes"),
    "mysql-compression": _BOOL,
    # sysbench's OLTP scripts (oltp_common.lua and the select_random_* scripts).
    "tables": _int(1, 1000),
    "table-size": _int(1, 10_000_000_000),
    "point-selects": _QUERIES,
    "simple-ranges": _QUERIES,
    "sum-ranges": _QUERIES,
    "order-ranges": _QUERIES,
    "distinct-ranges": _QUERIES,
    "index-updates": _QUERIES,
    "non-index-updates": _QUERIES,
    "delete-inserts": _QUERIES,
    "range-size": _int(1, 1_000_000),
    "range-selects": _BOOL,
    "auto-inc": _BOOL,
    "skip-trx": _BOOL,
    "secondary": _BOOL,
    "create-secondary": _BOOL,
    "mysql-storage-engine": OptionValue("text", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$",
                                        note="a storage engine name, like innodb"),
    # Their parameters go through one LuaJIT unpack(): 8,000 points or 4,000 ranges (two values each)
    # stop sysbench 1.0.20 here ("too many results to unpack"); half that, for other LuaJIT builds.
    "random-points": _int(1, 4_000),
    "number-of-ranges": _int(1, 2_000),
    "delta": _int(1, 1_000_000),
    # benchfleet's own scripts (workloads/lua).
    "prepare-batch": _int(1, 10_000),
    "secondary-indexes": _int(0, 3),
    "partition-rows": _int(0, 10_000_000_000, "0: not partitioned"),
    "partitions": _int(1, 1000),
}


_NAME_ONLY = object()


def option_refusal(name: str, in_job: bool = False, value: Any = _NAME_ONLY) -> Optional[str]:
    """Why a workload may not give sysbench option ``name`` with ``value`` (None: it may; without a
    value, the name alone is judged). ``in_job``: the option is in an agent job, where the workload's
    own keys arrive as options (WORKLOAD_KEY_OPTIONS)."""
    option = name.replace("_", "-")
    if option in AGENT_OPTIONS:
        return "{} is set by benchfleet for every step (from the workload's keys and the target)".format(name)
    if option in WORKLOAD_KEY_OPTIONS and not in_job:
        return "{} must be set through the workload's own key ({})".format(name, option.replace("-", "_"))
    if option in MEASUREMENT_OPTIONS or option.startswith(MEASUREMENT_PREFIXES):
        return ("{} would change what is measured or where sysbench connects; benchfleet does not take it"
                .format(name))
    rule = OPTION_VALUES.get(option)
    if rule is None:
        return ("{} is not a sysbench 1.0.20 option benchfleet knows (sysbench refuses options its test "
                "does not define); see workloads/README.md for the options a workload may give".format(name))
    problem = None if value is _NAME_ONLY else rule.problem(value)
    if problem is not None:
        # Said where the option is named (workload.options.rate, sysbench.options.rate): not again here.
        return problem + (" ({})".format(rule.note) if rule.note and rule.kind != "text" else "")
    return None


class SysbenchParseError(ValueError):
    """sysbench output that cannot be read as sysbench 1.0.x output; ``line`` is the 1-based line
    number of the offending line when there is one."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__("line {}: {}".format(line, message) if line is not None else message)
        self.line = line
        self.reason = message


# A sysbench line is well under 1 KiB; a line over 1 MiB is not sysbench output, and reading it whole
# would let one line take all memory.
MAX_LINE_CHARS = 1 << 20


@dataclass
class Interval:
    """One ``--report-interval`` line: rates over the interval that ends at ``second``.

    ``latency_ms`` is the ``latency_pct`` percentile of the latencies of the events that completed
    in this interval (sysbench prints ``lat (ms,95%)``); ``latency_pct`` 0 means sysbench was run
    with ``--percentile=0`` and the figure is then meaningless (sysbench prints 0.00).
    """

    second: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    latency_pct: int
    latency_ms: float
    errors_per_s: float
    reconnects_per_s: float
    queue: Optional[int] = None
    concurrency: Optional[int] = None
    interval_s: Optional[float] = None  # seconds since the previous line's timestamp (set by parse_output)
    line: Optional[int] = None  # the 1-based line number it was read from (set by parse_output)


@dataclass
class Summary:
    """sysbench's own final figures for a whole run (exact over the run, not derived by us)."""

    reads: int = 0
    writes: int = 0
    other: int = 0
    total_queries: int = 0
    transactions: int = 0
    tps: float = 0.0
    queries: int = 0
    qps: float = 0.0
    ignored_errors: int = 0
    errors_per_s: float = 0.0
    reconnects: int = 0
    reconnects_per_s: float = 0.0
    total_time_s: float = 0.0
    events: int = 0
    latency_min_ms: float = 0.0
    latency_avg_ms: float = 0.0
    latency_max_ms: float = 0.0
    latency_pct: Optional[int] = None
    latency_pct_ms: Optional[float] = None
    latency_sum_ms: float = 0.0
    fairness_events_avg: Optional[float] = None
    fairness_events_stddev: Optional[float] = None
    fairness_time_avg_s: Optional[float] = None
    fairness_time_stddev_s: Optional[float] = None
    # From the latency histogram (--histogram=on; the agent asks for it on every step): the step's
    # latency distribution, keys LATENCY_DISTRIBUTION_KEYS. None without a histogram.
    latency_percentiles_ms: Optional[Dict[str, float]] = None
    # From the header ("Report intermediate results every N second(s)"), kept with the summary so that
    # whoever reads the summary alone (the agent's summary record) knows how many samples to expect.
    report_interval_s: Optional[int] = None


@dataclass
class SysbenchOutput:
    """Everything read from one sysbench invocation's output."""

    version: Optional[str] = None
    threads: Optional[int] = None
    report_interval_s: Optional[int] = None
    intervals: List[Interval] = field(default_factory=list)
    interval_count: int = 0
    summary: Optional[Summary] = None
    summary_missing: List[str] = field(default_factory=list)
    histogram: List[Tuple[float, int]] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    # Summary field -> the line it was read from, so a figure can be refused naming its line.
    summary_lines: Dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def build_command(
    test: str,
    command: str,
    options: Mapping[str, Any],
    sysbench: str = "sysbench",
) -> List[str]:
    """argv for ``sysbench TEST [--opt=value ...] COMMAND``; never passed through a shell.

    Booleans become ``on``/``off``, lists are comma-joined (``--mysql-host=a,b``), ``None`` drops the
    option. Names are checked so that a spec cannot smuggle extra arguments in.
    """
    if not _TEST_NAME.match(test) or test.startswith("-"):
        raise ValueError("invalid sysbench test name: {!r}".format(test))
    if command not in _COMMANDS:
        raise ValueError("invalid sysbench command: {!r}".format(command))
    argv = [sysbench, test]
    for name in sorted(options):
        value = options[name]
        if value is None:
            continue
        if not _OPTION_NAME.match(name):
            raise ValueError("invalid sysbench option name: {!r}".format(name))
        argv.append("--{}={}".format(name, _format_value(name, value)))
    argv.append(command)
    return argv


def _format_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(_format_value(name, v) for v in value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    if "\n" in text or "\0" in text:
        raise ValueError("invalid value for sysbench option {}: {!r}".format(name, text))
    return text


_F = r"[0-9]+(?:\.[0-9]+)?"
# A rate as sysbench prints it, or as no run prints it (a sign, an exponent, nan, inf): read, so that
# whoever stores the figures can refuse the line by its number instead of skipping it unseen.
_R = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|-?nan|-?inf"
_INTERVAL = re.compile(
    rf"^\[\s*(?P<second>{_F})s\s*\]\s+thds:\s*(?P<threads>\d+)\s+"
    rf"tps:\s*(?P<tps>{_R})\s+qps:\s*(?P<qps>{_R})\s+"
    rf"\(r/w/o:\s*(?P<r>{_R})/(?P<w>{_R})/(?P<o>{_R})\)\s+"
    rf"lat\s*\(ms,\s*(?P<pct>\d+)%\)\s*:\s*(?P<lat>{_F}|nan|-?inf|-{_F})\s+"
    rf"err/s:?\s*(?P<err>{_R})\s+reconn/s:?\s*(?P<reconn>{_R})"
)
_QUEUE = re.compile(r"^\[\s*(?P<second>[0-9.]+)s\s*\]\s+queue length:\s*(?P<q>\d+),\s*concurrency:\s*(?P<c>\d+)")
_VERSION = re.compile(r"^sysbench\s+(?P<v>\d+\.\d+\.\d+\S*)")
_THREADS = re.compile(r"^Number of threads:\s*(\d+)")
_REPORT_EVERY = re.compile(r"^Report intermediate results every\s+(\d+)\s+second")
_COUNT_RATE = re.compile(
    r"^\s*(?P<k>transactions|queries|ignored errors|reconnects):\s+(?P<n>\d+)\s+\((?P<r>[0-9.]+) per sec\.\)")
# Matched against stripped lines, so the value simply runs to the end: a lazy value followed by
# ``\s*$`` backtracks quadratically on a line with a long run of inner spaces.
_KEYVAL = re.compile(r"^(?P<k>[A-Za-z][A-Za-z ()/]*?):\s+(?P<v>\S.*)$")
_PERCENTILE = re.compile(r"^\s*(?P<p>\d+)th percentile:\s+(?P<v>[0-9.]+)")
_HIST_ROW = re.compile(r"^\s*(?P<v>[0-9.]+)\s+\|\**\s+(?P<n>\d+)\s*$")
_FAILURE = re.compile(r"^(?:FATAL|ALERT)\b|^\S.*\bFATAL:")


def parse_interval(line: str) -> Optional[Interval]:
    """Read one interval line; ``None`` for any other line (the agent feeds every line here)."""
    m = _INTERVAL.match(line.strip())
    if not m:
        return None
    lat = m.group("lat")
    return Interval(
        second=float(m.group("second")),
        threads=int(m.group("threads")),
        tps=float(m.group("tps")),
        qps=float(m.group("qps")),
        reads_per_s=float(m.group("r")),
        writes_per_s=float(m.group("w")),
        other_per_s=float(m.group("o")),
        latency_pct=int(m.group("pct")),
        # sysbench prints nan / inf for a second without events; a negative latency is kept, to be refused.
        latency_ms=float(lat) if lat[0].isdigit() or (lat[0] == "-" and lat[1:2].isdigit()) else 0.0,
        errors_per_s=float(m.group("err")),
        reconnects_per_s=float(m.group("reconn")),
    )


# What a complete final summary has: sysbench prints these lines last, so a log cut anywhere in its
# summary lacks at least one of them (``Threads fairness`` closes every 1.0.x summary).
_SUMMARY_REQUIRED = ("total time", "total number of events", "latency min", "latency avg", "latency max",
                     "latency sum", "fairness events", "fairness execution time")
_SQL_REQUIRED = ("transactions", "queries")


def parse_output(text: Union[str, Iterable[str]],
                 on_interval: Optional[Callable[[Interval], None]] = None) -> SysbenchOutput:
    """Parse a whole sysbench output (run log): a string or any iterable of lines (an open file
    streams). Raises SysbenchParseError if it is not sysbench's, naming the line of a number that
    cannot be read or of a line too long to be sysbench's.

    Each interval gets ``interval_s``, the seconds since the previous interval line (sysbench's
    timestamps; under load they are not one ``--report-interval`` apart). With ``on_interval`` the
    intervals are handed to it and not kept (``interval_count`` still counts them).

    ``summary`` is set only when the final summary is complete; a summary cut short leaves it None
    and names what is missing in ``summary_missing``. Failures sysbench printed are kept in
    ``errors`` rather than raised: the caller decides that an output with errors, or without a
    summary, is a failed step.
    """
    out = SysbenchOutput()
    summary = Summary()
    seen: set[str] = set()
    section = ""
    in_histogram = False
    recognised = False
    previous_second = 0.0
    in_callback = False
    lines = text.splitlines() if isinstance(text, str) else text
    number = 0
    for number, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_CHARS:
            raise SysbenchParseError("a line of {:,}+ characters is not sysbench output".format(
                MAX_LINE_CHARS), number)
        stripped = raw.strip()
        if not stripped:
            in_histogram = False
            continue
        try:
            interval = parse_interval(stripped)
            if interval is not None:
                recognised = True
                if interval.second < previous_second:
                    raise SysbenchParseError("an interval at {:g} s after one at {:g} s: the output of two runs "
                                             "in one log".format(interval.second, previous_second), number)
                interval.line = number
                interval.interval_s = round(interval.second - previous_second, 6)
                previous_second = interval.second
                out.interval_count += 1
                if on_interval is not None:
                    in_callback = True  # its own errors are its own, not this line's to rephrase
                    on_interval(interval)
                    in_callback = False
                else:
                    out.intervals.append(interval)
                continue
            queue = _QUEUE.match(stripped)
            if queue is not None:
                recognised = True
                _attach_queue(out.intervals, float(queue.group("second")), int(queue.group("q")),
                              int(queue.group("c")))
                continue
            if _FAILURE.search(stripped):
                out.errors.append(stripped)
                continue
            m = _VERSION.match(stripped)
            if m:
                if out.version is not None:
                    raise SysbenchParseError("a second sysbench header: the output of two runs in one log", number)
                recognised = True
                out.version = m.group("v")
                continue
            m = _THREADS.match(stripped)
            if m:
                out.threads = int(m.group(1))
                continue
            m = _REPORT_EVERY.match(stripped)
            if m:
                out.report_interval_s = int(m.group(1))
                continue
            if stripped.startswith("Latency histogram"):
                in_histogram = True
                recognised = True
                continue
            if in_histogram:
                row = _HIST_ROW.match(stripped)
                if row:
                    out.histogram.append((float(row.group("v")), int(row.group("n"))))
                continue
            if stripped.endswith(":") and not stripped.startswith("["):
                if stripped.lower() == "queries performed:":
                    continue  # a heading inside "SQL statistics", not a section of its own
                section = stripped[:-1].strip().lower()
                if section in ("sql statistics", "general statistics", "latency (ms)", "threads fairness"):
                    if section in seen:
                        raise SysbenchParseError("a second final summary ({}): the output of two runs in one "
                                                 "log".format(stripped[:-1]), number)
                    recognised = True
                    seen.add(section)
                continue
            before = dict(vars(summary))
            key = _read_summary_line(summary, section, stripped)
            if key:
                seen.add(key)
                out.summary_lines.update((k, number) for k, v in vars(summary).items() if before[k] != v)
        except (ValueError, OverflowError) as e:
            if in_callback or isinstance(e, SysbenchParseError):
                raise
            raise SysbenchParseError("cannot read {!r}: {}".format(stripped[:120], e), number) from None
    if not recognised and not out.errors:
        raise SysbenchParseError("no sysbench output found (no version line, interval or summary)")
    if seen:
        required = _SUMMARY_REQUIRED + (_SQL_REQUIRED if "sql statistics" in seen else ())
        out.summary_missing = [k for k in required if k not in seen]
        if not out.summary_missing:
            summary.report_interval_s = out.report_interval_s
            summary.latency_percentiles_ms = _distribution_of(out, summary)
            out.summary = summary
    return out


# The latency distribution every step stores (results' ``latency_percentiles_ms``): these percentiles
# and the step's maximum, for sysbench (from its histogram) and go-tpc (from its summary) alike.
LATENCY_DISTRIBUTION_KEYS = ("50", "90", "95", "99", "99.9", "max")


def histogram_percentile(histogram: Sequence[Tuple[float, int]], pct: float) -> Optional[float]:
    """The ``pct`` percentile of a sysbench latency histogram ((bucket value, count) rows, ascending),
    by sysbench's own rule (sb_histogram.c): the value of the first bucket at which the running count
    reaches ``floor(events * pct / 100 + 0.5)``, so that it equals the percentile sysbench prints in its
    summary (to the summary's two decimals). None for an empty histogram."""
    total = sum(count for _, count in histogram)
    wanted = int(total * pct / 100 + 0.5)
    if total == 0 or wanted == 0:
        return None
    running = 0
    for value, count in histogram:
        running += count
        if running >= wanted:
            return value
    return histogram[-1][0]


def latency_distribution(histogram: Sequence[Tuple[float, int]], max_ms: float) -> Optional[Dict[str, float]]:
    """The step's latency distribution (LATENCY_DISTRIBUTION_KEYS) from its histogram, the maximum being
    sysbench's exact ``max`` (the histogram has only its bucket). None for an empty histogram."""
    out: Dict[str, float] = {}
    for key in LATENCY_DISTRIBUTION_KEYS[:-1]:
        value = histogram_percentile(histogram, float(key))
        if value is None:
            return None
        out[key] = value
    # sysbench prints max to two decimals and bucket values to three: a max in the top bucket can print
    # a hair below that bucket's value (8.68 for a bucket of 8.684), which is no lower than the 99.9th.
    out["max"] = max(max_ms, out["99.9"])
    return out


def _distribution_of(out: SysbenchOutput, summary: Summary) -> Optional[Dict[str, float]]:
    """The distribution of a complete output, when its histogram counts every event of the summary: a
    histogram cut short (a log kept in part) would give percentiles of some events labelled as all."""
    if not out.histogram or sum(count for _, count in out.histogram) != summary.events:
        return None
    return latency_distribution(out.histogram, summary.latency_max_ms)


def interval_lengths(seconds: Sequence[float]) -> List[float]:
    """The length of each interval from sysbench's timestamps (seconds since the start of the run, in
    order): the first from 0, each next from the one before. sysbench prints whole seconds, so a
    length can be 0 (two reports within one rounded second); their sum is the time covered."""
    out: List[float] = []
    previous = 0.0
    for second in seconds:
        out.append(round(second - previous, 6))
        previous = second
    return out


def step_accounting(seconds: Sequence[float], total_time_s: float,
                    report_interval_s: Optional[float] = None) -> Dict[str, Any]:
    """How complete a step's per-second data is, from its interval timestamps and sysbench's total
    time: ``samples`` present, ``samples_expected`` (total time / report interval), ``covered_s``
    (the last timestamp: the seconds the samples account for) and ``missing_final`` (the interval
    that should end the step was never printed). The report interval, when not given, is the most
    common interval length (1 s when there is none). No samples: nothing expected (a summary-only
    log), ``samples_expected`` None."""
    if not seconds:
        return {"samples": 0, "samples_expected": None, "covered_s": None, "missing_final": None}
    every = report_interval_s
    if not every:
        lengths = [round(x) for x in interval_lengths(seconds) if x > 0]
        every = max(set(lengths), key=lambda x: (lengths.count(x), -x)) if lengths else 1
    covered = float(max(seconds))
    return {"samples": len(seconds), "samples_expected": int(total_time_s // every),
            "covered_s": covered, "missing_final": covered + every / 2 < total_time_s}


def _attach_queue(intervals: List[Interval], second: float, queue: int, concurrency: int) -> None:
    for interval in reversed(intervals):
        if interval.second == second:
            interval.queue = queue
            interval.concurrency = concurrency
            return


def _read_summary_line(s: Summary, section: str, line: str) -> Optional[str]:
    """Read one summary line into ``s``; the name of what it read (for completeness), or None."""
    m = _COUNT_RATE.match(line)
    if m:
        key, n, rate = m.group("k"), int(m.group("n")), float(m.group("r"))
        if key == "transactions":
            s.transactions, s.tps = n, rate
        elif key == "queries":
            s.queries, s.qps = n, rate
        elif key == "ignored errors":
            s.ignored_errors, s.errors_per_s = n, rate
        else:
            s.reconnects, s.reconnects_per_s = n, rate
        return key
    m = _PERCENTILE.match(line)
    if m and section == "latency (ms)":
        s.latency_pct, s.latency_pct_ms = int(m.group("p")), float(m.group("v"))
        return "latency percentile"
    m = _KEYVAL.match(line)
    if not m:
        return None
    key, value = m.group("k").strip().lower(), m.group("v")
    if section == "sql statistics":
        target = {"read": "reads", "write": "writes", "other": "other", "total": "total_queries"}.get(key)
        if target:
            setattr(s, target, int(value))
            return key
    elif section == "general statistics":
        if key == "total time":
            s.total_time_s = float(value.rstrip("s"))
            return key
        if key == "total number of events":
            s.events = int(value)
            return key
    elif section == "latency (ms)":
        target = {"min": "latency_min_ms", "avg": "latency_avg_ms", "max": "latency_max_ms",
                  "sum": "latency_sum_ms"}.get(key)
        if target:
            setattr(s, target, float(value))
            return "latency " + key
    elif section == "threads fairness":
        avg, _, stddev = value.partition("/")
        if key == "events (avg/stddev)":
            s.fairness_events_avg, s.fairness_events_stddev = float(avg), float(stddev)
            return "fairness events"
        if key == "execution time (avg/stddev)":
            s.fairness_time_avg_s, s.fairness_time_stddev_s = float(avg), float(stddev)
            return "fairness execution time"
    return None


def iter_intervals(lines: Iterable[str]) -> Iterable[Interval]:
    """Interval lines of a stream, in order (for live consumers)."""
    for line in lines:
        interval = parse_interval(line)
        if interval is not None:
            yield interval
