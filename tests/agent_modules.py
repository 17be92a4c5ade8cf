"""The agent's modules (workloads/agent: stdlib-only scripts, not a package) loaded by file for the unit tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

AGENT_DIR = Path(__file__).resolve().parents[1] / "workloads" / "agent"
sys.path.insert(0, str(AGENT_DIR))  # the agent imports its sibling modules by name


def load(name: str) -> ModuleType:
    """workloads/agent/<name>.py as a fresh module (each test file gets its own copy to patch)."""
    spec = importlib.util.spec_from_file_location(name, AGENT_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def imported(name: str) -> ModuleType:
    """workloads/agent/<name>.py as the agent's own modules import it (sys.modules' one copy): the copy
    to patch when a test runs the agent's main() in-process, and the one whose exceptions (JobError,
    InstallError) the agent's code raises."""
    return importlib.import_module(name)
