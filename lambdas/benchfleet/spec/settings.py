"""The settings a target's server runs with for a variant: its cnf, rendered, and its server options.

One answer for every place that asks (validate, the plan, the local runner, the agent's job, the
cluster rule): the variant's mysql_config instead of the target's, its server_options layered over
the target's, rendered for the engine family by benchfleet.workload.mysqlcnf.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchfleet.spec.documents import SpecError, read_text, workloads_dir
from benchfleet.spec.fields import OptionValue
from benchfleet.spec.variants import ResolvedVariant
from benchfleet.workload.mysqlcnf import engine_family, render, with_server_options


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
