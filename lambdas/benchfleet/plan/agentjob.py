"""The agent's job for one plan step: the only place a workload becomes sysbench (or go-tpc) options.

Both backends build jobs here: the local runner passes them to the agent subprocess, the AWS
start-step Lambda passes them as the SSM document's JobJson parameter.
"""

from __future__ import annotations

from typing import Any

from benchfleet.plan.model import PlanStep
from benchfleet.spec.workload import ONE_ROW_PER_EVENT, Workload


def rows_of(workload: Workload, state_dir: str | None) -> dict[str, Any] | None:
    """The job's ``rows`` for a workload that inserts one row per event (None otherwise, or without a
    ``state_dir``): the rows prepare loads, and where the host keeps the count between steps."""
    if workload.test not in ONE_ROW_PER_EVENT or not state_dir:
        return None
    return {"prepared": workload.tables * workload.table_size, "state_dir": state_dir}


def sysbench_options(workload: Workload) -> dict[str, Any]:
    """Options common to prepare and run; threads, time and connection are added per step."""
    options: dict[str, Any] = {
        "tables": workload.tables,
        "table-size": workload.table_size,
        "percentile": workload.percentile,
        "rand-type": workload.rand_type,
    }
    # sysbench's own default for --mysql-ignore-errors (retry deadlocks and lock wait timeouts and
    # count them in err/s) stays: they are part of what an OLTP mix measures. Lost connections and
    # other errors still end the step as a failure.
    options.update({name.replace("_", "-"): value for name, value in workload.options.items()})
    return options


def agent_job(*, run_id: str, target_id: str, repetition: int, workload: Workload, step: PlanStep,
              db: dict[str, Any], config_hash: str | None = None,
              requested: dict[str, str] | None = None,
              settings: dict[str, Any] | None = None, data_dir: str | None = None,
              state_dir: str | None = None, status: dict[str, Any] | None = None,
              verify: dict[str, Any] | None = None) -> dict[str, Any]:
    """``requested``: the server options a server benchfleet started was given (cnf and the spec's
    server_options); the prepare step's fingerprint records their effective values. On a fresh
    EC2 host the install step reports them instead. ``data_dir``: the server's data directory when
    it is on the agent's host (the disk the agent samples per second); ``state_dir``: where the
    agent keeps the rows in the table between steps (insert workloads; None: not counted).

    With variants, ``workload`` is the step's variant's (``LoadedSpec.workload_of``); the job names
    the variant (every record the agent writes carries it) and the block, the step's data set
    (``db.database``), and ``settings``: the variant's settings the step must run with
    (``{"variant", "requested": {option: value}}``, plus ``apply`` where the agent switches them
    itself); the agent reads them back from the server and records requested and effective values
    with the step's summary. ``status``: the server status the agent reads every second
    (workloads/agent/benchfleet_status.py; benchfleet.workload.serverstatus). ``verify``: how the prepare step
    holds the server to ``requested`` before anything is measured (``{"varying": settings the variants
    set apart, which their own steps read back, "settle_s": how long a managed server's values may take
    to arrive}``): a setting it still runs with another value fails the target, naming it."""
    job: dict[str, Any] = {
        "run_id": run_id,
        "target_id": target_id,
        "repetition": repetition,
        "workload": workload.name,
        "step": {"name": step.name, "kind": step.kind, "threads": step.threads,
                 "duration_s": step.duration_s},
        "report_interval_s": workload.report_interval_s,
        "db": dict(db, database=step.database) if step.database else db,
        "config_hash": config_hash,
    }
    if workload.tool == "go-tpc":
        # TPC-C's data set is its warehouses; the percentile is the one each sample's latency gives.
        job["gotpc"] = {"test": workload.test, "warehouses": workload.warehouses, "percentile": workload.percentile}
    else:
        job["sysbench"] = {"test": workload.test, "options": sysbench_options(workload)}
    if step.variant is not None:
        job["variant"] = step.variant
    if step.block is not None:
        job["step"]["block"] = step.block
    if requested:
        job["requested"] = requested
    if settings:
        job["settings"] = settings
    if verify:
        job["verify"] = verify
    if data_dir:
        job["data_dir"] = data_dir
    rows = rows_of(workload, state_dir)
    if rows:
        job["rows"] = rows
    if status:
        job["status"] = status
    return job
