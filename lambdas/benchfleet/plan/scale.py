"""Scales of a spec, and trying a cloud spec on this machine.

``full`` is the spec as written. ``smoke`` keeps a spec's shape -- its test (built-in or Lua), its
options, its distribution, its targets and configs, the low and high ends of its thread sweep -- and
shrinks everything that costs time, so that any workload runs locally in well under a minute:
a few thousand rows, a 2 s warm-up, 5 s steps, no cooldown, one repetition. Smoke figures show that a
spec works, never how fast anything is.

``as_local`` turns every cloud target of a spec into a ``kind: local`` MariaDB target with the same id,
mysql config and server options (a ``cluster`` target a local Galera cluster of as many nodes behind
the same proxy; an ``existing`` server stays itself, benchmarked from here), so
that ``benchfleet run SPEC --scale smoke --local`` can try an EC2, RDS or Aurora
spec here before it costs anything.
"""

from __future__ import annotations

from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.targets import ClusterTarget, ExistingTarget, LocalCluster, LocalTarget
from benchfleet.spec.workload import Workload

SCALES = ("full", "smoke")

# Smoke limits. Each is small enough for a 2-core machine; together a workload stays under a minute
# (prepare ~1 s, warm-up 2 s, at most two 5 s steps, plus server start-up).
SMOKE_MAX_TABLES = 2
SMOKE_MAX_TABLE_SIZE = 2000
SMOKE_MAX_PREPARE_THREADS = 2
SMOKE_MAX_WARMUP_S = 2
SMOKE_DURATION_S = 5
SMOKE_MAX_THREADS = 8

# Memory of the local server that stands in for a cloud target (as_local): enough for any cnf's
# percentage-sized buffers, small enough to leave room for two servers and sysbench on a laptop.
LOCAL_STAND_IN_MEMORY_MB = 512


def smoke_threads(threads: list[int]) -> list[int]:
    """At most two steps: the sweep's lowest thread count and its highest up to SMOKE_MAX_THREADS.

    ``[1..128]`` -> ``[1, 8]``; ``[3]`` -> ``[3]``; ``[15]`` -> ``[8]``; ``[64, 256]`` -> ``[8]``.
    """
    small = sorted(t for t in threads if t <= SMOKE_MAX_THREADS)
    if not small:
        return [SMOKE_MAX_THREADS]
    return sorted({small[0], small[-1]})


def smoke_workload(w: Workload, blocks: int = 1) -> Workload:
    """``w`` at smoke scale; with ``blocks``, steps that split into that many blocks of at least two
    report intervals each (so the smoke run keeps the spec's blocks)."""
    duration = min(w.duration_s, SMOKE_DURATION_S)
    if blocks > 1:  # the spec's steps divide into blocks of two report intervals or more: so do these
        duration = blocks * min(w.duration_s // blocks, max(2 * w.report_interval_s, -(-duration // blocks)))
    # go-tpc's data set is its warehouses (one is the smallest TPC-C has); sysbench's is tables x rows.
    data = ({"warehouses": 1} if w.tool == "go-tpc" else
            {"tables": min(w.tables, SMOKE_MAX_TABLES), "table_size": min(w.table_size, SMOKE_MAX_TABLE_SIZE)})
    return w.model_copy(update={
        **data,
        "prepare_threads": min(w.prepare_threads, SMOKE_MAX_PREPARE_THREADS),
        "warmup_s": min(w.warmup_s, SMOKE_MAX_WARMUP_S),
        "threads": smoke_threads(w.threads),
        "duration_s": duration,
        "cooldown_s": 0,
    })


def apply_scale(loaded: LoadedSpec, scale: str) -> LoadedSpec:
    """The same comparison at another scale; the workload's shape (test, options, sweep) is kept."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: expected one of {', '.join(SCALES)}")
    if scale == "full":
        return loaded
    blocks = loaded.spec.blocks
    smoke = smoke_workload(loaded.workload, blocks)
    # The spec's own copy of an inline workload follows, so that spec and workload stay one thing;
    # every variant's workload shrinks alike, so that their steps still pair.
    update: dict[str, object] = {"repetitions": 1}
    if isinstance(loaded.spec.workload, Workload):
        update["workload"] = smoke
    variants = [v.model_copy(update={"workload": smoke_workload(v.workload, blocks)}) for v in loaded.variants]
    spec_variants = [v.model_copy(update={"workload": smoke_workload(v.workload, blocks)})
                     if isinstance(v.workload, Workload) else v for v in loaded.spec.variants]
    if spec_variants:
        update["variants"] = spec_variants
    spec = loaded.spec.model_copy(update=update)
    return loaded.model_copy(update={"workload": smoke, "spec": spec, "variants": variants})


def as_local(loaded: LoadedSpec, memory_mb: int = LOCAL_STAND_IN_MEMORY_MB) -> LoadedSpec:
    """Every ec2/rds/aurora target as a local MariaDB target with the same id, mysql_config and
    server_options; an existing target stays the user's server, its agent on this machine.

    Local targets are kept as they are. The stand-ins get ``memory_mb`` (cnf percentages are sized
    from it) and no CPU pinning; instance types, storage, regions and prices do not carry over, and
    engine-only cnf groups are rendered for MariaDB (the rendered file says what was skipped).
    A spec-level budget is dropped: local targets cost nothing.
    """
    targets = [
        t if isinstance(t, LocalTarget)
        # The user's own server is measured from here as it is, never swapped for a stand-in.
        else t.model_copy(update={"instance_id": None}) if isinstance(t, ExistingTarget)
        else LocalTarget(id=t.id, kind="local", mysql_config=t.mysql_config, memory_mb=memory_mb,
                         server_options=t.server_options, cluster=_local_cluster(t))
        for t in loaded.spec.targets
    ]
    spec = ComparisonSpec.model_validate({**loaded.spec.model_dump(), "targets": [
        t.model_dump() for t in targets], "budget_usd": None})
    return loaded.model_copy(update={"spec": spec})


def _local_cluster(target: object) -> LocalCluster | None:
    """A cloud cluster's stand-in: a local MariaDB Galera cluster of as many nodes, behind the same
    proxy (ProxySQL only where it is installed: the local run refuses it otherwise, naming it)."""
    if not isinstance(target, ClusterTarget):
        return None
    return LocalCluster(nodes=target.nodes, proxy=target.proxy.software)


def trial(spec: ComparisonSpec, scale: str, local: bool) -> dict[str, object] | None:
    """How a run differs from the spec as written, or None for the spec itself: ``scale`` (smoke),
    ``substituted`` (ids of cloud targets run as local stand-ins) and a ``label`` a reader sees in
    tables and the report. Such a run answers "does it work", never the spec's question, so it is
    marked everywhere and kept out of the spec's history."""
    # An existing server is measured as it is from here, never swapped: it is not a stand-in.
    substituted = [t.id for t in spec.targets if t.kind not in ("local", "existing")] if local else []
    if scale == "full" and not substituted:
        return None
    parts = []
    if scale != "full":
        parts.append(f"{scale} scale: 1 repetition of short steps, not the spec's result")
    if substituted:
        parts.append(f"local MariaDB stand-ins for {', '.join(substituted)}")
    return {"scale": scale, "substituted": substituted, "label": "; ".join(parts)}
