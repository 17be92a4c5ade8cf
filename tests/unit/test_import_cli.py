"""`benchfleet import` of the published study's logs: the qps sysbench printed comes back out."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from tests.conftest import SHARED_FIXTURES, needs_shared_fixtures
from tests.sysbench_logs import LOADED_SECONDS, run_log

from benchfleet.cli.main import main

STUDY = SHARED_FIXTURES / "percona-2021-arm-m6"


@needs_shared_fixtures
def test_import_then_results_show_the_printed_qps(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(STUDY / "c6g.large"), "--target", "c6g-large"]) == 0
    capsys.readouterr()
    assert main(["runs", "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert len(runs) == 1 and runs[0]["name"] == "import-c6g-large" and runs[0]["mode"] == "import"
    assert main(["results", runs[0]["run_id"], "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = {s["threads"]: s for s in doc["steps"]}
    assert sorted(steps) == [1, 2, 4, 8, 16, 32, 64, 128]
    text = (STUDY / "c6g.large" / "OLTP_READ_only_test_16_thread.log").read_text()
    printed_qps = float(text.split("queries:")[1].split("(")[1].split()[0])
    assert steps[16]["qps"] == printed_qps
    assert main(["results", runs[0]["run_id"][:20], "--format", "csv"]) == 0
    csv_text = capsys.readouterr().out
    assert csv_text.splitlines()[0].startswith("target_id,variant,repetition,block,step,threads")
    assert str(printed_qps) in csv_text


@needs_shared_fixtures
@pytest.mark.parametrize(("args", "fragment"), [
    (["import", "/nonexistent", "--target", "x"], "no such file"),
    (["import", str(STUDY / "README.md"), "--target", "x"], "no sysbench output"),
    (["import", str(STUDY / "c5.large"), "--target", "Bad Id"], "--target"),
])
def test_import_refuses_bad_input_with_exit_2(bf_home: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                               fragment: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_results_of_unknown_run(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


@needs_shared_fixtures
def test_history_of_runs_with_one_name(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", "--history", "nightly"]) == 2
    for instance in ("c5.large", "c6g.large"):
        assert main(["import", str(STUDY / instance), "--target", "db", "--run", "nightly"]) == 0
    capsys.readouterr()
    code = main(["results", "--history", "nightly", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["runs"]) == 2 and len(doc["rows"]) == 16
    second = [r for r in doc["rows"] if r["run_id"] == doc["runs"][1]]
    assert all(r["delta_pct"] is not None for r in second)
    # One repetition each: no confidence interval, so a drop can never be called a regression.
    assert doc["regressions"] == [] and code == 0


# ---- logs that are not results are refused, naming the file (issue 13) ------------------------------

def _runs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main(["runs", "--format", "json"]) == 0
    runs: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return runs


@pytest.mark.parametrize("cut_after", ["SQL statistics:", "total time:", "min:", "events (avg/stddev):"])
def test_a_truncated_log_is_refused_and_nothing_is_stored(bf_home: Path, tmp_path: Path, cut_after: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    text = run_log(LOADED_SECONDS, [900.0] * 9)
    log = tmp_path / "cut.log"
    log.write_text(text[:text.index(cut_after) + len(cut_after)] + "\n")
    assert main(["import", str(log), "--target", "db"]) == 2
    err = capsys.readouterr().err
    assert str(log) in err and "incomplete" in err and "Traceback" not in err
    assert _runs(capsys) == []


def test_a_corrupt_number_names_file_and_line(bf_home: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    lines = run_log(LOADED_SECONDS, [900.0] * 9).splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if "total number of events" in line)
    lines[number - 1] = "    total number of events:              12O4"
    log = tmp_path / "corrupt.log"
    log.write_text("\n".join(lines))
    assert main(["import", str(log), "--target", "db"]) == 2
    err = capsys.readouterr().err
    assert f"{log}:{number}:" in err and "12O4" in err and "Traceback" not in err


def test_a_large_log_streams(bf_home: Path, tmp_path: Path) -> None:
    # 40 MB of long lines the parser reads past, then a real summary: holding the log whole (or its lines)
    # would take over 40 MB; streaming takes a few.
    log = tmp_path / "big.log"
    head, tail = run_log([1, 2], [900.0, 900.0], total_time_s=2.0).split("SQL statistics:")
    filler = "Initializing worker threads... " * 1000 + "\n"
    with log.open("w") as f:
        f.write(head)
        for _ in range(1300):
            f.write(filler)
        f.write("SQL statistics:" + tail)
    assert log.stat().st_size > 40_000_000
    tracemalloc.start()
    try:
        assert main(["import", str(log), "--target", "db"]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


# ---- whole studies: one run, several targets, each folder a repetition (issue 16) -------------------

def test_per_second_accounting_of_an_imported_log(bf_home: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "loaded.log"
    log.write_text(run_log(LOADED_SECONDS[:-1], [900.0, 880.0, 300.0, 450.0, 870.0, 860.0, 420.0, 910.0]))
    assert main(["import", str(log), "--target", "db", "--run", "loaded"]) == 0
    (run,) = _runs(capsys)
    assert main(["results", str(run["run_id"]), "--format", "json"]) == 0
    (step,) = json.loads(capsys.readouterr().out)["steps"]
    assert (step["samples"], step["samples_expected"], step["covered_s"], step["missing_final"]) == (8, 12, 11.0, True)


def test_the_same_file_twice_is_refused(bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = run_log(LOADED_SECONDS, [900.0] * 9)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "t4.log").write_text(text)
    (tmp_path / "b" / "renamed.log").write_text(text)
    assert main(["import", str(tmp_path / "a"), str(tmp_path / "b"), "--target", "db"]) == 2
    assert "same content" in capsys.readouterr().err and _runs(capsys) == []
    assert main(["import", str(tmp_path / "a"), "--target", "db", "--run", "one"]) == 0
    (run,) = _runs(capsys)
    assert main(["import", str(tmp_path / "b"), "--target", "other", "--into", str(run["run_id"])]) == 2
    assert "same content" in capsys.readouterr().err


def test_a_log_without_its_thread_count_needs_threads(bf_home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "nothreads.log"
    # Fairness of a run of 8 threads (events per thread): --threads must agree with it.
    log.write_text(run_log([], [], threads=None, transactions=12_000).replace("12000.0000/5.00", "1500.0000/5.00"))
    assert main(["import", str(log), "--target", "db"]) == 2
    assert "--threads" in capsys.readouterr().err and _runs(capsys) == []
    assert main(["import", str(log), "--target", "db", "--threads", "8"]) == 0
    (run,) = _runs(capsys)
    assert main(["results", str(run["run_id"]), "--format", "json"]) == 0
    assert [s["threads"] for s in json.loads(capsys.readouterr().out)["steps"]] == [8]


@needs_shared_fixtures
def test_a_study_of_two_instance_types_is_one_run(bf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(STUDY / "c5.large"), "--target", "c5-large", "--run", "c5-vs-c6g"]) == 0
    (run,) = _runs(capsys)
    prefix = str(run["run_id"])[:12]
    assert main(["import", str(STUDY / "c6g.large"), "--target", "c6g-large", "--into", prefix]) == 0
    assert main(["import", str(STUDY / "c5a.large"), "--target", "c6g-large", "--into", prefix]) == 2
    assert "already has this target" in capsys.readouterr().err
    assert len(_runs(capsys)) == 1
    assert main(["results", prefix, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["statistics"]
    assert [t["target_id"] for t in doc["targets"]] == ["c5-large", "c6g-large"] and doc["baseline"] == "c5-large"
    rows = {(r["target_id"], r["threads"]): r for r in doc["rows"]}
    assert len(rows) == 16
    c6g = rows[("c6g-large", 16)]
    assert c6g["relative"]["vs"] == "c5-large" and c6g["relative"]["verdict"]
    printed = float((STUDY / "c6g.large" / "OLTP_READ_only_test_16_thread.log").read_text()
                    .split("transactions:")[1].split("(")[1].split()[0])
    assert c6g["tps"]["mean"] == printed


def test_compare_two_runs_and_export_per_second_csv(bf_home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from benchfleet.local import store as store_module

    # Two runs of one target each (say, two primary-key orders), three repetitions each.
    for name, level in (("pk-asc", 1000.0), ("pk-desc", 700.0)):
        folders = []
        for rep, wobble in enumerate((0.0, 12.0, -9.0), start=1):
            folder = tmp_path / name / f"rep{rep}"
            folder.mkdir(parents=True)
            (folder / "t4.log").write_text(run_log(LOADED_SECONDS, [level + wobble] * 9))
            folders.append(str(folder))
        assert main(["import", *folders, "--target", name, "--run", name]) == 0
    capsys.readouterr()
    assert main(["compare", "pk-asc", "pk-desc", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert (row["target_id"], row["vs_target_id"], row["threads"], row["repetitions"]) == ("pk-desc", "pk-asc", 4, 3)
    assert row["relative"]["verdict"] == "slower" and row["relative"]["pct"] == pytest.approx(-30, abs=1)
    assert main(["compare", "pk-asc", "nope"]) == 2
    capsys.readouterr()
    assert main(["results", "pk-asc", "--per-second", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    assert len(lines) == 1 + 3 * 9 and "interval_s" in header and "tps" in header
    assert [line.split(",")[header.index("interval_s")] for line in lines[1:10]] == [
        "1.0", "1.0", "3.0", "2.0", "1.0", "1.0", "2.0", "0.0", "1.0"]
    # The JSON export is the same rows, written batch by batch as one array (batches of 4 rows here,
    # so the 27 rows cross several batch boundaries).
    monkeypatch.setattr(store_module.DuckDBStore.sample_batches, "__defaults__", (None, 4))
    assert main(["results", "pk-asc", "--per-second", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 27 and [str(r["interval_s"]) for r in rows[:9]] == [
        line.split(",")[header.index("interval_s")] for line in lines[1:10]]
    assert main(["results", "pk-asc", "--per-second", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    # Without a format that can hold every sample: refused before anything is read.
    assert main(["results", "pk-asc", "--per-second"]) == 2
    assert "--format csv or json" in capsys.readouterr().err


@needs_shared_fixtures
def test_the_terminal_says_who_wins_at_100_columns(bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from rich.console import Console

    from benchfleet.cli import ui

    assert main(["import", str(STUDY / "c6g.large"), "--target", "c6g-large", "--run", "study"]) == 0
    run_id = str(_runs(capsys)[0]["run_id"])
    monkeypatch.setattr(ui, "console", Console(width=100, file=io.StringIO(), color_system=None))
    assert main(["import", str(STUDY / "c5.large"), "--target", "c5-large", "--into", run_id]) == 0
    text = ui.console.file.getvalue()
    assert "…" not in text and run_id in text
    # The table's rows (a wrapped summary sentence may also start with a target's name).
    lines = [line.strip() for line in text.splitlines()
             if line.strip().startswith(("c6g-large", "c5-large")) and line.split()[1:2] and line.split()[1].isdigit()]
    # Spec order (the first import is the baseline), one line per row, the difference and the verdict.
    assert [line.split()[:2] for line in lines][:2] == [["c6g-large", "1"], ["c6g-large", "2"]]
    assert len(lines) == 16 and all(len(line) <= 100 for line in lines)
    c5_at_1 = next(line for line in lines if line.split()[:2] == ["c5-large", "1"])
    assert "+18.7%" in c5_at_1 and "too few reps: 3+ each" in c5_at_1


def test_the_readmes_import_example_runs_in_a_clone(bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38 item 7: the README's import example read ../shared/fixtures, which a user's clone does not
    have (exit 2, 'no such file'). Its logs are in the repository now, their source named beside them:
    every command of the example, run from the checkout as written, succeeds."""
    import shlex

    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text()
    block = readme.split("### Importing a study", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line)[1:] for line in block.strip().splitlines()]
    assert [c[0] for c in commands] == ["import", "import", "import", "results"]
    monkeypatch.chdir(repo)
    for command in commands:
        assert main(command) == 0, (command, capsys.readouterr().err)
    out = " ".join(capsys.readouterr().out.split())
    assert "speedup by size: c6g-2xlarge (8 vCPUs) against c6g-large (2)" in out
    source = (repo / "workloads" / "examples" / "percona-2021-arm-m6" / "README.md").read_text()
    assert "Percona-Lab-results/2021_10_arm_cpu_comparison_m6" in source
    # The copies are the published logs, byte for byte, where the shared fixtures are beside this checkout.
    if STUDY.is_dir():
        for log in (repo / "workloads" / "examples" / "percona-2021-arm-m6").glob("*/*.log"):
            assert log.read_bytes() == (STUDY / log.parent.name / log.name).read_bytes()
