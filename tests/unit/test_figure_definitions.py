"""Figure definitions (issue 24 item 5): interval lengths measured by the agent, a repeated printed second
flagged, sysbench's silenced final report labelled, the ramp of every measure step left out, tps SD and CV
from one weighting, and the p95 of per-second p95 named as what it is."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO

from benchfleet.local.store import DuckDBStore
from benchfleet.stats import NOTES, run_comparison, step_stats, step_stats_from_samples
from benchfleet.workload.records import parse_agent_lines

AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"
RUN = "defs-20261126t100000-abcd"
BASE = {"run_id": RUN, "target_id": "a", "repetition": 1, "workload": "w", "step": "t0002", "phase": "measure",
        "threads": 2}


def sample(second: float, tps: float, elapsed: float | None = None, **extra: Any) -> str:
    return json.dumps({"type": "sample", **BASE, "time": 1_700_000_000 + second, "second": second, "tps": tps,
                       "qps": tps * 20, "reads_per_s": 1, "writes_per_s": 1, "other_per_s": 1, "latency_ms": 2.5,
                       "latency_pct": 95, "errors_per_s": 0, "reconnects_per_s": 0, "cpu_steal_pct": 0.5,
                       **({"arrived_s": elapsed} if elapsed is not None else {}), **extra})


def summary(total_time_s: float, transactions: int, **extra: Any) -> str:
    return json.dumps({"type": "summary", **BASE, **extra, "time": 1_700_000_100, "total_time_s": total_time_s,
                       "transactions": transactions, "tps": round(transactions / total_time_s, 2),
                       "queries": transactions * 20, "qps": 1.0, "reads": 1, "writes": 1, "other": 1,
                       "ignored_errors": 0, "errors_per_s": 0, "reconnects": 0, "reconnects_per_s": 0,
                       "events": transactions, "latency_min_ms": 1, "latency_avg_ms": 2, "latency_max_ms": 9,
                       "latency_pct": 95, "latency_pct_ms": 3.1, "report_interval_s": 1})


def stored(tmp_path: Path, lines: list[str]) -> tuple[DuckDBStore, dict[str, Any]]:
    store = DuckDBStore(tmp_path / "b.duckdb")
    store.create_run(RUN, "defs", {"name": "defs", "targets": [{"id": "a", "kind": "local"}]}, "local", 0.0)
    store.add_output(parse_agent_lines("\n".join(lines)))
    return store, run_comparison(store, RUN)


def test_the_agent_times_each_report_as_it_arrives(tmp_path: Path) -> None:
    """A sysbench that reports at 1.0 s, late at 1.6 s ("[ 2s ]") and again 0.4 s later ("[ 2s ]" too):
    the agent's arrived_s gives lengths 1.0, 0.6, 0.4 where the printed seconds give 1, 1, 0."""
    line = ("[ {}s ] thds: 1 tps: 100.00 qps: 2000.00 (r/w/o: 1400.00/400.00/200.00) lat (ms,95%): 2.00 "
            "err/s: 0.00 reconn/s: 0.00")
    fake = tmp_path / "sysbench"
    printed = tmp_path / "printed"  # when the fake printed each line (the monotonic clock is system-wide)
    fake.write_text(f"""#!{sys.executable}
import sys, time
if sys.argv[1:] == ["--version"]:
    print("sysbench 1.0.20"); sys.exit()
print("sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta2)", flush=True)
times = [time.monotonic()]
print("Threads started!", flush=True)
for wait, second in ((1.0, 1), (0.6, 2), (0.4, 2)):
    time.sleep(wait)
    times.append(time.monotonic())
    print({line!r}.format(second), flush=True)
open({str(printed)!r}, "w").write(" ".join(map(str, times)))
print('''
SQL statistics:
    queries performed:
        read:                            1400
        write:                           400
        other:                           200
        total:                           2000
    transactions:                        200    (100.00 per sec.)
    queries:                             2000   (1000.00 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          2.0010s
    total number of events:              200

Latency (ms):
         min:                                    1.00
         avg:                                    2.00
         max:                                    9.00
         95th percentile:                        3.00
         sum:                                  400.00

Threads fairness:
    events (avg/stddev):           200.0000/0.00
    execution time (avg/stddev):   0.4000/0.00
''')
""")
    fake.chmod(0o755)
    job = {**{k: v for k, v in BASE.items() if k not in ("step", "phase", "threads")},
           "step": {"name": "t0001", "kind": "measure", "threads": 1, "duration_s": 2},
           "sysbench": {"test": "oltp_read_only", "options": {}}, "db": {"password": "pw"}}
    # The agent runs the host's sysbench (the one on PATH), never a binary a job names.
    done = subprocess.run([sys.executable, str(AGENT), "--job-json", json.dumps(job)], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = parse_agent_lines(done.stdout)
    assert [s.second for s in out.samples] == [1, 2, 2]
    assert all(s.arrived_s is not None for s in out.samples)
    lengths = [s.interval_s for s in out.samples]
    # The lengths the fake really left between its lines (its sleeps overshoot on a loaded machine),
    # measured by the agent to its reading of the pipe (a few ms; on a busy shared machine allow 0.15 s).
    times = [float(t) for t in printed.read_text().split()]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(g >= w - 0.01 for g, w in zip(gaps, (1.0, 0.6, 0.4), strict=True)), gaps
    assert lengths == [pytest.approx(g, abs=0.15) for g in gaps], (lengths, gaps)
    assert [s.phase for s in out.samples] == ["ramp", "measure", "measure"]


def test_measured_lengths_weigh_the_rates_and_a_repeated_second_is_flagged(tmp_path: Path) -> None:
    lines = [sample(1, 80, 1.001), sample(2, 100, 1.602), sample(2, 200, 2.002), sample(3, 100, 3.001),
             summary(3.0, 320)]
    out = parse_agent_lines("\n".join(lines))
    assert [s.interval_s for s in out.samples] == pytest.approx([1.001, 0.601, 0.4, 0.999])
    store, doc = stored(tmp_path, lines)
    store.close()
    (step,) = doc["rows"][0]["steps"]
    assert step["interval_lengths"] == "measured" and step["duplicate_timestamps"] == 1
    # Rounded seconds would give the 200-tps report weight 0; measured, it has its 0.4 s.
    assert step["tps_mean"] == pytest.approx((100 * 0.601 + 200 * 0.4 + 100 * 0.999) / 2.0)
    # Without arrival times (an imported log, older rows) the lengths are sysbench's, and said to be.
    rounded = parse_agent_lines("\n".join([sample(1, 80), sample(2, 100), sample(2, 200), sample(3, 100)]))
    assert [s.interval_s for s in rounded.samples] == [1, 1, 0, 1]
    py = step_stats_from_samples([s.model_dump() for s in rounded.samples])
    assert (py[0]["intervals_measured"], py[0]["duplicate_timestamps"]) == (False, 1)


def test_the_final_report_sysbench_silences_is_labelled_and_no_gap(tmp_path: Path) -> None:
    # 4 s, reports at 1..3: the one at 4 s never came, as with any sysbench run of short transactions.
    lines = [sample(1, 80, 1.0), sample(2, 100, 2.0), sample(3, 100, 3.0), summary(4.0005, 380)]
    store, doc = stored(tmp_path, lines)
    store.close()
    (step,) = doc["rows"][0]["steps"]
    assert (step["samples"], step["samples_expected"], step["final_silenced"]) == (3, 4, True)
    assert (step["gap"], step["reported_late"]) == (False, 0)
    # A report that came late and covers two seconds is a gap; the silenced last one still is not.
    (tmp_path / "late").mkdir()
    store, doc = stored(tmp_path / "late", [sample(1, 80, 1.0), sample(3, 100, 3.0), summary(4.0005, 380)])
    store.close()
    (step,) = doc["rows"][0]["steps"]
    assert (step["final_silenced"], step["reported_late"], step["gap"]) == (True, 1, True)


def test_the_step_output_line_calls_the_silenced_report_normal() -> None:
    from benchfleet.cli.ui import step_line

    out = parse_agent_lines("\n".join([sample(1, 80, 1.0), sample(2, 100, 2.0), summary(3.0005, 280)]))
    line = step_line("a", 1, "t0002", out.summaries[0])
    assert "2/3 samples, final report silenced (sysbench's normal end" in line and "missing" not in line


def test_the_silenced_final_report_is_said_once_per_run_not_on_every_step_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38 item 7: 'final report silenced (sysbench's normal end)' was printed on most step lines of a
    run (sysbench silences it as most steps end). A run's progress says it on the first step it ends."""
    from benchfleet.cli import ui
    from benchfleet.plan.model import make_plan
    from benchfleet.spec.loading import parse_spec, resolve
    from benchfleet.workload.records import AgentOutput

    data = {"name": "s", "targets": [{"id": "a", "kind": "local"}],
            "workload": {"name": "w", "test": "oltp_read_only", "threads": [1, 2, 4], "duration_s": 3,
                         "warmup_s": 2}}
    plan = make_plan(resolve(parse_spec(data), "s.yaml"))
    observer = ui.RichObserver(plan)
    observer.task = ui.TaskID(0)  # the progress display itself is not started: only what it prints is read
    observer.progress.update = lambda task, **fields: None  # type: ignore[method-assign]
    printed: list[str] = []
    # The progress prints on the CLI's console (ui.console): caught for this test only.
    monkeypatch.setattr(observer.progress.console, "print", lambda text, *a, **k: printed.append(str(text)))
    out = parse_agent_lines("\n".join([sample(1, 80, 1.0), sample(2, 100, 2.0), summary(3.0005, 280)]))
    for step in [st for st in plan.targets[0].steps if st.kind == "measure"]:
        observer.step_finished("a", 1, step, AgentOutput(samples=out.samples, summaries=out.summaries))
    assert len(printed) == 3 and all("2/3 samples" in line for line in printed)
    assert [line.count("final report silenced") for line in printed] == [1, 0, 0], printed


