"""The store's inserts as they were before they were made bulk: one statement per row (executemany).
The reference the bulk inserts are checked against (tests/unit/test_store_bulk.py) and measured
against (tests/perf/store_insert.py)."""

from __future__ import annotations

from typing import Any

from benchfleet.local import store as st
from benchfleet.workload.records import AgentOutput


def insert_row_by_row(db: Any, output: AgentOutput) -> None:
    """``DuckDBStore.add_output``'s rows, each by its own INSERT (a step summary: INSERT OR REPLACE)."""
    for table, columns, rows, verb in (("samples", st._SAMPLE_COLUMNS, output.samples, "INSERT"),
                                       ("status_samples", st._STATUS_COLUMNS, output.status, "INSERT"),
                                       ("step_summaries", st._SUMMARY_COLUMNS, output.summaries, "INSERT OR REPLACE")):
        if rows:
            db.executemany(f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                           [[st._value(getattr(r, c)) for c in columns] for r in rows])
