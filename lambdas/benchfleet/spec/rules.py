"""The rules across the parts of a spec, checked once it is resolved against workloads/ on disk.

A Lua test exists and requires only what ships; every cnf a target or variant names exists and
renders; go-tpc is never pointed at a target reached over TLS only; variants can be measured side by
side (one sweep, step length, report interval and percentile; blocks that divide a step; one data set
on an existing server) and a cluster's variants do not change what its nodes were set up with. Each
problem is a (field path, message) pair; spec.model raises them together as one SpecError.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from benchfleet.cluster import galera
from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.documents import SpecError
from benchfleet.spec.fields import FieldProblem, check_workload_options
from benchfleet.spec.settings import cnf_text, server_settings
from benchfleet.spec.targets import ExistingTarget, is_cluster
from benchfleet.spec.variants import ResolvedVariant
from benchfleet.spec.workload import Workload, data_set_key
from benchfleet.workload.mysqlcnf import CnfError, normalised


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
