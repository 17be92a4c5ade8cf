"""The comparison spec and the workload: what a user writes, validated before anything starts.

A spec names targets x a workload x repetitions. Specs and workloads are YAML or JSON files (or, in
the API, a JSON body); errors name the file, the field path and the problem.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

SLUG = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
# A workload's test is a sysbench built-in or a Lua file under workloads/lua/; never a path elsewhere.
_TEST = re.compile(r"^(?:[a-z][a-z0-9_]{0,63}|lua/[a-z0-9][a-z0-9_-]{0,62}\.lua)$")
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
_DB_CLASS = re.compile(r"^db\.[a-z0-9-]+\.[a-z0-9]+$")
_REGION = re.compile(r"^[a-z]{2}(?:-gov)?-[a-z]+-\d$")
_ENGINE = re.compile(r"^(?:mysql|mariadb)(?:-\d+(?:\.\d+){0,2})?$")
_HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.,:/+%@-]{0,256}$")
_SERVER_OPTION = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_DB_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,79}$")
_SCHEMA = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

MAX_STEP_SECONDS = 48 * 3600
MAX_THREADS = 4096

OptionValue = bool | int | float | str


class SpecError(ValueError):
    """A spec or workload that cannot be used. ``problems`` are ``(field path, message)`` pairs."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {path}: {msg}" if path else f"{source}: {msg}"
                                   for path, msg in problems))


class _Model(BaseModel):
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


def _check_options(options: dict[str, OptionValue]) -> dict[str, OptionValue]:
    for name, value in options.items():
        if not _OPTION_NAME.match(name):
            raise ValueError(f"option name {name!r} is not a sysbench option name ([a-z][a-z0-9_-]*)")
        if isinstance(value, str) and not _SAFE_VALUE.match(value):
            raise ValueError(f"option {name}: value {value!r} has characters sysbench options never need")
    return options


class Workload(_Model):
    """A sysbench workload: the data set, the warm-up and the thread sweep. Documented key by key in
    workloads/README.md."""

    name: Annotated[str, Field(pattern=SLUG, description="Workload name, [a-z0-9-]")]
    description: str = Field("", max_length=2000, description="Intent: what this workload shows")
    test: str = Field(description="sysbench built-in test (oltp_read_only, ...) or lua/<file>.lua")
    tables: int = Field(4, ge=1, le=1000, description="Number of tables (--tables)")
    table_size: int = Field(10_000, ge=1, le=10_000_000_000, description="Rows per table (--table-size)")
    prepare_threads: int = Field(2, ge=1, le=256, description="Threads for loading the data set")
    warmup_s: int = Field(30, ge=0, le=MAX_STEP_SECONDS, description="Warm-up before the sweep, s")
    threads: list[Annotated[int, Field(ge=1, le=MAX_THREADS)]] = Field(
        [1, 2, 4], min_length=1, max_length=64, description="Thread counts of the sweep, one step each")
    duration_s: int = Field(60, ge=1, le=MAX_STEP_SECONDS, description="Measured seconds per step")
    cooldown_s: int = Field(0, ge=0, le=3600, description="Idle seconds after each step")
    report_interval_s: int = Field(1, ge=1, le=60, description="sysbench --report-interval, s")
    percentile: int = Field(95, ge=1, le=99, description="Latency percentile (--percentile); 1..99")
    # sysbench 1.0.20 knows these four; "zipfian" arrived later and 1.0.x refuses it.
    rand_type: Literal["uniform", "gaussian", "special", "pareto"] = "uniform"
    options: dict[str, OptionValue] = Field(default_factory=dict,
                                            description="More sysbench / driver options, name: value")

    @field_validator("test")
    @classmethod
    def _test(cls, v: str) -> str:
        if not _TEST.match(v):
            raise ValueError("must be a sysbench built-in test name or lua/<name>.lua")
        return v

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("thread counts must be unique")
        return sorted(v)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, OptionValue]) -> dict[str, OptionValue]:
        reserved = {"threads", "time", "report-interval", "percentile", "tables", "table-size",
                    "mysql-host", "mysql-port", "mysql-user", "mysql-password", "mysql-db"}
        clash = sorted(reserved & {k.replace("_", "-") for k in v})
        if clash:
            raise ValueError(f"{', '.join(clash)} must be set through the workload's own keys")
        return _check_options(v)