def test_the_ramp_is_left_out_of_the_steps_tps_and_its_per_second_figures(tmp_path: Path) -> None:
    # The first second runs 21 % low, as a fresh sysbench does; sysbench's own tps counts it.
    lines = [sample(1, 790, 1.0), *[sample(s, 1000 + (s % 2) * 20, float(s)) for s in range(2, 11)],
             summary(10.0, 790 + 9 * 1000 + 4 * 20)]
    out = parse_agent_lines("\n".join(lines))
    assert [s.phase for s in out.samples][:2] == ["ramp", "measure"]
    (s,) = out.summaries
    assert s.tps == 987.0  # sysbench's whole-step figure, kept as printed
    store, doc = stored(tmp_path, lines)
    sql_steps = store.query("SELECT count(*) AS n FROM samples WHERE phase = 'ramp'")
    store.close()
    assert sql_steps == [{"n": 1}]
    row = doc["rows"][0]
    (step,) = row["steps"]
    assert step["ramp_s"] == 1.0 and step["summary_tps"] == 987.0
    assert row["tps"]["mean"] == pytest.approx((9870 - 790) / 9.0) == step["tps"]
    assert step["seconds"] == 9 and step["tps_min"] == 1000  # the ramp's 790 is in no per-second figure
    assert "ramp" in NOTES["tps"]
    # The line a finished step prints shows the figure the results store; sysbench's, labelled, beside it.
    from benchfleet.cli.ui import step_line

    assert f"{step['tps']:,.1f} tps (987.0 incl. ramp)," in step_line("a", 1, "t0002", s, out.samples)


