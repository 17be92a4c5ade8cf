"""The Plan state: a spec (JSON, workload inline) -> what every later state of the run needs.

Lambdas ship only ``lambdas/``, not the workload library, so the state machine's input carries the
workload inline; the CLI (``run --remote``) and the API inline a named workload before starting an
execution, and this module refuses a name with a message saying so. Per target the output carries
the steps (the static part of each agent job: the step itself; the workload once at the top),
``expires_at`` for tags, the deadline and the bounds of every loop.

The run id is the Step Functions execution's name (the janitor and teardown-by-tag know which runs
are running from the executions): Plan gets ``$$.Execution.Name`` and refuses an input ``run_id``
that differs from it. A scheduled run (EventBridge Scheduler's input carries ``schedule``) is named
after its schedule, so ``results --history <schedule>`` lists every night's run.

The prepare step of each repetition carries ``install``, what the agent sets up on the fresh host:
for an ``ec2`` target the engine, sysbench, the text of ``workloads/mysql/<mysql_config>.cnf``
(read here, from the copy shipped with the Lambda: ``benchfleet.spec.documents.workloads_dir()``) and the
storage its data directory goes on (``storage_job``); for the
client of an ``rds`` / ``aurora`` target sysbench, the mysql client and python3-boto3.

Why one module: it is the one producer of the state machine's input (RunRequest in, the Plan state's
output out), checked against statemachines/benchmark-run.input.schema.json; every part of that
contract is built here so that the schema and its producer are read side by side.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchfleet.aws import clients
from benchfleet.aws.errors import PlanRejected, TargetFailed, aws_errors
from benchfleet.aws.fleet import cluster, lifecycle
from benchfleet.aws.fleet import targets as fleet_targets
from benchfleet.aws.planning import asl_walk, controlplane, dbparams, history, variantplan
from benchfleet.aws.regions import TargetRegions
from benchfleet.aws.settings import DEFAULT_RESULTS_STORE, Settings
from benchfleet.aws.steps import commands
from benchfleet.cluster import galera
from benchfleet.cluster.jobs import SETUP
from benchfleet.cost import catalogue
from benchfleet.cost import ceiling as cost_ceiling
from benchfleet.plan import naming, waves
from benchfleet.plan.estimates import cluster_setup_hosts
from benchfleet.plan.model import Plan, PriceLookup, TargetPlan, make_plan, spacing_problem
from benchfleet.spec import switching
from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.documents import SpecError
from benchfleet.spec.fields import SLUG
from benchfleet.spec.loading import LoadedSpec, inline_loaded, parse_spec
from benchfleet.spec.settings import cnf_text
from benchfleet.spec.targets import AuroraTarget, ClusterTarget, Ec2Target, ExistingTarget, RdsTarget, is_cluster
from benchfleet.spec.workload import Workload
from benchfleet.workload import serverstatus
from benchfleet.workload.mysqlcnf import CnfError, render, with_server_options

# Above this many targets the targets Map runs Distributed (each target its own child history).
INLINE_MAX_TARGETS = 40
# ... and above this many bytes of targets (JSON): the inline Map reads its items from the state,
# which Step Functions limits to 256 KiB, next to the execution's input; the Distributed Map reads
# them from S3 (ItemReader). 64 KiB leaves the rest of the state (the spec, the plan) room.
INLINE_MAX_TARGET_BYTES = 64 * 1024
READY_POLL_S = {"ec2": 15, "existing": 15, "rds": 60, "aurora": 60, "cluster": 15}
# Seconds a step may run past its planned duration: the first step installs the engine and sysbench.
SETUP_S = {"prepare": 1800, "warmup": 300, "measure": 300, "setup": 1800}
# A load may take this many times its planned seconds before its step times out: the plan's rate is a
# model (benchfleet.plan.estimates.prepare_seconds), and a long load must never time out a run that would have
# finished (the prepare's setup allowance grows with the load: its Run Command execution timeout too).
PREPARE_TIMEOUT_FACTOR = 3
# After Run Command's bounds, how long the step's status change may take to complete its task.
CALLBACK_MARGIN_S = 300
# A target's deadline: its planned time plus this; resources expire an hour later still.
DEADLINE_MARGIN = timedelta(hours=1)
# The target kinds the deployed state machine provisions (the API refuses the others: one definition).
CLOUD_KINDS = ("ec2", "rds", "aurora", "existing", "cluster")
# A cluster's set-up steps (cluster_setup, of kind clusterjob.SETUP) run in "Run each step" before the
# benchmark's steps, one at a time, each within SETUP_S["setup"] (installs, a start, a state transfer).
# What the agent can install on an EC2 target (Ubuntu 24.04 packages: mysql-server-8.0,
# mariadb-server); workloads/agent/benchfleet_install.py maps these to packages.
EC2_MYSQL_VERSIONS = ("8.0",)
# Caps on what one run may run at once per region (cdk context maxVcpusPerRegion / maxHostsPerRegion,
# given to the Plan Lambda as MAX_VCPUS_PER_REGION / MAX_HOSTS_PER_REGION). 32 vCPUs is a fresh
# account's usual "Running On-Demand Standard instances" quota; 20 hosts its old instance limit.
DEFAULT_MAX_VCPUS_PER_REGION = 32
DEFAULT_MAX_HOSTS_PER_REGION = 20
VCPUS_KEY = "cdk context maxVcpusPerRegion"
HOSTS_KEY = "cdk context maxHostsPerRegion"


class Timing(BaseModel):
    """Overrides of the plan's waits and bounds (tests set waits to 0; people rarely need it)."""

    model_config = ConfigDict(extra="forbid")

    ready_poll_s: int | None = Field(None, ge=0, le=3600)
    ready_max_polls: int | None = Field(None, ge=1, le=1000)
    # How long a step may go without its callback (tests: a silent host fails in seconds).
    step_timeout_s: int | None = Field(None, ge=1, le=7 * 86400)
    cooldown_s: int | None = Field(None, ge=0, le=3600)
    # Lower the inline Map's target limit (tests run the Distributed Map with a few targets).
    distributed_above: int | None = Field(None, ge=0, le=INLINE_MAX_TARGETS)