class Storage(_Model):
    type: Literal["gp2", "gp3", "io1", "io2", "instance-store"] = "gp3"
    size_gb: int = Field(100, ge=8, le=65536)
    iops: int | None = Field(None, ge=100, le=256_000)
    throughput_mbps: int | None = Field(None, ge=125, le=4000)


class Client(_Model):
    instance_type: str = Field("c6i.xlarge", pattern=_INSTANCE_TYPE.pattern, max_length=32)


class _TargetBase(_Model):
    id: str = Field(pattern=SLUG, max_length=32, description="Unique target id, [a-z0-9-]")
    mysql_config: str = Field("default", pattern=SLUG, description="workloads/mysql/<name>.cnf")
    server_options: dict[str, OptionValue] = Field(
        default_factory=dict, max_length=64,
        description="Server options layered over mysql_config's [mysqld] group, name: value "
                    "(innodb_buffer_pool_size: 64M); a value NN% of a memory option is a share of memory")
    price_per_hour: float | None = Field(None, ge=0, le=1000, description="Overrides the price table")

    @field_validator("server_options")
    @classmethod
    def _server_options(cls, v: dict[str, OptionValue]) -> dict[str, OptionValue]:
        for name, value in v.items():
            if not _SERVER_OPTION.match(name):
                raise ValueError(f"{name!r} is not a server option name ([a-z][a-z0-9_-]*)")
            if isinstance(value, float) or (isinstance(value, str) and not _SAFE_VALUE.match(value)):
                raise ValueError(f"{name}: {value!r} is not a value a server option takes "
                                 "(a number, a size like 64M, a word, true/false)")
        # One spelling per option: the server treats innodb-buffer-pool-size and the underscore form alike.
        names = [n.replace("-", "_") for n in v]
        if len(set(names)) != len(names):
            raise ValueError("an option is given twice (dash and underscore spellings are the same option)")
        return {n.replace("-", "_"): value for n, value in v.items()}


class Ec2Target(_TargetBase):
    kind: Literal["ec2"]
    instance_type: str = Field(pattern=_INSTANCE_TYPE.pattern, max_length=32)
    engine: str = Field("mysql-8.0", pattern=_ENGINE.pattern)
    storage: Storage = Storage()
    region: str | None = Field(None, pattern=_REGION.pattern)


class RdsTarget(_TargetBase):
    kind: Literal["rds"]
    instance_class: str = Field(pattern=_DB_CLASS.pattern, max_length=40)
    engine: str = Field("mysql-8.0", pattern=_ENGINE.pattern)
    storage: Storage = Storage()
    region: str | None = Field(None, pattern=_REGION.pattern)
    client: Client = Client()


class AuroraTarget(_TargetBase):
    kind: Literal["aurora"]
    instance_class: str = Field(pattern=_DB_CLASS.pattern, max_length=40)
    engine: str = Field("mysql-8.0", pattern=_ENGINE.pattern)
    region: str | None = Field(None, pattern=_REGION.pattern)
    client: Client = Client()


class LocalTarget(_TargetBase):
    kind: Literal["local"]
    engine: str = Field("mariadb", pattern=r"^mariadb(?:-\d+(?:\.\d+){0,2})?$")
    memory_mb: int = Field(1024, ge=64, le=1_048_576, description="Memory the server is sized for")
    cpus: list[Annotated[int, Field(ge=0, le=1023)]] | None = Field(
        None, min_length=1, description="CPUs to pin the server to (emulates instance sizes)")

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if len(set(v)) != len(v):
            raise ValueError("CPU numbers must be unique")
        available = os.cpu_count() or 1
        missing = [c for c in v if c >= available]
        if missing:
            raise ValueError(f"CPU {missing[0]} does not exist here (this machine has {available})")
        return v


