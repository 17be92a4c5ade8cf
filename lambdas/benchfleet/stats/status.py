"""Server status per step, for the tables and the report: what the per-second counters say.

Read from the ``status_samples`` rows (``benchfleet.workload.records.StatusSample``) of the measured steps,
after the step's first reading (the baseline of the rates):

- ``counter_table``: per target x variant x threads x source x counter, the mean over the step's
  readings of the rate (running totals) or of the value (levels), then the mean over repetitions (and
  blocks, where a step is split into blocks);
- ``cluster_table``: per cluster target x variant x threads, the figures a Galera cluster is judged by. Flow
  control pauses the whole cluster whenever one node asks for it, so the paused share is the most
  paused node's (``wsrep_flow_control_paused_ns`` per second / 1e9, as a % of the time); flow-control
  messages, certification failures, brute-force aborts and replicated bytes are summed over nodes;
  queues are the longest node's mean. ``unanswered`` counts readings a node did not answer.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

# figure -> (counter, how nodes combine, scale of the per-node mean rate or value, rate or value)
CLUSTER_FIGURES: dict[str, tuple[str, str, float, str]] = {
    "fc_paused_pct": ("wsrep_flow_control_paused_ns", "max", 1e-7, "rate"),  # ns/s -> % of the second
    "fc_sent_per_s": ("wsrep_flow_control_sent", "sum", 1.0, "rate"),
    "fc_recv_per_s": ("wsrep_flow_control_recv", "max", 1.0, "rate"),  # every node receives each message
    "recv_queue": ("wsrep_local_recv_queue", "max", 1.0, "value"),
    "send_queue": ("wsrep_local_send_queue", "max", 1.0, "value"),
    "cert_failures_per_s": ("wsrep_local_cert_failures", "sum", 1.0, "rate"),
    "bf_aborts_per_s": ("wsrep_local_bf_aborts", "sum", 1.0, "rate"),
    "replicated_mb_per_s": ("wsrep_replicated_bytes", "sum", 1e-6, "rate"),
}


class StatusStore(Protocol):
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...


_PER_STEP = """
SELECT target_id, coalesce(variant, '') AS variant, threads, repetition, block, source, counter,
       avg(rate) AS rate, avg(value) AS value, count(*) AS readings,
       sum(CASE WHEN counter = 'answered' AND value = 0 THEN 1 ELSE 0 END) AS silent
FROM status_samples WHERE run_id = ? AND phase = 'measure' AND second > 0
GROUP BY target_id, variant, threads, repetition, block, source, counter
"""


def per_step(store: StatusStore, run_id: str) -> list[dict[str, Any]]:
    """Each step's mean rate and value per source and counter (aggregated in the store)."""
    return store.query(_PER_STEP, [run_id])


