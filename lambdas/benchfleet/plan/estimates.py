"""How long a plan's parts take and what its steps do to storage: the estimates behind `benchfleet plan`.

Provisioning, set-up and teardown by target kind; a prepare step's load time from the data set, the
server's memory and what its storage sustains; the Aurora I/O model (AURORA_IO_ASSUMPTION) that
prices Aurora's storage requests. Rough, documented figures (their sources and measurements are next
to each): they size estimates, timeouts and budgets, never measurements.
"""

from __future__ import annotations

import math
from typing import Any

from benchfleet.cluster import galera
from benchfleet.cluster import jobs as clusterjob
from benchfleet.spec.workload import Workload
from benchfleet.stats.cost import vcpus_from_size

# Seconds a target takes to become usable, by kind: EC2 boot + package install, RDS/Aurora creation.
# Rough, documented figures: they only size estimates and timeouts, never measurements.
# The local figures are calibrated by tests/perf/local_estimate.py, which times every phase of a real
# local run (medians on a 2-core machine shared with other work, November 2026): a fresh MariaDB
# server (initialise, start, create the user) 5.3 s, its teardown 1.2 s. An existing server's safety
# check and clean-up are a few client round trips, within the step overheads' rounding.
# rds / aurora: the wait between creating a repetition's parameter groups and creating the database
# that uses them. The RDS API Reference (CreateDBParameterGroup; CreateDBClusterParameterGroup alike):
# "After you create a DB parameter group, you should wait at least 5 minutes before creating your first
# DB instance that uses that DB parameter group as the default parameter group. This allows Amazon RDS
# to fully complete the create action before the parameter group is used". The state machine's "Let the
# new parameter groups settle" waits it (benchfleet.aws.fleet.paramgroups.SETTLE_S).
PARAMETER_GROUPS_SETTLE_S = 300
PROVISION_SECONDS = {"local": 6, "existing": 0, "ec2": 300, "rds": 900, "aurora": 1200, "cluster": 300}
TEARDOWN_SECONDS = {"local": 2, "existing": 0, "ec2": 60, "rds": 600, "aurora": 900, "cluster": 60}
# A local Galera cluster (benchfleet.local.galera, 3 nodes): the first node initialised and bootstrapped
# 4.6 s, the others Synced by rsync state transfer 10 s later, stopped together in 1 s (measured here,
# November 2026); each further node joins at the same time as the others.
LOCAL_CLUSTER_PROVISION_S = 16
LOCAL_CLUSTER_TEARDOWN_S = 2
# A cloud cluster's set-up steps, once its hosts run (PROVISION_SECONDS): one at a time, every node (the
# first bootstraps, each next joins by state transfer, as Galera's documentation advises), then the
# proxy. Rough figures, like the ones above: a node installs its server from the distribution's or
# Percona's repository (an ec2 target's install, which its 300 s include, beside its boot), starts and
# joins (an empty data directory's state transfer: seconds); a proxy installs one package, starts and
# waits for its backends.
CLUSTER_NODE_SETUP_S = 240
CLUSTER_PROXY_SETUP_S = 120
# Seconds each step takes beyond its planned duration when the agent runs here: starting the agent and
# sysbench, connecting, and the final summary (measured 0.9 s per warm-up or measure step). Cloud
# steps' overheads (SSM delivery, polling) are covered by their own waits, not by the estimate.
STEP_OVERHEAD_SECONDS = {"local": 1, "existing": 1}
# How long a prepare step loads its data set, from the instance and the storage (``prepare_seconds``).
# Rows per second one prepare thread loads while the rows fit the buffer pool: sysbench inserts in key
# order in multi-row statements, bounded by CPU and the redo log. Measured with tests/perf/
# local_estimate.py on a 2 x 400,000-row spec with 2 prepare threads (2-core machine shared with other
# work, November 2026): 800,000 rows in 30.6 s, 13,000 rows/s per thread, with a 1 GB and a 128 MB
# buffer pool alike. A cloud vCPU is dedicated, so this is a floor there. The step's fixed cost
# (fingerprint, cleanup, connecting: 1.5 s measured for 4,000 rows) is PREPARE_MIN_SECONDS.
PREPARE_ROWS_PER_S_PER_THREAD = 13_000
PREPARE_MIN_SECONDS = 2
# Bytes a loaded row takes in the buffer pool and on disk (sbtest's row and its index: ~230 bytes;
# the random-key workload's UUID row: ~100), share of memory the buffer pool gets (workloads/mysql:
# 75-80 %).
ROW_BYTES = 250
BUFFER_POOL_SHARE = 0.75
# Past the buffer pool, a load whose keys are random reads a random leaf page for every row and writes
# it back (two random I/Os); one in key order writes whole pages, bounded by the storage's throughput
# (the row, its index, the redo log and the doublewrite buffer: ~4 x the row).
RANDOM_KEY_TESTS = frozenset({"lua/insert_pk_random.lua"})
RANDOM_IOS_PER_ROW = 2
WRITTEN_BYTES_PER_ROW = 4 * ROW_BYTES
# What storage sustains, by type, where the spec gives no figure: gp3's included 3,000 IOPS and
# 125 MB/s, gp2's 3 IOPS per GB (100 to 16,000) and 250 MB/s, io1/io2's provisioned IOPS at 16 KiB, an
# instance-store NVMe disk's (i4i.large: ~100,000 random IOPS, 1 GB/s) and Aurora's, which scales its
# storage on its own: taken at 30,000 IOPS and 1 GB/s, a conservative figure for a large writer.
INSTANCE_STORE_IOPS, INSTANCE_STORE_MBPS = 100_000, 1_000
AURORA_IOPS, AURORA_MBPS = 30_000, 1_000
# Aurora bills its storage I/O per request (aurora.json's io_per_million), apart from the hours: the plan
# estimates a target's requests from its steps, by the load model above. Writes: Aurora writes redo
# records, not pages, billed in 4 KiB units and batched across concurrent commits, so a load writes its
# rows' bytes / 4 KiB and a transaction of a test that writes at most one. Reads: a row loaded, or a
# transaction run, beyond the buffer pool reads one page from storage, except inserts in key order
# (they touch the table's last pages only). A warm-up or measured step's transactions are assumed, not
# known before the run: AURORA_TPS_PER_THREAD per sysbench thread (a commit waits ~5 ms for 4 of 6
# storage copies across 3 zones). CloudWatch's VolumeReadIOPs and VolumeWriteIOPs give the real counts.
AURORA_IO_BYTES = 4096
AURORA_TPS_PER_THREAD = 200
READ_ONLY_TESTS = frozenset({"oltp_read_only", "oltp_point_select", "select_random_points", "select_random_ranges"})
KEY_ORDER_INSERT_TESTS = frozenset({"lua/insert_pk_seq.lua"})
AURORA_IO_ASSUMPTION = (f"assumed: a load writes its rows' bytes ({ROW_BYTES} B a row) in 4 KiB redo writes; "
                        f"steps run {AURORA_TPS_PER_THREAD} transactions/s per thread, one write each unless "
                        "the test only reads, one read each (and per row loaded) beyond the buffer pool "
                        "unless inserting in key order; the bill's VolumeReadIOPs/VolumeWriteIOPs tell")
