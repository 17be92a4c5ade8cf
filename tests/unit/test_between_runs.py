"""Verdicts between runs (issue 37, items 3, 4, 6): run-to-run noise in compare / report --against /
results --history, breaks in a history's series, change points, and the caveats every between-run
verdict carries (settings as the servers ran them, machine load and overlap). Runs are written into a
real store (tests/browser/synthetic.py) and read back through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchfleet.cli.main import main
from benchfleet.local import calibration
from benchfleet.local.store import DuckDBStore, open_store
from benchfleet.stats.history import history, point_from_row, render_text

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from synthetic import TARGETS, fill_store  # noqa: E402

TARGET = {**TARGETS[0], "id": "db"}


def _runs(home: Path, capacities: list[float], name: str = "nightly", host_cv: float = 0.01) -> list[str]:
    """One run per capacity, in order, each 3 repetitions at 4 threads."""
    store = DuckDBStore(home / "benchfleet.duckdb")
    try:
        return [fill_store(store, f"{name}-2026112{i}t020000-{i:04x}", targets=[{**TARGET, "capacity": c}], reps=3,
                           threads=(4,), seconds=6, warmup_s=2, seed=i + 1, host_cv=host_cv)
                for i, c in enumerate(capacities)]
    finally:
        store.close()


def _store(home: Path) -> DuckDBStore:
    return DuckDBStore(home / "benchfleet.duckdb")


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


# ---- run-to-run noise --------------------------------------------------------------------------------

def test_the_same_spec_run_twice_is_never_a_plain_faster_or_slower(bf_home: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of one spec, the second 20 % lower with a tight spread: the repetitions alone call it
    slower. With two runs the run-to-run noise is unknown: the words say so (before: plain "slower")."""
    first, second = _runs(bf_home, [2400.0, 1900.0])
    code, doc = _json(capsys, "compare", first, second)
    (row,) = doc["rows"]
    rel = row["relative"]
    assert code == 0 and rel["verdict"] == "slower"
    assert rel["words"] == "slower (repetitions only; run-to-run noise not yet measured: 2 runs)"
    assert rel["run_to_run"] == {"measured": False, "runs": 2, "sd_pct": None, "source": "history",
                                 "words": "run-to-run noise not yet measured: 2 runs"}
    assert main(["compare", first, second]) == 0
    table = capsys.readouterr().out
    assert "run-to-run noise not yet measured: 2 runs" in table


