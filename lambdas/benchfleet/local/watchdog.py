"""The local runner's per-step watchdog, and the check that a finished step matches its plan.

A step that outlives its plan (duration + grace), whose server or agent is stopped (SIGSTOP, a
debugger), or whose server reports a full disk is ended: the agent's process group gets SIGTERM,
then SIGKILL, and the step fails with the reason. Without it a stalled server kept a 10 s step going
for minutes and, once resumed, the step was stored as a success; a full disk made MariaDB wait on
its binlog forever and the run hang. A step that ends by itself is still checked against its plan,
by the check cloud collect makes too (benchfleet.workload.validation).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from benchfleet.plan.model import PlanStep

# A process stopped this long is stalled, not scheduled out (a loaded 2-core box never stops one).
STOPPED_AFTER_S = 5.0
# SIGTERM first, so the agent stops sysbench and reports; SIGKILL when that does not happen.
KILL_AFTER_S = 5.0
# MariaDB's messages when its disk is full: it then waits "for someone to free space" for ever.
DISK_FULL = ("Disk is full", "No space left on device", "Errcode: 28", "errno: 28")


def process_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat (R, S, D, T, t, Z...), None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def kill_group(pgid: int, grace_s: float = KILL_AFTER_S) -> None:
    """SIGTERM to a process group (and SIGCONT, so a stopped one can act on it), SIGKILL after
    ``grace_s`` if any of it is still there."""
    for sig in (signal.SIGTERM, signal.SIGCONT):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class StepWatchdog:
    """``with StepWatchdog(...) as dog:`` around a step; ``dog.reason`` says why it fired (None:
    it did not). ``on_fire(reason)`` runs once, on the watchdog's thread."""

    def __init__(self, deadline_s: float, processes: Sequence[tuple[str, int]], on_fire: Callable[[str], None],
                 error_log: Path | Sequence[Path] | None = None, poll_s: float = 0.5,
                 stopped_after_s: float = STOPPED_AFTER_S) -> None:
        self.deadline_s = deadline_s
        self.processes = list(processes)
        self.on_fire = on_fire
        # Every server's log (a cluster has one per node), each read from where it stood at the start.
        logs = [] if error_log is None else [error_log] if isinstance(error_log, Path) else list(error_log)
        self._log_offsets = {log: log.stat().st_size if log.exists() else 0 for log in logs}
        self.poll_s = poll_s
        self.stopped_after_s = stopped_after_s
        self.reason: str | None = None
        self.last_progress = time.monotonic()
        self._started = time.monotonic()
        self._stopped_since: dict[int, float] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="step-watchdog", daemon=True)

    def progress(self) -> None:
        """The agent said something: note when, for the reason's "last output N s ago"."""
        self.last_progress = time.monotonic()

    def __enter__(self) -> StepWatchdog:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._done.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._done.wait(self.poll_s):
            reason = self.check(time.monotonic())
            if reason:
                self.reason = reason
                self.on_fire(reason)
                return

    def check(self, now: float) -> str | None:
        elapsed = now - self._started
        quiet = f"its last output was {now - self.last_progress:.0f} s ago"
        if elapsed > self.deadline_s:
            return f"still running after {elapsed:.0f} s, past its deadline of {self.deadline_s:.0f} s; {quiet}"
        for label, pid in self.processes:
            if process_state(pid) in ("T", "t"):
                since = self._stopped_since.setdefault(pid, now)
                if now - since >= self.stopped_after_s:
                    return f"{label} (pid {pid}) has been stopped for {now - since:.0f} s; {quiet}"
            else:
                self._stopped_since.pop(pid, None)
        full = self._disk_full_line()
        if full:
            return f"the server's disk is full: {full}"
        return None

    def _disk_full_line(self) -> str | None:
        for log, offset in self._log_offsets.items():
            try:
                with log.open("rb") as f:
                    f.seek(offset)
                    new = f.read(1 << 20)
            except OSError:
                continue
            self._log_offsets[log] = offset + len(new)
            for line in new.decode("utf-8", "replace").splitlines():
                if any(marker in line for marker in DISK_FULL):
                    return line.strip()[:300]
        return None


def deadline_s(step: PlanStep) -> int:
    """How long a local step may run: its planned duration plus a grace for sysbench's start and
    stop, and for prepare, whose duration is an estimate from the data set's size."""
    if step.kind == "prepare":  # its duration is an estimate (plan.prepare_seconds): a minute more
        return step.duration_s + max(60, step.duration_s // 2)
    return step.duration_s + max(30, step.duration_s // 2)
