"""Cost figures: what a unit of throughput costs under each pricing model, with the interval carried
from tps, and throughput per unit of size (speedup per thread count, efficiency per doubling)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchfleet.stats.verdict import CONFIDENCE, compare_units

# ---- cost -----------------------------------------------------------------------------------------

def cost_per_1000_tps(price_per_hour: float | None, tps: float | None) -> float | None:
    """USD per hour for each 1000 transactions per second sustained: price_per_hour / (tps / 1000).
    E.g. $0.192/h at 2400 tps -> $0.08 per hour per 1000 TPS. None when unpriced or tps <= 0."""
    if price_per_hour is None or tps is None or tps <= 0:
        return None
    return price_per_hour * 1000 / tps


def transactions_per_usd(price_per_hour: float | None, tps: float | None) -> float | None:
    """Transactions one US dollar buys at this throughput: tps * 3600 / price_per_hour.
    None when unpriced, free (price 0) or tps is unknown."""
    if not price_per_hour or tps is None:
        return None
    return tps * 3600 / price_per_hour


def cost_with_interval(price_per_hour: float | None, tps: Mapping[str, Any]) -> dict[str, Any] | None:
    """Cost per 1,000 tps at a row's mean tps, and its interval carried from the tps interval: the
    price is a constant, so price x 1000 / tps maps the interval of the mean exactly (its ends swap:
    the highest throughput is the lowest cost). ``tps``: a :func:`mean_spread` of the repetitions.
    None when unpriced or free (a price of 0 says nothing about cost)."""
    mean = tps.get("mean")
    if not price_per_hour or mean is None or mean <= 0:
        return None
    low, high = tps.get("ci_low"), tps.get("ci_high")
    return {"usd_per_hour": price_per_hour, "per_1000_tps": price_per_hour * 1000 / mean,
            "ci_low": price_per_hour * 1000 / high if high else None,
            "ci_high": price_per_hour * 1000 / low if low else None,
            "transactions_per_usd": transactions_per_usd(price_per_hour, mean)}


def row_costs(tps: Mapping[str, Any], serving: Mapping[str, float | None]) -> dict[str, dict[str, Any] | None]:
    """:func:`cost_with_interval` under every pricing model, from the serving $/hour by model."""
    return {model: cost_with_interval(price, tps) for model, price in serving.items()}


# ---- cross-zone traffic of a cluster ----------------------------------------------------------------

# AWS bills data transfer in GB of 2**30 bytes.
BYTES_PER_GB = 2 ** 30
CROSS_ZONE_SQL = """
SELECT target_id, coalesce(variant, '') AS variant, threads, repetition, coalesce(block, 0) AS block, source,
       counter, avg(rate) AS rate
FROM status_samples
WHERE run_id = ? AND phase = 'measure' AND second > 0 AND rate IS NOT NULL
  AND source LIKE 'n%' AND source NOT LIKE '%/%'
  AND counter IN ('wsrep_replicated_bytes', 'Bytes_sent', 'Bytes_received')
