#!/usr/bin/env python3
"""How much does measuring through the agent cost? (Benchmark, not a test: prints its figures.)

On one local MariaDB server, the same sysbench step runs alternately straight from here and through
the agent (which reads every interval line and samples /proc/stat each second). Pairs alternate their
order (ABBA) so that warming effects do not favour one side. Prints each run's qps, the median of each
side and, as the last line, ``ratio=<agent/direct>`` (the target is >= 0.99; the limit is 1.00).

    .venv/bin/python tests/perf/harness_overhead.py [--pairs 3] [--duration 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lambdas"))

from benchfleet.agentjob import agent_job  # noqa: E402
from benchfleet.local.mariadb import LocalServer  # noqa: E402
from benchfleet.plan import PlanStep  # noqa: E402
from benchfleet.spec import Workload  # noqa: E402
from benchfleet.sysbench import build_command, parse_output  # noqa: E402

AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"


def run_agent(job: dict[str, object]) -> float:
    proc = subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job), capture_output=True,
                          text=True, check=False)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    summary = [r for r in records if r["type"] == "summary"]
    if proc.returncode != 0 or not summary:
        raise SystemExit(f"agent failed: {records[-1] if records else proc.stderr}")
    return float(summary[0]["qps"])


def run_direct(job: dict[str, object], step: PlanStep) -> float:
    bench = job["sysbench"]
    db = job["db"]
    assert isinstance(bench, dict) and isinstance(db, dict)
    options = dict(bench["options"], threads=step.threads, time=step.duration_s, **{"report-interval": 1},
                   **{"mysql-host": db["host"], "mysql-port": db["port"], "mysql-user": db["user"],
                      "mysql-password": db["password"], "mysql-db": db["database"]})
    proc = subprocess.run(build_command(str(bench["test"]), "run", options), capture_output=True, text=True,
                          check=False)
    out = parse_output(proc.stdout)
    if proc.returncode != 0 or out.summary is None:
        raise SystemExit(f"sysbench failed: {out.errors or proc.stderr}")
    return out.summary.qps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    workload = Workload(name="overhead", test="oltp_read_only", tables=2, table_size=10_000,
                        threads=[args.threads], duration_s=args.duration)
    cnf = (REPO / "workloads" / "mysql" / "default.cnf").read_text()
    with tempfile.TemporaryDirectory(prefix="bf-perf-") as home, \
            LocalServer(Path(home), "overhead", cnf, 512) as conn:
        prepare = PlanStep(index=0, name="prepare", kind="prepare", threads=2, duration_s=0)
        step = PlanStep(index=1, name="measure", kind="measure", threads=args.threads, duration_s=args.duration)

        def job(s: PlanStep) -> dict[str, object]:
            return agent_job(run_id="perf", target_id="overhead", repetition=1, workload=workload, step=s,
                             db=conn.as_job())

        if subprocess.run([sys.executable, str(AGENT), "--job", "-"], input=json.dumps(job(prepare)),
                          capture_output=True, text=True, check=False).returncode != 0:
            raise SystemExit("prepare failed")
        run_direct(job(step), step)  # warm the buffer pool; not counted
        direct: list[float] = []
        agent: list[float] = []
        for pair in range(args.pairs):
            order = ("direct", "agent") if pair % 2 == 0 else ("agent", "direct")
            for side in order:
                qps = run_direct(job(step), step) if side == "direct" else run_agent(job(step))
                (direct if side == "direct" else agent).append(qps)
                print(f"pair {pair + 1} {side:>6}: {qps:,.1f} qps", flush=True)
    d, a = statistics.median(direct), statistics.median(agent)
    print(f"median direct qps={d:.1f}")
    print(f"median agent qps={a:.1f}")
    print(f"ratio={a / d:.4f}")


if __name__ == "__main__":
    main()
