"""A local Galera cluster: N MariaDB servers from the distribution (Debian's ``galera-4``) and a proxy.

Each node is a MariaDB server with its own data dir, socket and four loopback ports (client, group
communication, incremental and full state transfer; ``benchfleet.cluster.galera``). The first node is
initialised and bootstraps the cluster (``--wsrep-new-cluster``); the benchmark user and the proxies'
users are created on it; the others start at once with empty data dirs and join by state transfer
(rsync). Prepare starts only once every node is Synced at full size; a node that fails to join fails
the target, naming the node and its reason (its log's first error, or the state it was stuck in).

The nodes run as the ``mysql`` user when benchfleet runs as root: rsync's daemon, which receives a
full state transfer, cannot write a data dir owned by root (DESIGN.md, third review). Their files
live in a private directory under the system's temporary dir (``mysql`` may not reach the data dir).

The proxy (``haproxy`` from the distribution, or ``proxysql`` when it is on the PATH) listens on its
own port in front of the nodes (``benchfleet.cluster.proxyconf``). ``connection(route)`` is where the agent
connects: ``direct`` the writer node (the first: writes go to one node), ``proxy`` the proxy.

Nothing leaks: the nodes and the proxy are registered (one record, ``<home>/servers/<name>.json``),
die with benchfleet (PR_SET_PDEATHSIG, set after the switch to ``mysql``, which would clear it), are
stopped together on every exit path, and the next command reaps what a crash left.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchfleet.cluster import galera, proxyconf
from benchfleet.local.mariadb import (
    PRIVATE_PREFIX,
    Connection,
    LocalServerError,
    die_with_parent,
    find_binary,
    free_port,
    reap_leftovers,
    terminate_all,
)
from benchfleet.workload import serverstatus
from benchfleet.workload.mysqlcnf import render, with_server_options

JOIN_TIMEOUT_S = 120.0
BOOTSTRAP_TIMEOUT_S = 90.0
PROXY_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
GCACHE_MB = 64  # the default 128 MB ring buffer, preallocated per node, is more than a local cluster needs
PROXYSQL_PACKAGE = ("proxysql is not on the PATH: install ProxySQL (the proxysql package from ProxySQL's "
                    "own apt repository, or proxysql2 from Percona's), or use proxy: haproxy")


class ClusterError(LocalServerError):
    """The cluster could not be formed; the message names the node and why."""


@dataclass
class _Node:
    address: galera.NodeAddress
    dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.dir / "mysqld.sock"

    @property
    def error_log(self) -> Path:
        return self.dir / "error.log"


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) of ``mysql`` when benchfleet runs as root, else None (the nodes run as us)."""
    if os.geteuid() != 0:
        return None
    try:
        account = pwd.getpwnam("mysql")
    except KeyError:
        raise ClusterError("no mysql user on this machine: install the distribution's mariadb-server "
                           "package (it creates it)") from None
    return account.pw_uid, account.pw_gid


def proxy_available(software: str) -> str | None:
    """Why ``software`` cannot front a local cluster here (None: it can)."""
    if software == "proxysql" and not shutil.which("proxysql"):
        return PROXYSQL_PACKAGE
    if software == "haproxy" and not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):
        return "haproxy is not installed: install the distribution's haproxy package (make system-deps does)"
    return None


