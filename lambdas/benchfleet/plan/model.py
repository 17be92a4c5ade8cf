"""spec -> Plan: every target x repetition x step, with durations and a cost estimate.

The plan is what both backends execute: the local runner walks it in order, the state machine maps
over it. Steps are ``prepare`` (load the data set and fingerprint), ``warmup`` and one ``measure``
step per thread count; each is one agent invocation.

How many repetitions of a target run at once is what the backend does, not what the spec wishes:
the local runner runs them one after another, and in AWS the caller passes the deployed state
machine's concurrency (``benchfleet.aws.planning.runplan.aws_plan`` reads it from the definition). Wall time,
peak hosts and vCPUs per region follow from it; cost does not (each repetition's host exists for one
repetition either way). In AWS the plan also carries the run's control-plane charges (Step Functions,
Lambda, CloudWatch, store writes: ``benchfleet.aws.planning.controlplane``), listed apart from the hosts.

Why one module: the Plan's models and make_plan, which fills every field of them (steps per target,
repetition and variant, hosts, waves, wall time and cost), are one definition: a field is declared
and filled in the same file. The estimates they use are plan.estimates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from benchfleet.cluster import jobs as clusterjob
from benchfleet.cost.pricing import DEFAULT_REGION, aurora_io_rate
from benchfleet.plan import waves
from benchfleet.plan.estimates import (
    AURORA_IO_ASSUMPTION,
    AURORA_IO_BYTES,
    AURORA_TPS_PER_THREAD,
    BUFFER_POOL_SHARE,
    KEY_ORDER_INSERT_TESTS,
    PARAMETER_GROUPS_SETTLE_S,
    READ_ONLY_TESTS,
    ROW_BYTES,
    STEP_OVERHEAD_SECONDS,
    cluster_setup_hosts,
    memory_bytes,
    prepare_seconds,
    provision_seconds,
    setup_seconds,
    vcpus_of,
)
from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.targets import is_cluster
from benchfleet.spec.variants import ResolvedVariant
from benchfleet.spec.workload import ONE_ROW_PER_EVENT, Workload, data_set_key
from benchfleet.workload import serverstatus

StepKind = Literal["prepare", "warmup", "measure"]
SwitchMethod = Literal["none", "set-global", "restart", "parameter-group"]
# The schema of a target's first data set (the only one without variants of other workloads).
DEFAULT_DATABASE = "sbtest"

# Margin added to the plan's wall time for the execution timeout and resource expiry.
EXPIRY_MARGIN = timedelta(hours=2)
# Where a run's wall time goes, as `benchfleet plan` itemises it ("waiting": for a wave's hosts, or a
# repetition_spacing_s), and which part each kind of step is.
WALL_PARTS = ("provisioning", "parameter groups settle", "set-up", "prepare", "warm-up", "steps",
              "cool-downs", "teardown")
PART_OF_STEP = {"prepare": "prepare", "warmup": "warm-up", "measure": "steps"}

PriceLookup = Callable[[object], float | None]


class Host(BaseModel):
    """One machine a repetition of a target runs: EC2 hosts count against the region's EC2 vCPU
    quota, DB instances against RDS's."""

    model_config = ConfigDict(frozen=True)

    service: Literal["ec2", "rds"]
    instance_type: str
    vcpus: int | None
    region: str
    # What it is, where a target has several EC2 hosts of different roles (a cluster: node, client,
    # proxy; what `plan` shows); None elsewhere.
    role: str | None = None


class RunCharge(BaseModel):
    """One per-run charge beyond the hosts (a control-plane line: transitions, invocations...)."""

    model_config = ConfigDict(frozen=True)

    item: str
    quantity: float
    unit: str
    usd_per_unit: float
    cost_usd: float


