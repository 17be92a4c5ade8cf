"""Server status per second: which ``SHOW GLOBAL STATUS`` counters are sampled, and how they read.

Every target kind: during warm-up and measured steps the agent reads the chosen counters from every
server it measures (a cluster: every node; a proxy: its per-backend statistics) once per report
interval, over SQL, and writes them raw (``{"type": "status", ...}`` lines). The one reader
(``benchfleet.workload.records``) turns cumulative counters into per-second rates; gauges stay values.

A spec chooses the counters with ``status_counters`` (a list of names; ``[]`` samples none); without
it, ``DEFAULT_COUNTERS``. Cluster targets always add ``CLUSTER_COUNTERS``: the health check and the
cross-zone traffic line of the price (``benchfleet.stats.cost.cross_zone_bytes_per_s``) need them.

Shipped next to the agent: standard library only, Python 3.8 compatible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from benchfleet.cluster import galera

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
MAX_COUNTERS = 64

# InnoDB reads from disk (buffer-pool misses), data fsyncs, rows inserted (Handler_write: both engines
# report it; MySQL's Innodb_rows_inserted is not in MariaDB 10.11), the purge backlog (MariaDB only:
# MySQL keeps it in information_schema.INNODB_METRICS) and the threads running at once: what most
# often explains a change in throughput. A counter a server does not report is named in a notice.
DEFAULT_COUNTERS = ("Innodb_buffer_pool_reads", "Innodb_data_fsyncs", "Handler_write",
                    "Innodb_history_list_length", "Threads_running")
# Galera (DESIGN.md, third review): flow control (paused time in ns, as a delta; messages sent and
# received), the receive and send queues, certification failures, brute-force aborts, the cluster's
# size and each node's state; and what crosses availability zones, priced as the cross-zone line: the
# write-sets each node replicates and receives, and the client protocol bytes each node sends and
# receives (the client's or the proxy's traffic to a node in another zone).
CROSS_ZONE_COUNTERS = ("wsrep_replicated_bytes", "wsrep_received_bytes", "Bytes_sent", "Bytes_received")
CLUSTER_COUNTERS = ("wsrep_flow_control_paused_ns", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
                    "wsrep_local_recv_queue", "wsrep_local_send_queue", "wsrep_local_cert_failures",
                    "wsrep_local_bf_aborts", "wsrep_cluster_size", "wsrep_local_state", "wsrep_cluster_status",
                    "wsrep_ready", *CROSS_ZONE_COUNTERS)

# A proxy's statistics per backend: HAProxy's ``show stat`` fields (sessions, bytes, errors, status and
# its average queue, connect, response and session times in ms) and ProxySQL's connection pool.
HAPROXY_FIELDS = ("scur", "stot", "bin", "bout", "econ", "eresp", "wretr", "wredis", "status", "qtime", "ctime",
                  "rtime", "ttime", "chkfail")
PROXYSQL_FIELDS = ("status", "ConnUsed", "ConnFree", "ConnOK", "ConnERR", "Queries", "Bytes_data_sent",
                   "Bytes_data_recv", "Latency_us")
PROXY_FIELDS = {"haproxy": HAPROXY_FIELDS, "proxysql": PROXYSQL_FIELDS}


SERVER = "server"  # the source of a target that is one server
PROXY = "proxy"  # a cluster's proxy: its rows name each backend (``proxy/n1``...), or none it answered


def target_sources(nodes: int = 0, proxy: str = "none") -> list[str]:
    """A target's status sources, as its agent job names them (``clusterjob.client_status``, the local
    cluster's) and collect checks its rows against (``source_problem``): one server (``server``), or a
    cluster's nodes (``n1``...) and its proxy (``proxy``)."""
    if not nodes:
        return [SERVER]
    return [*galera.node_names(nodes), *([PROXY] if proxy in PROXY_FIELDS else [])]


def backend_sources(nodes: int = 0, proxy: str = "none") -> list[str]:
    """The sources of a cluster's proxy rows, one per backend (``proxy/n1``...; none without a proxy)."""
    return [f"{PROXY}/{n}" for n in galera.node_names(nodes)] if PROXY in target_sources(nodes, proxy) else []


def series(counters: Sequence[str], nodes: int = 0, proxy: str = "none") -> list[tuple[str, str]]:
    """(source, counter) of every status row one reading makes, each source's ``answered`` included:
    one server's, or a cluster's nodes' and, behind a proxy, each node's backend statistics."""
    if not nodes:
        return [(SERVER, c) for c in ["answered", *counters]] if counters else []
    out = [(s, c) for s in target_sources(nodes, proxy) if s != PROXY for c in ["answered", *counters]]
    return out + [(s, c) for s in backend_sources(nodes, proxy) for c in ["answered", *PROXY_FIELDS[proxy]]]


