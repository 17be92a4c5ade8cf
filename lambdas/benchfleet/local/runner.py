"""The local backend: walk a plan on this machine, one target at a time.

Per target and repetition: a fresh private MariaDB server (``kind: local``) or the user's own server
(``kind: existing``, see ``local/existing.py``), then one agent subprocess per plan step.
Every line the agent writes lands in ``<home>/raw/<raw_key>`` before anything is derived from it;
after each step the raw file is read back with the one agent-output reader and loaded into DuckDB.
The server goes away on every exit path (``with LocalServer``), Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from benchfleet.cost import pricing
from benchfleet.local.existing import ExistingServer, ExistingServerError, engine_of, table_prefixes, variables_hash
from benchfleet.local.galera import LocalCluster
from benchfleet.local.machine import MachineWatch, machine_lock
from benchfleet.local.mariadb import Connection, LocalServer, LocalServerError
from benchfleet.local.store import DuckDBStore
from benchfleet.local.switching import VariantFailed, VariantSettings
from benchfleet.local.watchdog import StepWatchdog, deadline_s, kill_group
from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import Plan, PlanStep
from benchfleet.plan.naming import new_run_id, raw_key
from benchfleet.spec.documents import repo_root
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import cnf_source
from benchfleet.spec.targets import ExistingTarget, LocalTarget, is_cluster
from benchfleet.stats.caveats import overlap_words
from benchfleet.workload import serverstatus
from benchfleet.workload.records import AgentOutput, Fingerprint, RecordError, parse_agent_lines
from benchfleet.workload.validation import output_problem, plan_problem

# Fingerprint fields that describe the machine the agent runs on. For an existing server that is
# this machine, not the server's: they are left empty rather than recorded as the server's.
_HOST_FIELDS = ("cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os")


class StepFailed(RuntimeError):
    """The agent reported an error: the run stops, and the message is the agent's."""


class Observer(Protocol):
    """What the runner tells its user; the CLI draws it with rich, tests record it.

    Per target and repetition: ``target_started`` (its server is being set up), ``target_ready``,
    then per step ``step_started`` / ``sample``... / ``step_finished``, and ``target_finished`` once
    the server is gone. ``message`` is a notice; the runner sends each distinct one once per run."""

    def target_started(self, target_id: str, repetition: int, steps: list[PlanStep]) -> None: ...
    def target_ready(self, target_id: str, repetition: int) -> None: ...
    def target_finished(self, target_id: str, repetition: int) -> None: ...
    def step_started(self, target_id: str, repetition: int, step: PlanStep) -> None: ...
    def sample(self, target_id: str, step: PlanStep, second: float, tps: float,
               tpmc: float | None = None) -> None: ...
    def step_finished(self, target_id: str, repetition: int, step: PlanStep, output: AgentOutput) -> None: ...
    def message(self, text: str) -> None: ...


@dataclass
class RunResult:
    run_id: str
    status: str
    message: str | None = None
    cost_usd: float = 0.0
    raw_files: list[Path] = field(default_factory=list)


def agent_path() -> Path:
    return repo_root() / "workloads" / "agent" / "benchfleet_agent.py"


# Stop a run the way Ctrl-C does: `kill` and CI cancelling (SIGTERM), a closed terminal or SSH
# session (SIGHUP, whose default would kill benchfleet before it stops its servers).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP clean up exactly like Ctrl-C."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


