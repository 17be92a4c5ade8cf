"""`benchfleet results RUN --per-second --format csv | head -5`: the reader going away is not an
error. The real CLI, in its own process, writes into a pipe whose reader takes five lines and closes
it (or, for a table rich draws, closed it before): the command ends quietly with 141 (as a tool SIGPIPE
ends: the shell's 128 + 13), nothing on stderr (before: "error: BrokenPipeError: [Errno 32] Broken
pipe" and exit 1; a table: exit 1, rich's own way)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

from benchfleet.local.store import DuckDBStore
from benchfleet.workload.records import parse_agent_lines

RUN = "fixture-20260101t000000-abcd"  # the run id in the fixture's rows


@pytest.mark.parametrize(("args", "lines"), [
    (["--per-second", "--format", "csv"], 5),  # `| head -5`: the reader goes away while the CLI writes
    ([], 0),  # the table (rich draws it), its reader gone before it is drawn
], ids=["csv", "table"])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, args: list[str], lines: int) -> None:
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    store.create_run(RUN, "piped", {"name": "piped"}, "local", 0.0)
    store.add_output(parse_agent_lines((FIXTURES / "agent" / "t0001.jsonl").read_text()))  # 240 s, ~100 kB of CSV
    store.finish_run(RUN, "succeeded")
    store.close()
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the smallest pipe: the CSV is 20 times more
    env = {**os.environ, "BENCHFLEET_HOME": str(tmp_path)}
    env.pop("BENCHFLEET_DEBUG", None)
    with subprocess.Popen([sys.executable, "-m", "benchfleet.cli", "results", RUN, *args],
                          stdout=write_end, stderr=subprocess.PIPE, env=env) as cli:
        os.close(write_end)
        with os.fdopen(read_end) as reader:  # `head -5`
            head = [reader.readline() for _ in range(lines)]
        _, stderr = cli.communicate(timeout=120)
    if lines:
        assert head[0].startswith("time,run_id,target_id"), stderr
        assert all(line.endswith("\n") for line in head) and RUN in head[4]
    assert stderr.decode() == "" and cli.returncode == 141
