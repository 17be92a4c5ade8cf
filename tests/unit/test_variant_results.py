"""Variants in the results (issue 24): a ``variant`` (and ``block``) beside ``target_id`` in the
records, the local store (stores written before gain the columns), the Timestream records, the
dataset SQL and the comparison, whose rows are keyed so that variants of one host pair."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from tests.unit.test_dataset_sql import athena_to_duckdb

from benchfleet.aws.store import timestream
from benchfleet.local.store import DuckDBStore
from benchfleet.stats import comparison
from benchfleet.workload.records import AgentOutput, StepSummary, parse_agent_lines

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
RUN = "vars-20261102t100000-ab12"
SQL_DIR = Path(__file__).resolve().parents[2] / "cdk/lib/sql/athena"


def summary(target: str, variant: str, rep: int, tps: float, block: int | None = None, minute: int = 0,
            threads: int = 4) -> StepSummary:
    step = f"t{threads:04d}" + (f".b{block}" if block else "") + f".{variant}"
    return StepSummary(
        run_id=RUN, target_id=target, variant=variant, block=block, repetition=rep, workload="w", step=step,
        phase="measure", threads=threads, time=T0 + timedelta(minutes=minute), total_time_s=4.0,
        transactions=int(tps * 4), tps=tps, queries=int(tps * 40), qps=tps * 10, reads=0, writes=0, other=0,
        ignored_errors=0, errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0, events=int(tps * 4),
        latency_min_ms=1.0, latency_avg_ms=2.0, latency_max_ms=9.0, latency_pct=95, latency_pct_ms=3.0,
        samples=4, settings={"variant": variant, "requested": {"sync_binlog": "0"}} if variant == "relaxed" else None)


def test_the_agents_records_carry_the_variant_and_block_and_a_step_its_settings() -> None:
    base = {"run_id": RUN, "target_id": "box", "repetition": 1, "workload": "w", "step": "t0004.b2.relaxed",
            "phase": "measure", "threads": 4}
    lines = [dict(base, type="sample", variant="relaxed", block=2, time=1.0, second=1.0, tps=5.0, qps=50.0,
                  reads_per_s=0.0, writes_per_s=0.0, other_per_s=0.0, latency_ms=1.0, latency_pct=95,
                  errors_per_s=0.0, reconnects_per_s=0.0),
             dict(base, type="summary", variant="relaxed", block=2, time=2.0, total_time_s=1.0, transactions=5,
                  tps=5.0, queries=50, qps=50.0, reads=0, writes=0, other=0, ignored_errors=0, errors_per_s=0.0,
                  reconnects=0, reconnects_per_s=0.0, events=5, latency_min_ms=1.0, latency_avg_ms=1.0,
                  latency_max_ms=1.0, settings={"requested": {"sync_binlog": "0"}, "effective": {"sync_binlog": "0"}}),
             # Written before variants existed: no variant, read as "".
             dict(base, type="sample", step="t0001", time=3.0, second=1.0, tps=5.0, qps=50.0, reads_per_s=0.0,
                  writes_per_s=0.0, other_per_s=0.0, latency_ms=1.0, latency_pct=95, errors_per_s=0.0,
                  reconnects_per_s=0.0)]
    out = parse_agent_lines("\n".join(json.dumps(line) for line in lines))
    assert [(s.variant, s.block) for s in out.samples] == [("relaxed", 2), ("", None)]
    assert out.summaries[0].settings == {"requested": {"sync_binlog": "0"}, "effective": {"sync_binlog": "0"}}


def test_a_store_written_before_variants_gains_the_columns_and_its_rows_read_as_no_variant(tmp_path: Path) -> None:
    path = tmp_path / "benchfleet.duckdb"
    DuckDBStore(path).close()
    old = duckdb.connect(str(path))  # as an older benchfleet left it: no variant, block or settings
    for table, column in (("samples", "variant"), ("samples", "block"), ("step_summaries", "variant"),
                          ("step_summaries", "block"), ("step_summaries", "settings")):
        old.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    old.execute("INSERT INTO step_summaries (time, run_id, target_id, repetition, step, threads, phase, tps) "
                "VALUES (now(), 'old', 'a', 1, 't0001', 1, 'measure', 10.0)")
    old.close()
    store = DuckDBStore(path)
    try:
        (row,) = store.summaries("old")
        assert row["variant"] == "" and row["block"] is None and row["settings"] is None
        store.add_output(AgentOutput(summaries=[summary("box", "relaxed", 1, 100.0, block=2)]))
        (new,) = store.summaries(RUN)
        assert (new["variant"], new["block"], new["settings"]["requested"]) == ("relaxed", 2, {"sync_binlog": "0"})
    finally:
        store.close()


def test_timestream_records_carry_the_variant_as_a_dimension_and_the_settings_as_json() -> None:
    record = timestream.summary_record(summary("box", "relaxed", 1, 100.0, block=2))
    dims = {d["Name"]: d["Value"] for d in record["Dimensions"]}
    assert dims["variant"] == "relaxed"
    measures = {m["Name"]: m for m in record["MeasureValues"]}
    assert measures["block"]["Value"] == "2" and json.loads(measures["settings"]["Value"])["variant"] == "relaxed"
    plain = timestream.summary_record(summary("box", "", 1, 100.0))
    assert {d["Name"]: d["Value"] for d in plain["Dimensions"]}["variant"] == timestream.NO_VARIANT


def rows_of(summaries: list[StepSummary], spec: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    doc = comparison({"run_id": RUN, "spec": spec}, [], [s.model_dump() for s in summaries], [])
    return {(r["target_id"], r["variant"], r["threads"]): r for r in doc["rows"]}


def test_variants_compare_with_the_baseline_variant_on_the_same_host_paired_by_repetition_or_block() -> None:
    spec = {"targets": [{"id": "a", "kind": "ec2"}, {"id": "b", "kind": "ec2"}],
            "variants": [{"id": "durable"}, {"id": "relaxed"}]}
    found = []
    for target, scale in (("a", 1.0), ("b", 1.3)):
        for rep, noise in ((1, 1.0), (2, 0.8), (3, 1.1)):
            found += [summary(target, "durable", rep, 100 * scale * noise),
                      summary(target, "relaxed", rep, 150 * scale * noise)]
    rows = rows_of(found, spec)
    relaxed = rows[("b", "relaxed", 4)]["relative"]
    # Host b's own durable runs, repetition by repetition: the host's speed and each repetition's noise cancel.
    assert (relaxed["vs"], relaxed["vs_variant"], relaxed["design"], relaxed["unit"]) == ("b", "durable", "paired",
                                                                                         "repetition")
    assert relaxed["pct"] == pytest.approx(50.0) and relaxed["verdict"] == "faster"
    # The baseline variant of another target: against the baseline target, measured apart.
    other = rows[("b", "durable", 4)]["relative"]
    assert (other["vs"], other["vs_variant"], other["design"]) == ("a", "durable", "welch")
    assert rows[("a", "durable", 4)]["relative"] is None
    assert rows[("b", "relaxed", 4)]["label"] == "b · relaxed"
    # Blocks: each block pair gives a log ratio, a repetition's is its blocks' mean, and the repetition
    # is the unit (issue 37: 2 repetitions x 2 blocks were 4 pairs, df 3, unit 'block').
    blocks = [summary("a", v, rep, tps * (1 + 0.01 * b), block=b)
              for rep in (1, 2) for b in (1, 2) for v, tps in (("durable", 100.0), ("relaxed", 110.0))]
    rows = rows_of(blocks, {"targets": [{"id": "a", "kind": "local"}], "variants": spec["variants"],
                            "baseline": "durable"})
    rel = rows[("a", "relaxed", 4)]["relative"]
    assert (rel["unit"], rel["pairs"], rel["blocks"], rel["repetitions"]) == ("repetition", 2, 4, [2, 2])
    assert rel["pct"] == pytest.approx(10.0)
    assert rows[("a", "relaxed", 4)]["tps"]["values"] == pytest.approx([110 * 1.015, 110 * 1.015])
    assert rows[("a", "relaxed", 4)]["label"] == "relaxed"


def test_the_order_run_is_read_back_from_the_steps_times() -> None:
    found = [summary("a", "durable", 1, 100.0, minute=1), summary("a", "relaxed", 1, 100.0, minute=2),
             summary("a", "relaxed", 1, 100.0, minute=3, threads=8), summary("a", "durable", 1, 100.0, minute=4,
                                                                             threads=8)]
    doc = comparison({"run_id": RUN, "spec": {"variants": [{"id": "durable"}, {"id": "relaxed"}]}}, [],
                     [s.model_dump() for s in found], [])
    (steps,) = doc["order_run"]["steps"]
    assert [(s["threads"], s["variant"]) for s in steps["steps"]] == [(4, "durable"), (4, "relaxed"), (8, "relaxed"),
                                                                       (8, "durable")]


def test_the_dataset_sql_compares_each_variant_with_the_baseline_variant_of_its_target(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "b.duckdb")
    try:
        spec = {"targets": [{"id": "a"}, {"id": "b"}], "variants": [{"id": "durable"}, {"id": "relaxed"}],
                "baseline": "relaxed"}
        store.create_run(RUN, "vars", spec, "aws", None)
        store.add_output(AgentOutput(summaries=[summary(t, v, 1, tps) for t, v, tps in (
            ("a", "durable", 100.0), ("a", "relaxed", 200.0), ("b", "durable", 90.0), ("b", "relaxed", 150.0))]))
        sql = athena_to_duckdb((SQL_DIR / "step_results.sql").read_text())
        rows = {(r["target_id"], r["variant"]): r for r in store.query(sql)}
    finally:
        store.close()
    # baseline names a variant: relaxed on each target; target b's relaxed against target a's.
    assert rows[("a", "durable")]["relative_pct"] == pytest.approx(-50.0)
    assert rows[("b", "durable")]["relative_pct"] == pytest.approx(100 * (90 / 150 - 1))
    assert rows[("b", "relaxed")]["relative_pct"] == pytest.approx(-25.0)
    assert rows[("a", "relaxed")]["relative_pct"] == pytest.approx(0.0)
    assert rows[("b", "relaxed")]["series"] == "b · relaxed" and rows[("b", "relaxed")]["baseline_variant"] == "relaxed"
