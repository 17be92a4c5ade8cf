"""One private MariaDB server per local target, from the distribution package.

Each server lives in a temporary data dir under ``<home>/servers/``, listens on a free loopback port
only, and is registered in a small JSON file next to its data dir. The owner stops it and removes the
data dir on every exit path; if the owner itself is killed (SIGKILL, a crash, a closed terminal),
the kernel kills the server with it (PR_SET_PDEATHSIG) and the next benchfleet command reaps what
is registered but unowned, so a run after a crash finds nothing left over.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchfleet.cluster.galera import cause_line
from benchfleet.workload.mysqlcnf import render, with_server_options

_PR_SET_PDEATHSIG = 1
_START_TIMEOUT_S = 90.0
_STOP_TIMEOUT_S = 60.0


class LocalServerError(RuntimeError):
    """The local MariaDB server could not be set up. The message starts with the server's cause line
    (its first ``[ERROR]``), then what failed and the end of its log."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause or message.splitlines()[0]

    @property
    def configuration(self) -> bool:
        """The options themselves are refused: starting again cannot help."""
        return bool(_CONFIG_ERROR.search(self.cause))


# "[ERROR] mariadbd: unknown variable 'foo=1'", "unknown option '--foo'", an invalid value.
_CONFIG_ERROR = re.compile(r"unknown (variable|option)|invalid value|incorrect (value|argument)|"
                           r"Unknown/unsupported storage engine", re.IGNORECASE)


@dataclass(frozen=True)
class Connection:
    """How the agent reaches a database: the same shape for local servers and AWS endpoints."""

    host: str
    port: int
    user: str
    password: str
    database: str = "sbtest"
    tls: str = "off"  # the agent's db.tls: off | preferred | required
    tls_files: Mapping[str, str] = field(default_factory=dict)  # ssl_ca / ssl_cert / ssl_key paths
    # The server benchfleet checked (hostname, port, uuid): the agent refuses to prepare on another.
    expect_server: Mapping[str, str | None] | None = None

    def as_job(self) -> dict[str, object]:
        job: dict[str, object] = {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                                  "database": self.database, "tls": self.tls, **self.tls_files}
        if self.expect_server:
            job["expect_server"] = dict(self.expect_server)
        return job


def find_binary(*names: str) -> str:
    for name in names:
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin:/sbin")
        if path:
            return path
    raise LocalServerError(
        f"{names[0]} not found: install the distribution's mariadb-server package (make demo does)")


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); it is dead for our purposes.
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def die_with_parent() -> None:
    """preexec_fn: the server is killed when benchfleet dies, however it dies. SIGKILL, not SIGTERM:
    a server that is stopped, or waiting on a full disk, never acts on SIGTERM (it was still alive
    a minute after its owner); its data dir is throwaway, and the next command removes it."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reap_leftovers(home: Path) -> list[str]:
    """Stop and remove servers whose owning benchfleet process is gone. Returns what was removed."""
    removed: list[str] = []
    servers = home / "servers"
    if not servers.is_dir():
        return removed
    for record in sorted(servers.glob("*.json")):
        try:
            info = json.loads(record.read_text())
        except (OSError, ValueError):
            info = {}
        if _pid_alive(info.get("owner_pid")):
            continue
        # A cluster's record lists every process it started (its nodes and its proxy).
        terminate_all([info.get("server_pid"), *(info.get("server_pids") or [])])
        datadir = Path(info.get("dir") or record.with_suffix(""))
        if datadir.parent == servers or is_private_dir(datadir):
            shutil.rmtree(datadir, ignore_errors=True)
        if str(info.get("socket", "")).startswith(tempfile.gettempdir()):
            Path(info["socket"]).unlink(missing_ok=True)
        record.unlink(missing_ok=True)
        removed.append(datadir.name)
    # Data dirs without a record: a crash between mkdir and writing the record.
    for leftover in servers.iterdir():
        if leftover.is_dir() and not leftover.with_suffix(".json").exists():
            shutil.rmtree(leftover, ignore_errors=True)
            removed.append(leftover.name)
    return removed


# Where servers that run as another user than benchfleet's keep their files (a cluster's nodes run as
# `mysql`, which may not reach the data dir): a private directory under the system's temporary dir.
PRIVATE_PREFIX = "benchfleet-cluster-"


def is_private_dir(path: Path) -> bool:
    return path.parent == Path(tempfile.gettempdir()) and path.name.startswith(PRIVATE_PREFIX)


def terminate_all(pids: Sequence[int | None], timeout: float = _STOP_TIMEOUT_S) -> None:
    """Stop several servers at once: every one is asked first, then each is waited for (and killed
    when it overstays), so N servers take one server's stop time, not N."""
    alive = [pid for pid in pids if _pid_alive(pid)]
    for pid in alive:
        assert pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + timeout
    for pid in alive:
        _terminate(pid, max(0.0, deadline - time.monotonic()))


