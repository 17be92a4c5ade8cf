"""The commands of README.md and workloads/README.md run as typed, from the checkout's root.

Every line of their ``sh`` blocks is run, in order, with a private BENCHFLEET_HOME, except what needs
AWS (npx cdk, --remote, cancel) or a user's own server, and `make test` (this suite). `make demo` runs
its recipe at smoke scale: the same command, a minute instead of four. ``<run id>`` is the id of the
run the commands before it made.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.long(3)]

DOCS = [REPO / "README.md", REPO / "workloads" / "README.md"]
# What cannot run on a machine with no AWS account or without the user's own server.
NEEDS_ELSEWHERE = re.compile(r"^npx cdk|^npm |--remote|benchfleet cancel|results --history|MY_DB_PASSWORD")


def sh_commands(doc: Path) -> list[str]:
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command:
                commands.append(command)
    return commands


def demo_recipe() -> str:
    recipe = re.search(r"^demo:.*\n\t(.+)$", (REPO / "Makefile").read_text(), flags=re.M)
    assert recipe, "the Makefile has no demo recipe"
    return recipe.group(1)


def test_the_readmes_commands_run_as_typed(tmp_path: Path) -> None:
    env = dict(os.environ, BENCHFLEET_HOME=str(tmp_path / "home"))
    env.pop("BENCHFLEET_REPO", None)  # as a user has it: nothing but the checkout
    ran, run_id = [], None
    for doc in DOCS:
        for command in sh_commands(doc):
            if NEEDS_ELSEWHERE.search(command) or command == "make test":
                continue
            # The published study's logs the import example reads are in the repository
            # (workloads/examples/): every clone runs it.
            if command == "make demo":
                command = demo_recipe() + " --scale smoke"
            if "<run id>" in command:
                assert run_id, f"{doc.name}: {command!r} needs a run made by a command before it"
                command = command.replace("<run id>", run_id)
            argv = shlex.split(command)
            assert argv[0] != "benchfleet", f"{doc.name}: bare `benchfleet` is not on PATH: {command}"
            if argv[0] == ".venv/bin/benchfleet":
                assert (REPO / argv[0]).exists()
            done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                                  check=False)
            assert done.returncode == 0, f"{doc.name}: {command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            found = re.search(r"run (\S+) succeeded", done.stdout)
            run_id = found.group(1) if found else run_id
            ran.append(command)
    assert any(" run " in c for c in ran) and any("results" in c for c in ran), ran
    (tmp_path / "demo.html").unlink(missing_ok=True)
    (REPO / "demo.html").unlink(missing_ok=True)


@pytest.mark.parametrize("doc", sorted((REPO / "workloads").rglob("*.yaml")) + sorted((REPO / "workloads").glob(
    "mysql/*.cnf")) + sorted((REPO / "workloads").glob("lua/*.lua")), ids=lambda p: p.name)
def test_workload_headers_point_to_paths_that_exist(doc: Path) -> None:
    header = "\n".join(line for line in doc.read_text().splitlines() if line.startswith(("#", "--")))
    for path in re.findall(r"\b((?:workloads|tests|lambdas)/[\w./*-]+\.(?:yaml|cnf|lua|py))", header):
        assert list(REPO.glob(path)), f"{doc.name} names {path}, which does not exist from the checkout's root"
    for command in re.findall(r"(\S*benchfleet (?:run|plan|validate) .+)", header):
        assert command.startswith(".venv/bin/benchfleet"), f"{doc.name}: {command}"
    assert "seeds/" not in header
