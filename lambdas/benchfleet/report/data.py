"""What the report reads from the store beyond ``stats.run_comparison``: the per-second timeline,
aggregated in DuckDB so a million samples arrive as a few thousand points."""

from __future__ import annotations

import math
from typing import Any

from benchfleet.local.store import DuckDBStore

# Points per series of the per-second chart, and for all series together: beyond that the browser
# gains nothing a reader can see, and the file grows.
MAX_POINTS_PER_SERIES = 1200
MAX_POINTS_TOTAL = 60_000
MIN_POINTS_PER_SERIES = 150

# Each target x repetition's warm-up/measure span: where its time axis starts (t0) and how long it is.
_SPANS_SQL = """
SELECT target_id, repetition, epoch(min(time)) AS t0, epoch(max(time)) - epoch(min(time)) + 1 AS span_s
FROM samples WHERE run_id = ? AND phase IN ('warmup', 'ramp', 'measure')
GROUP BY target_id, repetition
"""

# Seconds since each series' t0, bucketed by ``width`` seconds: mean, min and max tps of the bucket
# (an envelope, so no spike disappears), mean CPU steal, iowait and qps, and the thread count (the
# highest in the bucket, which is where a step boundary falls); rounded to three decimals, which are
# plenty for a chart and keep the file small. Each series comes back as one row of lists, so no
# point passes through Python one by one. The data directory's disk: mean I/O requests and MiB per
# second (reads and writes) and mean await of the bucket; ``rows``: the rows in an insert workload's
# table at the bucket's end (its highest count).
_ROUNDED = ("tps", "tps_min", "tps_max", "steal", "iowait", "qps", "disk_iops", "disk_mib_s", "disk_await_ms")
_TIMELINE_SQL = """
WITH f AS (
    SELECT unnest(CAST(? AS VARCHAR[])) AS target_id, unnest(CAST(? AS INTEGER[])) AS repetition,
           unnest(CAST(? AS DOUBLE[])) AS t0, CAST(? AS BIGINT) AS width),
b AS (
    SELECT s.target_id, s.repetition, {variant} AS variant,
           CAST(floor((epoch(s.time) - f.t0) / f.width) AS BIGINT) AS bucket,
           any_value(f.width) AS width,
           avg(s.tps) AS tps, min(s.tps) AS tps_min, max(s.tps) AS tps_max, avg(s.cpu_steal_pct) AS steal,
           avg(s.cpu_iowait_pct) AS iowait, avg(s.qps) AS qps, max(s.threads) AS threads,
           avg(s.disk_reads_per_s + s.disk_writes_per_s) AS disk_iops,
           avg(s.disk_read_mib_per_s + s.disk_write_mib_per_s) AS disk_mib_s,
           avg(s.disk_await_ms) AS disk_await_ms, max(s.rows_in_table) AS rows
    FROM samples s JOIN f USING (target_id, repetition)
    WHERE s.run_id = ? AND s.phase IN ('warmup', 'ramp', 'measure')
    GROUP BY s.target_id, s.repetition, {variant}, bucket)
SELECT target_id, repetition, variant, list(bucket * width ORDER BY bucket) AS t, {rounded},
       list(threads ORDER BY bucket) AS threads, list(rows ORDER BY bucket) AS rows
FROM b GROUP BY target_id, repetition, variant
ORDER BY target_id, repetition, variant
"""
_ROUNDED_LISTS = ", ".join(  # NaN or infinity (not JSON) as null
    f"list(CASE WHEN isfinite({k}) THEN round({k}, 3) END ORDER BY bucket) AS {k}" for k in _ROUNDED)


def _variant(store: DuckDBStore, table: str, alias: str = "s") -> str:
    """The expression of a row's variant: '' in a store written before variants existed (read-only
    commands do not add the column)."""
    found = store.query("SELECT count(*) AS n FROM information_schema.columns WHERE table_name = ? "
                        "AND column_name = 'variant'", [table])
    return f"coalesce({alias}.variant, '')" if found and found[0]["n"] else "''"


