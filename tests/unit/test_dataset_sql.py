"""The QuickSight datasets' SQL (cdk/lib/sql/athena/*.sql) run against the data model.

The Glue tables of the athena store and the local DuckDB store share table and column names
(tests/functional/test_athena_store.py checks that), so each dataset query runs here on a DuckDB
store filled through DuckDBStore's own methods. Dialect shim, the only difference the queries hit:

- ``"${database}".`` -> ``"main".`` (the Glue database name is substituted at synth);
- ``json_extract_scalar(`` (Trino) -> ``json_extract_string(`` (DuckDB): same JSONPath, same result.

``${verdict}``, ``${t975}`` and ``${t_of_df}`` are the fragments ``cdk/lib/sql/common/verdict.sql``,
``t975.sql`` and ``t_of_df.sql``, substituted as the CDK app does.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchfleet import stats
from benchfleet.cost import pricing
from benchfleet.local.store import DuckDBStore
from benchfleet.workload.records import AgentOutput, Fingerprint, Sample, StepSummary, status_rows

SQL_DIR = Path(__file__).resolve().parents[2] / "cdk/lib/sql/athena"
RUN = "graviton-vs-intel-20261102t101500-ab12"
T0 = datetime(2026, 11, 2, 10, 15, tzinfo=UTC)
TPS = {("m6i-large", 8): 1000.0, ("m6i-large", 16): 1500.0, ("m6g-large", 8): 1100.0,
       ("m6g-large", 16): 1200.0}
PRICE = {"m6i-large": 0.096, "m6g-large": 0.077}

DATASETS = json.loads((SQL_DIR.parent / "datasets.json").read_text())["datasets"]
# Declared once in cdk/lib/sql/datasets.json (the QuickSight InputColumns the CDK app sends).
EXPECTED_COLUMNS = {name: [c for c, _ in d["columns"]] for name, d in DATASETS.items()}
# Columns only a cluster fills (its cross-zone traffic): tests/unit/test_cluster_cost.py runs the dataset on a
# cluster's rows and checks their values and types.
CLUSTER_ONLY = {("target_costs", "cross_zone_gb_per_hour"), ("target_costs", "cross_zone_usd_per_hour")}
QUICKSIGHT_TYPES = {"STRING": (str,), "INTEGER": (int,), "DECIMAL": (float, int), "DATETIME": (datetime,)}


T975 = "\n".join(line for line in (SQL_DIR.parent / "common" / "t975.sql").read_text().splitlines()
                 if not line.lstrip().startswith("--"))
T_OF_DF = "\n".join(line for line in (SQL_DIR.parent / "common" / "t_of_df.sql").read_text().splitlines()
                    if not line.lstrip().startswith("--"))
VERDICT = "\n".join(line for line in (SQL_DIR.parent / "common" / "verdict.sql").read_text().splitlines()
                    if not line.lstrip().startswith("--"))
CROSS_ZONE = "\n".join(line for line in (SQL_DIR.parent / "common" / "cross_zone.sql").read_text().splitlines()
                       if not line.lstrip().startswith("--"))


def athena_to_duckdb(sql: str) -> str:
    """The documented dialect shim (module docstring)."""
    return (sql.replace("${verdict}", VERDICT).replace("${cross_zone}", CROSS_ZONE).replace("${t_of_df}", T_OF_DF)
            .replace("${t975}", T975)
            .replace('"${database}".', '"main".')
            .replace("json_extract_scalar(", "json_extract_string("))


def dataset(name: str) -> str:
    return athena_to_duckdb((SQL_DIR / f"{name}.sql").read_text())


def t975_selects(values: str) -> str:
    """The t975 fragment as cdk/lib/dashboards.ts gives it to Timestream (t975Selects): one-row SELECTs."""
    pairs = re.findall(r"\((\d+), ([0-9.]+)\)", values)
    assert len(pairs) == 30
    return " UNION ALL ".join(f"SELECT {df} AS df, CAST({t} AS DOUBLE) AS t975" for df, t in pairs)


def timestream_dataset(name: str, db: DuckDBStore) -> str:
    """A Timestream dataset's SQL run on DuckDB, over views in schema ``ts`` shaped as the records of
    benchfleet/aws/store/timestream.py: dimensions as VARCHAR, no variant as '-', one measure name per
    table; the fragments substituted as the CDK app does for Timestream."""
    db.execute("CREATE SCHEMA IF NOT EXISTS ts")
    for table, measure in (("step_summaries", "summary"), ("samples", "sample"), ("status_samples", "status")):
        # A summary record carries the spec's margin_pct as collect writes it (null: a record from before).
        margin = (", (SELECT CAST(json_extract(r.spec, '$.margin_pct') AS DOUBLE) FROM main.runs r "
                  "WHERE r.run_id = t.run_id) AS margin_pct" if table == "step_summaries" else "")
        db.execute(f"CREATE OR REPLACE VIEW ts.{table} AS SELECT * REPLACE (coalesce(variant, '-') AS variant, "
                   f"CAST(threads AS VARCHAR) AS threads, CAST(repetition AS VARCHAR) AS repetition), "
                   f"'{measure}' AS measure_name{margin} FROM main.{table} t")
    sql = (SQL_DIR.parent / "timestream" / f"{name}.sql").read_text()
    return (sql.replace("${verdict}", VERDICT).replace("${cross_zone}", CROSS_ZONE).replace("${t_of_df}", T_OF_DF)
            .replace("${t975}", t975_selects(T975))
            .replace('"${database}".', '"ts".'))


def step_output(target: str, rep: int, threads: int, start: datetime) -> AgentOutput:
    """A 3 s warm-up and a 10 s measure step as the agent would report them."""
    base = TPS[(target, threads)] + (rep - 1) * 10  # repetitions differ a little
    samples = []
    for phase, seconds, offset in (("warmup", 3, 0), ("measure", 10, 3)):
        for i in range(seconds):
            samples.append(Sample(
                run_id=RUN, target_id=target, repetition=rep, workload="oltp-read-write", threads=threads,
                step=f"{phase}-t{threads}", phase=phase, time=start + timedelta(seconds=offset + i + 1),
                second=float(i + 1), tps=base + (i % 3) - 1, qps=20 * base, reads_per_s=14 * base,
                writes_per_s=4 * base, other_per_s=2 * base, latency_ms=5.0 + threads / 4, latency_pct=95,
                errors_per_s=0.0, reconnects_per_s=0.0, cpu_steal_pct=0.5 if target == "m6i-large" else 0.0,
                cpu_user_pct=60.0, cpu_system_pct=20.0, cpu_iowait_pct=1.0,
                disk_reads_per_s=120.0, disk_writes_per_s=300.0 + i, disk_read_mib_per_s=1.9,
                disk_write_mib_per_s=4.7, disk_await_ms=0.8, rows_in_table=10_000 + 100 * i))
    summary = StepSummary(
        run_id=RUN, target_id=target, repetition=rep, workload="oltp-read-write", threads=threads,
        step=f"measure-t{threads}", phase="measure", time=start + timedelta(seconds=13),
        total_time_s=10.0, transactions=int(base * 10), tps=base, queries=int(base * 200), qps=base * 20,
        reads=int(base * 140), writes=int(base * 40), other=int(base * 20), ignored_errors=0,
        errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0, events=int(base * 10), latency_min_ms=1.2,
        latency_avg_ms=4.0, latency_max_ms=40.0, latency_pct=95, latency_pct_ms=6.0 + threads / 4 + rep,
        sysbench_version="1.0.20", samples=10, tps_cv=0.01, steal_mean_pct=0.5)
    # A reading of the server's status every second (the first is the baseline of the rates).
    status = status_rows([
        {"run_id": RUN, "target_id": target, "repetition": rep, "workload": "oltp-read-write", "threads": threads,
         "step": f"measure-t{threads}", "phase": "measure", "time": start + timedelta(seconds=3 + i),
         "second": float(i), "source": "n1",
         "values": {"wsrep_flow_control_paused_ns": str(i * 2_000_000), "Threads_running": str(threads)}}
        for i in range(11)])
    return AgentOutput(samples=samples, summaries=[summary], status=status)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DuckDBStore]:
    db = DuckDBStore(tmp_path_factory.mktemp("sql") / "benchfleet.duckdb")
    spec = {"name": "graviton-vs-intel", "workload": "oltp-read-write", "repetitions": 2,
            "baseline": "m6i-large",
            "targets": [{"id": "m6g-large", "kind": "ec2", "instance_type": "m6g.large"},
                        {"id": "m6i-large", "kind": "ec2", "instance_type": "m6i.large"}]}
    db.create_run(RUN, "graviton-vs-intel", spec, mode="aws", estimated_cost_usd=1.2)
    for target, arch in (("m6i-large", "x86_64"), ("m6g-large", "aarch64")):
        for rep in (1, 2):
            fp = Fingerprint(run_id=RUN, target_id=target, repetition=rep, time=T0, cpu_model="x",
                             kernel="6.8.0-1019-aws" if target == "m6i-large" else "6.8.0-1021-aws",
                             vcpus=2, cpus_usable=2, memory_mb=8192, arch=arch, sysbench_version="1.0.20")
            spec_target = next(t for t in spec["targets"] if t["id"] == target)
            db.add_target(RUN, target, rep, {"kind": "ec2", "instance_type": target.replace("-", "."),
                                             "engine": "mysql-8.0", "region": "us-east-1",
                                             "price_per_hour": PRICE[target],
                                             "prices": pricing.recorded_prices({**spec_target,
                                                                                "region": "us-east-1"})}, fp)
            for threads in (8, 16):
                db.add_output(step_output(target, rep, threads, T0 + timedelta(minutes=threads + rep)))
    # DuckDBStore has no cloud-metric writer (collect writes them in the cloud); plain SQL through it.
    for minute in range(5):
        db.execute("INSERT INTO cloud_metrics VALUES (?, ?, 'm6i-large', 'WriteLatency', ?, 'Milliseconds')",
                 [T0 + timedelta(minutes=minute), RUN, 1.5 + minute / 10])
    db.finish_run(RUN, "succeeded", actual_cost_usd=1.1)
    yield db
    db.close()


def run(store: DuckDBStore, name: str) -> list[dict[str, Any]]:
    return store.query(dataset(name))


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DuckDBStore]:
    """Two sizes of one family (m6i.large, m6i.xlarge) and another family, three repetitions: the
    synthetic run the report's tests use (tests/browser/synthetic.py), prices recorded as collect does."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
    from synthetic import fill_store

    db = DuckDBStore(tmp_path_factory.mktemp("sizes") / "benchfleet.duckdb")
    fill_store(db, "sizes-20261122t100000-abcd", reps=3, threads=(4,), seconds=5, warmup_s=2)
    yield db
    db.close()


