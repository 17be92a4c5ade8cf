-- Dataset "target costs" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- Mean tps per target x threads; Timestream holds no target prices or fingerprints, so the prices,
-- the cost figures (a cluster's cross-zone traffic included: it is priced from the recorded $/GB) and
-- the hardware columns are null here (the athena store has them), and there
-- is one row per target x threads (pricing_model on_demand). The interval of tps needs the t table
-- of sql/common/t975.sql, which this dialect is not given: null too.
-- Same columns, in the same order, as sql/athena/target_costs.sql (sql/datasets.json).
WITH by_threads AS (
    SELECT run_id, target_id, CAST(threads AS INTEGER) AS threads, avg(tps) AS tps_mean,
           count(*) AS repetitions, min(time) AS first_time
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
    GROUP BY run_id, target_id, threads
)
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name,
       min(first_time) OVER (PARTITION BY run_id) AS started_at,
       target_id, CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(NULL AS INTEGER) AS vcpus, CAST(NULL AS BIGINT) AS memory_mb, CAST(NULL AS VARCHAR) AS arch,
       threads, repetitions, tps_mean, CAST(NULL AS DOUBLE) AS tps_ci_low, CAST(NULL AS DOUBLE) AS tps_ci_high,
       'on_demand' AS pricing_model, CAST(NULL AS DOUBLE) AS price_per_hour,
       CAST(NULL AS DOUBLE) AS cost_per_1000_tps, CAST(NULL AS DOUBLE) AS cost_ci_low,
       CAST(NULL AS DOUBLE) AS cost_ci_high, CAST(NULL AS DOUBLE) AS transactions_per_usd,
       CAST(NULL AS DOUBLE) AS cross_zone_gb_per_hour, CAST(NULL AS DOUBLE) AS cross_zone_usd_per_hour
FROM by_threads
