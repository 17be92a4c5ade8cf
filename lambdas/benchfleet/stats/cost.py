"""Cost figures: what a unit of throughput costs, and throughput per unit of size."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

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


# ---- speedup by size ------------------------------------------------------------------------------

def speedup_table(targets: Sequence[Mapping[str, Any]],
                  tps_by_target: Mapping[str, Mapping[int, float]]) -> list[dict[str, Any]]:
    """Speedup of throughput with size, per group of targets that differ only in size.

    ``targets``: mappings with ``target_id``, ``group`` (family/config key; None = not comparable) and
    ``size`` (vCPUs or CPUs; None = unknown). ``tps_by_target``: mean tps by threads per target.
    For each group with at least two sizes: rows sorted by size, each with ``peak_tps`` (the highest
    mean tps over the thread sweep), ``speedup`` = peak_tps / the smallest size's peak_tps, and
    ``by_threads``: the same ratio at each thread count both targets ran. The smallest size is 1.0.
    """
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in targets:
        if t.get("group") and t.get("size") and tps_by_target.get(t["target_id"]):
            groups[str(t["group"])].append(t)
    out = []
    for group, members in sorted(groups.items()):
        if len({m["size"] for m in members}) < 2:
            continue
        members = sorted(members, key=lambda m: (float(m["size"]), m["target_id"]))
        base = tps_by_target[members[0]["target_id"]]
        base_peak = max(base.values())
        rows = []
        for m in members:
            mine = tps_by_target[m["target_id"]]
            peak = max(mine.values())
            rows.append({
                "target_id": m["target_id"], "size": m["size"], "peak_tps": peak,
                "peak_threads": max(mine, key=lambda k: mine[k]),
                "speedup": peak / base_peak if base_peak > 0 else None,
                "by_threads": {str(th): mine[th] / base[th] for th in sorted(mine)
                               if th in base and base[th] > 0},
            })
        out.append({"group": group, "baseline_target": members[0]["target_id"], "rows": rows})
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
    size name). RDS/Aurora: ``<kind>:<db family>:<engine>:<mysql_config>``. Local:
    ``local:<engine>:<mysql_config>``, size = number of pinned CPUs (else usable CPUs)."""
    kind = meta.get("kind")
    engine, config = meta.get("engine") or "", meta.get("mysql_config") or ""
    if kind == "local":
        size = _cpus_count(meta.get("cpus")) or meta.get("cpus_usable") or meta.get("vcpus")
        return f"local:{engine}:{config}", float(size) if size else None
    type_ = meta.get("instance_type") or meta.get("instance_class")
    if not type_ or kind not in ("ec2", "rds", "aurora"):
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
