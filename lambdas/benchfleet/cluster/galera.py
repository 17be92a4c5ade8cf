"""Galera clusters: what a node's configuration holds and when a cluster is healthy.

One definition for both backends: the local cluster (``benchfleet.local.galera``: N MariaDB servers on
this machine, Debian's ``galera-4``) and the agent's install on a cluster node (AWS: one node per host).
Shipped next to the agent, so standard library only and Python 3.8 compatible.

A node is given, beside the target's cnf:
- the settings Galera requires (row-based binary log format, InnoDB, interleaved auto-increment locks);
- its provider, its cluster's name and address (``gcomm://`` every node), its own name and address,
  and the address clients reach it at (``wsrep_node_incoming_address``: host and client port);
- its ports: the client port, group communication (``gmcast.listen_addr``), incremental state transfer
  (``ist.recv_addr``) and full state transfer (``wsrep_sst_receive_address``). On a host of its own a
  node uses the defaults (3306, 4567, 4568, 4444); nodes sharing one machine each need their own.

A cluster is **healthy** when every node answers, is Synced (``wsrep_local_state`` 4) and sees the
cluster at full size (``wsrep_cluster_size``) in the Primary component. Prepare waits for it, and a
step during which it is not fails with the reason (``cluster_problem``).

A node that fails to form or join the cluster is reported by its name and the reason its error log
gives (``node_failure``: the first ``[ERROR]`` line, ``state_transfer_failure`` while it joins): one
reading of a node's log for the local cluster and the agent on a cloud node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FLAVORS = ("mariadb-galera", "pxc-8.0")
# Debian and Ubuntu install the MariaDB provider here (package galera-4); Percona's packages keep
# theirs in the server's plugin directory.
PROVIDERS = {"mariadb-galera": "/usr/lib/galera/libgalera_smm.so",
             "pxc-8.0": "/usr/lib/galera4/libgalera_smm.so"}
# rsync is MariaDB's simplest state transfer (no extra package, no backup user); PXC 8.0 has only
# its built-in xtrabackup transfer.
SST_METHODS = {"mariadb-galera": "rsync", "pxc-8.0": "xtrabackup-v2"}
DEFAULT_PORTS = {"port": 3306, "gcomm": 4567, "ist": 4568, "sst": 4444}
# The longest wsrep_cluster_name that can form a cluster: Galera's group communication handshake
# carries the group name in a 32-byte field (gcomm's String<32>). A longer name still lets the first
# node bootstrap, and then every join fails ("handling gmcast protocol message failed", "failed to
# reach primary view"): seen on the host tier with a 35-character name.
MAX_CLUSTER_NAME = 32
SYNCED = 4  # wsrep_local_state of a node that is part of the cluster and up to date
STATES = {1: "Joining", 2: "Donor/Desynced", 3: "Joined", 4: "Synced"}

# What the health check reads on every node, whatever counters a spec chooses.
HEALTH_COUNTERS = ("wsrep_cluster_size", "wsrep_local_state", "wsrep_cluster_status", "wsrep_ready")


@dataclass(frozen=True)
class NodeAddress:
    """Where one node listens: its name (n1, n2, ...), host and four ports."""

    name: str
    host: str
    port: int = DEFAULT_PORTS["port"]
    gcomm: int = DEFAULT_PORTS["gcomm"]
    ist: int = DEFAULT_PORTS["ist"]
    sst: int = DEFAULT_PORTS["sst"]

    @property
    def gcomm_address(self) -> str:
        return f"{self.host}:{self.gcomm}"


def node_names(count: int) -> list[str]:
    return [f"n{i}" for i in range(1, count + 1)]


def node_options(flavor: str, cluster_name: str, node: NodeAddress, nodes: Sequence[NodeAddress],
                 gcache_mb: int | None = None) -> list[tuple[str, str]]:
    """The ``[mysqld]`` options that make a server node ``node`` of the cluster of ``nodes``."""
    if flavor not in FLAVORS:
        raise ValueError("unknown cluster flavor {!r}: expected {}".format(flavor, " or ".join(FLAVORS)))
    provider = [f"gmcast.listen_addr=tcp://{_listen_host(node)}:{node.gcomm}",
                f"ist.recv_addr={node.host}:{node.ist}"]
    if gcache_mb:
        provider.append(f"gcache.size={gcache_mb}M")
    options = [
        ("binlog_format", "ROW"),
        ("default_storage_engine", "InnoDB"),
        ("innodb_autoinc_lock_mode", "2"),
        ("wsrep_on", "ON"),
        ("wsrep_provider", PROVIDERS[flavor]),
        ("wsrep_cluster_name", cluster_name),
        ("wsrep_cluster_address", "gcomm://" + ",".join(n.gcomm_address for n in nodes)),
        ("wsrep_node_name", node.name),
        ("wsrep_node_address", node.gcomm_address),
        # Where clients reach this node (wsrep_incoming_addresses, which the cluster gossips): left to
        # AUTO, MariaDB reports the literal "AUTO" where bind-address is set, or the port as 0.
        ("wsrep_node_incoming_address", f"{node.host}:{node.port}"),
        ("wsrep_provider_options", '"{}"'.format(";".join(provider))),
        ("wsrep_sst_method", SST_METHODS[flavor]),
        ("wsrep_sst_receive_address", f"{node.host}:{node.sst}"),
    ]
    if flavor == "pxc-8.0":
        # PXC 8.0 encrypts replication by default, which needs the same certificates on every node;
        # a benchmark cluster on a private network runs without (the seed's PXC 5.7 did too).
        options.append(("pxc-encrypt-cluster-traffic", "OFF"))
    return options


# What node_options gives every node whatever the flavor: Galera's requirements (and PXC's own switch).
# Every other option it sets names this node or this cluster.
SAME_ON_EVERY_NODE = ("binlog_format", "default_storage_engine", "innodb_autoinc_lock_mode", "wsrep_on",
                      "pxc_encrypt_cluster_traffic")


def managed_problem(option: str, value: object) -> str | None:
    """Why a cluster target's own setting ``option = value`` cannot be given (None: it can). The node's
    options come after the target's cnf and win: a target asking for wsrep_on OFF or binlog_format
    STATEMENT ran with ON and ROW. Restating the value every node is given is allowed."""
    name = option.replace("-", "_")
    node = NodeAddress("n1", "127.0.0.1")
    given = {k.replace("-", "_"): v for flavor in FLAVORS for k, v in node_options(flavor, "c", node, [node])}
    if name not in given:
        return None
    if name in SAME_ON_EVERY_NODE:
        asked = str(value).strip().strip("'\"")
        if asked.lower() == given[name].lower():
            return None
        return (f"a cluster's nodes run {name} = {given[name]}, not {asked or 'set'} (Galera needs it; "
                "benchfleet sets it on every node, over the target's settings)")
    return f"benchfleet sets {name} on every node of a cluster (the node's address, name or provider): leave it out"


def _listen_host(node: NodeAddress) -> str:
    # On a host of its own a node listens on every address (its private IP is how the others reach it).
    return node.host if node.host.startswith("127.") else "0.0.0.0"  # noqa: S104 - nodes sit in their own SG


def render_node(options: Sequence[tuple[str, str]]) -> str:
    return "[mysqld]\n# benchfleet: Galera node\n" + "".join(f"{k} = {v}\n" for k, v in options)


# ---- health -----------------------------------------------------------------------------------

def _number(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def node_problem(name: str, values: Mapping[str, object] | None, expected_size: int) -> str | None:
    """Why node ``name`` is not a Synced member of the full cluster (None when it is); ``values`` are
    its SHOW GLOBAL STATUS values (names lower-cased), None when it did not answer."""
    if values is None:
        return f"{name} did not answer"
    status = str(values.get("wsrep_cluster_status", ""))
    if status and status != "Primary":
        return f"{name} is in a {status} component"
    state = _number(values.get("wsrep_local_state"))
    if state is None:
        return f"{name} reports no wsrep_local_state (is it a Galera node?)"
    if int(state) != SYNCED:
        return "{} is {} (wsrep_local_state {})".format(name, STATES.get(int(state), "not Synced"), int(state))
    size = _number(values.get("wsrep_cluster_size"))
    if size is None or int(size) != expected_size:
        return "{} sees a cluster of {} of {} nodes".format(name, "?" if size is None else int(size), expected_size)
    return None


def cluster_problem(by_node: Mapping[str, Mapping[str, object] | None], expected_size: int) -> str | None:
    """Why the cluster is not Synced at full size (every node's problem, joined), or None."""
    problems = [p for p in (node_problem(name, values, expected_size) for name, values in sorted(by_node.items()))
                if p]
    return "; ".join(problems) if problems else None


def lowered(rows: Sequence[Sequence[str]]) -> dict[str, str]:
    """``SHOW GLOBAL STATUS`` rows as {name (lower case): value}."""
    return {str(r[0]).lower(): (str(r[1]) if len(r) > 1 else "") for r in rows if r}


# ---- a node's error log ---------------------------------------------------------------------------

LOG_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s+\d{1,2}:\d{2}:\d{2}\s+\d+\s+")
# A joiner's log when its state transfer cannot succeed (the node then aborts, possibly slowly).
SST_FAILED = ("Failed to read 'ready", "SST failed", "State transfer to", "sst script failed",
              "Requesting state transfer failed")
LOG_TAIL_LINES = 12


def cause_line(lines: Sequence[str]) -> str | None:
    """The first ``[ERROR]`` line of a server log, without its timestamp (the cause; later errors
    are mostly consequences such as "Aborting")."""
    for line in lines:
        if "[ERROR]" in line:
            return LOG_PREFIX.sub("", line.strip())
    return None


def state_transfer_failure(text: str) -> str | None:
    """The line of a joiner's log saying its state transfer failed (None: it has not)."""
    for line in text.splitlines():
        if "[ERROR]" in line and any(marker in line for marker in SST_FAILED):
            return line.strip()
    return None


def node_failure(cluster: str, node: str, what: str, lines: Sequence[str]) -> tuple[str, str]:
    """('<cluster>: node <node> <what>[: <cause from its log>]', the end of its log): how a node that
    did not bootstrap or join is reported."""
    cause = cause_line(lines)
    first = f"{cluster}: node {node} {what}" + (f": {cause}" if cause else "")
    return first, "\n".join(lines[-LOG_TAIL_LINES:]) or "(no error log)"
