"""The agent jobs of a cloud cluster target (``kind: cluster``): THE contract between the state machine's
half (cluster-fleet: provisioning, the run plan, start_step) and the on-host half (the agent,
``workloads/agent/benchfleet_cluster.py``). Built here, once; the agent checks what it reads.

A cluster repetition has ``nodes`` node hosts (one per availability zone) and one client host, which
also runs the proxy unless the proxy has a host of its own (``proxy_has_host``: the one test of it, for
the plan, provision and these jobs). Before the client's first step, the state
machine sends:

1. a **node set-up job** (``node_job``) to every node host: the first node's at once (it bootstraps
   the cluster), then the others' together (they join by state transfer); each returns when its node
   is Synced in a cluster of every node, or fails naming the node and the reason;
2. a **proxy set-up job** (``proxy_job``) to the client host, or to the proxy's own host, when the
   target has a proxy.

Then the client's prepare / warm-up / measure jobs are ``agentjob.agent_job`` with ``db`` from
``client_db`` (the step's route) and ``status`` from ``client_status`` (every node, and the proxy).

Set-up jobs are agent jobs of step kind ``setup`` (the SSM document and the agent's lock, output and
error records are the same as a step's). No password travels in a job (SSM keeps parameters in its
history): the benchmark user's password is the ``password`` of the JSON Secrets Manager secret
``password_secret_arn`` (as RDS's managed secret holds it); the bootstrap node reads it with the
instance role and creates the users (replicated to the others), the client reads it per step as it
reads an RDS target's. ProxySQL's monitor user gets the same password (one secret to bind; that
account may only read status). ProxySQL's admin password is generated on the proxy's host and kept in a
root-only file there (``proxyconf.PROXY_PASSWORD_FILE``), never leaving it; so is its statistics
password when the proxy is on the client host. A proxy on a host of its own is read by the client over
the network (the proxy host runs no job while the client measures), so there its statistics account,
which may only read the statistics, logs in with the secret's password, which the client already
reads; HAProxy's stats socket is read-only (``level user``) and needs none.

Fields, with who produces (P) and who consumes (C) each. fleet = cluster-fleet's Lambdas / start_step,
agent = workloads/agent on the host named.

``setup`` of a node job (``role: node``):
- ``flavor`` (P fleet, from the target; C agent: packages, provider, bootstrap command)
- ``cluster_name`` (P fleet: unique per repetition, at most ``galera.MAX_CLUSTER_NAME`` characters;
  C agent: ``wsrep_cluster_name``)
- ``node``, ``host``: this node's name (n1...) and private address (P fleet from the instance; C agent:
  ``wsrep_node_name`` / ``_address``, the failure message)
- ``nodes``: every node ``{"name", "host"}`` in node order (P fleet; C agent: ``wsrep_cluster_address``,
  the size Synced is awaited at)
- ``bootstrap``: true on the first node only (P fleet; C agent: ``galera_new_cluster`` or the flavor's
  bootstrap unit, then the users)
- ``mysql_config``, ``cnf``: the target's cnf name and text (P fleet, as ec2's install; C agent:
  rendered for the host's memory, or ``memory_mb`` when given, then the node's Galera options)
- ``storage``: as ec2's install (``aws.steps.jobs.storage_job``; start_step adds EBS ``volumes`` ids)
  or None (P fleet; C agent: ``benchfleet_storage``)
- ``password_secret_arn`` (P fleet: a secret per repetition the bootstrap node and the client may read;
  C agent on the bootstrap node: the ``sbtest`` and proxy users)
- ``synced_timeout_s`` (P fleet; C agent: how long it waits for its node to be Synced at full size)

``setup`` of a proxy job (``role: proxy``): ``software`` (haproxy | proxysql), ``backends``
(``{"name", "host", "port"}`` every node, in node order), ``writer`` (the node that takes the writes),
``writes`` (one | all), ``listen_host`` (loopback on the client host, else the proxy host's private
address as readiness found it: its listener and its admin / stats port are bound there, and the
deployment's proxy security group opens both to the clients only), ``listen_port``, ``admin_port``
(HAProxy's stats socket / ProxySQL's admin), ``monitor_user`` (the backend account the proxy's health
checks log in as), ``password_secret_arn``, ``stats_password`` (``generated``: kept on the proxy's host;
``secret``: the secret's, on a host of its own, see above), ``timeout_s`` (P fleet; C agent on the host
the step names: install, configure, start, wait for every backend).

A client step's ``db`` (``client_db``; P fleet per step; C agent): ``route: direct`` connects to the
writer node's address and port; ``route: proxy`` to ``<listen_host>:<listen_port>`` (loopback when
the proxy is on the client host, else its host's private address); user ``sbtest``, database
``sbtest``, ``password_secret_arn``, ``tls: off`` (a private network the nodes' security group closes).
A client step's ``status`` (``client_status``; P fleet: counters and interval from the plan's ``status``,
sources from the nodes; C agent: ``benchfleet_status``): one ``mysql`` source per node (over SQL with the
step's user), the proxy's statistics source (at the proxy's ``listen_host``: ProxySQL's with
``password_file`` on the client host, else with the step's own password, the secret's), and
``cluster_nodes``: the step fails when the cluster is not Synced at full size (naming the node). Give it
to the prepare step too: the agent then refuses to load data into a cluster that is not Synced at full
size (it reads no status per second during a load). The agent's ``status`` records name their source:
``n1``... and ``proxy/n1``....

The agent's answer (P agent; C fleet: the command's stdout): ``{"type": "setup", "role": "node",
"node", "state": "Synced", "cluster_size", "seconds", "config_hash", "requested"}`` or ``{"type":
"setup", "role": "proxy", "software", "proxy_version", "proxy_settings", "proxy_config_hash"}`` (the
fingerprint's proxy fields, ``proxyconf.fingerprint``), else ``{"type": "error", "stage": "node" |
"proxy-install" | "proxy", "node"?, "message"}`` and a non-zero exit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchfleet.cluster import galera, proxyconf
from benchfleet.workload import serverstatus

SETUP = "setup"  # the step kind of a set-up job
ROUTES = ("direct", "proxy")
LOOPBACK = "127.0.0.1"  # where the proxy listens on the client host
STATS_PASSWORDS = ("generated", "secret")
SYNCED_TIMEOUT_S = 900  # a joiner's full state transfer of an empty data dir takes seconds; installs minutes
PROXY_TIMEOUT_S = 600
DB_USER = "sbtest"
DB_NAME = "sbtest"


def _base(run_id: str, target_id: str, repetition: int, name: str) -> dict[str, Any]:
    return {"run_id": run_id, "target_id": target_id, "repetition": repetition,
            "step": {"name": name, "kind": SETUP, "threads": 1, "duration_s": 0}}


def node_job(*, run_id: str, target_id: str, repetition: int, flavor: str, cluster_name: str,
             node: str, host: str, nodes: Sequence[tuple[str, str]], mysql_config: str, cnf: str,
             password_secret_arn: str, storage: dict[str, Any] | None = None, memory_mb: int | None = None,
             synced_timeout_s: int = SYNCED_TIMEOUT_S, expected_size: int | None = None) -> dict[str, Any]:
    """The set-up job of node ``node`` (at ``host``) of the cluster of ``nodes`` ((name, host) in node
    order; the first bootstraps). ``expected_size``: the cluster size this node's job waits to see it
    Synced in (default every node; the state machine joins the nodes one at a time, so node k waits
    for k: P fleet, C agent)."""
    if flavor not in galera.FLAVORS:
        raise ValueError(f"flavor {flavor!r}: expected one of {', '.join(galera.FLAVORS)}")
    if not 0 < len(cluster_name) <= galera.MAX_CLUSTER_NAME:
        raise ValueError(f"cluster_name {cluster_name!r}: 1 to {galera.MAX_CLUSTER_NAME} characters "
                         "(Galera's handshake carries no more: a longer name lets no node join)")
    names = [n for n, _ in nodes]
    if node not in names:
        raise ValueError(f"node {node!r} is not one of the cluster's nodes {names}")
    if len(set(names)) != len(names) or len({h for _, h in nodes}) != len(nodes):
        raise ValueError("every node needs its own name and address")
    setup: dict[str, Any] = {
        "role": "node", "flavor": flavor, "cluster_name": cluster_name, "node": node, "host": host,
        "nodes": [{"name": n, "host": h} for n, h in nodes], "bootstrap": node == names[0],
        "mysql_config": mysql_config, "cnf": cnf, "storage": storage, "memory_mb": memory_mb,
        "password_secret_arn": password_secret_arn, "synced_timeout_s": synced_timeout_s,
        "expected_size": expected_size or len(nodes),
    }
    if not 1 <= setup["expected_size"] <= len(nodes):
        raise ValueError(f"expected_size {expected_size}: between 1 and the {len(nodes)} nodes")
    return {**_base(run_id, target_id, repetition, f"setup-{node}"), "setup": setup}


def proxy_has_host(proxy: Any) -> bool:
    """Whether a cluster's proxy runs on a host of its own (the spec's ``proxy.instance_type``), not on
    the client host: provision launches that host, the plan counts, prices and sets the proxy up there,
    and the client reaches the proxy and reads its statistics at that host's address (``own_host`` of
    the builders below). ``proxy``: the target's, as the spec's model or its JSON (the state machine's)."""
    own = proxy.get("instance_type") if isinstance(proxy, Mapping) else getattr(proxy, "instance_type", None)
    return bool(own)


def listen_host(own_host: str | None) -> str:
    """Where the proxy listens and the client reaches it: its own host's address, else the loopback of
    the client host it runs on."""
    return LOOPBACK if own_host is None else own_host


def proxy_job(*, run_id: str, target_id: str, repetition: int, software: str, nodes: Sequence[tuple[str, str]],
              password_secret_arn: str, writes: str = "one", port: int = galera.DEFAULT_PORTS["port"],
              timeout_s: int = PROXY_TIMEOUT_S, own_host: str | None = None) -> dict[str, Any]:
    """The proxy's set-up job in front of ``nodes`` ((name, host) in node order; the first is the
    writer). ``own_host``: the private address of the proxy's own host (``proxy_has_host``), where it
    listens and the client reads its statistics over the network (``stats_password`` secret); None:
    on the client host, at loopback."""
    if software not in proxyconf.PACKAGES:
        raise ValueError(f"proxy {software!r}: expected one of {', '.join(proxyconf.PACKAGES)}")
    if writes not in ("one", "all"):
        raise ValueError(f"writes {writes!r}: expected one or all")
    setup = {
        "role": "proxy", "software": software,
        "backends": [{"name": n, "host": h, "port": port} for n, h in nodes], "writer": nodes[0][0],
        "writes": writes, "listen_host": listen_host(own_host), "listen_port": proxyconf.LISTEN_PORT[software],
        "admin_port": proxyconf.ADMIN_PORT[software], "monitor_user": proxyconf.MONITOR_USER,
        "password_secret_arn": password_secret_arn, "timeout_s": timeout_s,
        "stats_password": "generated" if own_host is None else "secret",
    }
    return {**_base(run_id, target_id, repetition, "setup-proxy"), "setup": setup}


def client_db(route: str, nodes: Sequence[tuple[str, str]], password_secret_arn: str, proxy: str = "none",
              port: int = galera.DEFAULT_PORTS["port"], own_host: str | None = None) -> dict[str, Any]:
    """Where a client step connects: the writer node (``direct``), or the proxy (on the client host,
    or at ``own_host``, the address of the proxy's own host when it has one)."""
    if route not in ROUTES:
        raise ValueError(f"route {route!r}: expected direct or proxy")
    if route == "proxy":
        if proxy not in proxyconf.PACKAGES:
            raise ValueError("route proxy needs a proxy (the target's proxy is none)")
        host, port = listen_host(own_host), proxyconf.LISTEN_PORT[proxy]
    else:
        host = nodes[0][1]
    return {"host": host, "port": port, "user": DB_USER, "database": DB_NAME,
            "password_secret_arn": password_secret_arn, "tls": "off"}


def client_status(status: dict[str, Any], nodes: Sequence[tuple[str, str]], proxy: str = "none",
                  port: int = galera.DEFAULT_PORTS["port"], own_host: str | None = None) -> dict[str, Any]:
    """A client step's ``status``: the plan's counters and interval (``runplan.status_of``), read from
    every node and the proxy (at ``own_host``, its own host's address, when it has one), and the
    cluster's size (its health check)."""
    address = dict(nodes)
    sources: list[dict[str, Any]] = []
    for name in serverstatus.target_sources(len(nodes), proxy):
        if name != serverstatus.PROXY:
            sources.append({"name": name, "kind": "mysql", "host": address[name], "port": port})
            continue
        source: dict[str, Any] = {"name": name, "kind": proxy, "host": listen_host(own_host),
                                  "port": proxyconf.ADMIN_PORT[proxy],
                                  "backends": {n: f"{h}:{port}" for n, h in nodes}}
        if proxy == "proxysql":  # its statistics user's password: kept on this (the client) host, or the step's
            source["user"] = proxyconf.STATS_USER
            if own_host is None:
                source["password_file"] = proxyconf.PROXY_PASSWORD_FILE
        sources.append(source)
    return {**status, "cluster_nodes": len(nodes), "sources": sources}
