"""The one go-tpc parser on real go-tpc 1.0.7 output (tests/fixtures/go-tpc-1.0.7, recorded for issue 39
against MariaDB 10.11 with 1 warehouse and 2 threads; README.md there says how each was made)."""

from __future__ import annotations

import pytest
from tests.conftest import FIXTURES

from benchfleet.workload.gotpc import (
    GoTpcParseError,
    build_command,
    interval_fields,
    parse_line,
    parse_output,
    summary_fields,
)

OURS = FIXTURES / "go-tpc-1.0.7"
TYPES = ["DELIVERY", "NEW_ORDER", "ORDER_STATUS", "PAYMENT", "STOCK_LEVEL"]


def test_a_run_gives_its_intervals_and_go_tpcs_own_summary() -> None:
    out = parse_output((OURS / "run.log").read_text())
    assert out.finished and out.errors == [] and out.stopped_by is None and out.tpmc == 9021.6
    # 6 s at --interval 2s: go-tpc printed two intervals (the third ends with the run, unprinted)
    assert [[tx.name for tx in interval] for interval in out.intervals] == [TYPES, TYPES]
    first = interval_fields(out.intervals[0], 95)
    assert first["tpmc"] == 8765.2 and first["tps"] == pytest.approx(8765.2 / 60, abs=1e-4)
    assert first["latency_ms"] == 13.1 and first["latency_pct"] == 95 and first["errors_per_s"] == 0
    assert sorted(first["tx_per_s"]) == TYPES
    s = summary_fields(out, 99)
    assert s is not None
    assert (s["transactions"], s["tpmc"], s["tps"]) == (897, 9021.6, pytest.approx(9021.6 / 60, abs=1e-4))
    # the seconds New-Order's count covers at its rate: go-tpc's Takes(s) says 6.0, rounded to 0.1
    assert s["total_time_s"] == pytest.approx(897 / (9021.7 / 60), abs=1e-3)
    assert s["events"] == 95 + 897 + 72 + 855 + 101 and s["ignored_errors"] == 0
    assert s["latency_pct_ms"] == 19.9 and s["latency_avg_ms"] == 6.9 and s["latency_max_ms"] == 41.9
    assert s["latency_percentiles_ms"] == {"50": 6.3, "90": 10.5, "95": 12.1, "99": 19.9, "99.9": 30.4,
                                           "max": 41.9}
    # what go-tpc does not measure is None, never a 0 that would read as measured
    assert all(s[k] is None for k in ("queries", "qps", "reads", "writes", "other", "reconnects",
                                      "latency_min_ms"))


def test_failed_transactions_are_counted_as_errors() -> None:
    # 12 s: one New-Order counted as failed (NEW_ORDER_ERR) and no failure printed
    out = parse_output((OURS / "run_12s.log").read_text())
    assert len(out.intervals) == 5 and out.errors == []
    s = summary_fields(out, 95)
    assert s is not None and s["ignored_errors"] == 1
    assert s["tx_per_s"]["NEW_ORDER_ERR"] == pytest.approx(5.0 / 60, abs=1e-4)
    assert s["errors_per_s"] == pytest.approx(1 / s["total_time_s"], abs=1e-4) and s["tpmc"] == 9287.7


def test_a_run_that_failed_says_why_and_has_no_summary() -> None:
    # --warehouses 3 on a data set of 1: go-tpc's threads stop at their first failed transaction and it
    # still prints 'Finished', a summary of failures only, and exits 0
    out = parse_output((OURS / "run_errors.log").read_text())
    assert out.finished and out.intervals == [] and len(out.errors) == 4
    assert "execute run failed" in out.errors[0] and "no rows in result set" in out.errors[0]
    assert summary_fields(out, 95) is None


def test_a_killed_run_is_told_from_a_finished_one() -> None:
    # SIGTERM after 5 s of a 20 s run: go-tpc prints a whole-looking summary of the 5 s
    out = parse_output((OURS / "run_killed.log").read_text())
    assert out.stopped_by == "terminated" and out.finished and out.tpmc == 8298.6
    assert len(out.intervals) == 2


def test_deadlocks_are_tolerated_other_failures_are_not() -> None:
    out = parse_output("[2026-12-07 02:29:09] execute run failed, err Error 1213: Deadlock found when trying "
                       "to get lock; try restarting transaction\n"
                       "[2026-12-07 02:29:09] execute run failed, err invalid connection\n")
    assert out.tolerated == 1 and len(out.errors) == 1 and "invalid connection" in out.errors[0]


def test_output_of_two_runs_and_overlong_lines_are_refused() -> None:
    text = (OURS / "run.log").read_text()
    with pytest.raises(GoTpcParseError, match="two runs"):
        parse_output(text + text)
    with pytest.raises(GoTpcParseError, match="line 1"):
        parse_output("x" * (1 << 20 + 1))


def test_lines_that_are_not_go_tpcs() -> None:
    assert parse_line("[Current] NEW_ORDER - Takes(s): 2.0, Count: 1") is None
    assert parse_line("tpmC: 1.0, efficiency: 2.0%") is None


def test_the_command_carries_the_step_and_nothing_else() -> None:
    db = {"host": "127.0.0.1", "port": 3307, "user": "sbtest", "password": "pw", "database": "sbtest_relaxed"}
    argv = build_command("/b/go-tpc-amd64", "run", warehouses=2, threads=4, db=db, time_s=30, interval_s=1)
    assert argv == ["/b/go-tpc-amd64", "tpcc", "--warehouses", "2", "--host", "127.0.0.1", "--port", "3307",
                    "--user", "sbtest", "--password", "pw", "--db", "sbtest_relaxed", "--threads", "4",
                    "--ignore-error", "--time", "30s", "--interval", "1s", "run"]
    prepare = build_command("/b/go-tpc-amd64", "prepare", warehouses=2, threads=2, db=db)
    assert prepare[-1] == "prepare" and "--time" not in prepare and "--ignore-error" not in prepare
    for bad in ({**db, "host": "-x"}, {**db, "database": "a;b"}):
        with pytest.raises(ValueError):
            build_command("/b/go-tpc", "run", warehouses=1, threads=1, db=bad, time_s=1)
    with pytest.raises(ValueError):
        build_command("/b/go-tpc", "check", warehouses=1, threads=1, db=db)
