-- Dataset "target costs": one row per run x target x threads x pricing model. View: cost per 1000 TPS
-- by pricing model with its 95% interval, at every thread count (never only at the best of noisy
-- means); also what the model's price is, per hour.
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database, ${t975}
-- by sql/common/t975.sql. Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py), which checks
-- every figure against benchfleet.stats.
-- price_per_hour: the database's price per hour under the model (instance, storage, provisioned IOPS
-- and throughput; client hosts are counted for no kind), from the `prices` each targets row records
-- (benchfleet.cost.pricing.recorded_prices; spot and some reservations can be absent: no row then).
-- A cluster's price_per_hour also counts its cross-zone traffic at that thread count
-- (cross_zone_gb_per_hour: the fragment sql/common/cross_zone.sql, over each node's mean
-- rates per measured step; cross_zone_usd_per_hour = GB/h x 2 (billed each way) x the recorded $/GB). Null for any other kind, and for a local cluster (free: `results`
-- shows what its traffic would cost).
-- tps_ci_*: Student-t interval of the mean of the repetitions' step tps on the log scale
-- (benchfleet.stats.mean_ci); cost_* = price_per_hour * 1000 / tps, the interval carried through.
WITH t975 AS (${t975}),
models AS (
    SELECT pricing_model FROM (VALUES ('on_demand'), ('reserved_1y_no_upfront'), ('reserved_1y_partial_upfront'),
        ('reserved_1y_all_upfront'), ('reserved_3y_no_upfront'), ('reserved_3y_partial_upfront'),
        ('reserved_3y_all_upfront'), ('spot')) AS m(pricing_model)
),
targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type,
           max(vcpus) AS vcpus, max(memory_mb) AS memory_mb, max(arch) AS arch,
           max(CAST(prices AS VARCHAR)) AS prices
    FROM "${database}"."targets"
    GROUP BY run_id, target_id
),
by_threads AS (
    SELECT run_id, target_id, threads, avg(tps) AS tps_mean, stddev_samp(tps) AS tps_sd,
           count(*) AS repetitions
    FROM "${database}"."step_summaries"
    WHERE phase = 'measure'
    GROUP BY run_id, target_id, threads
),
with_ci AS (
    SELECT b.*, CASE WHEN b.repetitions >= 2 AND b.tps_mean > 0 THEN
               coalesce(q.t975, 1.96 + 2.4 / (b.repetitions - 1)) * b.tps_sd / (b.tps_mean * sqrt(b.repetitions))
           END AS half
    FROM by_threads b LEFT JOIN t975 q ON q.df = b.repetitions - 1
),
node_rates AS (
    SELECT run_id, target_id, threads, repetition, step, source, counter, avg(rate) AS rate
    FROM "${database}"."status_samples"
    WHERE phase = 'measure' AND second > 0 AND rate IS NOT NULL AND source LIKE 'n%' AND source NOT LIKE '%/%'
      AND counter IN ('wsrep_replicated_bytes', 'Bytes_sent', 'Bytes_received')
    GROUP BY run_id, target_id, threads, repetition, step, source, counter
),
${cross_zone},
priced AS (
    SELECT k.*, m.pricing_model, t.kind, t.instance_type, t.vcpus, t.memory_mb, t.arch,
           CASE WHEN t.kind = 'cluster' THEN c.gb_per_hour END AS cross_zone_gb_per_hour,
           CASE WHEN t.kind = 'cluster' THEN c.gb_per_hour * 2
               * CAST(json_extract_scalar(t.prices, '$.cross_zone_usd_per_gb_each_way') AS DOUBLE)
           END AS cross_zone_usd_per_hour,
           CAST(CASE m.pricing_model
               WHEN 'on_demand' THEN json_extract_scalar(t.prices, '$.serving.on_demand')
               WHEN 'reserved_1y_no_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_1y_no_upfront')
               WHEN 'reserved_1y_partial_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_1y_partial_upfront')
               WHEN 'reserved_1y_all_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_1y_all_upfront')
               WHEN 'reserved_3y_no_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_3y_no_upfront')
               WHEN 'reserved_3y_partial_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_3y_partial_upfront')
               WHEN 'reserved_3y_all_upfront' THEN json_extract_scalar(t.prices, '$.serving.reserved_3y_all_upfront')
               WHEN 'spot' THEN json_extract_scalar(t.prices, '$.serving.spot')
           END AS DOUBLE) AS serving_per_hour
    FROM with_ci k
    CROSS JOIN models m
    LEFT JOIN targets t ON t.run_id = k.run_id AND t.target_id = k.target_id
    LEFT JOIN cross_zone c ON c.run_id = k.run_id AND c.target_id = k.target_id AND c.threads = k.threads
),
with_traffic AS (
    SELECT p.*, p.serving_per_hour + coalesce(p.cross_zone_usd_per_hour, 0) AS price_per_hour
    FROM priced p
)
SELECT p.run_id, r.name AS run_name, r.started_at, p.target_id, p.kind, p.instance_type, p.vcpus, p.memory_mb,
       p.arch, p.threads, p.repetitions, p.tps_mean,
       p.tps_mean * exp(-p.half) AS tps_ci_low, p.tps_mean * exp(p.half) AS tps_ci_high,
       p.pricing_model, p.price_per_hour,
       CASE WHEN p.tps_mean > 0 AND p.price_per_hour > 0 THEN p.price_per_hour * 1000 / p.tps_mean END
           AS cost_per_1000_tps,
       CASE WHEN p.tps_mean > 0 AND p.price_per_hour > 0 THEN p.price_per_hour * 1000 / (p.tps_mean * exp(p.half)) END
           AS cost_ci_low,
       CASE WHEN p.tps_mean > 0 AND p.price_per_hour > 0 THEN p.price_per_hour * 1000 / (p.tps_mean * exp(-p.half)) END
           AS cost_ci_high,
       CASE WHEN p.price_per_hour > 0 THEN p.tps_mean * 3600 / p.price_per_hour END AS transactions_per_usd,
       p.cross_zone_gb_per_hour, p.cross_zone_usd_per_hour
FROM with_traffic p
LEFT JOIN "${database}"."runs" r ON r.run_id = p.run_id
-- An unpriced target keeps its on-demand row (its cost null, never zero); a model the tables lack
-- for a target (spot, a reservation) has no row.
WHERE p.price_per_hour IS NOT NULL OR p.pricing_model = 'on_demand'