def test_the_live_progress_labels_the_ramps_report() -> None:
    from benchfleet.cli import ui
    from benchfleet.plan.model import make_plan
    from benchfleet.spec.loading import parse_spec, resolve

    data = {"name": "s", "targets": [{"id": "a", "kind": "local"}],
            "workload": {"name": "w", "test": "oltp_read_only", "threads": [1], "duration_s": 3, "warmup_s": 2}}
    plan = make_plan(resolve(parse_spec(data), "s.yaml"))
    (warmup, measure) = [st for st in plan.targets[0].steps if st.kind in ("warmup", "measure")]
    observer = ui.RichObserver(plan)
    observer.task = ui.TaskID(0)  # the progress display itself is not started: only what it is told is read
    shown: list[str] = []
    observer.progress.update = lambda task, **fields: shown.append(str(fields.get("info", "")))  # type: ignore[method-assign]
    for step in (warmup, measure):
        observer.step_started("a", 1, step)
        for second in (1.0, 2.0):
            observer.sample("a", step, second, 100.0)
    labelled = [info for info in shown if "tps" in info]
    assert labelled == ["100 tps", "100 tps", "100 tps (ramp, left out)", "100 tps"]


def test_tps_sd_and_cv_come_from_the_same_weighting(tmp_path: Path) -> None:
    tps, weights = [100.0, 50.0, 100.0, 120.0], [1.0, 2.0, 1.0, 0.5]
    figures = step_stats(tps, [1.0] * 4, (), weights)
    mean = sum(t * w for t, w in zip(tps, weights, strict=True)) / sum(weights)
    sd = math.sqrt(sum(w * (t - mean) ** 2 for t, w in zip(tps, weights, strict=True)) / (sum(weights) - 1))
    assert figures["tps_mean"] == pytest.approx(mean) and figures["tps_stdev"] == pytest.approx(sd)
    assert figures["tps_cv"] == pytest.approx(figures["tps_stdev"] / figures["tps_mean"])
    # The store's SQL gives the same.
    elapsed = [1.0, 2.0, 4.0, 5.0, 5.5]
    lines = [sample(1, 90, 1.0)] + [sample(round(e), t, e) for e, t in zip(elapsed[1:], tps, strict=True)]
    store, doc = stored(tmp_path, [*lines, summary(5.5, 500)])
    store.close()
    (step,) = doc["rows"][0]["steps"]
    assert step["tps_stdev"] == pytest.approx(sd) and step["tps_cv"] == pytest.approx(sd / mean)


