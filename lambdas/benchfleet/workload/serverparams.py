"""Which server settings can change at run time, and which RDS and Aurora let a parameter group set:
``workloads/catalogue/server-parameters.json``, a small dated catalogue transcribed from the engines'
and AWS's documentation.

Two questions are answered here, both before anything starts:

- **Switching variants on one server** (local, EC2): a change of settings the engine takes with
  ``SET GLOBAL`` needs no restart; anything else (a static setting, one the catalogue does not know,
  an option one variant sets and the other leaves to the server's default) restarts the server with
  the variant's cnf. Unknown means static: a restart is always right, a SET GLOBAL that fails is not.
- **RDS / Aurora parameter groups**: a target's mysql_config and server_options become the run's own
  DB parameter group (and DB cluster parameter group for Aurora); a setting the catalogue does not
  list for that service, or lists as not settable there, is refused naming it. Variants may switch
  only dynamic parameters there (no SUPER, so no SET GLOBAL; a reboot per switch is refused).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from benchfleet.workload.mysqlcnf import bytes_of, normalised

Switch = Literal["none", "set-global", "restart"]
_PERCENT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)%$")
_TRUE, _FALSE = {"on", "true", "yes"}, {"off", "false", "no"}
# RDS formula variable for a share of the instance's memory (DB parameter formula variables).
RDS_MEMORY = "DBInstanceClassMemory"
# ModifyDBParameterGroup / ModifyDBClusterParameterGroup take at most this many parameters a call.
RDS_PARAMETERS_PER_CALL = 20


@dataclass(frozen=True)
class Rule:
    name: str
    engine: dict[str, str]              # family -> dynamic | static
    rds: str | None                     # apply type, or None: not settable on RDS
    aurora: tuple[str, str] | None      # (cluster | instance, apply type), or None


@dataclass(frozen=True)
class Catalogue:
    as_of: str
    rules: dict[str, Rule]

    def where(self) -> str:
        return f"workloads/catalogue/server-parameters.json, as of {self.as_of}"


def catalogue_path() -> Path:
    from benchfleet.spec.documents import workloads_dir

    return workloads_dir() / "catalogue" / "server-parameters.json"


@lru_cache(maxsize=4)
def _load(path: str) -> Catalogue:
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    rules = {name: Rule(name=name, engine=dict(entry.get("engine") or {}), rds=entry.get("rds"),
                        aurora=(str(entry["aurora"][0]), str(entry["aurora"][1])) if entry.get("aurora") else None)
             for name, entry in doc["parameters"].items()}
    return Catalogue(as_of=str(doc["as_of"]), rules=rules)


def load_catalogue(path: Path | None = None) -> Catalogue:
    return _load(str(path or catalogue_path()))


def setting_name(option: str) -> str:
    """An option as the catalogue and the server name it (``skip-name-resolve`` -> ``skip_name_resolve``)."""
    name = option.replace("-", "_").lower()
    return name[len("loose_"):] if name.startswith("loose_") else name


def switch_method(family: str, before: dict[str, str], after: dict[str, str],
                  catalogue: Catalogue | None = None) -> tuple[Switch, list[str]]:
    """How a server running with ``before`` (option -> value, as the cnf renders them) comes to run
    with ``after``: ``none`` (nothing differs), ``set-global`` (every difference is a dynamic
    setting both sides give a value), else ``restart``; with the settings that decided it."""
    catalogue = catalogue or load_catalogue()
    old = {setting_name(k): normalised(v) for k, v in before.items()}
    new = {setting_name(k): normalised(v) for k, v in after.items()}
    changed = sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
    if not changed:
        return "none", []
    one_sided = [n for n in changed if n not in old or n not in new]
    if one_sided:
        return "restart", one_sided  # its other value is the server's startup default: only a restart gives it
    static = [n for n in changed if (catalogue.rules.get(n) or Rule(n, {}, None, None)).engine.get(family) != "dynamic"]
    if static:
        return "restart", static
    return "set-global", changed


# ---- RDS and Aurora -----------------------------------------------------------------------------

@dataclass(frozen=True)
class DbParameter:
    name: str
    value: str
    level: Literal["instance", "cluster"]
    apply: str                           # dynamic | static

    def as_api(self, method: str | None = None) -> dict[str, str]:
        """The Parameters entry of ModifyDBParameterGroup / ModifyDBClusterParameterGroup: static
        parameters pending-reboot, dynamic ones immediate (unless ``method`` says otherwise)."""
        return {"ParameterName": self.name, "ParameterValue": self.value,
                "ApplyMethod": method or ("immediate" if self.apply == "dynamic" else "pending-reboot")}


def rds_value(value: str) -> str | None:
    """A cnf value as an RDS parameter value: ``NN%`` of memory becomes RDS's formula, sizes become
    bytes, booleans 1/0; None for an option given without a value (RDS has no such form)."""
    text = str(value).strip()
    if text == "":
        return None
    percent = _PERCENT.match(text)
    if percent:
        share = float(percent.group(1))
        # Integer arithmetic only in RDS formulas: a share in ten-thousandths keeps two decimals.
        return "{" + f"{RDS_MEMORY}*{round(share * 100)}/10000" + "}"
    low = text.lower()
    return bytes_of(low) or ("1" if low in _TRUE else "0" if low in _FALSE else text)


def db_parameters(kind: str, options: list[tuple[str, str]],
                  catalogue: Catalogue | None = None) -> tuple[list[DbParameter], list[tuple[str, str]]]:
    """The run's parameter group entries for an ``rds`` or ``aurora`` target from its rendered cnf
    options, and the problems ``(setting, why)`` that make the spec impossible there."""
    catalogue = catalogue or load_catalogue()
    out: list[DbParameter] = []
    problems: list[tuple[str, str]] = []
    service = "Aurora MySQL" if kind == "aurora" else "RDS"
    for option, raw in options:
        name = setting_name(option)
        rule = catalogue.rules.get(name)
        value = rds_value(raw)
        if rule is None:
            problems.append((name, f"not in benchfleet's catalogue of settings {service} lets a parameter group "
                                   f"set ({catalogue.where()}); remove it, or add it to the catalogue"))
            continue
        where: tuple[str, str] | None = (rule.aurora if kind == "aurora"
                                         else ("instance", rule.rds) if rule.rds else None)
        if where is None:
            problems.append((name, f"{service} does not let a parameter group set it ({catalogue.where()})"))
            continue
        if value is None:
            problems.append((name, f"given without a value; {service} parameters need one"))
            continue
        out.append(DbParameter(name=name, value=value, level=where[0], apply=where[1]))  # type: ignore[arg-type]
    return out, problems