class PlanStep(BaseModel):
    """One agent invocation. With variants: ``variant`` is whose workload (and data set, in
    ``database``) the step runs; ``settings`` whose server settings it needs in effect (None: any,
    for loading and warming data sets), ``switch`` how to bring them in from each other variant's
    (``benchfleet.spec.switching``); ``block`` the block of a measured step split by the spec's blocks."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    kind: StepKind
    threads: int
    duration_s: int
    cooldown_s: int = 0
    variant: str | None = None
    block: int | None = None
    database: str | None = None
    settings: str | None = None
    switch: dict[str, SwitchMethod] = {}

    @property
    def estimated_s(self) -> int:
        return self.duration_s + self.cooldown_s


class TargetPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    target_id: str
    kind: str
    # Where the target runs: its spec's region; None for a cloud target that names none (it runs in
    # the deployed stack's home region, which the plan resolves); "local" for local targets.
    region: str | None = None
    repetitions: int
    # Every step the target runs, and per repetition the indices of its steps in run order (empty:
    # every repetition runs all steps in order). Variants interleave in an order that changes from
    # one repetition to the next, and a restart's warm-up is there only where the order switches.
    steps: list[PlanStep]
    sequence: list[list[int]] = []
    provision_s: int
    teardown_s: int
    # rds / aurora: PARAMETER_GROUPS_SETTLE_S between the groups and the database, in every repetition.
    settle_s: int = 0
    # A cloud cluster's set-up steps (``cluster_setup_hosts``), before its benchmark's in every
    # repetition, and their seconds (serial: CLUSTER_NODE_SETUP_S each node, CLUSTER_PROXY_SETUP_S).
    setup_steps: int = 0
    setup_s: int = 0
    step_overhead_s: int = 0
    price_per_hour: float | None
    server_options: dict[str, bool | int | float | str] = {}
    hosts: list[Host] = []
    # Repetitions the backend runs at once (1: one after another), and the spec's spacing of their
    # starts (0: all at once).
    at_once: int = 1
    spacing_s: int = 0
    # The data volumes (storage_plan): each priced, the stripe's figures against the instance's EBS
    # bandwidth; warnings say, with the figures, what the target will not get.
    storage: dict[str, Any] | None = None
    warnings: list[str] = []
    # Each repetition's planned start, from the run's start (AWS: the schedule of benchfleet.plan.waves;
    # empty: as ``at_once`` and ``spacing_s`` say).
    starts_s: list[int] = []
    # (source, counter) of the server status rows each reading makes (benchfleet.workload.serverstatus.series):
    # what the store is written per report interval of a warm-up or measure step, beside the sample.
    status_series: list[tuple[str, str]] = []
    # Aurora: the storage I/O requests its repetitions make (``aurora_io_requests``, an estimate with
    # AURORA_IO_ASSUMPTION) and their price per million (None: the tables hold none for the region).
    io_requests: int | None = None
    io_usd_per_million: float | None = None

    def steps_of(self, repetition: int) -> list[PlanStep]:
        """The steps of one repetition (1-based), in the order they run."""
        if not self.sequence:
            return list(self.steps)
        return [self.steps[i] for i in self.sequence[repetition - 1]]

    def repetition_seconds(self, repetition: int) -> int:
        """One repetition: provision, set-up, its steps with their overhead, teardown (each on a fresh host)."""
        return (self.provision_s + self.settle_s + self.setup_s
                + sum(s.estimated_s + self.step_overhead_s for s in self.steps_of(repetition)) + self.teardown_s)

    @property
    def repetition_s(self) -> int:
        """The longest repetition (they differ only where variants restart in another order)."""
        return max(self.repetition_seconds(r) for r in range(1, self.repetitions + 1))

    @property
    def most_steps(self) -> int:
        """Steps of the repetition that runs the most (bounds each repetition's history)."""
        return max(len(self.steps_of(r)) for r in range(1, self.repetitions + 1))

    def parts(self, repetition: int) -> dict[str, int]:
        """Where one repetition's seconds go (they add up to ``repetition_seconds``)."""
        out = dict.fromkeys(WALL_PARTS, 0)
        out["provisioning"], out["set-up"], out["teardown"] = self.provision_s, self.setup_s, self.teardown_s
        out["parameter groups settle"] = self.settle_s
        for step in self.steps_of(repetition):
            out[PART_OF_STEP[step.kind]] += step.duration_s + self.step_overhead_s
            out["cool-downs"] += step.cooldown_s
        return out

    def start_after_s(self) -> list[int]:
        """Each repetition's wait before it provisions, from when the backend begins it: at once,
        the planned start; one (or ``at_once``) at a time, from the end of the one it follows."""
        starts = self.starts_s or [0 if self.at_once == 1 else i * self.spacing_s for i in range(self.repetitions)]
        if self.at_once == 0 or self.at_once >= self.repetitions:
            return list(starts)
        ends = [starts[i] + self.repetition_seconds(i + 1) for i in range(self.repetitions)]
        return [starts[i] - (ends[i - self.at_once] if i >= self.at_once else 0) for i in range(self.repetitions)]

    @property
    def total_s(self) -> int:
        """Wall time of all repetitions: as scheduled, one after another, or started ``spacing_s`` apart."""
        if self.starts_s:
            return max(s + self.repetition_seconds(r) for r, s in enumerate(self.starts_s, 1))
        if self.at_once <= 1:
            return self.host_s
        if self.at_once >= self.repetitions:
            return (self.repetitions - 1) * self.spacing_s + self.repetition_s
        return math.ceil(self.repetitions / self.at_once) * self.repetition_s

    @property
    def host_s(self) -> int:
        """Seconds hosts exist, all repetitions together: what the target costs."""
        return sum(self.repetition_seconds(r) for r in range(1, self.repetitions + 1))

    @property
    def peak_repetitions(self) -> int:
        """Repetitions running at the same moment at most."""
        if self.starts_s:
            spans = [(s, s + self.repetition_seconds(r)) for r, s in enumerate(self.starts_s, 1)]
            return max(sum(1 for a, b in spans if a <= start < b) for start, _ in spans)
        if self.at_once <= 1:
            return 1
        if self.spacing_s <= 0:
            return min(self.at_once, self.repetitions)
        return min(self.at_once, self.repetitions, math.ceil(self.repetition_s / self.spacing_s))

    @property
    def estimated_cost_usd(self) -> float | None:
        if self.price_per_hour is None:
            return None
        return round(self.price_per_hour * self.host_s / 3600, 4)

    @property
    def io_usd(self) -> float | None:
        """What the estimated Aurora I/O requests cost (None: no requests, or no rate)."""
        if self.io_requests is None or self.io_usd_per_million is None:
            return None
        return round(self.io_requests * self.io_usd_per_million / 1_000_000, 4)


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    workload: str
    mode: Literal["local", "aws"]
    repetitions: int
    targets: list[TargetPlan]
    budget_usd: float | None
    # How repetitions and variants are ordered (the spec's order) and which variants there are.
    order: Literal["interleaved", "sequential"] = "interleaved"
    variants: list[str] = []
    blocks: int = 1
    # AWS: what the run costs beyond its hosts (benchfleet.aws.planning.controlplane); empty locally.
    control_plane: list[RunCharge] = []
    # A workload of the run inserts one row per event: its samples carry rows_in_table.
    counts_rows: bool = False
    # A workload of the run is go-tpc's TPC-C: its samples and summaries carry tpmc and per-type rates.
    tpcc: bool = False
    # AWS: the repetitions that start together (benchfleet.plan.waves.waves), and each region's peak.
    waves: list[dict[str, Any]] = []
    peaks: list[dict[str, Any]] = []
    # Where the wall time goes (WALL_PARTS and "waiting"): along the repetitions that decide when
    # the run ends (AWS), or every repetition one after another (locally).
    wall_parts: dict[str, int] = {}

    @property
    def wall_s(self) -> int:
        """Local targets run one after another (two databases on one machine disturb each other; in
        rounds, see ``local_order``);
        AWS targets run side by side, their repetitions as the backend runs them (``at_once``)."""
        totals = [t.total_s for t in self.targets]
        return sum(totals) if self.mode == "local" else max(totals)

    @property
    def hosts_usd(self) -> float:
        """Instances, clients and storage of every priced target."""
        return round(sum(t.estimated_cost_usd or 0.0 for t in self.targets), 4)

    @property
    def usage_usd(self) -> float:
        """What the targets' estimated use costs beyond their hours (Aurora I/O requests)."""
        return round(sum(t.io_usd or 0.0 for t in self.targets), 4)

    @property
    def control_plane_usd(self) -> float:
        return round(sum(c.cost_usd for c in self.control_plane), 4)

    @property
    def estimated_cost_usd(self) -> float:
        return round(self.hosts_usd + self.usage_usd + self.control_plane_usd, 4)

    def usage(self) -> list[dict[str, Any]]:
        """A line per target billed by use as the plan estimates it (Aurora I/O requests), with its
        assumption: `plan` shows them, and the budget and the cost ceiling count them."""
        return [{"target_id": t.target_id, "item": "Aurora I/O requests", "quantity": t.io_requests,
                 "usd_per_million": t.io_usd_per_million, "cost_usd": t.io_usd, "assumption": AURORA_IO_ASSUMPTION}
                for t in self.targets if t.io_requests is not None]

    def region_peaks(self) -> list[dict[str, Any]]:
        """Per region: the most EC2 hosts, their vCPUs and DB instances running at one moment (as
        scheduled; without a schedule, every target side by side at its peak of concurrent repetitions)."""
        peaks: dict[str, dict[str, Any]] = {}
        if self.mode == "local":
            return []
        if self.peaks:
            return self.peaks
        for t in self.targets:
            for host in t.hosts:
                peak = peaks.setdefault(host.region, {"region": host.region, "ec2_hosts": 0, "ec2_vcpus": 0,
                                                      "db_instances": 0, "unknown_vcpus": []})
                if host.service == "rds":
                    peak["db_instances"] += t.peak_repetitions
                    continue
                peak["ec2_hosts"] += t.peak_repetitions
                if host.vcpus is None:
                    peak["unknown_vcpus"].append(host.instance_type)
                else:
                    peak["ec2_vcpus"] += host.vcpus * t.peak_repetitions
        return sorted(peaks.values(), key=lambda p: str(p["region"]))

    @property
    def warnings(self) -> list[str]:
        """Every target's warnings, each naming its target."""
        return [f"{t.target_id}: {w}" for t in self.targets for w in t.warnings]

    @property
    def unpriced_targets(self) -> list[str]:
        return [t.target_id for t in self.targets if t.kind != "local"
                and (t.price_per_hour is None or (t.io_requests is not None and t.io_usd_per_million is None))]

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.estimated_cost_usd > self.budget_usd

    def local_order(self) -> list[tuple[str, int]]:
        """(target id, repetition) in the order the local runner runs them: in rounds (A1 B1, B2 A2,
        A3 B3: each round's order turned by one, so no target always goes first) when interleaved,
        else every repetition of the first target, then the next (sequential)."""
        ids = [t.target_id for t in self.targets]
        if self.order == "sequential":
            return [(t, r) for t in ids for r in range(1, self.repetitions + 1)]
        out = []
        for r in range(1, self.repetitions + 1):
            if len(ids) == 2:  # a balanced pair: A B, then B A
                turned = ids if r % 2 else ids[::-1]
            else:
                k = (r - 1) % len(ids)
                turned = ids[k:] + ids[:k]
            out += [(t, r) for t in turned]
        return out

    def expires_at(self, start: datetime | None = None) -> datetime:
        """When anything this plan creates may be removed by the janitor."""
        start = start or datetime.now(UTC)
        return start + timedelta(seconds=self.wall_s) + EXPIRY_MARGIN

    def summary(self) -> dict[str, object]:
        return {
            "name": self.name, "workload": self.workload, "mode": self.mode,
            "repetitions": self.repetitions, "wall_s": self.wall_s,
            "estimated_cost_usd": self.estimated_cost_usd, "hosts_usd": self.hosts_usd,
            "control_plane_usd": self.control_plane_usd, "usage_usd": self.usage_usd, "usage": self.usage(),
            "control_plane": [c.model_dump() for c in self.control_plane],
            "budget_usd": self.budget_usd,
            "over_budget": self.over_budget, "unpriced_targets": self.unpriced_targets,
            "warnings": self.warnings, "regions": self.region_peaks(),
            "waves": self.waves, "wall_parts": self.wall_parts,
            "order": self.order, "variants": self.variants, "blocks": self.blocks,
            "run_order": [f"{t}#{r}" for t, r in self.local_order()] if self.mode == "local" else None,
            "targets": [
                {"target_id": t.target_id, "kind": t.kind, "region": t.region, "server_options": t.server_options,
                 "steps": [s.model_dump() for s in t.steps],
                 "sequence": [[t.steps[i].name for i in seq] for seq in t.sequence] or None,
                 "repetition_s": t.repetition_s, "total_s": t.total_s, "repetitions_at_once": t.peak_repetitions,
                 "starts_s": t.starts_s or None,
                 "repetition_spacing_s": t.spacing_s, "hosts": [h.model_dump() for h in t.hosts],
                 "price_per_hour": t.price_per_hour, "estimated_cost_usd": t.estimated_cost_usd,
                 "storage": t.storage, "warnings": t.warnings}
                for t in self.targets],
        }


def spacing_problem(plan: Plan, runner: str) -> str | None:
    """A ``repetition_spacing_s`` that ``runner``, which runs a target's repetitions one after another
    without waiting, would not keep (a spacing is the least time between two starts, so one shorter
    than a repetition is kept anyway); None when it keeps every spacing."""
    for t in plan.targets:
        if t.at_once <= 1 and t.repetitions > 1 and t.spacing_s > t.repetition_s:
            return (f"spec: repetition_spacing_s: {t.spacing_s} s is longer than one repetition of {t.target_id} "
                    f"({t.repetition_s} s); {runner} runs repetitions one after another without waiting between "
                    "them")
    return None


def aurora_io_requests(workload: Workload, step: PlanStep, target: Any) -> int:
    """Storage I/O requests one step of ``workload`` makes on an Aurora target (AURORA_IO_ASSUMPTION)."""
    rows = workload.tables * workload.table_size
    memory = memory_bytes(target)
    beyond = 0 if memory is None else max(0, rows - int(memory * BUFFER_POOL_SHARE / ROW_BYTES))
    reads_beyond = beyond > 0 and workload.test not in KEY_ORDER_INSERT_TESTS
    if step.kind == "prepare":
        return math.ceil(rows * ROW_BYTES / AURORA_IO_BYTES) + (beyond if reads_beyond else 0)
    transactions = step.threads * AURORA_TPS_PER_THREAD * step.duration_s
    return transactions * ((workload.test not in READ_ONLY_TESTS) + reads_beyond)


def _target_io_requests(loaded: LoadedSpec, target: Any, t: TargetPlan) -> int:
    """Every repetition's Aurora I/O requests, each step by the workload it runs (its variant's)."""
    return sum(aurora_io_requests(loaded.workload_of(s.variant), s, target)
               for r in range(1, t.repetitions + 1) for s in t.steps_of(r))


def _io_rate(region: str) -> float | None:
    try:
        return aurora_io_rate(region)
    except (OSError, ValueError):  # no tables: unpriced, like a host they cannot price
        return None


def workload_steps(workload: Workload, target: Any = None) -> list[PlanStep]:
    steps = [PlanStep(index=0, name="prepare", kind="prepare", threads=workload.prepare_threads,
                      duration_s=prepare_seconds(workload, target))]
    if workload.warmup_s:
        steps.append(PlanStep(index=1, name="warmup", kind="warmup", threads=max(workload.threads),
                              duration_s=workload.warmup_s))
    for threads in workload.threads:
        steps.append(PlanStep(index=len(steps), name=f"t{threads:04d}", kind="measure", threads=threads,
                              duration_s=workload.duration_s, cooldown_s=workload.cooldown_s))
    return steps


def database_name(data_set: int, owner: str) -> str | None:
    """The schema of a target's ``data_set``-th data set: None for the first (the target's own: sbtest,
    or an existing server's ``database``), then ``sbtest_<variant>`` for the first variant loading each
    other one (variant ids are [a-z0-9-], so the names never collide)."""
    return None if data_set == 0 else f"{DEFAULT_DATABASE}_{owner.replace('-', '_')}"


def variant_steps(loaded: LoadedSpec, switches: dict[tuple[str, str], str],
                  repetitions: int, target: Any = None) -> tuple[list[PlanStep], list[list[int]]]:
    """Every step of one target with variants, and per repetition the order its steps run in.

    Each repetition: every data set's prepare, then its warm-up (under the first variant's
    settings, which the server starts with), then per thread count (and block) every variant's
    measured step. Interleaved, the variants' order turns by one from one thread count to the next,
    from one block to the next and from one repetition to the next: for two variants A B at 1 thread,
    B A at 4, and the other way round in the next repetition, so each goes first as often as the
    other at every thread count. Sequential: every step of the first variant, then the next. A switch
    that restarts the server is followed by a warm-up of the variant."""
    spec = loaded.spec
    variants: list[ResolvedVariant] = list(loaded.variants)
    steps: list[PlanStep] = []
    by_name: dict[str, int] = {}

    def add(step: dict[str, Any]) -> int:
        if step["name"] not in by_name:
            by_name[step["name"]] = len(steps)
            steps.append(PlanStep(index=len(steps), **step))
        return by_name[step["name"]]

    def switch_to(variant: str) -> dict[str, SwitchMethod]:
        return {a: m for (a, b), m in switches.items() if b == variant and m != "none"}  # type: ignore[misc]

    data_sets: dict[str, str | None] = {}      # data set key -> schema
    database: dict[str, str | None] = {}       # variant id -> schema
    head: list[int] = []
    for v in variants:
        key = data_set_key(v.workload)
        if key not in data_sets:
            data_sets[key] = database_name(len(data_sets), v.id)
            first = len(data_sets) == 1
            w = v.workload
            head.append(add({"name": "prepare" if first else f"prepare.{v.id}", "kind": "prepare",
                             "threads": w.prepare_threads, "duration_s": prepare_seconds(w, target),
                             "variant": v.id,
                             "database": data_sets[key]}))
        database[v.id] = data_sets[key]
    owners = {data_sets[data_set_key(v.workload)]: v for v in reversed(variants)}  # first variant of each
    for schema, v in sorted(owners.items(), key=lambda kv: list(data_sets.values()).index(kv[0])):
        if v.workload.warmup_s:
            first = schema is None
            head.append(add({"name": "warmup" if first else f"warmup.{v.id}", "kind": "warmup",
                             "threads": max(v.workload.threads), "duration_s": v.workload.warmup_s,
                             "variant": v.id, "database": schema}))

    threads = loaded.workload.threads
    blocks = spec.blocks
    block_s = loaded.workload.duration_s // blocks
    cells = [(t, b) for t in threads for b in range(1, blocks + 1)]  # sequential order

    def cell_name(t: int, b: int, v: str) -> str:
        return f"t{t:04d}" + (f".b{b}" if blocks > 1 else "") + f".{v}"

    sequence: list[list[int]] = []
    for r in range(1, repetitions + 1):
        order: list[tuple[int, int, ResolvedVariant]]
        if spec.order == "sequential":
            order = [(t, b, v) for v in variants for t, b in cells]
        else:
            order = []
            for ti, t in enumerate(threads):
                for b in range(1, blocks + 1):
                    k = ((r - 1) + ti + (b - 1)) % len(variants)
                    order += [(t, b, v) for v in variants[k:] + variants[:k]]
        current = variants[0].id
        seq = list(head)
        for t, b, v in order:
            method = switches.get((current, v.id), "none") if current != v.id else "none"
            if method == "restart" and v.workload.warmup_s:
                seq.append(add({"name": "warmup." + cell_name(t, b, v.id), "kind": "warmup",
                                "threads": max(v.workload.threads), "duration_s": v.workload.warmup_s,
                                "variant": v.id, "database": database[v.id], "settings": v.id,
                                "switch": switch_to(v.id)}))
            seq.append(add({"name": cell_name(t, b, v.id), "kind": "measure", "threads": t, "duration_s": block_s,
                            "cooldown_s": v.workload.cooldown_s, "variant": v.id,
                            "block": b if blocks > 1 else None, "database": database[v.id], "settings": v.id,
                            "switch": switch_to(v.id)}))
            current = v.id
        sequence.append(seq)
    return steps, sequence


def hosts_of(target: Any) -> list[Host]:
    """The machines one repetition of a target creates (an existing target creates none)."""
    region = getattr(target, "region", None) or DEFAULT_REGION
    if target.kind == "ec2":
        return [Host(service="ec2", instance_type=target.instance_type, vcpus=vcpus_of(target.instance_type),
                     region=region)]
    if target.kind in ("rds", "aurora"):
        client = target.client.instance_type
        return [Host(service="rds", instance_type=target.instance_class, vcpus=vcpus_of(target.instance_class),
                     region=region),
                Host(service="ec2", instance_type=client, vcpus=vcpus_of(client), region=region)]
    if target.kind == "cluster":
        # Every node, the client, and the proxy when it has a host of its own: all count against quotas.
        proxy, own = target.proxy.software, clusterjob.proxy_has_host(target.proxy)
        roles = [("node", target.instance_type)] * target.nodes + [
            ("client" if proxy == "none" or own else f"client + {proxy}", target.client.instance_type)]
        if own:
            roles.append((proxy, target.proxy.instance_type))
        return [Host(service="ec2", instance_type=t, vcpus=vcpus_of(t), region=region, role=role) for role, t in roles]
    return []


def storage_plan(target: Any) -> dict[str, Any] | None:
    """The data storage of one host of ``target`` (ec2: the stripe's figures against the instance's
    EBS bandwidth, ``benchfleet.plan.stripe``; rds: its allocated volume), with ``warnings`` and every
    volume priced on demand (``usd_per_hour``: the pricing's lines for all ``volumes`` together,
    ``pricing.volume_lines``, and their ``total``; None when the tables do not know the type). None
    for kinds without a ``storage`` of their own."""
    from benchfleet.cost import catalogue, pricing
    from benchfleet.plan import stripe

    storage = getattr(target, "storage", None)
    if storage is None or target.kind not in ("ec2", "rds"):
        return None
    region = getattr(target, "region", None) or DEFAULT_REGION
    if target.kind == "ec2":
        try:
            limits = catalogue.load_catalogue().type_storage(target.instance_type)
        except (OSError, ValueError):
            limits = None
        out = stripe.figures(storage, target.instance_type, limits)
    else:
        out = {"type": storage.type, "volumes": 1, "size_gb": storage.size_gb, "warnings": []}
    out["usd_per_hour"] = None
    try:
        prices = pricing.load_prices()
    except (OSError, ValueError):
        return out
    volumes = int(out["volumes"])
    if storage.type == "instance-store":  # in the instance's price
        out["usd_per_hour"] = {"volumes": volumes, "lines": [], "total": 0.0}
        return out
    table = prices.ebs if target.kind == "ec2" else prices.rds
    rate = table.storage_rate(region, str(storage.type), by_region=target.kind == "ec2")
    if rate is not None:
        lines = pricing.volume_lines(rate, storage, quantity=volumes)
        out["usd_per_hour"] = {"volumes": volumes, "lines": [line.as_dict() for line in lines],
                               "total": round(sum(line.usd_per_hour["on_demand"] or 0.0 for line in lines), 8)}
    return out


def status_series(spec: ComparisonSpec, target: Any) -> list[tuple[str, str]]:
    """The server status rows of one reading of ``target`` (its nodes' and its proxy's, for a cluster)."""
    cluster = is_cluster(target)
    counters = serverstatus.counters_for(spec.status_counters, cluster)
    if not cluster:
        return serverstatus.series(counters)
    shape = target if target.kind == "cluster" else target.cluster
    proxy = target.proxy.software if target.kind == "cluster" else target.cluster.proxy
    return serverstatus.series(counters, shape.nodes, proxy)


def make_plan(loaded: LoadedSpec, price_lookup: PriceLookup | None = None, *, at_once: int = 1,
              caps: waves.Caps | None = None) -> Plan:
    """Expand a resolved spec. ``price_lookup(target)`` gives $/hour (target plus its client);
    ``at_once``: how many repetitions of a target the backend runs at the same time (0: all);
    ``caps``: what a cloud run may have running at once per region (None: no cap): its repetitions
    are scheduled in waves within them (``benchfleet.plan.waves``; TooLarge when one alone cannot fit)."""
    spec: ComparisonSpec = loaded.spec
    targets = []
    for target in spec.targets:
        steps, sequence = workload_steps(loaded.workload, target), list[list[int]]()
        if loaded.variants:
            from benchfleet.spec.switching import switches

            steps, sequence = variant_steps(loaded, switches(loaded, target), spec.repetitions, target)
        price = target.price_per_hour
        if price is None and price_lookup is not None:
            price = price_lookup(target)
        # Run from here, nothing is rented: a local server, or the user's own server (its running cost
        # is theirs whether or not it is benchmarked).
        if price is None and (target.kind == "local" or spec.is_local):
            price = 0.0
        # One host per target for local and existing targets: repetitions on it cannot overlap.
        concurrent = (at_once or spec.repetitions) if target.kind in ("ec2", "rds", "aurora", "cluster") else 1
        storage = storage_plan(target)
        warnings = list(storage.pop("warnings", [])) if storage else []
        provision_s, teardown_s = provision_seconds(target)
        targets.append(TargetPlan(
            target_id=target.id, kind=target.kind,
            region=getattr(target, "region", None) or ("local" if spec.is_local else None),
            repetitions=spec.repetitions, steps=steps, sequence=sequence,
            provision_s=provision_s, teardown_s=teardown_s,
            settle_s=PARAMETER_GROUPS_SETTLE_S if target.kind in ("rds", "aurora") else 0,
            setup_steps=len(cluster_setup_hosts(target)), setup_s=setup_seconds(target),
            step_overhead_s=STEP_OVERHEAD_SECONDS.get(target.kind, 0) if spec.is_local else 0,
            price_per_hour=price, server_options=target.server_options, hosts=hosts_of(target),
            at_once=concurrent, spacing_s=spec.repetition_spacing_s or 0, storage=storage, warnings=warnings,
            status_series=status_series(spec, target)))
        if target.kind == "aurora" and not spec.is_local:
            region = getattr(target, "region", None) or DEFAULT_REGION
            targets[-1] = targets[-1].model_copy(update={
                "io_requests": _target_io_requests(loaded, target, targets[-1]),
                "io_usd_per_million": _io_rate(region) if price_lookup is not None else None})
    workloads = [loaded.workload, *(v.workload for v in spec.variants if isinstance(v.workload, Workload))]
    tests = [w.test for w in workloads]
    plan = Plan(name=spec.name, workload=loaded.workload.name, mode="local" if spec.is_local else "aws",
                repetitions=spec.repetitions, targets=targets, budget_usd=spec.budget_usd, order=spec.order,
                variants=spec.variant_ids, blocks=spec.blocks,
                counts_rows=any(test in ONE_ROW_PER_EVENT for test in tests),
                tpcc=any(w.tool == "go-tpc" for w in workloads))
    if plan.mode == "local":
        parts = dict.fromkeys((*WALL_PARTS, "waiting"), 0)
        for t in targets:
            for r in range(1, t.repetitions + 1):
                for part, seconds in t.parts(r).items():
                    parts[part] += seconds
        return plan.model_copy(update={"wall_parts": parts})
    return scheduled(plan, caps)


def scheduled(plan: Plan, caps: waves.Caps | None) -> Plan:
    """A cloud plan with its repetitions placed in time (benchfleet.plan.waves): each repetition's start,
    the waves, each region's peak and where the wall time goes along the repetitions that decide it."""
    items = []
    for r in range(1, plan.repetitions + 1):  # every target's first repetition, then every second one
        for t in plan.targets:
            follows = r - t.at_once if t.at_once and r > t.at_once else None
            items.append(waves.Item(
                target_id=t.target_id, repetition=r, hosts=tuple(t.hosts), duration_s=t.repetition_seconds(r),
                earliest_s=0 if t.at_once == 1 else (r - 1) * t.spacing_s,
                after=(t.target_id, follows) if follows else None))
    slots = waves.schedule(items, caps)
    starts = {(s.item.target_id, s.item.repetition): s.start_s for s in slots}
    targets = [t.model_copy(update={"starts_s": [starts[(t.target_id, r)] for r in range(1, t.repetitions + 1)]})
               for t in plan.targets]
    by_id = {t.target_id: t for t in targets}
    path = waves.critical_path(slots)
    parts = dict.fromkeys((*WALL_PARTS, "waiting"), 0)
    for slot in path:
        for part, seconds in by_id[slot.item.target_id].parts(slot.item.repetition).items():
            parts[part] += seconds
    parts["waiting"] = (path[-1].end_s - sum(s.item.duration_s for s in path)) if path else 0
    return plan.model_copy(update={"targets": targets, "waves": waves.waves(slots), "peaks": waves.peaks(slots),
                                   "wall_parts": parts})
