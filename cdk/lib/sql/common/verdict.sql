-- Fragment ${verdict} of the step results datasets (substituted at synth by cdk/lib/dashboards.ts, and by
-- tests/unit/test_dataset_sql.py, before the t_of_df and t975 placeholders): the verdict of every row
-- against its baseline as benchfleet.stats.verdict gives it, the CTEs reps, spread, against, paired_reps, paired,
-- needs_t, t, verdicts and worded. The query defines before it: steps (run_id, target_id, variant,
-- threads), units (run_id, target_id, variant, threads, repetition, block, tps: a measured step or
-- block), t975, and bases (run_id, baseline_target, baseline_variant, margin_pct). A variant against
-- its target's baseline variant is paired by repetition: each repetition's log ratio is the mean of its
-- blocks' (blocks of one repetition share its server and moment: not independent pairs, issue 37), t
-- interval on the mean over repetitions, repetitions - 1 degrees of freedom; anything else is Welch on
-- the log of the ratio of per-repetition means.
-- Per-repetition means (of a step split into blocks, over its blocks), and their spread.
reps AS (
    SELECT run_id, target_id, variant, threads, repetition, avg(tps) AS tps
    FROM units GROUP BY run_id, target_id, variant, threads, repetition
),
spread AS (
    SELECT run_id, target_id, variant, threads, count(*) AS n, avg(tps) AS m, var_samp(tps) AS v
    FROM reps GROUP BY run_id, target_id, variant, threads
),
-- Each row with the row its verdict is against: a variant, its target at the baseline variant; a
-- target, the baseline target at the baseline variant.
against AS (
    SELECT s.run_id, s.target_id, s.variant, s.threads, r.baseline_variant, r.margin_pct,
           CASE WHEN s.variant <> r.baseline_variant THEN s.target_id ELSE r.baseline_target END AS vs_target,
           s.variant <> r.baseline_variant AS paired
    FROM steps s JOIN bases r ON r.run_id = s.run_id
),
paired_reps AS (
    SELECT a.run_id, a.target_id, a.variant, a.threads, c.repetition, avg(ln(c.tps / b.tps)) AS d
    FROM against a
    JOIN units c ON c.run_id = a.run_id AND c.target_id = a.target_id AND c.variant = a.variant
        AND c.threads = a.threads
    JOIN units b ON b.run_id = a.run_id AND b.target_id = a.vs_target AND b.variant = a.baseline_variant
        AND b.threads = a.threads AND b.repetition = c.repetition AND b.block = c.block
    WHERE a.paired AND c.tps > 0 AND b.tps > 0
    GROUP BY a.run_id, a.target_id, a.variant, a.threads, c.repetition
),
paired AS (
    SELECT run_id, target_id, variant, threads, count(*) AS n, avg(d) AS md, var_samp(d) AS vd
    FROM paired_reps
    GROUP BY run_id, target_id, variant, threads
),
-- One log ratio, its squared standard error, degrees of freedom and the repetitions (or pairs) of the
-- smaller side, per design.
needs_t AS (
    SELECT a.run_id, a.target_id, a.variant, a.threads, a.margin_pct, a.vs_target, a.baseline_variant,
           CASE WHEN a.paired THEN 'paired' ELSE 'welch' END AS design,
           CASE WHEN a.paired THEN p.md WHEN c.m > 0 AND b.m > 0 THEN ln(c.m / b.m) END AS lr,
           CASE WHEN a.paired THEN CASE WHEN p.n >= 2 THEN p.vd / p.n END
                WHEN c.n >= 2 AND b.n >= 2 AND c.m > 0 AND b.m > 0
                THEN c.v / (c.m * c.m * c.n) + b.v / (b.m * b.m * b.n) END AS se2,
           CASE WHEN a.paired THEN CAST(p.n - 1 AS DOUBLE)
                WHEN c.n >= 2 AND b.n >= 2 AND c.v + b.v > 0
                THEN power(c.v / (c.m * c.m * c.n) + b.v / (b.m * b.m * b.n), 2)
                     / (power(c.v / (c.m * c.m * c.n), 2) / (c.n - 1) + power(b.v / (b.m * b.m * b.n), 2) / (b.n - 1))
           END AS df,
           CASE WHEN a.paired THEN p.n ELSE least(c.n, b.n) END AS n_min,
           a.target_id = a.vs_target AND a.variant = a.baseline_variant AS is_baseline
    FROM against a
    LEFT JOIN paired p ON p.run_id = a.run_id AND p.target_id = a.target_id AND p.variant = a.variant
        AND p.threads = a.threads
    LEFT JOIN spread c ON c.run_id = a.run_id AND c.target_id = a.target_id AND c.variant = a.variant
        AND c.threads = a.threads
    LEFT JOIN spread b ON b.run_id = a.run_id AND b.target_id = a.vs_target AND b.variant = a.baseline_variant
        AND b.threads = a.threads
),
t AS (${t_of_df}),
verdicts AS (
    SELECT t.*, CASE WHEN t.se2 = 0 THEN 0.0 WHEN t.se2 > 0 AND t.t IS NOT NULL THEN t.t * sqrt(t.se2) END AS half
    FROM t
),
worded AS (
    SELECT v.*,
           CASE WHEN v.is_baseline THEN 'baseline'
                WHEN v.lr IS NULL THEN 'insufficient data'
                WHEN v.half IS NULL THEN 'too few repetitions'
                WHEN v.lr - v.half > 0 THEN 'faster'
                WHEN v.lr + v.half < 0 THEN 'slower'
                WHEN v.n_min < 3 THEN 'too few repetitions'
                WHEN ln(1 - v.margin_pct / 100) <= v.lr - v.half AND v.lr + v.half <= ln(1 + v.margin_pct / 100)
                THEN 'equivalent'
                ELSE 'inconclusive' END AS verdict
    FROM verdicts v
)
