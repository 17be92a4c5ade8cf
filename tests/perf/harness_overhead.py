#!/usr/bin/env python3
"""How much does measuring through the agent cost? (Benchmark, not a test: prints its figures.)

On one local MariaDB server, the same sysbench step runs alternately straight from here and through
the agent (which reads every interval line and samples /proc/stat each second). Pairs alternate their
order (ABBA) so that warming effects do not favour one side. Prints each run's qps, the median of each
side, ``ratio=<agent/direct>`` (the target is >= 0.99; the limit is 1.00) and, as the last line,
``agent_cpu_share=``: the agent's own CPU time (the agent process alone, from /proc/<pid>/schedstat;
sysbench, its child, is not in it) from its first sample to its exit, per second
of that interval, as a share of one core (target <= 0.005). On a 2-core machine the qps ratio swings
by several percent between runs; the CPU share is what resolves the agent's cost. The figure before
it, ``agent_cpu_startup_s=``, is the CPU the agent spends before its first sample (interpreter
start, imports, job parsing), once per step.

    .venv/bin/python tests/perf/harness_overhead.py [--pairs 6] [--duration 20] [--threads 2] [--agent PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lambdas"))

from benchfleet.local.mariadb import LocalServer  # noqa: E402
from benchfleet.plan.agentjob import agent_job  # noqa: E402
from benchfleet.plan.model import PlanStep  # noqa: E402
from benchfleet.spec.workload import Workload  # noqa: E402
from benchfleet.workload.sysbench import build_command, parse_output  # noqa: E402

AGENT = REPO / "workloads" / "agent" / "benchfleet_agent.py"


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time of one process, its children not included: the scheduler's on-CPU nanoseconds
    (/proc/<pid>/schedstat; the agent is single-threaded) where the kernel keeps them, else utime +
    stime from /proc/<pid>/stat, which counts in ticks of 10 ms, too coarse for one step."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class AgentRun(NamedTuple):
    qps: float
    startup_cpu_s: float  # before the first sample
    step_cpu_s: float     # from the first sample to exit
    step_wall_s: float


def run_agent(job: dict[str, object], agent: Path = AGENT) -> AgentRun:
    proc = subprocess.Popen([sys.executable, str(agent), "--job", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(job))
    proc.stdin.close()
    records = []
    first: tuple[float, float] | None = None
    for line in proc.stdout:
        record = json.loads(line)
        records.append(record)
        if first is None and record["type"] == "sample":
            first = (time.monotonic(), cpu_seconds(proc.pid))
    # Wait for the exit without reaping: a zombie's /proc/<pid>/stat still holds its final times.
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    end = (time.monotonic(), cpu_seconds(proc.pid))
    stderr = proc.stderr.read()
    summary = [r for r in records if r["type"] == "summary"]
    if proc.wait() != 0 or not summary or first is None:
        raise SystemExit(f"agent failed: {records[-1] if records else stderr}")
    return AgentRun(float(summary[0]["qps"]), first[1], end[1] - first[1], end[0] - first[0])


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
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--agent", type=Path, default=AGENT,
                        help="the agent script to measure (e.g. an older copy beside it, for before/after)")
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
        agent: list[AgentRun] = []
        for pair in range(args.pairs):
            order = ("direct", "agent") if pair % 2 == 0 else ("agent", "direct")
            for side in order:
                if side == "direct":
                    direct.append(run_direct(job(step), step))
                    print(f"pair {pair + 1} direct: {direct[-1]:,.1f} qps", flush=True)
                else:
                    agent.append(run_agent(job(step), args.agent))
                    a_run = agent[-1]
                    print(f"pair {pair + 1}  agent: {a_run.qps:,.1f} qps, {a_run.step_cpu_s:.2f} CPU s in "
                          f"{a_run.step_wall_s:.1f} s", flush=True)
    d, a = statistics.median(direct), statistics.median(r.qps for r in agent)
    print(f"median direct qps={d:.1f}")
    print(f"median agent qps={a:.1f}")
    print(f"ratio={a / d:.4f}")
    print(f"agent_cpu_startup_s={statistics.median(r.startup_cpu_s for r in agent):.3f}")
    # Over all runs together: the ratio of sums weighs each second alike.
    share = sum(r.step_cpu_s for r in agent) / sum(r.step_wall_s for r in agent)
    print(f"agent_cpu_share={share:.5f}")


if __name__ == "__main__":
    main()