class _Notices:
    """Each distinct notice once per run (the same cnf skipped for every repetition says it once)."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer
        self.said: set[str] = set()

    def __call__(self, text: str) -> None:
        if text not in self.said:
            self.said.add(text)
            self.observer.message(text)


def run_local(loaded: LoadedSpec, plan: Plan, store: DuckDBStore, home: Path, observer: Observer,
              run_id: str | None = None) -> RunResult:
    run_id = run_id or new_run_id(loaded.spec.name)
    # One benchmark at a time on this machine (re-entered when the CLI already holds it); the wait
    # comes before the run is recorded, so a waiting run is not listed as running.
    with machine_lock(run_id, say=observer.message), MachineWatch() as watch:
        try:
            return _run_locked(loaded, plan, store, home, observer, run_id)
        finally:
            machine = watch.summary()
            store.set_machine(run_id, machine)
            if machine["overlapped"]:
                # Counted, as the caveat counts them: sysbench starts anew for every step, and a list
                # of every pid and command line ran to forty lines (each stays in the run's JSON).
                observer.message("this run overlapped another benchmark on this machine: "
                                 f"{overlap_words(machine['overlapped'])}; its verdicts against other runs say so")


def _run_locked(loaded: LoadedSpec, plan: Plan, store: DuckDBStore, home: Path, observer: Observer,
                run_id: str) -> RunResult:
    store.create_run(run_id, loaded.spec.name, loaded.inline(), plan.mode, plan.estimated_cost_usd)
    result = RunResult(run_id=run_id, status="running")
    notice = _Notices(observer)
    targets = {t.id: t for t in loaded.spec.targets}
    try:
        with _sigterm_as_interrupt():
            for target in loaded.spec.targets:
                if not isinstance(target, LocalTarget | ExistingTarget):
                    raise StepFailed(f"target {target.id} is kind {target.kind}: run it with --remote")
            # In rounds (A1 B1, B2 A2, ...) unless the spec says sequential: see Plan.local_order.
            for target_id, repetition in plan.local_order():
                target = targets[target_id]
                assert isinstance(target, LocalTarget | ExistingTarget)
                target_plan = next(t for t in plan.targets if t.target_id == target.id)
                _run_target(loaded, target, repetition, target_plan.steps_of(repetition), run_id, store, home,
                            observer, result, notice)
        result.status = "succeeded"
    except KeyboardInterrupt:
        result.status, result.message = "aborted", "interrupted; servers stopped and removed"
        raise
    except (StepFailed, LocalServerError, ExistingServerError, VariantFailed) as e:
        result.status, result.message = "failed", str(e)
    except Exception as e:
        result.status, result.message = "failed", f"{type(e).__name__}: {e}"
        raise
    finally:
        shutil.rmtree(state_dir(home, run_id), ignore_errors=True)
        store.finish_run(run_id, result.status, result.message, round(result.cost_usd, 4))
    return result


def state_dir(home: Path, run_id: str) -> Path:
    """Where the agent keeps what outlives one step of a run here (the rows in an insert workload's
    table, workloads/agent/benchfleet_rows.py); removed when the run ends."""
    return home / "state" / run_id


Server = LocalServer | LocalCluster | ExistingServer


def _server_for(loaded: LoadedSpec, target: LocalTarget | ExistingTarget, repetition: int, home: Path,
                notice: _Notices) -> Server:
    if isinstance(target, ExistingTarget):
        notice(f"{target.id}: an existing server at {target.host}:{target.port}; CPU figures, steal "
               "included, are this machine's (the client's), not the server's")
        return ExistingServer(target, table_prefixes())
    # With variants the server starts with the first variant's settings (the plan counts on it). A
    # cluster's nodes run the target's own, as on AWS: its variants may restate them, never change
    # them (benchfleet.spec.rules.cluster_settings_problems).
    first = loaded.variants[0] if loaded.variants and target.cluster is None else None
    config, source = cnf_source(target, first)
    server: LocalServer | LocalCluster
    if target.cluster is not None:
        server = LocalCluster(home, f"{target.id}-r{repetition}", source, target.memory_mb,
                              nodes=target.cluster.nodes, proxy=target.cluster.proxy, cpus=target.cpus,
                              cnf_name=f"{config}.cnf",
                              on_phase=lambda text: notice(f"{target.id} repetition {repetition}: {text}"))
    else:
        server = LocalServer(home, f"{target.id}-r{repetition}", source, target.memory_mb,
                             target.cpus, cnf_name=f"{config}.cnf")
    if server.rendered.skipped:
        notice(f"{config}.cnf options not applied on MariaDB: " + ", ".join(server.rendered.skipped))
    return server


def default_route(target: LocalTarget | ExistingTarget) -> str:
    """Where sysbench connects when no variant says: through a cluster's proxy when it has one."""
    if isinstance(target, LocalTarget) and target.cluster is not None and target.cluster.proxy != "none":
        return "proxy"
    return "direct"


def route_of(loaded: LoadedSpec, target: LocalTarget | ExistingTarget, step: PlanStep) -> str:
    """How a cluster's step reaches it: its variant's route, else the target's default."""
    variant = loaded.variant(step.variant)
    return variant.route if variant is not None and variant.route else default_route(target)


def status_job(loaded: LoadedSpec, target: LocalTarget | ExistingTarget, server: Server) -> dict[str, object] | None:
    """The agent job's ``status``: which counters to read from which sources (None: none)."""
    cluster = is_cluster(target)
    counters = serverstatus.counters_for(loaded.spec.status_counters, cluster)
    if not counters:
        return None
    job: dict[str, object] = {"counters": counters, "interval_s": loaded.workload.report_interval_s}
    if isinstance(server, LocalCluster):
        job.update(sources=server.status_sources(), cluster_nodes=server.size)
    return job