def timeline(store: DuckDBStore, run_id: str) -> dict[str, Any]:
    """The per-second series, downsampled: ``width_s`` (seconds per point; 1 = raw), ``spans`` (each
    target x repetition's t0 and length: :func:`status_timeline` reuses them) and ``series``,
    one per target x repetition: ``{target_id, repetition, t, tps, tps_min, tps_max, steal, iowait,
    qps, threads, disk_iops, disk_mib_s, disk_await_ms, rows}``
    with ``t`` the bucket start in seconds since the series' first sample."""
    spans = store.query(_SPANS_SQL, [run_id])
    if not spans:
        return {"width_s": 1, "series": [], "spans": []}
    per_series = max(MIN_POINTS_PER_SERIES, min(MAX_POINTS_PER_SERIES, MAX_POINTS_TOTAL // len(spans)))
    longest = max(float(s["span_s"]) for s in spans)
    width = max(1, math.ceil(longest / per_series))
    sql = _TIMELINE_SQL.format(variant=_variant(store, "samples"), rounded=_ROUNDED_LISTS)
    series = store.query(sql, [[s["target_id"] for s in spans], [s["repetition"] for s in spans],
                               [s["t0"] for s in spans], width, run_id])
    return {"width_s": width, "series": series, "spans": spans}


# Each block of a step split into blocks, or each variant's step: where it starts and ends on its
# target x repetition's time axis (seconds since t0, the first and last report's second), with its
# variant, block and threads.
_BLOCKS_SQL = """
WITH f AS (
    SELECT unnest(CAST(? AS VARCHAR[])) AS target_id, unnest(CAST(? AS INTEGER[])) AS repetition,
           unnest(CAST(? AS DOUBLE[])) AS t0)
SELECT s.target_id, s.repetition, {variant} AS variant, s.block, s.step, max(s.threads) AS threads,
       round(min(epoch(s.time)) - any_value(f.t0), 3) AS start, round(max(epoch(s.time)) - any_value(f.t0), 3) AS end
FROM samples s JOIN f USING (target_id, repetition)
WHERE s.run_id = ? AND s.phase IN ('ramp', 'measure') AND {variant} <> ''
GROUP BY s.target_id, s.repetition, {variant}, s.block, s.step
ORDER BY s.target_id, s.repetition, start
"""


def blocks(store: DuckDBStore, run_id: str, spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured blocks of a run with variants, in the order they ran: ``{target_id, repetition, variant,
    block, step, threads, start, end}`` (none without variants). ``spans``: :func:`timeline`'s."""
    variant = _variant(store, "samples")
    if not spans or variant == "''":
        return []
    return store.query(_BLOCKS_SQL.format(variant=variant), [[s["target_id"] for s in spans],
                                                             [s["repetition"] for s in spans],
                                                             [s["t0"] for s in spans], run_id])


def label_series(series: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Name each series as the comparison names its rows (``label``: a target's variant, or the target),
    so that a chart colours a variant (or a cluster's route) as the other charts do."""
    names = {(r["target_id"], r.get("variant") or ""): str(r.get("label") or r["target_id"]) for r in rows}
    for s in series:
        s["label"] = names.get((s["target_id"], s.get("variant") or ""), s["target_id"])


# Status series (benchfleet.workload.serverstatus): per target x repetition x source x counter, bucketed on the
# throughput timeline's own axis (the same t0 per target x repetition, the same width), the mean per
# second of a running total or the mean of a level; flow-control pause as % of the time.
STATUS_POINTS_TOTAL = 40_000
_STATUS_SQL = """
WITH f AS (
    SELECT unnest(CAST(? AS VARCHAR[])) AS target_id, unnest(CAST(? AS INTEGER[])) AS repetition,
           unnest(CAST(? AS DOUBLE[])) AS t0, CAST(? AS BIGINT) AS width),
b AS (
    SELECT s.target_id, s.repetition, {variant} AS variant, s.source, s.counter,
           CAST(floor((epoch(s.time) - f.t0) / f.width) AS BIGINT) AS bucket, any_value(f.width) AS width,
           avg(CASE WHEN s.counter = 'wsrep_flow_control_paused_ns' THEN s.rate / 1e7
                    ELSE coalesce(s.rate, s.value) END) AS y,
           bool_or(s.rate IS NOT NULL) AS per_s
    FROM status_samples s JOIN f USING (target_id, repetition)
    WHERE s.run_id = ? AND s.phase IN ('warmup', 'measure') AND s.counter <> 'answered'
      AND s.second > 0  -- each step's first reading is the baseline of its rates
    GROUP BY s.target_id, s.repetition, {variant}, s.source, s.counter, bucket)
SELECT target_id, repetition, variant, source, counter, bool_or(per_s) AS per_s,
       list(bucket * width ORDER BY bucket) AS t,
       list(CASE WHEN isfinite(y) THEN round(y, 3) END ORDER BY bucket) AS y
FROM b GROUP BY target_id, repetition, variant, source, counter
ORDER BY target_id, repetition, counter, source, variant
"""


def status_timeline(store: DuckDBStore, run_id: str, spans: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The status series on the throughput timeline's axis: ``width_s`` and ``series``, one per target x
    repetition x source x counter: ``{target_id, repetition, source, counter, per_s, t, y}``. ``spans``:
    the throughput timeline's (:func:`timeline` gives them), so that the samples are not scanned again."""
    spans = store.query(_SPANS_SQL, [run_id]) if spans is None else spans
    counted = store.query("SELECT count(DISTINCT (target_id, repetition, source, counter)) AS n FROM status_samples "
                          "WHERE run_id = ? AND counter <> 'answered'", [run_id])
    n = int(counted[0]["n"]) if counted else 0
    if not spans or not n:
        return {"width_s": 1, "series": []}
    longest = max(float(s["span_s"]) for s in spans)
    width = max(1, math.ceil(longest / max(30, min(MAX_POINTS_PER_SERIES, STATUS_POINTS_TOTAL // n))))
    sql = _STATUS_SQL.replace("{variant}", _variant(store, "status_samples"))
    series = store.query(sql, [[s["target_id"] for s in spans], [s["repetition"] for s in spans],
                               [s["t0"] for s in spans], width, run_id])
    return {"width_s": width, "series": series}


def fingerprint_values(comparison: dict[str, Any], target_id: str, key: str) -> str:
    """Distinct values of one fingerprint field over a target's repetitions ('a | b' when they
    differ: two repetitions on different CPU models is worth seeing)."""
    for t in comparison["targets"]:
        if t["target_id"] == target_id:
            values = []
            for f in t.get("fingerprints") or []:
                v = f.get(key)
                if v is not None and str(v) not in values:
                    values.append(str(v))
            return " | ".join(values)
    return ""


def given(spec: dict[str, Any]) -> dict[str, str]:
    """What the spec gave each target, in words: its instance type or class; for a local server the
    CPUs it is pinned to and the memory its buffer pool is sized for; an existing server's address."""
    out: dict[str, str] = {}
    for t in spec.get("targets") or [] if isinstance(spec, dict) else []:
        if not isinstance(t, dict) or not t.get("id"):
            continue
        parts = []
        if t.get("instance_type") or t.get("instance_class"):
            parts.append(str(t.get("instance_type") or t.get("instance_class")))
        if t.get("kind") == "local":
            cpus = t.get("cpus")
            parts.append(f"{len(cpus)}\u00a0CPU{'s' if len(cpus) != 1 else ''} pinned ({','.join(map(str, cpus))})"
                         if cpus else "CPUs not pinned")
            if t.get("memory_mb"):
                parts.append(f"sized for {t['memory_mb']:,}\u00a0MB")
        if t.get("kind") == "existing" and t.get("host"):
            parts.append(f"{t['host']}" + (f":{t['port']}" if t.get("port") else ""))
        if t.get("nodes"):
            parts.append(f"{t['nodes']} nodes")
        out[str(t["id"])] = ", ".join(parts)
    return out


def host_of(comparison: dict[str, Any], target_id: str, kind: str | None) -> str:
    """What the host a target ran on has (vCPUs, memory, CPU model), from its fingerprints; an existing
    server's host is not this machine, so it is unknown."""
    vcpus = fingerprint_values(comparison, target_id, "vcpus")
    memory = fingerprint_values(comparison, target_id, "memory_mb")
    model = fingerprint_values(comparison, target_id, "cpu_model")
    if not (vcpus or memory or model):
        return "not known (not measured from here)" if kind == "existing" else ""
    parts = []
    if vcpus:
        parts.append(f"{vcpus}\u00a0vCPUs")  # a number and its unit never part at a line end
    if memory:
        parts.append(" | ".join(f"{int(m) / 1024:,.1f}\u00a0GB" for m in memory.split(" | ")))
    if model:
        parts.append(model)
    return ", ".join(parts)


def layout_text(value: Any) -> str:
    """One line for the storage a target's data directory was on (the fingerprint's
    ``storage_layout``, JSON): the array the install built, or the device and file system measured."""
    import json

    if not value:
        return ""
    layout = json.loads(value) if isinstance(value, str) else value
    built = layout.get("built") or {}
    where = f"{layout.get('filesystem') or '?'} on {layout.get('source') or layout.get('dev') or '?'}"
    options = layout.get("mount_options") or ""
    if not built:
        return f"{where} ({options}) at {layout.get('mount_point') or '?'}"
    devices = built.get("devices") or []
    ids = [d.get("volume_id") or d.get("serial") for d in devices]
    array = (f"RAID {built['level']} of {len(devices)}, chunk {built.get('chunk_kb')} KiB"
             if built.get("level") is not None else "one device")
    align = built.get("alignment") or {}
    aligned = (f", su {align['sunit_bytes'] // 1024} KiB sw {align['swidth_bytes'] // max(align['sunit_bytes'], 1)}"
               if align.get("sunit_bytes") else
               f", stride {align['stride_blocks']} width {align['stripe_width_blocks']}"
               if align.get("stride_blocks") else "")
    return (f"{array} ({', '.join(str(i) for i in ids if i)}); {built.get('filesystem')}{aligned}; "
            f"{options} at {built.get('mount_point')}")