@pytest.mark.parametrize("name", sorted(EXPECTED_COLUMNS))
def test_dataset_returns_rows_with_the_expected_columns(store, sizes, name):
    rows = run(sizes if name == "speedup" else store, name)
    assert rows, name
    assert list(rows[0]) == EXPECTED_COLUMNS[name]
    for column, qs_type in DATASETS[name]["columns"]:
        values = [r[column] for r in rows if r[column] is not None]
        if (name, column) in CLUSTER_ONLY:
            assert values == [], column  # ec2 targets cross no zones
            continue
        assert values, f"{name}.{column} is always null in the fixture"
        assert all(isinstance(v, QUICKSIGHT_TYPES[qs_type]) for v in values), f"{name}.{column}"


def test_every_sql_file_is_covered():
    assert {p.stem for p in SQL_DIR.glob("*.sql")} == set(EXPECTED_COLUMNS)


def test_each_file_carries_a_dialect_note():
    for path in SQL_DIR.glob("*.sql"):
        assert "Dialect:" in path.read_text(), path.name


def test_step_results_relative_and_cost(store):
    rows = {(r["target_id"], r["threads"]): r for r in run(store, "step_results")}
    assert len(rows) == 4
    base = rows[("m6i-large", 8)]
    assert base["repetitions"] == 2
    assert base["tps_mean"] == pytest.approx(1005.0)  # mean of 1000 and 1010
    assert (base["tps_min"], base["tps_max"]) == (1000.0, 1010.0)
    assert (base["latency_pct_ms_min"], base["latency_pct_ms_max"]) == (9.0, 10.0)  # range, not a mean
    assert base["baseline_target"] == "m6i-large" and base["relative_pct"] == pytest.approx(0.0)
    cand = rows[("m6g-large", 16)]
    assert cand["relative_pct"] == pytest.approx(100 * (1205.0 / 1505.0 - 1))
    assert cand["cost_per_1000_tps"] == pytest.approx(0.077 * 1000 / 1205.0)
    assert cand["instance_type"] == "m6g.large" and cand["run_name"] == "graviton-vs-intel"


