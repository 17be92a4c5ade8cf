-- Fragment ${t975} of the dataset SQL (substituted at synth by cdk/lib/dashboards.ts, and by
-- tests/unit/test_dataset_sql.py): Student t's 97.5th percentile by degrees of freedom, for 95%
-- intervals, as benchfleet.stats.tdist.t_quantile gives it (tests/unit/test_dataset_sql.py checks
-- every value). Above 30 degrees of freedom a dataset uses 1.96 + 2.4 / df, within 0.002 of t.
SELECT df, t975 FROM (VALUES (1, 12.706205), (2, 4.302653), (3, 3.182446), (4, 2.776445), (5, 2.570582), (6, 2.446912), (7, 2.364624), (8, 2.306004), (9, 2.262157), (10, 2.228139), (11, 2.200985), (12, 2.178813), (13, 2.160369), (14, 2.144787), (15, 2.131450), (16, 2.119905), (17, 2.109816), (18, 2.100922), (19, 2.093024), (20, 2.085963), (21, 2.079614), (22, 2.073873), (23, 2.068658), (24, 2.063899), (25, 2.059539), (26, 2.055529), (27, 2.051831), (28, 2.048407), (29, 2.045230), (30, 2.042272)) AS t(df, t975)
