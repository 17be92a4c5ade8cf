"""Realistic synthetic runs written through DuckDBStore's own methods and the records models.

Throughput follows a saturation curve in threads (per target capacity), per-second noise, one
repetition with a steal episode; latency grows with threads; summaries agree with the samples.
"""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

from benchfleet.cost import pricing
from benchfleet.local.store import DuckDBStore
from benchfleet.workload.records import AgentOutput, Fingerprint, Sample, StepSummary

TARGETS: list[dict[str, Any]] = [
    {"id": "m6i-large", "kind": "ec2", "instance_type": "m6i.large", "capacity": 2400.0, "vcpus": 2,
     "cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "arch": "x86_64", "price": 0.107},
    {"id": "m6g-large", "kind": "ec2", "instance_type": "m6g.large", "capacity": 2050.0, "vcpus": 2,
     "cpu_model": "Neoverse-N1", "arch": "aarch64", "price": 0.088},
    {"id": "m6i-xlarge", "kind": "ec2", "instance_type": "m6i.xlarge", "capacity": 4500.0, "vcpus": 4,
     "cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "arch": "x86_64", "price": 0.203},
]


def spec_of(name: str, targets: list[dict[str, Any]], reps: int, threads: list[int],
            variants: list[dict[str, Any]] | None = None, blocks: int = 1) -> dict[str, Any]:
    extra: dict[str, Any] = {"variants": [{"id": v["id"]} for v in variants], "blocks": blocks,
                             "baseline": variants[0]["id"]} if variants else {}
    return {"name": name, "workload": {"name": "ro-sweep", "test": "oltp_read_only", "threads": threads,
                                       "duration_s": 60, "warmup_s": 30},
            "repetitions": reps, "baseline": targets[0]["id"],
            "targets": [t.get("spec") or {"id": t["id"], "kind": t["kind"], "instance_type": t["instance_type"],
                                         "engine": "mysql-8.0", "mysql_config": "default", "region": "us-east-1"}
                        for t in targets], **extra}


# The demo's shape (workloads/comparisons/demo-durability.yaml): two local servers pinned to CPU 0 with
# 512 MB, the baseline under steady CPU steal (as the demo's `durable` was, 2.7-3.9%).
DEMO_TARGETS: list[dict[str, Any]] = [
    {"id": t, "kind": "local", "instance_type": None, "capacity": c, "vcpus": 2, "cpu_model": "AMD EPYC",
     "arch": "x86_64", "price": None, "steal": st,
     "spec": {"id": t, "kind": "local", "mysql_config": t, "memory_mb": 512, "cpus": [0]}}
    for t, c, st in (("durable", 700.0, 3.2), ("relaxed", 2600.0, 0.04))]


def _at(value: float | dict[int, float] | None, threads: int, default: float) -> float:
    """A figure given once, or per thread count (``{threads: figure}``)."""
    if isinstance(value, dict):
        return value.get(threads, default)
    return default if value is None else value


def fill_store(store: DuckDBStore, run_id: str = "demo-run-20261122t100000-abcd",
               targets: list[dict[str, Any]] | None = None, reps: int = 3,
               threads: tuple[int, ...] = (1, 2, 4, 8, 16), seconds: int = 60, warmup_s: int = 30,
               seed: int = 7, host_cv: float = 0.02, variants: list[dict[str, Any]] | None = None,
               blocks: int = 1) -> str:
    """A run in ``store``: each target's throughput ``capacity`` (tps at saturation), repetitions on hosts
    whose speed varies by ``host_cv``, steady CPU steal ``steal`` (%) where a target gives one.

    ``variants`` (the demo's shape: settings switched on one server): ``{id, factor, cv}`` each, the
    variant's throughput ``factor`` x the target's, varying by ``cv`` from block to block (each a figure,
    or a dict of them by thread count); every measured
    step is then ``blocks`` blocks of ``seconds / blocks`` each, the variants alternating (the order
    reversed in every other block and repetition, as the runner does), named ``t0004.b1.<variant>``."""
    targets = targets or TARGETS
    rng = random.Random(seed)
    name = run_id.rsplit("-", 2)[0]
    spec = spec_of(name, targets, reps, list(threads), variants, blocks)
    store.create_run(run_id, name, spec, "aws", 1.23)
    # What collect records with each targets row: every line of the price by model.
    recorded = {t["id"]: pricing.recorded_prices(t) for t in spec["targets"]}
    start = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    for t in targets:
        for rep in range(1, reps + 1):
            rows = 1000  # prepared
            host = rng.gauss(1.0, host_cv)  # each repetition on its own host
            steal_episode = rep == 2 and t["id"] == targets[0]["id"]
            clock = start + timedelta(hours=rep)
            samples: list[Sample] = []
            summaries: list[StepSummary] = []
            steps = [("warmup", "warmup", max(threads), warmup_s, None, None)] + [
                ("measure", f"t{th:04d}", th, seconds, None, None) for th in threads]
            if variants:  # the warm-up with the first variant's settings, as the runner does
                steps = [("warmup", "warmup", max(threads), warmup_s, variants[0], None)] + [
                    ("measure", f"t{th:04d}.b{b}.{v['id']}", th, seconds // blocks, v, b)
                    for k, th in enumerate(threads) for b in range(1, blocks + 1)
                    for v in (variants if (rep + k + b) % 2 else variants[::-1])]
            for phase, step, th, duration, variant, block in steps:
                base = t["capacity"] * host * th / (th + 1.5) * (1 + 0.1 * (th <= t["vcpus"]))
                if variant:
                    base *= _at(variant["factor"], th, 1.0) * max(0.05, rng.gauss(1.0, _at(variant.get("cv"), th, 0.0)))
                identity = {"variant": variant["id"], "block": block} if variant else {}
                step_samples = []
                for sec in range(1, duration + 1):
                    steal = max(0.0, rng.gauss(t.get("steal", 0.3), 0.2))
                    if steal_episode and phase == "measure" and 20 <= sec <= 35:
                        steal = rng.uniform(20, 35)
                    tps = max(1.0, rng.gauss(base, base * 0.03) * (1 - steal / 100))
                    lat = 1000 * th / tps * rng.uniform(1.3, 1.9)
                    step_samples.append(Sample(
                        **identity, run_id=run_id, target_id=t["id"], repetition=rep, workload="ro-sweep", step=step,
                        phase=phase, threads=th, time=clock + timedelta(seconds=sec), second=float(sec),
                        tps=round(tps, 2), qps=round(tps * 16, 2), reads_per_s=round(tps * 14, 2),
                        writes_per_s=0.0, other_per_s=round(tps * 2, 2), latency_ms=round(lat, 2),
                        latency_pct=95, errors_per_s=0.0, reconnects_per_s=0.0, cpu_steal_pct=round(steal, 2),
                        cpu_user_pct=60.0, cpu_system_pct=15.0, cpu_iowait_pct=0.1,
                        # The data directory's disk, and (as an insert workload would) the rows so far.
                        disk_reads_per_s=round(tps * 0.2, 2), disk_writes_per_s=round(tps * 0.05, 2),
                        disk_read_mib_per_s=round(tps * 0.2 * 16 / 1024, 4), disk_write_mib_per_s=0.5,
                        disk_await_ms=round(0.4 + 0.8 * (sec % 7) / 7, 3), rows_in_table=rows + int(tps * sec)))
                clock += timedelta(seconds=duration + 5)
                rows = step_samples[-1].rows_in_table or rows
                samples.extend(step_samples)
                tps_values = [s.tps for s in step_samples]
                mean_tps = statistics.fmean(tps_values)
                transactions = int(mean_tps * duration)
                lats = sorted(s.latency_ms for s in step_samples)
                summaries.append(StepSummary(
                    **identity, run_id=run_id, target_id=t["id"], repetition=rep, workload="ro-sweep", step=step,
                    phase=phase, threads=th, time=clock, total_time_s=float(duration),
                    transactions=transactions, tps=round(mean_tps, 2), queries=transactions * 16,
                    qps=round(mean_tps * 16, 2), reads=transactions * 14, writes=0, other=transactions * 2,
                    ignored_errors=0, errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0,
                    events=transactions, latency_min_ms=round(lats[0] / 3, 2),
                    latency_avg_ms=round(statistics.fmean(lats) / 1.5, 2), latency_max_ms=round(lats[-1] * 3, 2),
                    latency_pct=95, latency_pct_ms=round(lats[int(0.9 * len(lats))], 2),
                    sysbench_version="1.0.20", samples=len(step_samples),
                    tps_cv=statistics.stdev(tps_values) / mean_tps,
                    steal_mean_pct=statistics.fmean(s.cpu_steal_pct or 0 for s in step_samples)))
            store.add_output(AgentOutput(samples=samples, summaries=summaries))
            local = t["kind"] == "local"
            store.add_target(run_id, t["id"], rep, {
                "kind": t["kind"], "instance_type": t["instance_type"], "engine": "mariadb" if local else "mysql-8.0",
                "mysql_config": t["id"] if local else "default", "region": "local" if local else "us-east-1",
                "storage": None if local else "gp3:100", "cpus": "0" if local else None,
                "price_per_hour": t["price"] if t["price"] is not None else 0.0, "prices": recorded[t["id"]]},
                Fingerprint(
                run_id=run_id, target_id=t["id"], repetition=rep, time=start, cpu_model=t["cpu_model"],
                vcpus=t["vcpus"], cpus_usable=t["vcpus"], memory_mb=24 * 1024 if local else 8 * 1024 * t["vcpus"] // 2,
                arch=t["arch"], kernel="6.8.0-1019-aws", os="Ubuntu 24.04", sysbench_version="1.0.20",
                engine_version="8.0.40", config_hash="3f2a9c1d", storage_layout={
                    "data_dir": "/var/lib/mysql", "filesystem": "xfs", "source": "/dev/md0",
                    "mount_options": "rw,noatime", "mount_point": "/var/lib/mysql", "built": {
                        "level": 10, "chunk_kb": 512, "filesystem": "xfs", "mount_point": "/srv/benchfleet",
                        "devices": [{"volume_id": f"vol-0{i}"} for i in range(8)],
                        "alignment": {"sunit_bytes": 524288, "swidth_bytes": 2097152}}}))
    store.finish_run(run_id, "succeeded", actual_cost_usd=1.02)
    return run_id


def fill_cloud_and_status(store: DuckDBStore, run_id: str, write_latency_ms: float,
                          counters: dict[str, float]) -> None:
    """CloudWatch WriteLatency (one point a minute, as collect stores it) and server status rows per second
    (the status_samples table: time, run, target, repetition, step, phase, second, source, counter,
    value, rate) for every target x repetition of a run, over its measured seconds."""
    store.execute("""INSERT INTO cloud_metrics
        SELECT time_bucket(INTERVAL 1 minute, time), run_id, target_id, 'WriteLatency', ? * (0.9 + 0.2 * random()),
               'Milliseconds'
        FROM samples WHERE run_id = ? GROUP BY ALL""", [write_latency_ms, run_id])
    for counter, rate in counters.items():
        store.execute("""INSERT INTO status_samples (time, run_id, target_id, repetition, workload, step, threads,
                                         phase, second, source, counter, value, rate)
            SELECT time, run_id, target_id, repetition, workload, step, threads, phase, second, 'server', ?,
                   ? * second, ? * (0.8 + 0.4 * random())
            FROM samples WHERE run_id = ? AND phase IN ('warmup', 'measure')""", [counter, rate, rate, run_id])


def fill_node_status(store: DuckDBStore, run_id: str, target_ids: list[str],
                     per_thread: dict[str, dict[str, float]], levels: frozenset[str] = frozenset()) -> None:
    """A cluster's per-node status rows (source ``n1``..., ``proxy/n1``...) at every second of each of
    ``target_ids``' warm-up and measure steps: each counter's rate per second is exactly
    ``per_thread[source][counter]`` x the step's threads (a running total growing with the load), its
    value the total so far; a counter of ``levels`` (a queue, sessions) has no rate, its value that
    figure x threads. Each row of the variant and block its second measured. One statement (DuckDB
    commits each)."""
    rates = [(source, counter, float(rate), counter in levels) for source, counters in per_thread.items()
             for counter, rate in counters.items()]
    store.execute(f"""INSERT INTO status_samples (time, run_id, target_id, variant, block, repetition, workload, step,
                                     threads, phase, second, source, counter, value, rate)
        SELECT s.time, s.run_id, s.target_id, s.variant, s.block, s.repetition, s.workload, s.step, s.threads, s.phase,
               s.second,
               r.source, r.counter, CASE WHEN r.level THEN r.rate * s.threads ELSE r.rate * s.threads * s.second END,
               CASE WHEN NOT r.level THEN r.rate * s.threads END
        FROM samples s CROSS JOIN (VALUES {", ".join("(?, ?, ?, ?)" for _ in rates)}) AS r(source, counter, rate,
                                                                                         level)
        WHERE s.run_id = ? AND s.target_id IN ({", ".join("?" for _ in target_ids)})
          AND s.phase IN ('warmup', 'measure')""", [v for row in rates for v in row] + [run_id, *target_ids])


# Two runs of the demo's shape (durable and relaxed on one local server, blocks alternating) whose
# verdicts, run against run, are of every kind: relaxed at 4 threads much faster in the second run
# (decisive), durable at 1 thread noisy from block to block (inconclusive), relaxed at 1 thread with one
# repetition lost in the second run (too few). Within each run, relaxed against durable is paired.
DEMO_PAIR = ("demo-durability-20261126t100000-aaaa", "demo-durability-20261126t120000-bbbb")
DEMO_VARIANT_TARGET = [{**DEMO_TARGETS[0], "id": "local-512mb", "capacity": 700.0,
                        "spec": {**DEMO_TARGETS[0]["spec"], "id": "local-512mb"}}]


def fill_demo_pair(store: DuckDBStore) -> tuple[str, str]:
    """The two runs of DEMO_PAIR in ``store``; returns their ids (baseline, compared)."""
    common = {"targets": DEMO_VARIANT_TARGET, "reps": 3, "threads": (1, 4), "seconds": 8, "warmup_s": 3,
              "blocks": 2, "host_cv": 0.01}
    fill_store(store, DEMO_PAIR[0], seed=11, variants=[{"id": "durable", "factor": 1.0, "cv": 0.02},
                                                       {"id": "relaxed", "factor": 3.0, "cv": 0.02}], **common)
    fill_store(store, DEMO_PAIR[1], seed=12, variants=[{"id": "durable", "factor": 1.0, "cv": {1: 0.35, 4: 0.02}},
                                                       {"id": "relaxed", "factor": {1: 3.0, 4: 4.5}, "cv": 0.02}],
               **common)
    for table in ("samples", "step_summaries"):  # a repetition of relaxed at 1 thread lost in the second run
        store.execute(f"DELETE FROM {table} WHERE run_id = ? AND variant = 'relaxed' AND threads = 1 "
                      "AND repetition = 3", [DEMO_PAIR[1]])
    return DEMO_PAIR


# The local Galera spec's shape (workloads/comparisons/local-galera.yaml): a 3-node cluster measured direct
# and through its proxy, interleaved in 3 blocks of one repetition at 4 threads, every node's wsrep
# counters and the proxy's sessions per backend read every second. Per thread, what each counter grows by.
CLUSTER_RUN = "local-galera-20261126t100000-abcd"
CLUSTER_NODE_RATES: dict[str, dict[str, float]] = {
    "n1": {"wsrep_cluster_size": 0, "wsrep_flow_control_paused_ns": 2e6, "wsrep_flow_control_sent": 0,
           "wsrep_replicated_bytes": 40_960, "wsrep_received_bytes": 256, "wsrep_local_send_queue": 0.05,
           "wsrep_local_recv_queue": 0, "wsrep_local_cert_failures": 0, "wsrep_local_bf_aborts": 0},
    "n2": {"wsrep_cluster_size": 0, "wsrep_flow_control_paused_ns": 2e6, "wsrep_flow_control_sent": 0.5,
           "wsrep_replicated_bytes": 0, "wsrep_received_bytes": 40_960, "wsrep_local_send_queue": 0,
           "wsrep_local_recv_queue": 1, "wsrep_local_cert_failures": 0.25, "wsrep_local_bf_aborts": 0},
    "n3": {"wsrep_cluster_size": 0, "wsrep_flow_control_paused_ns": 1e6, "wsrep_flow_control_sent": 0.25,
           "wsrep_replicated_bytes": 0, "wsrep_received_bytes": 40_960, "wsrep_local_send_queue": 0,
           "wsrep_local_recv_queue": 0.5, "wsrep_local_cert_failures": 0, "wsrep_local_bf_aborts": 0},
    "proxy/n1": {"scur": 1.0}, "proxy/n2": {"scur": 0.0}, "proxy/n3": {"scur": 0.0},
}


def fill_cluster_run(store: DuckDBStore) -> str:
    """The run of CLUSTER_RUN in ``store`` (direct and proxy one repetition apart: the proxy's verdict
    inconclusive), with its nodes' and proxy's status; returns its id."""
    fill_store(store, CLUSTER_RUN, reps=1, threads=(4,), seconds=15, warmup_s=3, blocks=3, seed=5,
               targets=[{**DEMO_TARGETS[0], "id": "galera-3",
                         "spec": {"id": "galera-3", "kind": "local", "memory_mb": 256, "cluster": {"nodes": 3}}}],
               variants=[{"id": "direct", "factor": 1.0, "cv": 0.3}, {"id": "proxy", "factor": 0.87, "cv": 0.3}])
    fill_node_status(store, CLUSTER_RUN, ["galera-3"], CLUSTER_NODE_RATES, frozenset({
        "wsrep_cluster_size", "wsrep_local_send_queue", "wsrep_local_recv_queue", "scur"}))
    return CLUSTER_RUN
