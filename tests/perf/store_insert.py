"""How long the local store takes to insert one agent file (not part of the unit suite).

A real agent file (tests/fixtures/agent/t0001.jsonl: one 240 s step, 481 lines: 240 samples, 1,205
SHOW GLOBAL STATUS readings, its summary) goes into a fresh store the way ``DuckDBStore.add_output``
inserts now (one statement per table, each column bound as one list) and the way it did before (one
statement per row, executemany: tests/store_rows.py), alternately, ``--rounds`` times each in one
process; medians. Read the ratio on a busy machine. Prints ``name=value`` lines:

- ``insert_rows_per_file``: rows one agent file inserts (every table);
- ``insert_s_per_file_old`` / ``_new``: seconds per agent file, the one transaction included;
- ``insert_s_per_1k_samples_old`` / ``_new``: seconds per 1,000 rows (samples and status readings alike);
- ``insert_speedup``: old / new.

    .venv/bin/python tests/perf/store_insert.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for path in (REPO / "lambdas", REPO):
    sys.path.insert(0, str(path))

from tests.store_rows import insert_row_by_row  # noqa: E402

from benchfleet.local.store import DuckDBStore  # noqa: E402
from benchfleet.workload.records import AgentOutput, parse_agent_lines  # noqa: E402

AGENT_FILE = REPO / "tests" / "fixtures" / "agent" / "t0001.jsonl"


def old(store: DuckDBStore, output: AgentOutput) -> None:
    with store.transaction() as db:
        insert_row_by_row(db, output)


def new(store: DuckDBStore, output: AgentOutput) -> None:
    store.add_output(output)


def timed(insert: Callable[[DuckDBStore, AgentOutput], None], output: AgentOutput, where: Path) -> float:
    store = DuckDBStore(where)  # the schema is created outside the measurement
    try:
        began = time.perf_counter()
        insert(store, output)
        return time.perf_counter() - began
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    output = parse_agent_lines(AGENT_FILE.read_text(), str(AGENT_FILE))
    rows = len(output.samples) + len(output.status) + len(output.summaries)
    times: dict[str, list[float]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="bf-store-insert-") as tmp:
        for i in range(args.rounds):
            for name, insert in (("old", old), ("new", new)) if i % 2 == 0 else (("new", new), ("old", old)):
                times[name].append(timed(insert, output, Path(tmp) / f"{name}-{i}.duckdb"))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"insert_rows_per_file={rows}")
    for name in ("old", "new"):
        print(f"insert_s_per_file_{name}={median[name]:.4f}")
    for name in ("old", "new"):
        print(f"insert_s_per_1k_samples_{name}={median[name] / rows * 1000:.4f}")
    print(f"insert_speedup={median['old'] / median['new']:.1f}")


if __name__ == "__main__":
    main()
