"""One machine, one benchmark: the machine-wide lock of local runs, and what the machine did meanwhile.

Two databases benchmarked at once on one machine are each other's noisy neighbour: both runs were
stored as clean while each took CPU, disk and cache from the other. Every local run therefore holds an
exclusive ``flock`` on one file per machine (``/run/lock/benchfleet.lock``, world-writable like every
lock there, so the runs of every user and every data dir exclude each other). A second run waits for
the first, saying whose run it waits for, or with ``--no-wait`` refuses (exit EXIT_BUSY). The kernel
drops the lock with the process that held it, so a killed run never leaves the machine locked.

``BENCHFLEET_MACHINE_LOCK`` names another lock file: the test suite gives each test process its own,
so two suites on one machine do not serialise each other's servers. Nothing turns the lock off.

What the lock cannot exclude (a sysbench someone started by hand, a suite on its own lock file, a
compile) :class:`MachineWatch` records while the run goes: the 1-minute load average every few seconds
and every sysbench process that is not this run's. The run stores it (``runs.machine``) and between-run
verdicts caveat a run that overlapped another benchmark or ran at a very different load
(:mod:`benchfleet.stats.caveats`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ENV = "BENCHFLEET_MACHINE_LOCK"
DEFAULT_PATH = Path("/run/lock/benchfleet.lock")
# sysexits.h EX_TEMPFAIL: "try again later"; what `run --no-wait` exits with while another run holds it.
EXIT_BUSY = 75
WATCH_INTERVAL_S = 2.0
# Processes that are a benchmark running (the agent's sysbench, or anyone's).
BENCHMARK_COMMANDS = frozenset({"sysbench"})


class MachineBusy(RuntimeError):
    """Another local run holds the machine and the caller would not wait."""


def lock_path() -> Path:
    configured = os.environ.get(ENV, "").strip()
    if configured:
        return Path(configured)
    # /run/lock is the FHS place for lock files; a system without it has a temporary directory.
    return DEFAULT_PATH if DEFAULT_PATH.parent.is_dir() else Path(tempfile.gettempdir()) / DEFAULT_PATH.name


_held: dict[str, Any] = {"depth": 0, "fd": None, "path": None}
_held_guard = threading.Lock()


def holder(path: Path) -> dict[str, Any] | None:
    """Who holds (or last held) the lock: what its holder wrote into the file, None when unreadable."""
    try:
        text = path.read_text(encoding="utf-8").strip()
        found = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def describe(info: dict[str, Any] | None) -> str:
    if not info:
        return "another benchmark"
    what = f"run {info['run']}" if info.get("run") else "a benchfleet run"
    return f"{what} (pid {info.get('pid')} on {info.get('host')}, since {info.get('since')})"


@contextmanager
def machine_lock(label: str, *, wait: bool = True, say: Callable[[str], None] = lambda _: None,
                 poll_s: float = 1.0) -> Iterator[Path]:
    """Hold the machine for one local run (``label`` names it to whoever waits). Re-entrant within a
    process: the CLI takes it before it reaps leftover servers, the runner again around the run.
    ``wait=False`` raises MachineBusy instead of waiting; while waiting ``say`` is told once whom for."""
    path = lock_path()
    with _held_guard:
        if _held["depth"]:
            _held["depth"] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield Path(_held["path"])
        finally:
            with _held_guard:
                _held["depth"] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # 0o666 despite the umask: the next user's run must be able to open the same file.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):  # someone else's file: opening it was enough
            os.fchmod(fd, 0o666)
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                info = holder(path)
                if not wait:
                    raise MachineBusy(f"this machine is running {describe(info)}: one benchmark at a time "
                                      f"(lock {path})") from None
                if not said:
                    say(f"waiting for {describe(info)} to finish: one benchmark at a time on this machine "
                        f"(lock {path}); Ctrl-C gives up")
                    said = True
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"run": label, "pid": os.getpid(), "host": socket.gethostname(),
                                  "since": datetime.now(UTC).isoformat(timespec="seconds")}).encode(), 0)
        with _held_guard:
            _held.update(depth=1, fd=fd, path=str(path))
        try:
            yield path
        finally:
            with _held_guard:
                _held.update(depth=0, fd=None, path=None)
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def _ancestry(pid: int, parents: dict[int, int]) -> Iterator[int]:
    seen: set[int] = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        yield pid
        pid = parents.get(pid, 0)


def foreign_benchmarks(me: int | None = None, proc: Path = Path("/proc")) -> list[dict[str, Any]]:
    """Benchmark processes on this machine that are not descendants of ``me`` (this process): pid and
    command line. Read from /proc; a process that ends while being read is skipped."""
    me = os.getpid() if me is None else me
    parents: dict[int, int] = {}
    benchmarks: dict[int, str] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'.
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            if comm in BENCHMARK_COMMANDS:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                benchmarks[int(entry.name)] = cmd or comm
        except (OSError, ValueError, IndexError):
            continue
    return [{"pid": pid, "command": cmd[:200]} for pid, cmd in sorted(benchmarks.items())
            if me not in _ancestry(pid, parents)]


class MachineWatch:
    """A daemon thread sampling the 1-minute load average and foreign benchmarks while a run goes.
    ``summary()`` is what the run stores: ``cpus``, ``load_mean``, ``load_max``, ``samples``, and
    ``overlapped`` (each foreign benchmark once: pid, command, first and last seen)."""

    def __init__(self, interval_s: float = WATCH_INTERVAL_S,
                 scan: Callable[[], list[dict[str, Any]]] = foreign_benchmarks) -> None:
        self.interval_s = interval_s
        self.scan = scan
        self.loads: list[float] = []
        self.seen: dict[int, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="benchfleet-machine-watch", daemon=True)

    def __enter__(self) -> MachineWatch:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(OSError):  # no load average on this system: no figure
            self.loads.append(os.getloadavg()[0])
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for found in self.scan():
            entry = self.seen.setdefault(found["pid"], {**found, "first_seen": now})
            entry["last_seen"] = now

    def summary(self) -> dict[str, Any]:
        loads = self.loads
        return {"cpus": os.cpu_count(), "samples": len(loads),
                "load_mean": round(sum(loads) / len(loads), 2) if loads else None,
                "load_max": round(max(loads), 2) if loads else None,
                "overlapped": list(self.seen.values()), "lock": str(lock_path())}
