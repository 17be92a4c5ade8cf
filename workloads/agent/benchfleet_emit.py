"""The agent's output: every record it writes, one JSON line each, and the exit code that ends a step.

``Emitter`` stamps each record with the step it belongs to (run, target, repetition, workload, step,
phase, threads; variant and block where the spec has variants), bounds it (``bounded``: a string field
to MAX_FIELD_CHARS, a record to MAX_RECORD_CHARS) and writes it, flushed at once, to stdout and to the
step's own copy (``--out``, or ``kept_output`` under ``--keep-dir``), raising ``OutputLost`` when that
copy cannot be written. ``Emitter.error`` writes the error record that ends a step and returns the
agent's exit code for it. The record types are listed in benchfleet_agent.py; benchfleet.records reads
them back.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import IO, Any, Dict, Optional

from benchfleet_job import SAFE_COMPONENT, JobError

# The agent's exit codes beside its error record: the step failed; the job (or --out, --keep-dir,
# --lock) cannot be used; another agent holds the host's lock. An interrupted agent exits 130.
EXIT_FAILED = 3
EXIT_BAD_JOB = 2
EXIT_BUSY = 4
# Each record the agent writes is one line of at most this many characters: a string field longer
# than MAX_FIELD_CHARS is cut (its end kept, where the cause usually is). sysbench's own lines above
# MAX_LINE_CHARS (benchfleet.workload.sysbench) are not sysbench output and end the step (benchfleet_sample).
MAX_FIELD_CHARS = 8000
MAX_RECORD_CHARS = 64 * 1024


class OutputLost(RuntimeError):
    """--out / --keep-dir cannot be written: the step's own copy of its records would be incomplete."""


class Emitter:
    """Writes records as JSON lines, flushed at once so a reader sees every second as it happens."""

    def __init__(self, job: Dict[str, Any], out: Optional[IO[str]]) -> None:
        self.base = {k: job.get(k) for k in ("run_id", "target_id", "repetition", "workload")}
        step = job.get("step") or {}
        self.base.update({"step": step.get("name"), "phase": step.get("kind"), "threads": step.get("threads")})
        if job.get("variant"):  # a spec with variants: every record says which one it measured
            self.base.update({"variant": job.get("variant"), "block": step.get("block")})
        self.out = out
        self.lost: Optional[str] = None  # why the output file stopped being written, once it did
        self.lock = threading.Lock()  # the status reader emits from its own thread

    def emit(self, kind: str, **fields: Any) -> None:
        record = {"type": kind}
        record.update(self.base)
        record.update(fields)
        line = json.dumps(bounded(record), separators=(",", ":"), sort_keys=False)
        if len(line) > MAX_RECORD_CHARS:  # many fields, each under the limit: keep what says what happened
            keep = ("type", "stage", "message", "time", "run_id", "target_id", "repetition", "step")
            line = json.dumps(bounded({k: record.get(k) for k in keep if k in record}, 1000),
                              separators=(",", ":"))
        with self.lock:  # the status poller emits from its own thread
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            if self.out is not None:
                try:
                    self.out.write(line + "\n")
                    self.out.flush()
                except OSError as e:  # a full disk, /dev/full: the step's kept copy is incomplete
                    lost, self.out = self.out, None  # later records (the error) go to stdout only
                    self.lost = "cannot write {}: {}".format(getattr(lost, "name", "the output file"),
                                                             e.strerror or e)
                    if threading.current_thread() is threading.main_thread():
                        raise OutputLost(self.lost) from None
                    # (the status reader's thread: main says it when the step ends, see benchfleet_agent.main)

    def error(self, stage: str, message: str, **fields: Any) -> int:
        try:
            self.emit("error", stage=stage, message=message, time=time.time(), **fields)
        except OutputLost as e:  # the record reached stdout; say why the output file lacks it
            self.emit("error", stage="output", message=str(e), time=time.time())
        return EXIT_FAILED


def bounded(value: Any, limit: int = MAX_FIELD_CHARS) -> Any:
    """``value`` with every string longer than ``limit`` cut to its last ``limit`` characters."""
    if isinstance(value, str):
        return value if len(value) <= limit else "[cut] " + value[-limit:]
    if isinstance(value, dict):
        return {k: bounded(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded(v, limit) for v in value]
    return value


def kept_output(directory: str, job: Dict[str, Any]) -> str:
    """``<directory>/<run>/<target>/rep-<n>/<step>.jsonl``: this step's output, kept on the host
    (the SSM agent's own copy is in a working directory it cleans up) until the host goes away."""
    parts = [str(job.get("run_id")), str(job.get("target_id")), "rep-{}".format(job.get("repetition")),
             str((job.get("step") or {}).get("name"))]
    bad = [p for p in parts if not SAFE_COMPONENT.match(p) or ".." in p]
    if bad:
        raise JobError("cannot keep the output under {}: {!r} is not a safe path component".format(directory, bad[0]))
    path = os.path.join(directory, *parts[:3], parts[3] + ".jsonl")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    return path