def test_baseline_falls_back_to_the_first_target_of_the_spec(tmp_path):
    db = DuckDBStore(tmp_path / "b.duckdb")
    try:
        db.create_run(RUN, "n", {"targets": [{"id": "m6g-large"}, {"id": "m6i-large"}]}, "aws", None)
        for target in ("m6i-large", "m6g-large"):
            db.add_output(step_output(target, 1, 8, T0))
        rows = {r["target_id"]: r for r in db.query(dataset("step_results"))}
        assert rows["m6i-large"]["baseline_target"] == "m6g-large"
        assert rows["m6g-large"]["relative_pct"] == pytest.approx(0.0)
        assert rows["m6i-large"]["cost_per_1000_tps"] is None  # no target row: unpriced, not zero
    finally:
        db.close()


def test_target_costs_equal_the_comparison_at_every_thread_count_and_model(store, sizes):
    """Cost per 1,000 tps by model with its interval, as `results` computes it (benchfleet.stats),
    at every thread count: never the best of noisy means."""
    for db in (store, sizes):
        run_id = db.runs()[0]["run_id"]
        python = {(r["target_id"], r["threads"]): r for r in stats.run_comparison(db, run_id)["rows"]}
        rows = db.query(dataset("target_costs"))
        models = {r["pricing_model"] for r in rows}
        assert models == {"on_demand", *(m for m in pricing.MODELS if m.startswith("reserved_"))}  # no spot shipped
        assert len(rows) == len(python) * len(models)
        for r in rows:
            row = python[(r["target_id"], r["threads"])]
            cost = row["cost"][r["pricing_model"]]
            assert r["tps_mean"] == pytest.approx(row["tps"]["mean"])
            assert (r["tps_ci_low"], r["tps_ci_high"]) == (pytest.approx(row["tps"]["ci_low"]),
                                                           pytest.approx(row["tps"]["ci_high"]))
            for key, column in (("usd_per_hour", "price_per_hour"), ("per_1000_tps", "cost_per_1000_tps"),
                                ("ci_low", "cost_ci_low"), ("ci_high", "cost_ci_high"),
                                ("transactions_per_usd", "transactions_per_usd")):
                assert r[column] == pytest.approx(cost[key]), (r["target_id"], r["pricing_model"], column)
    # By hand: m6i.large with the spec's default gp3 100 GB, 1-year reserved all upfront, 16 threads.
    (r,) = [r for r in run(store, "target_costs") if (r["target_id"], r["threads"], r["pricing_model"]) ==
            ("m6i-large", 16, "reserved_1y_all_upfront")]
    assert r["cost_per_1000_tps"] == pytest.approx((0.05597 + 100 * 0.08 / 730) * 1000 / 1505.0)