class RunRequest(BaseModel):
    """The execution's input, whoever starts it: the API, ``run --remote`` (through the API) and the
    EventBridge Scheduler schedules of cdk/lib/schedules.ts. Its JSON Schema (``input_schema``) is
    committed as statemachines/benchmark-run.input.schema.json and checked against every producer."""

    model_config = ConfigDict(extra="forbid")

    # Parsed by Plan with parse_spec (messages naming the field); the schema says what it must be.
    spec: dict[str, Any]
    run_id: str | None = Field(None, pattern=naming.RUN_ID.pattern)
    # The EventBridge Scheduler schedule that started the run (cdk/lib/schedules.ts): the run's name.
    schedule: str | None = Field(None, pattern=SLUG, max_length=64)
    timing: Timing = Timing()


class _InlineSpec(ComparisonSpec):
    """A comparison spec as an execution takes it: the workload inline, never a name; cloud targets."""

    workload: Workload = Field(description="The workload itself (Lambdas ship no workload library)")
    targets: list[Annotated[Ec2Target | RdsTarget | AuroraTarget | ExistingTarget | ClusterTarget,
                            Field(discriminator="kind")]] = Field(  # type: ignore[assignment]
        min_length=1, max_length=200)  # ComparisonSpec's bounds; kinds: CLOUD_KINDS


def input_schema() -> dict[str, Any]:
    """The JSON Schema of an execution's input: RunRequest, its ``spec`` a comparison spec with the
    workload inline."""
    schema = RunRequest.model_json_schema()
    spec = _InlineSpec.model_json_schema(ref_template="#/$defs/{model}")
    schema.setdefault("$defs", {}).update(spec.pop("$defs", {}))
    spec["title"] = "ComparisonSpec (workload inline)"
    schema["$defs"]["InlineSpec"] = spec
    schema["properties"]["spec"] = {"$ref": "#/$defs/InlineSpec"}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "benchfleet benchmark-run execution input"
    return schema


def _loaded(spec_data: dict[str, Any], regions: TargetRegions) -> LoadedSpec:
    try:
        spec = parse_spec(spec_data, "spec")
    except SpecError as e:
        raise PlanRejected(str(e)) from None
    if not isinstance(spec.workload, Workload):
        raise PlanRejected(f"spec: workload: {spec.workload!r} is a name; the API takes the workload "
                           "inline (benchfleet run --remote inlines named workloads)")
    try:
        loaded = inline_loaded(spec, "spec")
    except SpecError as e:
        raise PlanRejected(str(e), field=e.problems[0][0]) from None
    problems = []
    for i, target in enumerate(spec.targets):
        if target.kind not in CLOUD_KINDS:
            problems.append(f"targets[{i}].kind: {target.kind} targets run with benchfleet run --local")
        elif target.kind == "aurora" and target.engine.startswith("mariadb"):
            problems.append(f"targets[{i}].engine: Aurora is MySQL-compatible only, not {target.engine}")
        elif target.kind == "ec2" and not _ec2_engine_ok(target.engine):
            problems.append(f"targets[{i}].engine: EC2 targets install mysql-8.0 or mariadb (Ubuntu 24.04's "
                            f"packages), not {target.engine}")
        elif target.kind == "existing" and getattr(target, "instance_id", None) is None:
            problems.append(f"targets[{i}].instance_id: an existing target needs the EC2 instance "
                            "that runs the agent")
    problems += [f"{field}: {message}" for field, message in regions.problems(list(spec.targets))]
    problems += _zone_problems(spec.targets, regions.home)
    if not problems:  # what exists on AWS, where each target runs (the API checks the same first)
        problems += [f"{field}: {message}"
                     for field, message in catalogue.spec_problems(list(spec.targets), home_region=regions.home)]
    if not problems:
        problems += _engine_version_problems(spec.targets, regions)
    if problems:
        raise PlanRejected("spec: " + "; ".join(problems))
    # Every setting reaches an rds / aurora server through its parameter groups, or the spec is refused.
    unsettable = _parameter_problems(loaded)
    if unsettable:
        raise PlanRejected("spec: " + "; ".join(f"{field}: {message}" for field, message in unsettable),
                           problems=unsettable)
    return regions.resolve(loaded)