class ExistingTarget(_TargetBase):
    """A server the user already runs. One model for both backends: locally (``run --local``) the agent
    runs here and reads the password from ``password_env`` or ``password_file``; on AWS it runs on
    ``instance_id`` and reads ``password_secret_arn``. Which keys each backend needs is checked by
    that backend (``existing_problems`` here, the plan Lambda for AWS)."""

    kind: Literal["existing"]
    host: str = Field(pattern=_HOST.pattern)
    port: int = Field(3306, ge=1, le=65535)
    engine: str = Field("mysql-8.0", pattern=_ENGINE.pattern)
    user: str = Field("sbtest", pattern=_DB_USER.pattern, description="Account benchfleet logs in as")
    database: str = Field("benchfleet", pattern=_SCHEMA.pattern,
                          description="The one schema benchfleet works in (created if missing)")
    keep_tables: bool = Field(False, description="Leave benchfleet's tables in the schema after the run")
    password_env: str | None = Field(None, pattern=_ENV_NAME.pattern,
                                     description="Environment variable holding the password (locally)")
    password_file: str | None = Field(None, min_length=1, max_length=4096,
                                      description="File holding the password (locally); its first line")
    tls: Literal["off", "preferred", "required"] = Field(
        "preferred", description="TLS to the server: preferred uses it when the server asks for it")
    ssl_ca: str | None = Field(None, min_length=1, max_length=4096,
                               description="CA file (on the agent's host), for sysbench builds that need it for TLS")
    ssl_cert: str | None = Field(None, min_length=1, max_length=4096, description="Client certificate file")
    ssl_key: str | None = Field(None, min_length=1, max_length=4096, description="Client key file")
    instance_id: str | None = Field(None, pattern=r"^i-[0-9a-f]{8,17}$",
                                    description="EC2 instance that runs the agent (SSM)")
    password_secret_arn: str | None = Field(None, pattern=r"^arn:aws[a-z-]*:secretsmanager:[^\s]+$")

    @model_validator(mode="before")
    @classmethod
    def _no_password_in_the_spec(cls, data: Any) -> Any:
        if isinstance(data, dict) and "password" in data:
            raise ValueError("password: never put a password in a spec; name an environment variable "
                             "(password_env) or a file (password_file)")
        return data

    @model_validator(mode="after")
    def _one_password_source(self) -> ExistingTarget:
        given = [k for k in ("password_env", "password_file", "password_secret_arn") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)}: give one password source")
        if self.server_options:
            raise ValueError("server_options: an existing server is measured as it is configured; "
                             "benchfleet never changes its settings")
        if "mysql_config" in self.model_fields_set and self.mysql_config != "default":
            raise ValueError("mysql_config: an existing server is measured as it is configured; "
                             "benchfleet never changes its settings")
        return self

    @property
    def runs_here(self) -> bool:
        """No instance to run the agent on: the agent runs on this machine."""
        return self.instance_id is None


Target = Annotated[Ec2Target | RdsTarget | AuroraTarget | LocalTarget | ExistingTarget,
                   Field(discriminator="kind")]
TARGET_KINDS = ("ec2", "rds", "aurora", "local", "existing")


class ComparisonSpec(_Model):
    """targets x workload x repetitions. Documented key by key in workloads/README.md."""

    name: str = Field(pattern=SLUG, description="Comparison name, [a-z0-9-]; runs are grouped by it")
    description: str = Field("", max_length=2000)
    # A string names a workload file, a mapping is an inline workload; the discriminator keeps the
    # errors of the branch the user meant instead of both.
    workload: Annotated[
        Annotated[Annotated[str, Field(pattern=SLUG)], Tag("by-name")] | Annotated[Workload, Tag("inline")],
        Discriminator(lambda v: "by-name" if isinstance(v, str) else "inline"),
    ] = Field(description="A workload file in workloads/ (by name) or an inline workload")
    repetitions: int = Field(1, ge=1, le=20, description="Each on its own host where the kind allows")
    repetition_spacing_s: int | None = Field(
        None, ge=0, le=7 * 86400,
        description="Start each repetition this many seconds after the previous one started (e.g. to "
                    "spread them over the day); unset: all at once where the backend runs them at once")
    budget_usd: float | None = Field(None, ge=0, le=1_000_000, description="Refuse to start above this")
    baseline: str | None = Field(None, pattern=SLUG, description="Target id relative figures refer to")
    targets: list[Target] = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _cross_fields(self) -> ComparisonSpec:
        seen: set[str] = set()
        for target in self.targets:
            if target.id in seen:
                raise ValueError(f"target id {target.id!r} is used twice; ids must be unique")
            seen.add(target.id)
        if self.baseline is not None and self.baseline not in seen:
            raise ValueError(f"baseline {self.baseline!r} is not one of the target ids")
        return self

    @property
    def is_local(self) -> bool:
        """Every target is benchmarked from this machine: local servers, and existing servers with no
        instance of their own to run the agent."""
        return all(t.kind == "local" or (isinstance(t, ExistingTarget) and t.runs_here) for t in self.targets)


