"""The statuses a run's Step Functions execution is in, named once: the API filters runs on them, the
command and the raw-output copy wait for a terminal one, teardown by tag acts on the failed ones (a
run that did not succeed may have left hosts its own teardown never reached)."""

from __future__ import annotations

from typing import Literal, get_args

RunStatus = Literal["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]
TERMINAL: tuple[str, ...] = tuple(s for s in get_args(RunStatus) if s != "RUNNING")
FAILED: frozenset[str] = frozenset(TERMINAL) - {"SUCCEEDED"}
