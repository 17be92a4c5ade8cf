"""What every command shares: the exit codes, CliError (a message and its exit code) and the data dir."""

from __future__ import annotations

import os
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def home() -> Path:
    """The data dir: ``.benchfleet/`` under the current directory unless BENCHFLEET_HOME is set.
    Absolute: the server is started with its data directory under it, from another directory, and
    the agent takes only absolute paths (a relative BENCHFLEET_HOME failed every local run)."""
    return Path(os.environ.get("BENCHFLEET_HOME") or Path.cwd() / ".benchfleet").absolute()
