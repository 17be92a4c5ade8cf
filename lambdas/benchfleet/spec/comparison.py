"""The spec itself: targets x a workload x repetitions, with its variants, order, blocks and budget.

``ComparisonSpec`` holds the parts (spec.targets, spec.workload, spec.variants, spec.storage) and
the checks one document can make on its own: unique ids, a cluster route every target can take,
thread sweeps and limits. The checks that need files or the whole resolved spec are spec.rules.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from benchfleet.spec.fields import SLUG, FieldProblem, StrictModel
from benchfleet.spec.targets import ClusterTarget, ExistingTarget, Target, is_cluster
from benchfleet.spec.variants import MAX_BLOCKS, MAX_VARIANTS, Variant
from benchfleet.spec.workload import WorkloadRef
from benchfleet.workload import serverstatus


def check_route(index: int, route: str, targets: list[Any]) -> None:
    """A route applies to every target of the spec, so every target must be a cluster, and the proxy
    route needs a proxy in front of each."""
    for j, target in enumerate(targets):
        if not is_cluster(target):
            raise FieldProblem(f"variants[{index}].route", f"a connection route is for cluster targets (kind: "
                                                           f"cluster, or local with cluster), and targets[{j}] "
                                                           f"({target.id}, kind {target.kind}) is not one")
        proxy = target.proxy.software if isinstance(target, ClusterTarget) else target.cluster.proxy
        if route == "proxy" and proxy == "none":
            where = "proxy" if isinstance(target, ClusterTarget) else "cluster.proxy"
            raise FieldProblem(f"variants[{index}].route", f"route proxy needs a proxy, and targets[{j}].{where} "
                                                           f"is none ({target.id})")


def unique_ids(field: str, what: str, ids: list[str]) -> dict[str, int]:
    """id -> its index; FieldProblem naming the second use of an id."""
    seen: dict[str, int] = {}
    for i, item in enumerate(ids):
        if item in seen:
            raise FieldProblem(f"{field}[{i}].id", f"{what} id {item!r} is used twice (also {field}[{seen[item]}]); "
                                                    "ids must be unique")
        seen[item] = i
    return seen


class ComparisonSpec(StrictModel):
    """targets x workload x repetitions (x variants). Documented key by key in workloads/README.md."""

    name: str = Field(pattern=SLUG, description="Comparison name, [a-z0-9-]; runs are grouped by it")
    description: str = Field("", max_length=2000)
    workload: WorkloadRef = Field(description="A workload file in workloads/ (by name) or an inline workload")
    repetitions: int = Field(1, ge=1, le=20, description="Each on its own host where the kind allows")
    repetition_spacing_s: int | None = Field(
        None, ge=0, le=7 * 86400,
        description="Start each repetition this many seconds after the previous one started (e.g. to "
                    "spread them over the day); unset: all at once where the backend runs them at once")
    budget_usd: float | None = Field(None, ge=0, le=1_000_000, description="Refuse to start above this")
    baseline: str | None = Field(
        None, pattern=SLUG, description="Target id (or variant id) relative figures refer to; default: the "
                                        "first target, and the first variant")
    margin_pct: float = Field(
        5.0, gt=0, le=50,
        description="Equivalence margin of verdicts, in %: a difference whose interval contains 0 and lies "
                    "inside ±margin is 'equivalent within ±margin'; one whose interval reaches beyond it is "
                    "'inconclusive (±x%)'")
    status_counters: list[Annotated[str, Field(pattern=serverstatus.NAME.pattern)]] | None = Field(
        None, max_length=serverstatus.MAX_COUNTERS,
        description="SHOW GLOBAL STATUS counters read every second from every server (every cluster node); "
                    "running totals become rates per second. Unset: " + ", ".join(serverstatus.DEFAULT_COUNTERS)
                    + "; [] reads none. Cluster targets always add their wsrep counters")
    targets: list[Target] = Field(min_length=1, max_length=200)
    variants: list[Variant] = Field(
        default_factory=list, max_length=MAX_VARIANTS,
        description="What is compared on the same target: every repetition host measures every variant")
    order: Literal["interleaved", "sequential"] = Field(
        "interleaved", description="interleaved: variants alternate at every thread count (and block), local "
                                   "targets run in rounds; sequential: one variant (target) after another")
    blocks: int = Field(1, ge=1, le=MAX_BLOCKS,
                        description="Split each measured step into this many alternating blocks (variants)")

    @field_validator("status_counters")
    @classmethod
    def _counters(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len({n.lower() for n in v}) != len(v):
            raise ValueError("a counter is named twice (SHOW GLOBAL STATUS names are not case-sensitive)")
        return v

    @model_validator(mode="after")
    def _cross_fields(self) -> ComparisonSpec:
        seen = unique_ids("targets", "target", [t.id for t in self.targets])
        variants = unique_ids("variants", "variant", [v.id for v in self.variants])
        self._one_target_per_agent_host()
        self._check_variants()
        if self.baseline is not None:
            if self.baseline in seen and self.baseline in variants:
                raise FieldProblem("baseline", f"{self.baseline!r} is both a target id and a variant id: "
                                               "rename one")
            if self.baseline not in seen and self.baseline not in variants:
                ids = ", ".join(seen) + (f"; variant ids: {', '.join(variants)}" if variants else "")
                raise FieldProblem("baseline", f"{self.baseline!r} is not one of the target ids ({ids})")
        return self

    def _one_target_per_agent_host(self) -> None:
        """Two existing targets on one EC2 instance would run their steps at once on one host (the
        agent's lock refuses the second): each is measured with the other's load beside it."""
        hosts: dict[str, int] = {}
        for i, target in enumerate(self.targets):
            instance = getattr(target, "instance_id", None) if target.kind == "existing" else None
            if instance is None:
                continue
            if instance in hosts:
                raise FieldProblem(f"targets[{i}].instance_id", f"{instance} also runs targets[{hosts[instance]}]'s "
                                                                "agent: one existing target per instance (targets "
                                                                "run at once; the agent measures one at a time)")
            hosts[instance] = i

    def _check_variants(self) -> None:
        if len(self.variants) == 1:
            raise FieldProblem("variants", "one variant compares nothing: give two or more (two identical "
                                           "variants measure the noise, an A/A test)")
        if self.blocks > 1 and not self.variants:
            raise FieldProblem("blocks", "blocks alternate the variants of a target: give variants, or leave "
                                         "blocks at 1")
        if self.blocks > 1 and self.order == "sequential":
            # Sequential blocks would be one variant's every block, then the next's: pairs of blocks
            # minutes apart, compared as if measured side by side.
            raise FieldProblem("blocks", "blocks alternate the variants, and order: sequential measures one "
                                         "variant's whole sweep before the next: leave blocks at 1, or order "
                                         "interleaved")
        for i, variant in enumerate(self.variants):
            if variant.route is not None:
                check_route(i, variant.route, self.targets)
            if not variant.changes_server:
                continue
            for j, target in enumerate(self.targets):
                if target.kind == "existing":
                    key = "server_options" if variant.server_options else "mysql_config"
                    raise FieldProblem(f"variants[{i}].{key}", f"targets[{j}] ({target.id}) is an existing "
                                                               "server, measured as it is configured; benchfleet "
                                                               "never changes its settings")

    @property
    def variant_ids(self) -> list[str]:
        return [v.id for v in self.variants]

    @property
    def is_local(self) -> bool:
        """Every target is benchmarked from this machine: local servers, and existing servers with no
        instance of their own to run the agent."""
        return all(t.kind == "local" or (isinstance(t, ExistingTarget) and t.runs_here) for t in self.targets)
