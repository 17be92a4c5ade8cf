"""`benchfleet import` of the published study's logs: the qps sysbench printed comes back out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import SHARED_FIXTURES, needs_shared_fixtures

from benchfleet.cli import main

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
    assert csv_text.splitlines()[0].startswith("target_id,repetition,step,threads") and str(printed_qps) in csv_text


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