GROUP BY target_id, variant, threads, repetition, block, source, counter
"""


def cross_zone_bytes_per_s(nodes: Mapping[str, Mapping[str, float]],
                           client_zone: str = "n1") -> dict[str, float] | None:
    """Bytes per second that cross availability zones in a cluster, by the model every cost view uses.

    ``nodes``: per node (``n1``...) its per-second rates of ``wsrep_replicated_bytes``, ``Bytes_sent``
    and ``Bytes_received`` over a step. The model: every node is in its own zone and the client host
    (sysbench, and the proxy, on the client host or its own host) is in ``client_zone``'s, the first
    node's, which takes the writes.

    - ``replication``: each write-set a node replicates (``wsrep_replicated_bytes``) is sent by it to
      every other node, each in another zone: sum over nodes of its replicated bytes x (nodes - 1).
    - ``client``: the client protocol traffic of every node outside the client's zone crosses, both
      ways: its ``Bytes_sent`` + ``Bytes_received`` (sysbench direct, the proxy's queries and health
      checks, and the status readings themselves, which come from the client host too).
    - Not counted: Galera's group messages (keepalives, flow control: small beside the write-sets) and
      state transfers (before the measured steps).

    ``total`` = replication + client. None when a node lacks ``wsrep_replicated_bytes`` (nothing can
    be said)."""
    count = len(nodes)
    if not count or any(n.get("wsrep_replicated_bytes") is None for n in nodes.values()):
        return None
    replication = sum(float(n["wsrep_replicated_bytes"]) for n in nodes.values()) * (count - 1)
    client = sum(float(n.get("Bytes_sent") or 0.0) + float(n.get("Bytes_received") or 0.0)
                 for name, n in nodes.items() if name != client_zone)
    return {"replication": replication, "client": client, "total": replication + client}


def gb_per_hour(bytes_per_s: float) -> float:
    """GB (2**30 bytes, as AWS bills) per hour at ``bytes_per_s``."""
    return bytes_per_s * 3600 / BYTES_PER_GB


def cross_zone_by_row(steps: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Per target x variant x threads: GB per hour crossing zones (:func:`cross_zone_bytes_per_s` of
    each measured step's mean rates per node, then the mean over repetitions and blocks), split into
    ``replication_gb_per_hour`` and ``client_gb_per_hour``, with ``gb_per_hour`` their sum and
    ``steps`` the steps it comes from. ``steps``: rows of :data:`CROSS_ZONE_SQL`. Only clusters
    (sources ``n1``...) have rows."""
    per_step: dict[tuple[str, str, int, int, int], dict[str, dict[str, float]]] = defaultdict(dict)
    for r in steps:
        source = str(r["source"])
        if not (source.startswith("n") and source[1:].isdigit()) or r.get("rate") is None:
            continue
        key = (str(r["target_id"]), str(r.get("variant") or ""), int(r["threads"]), int(r["repetition"]),
               int(r.get("block") or 0))
        per_step[key].setdefault(source, {})[str(r["counter"])] = float(r["rate"])
    figures: dict[tuple[str, str, int], list[dict[str, float]]] = defaultdict(list)
    for key, nodes in per_step.items():
        found = cross_zone_bytes_per_s(nodes)
        if found is not None:
            figures[key[:3]].append(found)
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row_key, items in figures.items():
        replication = gb_per_hour(sum(i["replication"] for i in items) / len(items))
        client = gb_per_hour(sum(i["client"] for i in items) / len(items))
        out[row_key] = {"gb_per_hour": replication + client, "replication_gb_per_hour": replication,
                    "client_gb_per_hour": client, "steps": len(items)}
    return out


# ---- speedup by size ------------------------------------------------------------------------------

def doublings(size: float, base: float) -> float:
    """How many doublings of vCPUs lead from ``base`` to ``size`` (2 -> 8 vCPUs: 2)."""
    return math.log2(size / base)


def per_doubling(speedup: float | None, steps: float) -> float | None:
    """Speedup per doubling of vCPUs: speedup ** (1 / doublings); 2.0 is linear scaling, 1.0 none.
    None without a speedup or for a size equal to the baseline's."""
    if speedup is None or speedup <= 0 or steps <= 0:
        return None
    return float(speedup ** (1 / steps))


def _speedup_cell(values: Mapping[Any, float], base: Mapping[Any, float], unit: str | None, steps: float,
                  confidence: float) -> dict[str, Any] | None:
    if not values or not base:
        return None
    # The verdict's own interval (benchfleet.stats.verdict): paired where the two sizes shared each unit
    # (local servers run in rounds), so the speedup and the verdict on the same ratio never disagree.
    rel = compare_units(values, base, unit, confidence)
    if rel.pct is None:
        return None
    low = None if rel.ci_low_pct is None else 1 + rel.ci_low_pct / 100
    high = None if rel.ci_high_pct is None else 1 + rel.ci_high_pct / 100
    speedup = 1 + rel.pct / 100
    return {"speedup": speedup, "ci_low": low, "ci_high": high,
            "per_doubling": per_doubling(speedup, steps),
            "per_doubling_ci_low": per_doubling(low, steps), "per_doubling_ci_high": per_doubling(high, steps),
            "design": rel.design, "repetitions": [len(values), len(base)]}


