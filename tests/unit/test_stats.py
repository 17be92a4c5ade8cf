"""benchfleet.stats on hand-computed cases: t quantiles, CI, Welch relative difference and verdicts,
CV, percentiles (never averaged), cost per 1000 TPS, speedup, and a whole run from a DuckDB store."""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchfleet import stats
from benchfleet.local.store import DuckDBStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from synthetic import TARGETS, fill_store

# ---- Student's t ----------------------------------------------------------------------------------

# Two-sided 95 % critical values from any printed t table.
@pytest.mark.parametrize(("df", "expected"), [
    (1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (5, 2.5706), (9, 2.2622), (10, 2.2281),
    (20, 2.0860), (30, 2.0423), (60, 2.0003), (120, 1.9799), (1000, 1.9623), (10**7, 1.9600)])
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=5e-5)


def test_t_quantile_other_levels_and_symmetry() -> None:
    assert stats.t_quantile(0.995, 5) == pytest.approx(4.0321, abs=5e-5)
    assert stats.t_quantile(0.95, 10) == pytest.approx(1.8125, abs=5e-5)
    assert stats.t_quantile(0.025, 3) == pytest.approx(-stats.t_quantile(0.975, 3))
    assert stats.t_quantile(0.5, 7) == 0


def test_t_quantile_non_integer_df() -> None:
    # By numerical integration of the t density: non-integer df (Welch) goes through I_x(nu/2, 1/2).
    assert stats.t_quantile(0.975, 2.5) == pytest.approx(3.574655, abs=1e-5)
    assert stats.t_quantile(0.975, 1.5) == pytest.approx(6.016663, abs=1e-5)
    # Between its integer neighbours and monotone.
    assert stats.t_quantile(0.975, 4) < stats.t_quantile(0.975, 3.5) < stats.t_quantile(0.975, 3)


@given(st.floats(0.001, 0.999))
def test_t_quantile_closed_forms(p: float) -> None:
    # df = 1 is Cauchy: tan(pi (p - 1/2)); df = 2: (2p - 1) / sqrt(2 p (1 - p)).
    assert stats.t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9, abs=1e-9)
    assert stats.t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)),
                                                   rel=1e-9, abs=1e-9)


def test_t_quantile_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        stats.t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        stats.t_quantile(0.9, 0.5)


def test_regularized_beta() -> None:
    # I_0.3(2, 3) = 1 - sum_{j<2} C(4, j) 0.3^j 0.7^(4-j) = 1 - 0.2401 - 0.4116 = 0.3483
    assert stats.regularized_beta(0.3, 2, 3) == pytest.approx(0.3483, abs=1e-12)
    assert stats.regularized_beta(0.9, 2, 3) == pytest.approx(1 - 0.1 ** 4 - 4 * 0.9 * 0.1 ** 3, abs=1e-12)


# ---- one series ----------------------------------------------------------------------------------

def test_mean_ci_by_hand() -> None:
    # mean 12, s = 2, n = 3, on the log scale: 12 * exp(-/+ 4.302653 * (2 / 12) / sqrt(3))
    half = 4.302653 * (2 / 12) / math.sqrt(3)
    low, high = stats.mean_ci([10, 12, 14])
    assert low == pytest.approx(12 * math.exp(-half), abs=1e-5)
    assert high == pytest.approx(12 * math.exp(half), abs=1e-5)
    assert stats.mean_ci([5.0]) is None


def test_a_throughput_interval_never_goes_below_zero() -> None:
    # Two repetitions far apart (the demo's durable target): the linear interval was -524 .. 1975.
    low, high = stats.mean_ci([300.0, 1150.0])
    assert 0 < low < 300 and high > 1150


def test_cv() -> None:
    assert stats.cv([90, 100, 110]) == pytest.approx(0.1)
    assert stats.cv([100]) is None
    assert stats.cv([0, 0]) is None


def test_percentile_linear_interpolation() -> None:
    assert stats.percentile([4, 1, 3, 2], 95) == pytest.approx(3.85)  # h = 3 * 0.95 = 2.85
    assert stats.percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert stats.percentile([7], 99) == 7
    assert stats.percentile([], 95) is None
    assert stats.percentile(list(range(101)), 99) == pytest.approx(99)