def _engine_version_problems(targets: Sequence[Any], regions: TargetRegions) -> list[str]:
    """An rds / aurora engine naming a version inside its line (mysql-8.0.999): looked up as provision
    looks it up (DescribeDBEngineVersions in the target's region), so a version RDS does not offer is
    refused now, not when provision fails minutes later. The catalogue knows the lines only; a spec
    naming just the line (mysql-8.0) makes no request."""
    out = []
    for i, target in enumerate(targets):
        version = target.engine.partition("-")[2] if target.kind in ("rds", "aurora") else ""
        if version.count(".") < 2:
            continue
        engine = "aurora-mysql" if target.kind == "aurora" else target.engine.partition("-")[0]
        try:
            fleet_targets.engine_version(clients.client("rds", regions.region_of(target)), engine, target.engine)
        except TargetFailed as e:
            out.append(f"targets[{i}].engine: {e} in {regions.region_of(target)} (DescribeDBEngineVersions); "
                       f"give the line ({target.engine.rsplit('.', 1)[0]}) for its newest version")
    return out


def _zone_problems(targets: Sequence[Any], home: str) -> list[str]:
    """A cluster's nodes each need a zone of their own: refused where the deployment's subnets in the
    home region (SUBNET_ZONES) span fewer (provision checks other regions' subnets when it launches)."""
    zones = sorted(set(Settings.from_env().subnet_zones))
    out = []
    for i, target in enumerate(targets):
        if target.kind == "cluster" and zones and (target.region or home) == home:
            problem = cluster.zone_problem(target.nodes, home, zones)
            if problem:
                out.append(f"targets[{i}].{problem}")
    return out


def _parameter_problems(loaded: LoadedSpec) -> list[tuple[str, str]]:
    """Settings of rds / aurora targets their parameter groups cannot hold or variants cannot switch."""
    problems: list[tuple[str, str]] = []
    for i, target in enumerate(loaded.spec.targets):
        problems += dbparams.target_parameters(loaded, i)[1]
        problems += switching.switch_problems(loaded, target, i)
    return problems


def _ec2_engine_ok(engine: str) -> bool:
    family, _, version = engine.partition("-")
    return family == "mariadb" or not version or any(
        version == v or version.startswith(v + ".") for v in EC2_MYSQL_VERSIONS)


def _cnf_source(index: int, name: str, engine: str, server_options: dict[str, Any] | None = None) -> str:
    """workloads/mysql/<name>.cnf without comments (the renderer ignores them) with the target's
    server_options layered over it (the host installs exactly this), checked to render."""
    try:
        text = cnf_text(name)
    except SpecError as e:
        raise PlanRejected(f"spec: targets[{index}].mysql_config: {e.problems[0][1]}") from None
    lines = [line.split("#", 1)[0].rstrip() for line in text.splitlines()]
    source = with_server_options("\n".join(line for line in lines if line.strip()) + "\n", server_options)
    try:
        render(source, engine, 8 * 1024**3, name=f"{name}.cnf")
    except CnfError as e:
        field = f"targets[{index}].{'server_options' if server_options else 'mysql_config'}"
        raise PlanRejected(f"spec: {field}: {e}") from None
    return source


def _install(index: int, target: dict[str, Any], loaded: LoadedSpec | None = None) -> dict[str, Any] | None:
    """What the agent sets up on a fresh host on the prepare step (None: nothing, an existing host).
    An ec2 host gets its cnf with the spec's server_options in it: the server the host starts is
    the one the spec describes, and the fingerprint compares what it runs with against all of it.
    With variants, the first variant's (``variant`` names it: the agent switches from there)."""
    if target["kind"] == "ec2":
        # Whatever the cnf, the data directory goes on the target's storage (with variants too: the
        # volumes are launched and billed either way).
        host = {"engine": target["engine"], "storage": storage_job(target["storage"])}
        if loaded is not None and loaded.variants:
            spec_target = loaded.spec.targets[index]
            _cnf_source(index, target["mysql_config"], target["engine"], target.get("server_options") or {})
            config, source, first = variantplan.first_cnf(loaded, spec_target)
            try:
                render(source, target["engine"], 8 * 1024**3, name=f"{config}.cnf")
            except CnfError as e:
                raise PlanRejected(f"spec: variants[0]: {e}") from None
            return {**host, "mysql_config": config, "cnf": source, "variant": first}
        return {**host, "mysql_config": target["mysql_config"],
                "cnf": _cnf_source(index, target["mysql_config"], target["engine"],
                                   target.get("server_options") or {})}
    if target["kind"] in ("rds", "aurora", "cluster"):  # the client host: sysbench and the mysql client
        return {"client": True}
    return None


