"""The answer first (issue 38 item 2): every report opens with <section id="summary">, one plain sentence
per comparison with its size, interval, design and verdict, and the caveats that apply; the terminal
prints the same sentences after its table. The sentences come from the verdicts' fields."""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from benchfleet.cli.main import main
from benchfleet.local.store import DuckDBStore
from benchfleet.report import summary
from benchfleet.stats.verdict import paired_difference, relative_difference

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from synthetic import DEMO_TARGETS, fill_demo_pair, fill_store  # noqa: E402


def _row(label: str, threads: int, rel: object, vs: str = "base", vs_variant: str = "") -> dict:
    return {"target_id": label, "label": label, "variant": "", "threads": threads,
            "relative": {"vs": vs, "vs_variant": vs_variant, **asdict(rel)}}


def test_each_comparison_is_one_sentence_from_its_verdicts_fields() -> None:
    fast = paired_difference([177, 180, 175], [100, 101, 99], "repetition")
    unsure = paired_difference([150, 100, 190], [100, 100, 100], "repetition")
    few = relative_difference([90, 95], [100, 101])
    rows = [{"target_id": "base", "label": "base", "variant": "", "threads": t, "relative": None} for t in (1, 4)]
    rows += [_row("relaxed", 1, unsure), _row("relaxed", 4, fast), _row("single", 1, few)]
    base_row = {"target_id": "base", "label": "durable", "variant": ""}
    found = summary.run_sentences({"rows": [*rows, base_row]})
    # One sentence per compared series; its decisive thread count first, both sides named once.
    assert len(found) == 2
    f = asdict(fast)
    assert found[0] == (
        f"relaxed is {f['pct']:.0f}% faster than durable at 4 threads (95% interval +{f['ci_low_pct']:.0f}% to "
        f"+{f['ci_high_pct']:.0f}%, paired over 3 repetitions); at 1 thread the difference is inconclusive "
        f"(95% interval {asdict(unsure)['ci_low_pct']:+.0f}% to +{asdict(unsure)['ci_high_pct']:.0f}%, paired over "
        f"3 repetitions; about {unsure.repetitions_needed} repetitions would decide).")
    assert found[1].startswith("at 1 thread there are too few repetitions to tell single from durable (-8.0% seen, 2 "
                               "on the smaller side; 95% interval")
    assert found[1].endswith("measured apart, 2 repetitions each).")
    # Thread counts with too few repetitions for any interval (an imported study: one each) in one clause.
    one = [_row("c6g-2xlarge", t, relative_difference([v], [100.0])) for t, v in ((1, 103.5), (16, 495.0))]
    assert summary.run_sentences({"rows": one}) == [
        "at 1 and 16 threads there are too few repetitions to tell c6g-2xlarge from base (+3.5%, +395% seen; no "
        "interval, measured apart, 1 repetition each)."]
    # A verdict category this module does not know speaks in its own words, with its interval.
    new = replace(unsure, verdict="possible regression", words="possible regression (-35%..+3%)")  # type: ignore[arg-type]
    text = summary.run_sentences({"rows": [_row("x", 8, new)]})[0]
    assert text.startswith("at 8 threads the difference between x and base: possible regression (-35%..+3%) (95% "
                           "interval")


def test_the_run_report_opens_with_the_answer_and_the_terminal_says_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id = fill_store(store, "demo-durability-20261126t100000-abcd", targets=DEMO_TARGETS, reps=3,
                            threads=(1, 4), seconds=8, warmup_s=3)
    finally:
        store.close()
    out = tmp_path / "r.html"
    assert main(["report", run_id, "-o", str(out)]) == 0
    page = out.read_text()
    body = page.split("<main>", 1)[1]
    assert body.startswith("<section id='summary'><h1>demo-durability</h1>")
    section = body.split("</section>", 1)[0]
    sentences = re.findall(r"<li>(relaxed is [^<]*)</li>", section)
    assert len(sentences) == 1 and re.match(
        r"relaxed is \d+% faster than durable at \d threads? \(95% interval \+\d+% to \+\d+%, paired over 3 rounds\); "
        r"\d+% faster at \d threads? \(", sentences[0]), sentences
    # The caveat the baseline's steal brings, and the count of comparisons chance alone would decide.
    assert re.search(r"<li>relaxed at 1 thread: differs: steal 0\.\d+% vs 3\.\d%</li>", section)
    assert "2 comparisons at 95%" in section
    capsys.readouterr()
    assert main(["results", run_id]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # rich folds long lines
    assert f"- {sentences[0]}".replace("&#x27;", "'") in printed


def test_the_report_of_two_runs_opens_with_the_answer_and_compare_prints_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        base, other = fill_demo_pair(store)
    finally:
        store.close()
    out = tmp_path / "pair.html"
    assert main(["compare", base, other, "--report", "-o", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    section = out.read_text().split("<main>", 1)[1].split("</section>", 1)[0]
    assert section.startswith(f"<section id='summary'><h1>{other} against {base}</h1>")
    sentences = re.findall(r"<li>([^<]*)</li>", section)
    relaxed = next(s for s in sentences if s.startswith("local-512mb/relaxed"))
    # Two runs of one spec: called the first and the second run (the title names them), not two ids a clause.
    assert re.match(r"local-512mb/relaxed in the second run is \d+% faster than in the first run at 4 threads "
                    r"\(95% interval \+\d+% to \+\d+%, measured apart, 3 repetitions each\); at 1 thread there "
                    r"are too few repetitions to tell", relaxed), relaxed
    durable = next(s for s in sentences if s.startswith("at 1 thread the difference between local-512mb/durable"))
    assert "is inconclusive (95% interval -" in durable
    for sentence in (relaxed, durable):
        assert f"- {sentence}" in printed


@pytest.mark.parametrize("case", ["aborted", "smoke"])
def test_an_aborted_or_smoke_run_says_so_before_any_figure(case: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38 item 7: `results` of an aborted run or a smoke run had no banner saying so (the report said
    nothing of an aborted run either): a reader took its figures as the spec's result."""
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id = fill_store(store, "demo-durability-20261126t100000-abcd", targets=DEMO_TARGETS, reps=3,
                            threads=(4,), seconds=6, warmup_s=2)
        if case == "aborted":
            store.finish_run(run_id, "aborted", "interrupted; servers stopped and removed")
            expected = ("This run ended aborted: interrupted; servers stopped and removed; its figures are of the "
                        "steps it finished.")
        else:  # as benchfleet.plan.scale.trial records a --scale smoke run
            trial = {"scale": "smoke", "substituted": [], "label": "smoke scale: 1 repetition of short steps"}
            store.set_spec(run_id, {**store.run(run_id)["spec"], "trial": trial})
            expected = "Not the spec's result: smoke scale: 1 repetition of short steps."
    finally:
        store.close()
    capsys.readouterr()
    assert main(["results", run_id]) == 0
    out = capsys.readouterr().out
    assert " ".join(out.split()).startswith(expected), out[:400]
    report = tmp_path / "r.html"
    assert main(["report", run_id, "-o", str(report)]) == 0
    section = report.read_text().split("<section id='summary'>", 1)[1].split("</section>", 1)[0]
    assert f"<p class='trial' id='trial'>{expected}" in section.replace("&#x27;", "'")