class LocalCluster:
    """``with LocalCluster(...) as cluster:`` forms the cluster and always removes it."""

    def __init__(self, home: Path, name: str, cnf_source: str, memory_mb: int, *, nodes: int = 3,
                 proxy: str = "haproxy", cpus: Sequence[int] | None = None,
                 cnf_name: str = "cnf", server_options: Mapping[str, object] | None = None,
                 join_timeout_s: float = JOIN_TIMEOUT_S,
                 on_phase: Callable[[str], None] | None = None) -> None:
        self.home = home
        self.name = name
        self.size = nodes
        self.proxy = proxy
        self.cpus = list(cpus) if cpus else None
        self.join_timeout_s = join_timeout_s
        self.on_phase = on_phase or (lambda _text: None)
        self.rendered = render(with_server_options(cnf_source, server_options), "mariadb",
                               memory_mb * 1024 * 1024, cnf_name)
        self.dir: Path | None = None
        self.nodes: list[_Node] = []
        self.proxy_process: subprocess.Popen[bytes] | None = None
        self.proxy_setup: proxyconf.ProxySetup | None = None
        self.password = secrets.token_urlsafe(18)
        self.passwords = {"sbtest": self.password, "monitor": secrets.token_urlsafe(18),
                          "admin": secrets.token_urlsafe(18), "stats": secrets.token_urlsafe(18)}
        self.timings: dict[str, float] = {}
        self.proxy_version: str | None = None

    # ---- the contract with the runner ------------------------------------------------------------
    @property
    def config_hash(self) -> str:
        return self.rendered.sha256

    @property
    def processes(self) -> list[tuple[str, int]]:
        """(what, pid) of everything running, for the step watchdog."""
        out = [(f"node {n.address.name} of {self.name}", n.process.pid) for n in self.nodes if n.process]
        if self.proxy_process is not None:
            out.append((f"the {self.proxy} proxy of {self.name}", self.proxy_process.pid))
        return out

    @property
    def error_logs(self) -> list[Path]:
        return [n.error_log for n in self.nodes]

    def connection(self, route: str = "direct") -> Connection:
        """Where sysbench connects: the writer node (the first), or the proxy in front of the nodes."""
        if route == "proxy":
            if self.proxy_setup is None:
                raise ClusterError(f"{self.name}: route proxy needs a proxy (proxy: none)")
            return Connection(self.proxy_setup.listen_host, self.proxy_setup.listen_port, "sbtest", self.password)
        writer = self.nodes[0].address
        return Connection(writer.host, writer.port, "sbtest", self.password)

    def status_sources(self) -> list[dict[str, Any]]:
        """What the agent samples every second: each node over SQL, and the proxy's statistics."""
        node = {n.address.name: n.address for n in self.nodes}
        p = self.proxy_setup
        sources: list[dict[str, Any]] = []
        for name in serverstatus.target_sources(len(self.nodes), p.software if p is not None else "none"):
            if name == serverstatus.PROXY and p is not None:
                proxy: dict[str, Any] = {"name": name, "kind": p.software, "host": p.listen_host, "port": p.admin_port,
                                         "backends": {b.name: f"{b.host}:{b.port}" for b in p.backends}}
                if p.software == "proxysql":
                    proxy.update(user=proxyconf.STATS_USER, password=self.passwords["stats"])
                sources.append(proxy)
            else:
                sources.append({"name": name, "kind": "mysql", "host": node[name].host, "port": node[name].port})
        return sources

    def fingerprint(self) -> dict[str, Any]:
        """What the targets row records beside the server's own fingerprint."""
        out: dict[str, Any] = {"cluster_nodes": self.size, "cluster_flavor": "mariadb-galera"}
        if self.proxy_setup is not None:
            out.update(proxyconf.fingerprint(self.proxy_setup, self.proxy_version))
        return out

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        owner = _run_as()
        servers = self.home / "servers"
        servers.mkdir(parents=True, exist_ok=True)
        reap_leftovers(self.home)
        self.dir = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))
        self._register()
        used: set[int] = set()

        def port() -> int:
            while (p := free_port()) in used:
                pass
            used.add(p)
            return p

        addresses = [galera.NodeAddress(name, "127.0.0.1", port(), port(), port(), port())
                     for name in galera.node_names(self.size)]
        for address in addresses:
            node = _Node(address, self.dir / address.name)
            (node.dir / "tmp").mkdir(parents=True)
            (node.dir / "data").mkdir()  # empty: a joiner receives it whole by state transfer
            self._write_cnf(node, addresses)
            self.nodes.append(node)
        if owner is not None:
            for path in [self.dir, *self.dir.rglob("*")]:
                os.chown(path, *owner)
        started = time.monotonic()
        self.on_phase(f"bootstrapping node {addresses[0].name}")
        self._bootstrap(self.nodes[0], owner)
        self.timings["bootstrap_s"] = time.monotonic() - started
        self.on_phase(f"nodes {', '.join(a.name for a in addresses[1:])} joining (state transfer)")
        for node in self.nodes[1:]:
            self._start_node(node, owner)
        self._register()
        self._wait_synced()
        self.timings["synced_s"] = time.monotonic() - started
        if self.proxy != "none":
            self.on_phase(f"starting {self.proxy}")
            self._start_proxy()
            self._register()

    def stop(self) -> None:
        """Stop every node and the proxy at once and remove their files; safe to call more than once."""
        pids = [n.process.pid for n in self.nodes if n.process is not None]
        if self.proxy_process is not None:
            pids.append(self.proxy_process.pid)
        # The data is thrown away: a node that does not stop promptly (one aborting after a failed state
        # transfer can hang a minute) is killed.
        terminate_all(pids, timeout=STOP_GRACE_S)
        for process in [n.process for n in self.nodes] + [self.proxy_process]:
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
        for node in self.nodes:
            node.process = None
        self.proxy_process = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            (self.home / "servers" / f"{self.dir.name}.json").unlink(missing_ok=True)
            self.dir = None

    def _register(self) -> None:
        assert self.dir is not None
        pids = [n.process.pid for n in self.nodes if n.process is not None]
        if self.proxy_process is not None:
            pids.append(self.proxy_process.pid)
        record = {"owner_pid": os.getpid(), "server_pid": None, "server_pids": pids, "dir": str(self.dir),
                  "kind": "cluster", "name": self.name}
        (self.home / "servers" / f"{self.dir.name}.json").write_text(json.dumps(record))

    def _write_cnf(self, node: _Node, addresses: Sequence[galera.NodeAddress]) -> None:
        options = galera.node_options("mariadb-galera", self.name, node.address, addresses, gcache_mb=GCACHE_MB)
        private = [
            f"datadir = {node.dir / 'data'}",
            f"socket = {node.socket}",
            f"pid-file = {node.dir / 'mysqld.pid'}",
            f"log-error = {node.error_log}",
            f"tmpdir = {node.dir / 'tmp'}",
            f"port = {node.address.port}",
            "bind-address = 127.0.0.1",
            "skip-name-resolve",
        ]
        # The target's cnf first, then what makes the server a node, then what keeps it private (last
        # wins: a workload cnf can neither leave loopback nor turn replication off).
        (node.dir / "my.cnf").write_text(self.rendered.text + galera.render_node(options)
                                         + "# benchfleet local node\n" + "\n".join(private) + "\n"
                                         + f"[client]\nsocket = {node.socket}\n")

    def _popen(self, argv: list[str], owner: tuple[int, int] | None, log: Path) -> subprocess.Popen[bytes]:
        affinity = self.cpus

        def preexec() -> None:
            die_with_parent()
            if affinity:
                os.sched_setaffinity(0, affinity)

        extra: dict[str, Any] = {}
        if owner is not None:
            # subprocess switches user before preexec runs, so the parent-death signal survives it.
            extra = {"user": owner[0], "group": owner[1], "extra_groups": []}
        with log.open("wb") as out:
            return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=preexec, **extra)

    def _bootstrap(self, node: _Node, owner: tuple[int, int] | None) -> None:
        extra: dict[str, Any] = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
        init = subprocess.run([find_binary("mariadb-install-db", "mysql_install_db"),
                               f"--defaults-file={node.dir / 'my.cnf'}", "--auth-root-authentication-method=normal",
                               "--skip-test-db"],
                              capture_output=True, text=True, timeout=120, check=False, **extra)
        if init.returncode != 0:
            raise self._failure(node, "could not initialise its data dir", init.stderr + init.stdout)
        self._start_node(node, owner, "--wsrep-new-cluster")
        deadline = time.monotonic() + BOOTSTRAP_TIMEOUT_S
        while True:
            problem = self._node_problem(node, expected=1)
            if problem is None:
                break
            if node.process is not None and node.process.poll() is not None:
                raise self._failure(node, "exited while bootstrapping the cluster")
            if time.monotonic() > deadline:
                raise self._failure(node, f"did not bootstrap the cluster in {BOOTSTRAP_TIMEOUT_S:.0f} s: {problem}")
            time.sleep(0.2)
        sql = ("DELETE FROM mysql.global_priv WHERE User='';"
               "CREATE DATABASE IF NOT EXISTS sbtest;"
               + "".join(f"CREATE USER 'sbtest'@'{h}' IDENTIFIED BY '{self.password}';"
                         f"GRANT ALL ON sbtest.* TO 'sbtest'@'{h}';" for h in ("localhost", "127.0.0.1"))
               + proxyconf.monitor_sql(self.passwords["monitor"], ["127.0.0.1"]) + "FLUSH PRIVILEGES;")
        done = self._sql(node, sql)
        if done.returncode != 0:
            raise self._failure(node, "refused the benchmark user", done.stderr)

    def _start_node(self, node: _Node, owner: tuple[int, int] | None, *extra: str) -> None:
        node.process = self._popen([find_binary("mariadbd", "mysqld"), f"--defaults-file={node.dir / 'my.cnf'}",
                                    *extra], owner, node.dir / "server.out")

    def _sql(self, node: _Node, sql: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([find_binary("mariadb", "mysql"), f"--socket={node.socket}", "-uroot", "-N", "-B",
                                   "--connect-timeout=2"], input=sql, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess([], 1, "", f"no answer in {timeout:.0f} s")

    def status(self, node: _Node) -> dict[str, str] | None:
        """The node's wsrep status (names lower-cased), or None when it does not answer."""
        if not node.socket.exists():
            return None
        names = ",".join(f"'{n}'" for n in (*galera.HEALTH_COUNTERS, "wsrep_local_state_comment"))
        done = self._sql(node, f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})", timeout=3)
        if done.returncode != 0:
            return None
        return galera.lowered([line.split("\t") for line in done.stdout.splitlines()])

    def _node_problem(self, node: _Node, expected: int) -> str | None:
        return galera.node_problem(node.address.name, self.status(node), expected)

    def _wait_synced(self) -> None:
        deadline = time.monotonic() + self.join_timeout_s
        while True:
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None:
                    raise self._failure(node, "did not join the cluster: it exited during state transfer")
                failed = _state_transfer_failure(node.error_log)
                if failed:  # it will abort, possibly slowly: no need to wait for it
                    raise self._failure(node, "did not join the cluster: its state transfer failed", failed)
            problems = {n.address.name: self._node_problem(n, self.size) for n in self.nodes}
            if not any(problems.values()):
                return
            if time.monotonic() > deadline:
                stuck = next(n for n in self.nodes if problems[n.address.name])
                raise self._failure(stuck, f"did not join the cluster in {self.join_timeout_s:.0f} s: "
                                    f"{problems[stuck.address.name]}")
            time.sleep(0.3)

    def check(self) -> str | None:
        """Why the cluster is not Synced at full size right now (None when it is)."""
        return galera.cluster_problem({n.address.name: self.status(n) for n in self.nodes}, self.size)

    # ---- the proxy -----------------------------------------------------------------------------
    def _start_proxy(self) -> None:
        assert self.dir is not None
        why = proxy_available(self.proxy)
        if why:
            raise ClusterError(f"{self.name}: {why}")
        backends = [proxyconf.Backend(n.address.name, n.address.host, n.address.port) for n in self.nodes]
        setup = proxyconf.ProxySetup(self.proxy, "127.0.0.1", free_port(), free_port(), backends)
        directory = self.dir / self.proxy
        directory.mkdir()
        config = directory / f"{self.proxy}.cfg"
        config.write_text(proxyconf.render(setup, str(directory), self.passwords))
        config.chmod(0o600)  # ProxySQL's holds passwords
        if self.proxy == "haproxy":
            binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
            argv = [binary, "-db", "-f", str(config)]
        else:
            binary = str(shutil.which("proxysql"))
            argv = [binary, "-f", "--initial", "-c", str(config), "-D", str(directory)]
        self.proxy_version = _version([binary, "-v"])
        self.proxy_process = self._popen(argv, None, directory / "proxy.out")
        self.proxy_setup = setup
        deadline = time.monotonic() + PROXY_TIMEOUT_S
        while True:
            if self.proxy_process.poll() is not None:
                out = (directory / "proxy.out").read_text(errors="replace").strip().splitlines()
                raise ClusterError(f"{self.name}: {self.proxy} exited at start: {' '.join(out[-3:]) or 'no output'}")
            if _answers(setup.listen_host, setup.listen_port) and _answers(setup.listen_host, setup.admin_port):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.name}: {self.proxy} did not listen in {PROXY_TIMEOUT_S:.0f} s")
            time.sleep(0.1)

    # ---- errors --------------------------------------------------------------------------------
    def _failure(self, node: _Node, what: str, said: str = "") -> ClusterError:
        """'<cluster>: node nX <what>', then the node's own cause and the end of its log."""
        lines: list[str] = []
        for log in (node.error_log, node.dir / "server.out"):  # server.out: what it said before log-error opened
            if log.exists() and log.stat().st_size:
                lines = log.read_text(errors="replace").splitlines()
                break
        first, tail = galera.node_failure(self.name, node.address.name, what, lines + said.splitlines())
        return ClusterError(f"{first}\nthe node's log ends:\n{tail}", cause=first)


def _state_transfer_failure(log: Path) -> str | None:
    try:
        return galera.state_transfer_failure(log.read_text(errors="replace"))
    except OSError:
        return None


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def _version(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0][:200] if text else None