def cluster_setup(index: int, spec_target: ClusterTarget, loaded: LoadedSpec, o: Timing) -> list[dict[str, Any]]:
    """A cluster repetition's set-up steps, which run before its benchmark steps on the hosts they
    name (``host``, as ``plan.cluster_setup_hosts`` lists them: ``n1``..., then ``proxy`` or ``client``):
    every node in order, the first bootstrapping the cluster and each next one joining it (one state
    transfer at a time, as Galera's documentation advises; the last one's job returns once the cluster
    is Synced at full size), then the proxy on the client host (or the proxy's own). The static part
    of each agent job (benchfleet.cluster.jobs) is here; start_step adds the addresses, the volumes and
    the secret."""
    target = spec_target.model_dump(mode="json")
    cnf = _cnf_source(index, spec_target.mysql_config, spec_target.engine, target.get("server_options") or {})
    timeout = o.step_timeout_s or step_timeout_s(0, SETUP)
    base = {"kind": SETUP, "threads": 1, "duration_s": 0, "cooldown_s": 0, "setup_s": setup_s(0, SETUP),
            "timeout_s": timeout, "report_interval_s": 1}
    nodes = galera.node_names(spec_target.nodes)
    steps: list[dict[str, Any]] = []
    for host in cluster_setup_hosts(spec_target):  # n1, n2, ..., then the proxy's host: proxy, or client
        if host in nodes:
            name, setup = f"setup-{host}", {"role": "node", "node": host, "flavor": spec_target.flavor,
                                            "mysql_config": spec_target.mysql_config, "cnf": cnf,
                                            "storage": storage_job(target["storage"])}
        else:
            name, setup = "setup-proxy", {"role": "proxy", "software": spec_target.proxy.software}
        steps.append({**base, "index": -(len(steps) + 1), "name": name, "host": host, "setup": setup})
    return steps


def storage_job(storage: dict[str, Any]) -> dict[str, Any]:
    """What the agent builds the data directory on (workloads/agent/benchfleet_storage.py): ``count``
    volumes or instance-store disks, the RAID level, the file system and its mount options. For EBS,
    start_step adds the ids of the volumes the instance was launched with (``volumes``)."""
    return {"type": storage["type"], "count": storage.get("volumes", 1), "raid": storage.get("raid"),
            "filesystem": storage.get("filesystem", "xfs"), "mount_options": storage.get("mount_options", "noatime")}


def _timing(target: TargetPlan, o: Timing) -> dict[str, Any]:
    ready_poll = READY_POLL_S[target.kind] if o.ready_poll_s is None else o.ready_poll_s
    # The bound comes from the planned interval, so a shorter wait (tests) never loosens it.
    ready_max = o.ready_max_polls or math.ceil(3 * max(target.provision_s, 60) / READY_POLL_S[target.kind]) + 2
    return {"ready_poll_s": ready_poll, "ready_max_polls": ready_max, "provision_s": target.provision_s}


def setup_s(duration_s: int, kind: str) -> int:
    """What a step may take beyond its planned seconds: installs on the prepare step, and for a load
    (PREPARE_TIMEOUT_FACTOR - 1) times its planned seconds more."""
    return SETUP_S[kind] + ((PREPARE_TIMEOUT_FACTOR - 1) * duration_s if kind == "prepare" else 0)


def execution_timeout_s(duration_s: int, kind: str) -> int:
    """The step's Run Command execution timeout (start_step sends this): the step, its setup, 600 s."""
    return duration_s + setup_s(duration_s, kind) + 600


def step_timeout_s(duration_s: int, kind: str) -> int:
    """How long "Start the step" waits for the step's callback: Run Command's own bounds (delivery,
    and the execution timeout) and a margin for the status change to arrive. Past it the state machine
    asks how the step ended ("Ask how the step ended")."""
    return commands.DELIVERY_TIMEOUT_S + execution_timeout_s(duration_s, kind) + CALLBACK_MARGIN_S