def test_measured_run_to_run_noise_widens_the_interval(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Five runs of one spec whose levels wander by ~4 % while each run's repetitions agree within 1 %:
    the last against the one before, with the noise the five show, has the wider interval."""
    runs = _runs(bf_home, [2400.0, 2300.0, 2450.0, 2350.0, 2260.0])
    _, doc = _json(capsys, "compare", runs[-2], runs[-1])
    rel = doc["rows"][0]["relative"]
    assert rel["run_to_run"]["measured"] and rel["run_to_run"]["runs"] == 5 and rel["run_to_run"]["sd_pct"] > 1
    with open_store(bf_home) as store:
        a, b = (store.query("SELECT tps FROM step_summaries WHERE run_id = ? AND phase = 'measure'", [r])
                for r in runs[-2:])
    from benchfleet.stats.runnoise import RunNoise, between_runs

    alone = between_runs([x["tps"] for x in b], [x["tps"] for x in a], RunNoise(2))
    assert rel["ci_high_pct"] - rel["ci_low_pct"] > 1.5 * (alone["ci_high_pct"] - alone["ci_low_pct"])
    assert "run-to-run noise not yet measured" not in rel["words"]


def test_noise_estimate_is_the_successive_differences_less_the_repetitions():
    from benchfleet.stats.runnoise import MIN_RUNS, estimate

    assert not estimate([[100.0, 101.0]] * (MIN_RUNS - 1)).measured
    # Run means alternate 100 / 110 with no spread inside a run: MSSD / 2 of the log means.
    noise = estimate([[100.0] * 3, [110.0] * 3] * 3)
    d = 0.09531017980432493  # log(1.1)
    assert noise.measured and noise.sd_log == pytest.approx(d / 2 ** 0.5) and noise.df == 5
    # A level shift found as a change point is the change, not noise: its difference is left out.
    shifted = [[100.0, 100.5, 99.5]] * 4 + [[80.0, 80.4, 79.6]] * 4
    assert estimate(shifted).sd_log > 0.05  # log(0.8)^2 / 14, less the repetitions: 0.0596
    assert estimate(shifted, cuts=[4]).sd_log == 0 and estimate(shifted, cuts=[4]).df == 6


def test_a_history_leaves_its_change_points_out_of_the_run_to_run_noise():
    dropped = [1000 * w for w in WANDER] + [850 * w for w in WANDER]
    rows = history("n", _levels(dropped))["rows"]
    assert rows[-1]["relative"]["run_to_run"]["sd_pct"] < 1.5  # the runs wander by ~1 %; the drop is 15 %


# ---- history: the same caveat, breaks, change points -------------------------------------------------

def test_a_history_of_two_runs_never_fails_and_says_the_noise_is_unknown(bf_home: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The same demo run twice was "<-- REGRESSION" and exit 1 on the repetitions' spread alone."""
    _runs(bf_home, [2400.0, 1900.0])
    capsys.readouterr()
    assert main(["results", "--history", "nightly"]) == 0
    text = capsys.readouterr().out
    assert "<-- REGRESSION (run-to-run noise not yet measured: 2 runs)" in text
    assert not [line for line in text.splitlines() if line.rstrip().endswith("<-- REGRESSION")]


def test_a_workload_change_is_a_break_never_a_regression(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """point_select -> read_only in one history was "REGRESSION -95.1%" and exit 1."""
    _, second = _runs(bf_home, [24000.0, 1200.0])
    with open_store(bf_home) as store:
        spec = store.run(second)["spec"]
        store.set_spec(second, {**spec, "workload": {**spec["workload"], "test": "oltp_point_select"}})
    code, doc = _json(capsys, "results", "--history", "nightly")
    row = next(r for r in doc["rows"] if r["run_id"] == second)
    assert code == 0 and row["verdict"] == "break" and row["relative"] is None and row["previous_run_id"] is None
    assert "test oltp_point_select vs oltp_read_only" in row["break_words"]
    assert doc["regressions"] == [] and doc["breaks"][0]["run_id"] == second
    capsys.readouterr()
    main(["results", "--history", "nightly"])
    assert "series broken: workload test oltp_point_select vs oltp_read_only" in capsys.readouterr().out


def test_another_latency_percentile_gives_no_latency_delta(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A p95 run then a p99 run (two imports) gave latency_delta_pct 59.8: p99 against p95."""
    _, second = _runs(bf_home, [2400.0, 2400.0])
    with open_store(bf_home) as store:
        store.execute("UPDATE step_summaries SET latency_pct = 99, latency_pct_ms = latency_pct_ms * 1.6 "
                      "WHERE run_id = ?", [second])
    _, doc = _json(capsys, "results", "--history", "nightly")
    row = next(r for r in doc["rows"] if r["run_id"] == second)
    assert row["latency_ms"] is not None and row["latency_delta_pct"] is None and row["verdict"] == "break"
    assert "latency percentile p99 vs p95" in row["break_words"]


def test_settings_the_servers_ran_with_are_a_caveat_of_compare_and_a_break_in_history(
        bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """query_cache_type ON in one run, OFF in the other: compare said "faster +52.8%" with a steal
    caveat only."""
    first, second = _runs(bf_home, [1600.0, 2400.0])
    with open_store(bf_home) as store:
        for run, value in ((first, "ON"), (second, "OFF")):
            store.execute("UPDATE targets SET server_variables = ? WHERE run_id = ?",
                          [json.dumps({"query_cache_type": value, "innodb_buffer_pool_size": "134217728"}), run])
    _, doc = _json(capsys, "compare", first, second)
    kinds = {c["kind"]: c for c in doc["rows"][0]["caveats"]}
    assert kinds["settings"]["words"] == "server settings as run: query_cache_type OFF vs ON"
    _, hist = _json(capsys, "results", "--history", "nightly")
    assert hist["rows"][1]["verdict"] == "break" and "query_cache_type OFF vs ON" in hist["rows"][1]["break_words"]


def test_machine_load_and_overlap_are_caveats_between_runs(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _runs(bf_home, [2400.0, 2400.0])
    with open_store(bf_home) as store:
        store.set_machine(first, {"cpus": 2, "load_mean": 0.4, "load_max": 0.9, "samples": 30, "overlapped": []})
        store.set_machine(second, {"cpus": 2, "load_mean": 3.1, "load_max": 4.0, "samples": 30, "overlapped": [
            {"pid": 4242, "command": "sysbench oltp_read_write run", "first_seen": "x", "last_seen": "y"}]})
    _, doc = _json(capsys, "compare", first, second)
    words = [c["words"] for c in doc["rows"][0]["caveats"]]
    assert "the run overlapped another benchmark: pid 4242 sysbench oltp_read_write run" in words
    assert "load average 3.10 vs 0.40 (2 CPUs)" in words
    _, hist = _json(capsys, "results", "--history", "nightly")
    assert "load average 3.10 vs 0.40 (2 CPUs)" in [c["words"] for c in hist["rows"][1]["caveats"]]


def _levels(levels: list[float], spread: float = 0.004) -> list[Any]:
    """One point per run at each level, its 3 repetitions within ±spread."""
    return [point_from_row(f"r{i:02d}", f"2026-11-{i + 1:02d}T00:00:00Z",
                           {"target_id": "db", "threads": 4,
                            "tps_values": [lvl * (1 - spread), lvl, lvl * (1 + spread)]})
            for i, lvl in enumerate(levels)]


WANDER = [1.0, 0.985, 1.012, 0.995, 1.008, 0.99, 1.004, 0.997]


def test_change_points_fail_the_history_only_when_the_newest_run_is_after_a_drop():
    dropped = [1000 * w for w in WANDER] + [850 * w for w in WANDER[:4]]
    doc = history("n", _levels(dropped))
    (change,) = doc["change_points"]
    assert change["run_id"] == "r08" and change["series"] == "db @ 4 thr"
    assert change["pct"] == pytest.approx(-15, abs=1) and change["ci_high_pct"] < 0
    assert doc["latest_regressions"] == [change]
    assert "change point in db @ 4 thr: from run r08 -15" in render_text(doc)
    # A rise, and a real drop inside the threshold, with the newest run after them: reported, not failed.
    for after, pct in ((1150.0, 15), (950.0, -5)):
        doc = history("n", _levels([1000 * w for w in WANDER] + [after * w for w in WANDER[:6]]))
        assert [(c["run_id"], round(c["pct"])) for c in doc["change_points"]] == [("r08", pct)]
        assert doc["latest_regressions"] == []


def test_an_aa_history_of_wandering_runs_has_no_change_point():
    assert history("n", _levels([1000 * w for w in WANDER * 2]))["change_points"] == []


def test_history_exit_code_follows_change_points(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _runs(bf_home, [2400.0, 2390.0, 2410.0, 2400.0, 2395.0, 1900.0, 1905.0, 1895.0], host_cv=0.002)
    code, doc = _json(capsys, "results", "--history", "nightly")
    assert [c["pct"] < -10 for c in doc["change_points"]] == [True]
    assert code == 1 and doc["latest_regressions"][0]["run_id"] == doc["runs"][5]


def test_history_exits_1_the_run_after_a_ten_percent_drop(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ten nightly runs, then one 10 % down: the newest run against the ten before (their scatter is the
    run-to-run noise) fails the history at once. Before: exit 0 (E-Divisive finds no change in a lone
    last run) until several runs later, if at all (a drop of exactly -10 % lay beyond it half the time)."""
    runs = _runs(bf_home, [2400.0] * 10 + [2160.0])
    code, doc = _json(capsys, "results", "--history", "nightly")
    (fail,) = doc["latest_regressions"]
    assert code == 1 and fail["run_id"] == runs[-1] and fail["series"] == "db @ 4 thr"
    assert fail["pct"] == pytest.approx(-10, abs=2) and fail in doc["change_points"]
    assert main(["results", "--history", "nightly"]) == 1
    assert f"change point in db @ 4 thr: from run {runs[-1]}" in capsys.readouterr().out


def test_a_stored_calibration_stands_in_while_the_runs_are_too_few(bf_home: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The calibrations table `benchfleet calibrate` writes (sd_run: between runs, log tps): read when
    the spec's own runs cannot say yet."""
    first, second = _runs(bf_home, [2400.0, 1900.0])
    here = calibration.machine()
    with open_store(bf_home) as store:
        row = {"threads": 4, "runs": 3, "repetitions": 3, "blocks": 2, "sd_block": 0.01, "sd_repetition": 0.02,
               "sd_run": 0.03, "sd_repetition_total": 0.02, "sd_paired": 0.01}
        # Another machine's calibration of the same spec is never used here.
        store.replace_calibration("nightly", "another-machine", here, ["c1"], [{**row, "sd_run": 0.30}])
        store.replace_calibration("nightly", calibration.fingerprint(here), here, ["c1", "c2", "c3"], [row])
    _, doc = _json(capsys, "compare", first, second)
    rel = doc["rows"][0]["relative"]
    assert rel["run_to_run"] == {"measured": True, "runs": 3, "sd_pct": pytest.approx(3.045, abs=1e-3),
                                 "source": "calibration", "words": "run-to-run noise ±3.0% (calibration, 3 runs)"}
    assert rel["df"] < 5 and "not yet measured" not in rel["words"]


def test_a_run_that_overlapped_another_benchmark_says_so_in_its_results(bf_home: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Two local runs at once were both stored and shown as clean."""
    (run,) = _runs(bf_home, [2400.0])
    with open_store(bf_home) as store:
        store.set_machine(run, {"cpus": 2, "load_mean": 3.4, "load_max": 4.1, "samples": 30, "overlapped": [
            {"pid": 4242, "command": "sysbench oltp_read_write run", "first_seen": "x", "last_seen": "y"}]})
    capsys.readouterr()
    assert main(["results", run]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("caveat: this run overlapped another benchmark on this machine: pid 4242 sysbench oltp_read_write run; "
            "load average 3.40 (max 4.1) on 2 CPUs") in out
    _, doc = _json(capsys, "results", run)
    assert doc["statistics"]["run"]["machine"]["overlapped"][0]["pid"] == 4242


def test_many_overlapping_processes_are_counted_not_listed():
    """sysbench starts anew for every step: a busy neighbour shows as many short processes (11 in one
    demo run on this machine), whose full command lines made a caveat of 40 lines."""
    from benchfleet.stats.caveats import overlap_words

    others = [{"pid": i, "command": f"sysbench {test} --config-file=/tmp/x/sysbench.conf --mysql-port=3307"}
              for i, test in enumerate(["oltp_read_only"] * 2 + ["oltp_write_only"] * 3)]
    assert overlap_words(others) == "5 processes: sysbench oltp_read_only x2, sysbench oltp_write_only x3"


def test_a_longer_thread_sweep_is_no_break_of_the_thread_counts_both_measured(
        bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, second = _runs(bf_home, [2400.0, 2400.0])
    with open_store(bf_home) as store:
        spec = store.run(second)["spec"]
        store.set_spec(second, {**spec, "workload": {**spec["workload"], "threads": [4, 8]}})
    _, doc = _json(capsys, "results", "--history", "nightly")
    assert doc["breaks"] == [] and doc["rows"][1]["verdict"] != "break"


def test_compare_reads_the_noise_of_the_newest_runs_up_to_the_later_one(
        bf_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs after the compared one are not read, and at most NOISE_RUNS before it."""
    from benchfleet.stats import history as hist

    runs = _runs(bf_home, [2400.0, 2300.0, 2450.0, 2350.0, 2260.0, 2400.0])
    _, doc = _json(capsys, "compare", runs[3], runs[4])
    assert doc["rows"][0]["relative"]["run_to_run"]["runs"] == 5  # not the sixth, made after
    monkeypatch.setattr(hist, "NOISE_RUNS", 4)
    _, doc = _json(capsys, "compare", runs[3], runs[4])
    assert doc["rows"][0]["relative"]["run_to_run"]["runs"] == 4
