"""What the run's parameter groups of an ``rds`` or ``aurora`` target hold (issue 28 item 1), decided
by Plan and the API before anything is created: the target's mysql_config with its server_options
(the first variant's settings in a spec with variants: the server starts with them, as on ec2),
rendered as the engine reads them and written as RDS parameters. A setting RDS or Aurora does not let
a parameter group set refuses the spec, naming the field it came from; so does a setting that differs
between variants and cannot change while the server runs (``benchfleet.spec.switching.switch_problems``).
"""

from __future__ import annotations

from typing import Any

from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import server_settings
from benchfleet.spec.switching import PARAMETER_GROUP_KINDS, setting_field
from benchfleet.workload import serverparams

FieldProblem = tuple[str, str]


def target_parameters(loaded: LoadedSpec, index: int) -> tuple[list[dict[str, Any]], list[FieldProblem]]:
    """(parameter group entries {name, value, level, apply}, problems naming the field) of the
    spec's ``index``-th target; nothing for a kind without parameter groups."""
    target = loaded.spec.targets[index]
    if target.kind not in PARAMETER_GROUP_KINDS:
        return [], []
    first = loaded.variants[0] if loaded.variants else None
    options = server_settings(target, first)
    params, refused = serverparams.db_parameters(target.kind, list(options.items()))
    config = (first.mysql_config if first is not None else None) or target.mysql_config
    problems = []
    for name, why in refused:
        field = setting_field(target, index, first, 0, name)
        where = "" if ".server_options." in field else f" (in workloads/mysql/{config}.cnf)"
        problems.append((field, f"{name}{where}: {why}"))
    entries = [{"name": p.name, "value": p.value, "level": p.level, "apply": p.apply} for p in params]
    return entries, problems


def requested(parameters: list[dict[str, Any]]) -> dict[str, str]:
    """What the agent compares with the server's SHOW GLOBAL VARIABLES: every entry but RDS's
    formulas (``{DBInstanceClassMemory*...}``), which RDS sizes from the instance's memory itself
    (the effective values of those are recorded all the same)."""
    return {str(p["name"]): str(p["value"]) for p in parameters if not str(p["value"]).startswith("{")}