def _target_meta(target: LocalTarget | ExistingTarget, fp: Fingerprint | None) -> dict[str, object]:
    """The targets row's description of the server that was measured (its variables as the agent read
    them over its own connection)."""
    variables: dict[str, str] = dict(getattr(fp, "server_variables", None) or {})
    common = {"price_per_hour": target.price_per_hour or 0.0, "storage": None,
              "server_variables": json.dumps(variables, sort_keys=True),
              "prices": pricing.recorded_prices(target)}
    if isinstance(target, ExistingTarget):
        return {**common, "kind": target.kind, "instance_type": None, "engine": engine_of(variables),
                "mysql_config": None, "region": None, "cpus": None, "steal_source": "client"}
    return {**common, "kind": target.kind,
            "instance_type": f"local-{len(target.cpus or [])}cpu-{target.memory_mb}mb"
            if target.cpus else f"local-{target.memory_mb}mb", "engine": target.engine,
            "mysql_config": target.mysql_config, "region": "local",
            "cpus": ",".join(map(str, target.cpus)) if target.cpus else None, "steal_source": "server"}


def _fingerprint(output: AgentOutput, target: LocalTarget | ExistingTarget) -> Fingerprint | None:
    fp = output.fingerprints[0] if output.fingerprints else None
    if fp is None or not isinstance(target, ExistingTarget):
        return fp
    # The server's host is not this machine: its hardware is unknown, not this machine's.
    variables = dict(getattr(fp, "server_variables", None) or {})
    return fp.model_copy(update={**dict.fromkeys(_HOST_FIELDS),
                                 "config_hash": variables_hash(variables) if variables else None})


def _run_target(loaded: LoadedSpec, target: LocalTarget | ExistingTarget, repetition: int, steps: list[PlanStep],
                run_id: str, store: DuckDBStore, home: Path, observer: Observer, result: RunResult,
                notice: _Notices) -> None:
    server = _server_for(loaded, target, repetition, home, notice)
    switching = VariantSettings.of(loaded, target) if isinstance(target, LocalTarget) else None
    observer.target_started(target.id, repetition, steps)
    started = time.monotonic()
    with server as handle:
        cluster: LocalCluster | None = None
        if isinstance(handle, LocalCluster):
            cluster, conn = handle, handle.connection(default_route(target))
        else:
            conn = handle
        if isinstance(server, LocalServer) and server.retried:
            notice(f"{target.id} repetition {repetition}: the server failed to start once and was started "
                   f"again: {server.retried.splitlines()[0]}")
        if switching is not None:
            switching.current = switching.first
        observer.target_ready(target.id, repetition)
        requested = dict(server.rendered.options) if isinstance(server, LocalServer | LocalCluster) else None
        # The prepare step fails the target on a setting the server does not run; the variants' own
        # settings are read back by their steps instead (a verdict between two the server ran alike is
        # refused, the others stand).
        verify = {"varying": switching.varying} if switching is not None and switching.varying else None
        status = status_job(loaded, target, server)
        for step in steps:
            observer.step_started(target.id, repetition, step)
            settings = None
            if switching is not None and isinstance(server, LocalServer):
                try:
                    switching.switch(server, step)
                except VariantFailed as e:
                    raise VariantFailed(f"{target.id} repetition {repetition} step {step.name}: {e}; the run "
                                        "stopped here and its servers were removed") from None
                settings = switching.job_settings(step)
            elif step.settings is not None:  # an existing server: the variants differ in workload only
                settings = {"variant": step.settings, "method": "none", "requested": {}}
            # A cluster's step connects by its route: its variant's, else through the proxy when there is one.
            here = cluster.connection(route_of(loaded, target, step)) if cluster is not None else conn
            output = _run_step(loaded, target, repetition, step, run_id, here, server, home, observer, result,
                               requested, settings, status, verify)
            if step.kind == "prepare":
                fp = _fingerprint(output, target)
                meta = _target_meta(target, fp)
                if cluster is not None:
                    meta["cluster"] = json.dumps(cluster.fingerprint(), sort_keys=True)
                store.add_target(run_id, target.id, repetition, meta, fp)
            store.add_output(output)
            observer.step_finished(target.id, repetition, step, output)
            # What the agent reported (a status counter the server does not have, a variant's setting the
            # server runs with another value, no disk figures): kept in the raw output only, never shown.
            for said in output.notices:
                if said.message:
                    notice(f"{target.id}: {said.message}")
            if step.cooldown_s:
                time.sleep(step.cooldown_s)
    observer.target_finished(target.id, repetition)
    # Actual cost: the target's price for the time it existed (local targets are usually free).
    result.cost_usd += (target.price_per_hour or 0.0) * (time.monotonic() - started) / 3600