# GiB of memory per vCPU by instance family class (c 2, m 4, r 8, x 16, i 8, z 8, t ~4): the buffer
# pool's size where the catalogue gives none.
GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8, "x": 16, "i": 8, "z": 8, "t": 4, "a": 2, "d": 8}


# Burstable (t*) sizes up to large all have 2 vCPUs.
_BURSTABLE_2_VCPU = ("nano", "micro", "small", "medium", "large")


def vcpus_of(instance_type: str) -> int | None:
    """vCPUs of an EC2 instance type or DB instance class from its size name (m6i.2xlarge 8,
    m6g.medium 1, t3.micro 2); None for metal and unknown sizes."""
    family, _, size = instance_type.removeprefix("db.").partition(".")
    if family.startswith("t"):
        if size in _BURSTABLE_2_VCPU:
            return 2
        family = "burstable"  # beyond large, t* sizes follow the general rule (t3.xlarge 4, ...)
    n = vcpus_from_size(f"{family}.{size}")
    return int(n) if n else None


def memory_bytes(target: Any) -> int | None:
    """Memory of the server a target's data is loaded into (None: unknown, an existing server)."""
    if target is None or target.kind == "existing":
        return None
    if target.kind == "local":
        return int(target.memory_mb) * 1024**2
    # A cluster loads its data into every node alike: one node's memory.
    instance = target.instance_type if target.kind in ("ec2", "cluster") else target.instance_class
    vcpus = vcpus_of(instance)
    ratio = GIB_PER_VCPU.get(instance.removeprefix("db.")[:1])
    return None if vcpus is None or ratio is None else vcpus * ratio * 1024**3


