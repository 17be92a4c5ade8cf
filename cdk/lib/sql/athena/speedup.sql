-- Dataset "speedup": one row per run x size group x target x threads. View: the speedup from the
-- smallest size of a family to each larger one, per thread count, with its 95% interval, and the
-- efficiency per doubling of vCPUs (benchfleet.stats.speedup_table).
-- Dialect: Athena engine v3 (Trino). ${database} is replaced at synth by the Glue database, ${t975}
-- by sql/common/t975.sql. Runs unchanged on DuckDB (tests/unit/test_dataset_sql.py).
-- size_group: kind:family:engine:mysql_config:storage type (targets that differ only in size); size:
-- the host's vCPUs, else the size name's (large 2, xlarge 4, Nxlarge 4N). A group needs two sizes.
-- speedup = mean tps / the smallest size's mean tps at the same threads; interval: Welch on the log
-- ratio, its t interpolated (log t linear in 1/df) between the table's whole degrees of freedom
-- (the fragment t_of_df, sql/common/t_of_df.sql), within 3% of benchfleet's exact t;
-- per_doubling = speedup ^ (1 / log2(size / smallest size)).
WITH t975 AS (${t975}),
targets AS (
    SELECT run_id, target_id, max(kind) AS kind, max(instance_type) AS instance_type, max(engine) AS engine,
           max(mysql_config) AS mysql_config, max(storage) AS storage, max(vcpus) AS vcpus
    FROM "${database}"."targets"
    WHERE kind IN ('ec2', 'rds', 'aurora', 'existing')
    GROUP BY run_id, target_id
),
named AS (
    SELECT run_id, target_id, instance_type, vcpus, kind, engine, mysql_config,
           regexp_replace(instance_type, '\.[^.]*$', '') AS family,
           CASE WHEN storage LIKE '{%' THEN json_extract_scalar(storage, '$.type')
                ELSE split_part(storage, ':', 1) END AS storage_type
    FROM targets
    WHERE instance_type IS NOT NULL
),
sized AS (
    SELECT run_id, target_id,
           rtrim(kind || ':' || family || ':' || coalesce(engine, '') || ':' || coalesce(mysql_config, '') || ':'
                 || coalesce(storage_type, ''), ':') AS size_group,
           CAST(coalesce(vcpus, CASE
               WHEN family LIKE 't%' OR family LIKE 'db.t%' THEN NULL
               WHEN instance_type LIKE '%.medium' THEN 1
               WHEN instance_type LIKE '%.large' THEN 2
               WHEN instance_type LIKE '%.xlarge' THEN 4
               ELSE 4 * CAST(NULLIF(regexp_extract(instance_type, '\.([0-9]+)xlarge$', 1), '') AS INTEGER)
           END) AS DOUBLE) AS size
    FROM named
),
-- (Trino has no DISTINCT in window functions: the sizes per group are an aggregate of their own.)
group_sizes AS (
    SELECT run_id, size_group, count(DISTINCT size) AS sizes FROM sized WHERE size IS NOT NULL
    GROUP BY run_id, size_group
),
grouped AS (
    SELECT s.*, n.sizes,
           row_number() OVER (PARTITION BY s.run_id, s.size_group ORDER BY s.size, s.target_id) AS rank_in_group
    FROM sized s JOIN group_sizes n ON n.run_id = s.run_id AND n.size_group = s.size_group
    WHERE s.size IS NOT NULL
),
steps AS (
    SELECT run_id, target_id, threads, count(*) AS n, avg(tps) AS m, var_samp(tps) AS v
    FROM "${database}"."step_summaries"
    WHERE phase = 'measure'
    GROUP BY run_id, target_id, threads
),
pairs AS (
    SELECT g.run_id, g.size_group, g.target_id, b.target_id AS baseline_target, g.size AS vcpus,
           b.size AS baseline_vcpus, log2(g.size / b.size) AS doublings, c.threads, c.n AS repetitions,
           c.m / bs.m AS speedup,
           CASE WHEN g.target_id <> b.target_id AND c.n >= 2 AND bs.n >= 2 THEN
               c.v / (c.m * c.m * c.n) + bs.v / (bs.m * bs.m * bs.n) END AS se2,
           CASE WHEN g.target_id <> b.target_id AND c.n >= 2 AND bs.n >= 2 THEN
               c.v / (c.m * c.m * c.n) END AS vc,
           CASE WHEN g.target_id <> b.target_id AND c.n >= 2 AND bs.n >= 2 THEN
               bs.v / (bs.m * bs.m * bs.n) END AS vb,
           c.n AS nc, bs.n AS nb
    FROM grouped g
    JOIN grouped b ON b.run_id = g.run_id AND b.size_group = g.size_group AND b.rank_in_group = 1
    JOIN steps c ON c.run_id = g.run_id AND c.target_id = g.target_id
    JOIN steps bs ON bs.run_id = b.run_id AND bs.target_id = b.target_id AND bs.threads = c.threads
    WHERE g.sizes >= 2 AND bs.m > 0 AND c.m > 0
),
needs_t AS (
    SELECT p.*, CASE WHEN p.se2 > 0 THEN
               p.se2 * p.se2 / (p.vc * p.vc / (p.nc - 1) + p.vb * p.vb / (p.nb - 1)) END AS df
    FROM pairs p
),
t AS (${t_of_df}),
bounded AS (
    SELECT t.*, CASE WHEN t.se2 = 0 THEN t.speedup WHEN t.se2 > 0 THEN t.speedup * exp(-t.t * sqrt(t.se2))
                END AS ci_low,
                CASE WHEN t.se2 = 0 THEN t.speedup WHEN t.se2 > 0 THEN t.speedup * exp(t.t * sqrt(t.se2))
                END AS ci_high
    FROM t
)
SELECT b.run_id, r.name AS run_name, r.started_at, b.size_group, b.target_id, b.baseline_target, b.vcpus,
       b.baseline_vcpus, b.doublings, b.threads, b.repetitions, b.speedup,
       b.ci_low AS speedup_ci_low, b.ci_high AS speedup_ci_high,
       CASE WHEN b.doublings > 0 THEN power(b.speedup, 1 / b.doublings) END AS per_doubling,
       CASE WHEN b.doublings > 0 AND b.ci_low > 0 THEN power(b.ci_low, 1 / b.doublings) END AS per_doubling_ci_low,
       CASE WHEN b.doublings > 0 AND b.ci_high > 0 THEN power(b.ci_high, 1 / b.doublings) END AS per_doubling_ci_high
FROM bounded b
LEFT JOIN "${database}"."runs" r ON r.run_id = b.run_id