def _steps(target: TargetPlan, o: Timing, install: dict[str, Any] | None,
           loaded: LoadedSpec, spec_target: Any = None,
           requested: dict[str, str] | None = None,
           status: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``status``: the server status the agent reads every second during warm-up and measure steps."""
    out = []
    cache: dict[str, Any] = {}
    for step in target.steps:
        # report_interval_s: collect checks the step's samples against it (benchfleet.workload.validation): the
        # interval of the workload the step runs (a variant's own, when it has one).
        interval = loaded.workload_of(step.variant).report_interval_s
        item = {**step.model_dump(), "setup_s": setup_s(step.duration_s, step.kind), "report_interval_s": interval,
                "cooldown_s": step.cooldown_s if o.cooldown_s is None else o.cooldown_s,
                "timeout_s": o.step_timeout_s or step_timeout_s(step.duration_s, step.kind)}
        if step.index == 0 and install:  # every repetition's first step sets its fresh host up
            item["install"] = install
        if step.index == 0 and requested:  # and the agent records the server's values beside these
            item["requested"] = requested
        if step.index == 0 and spec_target is not None and (held := variantplan.verify(loaded, spec_target)):
            item["verify"] = held  # a setting the server does not run then fails the target (issue 41)
        if loaded.variants:
            item.update(variantplan.step_extras(loaded, spec_target, step, cache))
        if step.kind != "prepare" and status:
            item["status"] = status
        if step.kind == "measure":  # collect writes it beside the step's summary (Timestream has no run row)
            item["margin_pct"] = loaded.spec.margin_pct
        if spec_target is not None and spec_target.kind == "cluster":  # direct to the writer, or the proxy
            variant = loaded.variant(step.variant)
            default = "proxy" if spec_target.proxy.software != "none" else "direct"
            item["route"] = (variant.route if variant else None) or default
        out.append(item)
    return out


def status_of(spec: ComparisonSpec, target: Any, workload: Workload) -> dict[str, Any] | None:
    """The agent's ``status`` job for ``target``'s steps (its sources are added per step, where they are
    known: benchfleet.aws.steps.jobs)."""
    counters = serverstatus.counters_for(spec.status_counters, is_cluster(target))
    return {"counters": counters, "interval_s": workload.report_interval_s} if counters else None


def _bound(target: TargetPlan, ready_max: int) -> int:
    """Worst case of one repetition: the readiness loop runs to its bound (steps do not poll), a
    cluster's set-up steps (one per node and the proxy's) before its benchmark's, and a database's
    teardown laps to theirs."""
    managed = target.kind in ("rds", "aurora")
    laps = lifecycle.TEARDOWN_LAPS if managed else 1
    return history.repetition_events(target.most_steps + target.setup_steps, ready_max, laps, groups=managed)


def run_id_for(request: RunRequest, execution_name: str | None) -> str | None:
    """The execution's name, which an input ``run_id`` must equal (None outside a state machine:
    the caller's ``run_id`` or a new one)."""
    if execution_name is None:
        return request.run_id
    if execution_name in naming.RESERVED_RUN_IDS:
        raise PlanRejected(f"input: the execution name {naming.run_id_problem(execution_name)}")
    if request.run_id is not None and request.run_id != execution_name:
        raise PlanRejected(f"input: run_id: {request.run_id} differs from the execution name "
                           f"{execution_name}; a run's id is its execution's name")
    if not naming.RUN_ID.match(execution_name):
        raise PlanRejected(f"input: the execution name {execution_name!r} is not a valid run id "
                           "([a-z0-9-], 2 to 80 characters): start the execution with such a name")
    return execution_name


def _price_lookup(target: object) -> float | None:
    """$/hour from workloads/pricing (shipped with the Lambda); None when unpriced."""
    from benchfleet.cost import pricing

    try:
        return pricing.price_per_hour(target)
    except (OSError, ValueError, KeyError):
        return None


@dataclass(frozen=True)
class HistoryFit:
    """Inline or Distributed Map, and the worst-case history of the run (the largest child's)."""

    distributed: bool
    history_bound: int


def history_fit(plan: Plan, o: Timing) -> HistoryFit:
    """Where the targets run so that every history stays inside its budget (PlanRejected when
    one target alone cannot)."""
    ready = {t.target_id: _timing(t, o)["ready_max_polls"] for t in plan.targets}
    inline_bound = history.execution_events(
        [(t.repetitions, _bound(t, ready[t.target_id])) for t in plan.targets])
    inline_max = INLINE_MAX_TARGETS if o.distributed_above is None else o.distributed_above
    if len(plan.targets) <= inline_max and inline_bound <= history.HISTORY_BUDGET:
        return HistoryFit(False, inline_bound)
    bounds = {t.target_id: history.execution_events([(t.repetitions, _bound(t, ready[t.target_id]))])
              for t in plan.targets}
    worst = max(bounds, key=lambda k: bounds[k])
    if bounds[worst] > history.HISTORY_BUDGET:
        index = [t.target_id for t in plan.targets].index(worst)
        raise PlanRejected(f"spec: target {worst} needs up to {bounds[worst]} Step Functions history "
                           f"events, above {history.HISTORY_BUDGET}: use fewer steps or repetitions",
                           field=f"targets[{index}]")
    return HistoryFit(True, max(bounds.values()))


