#!/usr/bin/env python3
"""benchfleet agent: the one thing that measures.

Runs on a benchmark target (through SSM Run Command) or on this machine (as a subprocess of the local
runner). It takes one *job* -- one plan step -- as JSON, runs sysbench for it, samples /proc/stat at
every sysbench interval line, and writes JSON lines to stdout (and to ``--out`` if given):

  {"type": "fingerprint", ...}   prepare step: the environment the figures were measured on
  {"type": "sample", ...}        one per sysbench interval (1 s): rates, latency, CPU steal/user/...,
                                 and arrived_s, when the line arrived (seconds since sysbench's start),
                                 the data directory's disk (benchfleet_diskstats.py) and, for
                                 insert workloads, the rows in the table (benchfleet_rows.py)
  {"type": "summary", ...}       one per step: sysbench's own final figures for the step
  {"type": "error", ...}         a failure; the agent then exits non-zero

Standard library only, Python 3.8+: targets run whatever python3 their distribution ships. sysbench
parsing and cnf rendering come from benchfleet's own modules, shipped beside this file.

This file is the command line (``python3 workloads/agent/benchfleet_agent.py --job-json ...``, what the
SSM document and the local runner run): it reads the job, takes the host's lock (``--lock``: one agent
at a time), turns signals into an interrupt, opens the step's own copy of its output and dispatches by
the step's kind. Each phase is a module beside it:

  benchfleet_job.py     the job check: every value the agent uses, refused naming the field (exit 2)
  benchfleet_run.py     the step: install and prepare, a measured step's tool and settings, a cluster
                        host's set-up (benchfleet_cluster.py)
  benchfleet_sample.py  what is read as the tool reports each interval: the samples, then the summary
  benchfleet_emit.py    the records as JSON lines on stdout and in the step's kept copy; exit codes
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import signal
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.dirname(HERE)  # workloads/
# The parser is benchfleet's: in a checkout it is in lambdas/, in the agent bundle beside this file.
for candidate in (HERE, os.path.join(os.path.dirname(BUNDLE), "lambdas")):
    if os.path.exists(os.path.join(candidate, "benchfleet", "workload", "sysbench.py")):
        sys.path.insert(0, candidate)
        break
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from benchfleet_emit import EXIT_BAD_JOB, EXIT_BUSY, Emitter, OutputLost, bounded, kept_output  # noqa: E402
from benchfleet_job import JobError, check_job  # noqa: E402
from benchfleet_run import run_prepare, run_setup, run_step  # noqa: E402


def take_lock(path: str, job: Dict[str, Any]) -> Optional[str]:
    """One agent at a time on a host (two benchmarks would measure each other): an exclusive,
    non-blocking flock on ``path``, held until the process exits. None when taken, else who holds it."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise
        holder = os.read(fd, 4096).decode(errors="replace").strip()
        os.close(fd)
        return holder or "another agent"
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": os.getpid(), "run_id": job.get("run_id"), "target_id": job.get("target_id"),
                             "repetition": job.get("repetition"),
                             "step": (job.get("step") or {}).get("name")}).encode())
    _LOCKS.append(fd)  # kept open: closing the descriptor would release the lock
    return None


_LOCKS: List[int] = []


_stopping = []  # non-empty once the agent is interrupted or done: later signals change nothing


def _interrupt(signum: int, frame: Any) -> None:
    # Ctrl-C reaches the whole process group and the runner then sends SIGTERM as well: the first
    # signal interrupts, later ones are no-ops so they cannot land inside the clean-up. (Swapping the
    # handler for SIG_IGN here instead makes Python raise "ignored due to race condition".)
    if _stopping:
        return
    _stopping.append(signum)
    raise KeyboardInterrupt("signal {}".format(signum))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--job", help="path of the job JSON file ('-' for standard input)")
    source.add_argument("--job-json", help="the job as a JSON string")
    parser.add_argument("--out", help="also append the JSON lines to this file")
    parser.add_argument("--keep-dir", help="also write the JSON lines to <dir>/<run>/<target>/rep-<n>/<step>.jsonl")
    parser.add_argument("--lock", help="refuse to run while another agent holds this lock file")
    parser.add_argument("--cloudwatch-agent", help="the CloudWatch agent's state as the caller found it "
                        "(anything but 'running' is recorded as a notice: its metrics will be missing)")
    args = parser.parse_args(argv)
    try:
        if args.job_json is not None:
            job = json.loads(args.job_json)
        elif args.job == "-":
            job = json.load(sys.stdin)
        else:
            with open(args.job) as f:
                job = json.load(f)
        kind = check_job(job)
    except (OSError, ValueError, RecursionError) as e:
        message = "the job is nested too deeply" if isinstance(e, RecursionError) else str(e)
        sys.stdout.write(json.dumps(bounded({"type": "error", "stage": "job", "message": message})) + "\n")
        return EXIT_BAD_JOB
    # A closed terminal or SSH session (SIGHUP) stops the agent and its sysbench like Ctrl-C does.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    if args.lock:
        try:
            holder = take_lock(args.lock, job)
        except OSError as e:
            return Emitter(job, None).error("lock", "cannot use the lock file {}: {}".format(
                args.lock, e.strerror or e)) and EXIT_BAD_JOB
        if holder is not None:
            # Written to stdout only: the output file belongs to the copy that holds the lock.
            Emitter(job, None).error("lock", "another agent is running on this host: {}".format(holder))
            return EXIT_BUSY
    path = None
    try:
        path = args.out or (kept_output(args.keep_dir, job) if args.keep_dir else None)
        out = open(path, "a" if args.out else "w") if path else None
    except JobError as e:
        return Emitter(job, None).error("job", str(e)) and EXIT_BAD_JOB
    except OSError as e:  # an unwritable --out or --keep-dir: said as a record, never a traceback
        return Emitter(job, None).error("output", "cannot write {}: {}".format(
            path or args.keep_dir, e.strerror or e)) and EXIT_BAD_JOB
    emit = Emitter(job, out)
    if args.cloudwatch_agent is not None and args.cloudwatch_agent != "running":
        emit.emit("notice", stage="cloudwatch-agent", time=time.time(),
                  message="CloudWatch agent {}: this step's CloudWatch metrics (CPU steal) will be missing"
                  .format(args.cloudwatch_agent[:200]))
    try:
        if kind == "setup":
            code = run_setup(job, emit)
        else:
            code = run_prepare(job, emit) if kind == "prepare" else run_step(job, emit)
        if emit.lost and code == 0:  # the status reader's thread could not write the output file
            return emit.error("output", emit.lost)
        return code
    except JobError as e:
        return emit.error("job", str(e)) and EXIT_BAD_JOB
    except OutputLost as e:  # the kept copy is incomplete: the step is not one to collect
        return emit.error("output", str(e))
    except KeyboardInterrupt:
        emit.error("run", "interrupted")
        return 130
    except Exception as e:  # the last line of defence: an error record, never a traceback
        return emit.error("agent", "{}: {}".format(type(e).__name__, e))
    finally:
        # The work is over: a late signal must not raise during interpreter shutdown.
        _stopping.append(0)
        if out is not None:
            # Already said (OutputLost) when it fails: what the buffer held could not be written either.
            with contextlib.suppress(OSError):
                out.close()


if __name__ == "__main__":
    sys.exit(main())