def test_speedup_equals_the_comparison_within_the_t_tables_interpolation(sizes):
    run_id = sizes.runs()[0]["run_id"]
    (group,) = stats.run_comparison(sizes, run_id)["speedup"]
    python = {(r["target_id"], int(th)): c for r in group["rows"] for th, c in r["by_threads"].items()}
    rows = sizes.query(dataset("speedup"))
    assert {r["size_group"] for r in rows} == {group["group"]} == {"ec2:m6i:mysql-8.0:default:gp3"}
    assert len(rows) == len(python) == 2  # m6i.large and m6i.xlarge at 4 threads
    for r in rows:
        cell = python[(r["target_id"], r["threads"])]
        assert r["baseline_target"] == group["baseline_target"] == "m6i-large"
        assert r["speedup"] == pytest.approx(cell["speedup"])
        if r["target_id"] == "m6i-large":
            assert r["speedup_ci_low"] is None and r["per_doubling"] is None
            continue
        assert r["doublings"] == 1.0 and r["per_doubling"] == pytest.approx(cell["per_doubling"])
        # SQL interpolates t between whole degrees of freedom (within 3%): the interval's ends agree
        # with Python's exact t to 3% of their distance from the point.
        for end in ("ci_low", "ci_high"):
            sql, py = math.log(r[f"speedup_{end}"]), math.log(cell[end])
            assert abs(sql - py) <= 0.03 * abs(py - math.log(cell["speedup"])) + 1e-12, end


