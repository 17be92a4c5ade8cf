-- Dataset "target costs" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- Peak throughput per target; Timestream holds no target prices or fingerprints, so the price,
-- the cost figures and the hardware columns are null here (the athena store has them).
-- Same columns, in the same order, as sql/athena/target_costs.sql (sql/datasets.json).
WITH by_threads AS (
    SELECT run_id, target_id, CAST(threads AS INTEGER) AS threads, avg(tps) AS tps_mean,
           count(*) AS repetitions, min(time) AS first_time
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
    GROUP BY run_id, target_id, threads
),
ranked AS (
    SELECT run_id, target_id, threads, tps_mean, repetitions,
           min(first_time) OVER (PARTITION BY run_id) AS started_at,
           row_number() OVER (PARTITION BY run_id, target_id ORDER BY tps_mean DESC, threads) AS rank_in_target
    FROM by_threads
)
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name, started_at,
       target_id, CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(NULL AS INTEGER) AS vcpus, CAST(NULL AS BIGINT) AS memory_mb, CAST(NULL AS VARCHAR) AS arch,
       threads AS peak_threads, tps_mean AS peak_tps_mean, repetitions,
       CAST(NULL AS DOUBLE) AS price_per_hour,
       CAST(NULL AS DOUBLE) AS cost_per_1000_tps,
       CAST(NULL AS DOUBLE) AS transactions_per_usd
FROM ranked
WHERE rank_in_target = 1
