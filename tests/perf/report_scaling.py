"""How the HTML report scales with the number of per-second samples (not part of the unit suite).

For 10k, 100k and 1M samples (1M = 50 targets x 8 steps x 2500 s) and a 200-target 24 h soak
(17m: 200 targets x one 86,400 s step, 17.3M samples), a temporary DuckDB store is filled with SQL
(generate_series, seconds per size), then fresh subprocesses run ``benchfleet results RUN --format
json`` and build the report, each reporting its wall time and peak resident memory (ru_maxrss:
Python, DuckDB and Plotly's JS string together). Targets: 1M samples in under 10 s and 2 GB; the
17M soak's results and report each in under 10 s and 1 GB, its HTML under 10 MB.

After the table, one ``name=value`` line per figure of each size that has targets, each followed by
its ratio to the target (``..._ratio=``, at most 1 is within it), e.g. ``17m_results_s=4.1`` and
``17m_results_s_ratio=0.41``.

    .venv/bin/python tests/perf/report_scaling.py [--sizes 10k,100k,1m,17m] [--keep DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {"10k": (5, 4, 500), "100k": (20, 5, 1000), "1m": (50, 8, 2500),  # targets, steps, seconds
         "17m": (200, 1, 86_400)}
# (seconds, peak MB, HTML MB) each of results and report may take at this many samples or more.
LIMITS = {1_000_000: (10.0, 2048.0, None), 17_000_000: (10.0, 1024.0, 10.0)}
RUN_ID = "scaling-20261101t000000-0000"
FAMILIES = [("m6i", 0.048), ("m6g", 0.0385), ("c7g", 0.03625), ("m7i", 0.0504), ("r6i", 0.063)]
SIZE_NAMES = [("large", 2), ("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16), ("8xlarge", 32)]

# Columns named: the tables gain columns (variant, block, arrived_s...) that these rows leave at their default.
_SAMPLES_SQL = """
INSERT INTO samples (time, run_id, target_id, repetition, workload, step, threads, phase, second, tps, qps,
                     reads_per_s, writes_per_s, other_per_s, latency_ms, latency_pct, errors_per_s, reconnects_per_s,
                     cpu_steal_pct, cpu_user_pct, cpu_system_pct, cpu_iowait_pct, interval_s)
SELECT TIMESTAMPTZ '2026-11-01 00:00:00+00' + to_seconds(CAST(k * (? + 10) + i AS BIGINT)) AS time,
       ? AS run_id, 't' || lpad(CAST(t AS VARCHAR), 3, '0') AS target_id, 1 AS repetition,
       'sweep' AS workload, 't' || lpad(CAST(th AS VARCHAR), 4, '0') AS step, th AS threads,
       'measure' AS phase, i AS second, tps, tps * 16, tps * 14, 0, tps * 2,
       1000.0 * th / tps * (1.3 + 0.6 * random()) AS latency_ms, 95, 0, 0,
       CASE WHEN i % 600 < 30 THEN 15 + 10 * random() ELSE 0.3 * random() END AS steal, 60, 15, 0.1,
       1.0 AS interval_s
