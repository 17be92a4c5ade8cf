"""The proxy in front of a cluster: HAProxy or ProxySQL, configured as people set them up for a benchmark.

One definition for both backends (the local cluster here, the agent's install on the proxy's host
on AWS), shipped next to the agent: standard library only, Python 3.8 compatible.

**HAProxy** (TCP mode): one listener; with ``writes: one`` the first node takes every connection and
the others are backups (``balance first``), with ``writes: all`` connections go round robin. Backends
are health-checked with ``option mysql-check`` (a login of ``CHECK_USER``, which has no password and
no privileges). Its statistics (``show stat``) are served on a TCP stats socket read by the agent.

**ProxySQL** (seed 002's tuning, DESIGN.md third review):
- Galera hostgroups (``mysql_galera_hostgroups``) with one writer (``max_writers`` 1, or every node
  with ``writes: all``); ProxySQL moves the writer itself when a node leaves;
- the monitor user on every backend (``MONITOR_USER``, created by the cluster's bootstrap);
- ``mysql-max_stmts_per_connection`` raised from 50 to 1000 (the seed found the default slow);
- backend connections warmed (``mysql-connection_warming``: the pool is filled before clients ask,
  since sysbench opens every connection at once at the start of a step);
- the admin credentials changed from admin/admin, and a statistics user for the agent;
- over TCP, never the local socket.
Routing reads apart from writes needs sysbench's ``--skip-trx``: sysbench wraps every transaction in
BEGIN/COMMIT, and ProxySQL keeps a transaction on its writer.

``fingerprint`` gives what goes into the target's fingerprint: the software, its settings, and a hash
of the rendered configuration without its passwords.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

PROXIES = ("haproxy", "proxysql", "none")
PACKAGES = {"haproxy": "haproxy", "proxysql": "proxysql"}
CHECK_USER = "benchfleet_check"
MONITOR_USER = "benchfleet_monitor"
STATS_USER = "benchfleet_stats"
ADMIN_USER = "benchfleet_admin"
LISTEN_PORT = {"haproxy": 3307, "proxysql": 6033}
# On the proxy's host: ProxySQL's admin and statistics passwords, generated there (root only, JSON).
PROXY_PASSWORD_FILE = "/var/lib/benchfleet/proxy.json"  # noqa: S105 - a path, not a password
ADMIN_PORT = {"haproxy": 3308, "proxysql": 6032}  # HAProxy: its stats socket; ProxySQL: its admin interface
# Seed 002: "mysql-max_stmts_per_connection ... (default: 50) - optimal - 1000".
PROXYSQL_SETTINGS = (("max_stmts_per_connection", "1000"), ("connection_warming", "true"),
                     ("free_connections_pct", "100"), ("monitor_galera_healthcheck_interval", "1000"),
                     ("threads", "4"), ("max_connections", "8192"), ("server_version", '"8.0.36"'))
HAPROXY_MAXCONN = 8192
# Write hostgroups of ProxySQL's Galera support.
WRITER_HG, BACKUP_WRITER_HG, READER_HG, OFFLINE_HG = 10, 20, 30, 40


@dataclass(frozen=True)
class Backend:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class ProxySetup:
    """Where the proxy listens and what it fronts; ``writes``: one | all."""

    software: str
    listen_host: str
    listen_port: int
    admin_port: int
    backends: Sequence[Backend]
    writes: str = "one"


def haproxy_config(p: ProxySetup) -> str:
    servers = []
    for i, b in enumerate(p.backends):
        backup = " backup" if p.writes == "one" and i > 0 else ""
        servers.append(f"    server {b.name} {b.host}:{b.port} check inter 1s fall 2 rise 2{backup}\n")
    return (
        "# benchfleet: HAProxy in front of a Galera cluster\n"
        "global\n"
        "    maxconn {maxconn}\n"
        "    stats socket ipv4@{host}:{admin} level user\n"
        "defaults\n"
        "    mode tcp\n"
        "    timeout connect 5s\n"
        # A benchmark connection is busy for a whole step: never cut it for inactivity.
        "    timeout client 24h\n"
        "    timeout server 24h\n"
        "    retries 3\n"
        "listen galera\n"
        "    bind {host}:{port}\n"
        "    maxconn {maxconn}\n"
        "    balance {balance}\n"
        "    option mysql-check user {check} post-41\n"
        "{servers}"
    ).format(maxconn=HAPROXY_MAXCONN, host=p.listen_host, admin=p.admin_port, port=p.listen_port,
             balance="first" if p.writes == "one" else "roundrobin", check=CHECK_USER, servers="".join(servers))


def proxysql_config(p: ProxySetup, datadir: str, passwords: dict[str, str]) -> str:
    """``proxysql.cnf`` (libconfig); ``passwords``: sbtest, monitor, admin and stats."""
    settings = "".join(f"    {k} = {v}\n" for k, v in PROXYSQL_SETTINGS)
    servers = ",\n".join(f'    {{ address = "{b.host}", port = {b.port}, hostgroup = {WRITER_HG}, '
                          f"max_connections = {HAPROXY_MAXCONN} }}" for b in p.backends)
    writers = len(p.backends) if p.writes == "all" else 1
    return (
        "# benchfleet: ProxySQL in front of a Galera cluster\n"
        'datadir = "{datadir}"\n'
        "admin_variables =\n{{\n"
        '    admin_credentials = "{admin}:{admin_pw}"\n'
        '    stats_credentials = "{stats}:{stats_pw}"\n'
        '    mysql_ifaces = "{host}:{admin_port}"\n'
        "}}\n"
        "mysql_variables =\n{{\n"
        '    interfaces = "{host}:{port}"\n'
        '    monitor_username = "{monitor}"\n'
        '    monitor_password = "{monitor_pw}"\n'
        "{settings}"
        "}}\n"
        "mysql_servers =\n(\n{servers}\n)\n"
        "mysql_galera_hostgroups =\n(\n"
        "    {{ writer_hostgroup = {w}, backup_writer_hostgroup = {bw}, reader_hostgroup = {r}, "
        "offline_hostgroup = {o}, active = 1, max_writers = {writers}, writer_is_also_reader = 1, "
        "max_transactions_behind = 100 }}\n"
        ")\n"
        "mysql_users =\n(\n"
        '    {{ username = "sbtest", password = "{sbtest_pw}", default_hostgroup = {w}, '
        "transaction_persistent = 1 }}\n"
        ")\n"
    ).format(datadir=datadir, admin=ADMIN_USER, admin_pw=passwords["admin"], stats=STATS_USER,
             stats_pw=passwords["stats"], host=p.listen_host, admin_port=p.admin_port, port=p.listen_port,
             monitor=MONITOR_USER, monitor_pw=passwords["monitor"], settings=settings, servers=servers,
             w=WRITER_HG, bw=BACKUP_WRITER_HG, r=READER_HG, o=OFFLINE_HG, writers=writers,
             sbtest_pw=passwords["sbtest"])


def render(p: ProxySetup, datadir: str = "/var/lib/proxysql", passwords: dict[str, str] | None = None) -> str:
    if p.software == "haproxy":
        return haproxy_config(p)
    if p.software == "proxysql":
        return proxysql_config(p, datadir, passwords or {})
    raise ValueError(f"no configuration for proxy {p.software!r}")


def fingerprint(p: ProxySetup, version: str | None) -> dict[str, object]:
    """The proxy as the fingerprint records it: software, version, the settings that matter, and the
    hash of its configuration rendered without passwords (so equal setups hash alike)."""
    text = render(p, "/", {k: "" for k in ("sbtest", "monitor", "admin", "stats")})
    settings: dict[str, str] = {"writes": p.writes, "backends": str(len(p.backends))}
    if p.software == "proxysql":
        settings.update({"mysql-" + k: v.strip('"') for k, v in PROXYSQL_SETTINGS})
    else:
        settings.update({"balance": "first" if p.writes == "one" else "roundrobin", "maxconn": str(HAPROXY_MAXCONN)})
    return {"proxy": p.software, "proxy_version": version, "proxy_settings": settings,
            "proxy_config_hash": hashlib.sha256(text.encode()).hexdigest()}


def monitor_sql(password: str, hosts: list[str], identified: str = "IDENTIFIED BY") -> str:
    """The backend users the proxies need, created once on the first node (replicated to the others):
    HAProxy's check login, without a password or privileges; ProxySQL's monitor user, which reads
    each node's wsrep status and read_only. ``identified``: the engine's ``IDENTIFIED ... BY`` (MySQL
    8.0: with mysql_native_password, which every proxy can log in with)."""
    sql = []
    for host in hosts:
        sql += [f"CREATE USER IF NOT EXISTS '{CHECK_USER}'@'{host}';",
                f"CREATE USER IF NOT EXISTS '{MONITOR_USER}'@'{host}' {identified} '{password}';",
                f"ALTER USER '{MONITOR_USER}'@'{host}' {identified} '{password}';",
                f"GRANT USAGE ON *.* TO '{MONITOR_USER}'@'{host}';"]
    return "\n".join(sql) + "\n"
