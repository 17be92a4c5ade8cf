-- Dataset "server status per second" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- One multi-measure record 'status' per row (dimensions source, counter and variant, '-' where the
-- spec had no variants, read back as ''); a rate that does not exist (levels, a step's first reading)
-- is absent and reads as null.
-- Same columns, in the same order, as sql/athena/status_samples.sql (sql/datasets.json).
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name, target_id,
       CASE WHEN variant = '-' THEN '' ELSE variant END AS variant,
       target_id || CASE WHEN variant = '-' THEN '' ELSE ' · ' || variant END AS series,
       CAST(repetition AS INTEGER) AS repetition, step, phase, CAST(threads AS INTEGER) AS threads, time,
       date_diff('second', min(time) OVER (PARTITION BY run_id, target_id, repetition), time) AS elapsed_s,
       source, counter, value, rate,
       CASE WHEN counter = 'wsrep_flow_control_paused_ns' THEN rate / 1e7 ELSE coalesce(rate, value) END
           AS reading
FROM "${database}"."status_samples"
WHERE measure_name = 'status' AND phase IN ('warmup', 'measure') AND counter <> 'answered' AND second > 0