def test_step_stats() -> None:
    tps = [100.0, 110.0, 90.0, 100.0]
    lat = [1.0, 2.0, 3.0, 10.0]
    figures = stats.step_stats(tps, lat, [0.0, None, 2.0, 4.0])
    assert figures["seconds"] == 4
    assert figures["tps_mean"] == 100 and figures["tps_median"] == 100
    assert figures["tps_cv"] == pytest.approx(math.sqrt(200 / 3) / 100)
    assert figures["latency_series_p95_ms"] == pytest.approx(3 + 0.85 * 7)
    assert figures["latency_series_p99_ms"] == pytest.approx(3 + 0.97 * 7)
    assert figures["steal_mean_pct"] == 2.0 and figures["steal_max_pct"] == 4.0


def test_percentiles_are_never_averaged_across_repetitions() -> None:
    spread = stats.percentile_spread([10.0, 11.0, 30.0, None])
    assert spread["median"] == 11.0  # not the mean, 17
    assert (spread["min"], spread["max"], spread["n"]) == (10.0, 30.0, 3)
    assert "mean" not in spread


def test_mean_spread() -> None:
    spread = stats.mean_spread([10.0, 12.0, 14.0])
    assert (spread["mean"], spread["min"], spread["max"], spread["stdev"]) == (12, 10, 14, 2)
    assert spread["ci_low"] == pytest.approx(stats.mean_ci([10.0, 12.0, 14.0])[0])
    assert stats.mean_spread([3.0])["ci_low"] is None


# ---- relative difference ---------------------------------------------------------------------------

def test_relative_difference_by_hand() -> None:
    base, cand = [100.0, 102.0, 98.0], [110.0, 112.0, 108.0]
    rel = stats.relative_difference(cand, base)
    assert rel.pct == pytest.approx(10.0)
    # log-ratio delta method: se^2 = 4/(3*110^2) + 4/(3*100^2); Welch-Satterthwaite df
    c, b = 4 / (3 * 110 ** 2), 4 / (3 * 100 ** 2)
    df = (c + b) ** 2 / (c ** 2 / 2 + b ** 2 / 2)
    assert rel.df == pytest.approx(df) and df == pytest.approx(3.9642, abs=1e-4)
    half = stats.t_quantile(0.975, df) * math.sqrt(c + b)
    assert rel.ci_low_pct == pytest.approx(100 * (1.1 * math.exp(-half) - 1))
    assert rel.ci_high_pct == pytest.approx(100 * (1.1 * math.exp(half) - 1))
    assert 5.0 < rel.ci_low_pct < 5.6 and 14.5 < rel.ci_high_pct < 15.2
    assert rel.verdict == "faster"
    assert stats.relative_difference(base, cand).verdict == "slower"


def test_relative_difference_inconclusive_not_no_difference() -> None:
    rel = stats.relative_difference([102.0, 95.0, 108.0], [100.0, 110.0, 90.0])
    assert rel.ci_low_pct < 0 < rel.ci_high_pct
    # Both ends of the interval: back-transformed it is asymmetric (issue 37: "±169.2%" said one side of
    # [-60.0, +190.1]).
    assert rel.verdict == "inconclusive" and rel.words == "inconclusive (-17%..+25%)"


def test_relative_difference_edge_cases() -> None:
    single = stats.relative_difference([110.0], [99.0, 101.0])
    assert single.pct == pytest.approx(10.0) and single.verdict == "too few repetitions"
    assert single.ci_low_pct is None and single.repetitions == (1, 2)
    exact = stats.relative_difference([110.0, 110.0], [100.0, 100.0])
    assert (exact.ci_low_pct, exact.verdict) == (pytest.approx(10.0), "faster")
    assert stats.relative_difference([], [1.0]).verdict == "insufficient data"
    assert stats.relative_difference([100.0, 100.0], [100.0, 100.0]).verdict == "too few repetitions"


