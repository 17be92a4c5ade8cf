"""What every part of a spec shares: the field patterns, the strict base model and the option rules.

Every model of a spec derives from ``StrictModel`` (unknown keys refused, nothing coerced, free text
printable); the patterns say what a name, region, engine or value may look like before anything asks
AWS; ``check_workload_options`` and ``check_server_options`` are the one rule for the sysbench and
server options a workload, a target or a variant may give.
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, field_validator

from benchfleet.workload.sysbench import option_refusal, script_option_refusal

SLUG = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
# A workload's test is a sysbench built-in or a Lua file under workloads/lua/; never a path elsewhere.
TEST_NAME = re.compile(r"^(?:[a-z][a-z0-9_]{0,63}|lua/[a-z0-9][a-z0-9_-]{0,62}\.lua)$")
INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
DB_CLASS = re.compile(r"^db\.[a-z0-9-]+\.[a-z0-9]+$")
# [0-9], never \d: pydantic-core's regex engine takes \d as any Unicode digit, and "us-east-\u0661"
# or "mysql-\uff18.0" would start runs no AWS SDK or package manager can act on.
REGION = re.compile(r"^[a-z]{2}(?:-gov)?-[a-z]+-[0-9]$")
ENGINE = re.compile(r"^(?:mysql|mariadb)(?:-[0-9]+(?:\.[0-9]+){0,2})?$")
HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.,:/+%@-]{0,256}$")
SERVER_OPTION = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
DB_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,79}$")
SCHEMA = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


OptionValue = bool | int | float | str


class FieldProblem(ValueError):
    """A cross-field check's refusal about one field: pydantic places model validators' errors at
    the model, and ``problems_of`` moves them to ``path`` so the message names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class StrictModel(BaseModel):
    # strict: `repetitions: true` or `threads: ["4"]` are mistakes to report, not values to coerce.
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, strict=True)

    @field_validator("description", check_fields=False)
    @classmethod
    def _printable(cls, v: str) -> str:
        # Free text ends up in reports and dashboards: no control or invisible formatting characters
        # (RTL overrides, zero-width joiners) that could make a name read as something else.
        bad = [c for c in v if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"]
        if bad:
            raise ValueError(f"contains a control or invisible character (U+{ord(bad[0]):04X})")
        return v


def check_workload_options(options: dict[str, OptionValue], test: str | None = None) -> dict[str, OptionValue]:
    """The one rule for sysbench options a user may give: a workload's ``options`` and a variant's
    ``options`` (validate, the API, Plan and the agent's jobs all come through here; the agent
    checks every job against the same rule, ``benchfleet.workload.sysbench.option_refusal``). ValueError
    naming the option when it is not allowed (options can never change what is measured), when its
    value is not one sysbench 1.0.20 reads as given (``benchfleet.workload.sysbench.OPTION_VALUES``: the range,
    on/off, or the choices, named in the message), or, given the ``test`` that runs them, when that
    test's script does not read it (``benchfleet.workload.sysbench.TEST_OPTIONS``: --range-size on oltp_insert
    would be taken and ignored)."""
    for name, value in options.items():
        if not OPTION_NAME.match(name):
            raise ValueError(f"option name {name!r} is not a sysbench option name ([a-z][a-z0-9_-]*)")
        # Named down to the option (workload.options.rate), as a value no JSON reader holds is.
        if isinstance(value, str) and not SAFE_VALUE.match(value):
            raise FieldProblem(name, f"value {value!r} has characters sysbench options never need")
        refusal = option_refusal(name, value=value) or (script_option_refusal(test, name) if test else None)
        if refusal:
            raise FieldProblem(name, refusal)
    return options


# Options that say where a server benchfleet starts keeps its files, listens, runs as or what it loads
# and executes at start: benchfleet sets them (local/mariadb.py, the agent's install), a spec never does.
MANAGED_SERVER_OPTIONS = frozenset({
    "datadir", "basedir", "socket", "port", "bind_address", "pid_file", "log_error", "tmpdir", "user",
    "networking", "grant_tables", "plugin_dir", "plugin_load", "plugin_load_add", "init_file",
    "secure_file_priv", "character_sets_dir", "lc_messages_dir", "defaults_file", "defaults_extra_file",
})


def check_server_options(options: dict[str, OptionValue]) -> dict[str, OptionValue]:
    """Server options layered over a cnf (a target's or a variant's ``server_options``): names and
    values a cnf line can carry, one spelling per option (returned with underscores)."""
    for name, value in options.items():
        if not SERVER_OPTION.match(name):
            raise ValueError(f"{name!r} is not a server option name ([a-z][a-z0-9_-]*)")
        if isinstance(value, float) or (isinstance(value, str) and not SAFE_VALUE.match(value)):
            raise ValueError(f"{name}: {value!r} is not a value a server option takes "
                             "(a number, a size like 64M, a word, true/false)")
        bare = re.sub(r"^(?:loose|maximum|enable|disable|skip)_", "", name.replace("-", "_"))
        if bare in MANAGED_SERVER_OPTIONS:
            raise ValueError(f"{name}: set by benchfleet on the servers it starts (where the server keeps "
                             "its files, listens and runs as); it is not a setting under test")
        if isinstance(value, str) and ("/" in value or (value and value.strip(".") == "") or value.startswith("..")):
            raise ValueError(f"{name}: {value!r} is a path; server options stay inside the server's own "
                             "directory: give a plain file name (relative to the data directory), or leave it out")
    # One spelling per option: the server treats innodb-buffer-pool-size and the underscore form alike.
    names = [n.replace("-", "_") for n in options]
    if len(set(names)) != len(names):
        raise ValueError("an option is given twice (dash and underscore spellings are the same option)")
    return {n.replace("-", "_"): value for n, value in options.items()}
