-- Dataset "per-second samples" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- One multi-measure record 'sample' per second; a CPU share or disk figure the agent could not read
-- (and rows_in_table outside insert workloads) is absent from the record and reads as null. kind and
-- instance_type are null (no target metadata here).
-- variant is a dimension of every record, '-' where the spec had no variants (read back as '').
-- Same columns, in the same order, as sql/athena/samples.sql (sql/datasets.json).
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name, target_id,
       CASE WHEN variant = '-' THEN '' ELSE variant END AS variant,
       target_id || CASE WHEN variant = '-' THEN '' ELSE ' · ' || variant END AS series,
       CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(repetition AS INTEGER) AS repetition, workload, step, phase, CAST(threads AS INTEGER) AS threads,
       time,
       date_diff('second', min(time) OVER (PARTITION BY run_id, target_id, repetition), time) AS elapsed_s,
       tps, qps, latency_ms, CAST(latency_pct AS INTEGER) AS latency_pct, errors_per_s, reconnects_per_s,
       cpu_steal_pct, cpu_user_pct, cpu_system_pct, cpu_iowait_pct,
       disk_reads_per_s, disk_writes_per_s, disk_read_mib_per_s, disk_write_mib_per_s,
       disk_await_ms, CAST(rows_in_table AS BIGINT) AS rows_in_table
FROM "${database}"."samples"
WHERE measure_name = 'sample' AND phase IN ('warmup', 'ramp', 'measure')
