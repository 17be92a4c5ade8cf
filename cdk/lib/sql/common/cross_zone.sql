-- Fragment ${cross_zone} of the target costs datasets (substituted at synth by cdk/lib/dashboards.ts, and
-- by tests/unit/test_dataset_sql.py): a cluster's traffic across availability zones per run x target x
-- threads, as benchfleet.stats.cost.cross_zone_bytes_per_s models it, the CTEs cross_steps and
-- cross_zone. The query defines before it: node_rates (run_id, target_id, threads, repetition, step,
-- source, counter, rate: each node's mean rate per second of wsrep_replicated_bytes, Bytes_sent and
-- Bytes_received over a measured step, sources n1... only). Per step: every write-set goes from its
-- node to each other node (replicated bytes x (nodes - 1)), and the SQL traffic of every node but n1
-- (the client host's zone) crosses both ways; a step where a node lacks its replicated bytes says
-- nothing. Then the mean over steps, as GB of 2^30 bytes per hour.
cross_steps AS (
    SELECT run_id, target_id, threads,
           sum(CASE WHEN counter = 'wsrep_replicated_bytes' THEN rate ELSE 0 END) * (count(DISTINCT source) - 1)
           + sum(CASE WHEN counter <> 'wsrep_replicated_bytes' AND source <> 'n1' THEN rate ELSE 0 END)
               AS bytes_per_s
    FROM node_rates
    GROUP BY run_id, target_id, threads, repetition, step
    HAVING count(DISTINCT source) = count(DISTINCT CASE WHEN counter = 'wsrep_replicated_bytes' THEN source END)
),
cross_zone AS (
    SELECT run_id, target_id, threads, avg(bytes_per_s) * 3600 / 1073741824.0 AS gb_per_hour
    FROM cross_steps
    GROUP BY run_id, target_id, threads
)
