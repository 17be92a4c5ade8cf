-- Dataset "cloud metrics": CloudWatch figures collected for each target's run window.
-- View: Aurora write latency over time (CommitLatency, DMLLatency, and RDS WriteLatency converted to
-- ms by collect), plus CPU steal from CWAgent and burst credits.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database.
-- Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py).
WITH targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
)
SELECT m.run_id, r.name AS run_name, m.target_id, t.kind, t.instance_type, m.time,
       date_diff('second', min(m.time) OVER (PARTITION BY m.run_id, m.target_id), m.time) AS elapsed_s,
       m.metric, m.value, m.unit
FROM "${database}"."cloud_metrics" m
LEFT JOIN "${database}"."runs" r ON r.run_id = m.run_id
LEFT JOIN targets t ON t.run_id = m.run_id AND t.target_id = m.target_id