def repetitions_at_once(definition: dict[str, Any]) -> int:
    """How many repetitions of a target the deployed definition runs at once (0: all of them): the
    MaxConcurrency of the Maps one level under the targets Map."""
    limits = asl_walk.map_concurrency(definition, 1)
    bounded = [n for n in limits if n > 0]
    return min(bounded) if bounded else 0


def caps(max_vcpus: int | None = None, max_hosts: int | None = None) -> waves.Caps:
    """The deployment's per-region caps (defaults where unset), named by their CDK context keys."""
    return waves.Caps(max_vcpus or DEFAULT_MAX_VCPUS_PER_REGION, max_hosts or DEFAULT_MAX_HOSTS_PER_REGION,
                      vcpus_key=VCPUS_KEY, hosts_key=HOSTS_KEY)


def aws_plan(loaded: LoadedSpec, price_lookup: PriceLookup | None = None, *, timing: Timing | None = None,
             store: str = DEFAULT_RESULTS_STORE, definition: dict[str, Any] | None = None,
             within: waves.Caps | None = None) -> tuple[Plan, HistoryFit, controlplane.ControlPlane]:
    """The plan of a cloud run as the deployed state machine runs it: repetitions as its definition
    runs them, in waves ``within`` the deployment's per-region caps (PlanRejected naming the target
    when one repetition alone exceeds them), the control plane's charges (from the definition walked
    with the plan) included."""
    definition = definition or asl_walk.load_definition()
    try:
        plan = make_plan(loaded, price_lookup, at_once=repetitions_at_once(definition), caps=within)
    except waves.TooLarge as e:
        index = [t.id for t in loaded.spec.targets].index(e.target_id)
        raise PlanRejected(f"spec: targets[{index}]: {e}", field=f"targets[{index}]") from None
    fit = history_fit(plan, timing or Timing())
    try:
        prices = controlplane.load_prices()
    except (OSError, ValueError):
        prices = None  # like an unpriced host: no table, no figure (never a guess)
    # Estimated with production's intervals even when a test shortens the waits.
    cp = controlplane.estimate(plan, definition, ready_poll_s=READY_POLL_S,
                               report_interval_s=loaded.workload.report_interval_s, store=store, prices=prices)
    return plan.model_copy(update={"control_plane": cp.charges}), fit, cp


def fit_problem(plan: Plan, *, max_vcpus: int = DEFAULT_MAX_VCPUS_PER_REGION,
                max_hosts: int = DEFAULT_MAX_HOSTS_PER_REGION, max_run_hours: int | None = None) -> str | None:
    """Why the deployed machine cannot run this plan (None when it can): over a region's cap (a plan
    scheduled within the caps never is), a spacing it cannot keep, or longer than its executions may
    run (``max_run_hours``, when known)."""
    limit = caps(max_vcpus, max_hosts)
    for peak in plan.region_peaks():
        if peak["ec2_vcpus"] > limit.max_vcpus or peak["ec2_hosts"] + peak["db_instances"] > limit.max_hosts:
            return (f"spec: targets: the run has {peak['ec2_vcpus']} EC2 vCPUs and "
                    f"{peak['ec2_hosts'] + peak['db_instances']} hosts at once in {peak['region']}, above the caps "
                    f"of {limit.max_vcpus} ({VCPUS_KEY}) and {limit.max_hosts} ({HOSTS_KEY}): plan it within them")
    spacing = spacing_problem(plan, "the deployed state machine")
    if spacing:
        return spacing
    for t in plan.targets:
        longest = max((s for s in t.steps if s.kind == "prepare"), key=lambda s: s.duration_s, default=None)
        if longest and execution_timeout_s(longest.duration_s, "prepare") > commands.MAX_EXECUTION_TIMEOUT_S:
            return (f"spec: workload.table_size: {t.target_id}'s load is planned at {longest.duration_s} s; with "
                    f"its margin it could run past Run Command's {commands.MAX_EXECUTION_TIMEOUT_S} s limit, "
                    "which would cut it off: load fewer or smaller tables, or use faster storage")
    margins_s = 2 * int(DEADLINE_MARGIN.total_seconds())
    if max_run_hours is not None and plan.wall_s + margins_s > max_run_hours * 3600:
        return (f"spec: workload.duration_s: the run would take {plan.wall_s} s plus {margins_s} s of margins, "
                f"and this deployment's executions time out after {max_run_hours} h (CDK context maxRunHours): "
                "shorten the run, or deploy with a larger maxRunHours")
    return None


