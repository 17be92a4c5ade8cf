-- Fragment ${t_of_df} of the dataset SQL (substituted at synth by cdk/lib/dashboards.ts, and by
-- tests/unit/test_dataset_sql.py, after ${t975}): every row of the query's CTE `needs_t` (which has a
-- column df, degrees of freedom, possibly fractional as Welch's are) with t, Student t's 97.5th
-- percentile at df: the table's value at whole df (1 below 1), log t linear in 1/df between two whole
-- ones (within 3% of benchfleet's exact t), 1.96 + 2.4 / df above 30; NULL without df.
SELECT n.*, CASE
           WHEN n.df IS NULL THEN NULL
           WHEN n.df > 30 THEN 1.96 + 2.4 / n.df
           WHEN n.df = floor(n.df) OR n.df < 1 THEN lo.t975
           ELSE exp(ln(lo.t975) + (ln(hi.t975) - ln(lo.t975)) * (1 / CAST(lo.df AS DOUBLE) - 1 / n.df)
                    / (1 / CAST(lo.df AS DOUBLE) - 1 / CAST(hi.df AS DOUBLE)))
       END AS t
FROM needs_t n
LEFT JOIN t975 lo ON lo.df = greatest(1, CAST(floor(n.df) AS INTEGER))
LEFT JOIN t975 hi ON hi.df = greatest(1, CAST(floor(n.df) AS INTEGER)) + 1
