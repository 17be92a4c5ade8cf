"""`benchfleet import` holds a log's figures to what local and cloud runs are held to (issue 28 item 8):
negative, infinite or absurd figures and two runs interleaved in one log are refused naming the file
and line; the same logs in a second run are flagged; --per-second of a run without samples says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.sysbench_logs import LOADED_SECONDS, run_log

from benchfleet.cli.main import main

LOG = run_log(LOADED_SECONDS, [900.0] * 9)


def lines_with(text: str, find: str, replace: str) -> tuple[str, int]:
    """``text`` with the first line containing ``find`` edited; and that line's number."""
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if find in line)
    lines[number - 1] = lines[number - 1].replace(find, replace)
    return "\n".join(lines) + "\n", number


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> str:
    log = tmp_path / "bad.log"
    log.write_text(text)
    assert main(["import", str(log), "--target", "db"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(log) in err
    assert main(["runs", "--format", "json"]) == 0 and json.loads(capsys.readouterr().out) == []  # nothing stored
    return err


@pytest.mark.parametrize(("find", "replace", "fragment"), [
    ("tps: 900.00 qps", "tps: -900.00 qps", "tps is -900.0, below zero"),
    ("tps: 900.00 qps", "tps: inf qps", "tps is inf, not a finite number"),
    ("tps: 900.00 qps", "tps: nan qps", "tps is nan"),
    ("tps: 900.00 qps", "tps: 9e15 qps", "tps is 9e+15, above 1e+08"),
    ("lat (ms,95%): 2.91", "lat (ms,95%): -2.91", "latency_ms is -2.91, below zero"),
    ("total time:                          12.0000s", "total time:                          -12.0000s",
     "total_time_s is -12.0, below zero"),
    ("max:                                    7.65", "max:                                    1e20",
     "latency_max_ms is 1e+20, above"),
])
def test_a_figure_no_run_prints_is_refused_naming_the_line(bf_home: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           find: str, replace: str, fragment: str) -> None:
    text, number = lines_with(LOG, find, replace)
    err = refused(tmp_path, capsys, text)
    assert f"bad.log:{number}: {fragment}" in err


@pytest.mark.parametrize(("find", "replace", "fragment"), [
    # issue 41 item 4: each exit 0 before, a percentile no sysbench prints stored and shown as "p150 ms"
    ("95th percentile:                        2.76", "150th percentile:                        2.76",
     "bad.log: not imported: a 150th percentile: sysbench reports percentiles from 1 to 100"),
    ("lat (ms,95%)", "lat (ms,150%)", "bad.log:{line}: lat (ms,150%): sysbench reports percentiles from 1 to 100"),
    ("[ 2s ] thds: 4", "[ 2s ] thds: 64",
     "bad.log:{line}: not imported: an interval ran 64 threads in a run of 4 ('Number of threads')"),
    ("min:                                    1.47", "min:                                    9.47",
     "bad.log: not imported: latency min 9.47 ms, avg 2.06 ms, max 7.65 ms: not min <= avg <= max"),
    ("total number of events:              10800", "total number of events:              1",
     "bad.log: not imported: 1 events against 10,800 transactions"),
    ("events (avg/stddev):           2700.0000/5.00", "events (avg/stddev):           -2700.0000/5.00",
     "fairness_events_avg is -2700.0, below zero"),
    ("events (avg/stddev):           2700.0000/5.00", "events (avg/stddev):           1456.0000/5.00",
     "bad.log: not imported: threads fairness says 1456 events per thread, x 4 threads = 5,824, not the run's "
     "10,800 events"),
])
def test_a_log_that_contradicts_itself_is_refused(bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 find: str, replace: str, fragment: str) -> None:
    text, number = lines_with(LOG, find, replace)
    err = refused(tmp_path, capsys, text)
    assert fragment.format(line=number) in err, err


def test_a_log_of_zero_or_absurd_threads_is_refused_naming_the_file(bf_home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """An edited log saying "Number of threads: 0" ended as 'error: ValidationError: 1 validation error for
    StepSummary ...' (the store's model), exit 1."""
    text = "\n".join("Number of threads: 0" if line.startswith("Number of threads") else line
                     for line in LOG.splitlines()) + "\n"
    assert "Number of threads: 0\n" in text
    err = refused(tmp_path, capsys, text)
    assert "bad.log: not imported: the log says 0 threads" in err and "ValidationError" not in err
    # ... and one saying 10^23 threads blamed the results store ("cannot use this results store").
    err = refused(tmp_path, capsys, LOG.replace("Number of threads: 4", "Number of threads: " + "9" * 23, 1))
    assert "bad.log: not imported: the log says 99999999999999999999999 threads, more than 1,000,000" in err


def test_two_runs_interleaved_in_one_log_are_refused_naming_the_line(bf_home: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    lines = LOG.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("[ 5s ]"))
    other = lines[first].replace("[ 5s ]", "[ 2s ]").replace("900.00", "450.00")
    err = refused(tmp_path, capsys, "\n".join([*lines[:first + 1], other, *lines[first + 1:]]) + "\n")
    assert f"bad.log:{first + 2}: an interval at 2 s after one at 5 s: the output of two runs" in err
    header = lines.index("Threads started!")
    err = refused(tmp_path, capsys, "\n".join([*lines[:header + 2], lines[0], *lines[header + 2:]]) + "\n")
    assert f"bad.log:{header + 3}: a second sysbench header" in err
    summary = lines.index("SQL statistics:")
    err = refused(tmp_path, capsys, "\n".join([*lines, *lines[summary:]]) + "\n")
    assert "a second final summary (SQL statistics)" in err


def test_per_second_of_a_run_without_samples_says_so(bf_home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    summary_only = "\n".join(line for line in LOG.splitlines() if not line.startswith("[")) + "\n"
    (tmp_path / "s.log").write_text(summary_only)
    assert main(["import", str(tmp_path / "s.log"), "--target", "db", "--run", "summaries"]) == 0
    capsys.readouterr()
    for fmt in ("csv", "json"):
        assert main(["results", "summaries", "--per-second", "--format", fmt]) == 1
        out = capsys.readouterr()
        assert out.out == "" and "has no per-second samples (imported logs" in out.err
    # A local run that failed before its first second is not said to be imported.
    from benchfleet.local.store import DuckDBStore

    store = DuckDBStore(bf_home / "benchfleet.duckdb")
    try:
        store.create_run("broken-1", "broken", {}, "local", None)
        store.finish_run("broken-1", "failed", "l: MariaDB did not start")
    finally:
        store.close()
    assert main(["results", "broken-1", "--per-second", "--format", "csv"]) == 1
    err = capsys.readouterr().err
    assert "it is failed (l: MariaDB did not start)" in err and "imported" not in err, err


def test_the_same_logs_in_a_second_run_are_flagged(bf_home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.log").write_text(LOG)
    assert main(["import", str(tmp_path / "a.log"), "--target", "db", "--run", "first"]) == 0
    assert "warning" not in capsys.readouterr().err
    (tmp_path / "copy.log").write_text(LOG)
    assert main(["import", str(tmp_path / "copy.log"), "--target", "db", "--run", "second"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {tmp_path / 'copy.log'}: the same content is already imported in run first-" in err
    assert main(["results", "second", "--per-second", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(LOADED_SECONDS)