def _terminate(pid: int | None, timeout: float = _STOP_TIMEOUT_S) -> None:
    if not _pid_alive(pid):
        return
    assert pid is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)  # a stopped server acts on SIGTERM only once it runs again
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class LocalServer:
    """A MariaDB server for one target: ``with LocalServer(...) as conn:`` starts and always removes it."""

    def __init__(self, home: Path, name: str, cnf_source: str, memory_mb: int,
                 cpus: Sequence[int] | None = None, cnf_name: str = "cnf",
                 server_options: Mapping[str, object] | None = None) -> None:
        self.home = home
        self.name = name
        self.cnf_source = with_server_options(cnf_source, server_options)
        self.cnf_name = cnf_name
        self.memory_mb = memory_mb
        self.cpus = list(cpus) if cpus else None
        self.dir: Path | None = None
        # Unix socket paths are limited to 107 bytes; data dirs can be deep, so the socket lives in /tmp.
        self.socket = Path(tempfile.gettempdir()) / f"benchfleet-{secrets.token_hex(6)}.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.connection: Connection | None = None
        self.retried: str | None = None  # the first attempt's failure, when start needed a second
        self._log_from: dict[str, int] = {}  # where the current start's lines begin in each log
        self.rendered = render(self.cnf_source, "mariadb", memory_mb * 1024 * 1024, cnf_name)

    @property
    def config_hash(self) -> str:
        return self.rendered.sha256

    @property
    def error_log(self) -> Path | None:
        return self.dir / "error.log" if self.dir is not None else None

    @property
    def data_dir(self) -> Path | None:
        """The server's data directory (``datadir``): the disk the agent samples per second."""
        return self.dir / "data" if self.dir is not None else None

    def __enter__(self) -> Connection:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Connection:
        """Start the server; a failure that is not the configuration's is retried once on a fresh data
        dir and port (a port taken in between, a slow disk), then reported with its cause first."""
        try:
            return self._start_once()
        except LocalServerError as e:
            self.stop()
            if e.configuration:
                raise
            first = e
        self.retried = str(first)
        try:
            return self._start_once()
        except LocalServerError as second:
            self.stop()
            raise LocalServerError(f"{second}\n(the first attempt failed too: {first.cause})",
                                   cause=second.cause) from None

    def _start_once(self) -> Connection:
        servers = self.home / "servers"
        servers.mkdir(parents=True, exist_ok=True)
        reap_leftovers(self.home)
        self._log_from = {}
        self.dir = servers / f"{self.name}-{os.getpid()}-{secrets.token_hex(3)}"
        self.dir.mkdir()
        # A private temp dir: the server's temporary tables and files never meet another server's
        # (or a leftover of one) in the shared /tmp.
        (self.dir / "tmp").mkdir()
        self._register(server_pid=None)
        port = free_port()
        cnf = self._write_cnf(port)
        try:
            self._run([find_binary("mariadb-install-db", "mysql_install_db"), f"--defaults-file={cnf}",
                       "--auth-root-authentication-method=normal", "--skip-test-db"], "initialise the data dir")
        except LocalServerError as e:
            # The bootstrap server writes its reasons to log-error, not to its output.
            raise self._failure(f"could not initialise the data dir for {self.name}", str(e)) from None
        self._spawn(cnf, port)
        password = secrets.token_urlsafe(18)
        self._bootstrap(password)
        self.connection = Connection("127.0.0.1", port, "sbtest", password)
        return self.connection

    def _spawn(self, cnf: Path, port: int) -> None:
        """Start mariadbd on ``cnf`` (killed with its owner, pinned where asked) and wait for it."""
        assert self.dir is not None
        log = (self.dir / "server.out").open("ab")
        affinity = self.cpus

        def preexec() -> None:
            die_with_parent()
            if affinity:
                os.sched_setaffinity(0, affinity)

        self.process = subprocess.Popen(
            [find_binary("mariadbd", "mysqld"), f"--defaults-file={cnf}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=preexec)
        log.close()
        self._register(server_pid=self.process.pid)
        self._wait_ready(port)

    def restart(self, cnf_source: str, cnf_name: str) -> None:
        """The same server on its same data, started again with another cnf (a variant whose settings
        the server takes only at start). LocalServerError, with the server's own cause first, when it
        does not come back; the data dir stays for ``stop`` to remove."""
        assert self.dir is not None and self.connection is not None
        if self.process is not None:
            _terminate(self.process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            self.process = None
        self.cnf_source, self.cnf_name = cnf_source, cnf_name
        self.rendered = render(cnf_source, "mariadb", self.memory_mb * 1024 * 1024, cnf_name)
        # What the server logs from here on is this start's: its cause is the first [ERROR] after it.
        self._log_from = {name: (self.dir / name).stat().st_size if (self.dir / name).exists() else 0
                          for name in ("error.log", "server.out")}
        cnf = self._write_cnf(self.connection.port)
        try:
            self._spawn(cnf, self.connection.port)
        except LocalServerError as e:
            raise LocalServerError(f"{e}\n(restarting {self.name} with {cnf_name})", cause=e.cause) from None

    def set_global(self, values: Mapping[str, str]) -> None:
        """``SET GLOBAL name = value`` for each, as root over the server's socket (the benchmark user
        has no such privilege); the server's refusal, in its words, as LocalServerError."""
        sql = "".join(f"SET GLOBAL {name} = {value};" for name, value in values.items())
        self._run([find_binary("mariadb", "mysql"), f"--socket={self.socket}", "-uroot", "-e", sql],
                  "change settings at run time")

    def stop(self) -> None:
        """Stop the server and remove its data dir; safe to call more than once."""
        if self.process is not None:
            _terminate(self.process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            self.process = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.socket.unlink(missing_ok=True)
            self.dir.with_suffix(".json").unlink(missing_ok=True)
            self.dir = None

    def _register(self, server_pid: int | None) -> None:
        assert self.dir is not None
        record = {"owner_pid": os.getpid(), "server_pid": server_pid, "dir": str(self.dir),
                  "socket": str(self.socket)}
        self.dir.with_suffix(".json").write_text(json.dumps(record))

    def _write_cnf(self, port: int) -> Path:
        assert self.dir is not None
        user = "root" if os.geteuid() == 0 else None
        # Our own settings come last so that a workload cnf cannot move the server off loopback
        # or out of its private data dir.
        private = [
            f"datadir = {self.dir / 'data'}",
            f"socket = {self.socket}",
            f"pid-file = {self.dir / 'mysqld.pid'}",
            f"log-error = {self.dir / 'error.log'}",
            f"tmpdir = {self.dir / 'tmp'}",
            f"port = {port}",
            "bind-address = 127.0.0.1",
            "skip-name-resolve",
        ]
        if user:
            private.append(f"user = {user}")
        path = self.dir / "my.cnf"
        path.write_text(self.rendered.text + "# benchfleet local server\n" + "\n".join(private) + "\n"
                        + f"[client]\nsocket = {self.socket}\n")
        return path

    def _run(self, argv: list[str], what: str) -> None:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            said = (result.stderr.strip() or result.stdout.strip())[-2000:] or f"exit code {result.returncode}"
            raise LocalServerError(f"could not {what} for {self.name}: {said}")

    def _wait_ready(self, port: int) -> None:
        assert self.dir is not None and self.process is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        sock = self.socket
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._failure(f"MariaDB for {self.name} exited at start")
            if sock.exists():
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            time.sleep(0.1)
        raise self._failure(f"MariaDB for {self.name} did not accept connections in {_START_TIMEOUT_S:.0f} s")

    def _bootstrap(self, password: str) -> None:
        assert self.dir is not None
        # The anonymous ''@'localhost' account would shadow sbtest over 127.0.0.1: drop it, and create
        # the user for both host spellings.
        # Its schemas: sbtest, and sbtest_<variant> for variants that load their own data set.
        sql = (
            "DELETE FROM mysql.global_priv WHERE User='';"
            "CREATE DATABASE IF NOT EXISTS sbtest;"
            f"CREATE USER 'sbtest'@'localhost' IDENTIFIED BY '{password}';"
            f"CREATE USER 'sbtest'@'127.0.0.1' IDENTIFIED BY '{password}';"
            "GRANT ALL ON `sbtest%`.* TO 'sbtest'@'localhost';"
            "GRANT ALL ON `sbtest%`.* TO 'sbtest'@'127.0.0.1';"
            "FLUSH PRIVILEGES;"
        )
        self._run([find_binary("mariadb", "mysql"), f"--socket={self.socket}", "-uroot",
                   "-e", sql], "create the benchmark user")

    def _failure(self, what: str, said: str = "") -> LocalServerError:
        """An error whose first line is the server's own cause, then what failed, then the log's tail."""
        lines = self._error_log_lines() + said.splitlines()
        cause = cause_line(lines) or (said.splitlines()[-1] if said.strip() else "no error logged")
        tail = "\n".join(lines[-15:]) or "(no error log)"
        return LocalServerError(f"{cause}\n{what}; the server's log ends:\n{tail}", cause=cause)

    def _error_log_lines(self) -> list[str]:
        assert self.dir is not None
        for name in ("error.log", "server.out"):
            path = self.dir / name
            start = self._log_from.get(name, 0)
            if path.exists() and path.stat().st_size > start:
                with path.open("rb") as f:
                    f.seek(start)
                    return f.read().decode(errors="replace").splitlines()
        return []


@contextlib.contextmanager
def running_server(home: Path, name: str, cnf_source: str, memory_mb: int,
                   cpus: Sequence[int] | None = None) -> Iterator[tuple[LocalServer, Connection]]:
    server = LocalServer(home, name, cnf_source, memory_mb, cpus)
    with server as conn:
        yield server, conn
