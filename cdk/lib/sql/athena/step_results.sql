-- Dataset "step results": one row per run x target x variant x threads over the measure steps.
-- Views: throughput and p95 latency vs threads per series (target, or target · variant); relative %
-- vs the baseline.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database.
-- tests/unit/test_dataset_sql.py runs this file on DuckDB with one documented shim:
-- json_extract_scalar -> json_extract_string (the only function the two dialects name differently).
-- Figures follow benchfleet.stats: tps is sysbench's own step tps, averaged across repetitions (and
-- the blocks of a step split into blocks); the step latency percentile is never averaged (min and max
-- across repetitions are shown); relative_pct = 100 * (mean tps / baseline mean tps - 1) at the same
-- threads. The baseline of a variant is the same target's baseline variant (measured on the same
-- hosts); that of a target, the baseline target at the baseline variant. The spec's `baseline` names
-- a target or a variant; else the first target and the first variant. variant is '' without variants.
WITH runs AS (
    SELECT run_id, name AS run_name, started_at,
           json_extract_scalar(spec, '$.baseline') AS named,
           json_extract_scalar(spec, '$.targets[0].id') AS first_target,
           coalesce(json_extract_scalar(spec, '$.variants[0].id'), '') AS first_variant
    FROM "${database}"."runs"
),
targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type,
           max(engine) AS engine, max(region) AS region, max(price_per_hour) AS price_per_hour
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
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
    SELECT r.run_id, r.run_name, r.started_at,
           CASE WHEN r.named IN (SELECT s.target_id FROM steps s WHERE s.run_id = r.run_id)
                THEN r.named ELSE r.first_target END AS baseline_target,
           CASE WHEN r.named IN (SELECT s.variant FROM steps s WHERE s.run_id = r.run_id)
                THEN r.named ELSE r.first_variant END AS baseline_variant
    FROM runs r
)
SELECT s.run_id, r.run_name, r.started_at, s.target_id, s.variant,
       s.target_id || CASE WHEN s.variant <> '' THEN ' · ' || s.variant ELSE '' END AS series,
       t.kind, t.instance_type, t.engine, t.region,
       s.workload, s.threads, s.repetitions,
       s.tps_mean, s.tps_min, s.tps_max,
       s.latency_pct, s.latency_pct_ms_min, s.latency_pct_ms_max,
       s.tps_cv_mean, s.steal_mean_pct, s.errors,
       r.baseline_target, r.baseline_variant,
       b.tps_mean AS baseline_tps_mean,
       CASE WHEN b.tps_mean > 0 THEN 100 * (s.tps_mean / b.tps_mean - 1) END AS relative_pct,
       t.price_per_hour,
       CASE WHEN s.tps_mean > 0 THEN t.price_per_hour * 1000 / s.tps_mean END AS cost_per_1000_tps
FROM steps s
LEFT JOIN bases r ON r.run_id = s.run_id
LEFT JOIN targets t ON t.run_id = s.run_id AND t.target_id = s.target_id
LEFT JOIN steps b ON b.run_id = s.run_id AND b.threads = s.threads AND b.variant = r.baseline_variant
    AND b.target_id = CASE WHEN s.variant <> r.baseline_variant THEN s.target_id ELSE r.baseline_target END
