"""The comparison spec and the workload: what a user writes, validated before anything starts.

A spec names targets x a workload x repetitions. Specs and workloads are YAML or JSON files (or, in
the API, a JSON body); errors name the file, the field path and the problem.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchfleet.cluster import galera
from benchfleet.spec.documents import SpecError, read_document, read_text, workloads_dir
from benchfleet.spec.fields import SLUG, FieldProblem, OptionValue, StrictModel, check_workload_options
from benchfleet.spec.targets import TARGET_KINDS, ClusterTarget, ExistingTarget, Target, is_cluster
from benchfleet.spec.variants import MAX_BLOCKS, MAX_VARIANTS, ResolvedVariant, Variant, resolve_variant
from benchfleet.spec.workload import Workload, WorkloadRef, data_set_key
from benchfleet.workload import serverstatus
from benchfleet.workload.mysqlcnf import CnfError, engine_family, normalised, render, with_server_options


def cluster_settings_problems(spec: ComparisonSpec, variants: list[ResolvedVariant],
                              root: Path | None = None) -> list[tuple[str, str]]:
    """The one rule of a cluster's nodes and its variants (validate, the API, Plan and the local runner
    all come through ``variant_problems``): the nodes are configured once, at set-up, with the
    target's settings, and every variant is measured on them. A variant may restate those settings
    (its ``mysql_config`` / ``server_options`` render to the same options and values: it changes
    nothing, so a spec that writes them out on every side still runs); one that changes a setting is
    refused naming its field and the setting, since that difference would never be measured."""
    problems: list[tuple[str, str]] = []
    for j, target in enumerate(spec.targets):
        if not is_cluster(target):
            continue
        try:
            own = server_settings(target, None, root)
        except (CnfError, SpecError):
            continue  # a cnf that does not render is named by the checks of that field
        for name, value in own.items():  # what the cluster sets itself wins over the target's
            problem = galera.managed_problem(name, value)
            if problem:
                key = next((k for k in target.server_options if k.replace("-", "_") == name), None)
                problems.append((f"targets[{j}].server_options.{key}" if key else f"targets[{j}].mysql_config",
                                 problem))
        for i, variant in enumerate(variants):
            if not (variant.mysql_config or variant.server_options):
                continue
            try:
                theirs = server_settings(target, variant, root)
            except (CnfError, SpecError):
                continue
            changed: dict[str, list[str]] = {}
            for name in sorted(set(own) | set(theirs)):
                if name in own and name in theirs and normalised(own[name]) == normalised(theirs[name]):
                    continue
                key = next((k for k in variant.server_options if k.replace("-", "_") == name), None)
                where = f"variants[{i}].server_options.{key}" if key else f"variants[{i}].mysql_config"
                before, after = (("the server's default" if v is None else v or "set")
                                 for v in (own.get(name), theirs.get(name)))
                changed.setdefault(where, []).append(f"{name} ({before} -> {after})")
            problems += [(where, f"targets[{j}] ({target.id}) is a cluster: its nodes run the target's settings "
                                 f"for every variant (configured once, at set-up), and this changes "
                                 f"{_first(what, 4)}; a cluster's variants differ in route, workload or options "
                                 "(restating the target's settings is allowed): compare settings on separate "
                                 "targets")
                         for where, what in changed.items()]
    return problems


def _first(items: list[str], count: int) -> str:
    return ", ".join(items[:count]) + (f" and {len(items) - count} more" if len(items) > count else "")


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


# ---- loading ------------------------------------------------------------------------------------


def _loc(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif ((item in TARGET_KINDS and i and isinstance(loc[i - 1], int)) or item in ("by-name", "inline")
              or item.startswith(("function-", "json-"))):
            continue  # the discriminator's own branch name (after a list index) adds nothing for a reader
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts)


@functools.lru_cache(maxsize=1)
def _known_keys() -> tuple[str, ...]:
    """Every key a spec or a workload file may hold, at any depth (their JSON Schemas' properties): what
    an unknown key is matched against for "did you mean" (a misspelt sysbench test got one; a misspelt
    key did not)."""
    keys: set[str] = set()
    for schema in (ComparisonSpec.model_json_schema(), Workload.model_json_schema()):
        for part in (schema, *schema.get("$defs", {}).values()):
            keys.update(part.get("properties", {}))
    return tuple(sorted(keys))


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in error.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "union_tag_invalid":
            msg = f"kind must be one of {', '.join(TARGET_KINDS)}"
        elif e["type"] == "union_tag_not_found":
            msg = "kind is required (one of " + ", ".join(TARGET_KINDS) + ")"
        elif e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(e["loc"][-1]), _known_keys(), n=1, cutoff=0.75)
            msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "") + \
                " (see workloads/README.md for the keys)"
        where = _loc(tuple(e["loc"]))
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            where = f"{where}.{cause.path}" if where else cause.path
        out.append((where, msg))
    return out


_M = TypeVar("_M", bound=BaseModel)


def _parse(model: type[_M], data: Any, source: str, keys: str) -> _M:
    if not isinstance(data, dict):
        raise SpecError(source, [("", f"a {keys.split()[0]} must be a mapping of keys ({keys.split(' ', 1)[1]})")])
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise SpecError(source, problems_of(e)) from None


def parse_spec(data: Any, source: str = "spec") -> ComparisonSpec:
    if isinstance(data, dict) and "test" in data and not {"targets", "workload"} & set(data):
        # A workload file given where a spec goes (validate workloads/oltp-read-write.yaml) listed every
        # workload key as "unknown", the keys README documents, and targets as missing.
        raise SpecError(source, [("", "is a workload (test, threads, ...), not a comparison spec: a spec names it "
                                      "as its workload and gives the targets (workloads/comparisons/*.yaml; "
                                      "workloads/README.md, 'Comparison spec')")])
    return _parse(ComparisonSpec, data, source, "spec name, workload, targets, ...")


def parse_workload(data: Any, source: str = "workload") -> Workload:
    return _parse(Workload, data, source, "workload name, test, threads, ...")


def load_workload(name: str, root: Path | None = None) -> Workload:
    root = root or workloads_dir()
    for suffix in (".yaml", ".yml", ".json"):
        path = root / f"{name}{suffix}"
        if path.exists():
            workload = parse_workload(read_document(path), str(path))
            if workload.name != name:
                raise SpecError(str(path), [("name", f"is {workload.name!r} but the file is named {name!r}")])
            return workload
    raise SpecError("spec", [("workload", f"no workload named {name!r} in {root}")])


class LoadedSpec(BaseModel):
    """A spec with its workload(s) resolved and its files checked."""

    model_config = ConfigDict(frozen=True)

    spec: ComparisonSpec
    workload: Workload
    source: str
    variants: list[ResolvedVariant] = []

    def variant(self, variant_id: str | None) -> ResolvedVariant | None:
        return next((v for v in self.variants if v.id == variant_id), None)

    def inline(self) -> dict[str, Any]:
        """The spec as JSON with every workload inline (the stored spec of a run, an API body): the
        workload files may change after the run, and Lambdas ship no workload library. A variant's
        inline workload already holds its options (merging them again changes nothing)."""
        doc = self.spec.model_dump(mode="json")
        doc["workload"] = self.workload.model_dump(mode="json")
        for item, variant in zip(doc.get("variants") or [], self.variants, strict=True):
            if item.get("workload") is not None:
                item["workload"] = variant.workload.model_dump(mode="json")
        return doc

    def workload_of(self, variant_id: str | None) -> Workload:
        """The workload a step of ``variant_id`` runs (the spec's when there are no variants)."""
        found = self.variant(variant_id)
        return found.workload if found else self.workload


def target_settings(target: Any, variant: ResolvedVariant | None) -> tuple[str, dict[str, OptionValue]]:
    """(mysql_config, server_options) a server of ``target`` runs with for ``variant``: the variant's
    mysql_config instead of the target's, its server_options layered over the target's."""
    base = str(getattr(target, "mysql_config", "default"))
    options = dict(getattr(target, "server_options", {}) or {})
    if variant is None:
        return base, options
    return variant.mysql_config or base, {**options, **variant.server_options}


def family_of(target: Any) -> str:
    """The engine family a target's server renders its cnf for (local servers are MariaDB)."""
    return "mariadb" if target.kind == "local" else engine_family(str(getattr(target, "engine", "mysql-8.0")))


def cnf_source(target: Any, variant: ResolvedVariant | None, root: Path | None = None) -> tuple[str, str]:
    """(mysql_config name, cnf text with server_options layered over it) of ``target`` for ``variant``."""
    config, options = target_settings(target, variant)
    return config, with_server_options(cnf_text(config, root), options)


def server_settings(target: Any, variant: ResolvedVariant | None, root: Path | None = None) -> dict[str, str]:
    """option -> value a server of ``target`` runs with for ``variant`` (memory shares kept as NN%):
    what variants compare and switch between (benchfleet.spec.switching), and what a cluster's variants may
    not change (``cluster_settings_problems``). CnfError / SpecError when its cnf does not render."""
    config, source = cnf_source(target, variant, root)
    return dict(render(source, family_of(target), None, f"{config}.cnf").options)


def load_spec(path: Path | str, root: Path | None = None) -> LoadedSpec:
    """Read, validate and resolve a spec file: its workload and every target's mysql_config."""
    path = Path(path)
    spec = parse_spec(read_document(path), str(path))
    return resolve(spec, str(path), root)


def _workload(ref: str | Workload, field: str, source: str, root: Path) -> Workload:
    try:
        return ref if isinstance(ref, Workload) else load_workload(ref, root)
    except SpecError as e:
        if e.source == "spec":
            raise SpecError(source, [(field, message) for _, message in e.problems]) from None
        raise


def cnf_text(config: str, root: Path | None = None) -> str:
    """The text of workloads/mysql/<config>.cnf; SpecError when there is none, or it is not a regular
    file (a FIFO would block the reader for ever), too large, or not UTF-8 (``read_text``)."""
    folder = (root or workloads_dir()) / "mysql"
    path = folder / f"{config}.cnf"
    if not os.path.lexists(path):
        raise SpecError(str(path), [("", f"no file {config}.cnf in {folder.resolve()}")])
    try:
        return read_text(path)
    except SpecError as e:
        raise SpecError(str(path), [("", f"{config}.cnf {e.problems[0][1]}")]) from None


_REQUIRE = re.compile(r"""\brequire\s*\(?\s*["']([A-Za-z0-9_]+)["']""")


def lua_test_problem(test: str, root: Path) -> str | None:
    """Why a workload's ``lua/<name>.lua`` test cannot run (None: it can): it must be a regular file
    in ``root``/lua (the agent bundle ships that folder; no link out of it) and a workload, not a
    module other scripts ``require`` (benchfleet_common.lua)."""
    folder = (root / "lua").resolve()
    path = root / test
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{test} does not exist in {root}"
    if real.parent != folder or not real.is_file():
        return f"{test} is not a Lua script in {folder} (a link out of it, or not a regular file)"
    helpers = set()
    for script in folder.glob("*.lua"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            helpers.update(_REQUIRE.findall(script.read_text()))
    if real.stem in helpers:
        return f"{test} is a module the Lua workloads require, not a workload"
    return None


def test_problems(workloads: list[tuple[str, Workload]], root: Path) -> list[tuple[str, str]]:
    """(field, problem) for every workload whose test cannot run: built-in names are checked by the
    model (BUILTIN_TESTS), Lua scripts here (``lua_test_problem``)."""
    problems = []
    for name, w in workloads:
        problem = lua_test_problem(w.test, root) if w.test.startswith("lua/") else None
        if problem:
            problems.append((f"{name}.test", problem))
    return problems


def config_problems(spec: ComparisonSpec, root: Path | None = None) -> list[tuple[str, str]]:
    """(field, problem) for every target's and variant's mysql_config that names no cnf in
    workloads/mysql: a spec file (``resolve``) and an inline one (the API, Plan: ``inline_loaded``) alike.
    A variant naming none reached the Plan Lambda's cnf reader and the API answered 500."""
    configs = [(f"targets[{i}].mysql_config", t.mysql_config) for i, t in enumerate(spec.targets)]
    configs += [(f"variants[{i}].mysql_config", v.mysql_config) for i, v in enumerate(spec.variants)
                if v.mysql_config]
    problems = []
    for field, config in configs:
        try:
            cnf_text(config, root)
        except SpecError as e:
            problems.append((field, e.problems[0][1]))
    return problems


def tool_problems(spec: ComparisonSpec, workloads: list[tuple[str, Workload]]) -> list[tuple[str, str]]:
    """(field, problem) for every target a go-tpc workload of the spec cannot measure: go-tpc 1.0.7 has no
    TLS option, and benchfleet reaches RDS and Aurora over TLS only (aws/steps/jobs.py ``db_of``), as it
    does an existing server that says ``tls: required``. The agent refuses such a job on the host
    (``_check_gotpc``), which the cloud reaches only once the database is provisioned and paid for."""
    tpcc = next((name for name, w in workloads if w.tool == "go-tpc"), None)
    if tpcc is None:
        return []
    why = f"{tpcc} runs go-tpc, which has no TLS option"
    problems = []
    for i, t in enumerate(spec.targets):
        if t.kind in ("rds", "aurora"):
            problems.append((f"targets[{i}].kind", f"{why}, and benchfleet reaches {t.kind} only over TLS: "
                             "run TPC-C on ec2, local or existing targets"))
        elif isinstance(t, ExistingTarget) and t.tls == "required":
            problems.append((f"targets[{i}].tls", f"{why}, so it cannot keep tls: required"))
    return problems


def resolve(spec: ComparisonSpec, source: str, root: Path | None = None) -> LoadedSpec:
    root = root or workloads_dir()
    workload = _workload(spec.workload, "workload", source, root)
    variants = [resolve_variant(v, _workload(v.workload, f"variants[{i}].workload", source, root)
                                if v.workload is not None else workload)
                for i, v in enumerate(spec.variants)]
    problems = test_problems([("workload", workload), *((f"variants[{i}].workload", v.workload)
                                                        for i, v in enumerate(variants) if spec.variants[i].workload)],
                             root)
    problems += config_problems(spec, root)
    problems += variant_problems(spec, workload, variants, root)
    problems += tool_problems(spec, [("workload", workload), *((f"variants[{i}].workload", v.workload)
                                                             for i, v in enumerate(variants))])
    if problems:
        raise SpecError(source, problems)
    return LoadedSpec(spec=spec, workload=workload, source=source, variants=variants)


def variant_problems(spec: ComparisonSpec, workload: Workload, variants: list[ResolvedVariant],
                     root: Path | None = None) -> list[tuple[str, str]]:
    """What makes variants impossible to measure side by side: steps that cannot pair (another sweep,
    step length or report interval), blocks that do not divide a step, several data sets on an
    existing server (benchfleet works in its one schema there), and a cluster's variants that would
    change its nodes' settings (``cluster_settings_problems``)."""
    problems: list[tuple[str, str]] = cluster_settings_problems(spec, variants, root)
    for i, (variant, resolved) in enumerate(zip(spec.variants, variants, strict=True)):
        # The variant's options, for the test it runs (its own workload's, else the spec's).
        try:
            check_workload_options(variant.options, resolved.workload.test)
        except FieldProblem as e:
            problems.append((f"variants[{i}].options.{e.path}", str(e)))
    for i, v in enumerate(variants):
        for key in ("threads", "duration_s", "report_interval_s"):
            if getattr(v.workload, key) != getattr(workload, key):
                problems.append((f"variants[{i}].workload", f"its {key} ({getattr(v.workload, key)}) differs from the "
                                 f"spec workload's ({getattr(workload, key)}): variants are measured step by step "
                                 "side by side, so their sweeps must match"))
                break
        if v.workload.percentile != workload.percentile:
            # One latency column, labelled with one percentile, holds every variant's: a variant's p99
            # was shown as p95 beside the others' p95.
            problems.append((f"variants[{i}].workload", f"its percentile ({v.workload.percentile}) differs from the "
                             f"spec workload's ({workload.percentile}): every variant's latency is reported and "
                             "compared at one percentile"))
    if spec.blocks > 1:
        block_s, rest = divmod(workload.duration_s, spec.blocks)
        if rest:
            problems.append(("blocks", f"{spec.blocks} blocks do not divide the {workload.duration_s} s steps "
                                       "evenly; choose a divisor of duration_s"))
        elif block_s < 2 * workload.report_interval_s:
            problems.append(("blocks", f"{spec.blocks} blocks of {workload.duration_s} s steps last {block_s} s each, "
                                       f"fewer than two report intervals ({workload.report_interval_s} s)"))
    data_sets = {data_set_key(v.workload) for v in variants}
    if len(data_sets) > 1:
        for j, target in enumerate(spec.targets):
            if target.kind == "existing":
                problems.append(("variants", f"the variants load {len(data_sets)} different data sets, and "
                                             f"targets[{j}] ({target.id}) is an existing server, where benchfleet "
                                             "works in its one schema; give the variants one workload there"))
    return problems


def inline_loaded(spec: ComparisonSpec, source: str) -> LoadedSpec:
    """A spec whose workloads are all inline (an API body, an execution's input), resolved without
    the workload library; SpecError naming a variant workload given by name or one that does not fit."""
    assert isinstance(spec.workload, Workload)
    problems = [(f"variants[{i}].workload", f"{v.workload!r} is a name; here workloads are inline "
                                            "(benchfleet run --remote inlines named workloads)")
                for i, v in enumerate(spec.variants) if isinstance(v.workload, str)]
    if problems:
        raise SpecError(source, problems)
    variants = [resolve_variant(v, v.workload if isinstance(v.workload, Workload) else spec.workload)
                for v in spec.variants]
    # The Lua scripts are the ones the agent bundle ships (the Lambdas carry a copy of workloads/lua).
    problems = test_problems([("workload", spec.workload), *((f"variants[{i}].workload", v.workload)
                                                             for i, v in enumerate(spec.variants)
                                                             if isinstance(v.workload, Workload))], workloads_dir())
    problems += config_problems(spec)
    problems += variant_problems(spec, spec.workload, variants)
    problems += tool_problems(spec, [("workload", spec.workload), *((f"variants[{i}].workload", v.workload)
                                                                  for i, v in enumerate(variants))])
    if problems:
        raise SpecError(source, problems)
    return LoadedSpec(spec=spec, workload=spec.workload, source=source, variants=variants)


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of a comparison spec (workloads/spec.schema.json)."""
    schema = ComparisonSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "benchfleet comparison spec"
    return schema
