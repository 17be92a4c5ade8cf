-- Dataset "per-second samples": one row per second of every warm-up and measure step.
-- View: per-second throughput with CPU steal, the data directory's disk (reads and writes per second,
-- MiB/s, await) and, for insert workloads, the rows in the table (and per-second latency percentile).
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database.
-- Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py).
-- elapsed_s counts seconds from the first sample of the run x target x repetition, so repetitions
-- and targets overlay on one time axis (the variants of a repetition share its axis, interleaved).
WITH targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
)
SELECT s.run_id, r.name AS run_name, s.target_id, coalesce(s.variant, '') AS variant,
       s.target_id || CASE WHEN coalesce(s.variant, '') <> '' THEN ' · ' || s.variant ELSE '' END AS series,
       t.kind, t.instance_type, s.repetition, s.workload,
       s.step, s.phase, s.threads, s.time,
       date_diff('second', min(s.time) OVER (PARTITION BY s.run_id, s.target_id, s.repetition), s.time)
           AS elapsed_s,
       s.tps, s.qps, s.latency_ms, s.latency_pct, s.errors_per_s, s.reconnects_per_s,
       s.cpu_steal_pct, s.cpu_user_pct, s.cpu_system_pct, s.cpu_iowait_pct,
       s.disk_reads_per_s, s.disk_writes_per_s, s.disk_read_mib_per_s, s.disk_write_mib_per_s,
       s.disk_await_ms, s.rows_in_table
FROM "${database}"."samples" s
LEFT JOIN "${database}"."runs" r ON r.run_id = s.run_id
LEFT JOIN targets t ON t.run_id = s.run_id AND t.target_id = s.target_id
WHERE s.phase IN ('warmup', 'ramp', 'measure')