# ---- loading ------------------------------------------------------------------------------------

def repo_root() -> Path:
    """The checkout that holds workloads/ (BENCHFLEET_REPO overrides, for installed copies)."""
    env = os.environ.get("BENCHFLEET_REPO")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "workloads").is_dir():
            return parent
    return Path.cwd()


def workloads_dir() -> Path:
    return Path(os.environ.get("BENCHFLEET_WORKLOADS") or repo_root() / "workloads")


def _loc(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in TARGET_KINDS or item in ("by-name", "inline") or item.startswith(("function-", "json-")):
            continue  # the discriminator's own branch name adds nothing for a reader
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts)


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in error.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "union_tag_invalid":
            msg = f"kind must be one of {', '.join(TARGET_KINDS)}"
        elif e["type"] == "union_tag_not_found":
            msg = "kind is required (one of " + ", ".join(TARGET_KINDS) + ")"
        elif e["type"] == "extra_forbidden":
            msg = "unknown key (see workloads/README.md for the keys)"
        out.append((_loc(tuple(e["loc"])), msg))
    return out


def read_document(path: Path) -> Any:
    """YAML or JSON from a file; SpecError (naming the file and line) when it is neither."""
    import yaml  # CLI-only path; Lambdas receive JSON

    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(str(path), [("", f"cannot read: {e.strerror or e}")]) from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as e:
        raise SpecError(str(path), [("", f"invalid JSON at line {e.lineno}: {e.msg}")]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SpecError(str(path), [("", f"invalid YAML{where}: {getattr(e, 'problem', e)}")]) from None


_M = TypeVar("_M", bound=BaseModel)


def _parse(model: type[_M], data: Any, source: str, keys: str) -> _M:
    if not isinstance(data, dict):
        raise SpecError(source, [("", f"a {keys.split()[0]} must be a mapping of keys ({keys.split(' ', 1)[1]})")])
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise SpecError(source, problems_of(e)) from None


def parse_spec(data: Any, source: str = "spec") -> ComparisonSpec:
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
    """A spec with its workload resolved and its files checked."""

    model_config = ConfigDict(frozen=True)

    spec: ComparisonSpec
    workload: Workload
    source: str


def load_spec(path: Path | str, root: Path | None = None) -> LoadedSpec:
    """Read, validate and resolve a spec file: its workload and every target's mysql_config."""
    path = Path(path)
    spec = parse_spec(read_document(path), str(path))
    return resolve(spec, str(path), root)


def resolve(spec: ComparisonSpec, source: str, root: Path | None = None) -> LoadedSpec:
    root = root or workloads_dir()
    try:
        workload = spec.workload if isinstance(spec.workload, Workload) else load_workload(spec.workload, root)
    except SpecError as e:
        if e.source == "spec":
            raise SpecError(source, e.problems) from None
        raise
    problems = []
    if workload.test.startswith("lua/") and not (root / workload.test).exists():
        problems.append(("workload.test", f"{workload.test} does not exist in {root}"))
    for i, target in enumerate(spec.targets):
        if not (root / "mysql" / f"{target.mysql_config}.cnf").exists():
            problems.append((f"targets[{i}].mysql_config",
                             f"no file {target.mysql_config}.cnf in {(root / 'mysql').resolve()}"))
    if problems:
        raise SpecError(source, problems)
    return LoadedSpec(spec=spec, workload=workload, source=source)


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of a comparison spec (workloads/spec.schema.json)."""
    schema = ComparisonSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "benchfleet comparison spec"
    return schema