def source_problem(sources: Iterable[str], nodes: int = 0, proxy: str = "none",
                   rows_required: bool = False) -> str | None:
    """Why one step's status rows, from ``sources``, are not the target's (None: they are): a source
    the target does not have (its rows would be stored as a node's), or, once any source answered (or
    always, ``rows_required``), a node (the proxy) with no row at all. The proxy's rows are
    ``proxy/<node>`` per backend, or ``proxy`` for a reading it did not answer
    (workloads/agent/benchfleet_status)."""
    seen = set(sources)
    if not seen and not rows_required:
        return None
    required = target_sources(nodes, proxy)
    backends = backend_sources(nodes, proxy)
    where = ", ".join(required)
    unknown = sorted(seen - {*required, *backends})
    if unknown:
        return f"status rows from {unknown[0]!r}, which is not one of this target's sources ({where})"
    answered = seen | ({PROXY} if seen & set(backends) else set())
    missing = [s for s in required if s not in answered]
    if missing:
        return f"no status rows from {', '.join(missing)} (this target's sources: {where})"
    return None


# Values that are levels, not running totals (compared lower-case). Everything else SHOW GLOBAL
# STATUS prints as a number is a running total, read as a per-second rate.
GAUGES = frozenset((
    "threads_running", "threads_connected", "threads_cached", "open_tables", "open_files",
    "innodb_history_list_length", "innodb_buffer_pool_pages_dirty", "innodb_buffer_pool_pages_free",
    "innodb_buffer_pool_pages_data", "innodb_buffer_pool_pages_total", "innodb_buffer_pool_bytes_data",
    "innodb_buffer_pool_bytes_dirty", "innodb_row_lock_current_waits", "innodb_checkpoint_age",
    "max_used_connections", "innodb_num_open_files",
    "wsrep_cluster_size", "wsrep_local_state", "wsrep_cluster_status", "wsrep_ready", "wsrep_connected",
    "wsrep_local_recv_queue", "wsrep_local_send_queue", "wsrep_local_recv_queue_avg",
    "wsrep_local_send_queue_avg", "wsrep_local_recv_queue_max", "wsrep_local_recv_queue_min",
    "wsrep_local_send_queue_max", "wsrep_local_send_queue_min", "wsrep_flow_control_paused",
    "wsrep_flow_control_active", "wsrep_flow_control_requested", "wsrep_cert_deps_distance",
    "wsrep_apply_window", "wsrep_commit_window", "wsrep_local_index", "wsrep_cluster_conf_id",
    "wsrep_cert_index_size", "wsrep_evs_repl_latency",
    # HAProxy (show stat) and ProxySQL (stats_mysql_connection_pool) per backend.
    "scur", "qcur", "status", "qtime", "ctime", "rtime", "ttime", "connused", "connfree", "latency_us",
))
# Words SHOW GLOBAL STATUS prints for a state, as numbers (1: on / in the Primary component).
_WORDS = {"on": 1.0, "off": 0.0, "yes": 1.0, "no": 0.0, "primary": 1.0, "non-primary": 0.0,
          "disconnected": 0.0, "up": 1.0, "down": 0.0, "no check": 1.0, "online": 1.0, "shunned": 0.0,
          "offline_soft": 0.0, "offline_hard": 0.0}


def counters_for(chosen: Iterable[str] | None, cluster: bool) -> list[str]:
    """The counters to sample: the spec's choice (or the default), plus the cluster's own; each once,
    in that order, with the case the spec gave."""
    names = list(DEFAULT_COUNTERS if chosen is None else chosen)
    if cluster:
        names += CLUSTER_COUNTERS
    seen = set()
    out = []
    for name in names:
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def is_gauge(name: str) -> bool:
    low = name.lower()
    return low in GAUGES or low.endswith(("_avg", "_current", "_max", "_min"))


def number(value: object) -> float | None:
    """A status value as a number: numbers as they are, state words as 0/1, anything else None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        return _WORDS.get(text.lower())


def rates(previous: dict[str, float] | None, current: dict[str, float],
          seconds: float | None) -> dict[str, float | None]:
    """Per-second rates of the running totals between two readings (None for gauges, for the first
    reading, and where a total went down: the server restarted or its status was flushed)."""
    out: dict[str, float | None] = {}
    for name, value in current.items():
        before = None if previous is None else previous.get(name)
        if is_gauge(name) or before is None or not seconds or seconds <= 0 or value < before:
            out[name] = None
        else:
            out[name] = (value - before) / seconds
    return out