def test_the_p95_of_per_second_p95_is_named_for_what_it_is(tmp_path: Path) -> None:
    from benchfleet.report.html import _jitter_table

    lines = [sample(s, 1000, float(s)) for s in range(1, 6)] + [summary(5.0, 5000)]
    store, doc = stored(tmp_path, lines)
    store.close()
    html = _jitter_table(doc)
    assert "p95 of per-second p95 ms" in html and "over s" not in html
    assert "never a percentile of transactions" in NOTES["latency_series_p95_ms"]


def test_a_step_split_into_blocks_is_one_repetition_by_the_same_definitions(tmp_path: Path) -> None:
    # Variants a and b, each step in two blocks of 10 s; every block a fresh sysbench with its own ramp,
    # and each block's final report silenced (sysbench's normal end): reports at 1..9 s, 10 s of transactions.
    lines, per_second = [], []
    for variant, scale in (("a", 1.0), ("b", 1.2)):
        for block, (ramp, rate, latency) in enumerate(((500.0, 1000.0, 2.5), (600.0, 1100.0, 4.0)), start=1):
            ident = {"variant": variant, "block": block, "step": f"t0002.b{block}.{variant}"}
            rates = [scale * rate * (1 + 0.02 * (s % 3)) for s in range(2, 10)]
            lines += [sample(1, scale * ramp, 1.0, latency_ms=latency, **ident),
                      *[sample(s, r, float(s), latency_ms=latency, **ident) for s, r in zip(range(2, 10), rates,
                                                                                            strict=True)],
                      summary(10.0005, round(scale * ramp + sum(rates) + scale * rate), **ident)]
            if variant == "a":
                per_second += rates
    store = DuckDBStore(tmp_path / "b.duckdb")
    store.create_run(RUN, "defs", {"name": "defs", "targets": [{"id": "a", "kind": "local"}],
                                   "variants": [{"id": "a"}, {"id": "b"}], "blocks": 2}, "local", 0.0)
    store.add_output(parse_agent_lines("\n".join(lines)))
    doc = run_comparison(store, RUN)
    transactions = {(s["variant"], s["block"]): s["transactions"] for s in store.summaries(RUN)}
    store.close()
    rows = {r["variant"]: r for r in doc["rows"]}
    # The repetition's tps: both blocks' transactions less both ramps over both blocks' time less the ramps
    # (not the blocks' transactions over one block's time).
    expected = (transactions[("a", 1)] + transactions[("a", 2)] - 500 - 600) / (2 * 10.0005 - 2)
    assert rows["a"]["tps"]["values"] == [pytest.approx(expected)]
    (step,) = rows["a"]["steps"]
    # Two silenced final reports (one per block) are no gap; the per-second figures are of both blocks'
    # measured seconds together, the latency percentile the higher block's.
    assert (step["final_silenced"], step["reported_late"], step["gap"]) == (True, 0, False)
    assert (step["samples"], step["samples_expected"], step["seconds"]) == (18, 20, 16)
    together = step_stats(per_second, [1.0] * len(per_second), (), [1.0] * len(per_second))
    assert step["tps_mean"] == pytest.approx(together["tps_mean"])
    assert step["tps_stdev"] == pytest.approx(together["tps_stdev"])
    assert step["tps_cv"] == pytest.approx(together["tps_cv"])
    assert (step["tps_min"], step["tps_max"]) == (together["tps_min"], together["tps_max"])
    assert step["latency_series_p95_ms"] == 4.0 and "blocks" in NOTES
    # Paired block by block on the same definition (ramps left out): b is 1.2 a in each block; the blocks'
    # log ratios make one repetition's (the unit).
    rel = rows["b"]["relative"]
    assert (rel["design"], rel["unit"], rel["pairs"], rel["blocks"]) == ("paired", "repetition", 1, 2)
    assert rel["pct"] == pytest.approx(20.0, abs=0.05)