def counter_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per target x variant x threads x source x counter: the mean over repetitions of each step's mean."""
    groups: dict[tuple[str, str, int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["counter"] != "answered":
            groups[(r["target_id"], r.get("variant") or "", int(r["threads"]), r["source"], r["counter"])].append(r)
    out = []
    for (target_id, variant, threads, source, counter), items in sorted(groups.items()):
        rates = [float(i["rate"]) for i in items if i["rate"] is not None]
        values = [float(i["value"]) for i in items if i["value"] is not None]
        out.append({"target_id": target_id, "variant": variant, "threads": threads, "source": source,
                    "counter": counter,
                    "repetitions": len(items), "per_s": statistics.fmean(rates) if rates else None,
                    "value": statistics.fmean(values) if values else None})
    return out


def cluster_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cluster target x variant x threads: the cluster's figures (module docstring), means over
    repetitions (and blocks)."""
    Step = tuple[str, str, int, int, int]
    steps: dict[Step, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    silent: dict[Step, int] = defaultdict(int)
    for r in rows:
        key = (r["target_id"], r.get("variant") or "", int(r["threads"]), int(r["repetition"]),
               int(r.get("block") or 0))
        if "/" in r["source"]:
            continue  # a proxy's backend, not a node
        steps[key][r["counter"]].append(r)
        if r["counter"] == "answered":
            silent[key] += int(r["silent"] or 0)
    per_step: dict[tuple[str, str, int], list[dict[str, float | None]]] = defaultdict(list)
    for key, counters in steps.items():
        if "wsrep_cluster_size" not in counters:
            continue  # not a cluster
        figures: dict[str, float | None] = {"unanswered": float(silent[key])}
        for name, (counter, combine, scale, field) in CLUSTER_FIGURES.items():
            found = [float(r[field]) for r in counters.get(counter, []) if r[field] is not None]
            figures[name] = ((max(found) if combine == "max" else sum(found)) * scale) if found else None
        per_step[key[:3]].append(figures)
    out = []
    for (target_id, variant, threads), items in sorted(per_step.items()):
        row: dict[str, Any] = {"target_id": target_id, "variant": variant, "threads": threads,
                               "repetitions": len(items)}
        for name in (*CLUSTER_FIGURES, "unanswered"):
            found = [float(v) for i in items if (v := i.get(name)) is not None]
            row[name] = statistics.fmean(found) if found else None
        out.append(row)
    return out


# Per node of a cluster (issue 38: the report's node panels and the terminal's per-node table): figure ->
# (counter, scale of its mean rate or value, rate or value, what it is). The proxy's sessions are its
# backend's (source proxy/<node>): HAProxy's current sessions (scur), ProxySQL's connections in use.
NODE_FIGURES: dict[str, tuple[str, float, str, str]] = {
    "fc_paused_pct": ("wsrep_flow_control_paused_ns", 1e-7, "rate", "flow control paused (% of the time)"),
    "fc_sent_per_s": ("wsrep_flow_control_sent", 1.0, "rate", "flow-control messages sent per second"),
    "replicated_kib_per_s": ("wsrep_replicated_bytes", 1 / 1024, "rate", "replicated KiB per second"),
    "received_kib_per_s": ("wsrep_received_bytes", 1 / 1024, "rate", "received KiB per second"),
    "send_queue": ("wsrep_local_send_queue", 1.0, "value", "local send queue (write-sets)"),
    "recv_queue": ("wsrep_local_recv_queue", 1.0, "value", "local receive queue (write-sets)"),
    "cert_failures_per_s": ("wsrep_local_cert_failures", 1.0, "rate", "certification failures per second"),
    "bf_aborts_per_s": ("wsrep_local_bf_aborts", 1.0, "rate", "brute-force aborts per second"),
}
PROXY_SESSIONS = ("scur", "ConnUsed")
PROXY_PREFIX = "proxy/"


def node_table(counters: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cluster target x variant x threads x node (:func:`counter_table`'s rows): each NODE_FIGURES figure
    and ``proxy_sessions``, the mean sessions its proxy held open to that node (None without a proxy)."""
    nodes: dict[tuple[str, str, int, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in counters:
        source = str(r["source"])
        node = source.removeprefix(PROXY_PREFIX)
        key = (r["target_id"], r.get("variant") or "", int(r["threads"]), node)
        nodes[key][("proxy:" if source.startswith(PROXY_PREFIX) else "") + r["counter"]] = r
    out = []
    for (target_id, variant, threads, node), found in sorted(nodes.items()):
        if "wsrep_cluster_size" not in found and "wsrep_local_state" not in found:
            continue  # not a cluster's node
        row: dict[str, Any] = {"target_id": target_id, "variant": variant, "threads": threads, "node": node}
        for name, (counter, scale, field, _) in NODE_FIGURES.items():
            value = (found.get(counter) or {}).get("per_s" if field == "rate" else "value")
            row[name] = None if value is None else float(value) * scale
        sessions = [found[f"proxy:{c}"].get("value") for c in PROXY_SESSIONS if f"proxy:{c}" in found]
        row["proxy_sessions"] = next((float(v) for v in sessions if v is not None), None)
        out.append(row)
    return out