def test_the_t_fragment_is_the_t_distribution_and_the_dashboards_show_the_headline_models():
    from benchfleet.stats.tdist import t_quantile

    pairs = [tuple(map(float, p.split(","))) for p in re.findall(r"\((\d+, [0-9.]+)\)", T975)]
    assert [int(df) for df, _ in pairs] == list(range(1, 31))
    assert all(t == pytest.approx(t_quantile(0.975, df), abs=1e-6) for df, t in pairs)
    ts = (SQL_DIR.parents[1] / "dashboards.ts").read_text()
    assert json.loads(re.search(r"HEADLINE_PRICING_MODELS = (\[.*?\]);", ts).group(1)
                      .replace("'", '"')) == list(pricing.HEADLINE_MODELS)


def test_samples_exclude_nothing_but_prepare_and_count_elapsed_seconds(store):
    rows = run(store, "samples")
    assert len(rows) == 2 * 2 * 2 * 13
    assert {r["phase"] for r in rows} == {"warmup", "measure"}
    first = [r for r in rows if (r["target_id"], r["repetition"]) == ("m6i-large", 1)]
    assert min(r["elapsed_s"] for r in first) == 0
    assert all(r["cpu_steal_pct"] == 0.5 for r in first)


def test_cloud_metrics_over_time(store):
    rows = sorted(run(store, "cloud_metrics"), key=lambda r: r["time"])
    assert [r["elapsed_s"] for r in rows] == [0, 60, 120, 180, 240]
    assert {r["metric"] for r in rows} == {"WriteLatency"}
    assert rows[0]["instance_type"] == "m6i.large"


def test_timestream_dialect_has_every_dataset_with_every_column():
    """The Timestream files cannot run offline (moto's timestream-query has no SQL engine); at least
    each names every declared column, so the QuickSight InputColumns match in both modes."""
    ts_dir = SQL_DIR.parent / "timestream"
    assert {p.stem for p in ts_dir.glob("*.sql")} == set(EXPECTED_COLUMNS)
    for name, columns in EXPECTED_COLUMNS.items():
        text = (ts_dir / f"{name}.sql").read_text()
        assert "Dialect:" in text
        missing = [c for c in columns if c not in text]
        assert not missing, f"timestream/{name}.sql lacks {missing}"


