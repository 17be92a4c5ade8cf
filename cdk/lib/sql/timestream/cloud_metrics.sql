-- Dataset "cloud metrics" on Timestream for LiveAnalytics (resultsStore=timestream).
-- Dialect: Timestream query language. ${database} is replaced at synth by the Timestream database.
-- The record's measure_name is the CloudWatch metric (WriteLatency in ms, CommitLatency, ...), with
-- measures value and unit. kind and instance_type are null (no target metadata here).
-- Same columns, in the same order, as sql/athena/cloud_metrics.sql (sql/datasets.json).
SELECT run_id, regexp_replace(run_id, '-[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$', '') AS run_name, target_id,
       CAST(NULL AS VARCHAR) AS kind, CAST(NULL AS VARCHAR) AS instance_type, time,
       date_diff('second', min(time) OVER (PARTITION BY run_id, target_id), time) AS elapsed_s,
       measure_name AS metric, value, unit
FROM "${database}"."cloud_metrics"