FROM (
    SELECT t, k, i, CAST(pow(2, k) AS INTEGER) AS th,
           (1000 + 100 * (t % 10)) * (1 << (t // 10 % 5)) * pow(2, k) / (pow(2, k) + 1.5)
               * (0.97 + 0.06 * random()) AS tps
    FROM generate_series(0, ? - 1) g1(t), generate_series(0, ? - 1) g2(k), generate_series(1, ?) g3(i))
"""

_SUMMARIES_SQL = """
INSERT INTO step_summaries (time, run_id, target_id, repetition, workload, step, threads, phase, total_time_s,
                            transactions, tps, queries, qps, reads, writes, other, ignored_errors, errors_per_s,
                            reconnects, reconnects_per_s, events, latency_min_ms, latency_avg_ms, latency_max_ms,
                            latency_pct, latency_pct_ms, sysbench_version, samples, tps_cv, steal_mean_pct,
                            samples_expected, covered_s, missing_final)
SELECT max(time), run_id, target_id, repetition, any_value(workload), step, any_value(threads), 'measure',
       count(*), CAST(sum(tps) AS BIGINT), avg(tps), CAST(sum(qps) AS BIGINT), avg(qps),
       CAST(sum(reads_per_s) AS BIGINT), 0, CAST(sum(other_per_s) AS BIGINT), 0, 0, 0, 0,
       CAST(sum(tps) AS BIGINT), min(latency_ms) / 3, avg(latency_ms) / 1.5, max(latency_ms) * 3, 95,
       quantile_cont(latency_ms, 0.9), '1.0.20', count(*), stddev_samp(tps) / avg(tps), avg(cpu_steal_pct),
       count(*) AS samples_expected, CAST(count(*) AS DOUBLE) AS covered_s, false AS missing_final
FROM samples WHERE run_id = ? GROUP BY run_id, target_id, repetition, step
"""


def generate(path: Path, targets: int, steps: int, seconds: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lambdas"))
    from benchfleet.local.store import DuckDBStore

    store = DuckDBStore(path)
    try:
        spec_targets = []
        for t in range(targets):
            family, per_vcpu = FAMILIES[t % len(FAMILIES)]
            size, vcpus = SIZE_NAMES[t // 10 % len(SIZE_NAMES)]
            spec_targets.append({"id": f"t{t:03d}", "kind": "ec2", "instance_type": f"{family}.{size}",
                                 "engine": "mysql-8.0", "mysql_config": "default", "region": "us-east-1",
                                 "price": round(per_vcpu * vcpus, 4), "vcpus": vcpus})
        spec = {"name": "scaling", "workload": "sweep", "repetitions": 1,
                "targets": [{k: v for k, v in t.items() if k not in ("price", "vcpus")} for t in spec_targets]}
        store.create_run(RUN_ID, "scaling", spec, "aws", None)
        with store.transaction() as db:
            db.execute("SELECT setseed(0.42)")
            db.execute(_SAMPLES_SQL, [seconds, RUN_ID, targets, steps, seconds])
            db.execute(_SUMMARIES_SQL, [RUN_ID])
            for t in spec_targets:
                db.execute(
                    "INSERT INTO targets (run_id, target_id, repetition, kind, instance_type, engine, mysql_config, "
                    "region, storage, price_per_hour, vcpus, cpu_model, arch) VALUES (?, ?, 1, 'ec2', ?, ?, ?, ?, "
                    "'gp3:100', ?, ?, 'synthetic', 'x86_64')",
                    [RUN_ID, t["id"], t["instance_type"], t["engine"], t["mysql_config"], t["region"], t["price"],
                     t["vcpus"]])
        store.finish_run(RUN_ID, "succeeded")
    finally:
        store.close()


def build(path: Path, out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lambdas"))
    start = time.perf_counter()
    from benchfleet.local.store import DuckDBStore
    from benchfleet.report.html import write_report

    store = DuckDBStore(path)
    try:
        report = write_report(store, RUN_ID, out)
    finally:
        store.close()
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"seconds": elapsed, "peak_mb": peak_mb, "bytes": report.stat().st_size}))


def results(path: Path) -> None:
    """``benchfleet results RUN --format json`` over the store (its output is counted, not kept)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lambdas"))
    import contextlib
    import io
    import os

    os.environ["BENCHFLEET_HOME"] = str(path.parent)
    start = time.perf_counter()
    from benchfleet.cli.main import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["results", RUN_ID, "--format", "json"])
    elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if code != 0:
        raise SystemExit(f"results exited {code}")
    print(json.dumps({"seconds": elapsed, "peak_mb": peak_mb, "bytes": len(out.getvalue())}))


def _with_ratio(name: str, value: float, target: float) -> list[str]:
    return [f"{name}={value:.2f}", f"{name}_ratio={value / target:.2f}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k,1m,17m")
    parser.add_argument("--keep", type=Path, help="keep stores and reports in this directory")
    parser.add_argument("--reuse", action="store_true", help="measure the stores kept in --keep DIR again "
                        "instead of generating them anew")
    parser.add_argument("--_generate", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--_build", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--_results", nargs=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._generate:
        generate(Path(args._generate[0]), *map(int, args._generate[1:]))
        return 0
    if args._build:
        build(Path(args._build[0]), Path(args._build[1]))
        return 0
    if args._results:
        results(Path(args._results[0]))
        return 0

    work = args.keep or Path(tempfile.mkdtemp(prefix="report-scaling-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'samples':>10} {'targets x steps x s':>20} {'generate s':>11} {'results s':>10} {'results MB':>11} "
          f"{'report s':>9} {'report MB':>10} {'HTML MB':>8}")
    failed, figures_lines = [], []
    for name in args.sizes.split(","):
        targets, steps, seconds = SIZES[name]
        # The store where `benchfleet results` finds it: $BENCHFLEET_HOME/benchfleet.duckdb.
        db = work / name / "benchfleet.duckdb"
        db.parent.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        if not (args.reuse and args.keep and db.exists()):
            db.unlink(missing_ok=True)
            subprocess.run([sys.executable, __file__, "--_generate", str(db), str(targets), str(steps),
                            str(seconds)], check=True)
        generated = time.perf_counter() - t0
        figures = {}
        for what, extra in (("results", ["--_results", str(db)]),
                            ("report", ["--_build", str(db), str(work / name / "report.html")])):
            done = subprocess.run([sys.executable, __file__, *extra], check=True, capture_output=True, text=True)
            figures[what] = json.loads(done.stdout.strip().splitlines()[-1])
        n = targets * steps * seconds
        r, h = figures["results"], figures["report"]
        print(f"{n:>10,} {f'{targets} x {steps} x {seconds}':>20} {generated:>11.1f} {r['seconds']:>10.2f} "
              f"{r['peak_mb']:>11.0f} {h['seconds']:>9.2f} {h['peak_mb']:>10.0f} {h['bytes'] / 1e6:>8.1f}", flush=True)
        # The targets of the largest size class this one reaches.
        floor = max((f for f in LIMITS if n >= f), default=None)
        if floor is None:
            continue
        max_s, max_mb, max_html_mb = LIMITS[floor]
        for what in ("results", "report"):
            f = figures[what]
            figures_lines += _with_ratio(f"{name}_{what}_s", f["seconds"], max_s)
            figures_lines += _with_ratio(f"{name}_{what}_mb", f["peak_mb"], max_mb)
            if f["seconds"] > max_s or f["peak_mb"] > max_mb:
                failed.append(f"{name} {what}: {f['seconds']:.1f} s, {f['peak_mb']:.0f} MB "
                              f"(target {max_s:.0f} s, {max_mb:.0f} MB)")
        if max_html_mb is not None:
            figures_lines += _with_ratio(f"{name}_html_mb", h["bytes"] / 1e6, max_html_mb)
            if h["bytes"] / 1e6 > max_html_mb:
                failed.append(f"{name} HTML: {h['bytes'] / 1e6:.1f} MB (target {max_html_mb:.0f} MB)")
    if not args.keep:
        shutil.rmtree(work)
    for line in figures_lines:
        print(line)
    for problem in failed:
        print(f"over the target: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
