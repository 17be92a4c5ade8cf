-- Dataset "server status per second": one row per SHOW GLOBAL STATUS counter of one source (a server,
-- a cluster node, a proxy's backend as proxy/<node>) at each reading of a warm-up or measure step.
-- View: a counter over time beside the throughput per second (pick the counter; flow-control pause
-- first). reading: the rate per second of a running total, the value of a level, flow-control pause as
-- % of the time. Each step's first reading (second 0) is only the baseline of its rates.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database.
-- Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py).
SELECT s.run_id, r.name AS run_name, s.target_id, coalesce(s.variant, '') AS variant,
       s.target_id || CASE WHEN coalesce(s.variant, '') <> '' THEN ' · ' || s.variant ELSE '' END AS series,
       s.repetition, s.step, s.phase, s.threads, s.time,
       date_diff('second', min(s.time) OVER (PARTITION BY s.run_id, s.target_id, s.repetition), s.time)
           AS elapsed_s,
       s.source, s.counter, s.value, s.rate,
       CASE WHEN s.counter = 'wsrep_flow_control_paused_ns' THEN s.rate / 1e7 ELSE coalesce(s.rate, s.value) END
           AS reading
FROM "${database}"."status_samples" s
LEFT JOIN "${database}"."runs" r ON r.run_id = s.run_id
WHERE s.phase IN ('warmup', 'measure') AND s.counter <> 'answered' AND s.second > 0