@pytest.mark.parametrize("dialect", ["athena", "timestream"])
def test_step_results_verdicts_and_caveats_equal_the_comparisons(tmp_path, dialect):
    """Issue 29: the dashboards' relative bars carry the same interval, verdict and caveats as `results`:
    a variant paired by repetition with its target's baseline variant, another target by Welch (one
    inconclusive, one slower), under steal 1.5 points apart and another kernel; a target with one
    repetition is 'too few repetitions' and has no interval. Both dialects: Timestream's records hold no
    spec (its margin comes with each summary record, as collect writes it) and no fingerprints (its
    caveats are steal and iowait only)."""
    from benchfleet.workload.records import StepSummary

    def summary(target, variant, rep, tps, steal):
        return StepSummary(
            run_id=RUN, target_id=target, variant=variant, repetition=rep, workload="w", step=f"t4.{variant}",
            phase="measure", threads=4, time=T0 + timedelta(minutes=rep), total_time_s=10.0,
            transactions=int(tps * 10), tps=tps, queries=int(tps * 100), qps=tps * 10, reads=0, writes=0, other=0,
            ignored_errors=0, errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0, events=int(tps * 10),
            latency_min_ms=1.0, latency_avg_ms=2.0, latency_max_ms=9.0, latency_pct=95, latency_pct_ms=3.0,
            samples=10, steal_mean_pct=steal)

    spec = {"targets": [{"id": "a", "kind": "ec2", "instance_type": "m6i.large"},
                        {"id": "b", "kind": "ec2", "instance_type": "m6i.large"},
                        {"id": "c", "kind": "ec2", "instance_type": "m6i.large"},
                        {"id": "d", "kind": "ec2", "instance_type": "m6i.large"}],
            "variants": [{"id": "durable"}, {"id": "relaxed"}], "margin_pct": 4}
    db = DuckDBStore(tmp_path / "v.duckdb")
    try:
        db.create_run(RUN, "vars", spec, "aws", None)
        found = []
        for target, scale, noise, steal, reps in (
                ("a", 1.0, (1.0, 0.97, 1.03), 0.2, 3), ("b", 1.05, (1.2, 0.7, 1.0), 1.7, 3),
                ("c", 0.7, (1.0, 0.98, 1.02), 0.2, 3), ("d", 0.9, (1.0,), 0.2, 1)):
            for rep in range(1, reps + 1):
                found += [summary(target, "durable", rep, 100 * scale * noise[rep - 1], steal),
                          summary(target, "relaxed", rep, 100 * scale * noise[rep - 1] * (1.3 + 0.02 * rep), steal)]
                db.add_target(RUN, target, rep, {"kind": "ec2", "instance_type": "m6i.large", "engine": "mysql-8.0"},
                              Fingerprint(run_id=RUN, target_id=target, repetition=rep, time=T0, cpu_model="x",
                                          kernel="6.1" if target == "b" else "6.8", sysbench_version="1.0.20"))
        # Two measured seconds per step, target c under iowait 6 points above a's (a caveat in both dialects).
        seconds = [Sample(run_id=RUN, target_id=x.target_id, variant=x.variant, repetition=x.repetition, workload="w",
                          step=x.step, phase="measure", threads=4, time=x.time + timedelta(seconds=i), second=float(i),
                          tps=x.tps, qps=x.qps, reads_per_s=0.0, writes_per_s=0.0, other_per_s=0.0, latency_ms=2.0,
                          latency_pct=95, errors_per_s=0.0, reconnects_per_s=0.0, cpu_steal_pct=x.steal_mean_pct,
                          cpu_user_pct=50.0, cpu_system_pct=10.0,
                          cpu_iowait_pct=6.75 if x.target_id == "c" else 0.5) for x in found for i in (1, 2)]
        db.add_output(AgentOutput(summaries=found, samples=seconds))
        query = dataset("step_results") if dialect == "athena" else timestream_dataset("step_results", db)
        sql = {(r["target_id"], r["variant"]): r for r in db.query(query)}
        doc = stats.run_comparison(db, RUN)
    finally:
        db.close()
    verdicts = set()
    for row in doc["rows"]:
        got, rel = sql[(row["target_id"], row["variant"])], row["relative"]
        if rel is None:
            assert got["verdict"] == "baseline" and got["design"] is None
            continue
        verdicts.add(rel["verdict"])
        assert (got["design"], got["verdict"]) == (rel["design"], rel["verdict"]), row["label"]
        assert got["relative_pct"] == pytest.approx(rel["pct"]) and got["margin_pct"] == doc["margin_pct"] == 4
        for key in ("ci_low_pct", "ci_high_pct"):
            # Welch's t is interpolated between whole degrees of freedom (speedup.sql): within 1%.
            assert (got[f"relative_{key}"] is None) == (rel[key] is None), (row["label"], key)
            if rel[key] is not None:
                assert got[f"relative_{key}"] == pytest.approx(rel[key], rel=0.01, abs=0.05), (row["label"], key)
        # Steal: the SQL reads the step summaries' mean steal (collect writes it from the seconds), which
        # this fixture has without seconds; results reads the seconds. The fingerprint caveats agree.
        fingerprint = ({"kernel", "engine_version", "sysbench_version", "cpu_model"} if dialect == "timestream"
                       else set())
        assert {w.split(" ")[0] for w in (got["caveats"] or "").split("; ") if w} - {"steal"} == \
            {c["kind"] for c in row["caveats"]} - {"steal"} - fingerprint, row["label"]
    assert {"faster", "slower", "inconclusive", "too few repetitions"} <= verdicts, verdicts
    assert sql[("b", "durable")]["caveats"] == ("steal 1.70% vs 0.20%; kernel 6.1 vs 6.8" if dialect == "athena"
                                                else "steal 1.70% vs 0.20%")
    assert sql[("c", "durable")]["caveats"] == "iowait 6.75% vs 0.50%"
    assert len(sql) == 8 and all(list(r) == EXPECTED_COLUMNS["step_results"] for r in sql.values())


