-- Dataset "step results" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- Records as written by lambdas/benchfleet/aws/store/timestream.py: dimensions are VARCHAR (threads and
-- repetition are cast), every figure is a measure of one multi-measure record named 'summary';
-- variant is a dimension, '-' where the spec had no variants (read back as '').
-- Timestream holds no run or target metadata: run_name is the run id without its time suffix,
-- started_at the first summary's time, the baseline target the alphabetically first target, the
-- baseline variant the alphabetically first variant, and kind, instance type, engine, region and
-- price are null (cost per 1000 TPS and the spec's baseline need the athena store). This dialect is not
-- given the t table (sql/common/t975.sql) nor the targets' fingerprints: no interval, so no verdict but
-- 'no interval (timestream store)', and no caveats (issue 29: the athena store has both).
-- Same columns, in the same order, as sql/athena/step_results.sql (sql/datasets.json).
WITH steps AS (
    SELECT run_id, target_id, CASE WHEN variant = '-' THEN '' ELSE variant END AS variant,
           CAST(threads AS INTEGER) AS threads,
           max(workload) AS workload,
           count(DISTINCT repetition) AS repetitions,
           avg(tps) AS tps_mean,
           min(tps) AS tps_min,
           max(tps) AS tps_max,
           CAST(max(latency_pct) AS INTEGER) AS latency_pct,
           min(latency_pct_ms) AS latency_pct_ms_min,
           max(latency_pct_ms) AS latency_pct_ms_max,
           avg(tps_cv) AS tps_cv_mean,
           avg(steal_mean_pct) AS steal_mean_pct,
           sum(errors_per_s * total_time_s) AS errors,
           min(time) AS first_time
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
    GROUP BY run_id, target_id, variant, threads
),
runs AS (
    SELECT run_id, min(first_time) AS started_at, min(target_id) AS baseline_target,
           min(variant) AS baseline_variant
    FROM steps
    GROUP BY run_id
)
SELECT s.run_id, regexp_replace(s.run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name,
       r.started_at, s.target_id, s.variant,
       s.target_id || CASE WHEN s.variant <> '' THEN ' · ' || s.variant ELSE '' END AS series,
       CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(NULL AS VARCHAR) AS engine, CAST(NULL AS VARCHAR) AS region,
       s.workload, s.threads, s.repetitions,
       s.tps_mean, s.tps_min, s.tps_max,
       s.latency_pct, s.latency_pct_ms_min, s.latency_pct_ms_max,
       s.tps_cv_mean, s.steal_mean_pct, s.errors,
       r.baseline_target, r.baseline_variant,
       b.tps_mean AS baseline_tps_mean,
       CASE WHEN b.tps_mean > 0 THEN 100 * (s.tps_mean / b.tps_mean - 1) END AS relative_pct,
       CAST(NULL AS DOUBLE) AS price_per_hour,
       CAST(NULL AS DOUBLE) AS cost_per_1000_tps,
       CAST(NULL AS VARCHAR) AS design, CAST(NULL AS DOUBLE) AS relative_ci_low_pct,
       CAST(NULL AS DOUBLE) AS relative_ci_high_pct,
       CASE WHEN s.target_id = b.target_id AND s.variant = b.variant THEN 'baseline'
            ELSE 'no interval (timestream store)' END AS verdict,
       CAST(5.0 AS DOUBLE) AS margin_pct, CAST(NULL AS DOUBLE) AS iowait_mean_pct, CAST(NULL AS VARCHAR) AS caveats
FROM steps s
JOIN runs r ON r.run_id = s.run_id
LEFT JOIN steps b ON b.run_id = s.run_id AND b.threads = s.threads AND b.variant = r.baseline_variant
    AND b.target_id = CASE WHEN s.variant <> r.baseline_variant THEN s.target_id ELSE r.baseline_target END
