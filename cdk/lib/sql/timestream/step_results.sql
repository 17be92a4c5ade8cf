-- Dataset "step results" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database,
-- ${t975} by sql/common/t975.sql's values as a UNION ALL of one-row SELECTs (Timestream's FROM takes no
-- VALUES list), the t_of_df and verdict placeholders by sql/common/t_of_df.sql and verdict.sql, as for
-- Athena (one copy of the verdict's CTEs for both dialects).
-- Records as written by lambdas/benchfleet/aws/store/timestream.py: dimensions are VARCHAR (threads and
-- repetition are cast), every figure is a measure of one multi-measure record named 'summary' (block is
-- absent where the step was not split into blocks); variant is a dimension, '-' where the spec had no
-- variants (read back as '').
-- Timestream holds no run or target metadata: run_name is the run id without its time suffix,
-- started_at the first summary's time, the baseline target the alphabetically first target, the
-- baseline variant the alphabetically first variant, and kind, instance type, engine, region and price
-- are null (cost per 1000 TPS needs the athena store). The margin of the verdicts is the spec's
-- margin_pct, which collect writes as a measure of every summary record (5%, the spec's default, for
-- records written before it did).
-- The verdict is computed as sql/athena/step_results.sql computes it (benchfleet.stats.verdict): a
-- variant against its target's baseline variant paired by repetition (over its blocks), anything else Welch on
-- the log of the ratio of per-repetition means; relative_ci_low/high_pct its 95% interval; verdict
-- faster / slower / equivalent / inconclusive / too few repetitions / insufficient data / baseline.
-- caveats: the two sides' CPU steal (1 point or more apart) and iowait (5 points), with the figures
-- (benchfleet/stats/caveats.py's thresholds); fingerprint caveats (kernel, versions, CPU model) need the
-- targets table of the athena store. tests/unit/test_dataset_sql.py runs this file on DuckDB over views
-- shaped as these records and checks it against `results` with the athena file's test.
-- Same columns, in the same order, as sql/athena/step_results.sql (sql/datasets.json).
WITH t975 AS (${t975}),
units AS (
    SELECT run_id, target_id, CASE WHEN variant = '-' THEN '' ELSE variant END AS variant,
           CAST(threads AS INTEGER) AS threads, CAST(repetition AS INTEGER) AS repetition,
           coalesce(CAST(block AS BIGINT), -1) AS block, tps
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
),
iowait AS (
    SELECT run_id, target_id, CASE WHEN variant = '-' THEN '' ELSE variant END AS variant,
           CAST(threads AS INTEGER) AS threads, avg(cpu_iowait_pct) AS iowait_mean_pct
    FROM "${database}"."samples"
    WHERE measure_name = 'sample' AND phase = 'measure'
    GROUP BY run_id, target_id, variant, threads
),
steps AS (
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
           min(time) AS first_time,
           max(margin_pct) AS spec_margin_pct
    FROM "${database}"."step_summaries"
    WHERE measure_name = 'summary' AND phase = 'measure'
    GROUP BY run_id, target_id, variant, threads
),
bases AS (
    SELECT run_id, min(first_time) AS started_at, min(target_id) AS baseline_target,
           min(variant) AS baseline_variant, coalesce(max(spec_margin_pct), CAST(5.0 AS DOUBLE)) AS margin_pct
    FROM steps
    GROUP BY run_id
),
${verdict},
-- Each row with its baseline's figures, and the caveats' parts. A share in % with two decimals from
-- whole hundredths (CAST of a DOUBLE to VARCHAR would read 1.7E0 in this dialect, and it has no DECIMAL).
sided AS (
    SELECT s.*, r.started_at, r.baseline_target, r.baseline_variant, b.tps_mean AS baseline_tps_mean,
           w.lr, w.half, w.design, w.verdict, w.is_baseline, w.margin_pct, io.iowait_mean_pct,
           CAST(round(100 * s.steal_mean_pct) AS BIGINT) AS steal_h, CAST(round(100 * b.steal_mean_pct) AS BIGINT) AS bsteal_h,
           CAST(round(100 * io.iowait_mean_pct) AS BIGINT) AS iowait_h,
           CAST(round(100 * bio.iowait_mean_pct) AS BIGINT) AS biowait_h,
           abs(s.steal_mean_pct - b.steal_mean_pct) >= 1 AS steal_differs,
           abs(io.iowait_mean_pct - bio.iowait_mean_pct) >= 5 AS iowait_differs
    FROM steps s
    JOIN bases r ON r.run_id = s.run_id
    LEFT JOIN worded w ON w.run_id = s.run_id AND w.target_id = s.target_id AND w.variant = s.variant
        AND w.threads = s.threads
    LEFT JOIN steps b ON b.run_id = s.run_id AND b.threads = s.threads AND b.variant = r.baseline_variant
        AND b.target_id = CASE WHEN s.variant <> r.baseline_variant THEN s.target_id ELSE r.baseline_target END
    LEFT JOIN iowait io ON io.run_id = s.run_id AND io.target_id = s.target_id AND io.variant = s.variant
        AND io.threads = s.threads
    LEFT JOIN iowait bio ON bio.run_id = s.run_id AND bio.target_id = b.target_id AND bio.variant = b.variant
        AND bio.threads = s.threads
),
parts AS (
    SELECT sided.*,
           CASE WHEN NOT is_baseline AND steal_differs THEN 'steal '
                || CAST(CAST(floor(steal_h / 100.0) AS BIGINT) AS VARCHAR) || '.' || lpad(CAST(steal_h % 100 AS VARCHAR), 2, '0')
                || '% vs '
                || CAST(CAST(floor(bsteal_h / 100.0) AS BIGINT) AS VARCHAR) || '.' || lpad(CAST(bsteal_h % 100 AS VARCHAR), 2, '0')
                || '%' END AS steal_caveat,
           CASE WHEN NOT is_baseline AND iowait_differs THEN 'iowait '
                || CAST(CAST(floor(iowait_h / 100.0) AS BIGINT) AS VARCHAR) || '.' || lpad(CAST(iowait_h % 100 AS VARCHAR), 2, '0')
                || '% vs '
                || CAST(CAST(floor(biowait_h / 100.0) AS BIGINT) AS VARCHAR) || '.' || lpad(CAST(biowait_h % 100 AS VARCHAR), 2, '0')
                || '%' END AS iowait_caveat
    FROM sided
)
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name,
       started_at, target_id, variant,
       target_id || CASE WHEN variant <> '' THEN ' · ' || variant ELSE '' END AS series,
       CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type,
       CAST(NULL AS VARCHAR) AS engine, CAST(NULL AS VARCHAR) AS region,
       workload, threads, repetitions,
       tps_mean, tps_min, tps_max,
       latency_pct, latency_pct_ms_min, latency_pct_ms_max,
       tps_cv_mean, steal_mean_pct, errors,
       baseline_target, baseline_variant, baseline_tps_mean,
       CASE WHEN lr IS NOT NULL THEN 100 * (exp(lr) - 1) END AS relative_pct,
       CAST(NULL AS DOUBLE) AS price_per_hour,
       CAST(NULL AS DOUBLE) AS cost_per_1000_tps,
       CASE WHEN NOT is_baseline THEN design END AS design,
       CASE WHEN NOT is_baseline AND half IS NOT NULL THEN 100 * (exp(lr - half) - 1) END AS relative_ci_low_pct,
       CASE WHEN NOT is_baseline AND half IS NOT NULL THEN 100 * (exp(lr + half) - 1) END AS relative_ci_high_pct,
       verdict, margin_pct, iowait_mean_pct,
       CASE WHEN steal_caveat IS NOT NULL AND iowait_caveat IS NOT NULL THEN steal_caveat || '; ' || iowait_caveat
            ELSE coalesce(steal_caveat, iowait_caveat) END AS caveats
FROM parts
