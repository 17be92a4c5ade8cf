"""Variants of one target: how the server goes from one variant's settings to another's.

A target's server runs one variant's settings at a time (``spec.server_settings``, which the spec's
cluster rule compares too): its mysql_config (the variant's, else the target's) with the target's
server_options and the variant's over it, rendered for the target's engine. Going from one variant
to another is a *switch* (``benchfleet.workload.serverparams.switch_method``):

- ``none``: the settings are the same (the variants differ in workload or sysbench options only);
- ``set-global``: every setting that differs is dynamic: ``SET GLOBAL`` (local, EC2);
- ``restart``: the server restarts with the variant's cnf (local, EC2), its data kept; the plan puts a
  warm-up of the variant before its next measured step, since a restart empties the buffer pool;
- ``parameter-group``: RDS / Aurora: the run's parameter group gets the variant's dynamic parameters
  (ApplyMethod immediate) and the agent waits until the server reports them. A static one is refused.

The plan computes every switch before the run (``switches``); the runtimes follow it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import family_of, server_settings
from benchfleet.spec.variants import ResolvedVariant
from benchfleet.workload import serverparams
from benchfleet.workload.mysqlcnf import normalised

SERVER_KINDS = ("local", "ec2")       # servers benchfleet runs: SET GLOBAL and restarts
PARAMETER_GROUP_KINDS = ("rds", "aurora")


def switches(loaded: LoadedSpec, target: Any, root: Path | None = None) -> dict[tuple[str, str], str]:
    """(from variant, to variant) -> switch method, for every ordered pair of the spec's variants on
    ``target``. RDS / Aurora: ``parameter-group`` where the settings differ (``switch_problems`` says
    which differences cannot switch there)."""
    if target.kind == "existing":
        return {(a.id, b.id): "none" for a in loaded.variants for b in loaded.variants if a.id != b.id}
    by_variant = {v.id: server_settings(target, v, root) for v in loaded.variants}
    family = family_of(target)
    out: dict[tuple[str, str], str] = {}
    for a in loaded.variants:
        for b in loaded.variants:
            if a.id == b.id:
                continue
            method: str = serverparams.switch_method(family, by_variant[a.id], by_variant[b.id])[0]
            if target.kind in PARAMETER_GROUP_KINDS and method != "none":
                method = "parameter-group"
            out[(a.id, b.id)] = method
    return out


def switch_problems(loaded: LoadedSpec, target: Any, index: int, root: Path | None = None) -> list[tuple[str, str]]:
    """RDS / Aurora: each variant setting that differs between variants and cannot change while the
    server runs (a static or unsettable parameter: a reboot per switch would be the benchmark),
    naming the variant's field."""
    if target.kind not in PARAMETER_GROUP_KINDS or not loaded.variants:
        return []
    catalogue = serverparams.load_catalogue()
    by_variant = {v.id: server_settings(target, v, root) for v in loaded.variants}
    problems: list[tuple[str, str]] = []
    for i, v in enumerate(loaded.variants):
        for other in loaded.variants:
            if other.id == v.id:
                continue
            mine, theirs = by_variant[v.id], by_variant[other.id]
            for name in sorted(set(mine) | set(theirs)):
                if normalised(mine.get(name, "")) == normalised(theirs.get(name, "")):
                    continue
                rule = catalogue.rules.get(name)
                apply = (rule.aurora[1] if rule and rule.aurora else None) if target.kind == "aurora" \
                    else (rule.rds if rule else None)
                if name not in mine or name not in theirs:
                    why = f"is set by variant {v.id if name in mine else other.id} only; on {target.kind} every " \
                          "variant must give a value a parameter group can switch"
                elif apply != "dynamic":
                    why = (f"is a static {target.kind} parameter: switching it needs a reboot between measured "
                           "steps; compare it on separate targets instead") if apply else \
                          f"cannot be set on {target.kind} ({catalogue.where()})"
                else:
                    continue
                problems.append((setting_field(target, index, v, i, name),
                                 f"{name} {why} (targets[{index}] {target.id})"))
            break  # one comparison per variant names every setting it differs in
    return problems


def setting_field(target: Any, index: int, variant: ResolvedVariant | None, variant_index: int, name: str) -> str:
    """The spec field a setting ``name`` of ``target`` (as ``variant`` runs it) comes from: the
    variant's server_options, the target's, the variant's mysql_config, else the target's."""
    if variant is not None and any(serverparams.setting_name(k) == name for k in variant.server_options):
        return f"variants[{variant_index}].server_options.{name}"
    if any(serverparams.setting_name(k) == name for k in getattr(target, "server_options", {}) or {}):
        return f"targets[{index}].server_options.{name}"
    if variant is not None and variant.mysql_config:
        return f"variants[{variant_index}].mysql_config"
    return f"targets[{index}].mysql_config"
