-- Dataset "speedup" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- Timestream holds no targets table, so no target has an instance type or a size: no row (the
-- athena store has them). Same columns, in the same order, as sql/athena/speedup.sql.
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name,
       time AS started_at, CAST(NULL AS VARCHAR) AS size_group, target_id,
       CAST(NULL AS VARCHAR) AS baseline_target, CAST(NULL AS DOUBLE) AS vcpus,
       CAST(NULL AS DOUBLE) AS baseline_vcpus, CAST(NULL AS DOUBLE) AS doublings, CAST(threads AS INTEGER) AS threads,
       CAST(NULL AS BIGINT) AS repetitions, CAST(NULL AS DOUBLE) AS speedup, CAST(NULL AS DOUBLE) AS speedup_ci_low,
       CAST(NULL AS DOUBLE) AS speedup_ci_high, CAST(NULL AS DOUBLE) AS per_doubling,
       CAST(NULL AS DOUBLE) AS per_doubling_ci_low, CAST(NULL AS DOUBLE) AS per_doubling_ci_high
FROM "${database}"."step_summaries"
WHERE measure_name = 'summary' AND 1 = 0