def _run_step(loaded: LoadedSpec, target: LocalTarget | ExistingTarget, repetition: int, step: PlanStep,
              run_id: str, conn: Connection, server: Server, home: Path, observer: Observer,
              result: RunResult, requested: dict[str, str] | None = None,
              settings: dict[str, Any] | None = None, status: dict[str, object] | None = None,
              verify: dict[str, Any] | None = None) -> AgentOutput:
    data_dir = server.data_dir if isinstance(server, LocalServer) else None
    job = agent_job(run_id=run_id, target_id=target.id, repetition=repetition,
                    workload=loaded.workload_of(step.variant), step=step, db=conn.as_job(),
                    config_hash=server.config_hash, requested=requested, settings=settings,
                    data_dir=str(data_dir) if data_dir else None, state_dir=str(state_dir(home, run_id)),
                    status=status, verify=verify)
    raw = home / "raw" / raw_key(run_id, target.id, repetition, step.name).removeprefix("runs/")
    raw.parent.mkdir(parents=True, exist_ok=True)
    result.raw_files.append(raw)
    # The job goes in on stdin: it carries the database password, which argv would show to `ps`.
    where = f"{target.id} repetition {repetition} step {step.name}"
    with raw.open("w") as sink:
        # Its own process group (with its sysbench), so the watchdog can stop both, even stopped ones.
        agent = subprocess.Popen([sys.executable, str(agent_path()), "--job", "-"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        assert agent.stdin is not None and agent.stdout is not None
        agent.stdin.write(json.dumps(job))
        agent.stdin.close()
        watched = [("the agent", agent.pid)]
        error_log: Path | list[Path] | None = None
        if isinstance(server, LocalServer):  # an existing server is not ours to watch, only the agent
            error_log = server.error_log
            if server.process is not None:
                watched.insert(0, ("the MariaDB server", server.process.pid))
        elif isinstance(server, LocalCluster):
            error_log = server.error_logs
            watched = [*server.processes, *watched]
        dog = StepWatchdog(deadline_s(step), watched, lambda reason: kill_group(agent.pid), error_log=error_log)
        try:
            with dog:
                for line in agent.stdout:
                    dog.progress()
                    sink.write(line)
                    sink.flush()
                    if line.startswith('{"type":"sample"'):
                        record = json.loads(line)
                        observer.sample(target.id, step, record["second"], record["tps"], record.get("tpmc"))
        except BaseException:
            # Interrupted here (SIGTERM reaches only us): stop the agent and its sysbench.
            if agent.poll() is None:
                kill_group(agent.pid)
            raise
        finally:
            code = agent.wait()
    if dog.reason:
        raise StepFailed(f"{where}: {dog.reason}; stopped, nothing of this step stored")
    try:
        output = parse_agent_lines(raw.read_text(), str(raw))
    except RecordError as e:
        raise StepFailed(f"{where}: {e}; not stored as a result") from None
    if code != 0 or output.errors:
        first = output.errors[0].message if output.errors else f"agent exited with code {code}"
        raise StepFailed(f"{where}: {first}")
    # The checks cloud collect makes too (benchfleet.workload.validation): this step's rows, real figures, ...
    every = loaded.workload.report_interval_s
    problem = output_problem(output, run_id=run_id, target_id=target.id, repetition=repetition, step=step.name,
                             kind=step.kind, duration_s=step.duration_s, report_interval_s=every,
                             read_at=datetime.now(UTC), check_plan=False, variant=step.variant, block=step.block,
                             sources=(target.cluster.nodes, target.cluster.proxy) if isinstance(target, LocalTarget)
                             and target.cluster is not None else (0, "none"))
    if problem:
        raise StepFailed(f"{where}: {problem}; not stored as a result")
    # ... and its plan's duration and samples.
    problem = plan_problem(output, step=step.name, kind=step.kind, duration_s=step.duration_s,
                           report_interval_s=every)
    if problem:
        raise StepFailed(f"{where}: {problem}: the host or server stalled; not stored as a result")
    return output