def speedup_table(targets: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                  confidence: float = CONFIDENCE,
                  pairing: Callable[[str, str], str | None] | None = None) -> list[dict[str, Any]]:
    """Speedup of throughput with size, per group of targets that differ only in size, per thread count.

    ``targets``: mappings with ``target_id``, ``group`` (family/config key; None = not comparable) and
    ``size`` (vCPUs or CPUs; None = unknown). ``rows``: the comparison's rows (``target_id``,
    ``threads``, ``tps`` with the per-repetition ``values``). For each group with at least two sizes:
    ``baseline_target`` (the smallest size), ``threads`` (those the baseline ran) and ``rows`` sorted by
    size, each with ``size``, ``doublings`` (log2 of size / the baseline's) and ``by_threads``: per
    thread count, ``speedup`` and its interval (``ci_low``/``ci_high``, as ratios; None below two
    repetitions on a side) from the verdict code with its ``design``: Welch on the log of mean tps / the
    baseline's mean tps, or, where ``pairing(target, baseline target)`` names a unit both shared (local
    servers run in rounds: ``round``), paired: the geometric mean of the per-unit ratios and their t
    interval; and ``per_doubling`` (efficiency: speedup ** (1 / doublings), with the interval's ends
    carried the same way). The baseline's own cells are 1.0 without an interval. A row's per-unit tps is
    its ``tps_by_repetition`` ({repetition: tps}) where it has one, else its ``tps`` values in order.
    """
    values: dict[str, dict[int, dict[Any, float]]] = defaultdict(dict)
    for row in rows:
        tps = row.get("tps") or {}
        units = row.get("tps_by_repetition") or dict(enumerate(tps.get("values") or [], start=1))
        if units:
            values[str(row["target_id"])][int(row["threads"])] = {k: float(v) for k, v in units.items()}
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in targets:
        if t.get("group") and t.get("size") and values.get(t["target_id"]):
            groups[str(t["group"])].append(t)
    out = []
    for group, members in sorted(groups.items()):
        if len({m["size"] for m in members}) < 2:
            continue
        members = sorted(members, key=lambda m: (float(m["size"]), m["target_id"]))
        base_id, base_size = members[0]["target_id"], float(members[0]["size"])
        base = values[base_id]
        table_rows = []
        for m in members:
            steps = doublings(float(m["size"]), base_size)
            mine = values[m["target_id"]]
            by_threads: dict[str, Any] = {}
            for th in sorted(base):
                if th not in mine:
                    continue
                if m["target_id"] == base_id:
                    by_threads[str(th)] = {"speedup": 1.0, "ci_low": None, "ci_high": None, "per_doubling": None,
                                           "per_doubling_ci_low": None, "per_doubling_ci_high": None,
                                           "design": None, "repetitions": [len(base[th]), len(base[th])]}
                else:
                    unit = pairing(m["target_id"], base_id) if pairing else None
                    by_threads[str(th)] = _speedup_cell(mine[th], base[th], unit, steps, confidence)
            table_rows.append({"target_id": m["target_id"], "size": m["size"], "doublings": steps,
                               "by_threads": by_threads})
        out.append({"group": group, "baseline_target": base_id, "confidence": confidence,
                    "threads": sorted(base), "rows": table_rows})
    return out


def vcpus_from_size(instance_type: str | None) -> float | None:
    """vCPUs implied by an EC2/RDS size name (``m6i.2xlarge`` -> 8, ``db.r6g.large`` -> 2); None
    when the name says nothing reliable (t*, metal, micro...)."""
    if not instance_type:
        return None
    parts = instance_type.split(".")
    family, size = parts[-2], parts[-1]
    if family.startswith("t"):
        return None
    if size == "medium":
        return 1
    if size == "large":
        return 2
    if size == "xlarge":
        return 4
    if size.endswith("xlarge") and size[:-6].isdigit():
        return 4 * int(size[:-6])
    return None


def _cpus_count(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return len(value) or None
    text = str(value).strip("[] ")
    return len([p for p in text.split(",") if p.strip()]) or None


def target_group_and_size(meta: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """The family/configuration group and the size of a target, for the speedup table.

    EC2: ``ec2:<family>:<engine>:<mysql_config>:<storage type>``, size = vCPUs (fingerprint, else the
    size name); an existing server (an import) with an instance type likewise, as ``existing:...``.
    RDS/Aurora: ``<kind>:<db family>:<engine>:<mysql_config>``. Local:
    ``local:<engine>:<mysql_config>``, size = number of pinned CPUs (else usable CPUs)."""
    kind = meta.get("kind")
    engine, config = meta.get("engine") or "", meta.get("mysql_config") or ""
    if kind == "local":
        size = _cpus_count(meta.get("cpus")) or meta.get("cpus_usable") or meta.get("vcpus")
        return f"local:{engine}:{config}", float(size) if size else None
    type_ = meta.get("instance_type") or meta.get("instance_class")
    # An existing server with its type (an import's --instance-type) joins its family like an EC2 host.
    if not type_ or kind not in ("ec2", "rds", "aurora", "existing"):
        return None, None
    family = type_.rsplit(".", 1)[0]
    size = meta.get("vcpus") or vcpus_from_size(type_)
    storage = meta.get("storage")
    storage_type = storage.get("type") if isinstance(storage, Mapping) else (
        _storage_type(storage) if kind == "ec2" else "")
    return f"{kind}:{family}:{engine}:{config}:{storage_type or ''}".rstrip(":"), (
        float(size) if size else None)


def _storage_type(value: Any) -> str:
    if not value:
        return ""
    text = str(value)
    if text.startswith("{"):
        import json
        try:
            data = json.loads(text)
            return str(data.get("type") or "") if isinstance(data, dict) else ""
        except ValueError:
            return ""
    return text.split(":")[0]
