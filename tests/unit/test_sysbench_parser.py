"""The one sysbench parser on real outputs: the published study's logs and our own captures."""

from __future__ import annotations

import statistics
import threading

import pytest
from tests.conftest import FIXTURES, SHARED_FIXTURES, needs_shared_fixtures
from tests.sysbench_logs import LOADED_SECONDS, run_log

from benchfleet.stats.figures import weighted_mean
from benchfleet.workload.sysbench import (
    LATENCY_DISTRIBUTION_KEYS,
    MAX_LINE_CHARS,
    SysbenchParseError,
    build_command,
    histogram_percentile,
    latency_distribution,
    parse_interval,
    parse_output,
    step_accounting,
)

STUDY = SHARED_FIXTURES / "percona-2021-arm-m6"
OURS = FIXTURES / "sysbench-1.0.20"


@needs_shared_fixtures
def test_study_log_summary_matches_what_sysbench_printed() -> None:
    out = parse_output((STUDY / "c5.large" / "OLTP_READ_only_test_8_thread.log").read_text())
    s = out.summary
    assert out.version == "1.0.18" and out.threads == 8 and out.intervals == [] and out.errors == []
    assert s is not None
    assert (s.reads, s.writes, s.other, s.total_queries) == (5277244, 0, 753892, 6031136)
    assert (s.transactions, s.tps, s.queries, s.qps) == (376946, 1256.46, 6031136, 20103.37)
    assert (s.ignored_errors, s.reconnects, s.events) == (0, 0, 376946)
    assert s.total_time_s == pytest.approx(300.0049)
    assert (s.latency_min_ms, s.latency_avg_ms, s.latency_max_ms) == (1.33, 6.37, 29.44)
    assert (s.latency_pct, s.latency_pct_ms, s.latency_sum_ms) == (95, 8.58, 2399328.49)
    assert (s.fairness_events_avg, s.fairness_events_stddev) == (47118.25, 385.71)
    assert (s.fairness_time_avg_s, s.fairness_time_stddev_s) == (299.9161, 0.01)


