-- Dataset "step results": one row per run x target x variant x threads over the measure steps.
-- Views: throughput and p95 latency vs threads per series (target, or target · variant); relative %
-- vs the baseline.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database, ${t975}
-- and the t_of_df placeholder by the fragments sql/common/t975.sql and t_of_df.sql, the verdict
-- placeholder by sql/common/verdict.sql (the verdict CTEs, shared with the timestream dialect).
-- tests/unit/test_dataset_sql.py runs this file on DuckDB with one documented shim:
-- json_extract_scalar -> json_extract_string (the only function the two dialects name differently).
-- Figures follow benchfleet.stats: tps is sysbench's own step tps, averaged across repetitions (and
-- the blocks of a step split into blocks); the step latency percentile is never averaged (min and max
-- across repetitions are shown); relative_pct = 100 * (mean tps / baseline mean tps - 1) at the same
-- threads (the verdict's own figure: for a paired verdict the geometric mean of the per-unit ratios).
-- Verdict (benchfleet.stats.verdict, issue 29): a variant against its target's baseline variant is
-- paired by repetition (a repetition's log ratio the mean of its blocks'): t interval on the mean log
-- ratio, repetitions - 1 degrees of freedom; anything
-- else is Welch on the log of the ratio of per-repetition means, its t from the fragment t_of_df
-- (sql/common/t_of_df.sql).
-- relative_ci_low_pct/high_pct: the 95% interval; verdict: faster / slower (interval excludes 0),
-- equivalent (inside ±margin_pct, the spec's, 5 by default), inconclusive, too few repetitions (below 3
-- on a side, or no interval), baseline. caveats: what differed between the two sides beyond the
-- thresholds of benchfleet/stats/caveats.py (steal 1 point, iowait 5 points, kernel, engine version
-- of one engine, sysbench version, CPU model of one instance type), with the figures.
-- The baseline of a variant is the same target's baseline variant (measured on the same
-- hosts); that of a target, the baseline target at the baseline variant. The spec's `baseline` names
-- a target or a variant; else the first target and the first variant. variant is '' without variants.
WITH t975 AS (${t975}),
runs AS (
    SELECT run_id, name AS run_name, started_at,
           json_extract_scalar(spec, '$.baseline') AS named,
           json_extract_scalar(spec, '$.targets[0].id') AS first_target,
           coalesce(json_extract_scalar(spec, '$.variants[0].id'), '') AS first_variant,
           coalesce(CAST(json_extract_scalar(spec, '$.margin_pct') AS DOUBLE), 5.0) AS margin_pct
    FROM "${database}"."runs"
),
targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type,
           max(engine) AS engine, max(region) AS region, max(price_per_hour) AS price_per_hour,
           min(kernel) AS kernel_min, max(kernel) AS kernel_max,
           min(engine_version) AS engine_version_min, max(engine_version) AS engine_version_max,
           min(sysbench_version) AS sysbench_min, max(sysbench_version) AS sysbench_max,
           min(cpu_model) AS cpu_model_min, max(cpu_model) AS cpu_model_max
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
),
units AS (
    SELECT run_id, target_id, coalesce(variant, '') AS variant, threads, repetition,
           coalesce(block, -1) AS block, tps
    FROM "${database}"."step_summaries"
    WHERE phase = 'measure'
),
iowait AS (
    SELECT run_id, target_id, coalesce(variant, '') AS variant, threads, avg(cpu_iowait_pct) AS iowait_mean_pct
    FROM "${database}"."samples"
    WHERE phase = 'measure'
    GROUP BY run_id, target_id, coalesce(variant, ''), threads
),
steps AS (
    SELECT run_id, target_id, coalesce(variant, '') AS variant, threads,
           max(workload) AS workload,
           count(DISTINCT repetition) AS repetitions,
           avg(tps) AS tps_mean,
           min(tps) AS tps_min,
           max(tps) AS tps_max,
           max(latency_pct) AS latency_pct,
           min(latency_pct_ms) AS latency_pct_ms_min,
           max(latency_pct_ms) AS latency_pct_ms_max,
           avg(tps_cv) AS tps_cv_mean,
           avg(steal_mean_pct) AS steal_mean_pct,
           sum(errors_per_s * total_time_s) AS errors
    FROM "${database}"."step_summaries"
    WHERE phase = 'measure'
    GROUP BY run_id, target_id, coalesce(variant, ''), threads
),
bases AS (
    SELECT r.run_id, r.run_name, r.started_at, r.margin_pct,
           CASE WHEN r.named IN (SELECT s.target_id FROM steps s WHERE s.run_id = r.run_id)
                THEN r.named ELSE r.first_target END AS baseline_target,
           CASE WHEN r.named IN (SELECT s.variant FROM steps s WHERE s.run_id = r.run_id)
                THEN r.named ELSE r.first_variant END AS baseline_variant
    FROM runs r
),
${verdict}
SELECT s.run_id, r.run_name, r.started_at, s.target_id, s.variant,
       s.target_id || CASE WHEN s.variant <> '' THEN ' · ' || s.variant ELSE '' END AS series,
       t.kind, t.instance_type, t.engine, t.region,
       s.workload, s.threads, s.repetitions,
       s.tps_mean, s.tps_min, s.tps_max,
       s.latency_pct, s.latency_pct_ms_min, s.latency_pct_ms_max,
       s.tps_cv_mean, s.steal_mean_pct, s.errors,
       r.baseline_target, r.baseline_variant,
       b.tps_mean AS baseline_tps_mean,
       CASE WHEN w.lr IS NOT NULL THEN 100 * (exp(w.lr) - 1) END AS relative_pct,
       t.price_per_hour,
       CASE WHEN s.tps_mean > 0 THEN t.price_per_hour * 1000 / s.tps_mean END AS cost_per_1000_tps,
       CASE WHEN NOT w.is_baseline THEN w.design END AS design,
       CASE WHEN NOT w.is_baseline AND w.half IS NOT NULL THEN 100 * (exp(w.lr - w.half) - 1) END
           AS relative_ci_low_pct,
       CASE WHEN NOT w.is_baseline AND w.half IS NOT NULL THEN 100 * (exp(w.lr + w.half) - 1) END
           AS relative_ci_high_pct,
       w.verdict, w.margin_pct, io.iowait_mean_pct,
       CASE WHEN NOT w.is_baseline THEN nullif(concat_ws('; ',
           CASE WHEN abs(s.steal_mean_pct - b.steal_mean_pct) >= 1 THEN 'steal '
                || CAST(CAST(round(s.steal_mean_pct, 2) AS DECIMAL(12, 2)) AS VARCHAR) || '% vs '
                || CAST(CAST(round(b.steal_mean_pct, 2) AS DECIMAL(12, 2)) AS VARCHAR) || '%' END,
           CASE WHEN abs(io.iowait_mean_pct - bio.iowait_mean_pct) >= 5 THEN 'iowait '
                || CAST(CAST(round(io.iowait_mean_pct, 2) AS DECIMAL(12, 2)) AS VARCHAR) || '% vs '
                || CAST(CAST(round(bio.iowait_mean_pct, 2) AS DECIMAL(12, 2)) AS VARCHAR) || '%' END,
           CASE WHEN t.kernel_min <> bt.kernel_min OR t.kernel_max <> bt.kernel_max
                THEN 'kernel ' || t.kernel_max || ' vs ' || bt.kernel_max END,
           CASE WHEN t.engine = bt.engine AND (t.engine_version_min <> bt.engine_version_min
                                               OR t.engine_version_max <> bt.engine_version_max)
                THEN 'engine version ' || t.engine_version_max || ' vs ' || bt.engine_version_max END,
           CASE WHEN t.sysbench_min <> bt.sysbench_min OR t.sysbench_max <> bt.sysbench_max
                THEN 'sysbench ' || t.sysbench_max || ' vs ' || bt.sysbench_max END,
           CASE WHEN coalesce(t.instance_type, '') = coalesce(bt.instance_type, '')
                     AND (t.cpu_model_min <> bt.cpu_model_min OR t.cpu_model_max <> bt.cpu_model_max)
                THEN 'CPU model ' || t.cpu_model_max || ' vs ' || bt.cpu_model_max END), '') END AS caveats
FROM steps s
LEFT JOIN bases r ON r.run_id = s.run_id
LEFT JOIN targets t ON t.run_id = s.run_id AND t.target_id = s.target_id
LEFT JOIN worded w ON w.run_id = s.run_id AND w.target_id = s.target_id AND w.variant = s.variant
    AND w.threads = s.threads
LEFT JOIN steps b ON b.run_id = s.run_id AND b.threads = s.threads AND b.variant = r.baseline_variant
    AND b.target_id = CASE WHEN s.variant <> r.baseline_variant THEN s.target_id ELSE r.baseline_target END
LEFT JOIN targets bt ON bt.run_id = s.run_id AND bt.target_id = b.target_id
LEFT JOIN iowait io ON io.run_id = s.run_id AND io.target_id = s.target_id AND io.variant = s.variant
    AND io.threads = s.threads
LEFT JOIN iowait bio ON bio.run_id = s.run_id AND bio.target_id = b.target_id AND bio.variant = b.variant
    AND bio.threads = s.threads