def check_plan(plan: Plan, targets: Sequence[Any] | None = None, *,
               max_run_cost_usd: float = cost_ceiling.DEFAULT_MAX_RUN_COST_USD,
               max_vcpus: int = DEFAULT_MAX_VCPUS_PER_REGION, max_hosts: int = DEFAULT_MAX_HOSTS_PER_REGION,
               max_run_hours: int | None = None) -> None:
    """PlanRejected when the run may not cost what it would (benchfleet.cost.ceiling: no price from
    the request; its budget, or without one the deployment's ceiling ``max_run_cost_usd``, hosts and
    control plane together) or does not fit. ``targets``: the spec's, to name the field of an
    unpriced one (and refuse a price it names). The Plan Lambda and the API both decide here."""
    problems = cost_ceiling.cost_problems(plan, targets or [], max_run_cost_usd)
    if problems:
        field, message = problems[0]
        raise PlanRejected(f"spec: {field}: {message}", problems=problems)
    problem = fit_problem(plan, max_vcpus=max_vcpus, max_hosts=max_hosts, max_run_hours=max_run_hours)
    if problem:
        raise PlanRejected(problem)


def estimate(request: RunRequest, *, regions: TargetRegions, store: str = DEFAULT_RESULTS_STORE,
             within: waves.Caps | None = None) -> tuple[LoadedSpec, Plan, HistoryFit]:
    """The run's plan and estimate as the deployed machine runs it (PlanRejected for a spec it cannot
    plan), without the limits ``check_plan`` holds it to: what the API shows for a run already started.
    Its repetitions in waves ``within`` the caps (default: the deployment's, from the environment)."""
    if within is None:
        settings = Settings.from_env()
        within = caps(settings.max_vcpus_per_region, settings.max_hosts_per_region)
    loaded = _loaded(request.spec, regions)
    plan, fit, _ = aws_plan(loaded, _price_lookup, timing=request.timing, store=store, within=within)
    return loaded, plan, fit


def checked_plan(request: RunRequest, *, regions: TargetRegions | None = None, max_run_hours: int | None = None,
                 max_run_cost_usd: float | None = None, store: str = DEFAULT_RESULTS_STORE,
                 max_vcpus: int | None = None, max_hosts: int | None = None) -> tuple[LoadedSpec, Plan, HistoryFit]:
    """The spec as the deployed state machine would run it, priced (hosts and control plane) and
    checked (cost, capacity, duration), or PlanRejected. Unset limits come from the Lambda's
    environment (benchfleet.aws.settings), as the CDK app sets them for every function."""
    settings = Settings.from_env()
    regions = regions or settings.regions
    within = caps(max_vcpus or settings.max_vcpus_per_region, max_hosts or settings.max_hosts_per_region)
    loaded, plan, fit = estimate(request, regions=regions, store=store, within=within)
    # What the hosts will be given (a target's cnf with its server_options, rendered): refused here, so
    # that the API refuses it before starting a run that Plan would refuse a moment later.
    for index, target in enumerate(loaded.spec.targets):
        _install(index, target.model_dump(mode="json"))
    check_plan(plan, list(loaded.spec.targets),
               max_run_cost_usd=settings.max_run_cost_usd if max_run_cost_usd is None else max_run_cost_usd,
               max_vcpus=within.max_vcpus, max_hosts=within.max_hosts,
               max_run_hours=max_run_hours or settings.max_run_hours)
    return loaded, plan, fit


