-- Dataset "target costs" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- Mean tps per target x threads; Timestream holds no target prices or fingerprints, so the prices,
-- the cost figures (a cluster's cross-zone $/hour included: it is priced from the recorded $/GB) and
-- the hardware columns are null here (the athena store has them), and there
-- is one row per target x threads (pricing_model on_demand). The interval of tps needs the t table
-- of sql/common/t975.sql, which this dialect is not given: null too.
-- cross_zone_gb_per_hour: a cluster's traffic across zones from its nodes' status records (the fragment
-- sql/common/cross_zone.sql, as the athena file uses it).
-- Same columns, in the same order, as sql/athena/target_costs.sql (sql/datasets.json).
WITH by_threads AS (
    SELECT run_id, target_id, CAST(threads AS INTEGER) AS threads, avg(tps) AS tps_mean,
           count(*) AS repetitions, min(time) AS first_time
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
    GROUP BY run_id, target_id, threads
),
node_rates AS (
    SELECT run_id, target_id, CAST(threads AS INTEGER) AS threads, repetition, step, source, counter,
           avg(rate) AS rate
    FROM "${database}"."status_samples"
    WHERE measure_name = 'status' AND phase = 'measure' AND second > 0 AND rate IS NOT NULL
      AND source LIKE 'n%' AND source NOT LIKE '%/%'
      AND counter IN ('wsrep_replicated_bytes', 'Bytes_sent', 'Bytes_received')
    GROUP BY run_id, target_id, threads, repetition, step, source, counter
),
${cross_zone}
SELECT b.run_id, regexp_replace(b.run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name,
       min(b.first_time) OVER (PARTITION BY b.run_id) AS started_at,
       b.target_id, CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(NULL AS INTEGER) AS vcpus, CAST(NULL AS BIGINT) AS memory_mb, CAST(NULL AS VARCHAR) AS arch,
       b.threads, b.repetitions, b.tps_mean, CAST(NULL AS DOUBLE) AS tps_ci_low, CAST(NULL AS DOUBLE) AS tps_ci_high,
       'on_demand' AS pricing_model, CAST(NULL AS DOUBLE) AS price_per_hour,
       CAST(NULL AS DOUBLE) AS cost_per_1000_tps, CAST(NULL AS DOUBLE) AS cost_ci_low,
       CAST(NULL AS DOUBLE) AS cost_ci_high, CAST(NULL AS DOUBLE) AS transactions_per_usd,
       c.gb_per_hour AS cross_zone_gb_per_hour, CAST(NULL AS DOUBLE) AS cross_zone_usd_per_hour
FROM by_threads b
LEFT JOIN cross_zone c ON c.run_id = b.run_id AND c.target_id = b.target_id AND c.threads = b.threads
