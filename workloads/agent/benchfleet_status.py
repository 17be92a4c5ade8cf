"""benchfleet agent: server status per second, read over SQL while a step runs.

The job's ``status`` object says what to read (``benchfleet.workload.serverstatus``):

  {"counters": ["Innodb_data_fsyncs", ...], "interval_s": 1, "cluster_nodes": 3,
   "sources": [{"name": "n1", "kind": "mysql", "host": "10.0.1.5", "port": 3306}, ...,
               {"name": "proxy", "kind": "haproxy" | "proxysql", "host": ..., "port": <stats/admin port>,
                "backends": {"n1": "10.0.1.5:3306", ...}, "user": ..., "password": ...}]}

A ``mysql`` source (a server, a cluster node; no host: the job's database) is read with
``SHOW GLOBAL STATUS`` through one mysql client process per source that lives for the whole step (no
process per second), with the job's user, password and TLS settings. A proxy is read per backend:
HAProxy's ``show stat`` on its stats socket, ProxySQL's ``stats_mysql_connection_pool`` through its
statistics user. Every source is read once per interval from the start of the step (the reading at
0 s is the baseline of the rates), all at once, each within a deadline; what a source answers (or
that it did not) becomes one ``{"type": "status", ...}`` line with the raw values.

With ``cluster_nodes``, every reading is also the cluster's health check (``benchfleet.cluster.galera``): the
first time every node is not Synced at full size for two readings in a row, ``problem`` is set and
``on_problem`` called (the agent stops sysbench: the step fails with that reason).

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import benchfleet_dbclient
from benchfleet.cluster import galera
from benchfleet.workload.serverstatus import HAPROXY_FIELDS, PROXYSQL_FIELDS

END = "benchfleet:end"
# A source that has not answered by then is recorded as silent for this reading.
DEADLINE_FRACTION = 0.8
MIN_DEADLINE_S = 1.0
RESTART_AFTER_S = 5.0  # a dead client process is started again at most this often
PROXYSQL_QUERY = ("SELECT srv_host, srv_port, status, ConnUsed, ConnFree, ConnOK, ConnERR, Queries, "
                  "Bytes_data_sent, Bytes_data_recv, Latency_us FROM stats.stats_mysql_connection_pool")
# Summed over the hostgroups a backend is in (a writer is also a reader); the rest are per backend.
_PROXYSQL_SUMMED = ("ConnUsed", "ConnFree", "ConnOK", "ConnERR", "Queries", "Bytes_data_sent", "Bytes_data_recv")


def _in_list(names: List[str]) -> str:
    return ",".join("'{}'".format(n.replace("'", "")) for n in names)


class MysqlSource:
    """One server's SHOW GLOBAL STATUS through a long-lived mysql client (statements on its stdin)."""

    def __init__(self, name: str, conn: benchfleet_dbclient.Connection, counters: List[str],
                 host: Optional[str] = None, port: Optional[int] = None, user: Optional[str] = None,
                 password: Optional[str] = None, tls: Optional[str] = None, query: Optional[str] = None) -> None:
        self.name = name
        self.conn = conn
        self.where = dict(host=host, port=port, user=user, password=password, tls=tls)
        self.query = query or "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(_in_list(counters))
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        self.buffer = b""
        self.started_at = -RESTART_AFTER_S
        self.last_error = ""
        self.pending = False
        self.buffer = b""

    def _start(self) -> bool:
        client = shutil.which("mariadb") or shutil.which("mysql")
        if not client:
            self.last_error = "no mysql client on this host"
            return False
        now = time.monotonic()
        if now - self.started_at < RESTART_AFTER_S:
            return False
        self.started_at = now
        path = self.conn.option_file(client, "status-{}.cnf".format(self.name), **self.where)
        try:
            self.proc = subprocess.Popen(
                [client, "--defaults-extra-file={}".format(path), "-N", "-B", "-n", "--force", "--reconnect",
                 "--connect-timeout=2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            self.last_error = str(e)
            return False
        return True

    def begin(self) -> None:
        """Send this reading's statements (the answer is read by ``finish``)."""
        self.pending = False
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.last_error = self._stderr() or "its client exited"
            self.proc = None
            if not self._start():
                return
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write("{};\nSELECT '{}';\n".format(self.query, END).encode())
            self.proc.stdin.flush()
            self.pending = True
        except (BrokenPipeError, OSError):
            self.last_error = self._stderr() or "its client stopped reading"
            self.close()

    def finish(self, deadline: float) -> "tuple[Optional[List[List[str]]], Optional[str]]":
        """(rows, None) or (None, why). Reads the descriptor itself: a buffered reader would hold
        lines select() cannot see."""
        if not self.pending or self.proc is None:
            return None, self.last_error or "not connected"
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        rows: List[List[str]] = []
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = self.buffer[:newline].decode(errors="replace")
                self.buffer = self.buffer[newline + 1:]
                if line == END:
                    errors = self._stderr_now()
                    if errors and not rows:
                        return None, errors
                    return rows, None
                rows.append(line.split("\t"))
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                # Stuck (a stopped server answers nothing): the client is replaced for the next reading.
                self.close()
                self.last_error = "no answer in time"
                return None, self.last_error
            data = os.read(fd, 65536)
            if not data:
                self.last_error = self._stderr() or "its client exited"
                self.close()
                return None, self.last_error
            self.buffer += data

    def _stderr_now(self) -> str:
        """What the client has written to stderr so far (its errors for this reading), unblocking."""
        if self.proc is None or self.proc.stderr is None:
            return ""
        chunks = []
        fd = self.proc.stderr.fileno()
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 4096)
            if not data:
                break
            chunks.append(data.decode(errors="replace"))
        return " ".join("".join(chunks).split())[-300:]

    def _stderr(self) -> str:
        if self.proc is None or self.proc.stderr is None or self.proc.poll() is None:
            return ""
        try:
            return " ".join(self.proc.stderr.read().decode(errors="replace").split())[-300:]
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self.proc = None
        self.pending = False
        self.buffer = b""


class HaproxySource:
    """HAProxy's per-server statistics (``show stat``) from its TCP stats socket, per backend node."""

    def __init__(self, name: str, host: str, port: int, backends: Dict[str, str]) -> None:
        self.name = name
        self.address = (host, port)
        self.backends = backends

    def begin(self) -> None:
        pass

    def finish(self, deadline: float) -> "tuple[Optional[Dict[str, Dict[str, str]]], Optional[str]]":
        try:
            with socket.create_connection(self.address, timeout=max(0.1, deadline - time.monotonic())) as s:
                s.sendall(b"show stat\n")
                data = b""
                while True:
                    s.settimeout(max(0.1, deadline - time.monotonic()))
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
        except OSError as e:
            return None, "stats socket: {}".format(e)
        return parse_haproxy_stat(data.decode(errors="replace"), self.backends), None


def parse_haproxy_stat(text: str, backends: Dict[str, str]) -> Dict[str, Dict[str, str]]:
    """{node: {field: value}} of the CSV ``show stat`` prints, for the servers named in ``backends``."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# "):
        return {}
    header = lines[0][2:].split(",")
    out: Dict[str, Dict[str, str]] = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        if row.get("svname") in backends:
            out[row["svname"]] = {k: row.get(k, "") for k in HAPROXY_FIELDS if row.get(k, "") != ""}
    return out


def parse_proxysql_pool(rows: List[List[str]], backends: Dict[str, str]) -> Dict[str, Dict[str, str]]:
    """{node: {field: value}} of stats_mysql_connection_pool rows, per backend (hostgroups summed)."""
    by_address = {address: name for name, address in backends.items()}
    out: Dict[str, Dict[str, Any]] = {}
    for row in rows:
        if len(row) < 2 + len(PROXYSQL_FIELDS):
            continue
        name = by_address.get("{}:{}".format(row[0], row[1]))
        if name is None:
            continue
        values = dict(zip(PROXYSQL_FIELDS, row[2:]))
        mine = out.setdefault(name, {})
        for field, value in values.items():
            if field in _PROXYSQL_SUMMED and field in mine:
                with contextlib.suppress(ValueError):
                    mine[field] = str(float(mine[field]) + float(value))
            elif field == "status" and mine.get("status") == "ONLINE":
                continue  # ONLINE in any hostgroup is ONLINE
            else:
                mine[field] = value
    return out


class StatusPoller(threading.Thread):
    """Reads every source once per interval until ``stop()``; emits one status line per source."""

    def __init__(self, spec: Dict[str, Any], conn: benchfleet_dbclient.Connection, emit: Callable[..., None],
                 started: float, on_problem: Optional[Callable[[str], None]] = None) -> None:
        super().__init__(name="benchfleet-status", daemon=True)
        self.interval = float(spec.get("interval_s") or 1)
        self.counters = [str(c) for c in spec.get("counters") or []]
        self.cluster_nodes = int(spec.get("cluster_nodes") or 0)
        self.emit = emit
        self.started = started
        self.on_problem = on_problem
        self.problem: Optional[str] = None
        self._unhealthy = 0
        self._checked: set = set()  # sources whose missing counters were reported
        self._halt = threading.Event()
        self.sources: List[Any] = []
        self.mysql_names: List[str] = []
        for source in spec.get("sources") or [{"name": "server", "kind": "mysql"}]:
            kind, name = source.get("kind"), str(source.get("name"))
            if kind == "mysql":
                counters = list(self.counters)
                if self.cluster_nodes:
                    counters += [c for c in galera.HEALTH_COUNTERS if c.lower() not in {x.lower() for x in counters}]
                if counters:
                    self.sources.append(MysqlSource(name, conn, counters, host=source.get("host"),
                                                    port=source.get("port")))
                    self.mysql_names.append(name)
            elif kind == "haproxy":
                self.sources.append(HaproxySource(name, str(source["host"]), int(source["port"]),
                                                  dict(source.get("backends") or {})))
            elif kind == "proxysql":
                self.sources.append(_ProxysqlSource(name, conn, source))

    def readings(self) -> int:
        return len(self.sources)

    def run(self) -> None:
        k = 0
        try:
            while not self._halt.is_set():
                due = self.started + k * self.interval
                wait = due - time.time()
                if wait > 0 and self._halt.wait(wait):
                    break
                self.read_once(second=round(k * self.interval, 3))
                k += 1
                # A reading that overran its interval skips the readings it missed.
                k = max(k, int((time.time() - self.started) / self.interval) + 1)
        finally:
            for source in self.sources:
                if isinstance(source, (MysqlSource, _ProxysqlSource)):
                    source.close()

    def read_once(self, second: float) -> Dict[str, Optional[Dict[str, str]]]:
        """One reading of every source (sent to all first, then collected within one deadline)."""
        deadline = time.monotonic() + max(MIN_DEADLINE_S, DEADLINE_FRACTION * self.interval)
        for source in self.sources:
            source.begin()
        now = time.time()
        nodes: Dict[str, Optional[Dict[str, str]]] = {}
        for source in self.sources:
            found, error = source.finish(deadline)
            if isinstance(source, MysqlSource):
                values = galera.lowered(found) if found is not None else None
                nodes[source.name] = values
                raw = None if found is None else {r[0]: (r[1] if len(r) > 1 else "") for r in found}
                self.emit("status", time=now, second=second, source=source.name, values=raw, error=error)
                if values is not None and source.name not in self._checked:
                    self._checked.add(source.name)
                    missing = [c for c in self.counters if c.lower() not in values]
                    if missing:
                        self.emit("notice", stage="status", time=now, source=source.name,
                                  message="{} does not report {} (SHOW GLOBAL STATUS): not sampled".format(
                                      source.name, ", ".join(missing)))
            else:
                if found is None:
                    self.emit("status", time=now, second=second, source=source.name, values=None, error=error)
                else:
                    for backend, values in sorted(found.items()):
                        self.emit("status", time=now, second=second, source="{}/{}".format(source.name, backend),
                                  values=values, error=None)
        if self.cluster_nodes:
            self._check(second, nodes)
        return nodes

    def _check(self, second: float, nodes: Dict[str, Optional[Dict[str, str]]]) -> None:
        problem = galera.cluster_problem({n: nodes.get(n) for n in self.mysql_names}, self.cluster_nodes)
        self._unhealthy = self._unhealthy + 1 if problem else 0
        if problem and self._unhealthy >= 2 and self.problem is None:
            self.problem = "the cluster was not Synced at full size at {:g} s of the step: {}".format(second, problem)
            if self.on_problem is not None:
                self.on_problem(self.problem)

    def stop(self) -> None:
        self._halt.set()


class _ProxysqlSource(MysqlSource):
    """ProxySQL's connection pool per backend, through its admin interface's statistics user."""

    def __init__(self, name: str, conn: benchfleet_dbclient.Connection, source: Dict[str, Any]) -> None:
        super().__init__(name, conn, [], host=source.get("host"), port=source.get("port"), user=source.get("user"),
                         # no password_file: a proxy on a host of its own, whose statistics user has
                         # the job's password (the secret's: clusterjob, stats_password secret)
                         password=source.get("password") or _kept_password(source.get("password_file"), "stats"),
                         tls="off", query=PROXYSQL_QUERY)
        self.backends = dict(source.get("backends") or {})

    def finish(self, deadline: float) -> "tuple[Optional[Dict[str, Dict[str, str]]], Optional[str]]":  # type: ignore[override]
        rows, error = MysqlSource.finish(self, deadline)
        if rows is None:
            return None, error
        return parse_proxysql_pool(rows, self.backends), None


def _kept_password(path: Optional[str], key: str) -> Optional[str]:
    """A password the proxy's set-up kept on this host (JSON, root only: proxyconf.PROXY_PASSWORD_FILE);
    None without a file (the source then logs in with none), "" when the file has none (the reading
    then says the login failed)."""
    if not path:
        return None
    try:
        with open(path) as f:
            return str(json.load(f).get(key) or "")
    except (OSError, ValueError, AttributeError):
        return ""


def check_cluster(spec: Dict[str, Any], conn: benchfleet_dbclient.Connection) -> Optional[str]:
    """Why the job's cluster is not Synced at full size now (None when it is, or there is no cluster)."""
    if not spec.get("cluster_nodes"):
        return None
    poller = StatusPoller(dict(spec, counters=[]), conn, lambda *a, **k: None, time.time())
    try:
        nodes = poller.read_once(0)
    finally:
        for source in poller.sources:
            if isinstance(source, MysqlSource):
                source.close()
    return galera.cluster_problem({n: nodes.get(n) for n in poller.mysql_names}, poller.cluster_nodes)
