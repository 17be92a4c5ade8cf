"""What a cloud step of a variant carries beyond the plan's step (``benchfleet.plan.model.variant_steps``):
the variant's workload where it is not the spec's, and what the variant's settings are, in the form
the step's kind applies them:

- ec2: the agent switches them on the host (``benchfleet_install.Installer.switch_variant``): the
  variant's cnf (the text the host renders for its memory), the settings that differ between
  variants, and the step's switch table (SET GLOBAL from one variant, a restart from another);
- rds / aurora: start_step puts the variant's values of the differing parameters into the run's
  parameter groups (ApplyMethod immediate: Plan refused any that is not dynamic) and the agent waits
  until the server reports them before it measures;
- existing: nothing changes on the server (the variants differ in workload or options only).

Every variant step's agent reads the settings back (SHOW GLOBAL VARIABLES) and records them, with
the requested values, in the step's summary.
"""

from __future__ import annotations

from typing import Any

from benchfleet.plan.model import PlanStep
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import cnf_source, server_settings
from benchfleet.spec.switching import PARAMETER_GROUP_KINDS
from benchfleet.workload import serverparams
from benchfleet.workload.mysqlcnf import normalised

# How long the agent waits for the server to report a variant's parameters after start_step
# changed the parameter group (RDS applies immediate changes in seconds; a minute or two is slow).
PARAMETERS_WAIT_S = 240


def varying(loaded: LoadedSpec, target: Any) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(settings whose values differ between the variants on ``target``, each variant's settings)."""
    by_variant = {v.id: server_settings(target, v) for v in loaded.variants}
    names = sorted({n for opts in by_variant.values() for n in opts})
    return [n for n in names if len({normalised(o.get(n, "\0")) for o in by_variant.values()}) > 1], by_variant


def verify(loaded: LoadedSpec, target: Any) -> dict[str, Any] | None:
    """The prepare job's ``verify`` (benchfleet.plan.agentjob): the settings the variants set apart, which
    fail no target (each variant's step reads them back), and on rds / aurora how long the agent reads
    the server again before a parameter group's value that has not arrived fails the target."""
    out: dict[str, Any] = {}
    if loaded.variants and target.kind in ("ec2", *PARAMETER_GROUP_KINDS):
        names = varying(loaded, target)[0]
        if names:
            out["varying"] = names
    if target.kind in PARAMETER_GROUP_KINDS:
        out["settle_s"] = PARAMETERS_WAIT_S
    return out or None


def stripped(source: str) -> str:
    """A cnf's text without comments (the renderer ignores them; a job carries less)."""
    lines = [line.split("#", 1)[0].rstrip() for line in source.splitlines()]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def first_cnf(loaded: LoadedSpec, target: Any) -> tuple[str, str, str | None]:
    """(mysql_config, cnf text with server_options, first variant) an ec2 host installs: the server
    starts with the first variant's settings, as the plan's order assumes."""
    first = loaded.variants[0] if loaded.variants else None
    config, source = cnf_source(target, first)
    return config, stripped(source), first.id if first else None


def step_extras(loaded: LoadedSpec, target: Any, step: PlanStep,
                cache: dict[str, Any]) -> dict[str, Any]:
    """The step's ``workload`` (a variant's other than the spec's) and ``variant_settings``."""
    out: dict[str, Any] = {}
    if step.variant is not None:
        workload = loaded.workload_of(step.variant)
        if workload != loaded.workload:
            out["workload"] = workload.model_dump(mode="json")
    if step.settings is None:
        return out
    if "varying" not in cache:
        cache["varying"] = varying(loaded, target) if target.kind != "existing" else ([], {})
    names, by_variant = cache["varying"]
    variant = loaded.variant(step.settings)
    if target.kind == "ec2":
        config, source = cnf_source(target, variant)
        out["variant_settings"] = {"variant": step.settings, "engine": target.engine, "mysql_config": config,
                                   "cnf": stripped(source), "varying": names}
    elif target.kind in ("rds", "aurora"):
        mine = by_variant[step.settings]
        params, _ = serverparams.db_parameters(target.kind, [(n, mine[n]) for n in names if n in mine])
        out["variant_settings"] = {"variant": step.settings, "wait_s": PARAMETERS_WAIT_S,
                                   "parameters": [{"name": p.name, "value": p.value, "level": p.level}
                                                  for p in params]}
    else:
        out["variant_settings"] = {"variant": step.settings}
    return out
