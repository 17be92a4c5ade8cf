"""The house a newcomer reads (issue 40): the domain package grouped by concern, modules of a readable
size, and the Lambdas importing what they did before the move and nothing heavier.

The dependency direction itself (no import circle) is tests/unit/test_module_graph.py."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO

PACKAGE = REPO / "lambdas" / "benchfleet"
HANDLERS = REPO / "lambdas" / "handlers"
MAX_TOP_LEVEL = 12
MAX_LINES = 800
LONG_LINES = 600
# A module over LONG_LINES says why at its top, in its docstring, after this phrase.
LONG_REASON = "Why one module:"
# What a Lambda may import: the domain's light packages, never the command, the local backend or the
# report (rich, DuckDB, Plotly live there), and no third-party package beyond the runtime's boto3,
# pydantic and the Powertools layer (with what those import).
LAMBDA_PACKAGES = {"aws", "cluster", "cost", "plan", "spec", "stats", "workload"}
LAMBDA_THIRD_PARTY = {"annotated_types", "aws_lambda_powertools", "aws_xray_sdk", "boto3", "botocore", "certifi",
                      "dateutil", "jmespath", "pydantic", "pydantic_core", "s3transfer", "six", "typing_extensions",
                      "typing_inspection", "urllib3", "wrapt"}


def tracked_python() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / p for p in out.split()]


def test_the_domain_package_has_one_entry_per_concern() -> None:
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_TOP_LEVEL, entries
    for sub in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        init = sub / "__init__.py"
        assert init.exists(), f"{sub.name}/ is not a package"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc.split()) >= 20, f"benchfleet/{sub.name}/__init__.py does not say what the package owns"


def test_no_module_is_over_800_lines_and_long_ones_say_why() -> None:
    modules = tracked_python()
    assert len(modules) > 100  # the listing reads the real tree
    too_long, unexplained = [], []
    for path in modules:
        text = path.read_text()
        lines = text.count("\n")
        if lines > MAX_LINES:
            too_long.append(f"{path.relative_to(REPO)} ({lines})")
        elif lines > LONG_LINES and LONG_REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(f"{path.relative_to(REPO)} ({lines})")
    assert too_long == [], f"over {MAX_LINES} lines"
    assert unexplained == [], f"over {LONG_LINES} lines without '{LONG_REASON} ...' in the module docstring"


def test_what_the_command_draws_loads_no_report_or_store_library() -> None:
    """cli.ui (every command that prints a table) imports report.summary for its sentences; a package
    file that re-exported the HTML report loaded Plotly and DuckDB with it on every command."""
    code = "import sys, benchfleet.cli.ui\nprint(sorted({'plotly', 'duckdb'} & {n.split('.')[0] for n in sys.modules}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "lambdas"), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == "[]"


def handler_imports(handler: str) -> tuple[list[str], list[str]]:
    """(benchfleet modules, third-party top-level packages) importing ``handlers.<handler>`` loads."""
    code = ("import sys, json\n"
            f"__import__('handlers.{handler}')\n"
            "names = set(sys.modules)\n"
            "print(json.dumps(sorted(n for n in names if n.startswith('benchfleet'))))\n"
            "print(json.dumps(sorted({n.split('.')[0] for n in names} - set(sys.stdlib_module_names))))\n")
    lambdas = REPO / "lambdas"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=lambdas, check=True,
                         env={"PYTHONPATH": str(lambdas), "POWERTOOLS_TRACE_DISABLED": "1",
                              "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    return json.loads(out[0]), json.loads(out[1])


@pytest.mark.parametrize("handler", sorted(p.stem for p in HANDLERS.glob("*.py") if p.stem != "__init__"))
def test_a_lambda_imports_only_light_packages(handler: str) -> None:
    modules, third_party = handler_imports(handler)
    assert "benchfleet.spec.loading" in modules or "benchfleet.aws.settings" in modules  # it read the domain
    packages = {m.split(".")[1] for m in modules if m.count(".") >= 1}
    assert packages <= LAMBDA_PACKAGES, f"handlers.{handler} imports {sorted(packages - LAMBDA_PACKAGES)}"
    extra = set(third_party) - LAMBDA_THIRD_PARTY - {"benchfleet", "handlers"} - {
        n for n in third_party if n.startswith("_")}
    assert extra == set(), f"handlers.{handler} imports {sorted(extra)}"
