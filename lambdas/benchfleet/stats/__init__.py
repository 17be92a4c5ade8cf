"""Aggregation across seconds and repetitions: the figures users defend in front of stakeholders.

Pure Python and the standard library only (Lambdas import this module). Conventions:

- A **step** is one thread count of one repetition of one target. Its per-second samples of the
  ``measure`` phase give the per-step figures (warm-up never counts).
- Across **repetitions** (each on its own host where the kind allows) a mean-like figure (tps) is
  reported as mean, min, max and a Student-t confidence interval of the mean on the log scale (it
  never goes below 0); a **percentile** is never averaged: it is reported as the range of the
  per-repetition percentiles, and their median where that is one repetition's figure (odd counts).
- A percentile of a series uses linear interpolation between closest ranks (Hyndman & Fan type 7,
  the same as DuckDB's ``quantile_cont``), so SQL and Python give the same numbers.
- Relative differences are verdicts (:mod:`benchfleet.stats.verdict`): paired by unit (repetition or
  round; the blocks of a repetition averaged within it, never units of their own) where both sides
  were measured together, Welch on the log of the ratio of means
  where they ran apart; the words say "inconclusive (±x%)" or "equivalent within ±m%" rather than
  "no difference", and "too few repetitions" (with how many would decide) below MIN_REPETITIONS.
"""

from benchfleet.cost.run_prices import spec_target_price
from benchfleet.stats.cost import (
    cost_per_1000_tps,
    speedup_table,
    target_group_and_size,
    transactions_per_usd,
    vcpus_from_size,
)
from benchfleet.stats.figures import cv, mean_ci, mean_spread, percentile, percentile_spread, step_stats
from benchfleet.stats.run import (
    NOTES,
    QueryStore,
    comparison,
    comparison_table,
    run_comparison,
    step_stats_from_samples,
)
from benchfleet.stats.step_sql import step_stats_in_store
from benchfleet.stats.tdist import regularized_beta, t_quantile
from benchfleet.stats.verdict import (
    CONFIDENCE,
    DEFAULT_MARGIN_PCT,
    MIN_REPETITIONS,
    Relative,
    Verdict,
    multiplicity,
    paired_difference,
    relative_difference,
    repetitions_needed,
)

__all__ = [
    "CONFIDENCE",
    "DEFAULT_MARGIN_PCT",
    "MIN_REPETITIONS",
    "NOTES",
    "QueryStore",
    "Relative",
    "Verdict",
    "comparison",
    "comparison_table",
    "cost_per_1000_tps",
    "cv",
    "mean_ci",
    "mean_spread",
    "multiplicity",
    "paired_difference",
    "percentile",
    "percentile_spread",
    "regularized_beta",
    "relative_difference",
    "repetitions_needed",
    "run_comparison",
    "spec_target_price",
    "speedup_table",
    "step_stats",
    "step_stats_from_samples",
    "step_stats_in_store",
    "t_quantile",
    "target_group_and_size",
    "transactions_per_usd",
    "vcpus_from_size",
]