def plan_run(request: RunRequest, *, execution_name: str | None = None, zone_count: int = 1,
             now: datetime | None = None, regions: TargetRegions | None = None,
             max_run_hours: int | None = None, max_run_cost_usd: float | None = None,
             store: str = DEFAULT_RESULTS_STORE, max_vcpus: int | None = None,
             max_hosts: int | None = None) -> dict[str, Any]:
    """The state machine's plan. ``regions``: where targets may run (default: the Lambda's
    environment); every cloud target leaves with the region it runs in. ``max_run_hours``: the
    deployed execution timeout (default: MAX_RUN_HOURS, set by the CDK app from maxRunHours, the
    same value as the state machine's TimeoutSeconds); a longer run is refused, naming the limit.
    ``max_run_cost_usd``: the most a run without budget_usd may cost (default: MAX_RUN_COST_USD,
    from maxRunCostUsd). ``store``: the results store priced. ``max_vcpus``, ``max_hosts``: the
    per-region caps (default: MAX_VCPUS_PER_REGION / MAX_HOSTS_PER_REGION, else the defaults above)."""
    run_id = run_id_for(request, execution_name)
    regions = regions or Settings.from_env().regions
    loaded, plan, fit = checked_plan(request, regions=regions, max_run_hours=max_run_hours,
                                      max_run_cost_usd=max_run_cost_usd, store=store,
                                      max_vcpus=max_vcpus, max_hosts=max_hosts)
    o = request.timing
    now = now or datetime.now(UTC)
    run_id = run_id or naming.new_run_id(request.schedule or plan.name, now)
    distributed, bound = fit.distributed, fit.history_bound
    expires_at = plan.expires_at(now)
    targets = []
    for index, (spec_target, t) in enumerate(zip(loaded.spec.targets, plan.targets, strict=True)):
        target = spec_target.model_dump(mode="json")
        # The price the estimate used travels with the target (the targets table records it).
        target["price_per_hour"] = t.price_per_hour
        parameters = dbparams.target_parameters(loaded, index)[0]
        deadline = now + timedelta(seconds=t.total_s) + DEADLINE_MARGIN
        steps = _steps(t, o, _install(index, target, loaded), loaded, spec_target,
                       dbparams.requested(parameters), status_of(loaded.spec, spec_target, loaded.workload))
        sequence = t.sequence or [list(range(len(t.steps)))] * t.repetitions
        if isinstance(spec_target, ClusterTarget):  # its set-up first, in every repetition
            setup = cluster_setup(index, spec_target, loaded, o)
            steps = setup + steps
            sequence = [list(range(len(setup))) + [i + len(setup) for i in seq] for seq in sequence]
        targets.append({
            "run_id": run_id, "target_id": t.target_id, "kind": t.kind,
            "region": regions.region_of(target),
            "target": target,
            "expires_at": naming.tags(run_id, t.target_id, expires_at)[naming.TAG_EXPIRES_AT],
            "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "repetitions": list(range(1, t.repetitions + 1)),
            # How many the repetitions Map runs at once (its MaxConcurrencyPath; 0: all): one at a time
            # on an existing target's one host, where two would share it and measure each other.
            "repetitions_at_once": t.at_once if 0 < t.at_once < t.repetitions else 0,
            # Each repetition's start after the first's (the definition's "Wait for its start").
            "start_after_s": t.start_after_s(),
            "steps": steps,
            # rds / aurora: the run's parameter groups hold these (benchfleet.aws.fleet.paramgroups).
            "parameters": parameters,
            # Per repetition, the steps it runs in order (indices into steps): variants interleave in
            # an order that turns from one repetition to the next.
            "sequence": sequence,
            "timing": _timing(t, o),
        })
    if not distributed and len(json.dumps(targets, separators=(",", ":"))) > INLINE_MAX_TARGET_BYTES:
        # Too large to carry in the state: the same plan, its targets in child executions.
        larger = request.model_copy(update={"timing": o.model_copy(update={"distributed_above": 0})})
        return plan_run(larger, execution_name=execution_name, zone_count=zone_count, now=now, regions=regions,
                        max_run_hours=max_run_hours, max_run_cost_usd=max_run_cost_usd, store=store,
                        max_vcpus=max_vcpus, max_hosts=max_hosts)
    return {
        "run_id": run_id, "name": request.schedule or plan.name, "schedule": request.schedule,
        "spec_name": plan.name, "workload": loaded.workload.model_dump(mode="json"),
        "started_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "expires_at": expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "target_count": len(targets), "distributed": distributed,
        "zones": {"count": max(zone_count, 1), "last": max(zone_count, 1) - 1},
        "history_bound": bound, "wall_s": plan.wall_s,
        "estimated_cost_usd": plan.estimated_cost_usd, "hosts_usd": plan.hosts_usd,
        # Aurora I/O requests, estimated from the workload (its assumption once: the state stays small).
        "usage_usd": plan.usage_usd, "usage_assumption": plan.usage()[0]["assumption"] if plan.usage() else None,
        "control_plane_usd": plan.control_plane_usd, "targets": targets,
    }


def state_of(plan: dict[str, Any], s3: Any, bucket: str) -> dict[str, Any]:
    """The plan as the state machine carries it. Its targets go to S3 (``naming.plan_targets_key``):
    the Distributed Map reads them there (ItemReader) and Summarize knows from them which outcomes
    to expect; the state keeps them only for the inline Map (small by construction, see
    INLINE_MAX_TARGET_BYTES). ``bucket`` and the key travel with it."""
    run_id = plan["run_id"]
    key = naming.plan_targets_key(run_id)
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=key, ContentType="application/json",
                      Body=json.dumps(plan["targets"], separators=(",", ":")).encode())
    state = {**plan, "bucket": bucket, "targets_key": key}
    if plan["distributed"]:
        del state["targets"]
    return state


def parse_request(data: Any) -> RunRequest:
    try:
        return RunRequest.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        raise PlanRejected(f"input: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