def test_two_repetitions_that_all_agree_are_too_few_not_no_difference() -> None:
    # The demo at 2 repetitions: relaxed beat durable every time, yet df ~ 1 makes the interval huge.
    rel = stats.relative_difference([2100.0, 2600.0], [700.0, 1150.0])
    assert rel.ci_low_pct < 0 < rel.ci_high_pct
    assert rel.verdict == "too few repetitions" and rel.repetitions == (2, 2)
    assert rel.repetitions_needed is not None and 3 <= rel.repetitions_needed <= 10
    # With that many, the same means and spreads decide.
    n = rel.repetitions_needed
    more = stats.relative_difference([2100.0, 2600.0, 2350.0] * (n // 3 + 1), [700.0, 1150.0, 925.0] * (n // 3 + 1))
    assert more.verdict == "faster"
    # At 3 or more an interval containing 0 is a finding, and identical means need no more repetitions.
    same = stats.relative_difference([100.0, 101.0, 99.0], [99.0, 101.0, 100.0])
    assert same.verdict == "equivalent" and same.repetitions_needed is None


def test_zero_throughput_is_minus_100_percent() -> None:
    rel = stats.relative_difference([0.0, 0.0], [500.0, 510.0])
    assert (rel.pct, rel.verdict) == (-100.0, "slower")
    assert stats.relative_difference([500.0], [0.0]).verdict == "insufficient data"


def test_a_median_of_an_even_number_of_repetitions_is_not_claimed() -> None:
    two = stats.percentile_spread([10.0, 30.0])
    assert two["median"] is None and (two["min"], two["max"]) == (10.0, 30.0)
    assert stats.percentile_spread([10.0, 30.0, 11.0])["median"] == 11.0


def test_relative_difference_lower_is_better_for_latency() -> None:
    rel = stats.relative_difference([5.0, 5.1, 4.9], [10.0, 10.2, 9.8], higher_is_better=False)
    assert rel.pct == pytest.approx(-50.0)
    assert rel.verdict == "faster"


# ---- cost and speedup ------------------------------------------------------------------------------

def test_cost_per_1000_tps() -> None:
    assert stats.cost_per_1000_tps(0.192, 2400) == pytest.approx(0.08)
    assert stats.transactions_per_usd(0.192, 2400) == pytest.approx(45_000_000)
    assert stats.cost_per_1000_tps(None, 2400) is None
    assert stats.cost_per_1000_tps(0.1, 0) is None
    assert stats.cost_per_1000_tps(0.0, 1000) == 0.0
    assert stats.transactions_per_usd(0.0, 1000) is None


def test_speedup_table_like_seed_002() -> None:
    targets = [{"target_id": "io1-xlarge", "group": "ec2:r4", "size": 4},
               {"target_id": "io1-large", "group": "ec2:r4", "size": 2},
               {"target_id": "io1-2xlarge", "group": "ec2:r4", "size": 8},
               {"target_id": "alone", "group": "ec2:i3", "size": 2},
               {"target_id": "nogroup", "group": None, "size": 2}]
    tps = {"io1-large": {64: 1000.0, 128: 900.0}, "io1-xlarge": {64: 2670.0, 128: 2500.0},
           "io1-2xlarge": {64: 5380.0, 128: 5000.0}, "alone": {64: 1.0}, "nogroup": {64: 1.0}}
    rows = [{"target_id": t, "threads": th, "tps": {"values": [v]}} for t, by in tps.items() for th, v in by.items()]
    table = stats.speedup_table(targets, rows)
    assert len(table) == 1
    group = table[0]
    assert group["baseline_target"] == "io1-large" and group["threads"] == [64, 128]
    assert [r["target_id"] for r in group["rows"]] == ["io1-large", "io1-xlarge", "io1-2xlarge"]
    at_64 = [r["by_threads"]["64"] for r in group["rows"]]
    assert [round(c["speedup"], 2) for c in at_64] == [1.0, 2.67, 5.38]  # seed 002's io1 column
    # One repetition each: no interval; per doubling of vCPUs: 2.67 for one doubling, 5.38 ** (1/2) for two.
    assert at_64[1]["ci_low"] is None and at_64[1]["per_doubling"] == pytest.approx(2.67)
    assert at_64[2]["per_doubling"] == pytest.approx(5.38 ** 0.5)
    assert group["rows"][2]["by_threads"]["128"]["speedup"] == pytest.approx(5000 / 900)


def test_group_and_size() -> None:
    assert stats.target_group_and_size({"kind": "local", "engine": "mariadb", "mysql_config": "d",
                                        "cpus": "[0, 1]"}) == ("local:mariadb:d", 2.0)
    assert stats.target_group_and_size({"kind": "ec2", "instance_type": "m6i.2xlarge", "engine": "mysql-8.0",
                                        "mysql_config": "default", "storage": "gp3:100"}) == (
        "ec2:m6i:mysql-8.0:default:gp3", 8.0)
    assert stats.target_group_and_size({"kind": "aurora", "instance_class": "db.r6g.4xlarge",
                                        "engine": "mysql-8.0", "mysql_config": "x"})[1] == 16.0
    assert stats.target_group_and_size({"kind": "ec2", "instance_type": "t3.large"})[1] is None
    assert stats.target_group_and_size({"kind": "ec2", "instance_type": "t3.large", "vcpus": 2})[1] == 2.0
    assert stats.vcpus_from_size("m6g.medium") == 1 and stats.vcpus_from_size("c5.metal") is None


# ---- the comparison table the CLI prints (kept stable) ----------------------------------------------

def test_comparison_table_is_the_rows_figures_one_per_variant() -> None:
    rows = [{"phase": "measure", "target_id": "a", "variant": v, "repetition": r, "step": f"t0004.{v}", "threads": 4,
             "tps": t * k, "qps": t * k * 20, "latency_pct": 95, "latency_pct_ms": lat, "steal_mean_pct": 1.0,
             "samples": 60, "tps_cv": 0.02}
            for v, k in (("durable", 1.0), ("relaxed", 1.5)) for r, (t, lat) in enumerate(
                [(100.0, 5.0), (110.0, 9.0), (90.0, 6.0)], start=1)]
    rows.append({"phase": "warmup", "target_id": "a", "variant": "durable", "repetition": 1, "step": "w",
                 "threads": 4, "tps": 1.0})
    doc = stats.comparison({"run_id": "r", "spec": {"variants": [{"id": "durable"}, {"id": "relaxed"}]}}, [], rows, [])
    table = {r["variant"]: r for r in stats.comparison_table(doc["rows"])}
    # One row per variant (never the two pooled), with the figures the verdict rows have.
    assert set(table) == {"durable", "relaxed"}
    row = table["durable"]
    for key in ("target_id", "threads", "repetitions", "tps_mean", "tps_min", "tps_max", "qps_mean", "latency_pct",
                "latency_pct_ms_median", "latency_pct_ms_min", "latency_pct_ms_max", "steal_mean_pct",
                "samples", "design", "verdict"):
        assert key in row
    assert row["tps_mean"] == 100 and row["latency_pct_ms_median"] == 6.0 and row["samples"] == 180
    assert row["qps_mean"] == 2000 and row["repetitions"] == 3
    assert row["tps_ci_low"] == pytest.approx(100 * math.exp(-4.302653 * 0.1 / math.sqrt(3)), abs=1e-4)
    assert table["relaxed"]["tps_mean"] == pytest.approx(150)
    assert (table["relaxed"]["design"], table["relaxed"]["verdict"]) == ("paired", "faster")


# ---- a whole run ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DuckDBStore:
    s = DuckDBStore(tmp_path_factory.mktemp("stats") / "benchfleet.duckdb")
    fill_store(s, "unit-run-20261122t100000-abcd", reps=3, threads=(1, 4, 16), seconds=20, warmup_s=5)
    yield s
    s.close()


def test_sql_step_stats_equal_python_step_stats(store: DuckDBStore) -> None:
    run_id = "unit-run-20261122t100000-abcd"
    sql = stats.step_stats_in_store(store, run_id)
    py = stats.step_stats_from_samples(store.samples(run_id))
    assert len(sql) == len(py) == 3 * 3 * 3
    for a, b in zip(sql, py, strict=True):
        assert (a["target_id"], a["repetition"], a["step"]) == (b["target_id"], b["repetition"], b["step"])
        for key in ("seconds", "tps_mean", "tps_median", "tps_stdev", "tps_cv", "latency_series_p95_ms",
                    "latency_series_p99_ms", "latency_series_cv", "steal_mean_pct", "steal_max_pct"):
            assert a[key] == pytest.approx(b[key]), key
        assert a["seconds"] == 20  # warm-up excluded


def test_run_comparison(store: DuckDBStore) -> None:
    result = stats.run_comparison(store, "unit-run")  # a unique prefix is enough
    json.dumps(result, allow_nan=False)
    assert result["baseline"] == TARGETS[0]["id"]
    assert [t["target_id"] for t in result["targets"]] == [t["id"] for t in TARGETS]
    assert len(result["rows"]) == 3 * 3
    by_key = {(r["target_id"], r["threads"]): r for r in result["rows"]}
    base = by_key[("m6i-large", 4)]
    assert base["relative"] is None and base["repetitions"] == 3 and base["tps"]["n"] == 3
    assert base["tps"]["ci_low"] < base["tps"]["mean"] < base["tps"]["ci_high"]
    # Priced from today's tables: m6i.large and its gp3 100 GB volume, on-demand (not the 0.107 recorded).
    assert base["cost_per_1000_tps"] == pytest.approx((0.096 + 100 * 0.08 / 730) * 1000 / base["tps"]["mean"])
    assert base["steal_max_pct"] > 15  # the synthetic steal episode of repetition 2
    big = by_key[("m6i-xlarge", 16)]
    assert big["relative"]["vs"] == "m6i-large" and big["relative"]["verdict"] == "faster"
    assert by_key[("m6g-large", 16)]["relative"]["verdict"] == "slower"
    lat = big["latency_step_pct_ms"]
    assert lat["median"] == sorted(lat["values"])[1]
    (speedup,) = result["speedup"]
    assert [r["target_id"] for r in speedup["rows"]] == ["m6i-large", "m6i-xlarge"]
    assert 1.7 < speedup["rows"][1]["by_threads"]["16"]["speedup"] < 2.3
    fingerprints = result["targets"][1]["fingerprints"]
    assert len(fingerprints) == 3 and fingerprints[0]["cpu_model"] == "Neoverse-N1"
    assert result["targets"][0]["peak"]["threads"] == 16


def test_comparison_from_python_rows_equals_run_comparison(store: DuckDBStore) -> None:
    run_id = "unit-run-20261122t100000-abcd"
    from_sql = stats.run_comparison(store, run_id)
    from_rows = stats.comparison(store.run(run_id), store.targets(run_id), store.summaries(run_id),
                                 stats.step_stats_from_samples(store.samples(run_id)))
    assert from_rows["rows"][4]["tps"] == from_sql["rows"][4]["tps"]
    assert from_rows["rows"][4]["latency_series_p99_ms"]["median"] == pytest.approx(
        from_sql["rows"][4]["latency_series_p99_ms"]["median"])


def test_targets_without_a_recorded_price_are_priced_from_the_spec(tmp_path: Path) -> None:
    s = DuckDBStore(tmp_path / "b.duckdb")
    try:
        run_id = fill_store(s, "unpriced-20261122t100000-abcd", reps=2, threads=(1,), seconds=5, warmup_s=2)
        s.execute("UPDATE targets SET price_per_hour = NULL")
        result = stats.run_comparison(s, run_id)
        # spec targets: ec2 m6i.large with the default gp3 100 GB volume
        assert result["targets"][0]["price_per_hour"] == pytest.approx(0.096 + 8 / 730 + 0.005, abs=1e-6)  # + IPv4
        assert result["rows"][0]["cost_per_1000_tps"] is not None
    finally:
        s.close()


def test_step_rates_are_weighted_by_the_seconds_each_sample_covers(tmp_path: Path) -> None:
    """sysbench under load: [1, 2, 5, 7, ...] -- a per-second mean counting each line as one second
    overstates throughput; weighted by interval length it is the events over the time, in SQL and
    Python alike."""
    s = DuckDBStore(tmp_path / "b.duckdb")
    try:
        run_id = fill_store(s, "weighted-20261122t100000-abcd", reps=2, threads=(1,), seconds=9, warmup_s=2)
        lengths = [1, 1, 3, 2, 1, 1, 2, 0, 1]
        tps = [900.0, 880.0, 300.0, 450.0, 870.0, 860.0, 420.0, 910.0, 890.0]
        target = s.query("SELECT min(target_id) AS t FROM samples")[0]["t"]
        for second, (length, rate) in enumerate(zip(lengths, tps, strict=True), start=1):
            s.execute("UPDATE samples SET interval_s = ?, tps = ? WHERE target_id = ? AND second = ? "
                         "AND phase = 'measure' AND repetition = 1", [length, rate, target, second])
        sql = next(r for r in stats.step_stats_in_store(s, run_id)
                   if (r["target_id"], r["repetition"]) == (target, 1))
        py = next(r for r in stats.step_stats_from_samples(s.samples(run_id))
                  if (r["target_id"], r["repetition"]) == (target, 1))
        expected = sum(length * rate for length, rate in zip(lengths, tps, strict=True)) / 12
        for key in ("tps_mean", "tps_cv", "covered_s"):
            assert sql[key] == pytest.approx(py[key]), key
        assert sql["tps_mean"] == pytest.approx(expected) and sql["covered_s"] == 12
        assert statistics.fmean(tps) > 1.2 * expected
    finally:
        s.close()


# The per-step figures as one query over all steps: what run_comparison published before it batched
# the percentiles to bound their memory (benchfleet/stats/step_sql.py). Kept here as the reference.
REFERENCE_STEP_STATS_SQL = """
WITH s AS (
    SELECT *, coalesce(interval_s, 1.0) AS w FROM samples WHERE run_id = ? AND phase = 'measure'),
m AS (
    SELECT target_id, repetition, step, sum(w * tps) / nullif(sum(w), 0) AS wmean, sum(w) AS wsum
    FROM s GROUP BY target_id, repetition, step),
r AS (
    SELECT target_id, repetition, step, sum(coalesce(interval_s, 1.0)) FILTER (WHERE phase = 'ramp') AS ramp_s,
           sum(coalesce(interval_s, 1.0) * tps) FILTER (WHERE phase = 'ramp') AS ramp_transactions,
           bool_and(arrived_s IS NOT NULL) AS intervals_measured,
           count(*) - count(DISTINCT second) AS duplicate_timestamps
    FROM samples WHERE run_id = ? AND phase IN ('measure', 'ramp') GROUP BY target_id, repetition, step)
SELECT s.target_id, s.repetition, s.step, any_value(threads) AS threads, any_value(variant) AS variant,
       any_value(block) AS block, count(*) AS seconds,
       any_value(m.wsum) AS covered_s,
       any_value(m.wmean) AS tps_mean, median(tps) AS tps_median,
       CASE WHEN count(*) > 1 AND any_value(m.wsum) > 1
            THEN sqrt(sum(w * (tps - m.wmean) ^ 2) / (any_value(m.wsum) - 1)) END AS tps_stdev,
       min(tps) AS tps_min, max(tps) AS tps_max,
       CASE WHEN count(*) > 1 AND any_value(m.wmean) <> 0 AND any_value(m.wsum) > 1
            THEN sqrt(sum(w * (tps - m.wmean) ^ 2) / (any_value(m.wsum) - 1)) / any_value(m.wmean) END AS tps_cv,
       quantile_cont(latency_ms, 0.50) AS latency_series_p50_ms,
       quantile_cont(latency_ms, 0.95) AS latency_series_p95_ms,
       quantile_cont(latency_ms, 0.99) AS latency_series_p99_ms,
       CASE WHEN count(latency_ms) > 1 AND avg(latency_ms) <> 0
            THEN stddev_samp(latency_ms) / avg(latency_ms) END AS latency_series_cv,
       avg(cpu_steal_pct) AS steal_mean_pct, max(cpu_steal_pct) AS steal_max_pct,
       avg(errors_per_s) AS errors_per_s_mean, any_value(latency_pct) AS latency_pct,
       any_value(r.ramp_s) AS ramp_s, any_value(r.ramp_transactions) AS ramp_transactions,
       any_value(r.intervals_measured) AS intervals_measured, any_value(r.duplicate_timestamps) AS duplicate_timestamps
FROM s JOIN m USING (target_id, repetition, step) JOIN r USING (target_id, repetition, step)
GROUP BY s.target_id, s.repetition, s.step
ORDER BY s.target_id, threads, s.repetition
"""
# Figures that are order statistics or counts come out identical; sums may differ in the last bits
# with the order DuckDB adds in (as between two runs of one query on more threads).
_EXACT = {"target_id", "repetition", "step", "threads", "variant", "block", "seconds", "tps_median", "tps_min",
          "tps_max",
          "latency_series_p50_ms", "latency_series_p95_ms", "latency_series_p99_ms", "steal_max_pct",
          "latency_pct", "intervals_measured", "duplicate_timestamps"}


@pytest.mark.parametrize("batch_samples", [1, 500, 10**9])
def test_batched_step_stats_equal_one_query_on_real_agent_output(tmp_path: Path, batch_samples: int) -> None:
    """Real agent output (tests/fixtures/agent/t0001.jsonl) as six steps: one step per batch, two,
    all at once -- each gives the figures of the one query. One repetition lost its latency column
    and a late report covers three seconds, as happens."""
    from benchfleet.workload.records import AgentOutput, parse_agent_lines

    real = parse_agent_lines((Path(__file__).resolve().parents[1] / "fixtures" / "agent" / "t0001.jsonl")
                             .read_text())
    run_id = real.samples[0].run_id
    s = DuckDBStore(tmp_path / "b.duckdb")
    try:
        s.create_run(run_id, "fixture", {"name": "fixture"}, "local", 0.0)
        for target in ("db-a", "db-b"):
            for rep in (1, 2, 3):
                def mine(row: Any, target: str = target, rep: int = rep) -> Any:
                    return row.model_copy(update={"target_id": target, "repetition": rep})
                s.add_output(AgentOutput(samples=[mine(x) for x in real.samples],
                                         summaries=[mine(x) for x in real.summaries]))
        s.execute("UPDATE samples SET latency_ms = NULL WHERE target_id = 'db-b' AND repetition = 2")
        s.execute("UPDATE samples SET interval_s = 3 WHERE target_id = 'db-a' AND second = 7")
        # Two reports printed with one second (counted by the bitmap of whole seconds), and in another
        # repetition a fractional second beside a repeated one (counted by hashing).
        s.execute("UPDATE samples SET second = 8 WHERE target_id = 'db-a' AND repetition = 1 AND second = 9")
        s.execute("UPDATE samples SET second = second + 0.5 WHERE target_id = 'db-b' AND repetition = 3 "
                  "AND second IN (5, 6)")
        s.execute("UPDATE samples SET second = 5.5 WHERE target_id = 'db-b' AND repetition = 3 AND second = 11")
        reference = s.query(REFERENCE_STEP_STATS_SQL, [run_id, run_id])
        batched = stats.step_stats_in_store(s, run_id, batch_samples=batch_samples)
    finally:
        s.close()
    # 240 reports a step: the first is its ramp, left out of every figure but ramp_s and ramp_transactions;
    # the agent that captured them measured the seconds each report covers (arrived_s).
    assert len(batched) == len(reference) == 6 and all(r["seconds"] == 239 for r in reference)
    assert all(r["ramp_s"] == pytest.approx(1, abs=0.05) and r["intervals_measured"] is True for r in reference)
    assert {(r["target_id"], r["repetition"], r["duplicate_timestamps"]) for r in reference} == {
        ("db-a", 1, 1), ("db-b", 3, 1), *((t, rep, 0) for t in ("db-a", "db-b") for rep in (1, 2, 3)
                                           if (t, rep) not in (("db-a", 1), ("db-b", 3)))}
    for new, old in zip(batched, reference, strict=True):
        assert list(new) == list(old)
        for key, value in old.items():
            assert new[key] == (value if key in _EXACT or value is None else pytest.approx(value, rel=1e-12)), key
