-- Dataset "target costs": one row per run x target at its peak (the thread count with the highest
-- mean tps across repetitions). View: cost per 1000 TPS.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database.
-- Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py).
-- cost_per_1000_tps = price_per_hour / (peak mean tps / 1000): USD per hour for each 1000 TPS
-- sustained (benchfleet.stats.cost_per_1000_tps); price_per_hour is the on-demand list price of the
-- target plus its client and storage, recorded with the target.
WITH targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type,
           max(vcpus) AS vcpus, max(memory_mb) AS memory_mb, max(arch) AS arch,
           max(price_per_hour) AS price_per_hour
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
),
by_threads AS (
    SELECT run_id, target_id, threads, avg(tps) AS tps_mean, count(*) AS repetitions
    FROM "${database}"."step_summaries"
    WHERE phase = 'measure'
    GROUP BY run_id, target_id, threads
),
ranked AS (
    SELECT run_id, target_id, threads, tps_mean, repetitions,
           row_number() OVER (PARTITION BY run_id, target_id ORDER BY tps_mean DESC, threads) AS rank_in_target
    FROM by_threads
)
SELECT k.run_id, r.name AS run_name, r.started_at, k.target_id, t.kind, t.instance_type, t.vcpus,
       t.memory_mb, t.arch,
       k.threads AS peak_threads, k.tps_mean AS peak_tps_mean, k.repetitions,
       t.price_per_hour,
       CASE WHEN k.tps_mean > 0 THEN t.price_per_hour * 1000 / k.tps_mean END AS cost_per_1000_tps,
       CASE WHEN t.price_per_hour > 0 THEN k.tps_mean * 3600 / t.price_per_hour END AS transactions_per_usd
FROM ranked k
LEFT JOIN "${database}"."runs" r ON r.run_id = k.run_id
LEFT JOIN targets t ON t.run_id = k.run_id AND t.target_id = k.target_id
WHERE k.rank_in_target = 1