@pytest.mark.parametrize("dialect", ["athena", "timestream"])
def test_step_results_pair_blocks_within_their_repetition(tmp_path, dialect):
    """Issue 37: the dashboards paired a variant by (repetition, block), so 3 repetitions x 2 blocks were
    6 pairs with 5 degrees of freedom. Blocks of one repetition share its server and moment: each
    repetition's log ratio is its blocks' mean, the interval is over the 3 repetitions, as `results`
    says. The block ratios here cluster by repetition (the effect differs between them)."""
    from benchfleet.workload.records import StepSummary

    effects = {1: 1.10, 2: 1.30, 3: 1.18}
    found = []
    for rep, effect in effects.items():
        for block, noise in ((1, 1.0), (2, 1.01)):
            for variant, tps in (("durable", 100.0 * noise), ("relaxed", 100.0 * noise * effect * (1 + 0.005 * block))):
                found.append(StepSummary(
                    run_id=RUN, target_id="box", variant=variant, repetition=rep, block=block, workload="w",
                    step=f"t4.{variant}.b{block}", phase="measure", threads=4,
                    time=T0 + timedelta(minutes=10 * rep + 2 * block + (variant == "relaxed")), total_time_s=10.0,
                    transactions=int(tps * 10), tps=tps, queries=int(tps * 100), qps=tps * 10, reads=0, writes=0,
                    other=0, ignored_errors=0, errors_per_s=0.0, reconnects=0, reconnects_per_s=0.0,
                    events=int(tps * 10), latency_min_ms=1.0, latency_avg_ms=2.0, latency_max_ms=9.0, latency_pct=95,
                    latency_pct_ms=3.0, samples=10, steal_mean_pct=0.0))
    spec = {"targets": [{"id": "box", "kind": "local"}], "variants": [{"id": "durable"}, {"id": "relaxed"}]}
    db = DuckDBStore(tmp_path / "b.duckdb")
    try:
        db.create_run(RUN, "blocks", spec, "local", None)
        db.add_output(AgentOutput(summaries=found, samples=[]))
        query = dataset("step_results") if dialect == "athena" else timestream_dataset("step_results", db)
        got = {r["variant"]: r for r in db.query(query)}["relaxed"]
        rel = next(r for r in stats.run_comparison(db, RUN)["rows"] if r["variant"] == "relaxed")["relative"]
    finally:
        db.close()
    assert (rel["unit"], rel["repetitions"], rel["df"], rel["blocks"]) == ("repetition", [3, 3], 2.0, 6)
    assert got["repetitions"] == 3 and got["design"] == rel["design"] == "paired"
    assert got["relative_pct"] == pytest.approx(rel["pct"])
    # df 2 is in the t table exactly: the SQL interval is the Python one.
    assert got["relative_ci_low_pct"] == pytest.approx(rel["ci_low_pct"], rel=1e-6)
    assert got["relative_ci_high_pct"] == pytest.approx(rel["ci_high_pct"], rel=1e-6)
    assert got["verdict"] == rel["verdict"]