@pytest.mark.parametrize("path", sorted(STUDY.glob("*/*.log")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_study_log_parses_consistently(path) -> None:
    out = parse_output(path.read_text())
    s = out.summary
    assert s is not None and not out.errors
    threads = int(path.stem.split("_")[-2])
    assert out.threads == threads
    # sysbench's rate is its count over its total time: the parser must not mix fields up.
    assert s.tps == pytest.approx(s.transactions / s.total_time_s, rel=2e-3)
    assert s.qps == pytest.approx(s.queries / s.total_time_s, rel=2e-3)
    assert s.reads + s.writes + s.other == s.total_queries
    assert s.latency_min_ms <= s.latency_avg_ms <= s.latency_pct_ms <= s.latency_max_ms


def test_interval_lines_of_the_real_binary() -> None:
    out = parse_output((OURS / "run_ri.log").read_text())
    assert out.version == "1.0.20" and [i.second for i in out.intervals] == [1.0, 2.0, 3.0]
    first = out.intervals[0]
    assert (first.threads, first.tps, first.qps) == (2, 850.33, 17029.58)
    assert (first.reads_per_s, first.writes_per_s, first.other_per_s) == (11925.60, 3401.32, 1702.66)
    assert (first.latency_pct, first.latency_ms, first.errors_per_s, first.reconnects_per_s) == (95, 2.91, 0, 0)
    assert out.summary is not None and out.summary.transactions == 2912


def test_histogram_and_other_percentile() -> None:
    out = parse_output((OURS / "run_hist.log").read_text())
    assert out.summary is not None and out.summary.latency_pct == 99 and out.summary.latency_pct_ms == 4.41
    assert out.histogram and sum(n for _, n in out.histogram) == out.summary.events
    assert out.intervals == []


def test_percentile_disabled_keeps_no_percentile() -> None:
    out = parse_output((OURS / "run_p0.log").read_text())
    assert out.summary is not None and out.summary.latency_pct is None and out.summary.latency_pct_ms is None
    assert out.intervals and all(i.latency_pct == 0 for i in out.intervals)


def test_rate_limited_run_keeps_queue_figures() -> None:
    out = parse_output((OURS / "run_rate.log").read_text())
    assert [i.queue for i in out.intervals] == [0, 0, 0]
    assert [i.concurrency for i in out.intervals] == [0, 1, 0]


def test_failure_is_kept_not_hidden() -> None:
    out = parse_output((OURS / "run_auth_failure.log").read_text())
    assert out.summary is None
    assert any("Access denied" in e for e in out.errors)


def test_errors_and_reconnects_per_second_are_kept() -> None:
    line = ("[ 7s ] thds: 64 tps: 10.00 qps: 200.00 (r/w/o: 140.00/40.00/20.00) lat (ms,99%): 1235.62 "
            "err/s: 3.00 reconn/s: 1.00")
    i = parse_interval(line)
    assert i is not None and (i.latency_pct, i.latency_ms, i.errors_per_s, i.reconnects_per_s) == (99, 1235.62, 3, 1)


def test_not_sysbench_output_is_an_error() -> None:
    with pytest.raises(SysbenchParseError):
        parse_output("hello\nworld\n")


def test_command_builder_never_lets_a_value_become_an_argument() -> None:
    argv = build_command("oltp_read_only", "run", {"threads": 4, "mysql-host": "127.0.0.1", "histogram": True,
                                                   "skip-this": None})
    assert argv == ["sysbench", "oltp_read_only", "--histogram=on", "--mysql-host=127.0.0.1", "--threads=4", "run"]
    for bad in ({"threads; rm -rf /": 1}, {"--x": 1}, {"a b": 1}):
        with pytest.raises(ValueError):
            build_command("oltp_read_only", "run", bad)
    with pytest.raises(ValueError):
        build_command("oltp_read_only", "run", {"mysql-db": "x\nrun"})
    with pytest.raises(ValueError):
        build_command("--help", "run", {})
    with pytest.raises(ValueError):
        build_command("oltp_read_only", "rm", {})


# ---- per-second accounting: what each sample really covers -----------------------------------------

def test_each_interval_carries_its_real_length_from_sysbench_timestamps() -> None:
    tps = [900.0, 880.0, 300.0, 450.0, 870.0, 860.0, 420.0, 910.0, 890.0]
    out = parse_output(run_log(LOADED_SECONDS, tps))
    assert [i.interval_s for i in out.intervals] == [1, 1, 3, 2, 1, 1, 2, 0, 1]
    assert out.report_interval_s == 1 and out.summary is not None
    # Rates weighted by the seconds they cover are the summary's events over time; one sample per
    # line counted as one second each is not.
    weighted = weighted_mean([i.tps for i in out.intervals], [i.interval_s or 0 for i in out.intervals])
    assert weighted == pytest.approx(out.summary.tps, rel=1e-3)
    assert statistics.fmean(i.tps for i in out.intervals) > 1.2 * out.summary.tps
    assert step_accounting([i.second for i in out.intervals], out.summary.total_time_s) == {
        "samples": 9, "samples_expected": 12, "covered_s": 12.0, "missing_final": False}


def test_a_missing_final_interval_is_detected() -> None:
    out = parse_output(run_log(LOADED_SECONDS[:-1], [900.0] * 8))
    assert out.summary is not None
    accounting = step_accounting([i.second for i in out.intervals], out.summary.total_time_s)
    assert accounting["missing_final"] is True and accounting["covered_s"] == 11.0
    assert step_accounting([], 12.0)["samples_expected"] is None  # summary-only: nothing expected


# ---- logs that must not be taken as results (issue 13) ----------------------------------------------

def test_a_summary_cut_anywhere_is_not_a_summary() -> None:
    lines = (OURS / "run_ri.log").read_text().splitlines()
    start = lines.index("SQL statistics:")
    last = max(i for i, line in enumerate(lines) if line.strip())
    assert parse_output("\n".join(lines)).summary is not None
    for cut in range(start + 1, last + 1):
        out = parse_output("\n".join(lines[:cut]))
        assert out.summary is None and out.summary_missing, f"cut after line {cut}"


@pytest.mark.parametrize("bad", ["total number of events:              29x2",
                                 "total number of events:              " + "9" * 5000])
def test_a_number_that_cannot_be_read_names_its_line(bad: str) -> None:
    lines = (OURS / "run_ri.log").read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if "total number of events" in line)
    lines[number - 1] = "    " + bad
    with pytest.raises(SysbenchParseError) as e:
        parse_output("\n".join(lines))
    assert e.value.line == number and f"line {number}:" in str(e.value)


def test_a_long_line_of_spaces_is_read_in_linear_time() -> None:
    # Quadratic backtracking took 24 s on 100k spaces; at ~1 MB it would take hours. Linear: well under
    # a second, so 60 s is not a timing assertion but a hang detector.
    text = "sysbench 1.0.20\n" + "total time: 1" + " " * (MAX_LINE_CHARS - 64) + "x\n" + " " * 100_000 + "\n"
    worker = threading.Thread(target=parse_output, args=(text,), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive()


def test_a_line_too_long_to_be_sysbench_is_refused_with_its_number() -> None:
    with pytest.raises(SysbenchParseError) as e:
        parse_output(iter(["sysbench 1.0.20\n", "x" * (MAX_LINE_CHARS + 1)]))
    assert e.value.line == 2


# Real sysbench 1.0.20 runs with --histogram=on against MariaDB 10.11 (recorded for issue 39): 5 s of
# oltp_read_write at p95 with 1 s reports, and 3 s of oltp_point_select at each of p50, p90 and p99.
@pytest.mark.parametrize("log", ["run_hist.log", "run_hist_intervals.log", "run_hist_p50.log", "run_hist_p90.log",
                                 "run_hist_p99.log"])
def test_the_histogram_gives_sysbench_its_own_percentile(log: str) -> None:
    out = parse_output((OURS / log).read_text())
    s = out.summary
    assert s is not None and s.latency_pct is not None and s.latency_pct_ms is not None
    # sysbench's summary percentile is the same bucket, printed to two decimals instead of three
    assert histogram_percentile(out.histogram, s.latency_pct) == pytest.approx(s.latency_pct_ms, abs=0.005)
    dist = s.latency_percentiles_ms
    assert dist is not None and tuple(dist) == LATENCY_DISTRIBUTION_KEYS
    assert dist[str(s.latency_pct)] == histogram_percentile(out.histogram, s.latency_pct)
    assert s.latency_min_ms - 0.05 <= dist["50"] <= dist["90"] <= dist["95"] <= dist["99"] <= dist["99.9"]
    assert dist["max"] == s.latency_max_ms  # the exact maximum, not its bucket


def test_the_distribution_of_the_recorded_step() -> None:
    out = parse_output((OURS / "run_hist_intervals.log").read_text())
    assert out.summary is not None and len(out.intervals) == 5
    assert out.summary.latency_percentiles_ms == {"50": 1.824, "90": 5.986, "95": 16.706, "99": 38.942,
                                                  "99.9": 65.645, "max": 77.84}


def test_a_histogram_that_does_not_count_every_event_gives_no_distribution() -> None:
    # A log kept in part (its histogram's first rows lost): percentiles of some events, labelled as of all.
    lines = (OURS / "run_hist_intervals.log").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Latency histogram")) + 2
    out = parse_output("\n".join(lines[:start] + lines[start + 3:]))
    assert out.summary is not None and out.summary.events == 2576 and out.summary.latency_percentiles_ms is None
    # and a run without --histogram has none
    plain = parse_output((OURS / "run_ri.log").read_text())
    assert plain.summary is not None and plain.summary.latency_percentiles_ms is None


def test_a_maximum_printed_below_its_bucket_is_not_below_the_99_9th() -> None:
    # sysbench prints max to two decimals, bucket values to three: 8.684 (bucket) then max 8.68.
    assert latency_distribution([(1.0, 999), (8.684, 1)], 8.68) == {
        "50": 1.0, "90": 1.0, "95": 1.0, "99": 1.0, "99.9": 1.0, "max": 8.68}
    assert latency_distribution([(1.0, 998), (8.684, 2)], 8.68)["max"] == 8.684
    assert histogram_percentile([], 50) is None and latency_distribution([], 1.0) is None