def storage_rates(target: Any) -> tuple[float, float] | None:
    """(IOPS, MB/s) the target's storage sustains (None: not modelled, local and existing servers)."""
    if target is None or target.kind in ("local", "existing"):
        return None
    if target.kind == "aurora":
        return float(AURORA_IOPS), float(AURORA_MBPS)
    from benchfleet.plan import stripe

    storage = target.storage
    if storage.type == "instance-store":
        return float(INSTANCE_STORE_IOPS), float(INSTANCE_STORE_MBPS)
    iops, mib_s = stripe.volume_figures(storage)
    if not iops or not mib_s:  # io1/io2 without provisioned IOPS: their floor
        iops, mib_s = 1000, 1000 * 16 / 1024
    # A load writes: every data volume of the array takes its share (half of RAID 10's volumes).
    writers = int(getattr(storage, "data_volumes", 1) or 1)
    return float(iops) * writers, float(mib_s) * stripe.MB_PER_MIB * writers


# go-tpc: seconds its prepare takes per warehouse and loading thread (it loads warehouses in parallel,
# one per thread, then checks them). Measured on this 2-core machine shared with other work (load
# average 15-20), 1 warehouse, 2 threads, MariaDB 10.11: 581 s with workloads/mysql/default.cnf, 1,150 s
# with relaxed.cnf on a server pinned to one CPU (local-tpcc-durability); the server's own CPU for the
# load was ~120 s, so an idle host takes a few minutes. The estimate is the loaded machine's: the local
# watchdog ends a step that runs past its estimate by half (benchfleet.local.watchdog), and a prepare
# killed there is a lost run.
GOTPC_PREPARE_S_PER_WAREHOUSE = 1200


def prepare_seconds(workload: Workload, target: Any = None) -> int:
    """How long the prepare step loads ``workload``'s tables into ``target``: at the per-thread rate
    while the rows fit the buffer pool (threads: the workload's, at most one per table and per vCPU),
    then at what the storage sustains (random keys: two random I/Os a row; key order: its
    throughput) where that is slower. No target: the per-thread rate alone. go-tpc: its measured
    pace per warehouse (GOTPC_PREPARE_S_PER_WAREHOUSE)."""
    if workload.tool == "go-tpc" and workload.warehouses:
        loaders = max(1, min(workload.prepare_threads, workload.warehouses))
        return math.ceil(GOTPC_PREPARE_S_PER_WAREHOUSE * workload.warehouses / loaders)
    rows = workload.tables * workload.table_size
    vcpus = None if target is None else _server_vcpus(target)
    threads = max(1, min(workload.prepare_threads, workload.tables, vcpus or workload.prepare_threads))
    rate = PREPARE_ROWS_PER_S_PER_THREAD * threads
    memory, io = memory_bytes(target), storage_rates(target)
    fitting = rows if memory is None else min(rows, int(memory * BUFFER_POOL_SHARE / ROW_BYTES))
    seconds = fitting / rate
    beyond = rows - fitting
    if beyond:
        if io is None:
            bound = 0.0
        elif workload.test in RANDOM_KEY_TESTS:
            bound = beyond * RANDOM_IOS_PER_ROW / io[0]
        else:
            bound = beyond * WRITTEN_BYTES_PER_ROW / (io[1] * 1_000_000)
        seconds += max(beyond / rate, bound)
    return max(PREPARE_MIN_SECONDS, math.ceil(seconds))


def _server_vcpus(target: Any) -> int | None:
    if target.kind == "local":
        return len(target.cpus) if target.cpus else None
    if target.kind in ("ec2", "cluster"):  # a cluster's writer: one node
        return vcpus_of(target.instance_type)
    if target.kind in ("rds", "aurora"):
        return vcpus_of(target.instance_class)
    return None


def cluster_setup_hosts(target: Any) -> list[str]:
    """The hosts a cloud cluster's set-up steps run on, in their order: every node, then the proxy's
    (``proxy`` when it has a host of its own, else ``client``) when there is a proxy; [] for other kinds."""
    if target.kind != "cluster":
        return []
    own = clusterjob.proxy_has_host(target.proxy)
    proxy = [] if target.proxy.software == "none" else ["proxy" if own else "client"]
    return [*galera.node_names(target.nodes), *proxy]


def setup_seconds(target: Any) -> int:
    """A cloud cluster's set-up, one step after another (0 for other kinds)."""
    hosts = cluster_setup_hosts(target)
    return CLUSTER_NODE_SETUP_S * target.nodes + CLUSTER_PROXY_SETUP_S * (len(hosts) - target.nodes) if hosts else 0


def provision_seconds(target: Any) -> tuple[int, int]:
    """(provision, teardown) seconds of one repetition of ``target``."""
    if target.kind == "local" and getattr(target, "cluster", None) is not None:
        return LOCAL_CLUSTER_PROVISION_S, LOCAL_CLUSTER_TEARDOWN_S
    return PROVISION_SECONDS[target.kind], TEARDOWN_SECONDS[target.kind]
