"""The store's bulk inserts (one statement per table, each column bound as a list) store exactly
what one INSERT per row stored: every column of every row of a real agent file, loaded both ways."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.store_rows import insert_row_by_row

from benchfleet.local.store import DuckDBStore
from benchfleet.workload.records import AgentOutput, parse_agent_lines


def agent_output() -> AgentOutput:
    """The fixture's prepare and t0001 steps (status, samples, summaries, fingerprint), plus what a
    variant's step adds: a summary with its settings (a JSON column) given again under the same key,
    which replaces the first as a later row did."""
    output = parse_agent_lines("".join((FIXTURES / "agent" / f"{step}.jsonl").read_text()
                                       for step in ("prepare", "t0001")))
    first = output.summaries[0]
    again = first.model_copy(update={"tps": first.tps * 2, "variant": "", "missing_final": True,
                                     "settings": {"requested": {"innodb_flush_log_at_trx_commit": "2"},
                                                  "effective": {"innodb_flush_log_at_trx_commit": "2"}}})
    output.summaries = [*output.summaries, again]
    return output


def test_bulk_inserts_store_every_column_as_row_by_row_inserts_did(tmp_path: Path) -> None:
    output = agent_output()
    assert len(output.samples) == 240 and len(output.status) > 1000 and len(output.summaries) == 2
    bulk, rows = DuckDBStore(tmp_path / "bulk.duckdb"), DuckDBStore(tmp_path / "rows.duckdb")
    bulk.add_output(output)
    with rows.transaction() as db:
        insert_row_by_row(db, output)
    for table, count in (("samples", 240), ("status_samples", len(output.status)), ("step_summaries", 1)):
        query = f"SELECT *, typeof(COLUMNS(*)) FROM {table} ORDER BY ALL"
        stored = bulk.query(query)
        assert len(stored) == count and stored == rows.query(query), table
    (summary,) = bulk.summaries(output.summaries[0].run_id)
    assert summary["tps"] == output.summaries[-1].tps and summary["settings"]["requested"]  # the last one kept
    # Into a step that is stored already, the summary replaces it (INSERT OR REPLACE), samples add up.
    bulk.add_output(output)
    assert bulk.query("SELECT count(*) AS n FROM samples")[0]["n"] == 480
    assert bulk.query("SELECT count(*) AS n FROM step_summaries")[0]["n"] == 1
