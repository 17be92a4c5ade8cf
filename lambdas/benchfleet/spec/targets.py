"""The targets of a spec, one model per kind: what is measured and where.

``ec2`` (a server benchfleet installs on an instance), ``rds`` and ``aurora`` (managed databases),
``cluster`` (a Galera cluster on EC2 behind a proxy), ``local`` (a MariaDB server, or a local Galera
cluster, on this machine) and ``existing`` (a server someone else runs, measured as it is). ``Target``
is their union, told apart by ``kind``; the rules between targets and the rest of a spec are in
spec.model and spec.rules.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from benchfleet.spec.fields import (
    DB_CLASS,
    DB_USER,
    ENGINE,
    ENV_NAME,
    HOST,
    INSTANCE_TYPE,
    REGION,
    SCHEMA,
    SLUG,
    FieldProblem,
    OptionValue,
    StrictModel,
    check_server_options,
)
from benchfleet.spec.storage import STORAGE_LAYOUT_KEYS, Storage

ProxySoftware = Literal["proxysql", "haproxy", "none"]


class Client(StrictModel):
    instance_type: str = Field("c6i.xlarge", pattern=INSTANCE_TYPE.pattern, max_length=32)


CLUSTER_NODES = (3, 5, 7, 9)


def cluster_nodes(v: int) -> int:
    # An even number of nodes can split into two halves, neither of which keeps quorum.
    if v not in CLUSTER_NODES:
        raise ValueError(f"a cluster has an odd number of nodes, 3 to 9 (not {v}): an even cluster can split "
                         "into two halves that both lose quorum")
    return v


class Proxy(StrictModel):
    """The proxy in front of a cluster: ``proxy: proxysql`` (on the client host) or
    ``proxy: {software: proxysql, instance_type: c6i.xlarge}`` (a host of its own)."""

    software: ProxySoftware = Field("none", description="proxysql, haproxy or none")
    instance_type: str | None = Field(None, pattern=INSTANCE_TYPE.pattern, max_length=32,
                                      description="A host of its own; unset: on the client host")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"software": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _no_host_without_proxy(self) -> Proxy:
        if self.software == "none" and self.instance_type is not None:
            raise ValueError("instance_type: a proxy host needs a proxy (software: proxysql or haproxy)")
        return self


class LocalCluster(StrictModel):
    """A Galera cluster of local MariaDB nodes (Debian's galera-4) with a proxy, on this machine."""

    nodes: int = Field(3, description="Nodes: odd, 3 to 9")
    proxy: ProxySoftware = Field("haproxy", description="haproxy (Debian's), proxysql (when on the PATH) or none")

    _nodes = field_validator("nodes")(classmethod(lambda cls, v: cluster_nodes(v)))


class TargetBase(StrictModel):
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
        return check_server_options(v)


class Ec2Target(TargetBase):
    kind: Literal["ec2"]
    instance_type: str = Field(pattern=INSTANCE_TYPE.pattern, max_length=32)
    engine: str = Field("mysql-8.0", pattern=ENGINE.pattern)
    storage: Storage = Storage()
    region: str | None = Field(None, pattern=REGION.pattern)


class RdsTarget(TargetBase):
    kind: Literal["rds"]
    instance_class: str = Field(pattern=DB_CLASS.pattern, max_length=40)
    engine: str = Field("mysql-8.0", pattern=ENGINE.pattern)
    storage: Storage = Storage()
    region: str | None = Field(None, pattern=REGION.pattern)
    client: Client = Client()

    @model_validator(mode="after")
    def _rds_storage(self) -> RdsTarget:
        # Compared with the defaults, not with what was written: the plan hands targets on with every
        # default filled in, and they must validate again (provision).
        changed = [k for k in STORAGE_LAYOUT_KEYS
                   if getattr(self.storage, k) != Storage.model_fields[k].get_default()]
        if changed:
            raise FieldProblem(f"storage.{changed[0]}", "RDS lays out its own storage (one allocated volume; no "
                               "RAID, file system or mount options to choose): leave it out")
        return self


class AuroraTarget(TargetBase):
    kind: Literal["aurora"]
    instance_class: str = Field(pattern=DB_CLASS.pattern, max_length=40)
    engine: str = Field("mysql-8.0", pattern=ENGINE.pattern)
    region: str | None = Field(None, pattern=REGION.pattern)
    client: Client = Client()


class LocalTarget(TargetBase):
    kind: Literal["local"]
    engine: str = Field("mariadb", pattern=r"^mariadb(?:-[0-9]+(?:\.[0-9]+){0,2})?$")
    memory_mb: int = Field(1024, ge=64, le=1_048_576, description="Memory the server (each node) is sized for")
    cpus: list[Annotated[int, Field(ge=0, le=1023)]] | None = Field(
        None, min_length=1, description="CPUs to pin the server (each node) to (emulates instance sizes)")
    cluster: LocalCluster | None = Field(
        None, description="A Galera cluster of MariaDB nodes instead of one server: {nodes, proxy}")

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


class ClusterTarget(TargetBase):
    """A Galera cluster on EC2: ``nodes`` hosts of ``instance_type``, one per availability zone, writes
    to the first node, a proxy, and a client host (benchfleet.cluster.galera, benchfleet.cluster.proxyconf)."""

    kind: Literal["cluster"]
    flavor: Literal["mariadb-galera", "pxc-8.0"] = Field(
        "mariadb-galera", description="mariadb-galera (the distribution's) or pxc-8.0 (Percona's repository)")
    nodes: int = Field(3, description="Nodes, one per availability zone: odd, 3 to 9")
    instance_type: str = Field(pattern=INSTANCE_TYPE.pattern, max_length=32, description="Each node's")
    storage: Storage = Field(Storage(), description="Each node's")
    region: str | None = Field(None, pattern=REGION.pattern)
    proxy: Proxy = Field(Proxy(), description="proxysql, haproxy or none (default), on the client host or its own")
    client: Client = Client()

    _nodes = field_validator("nodes")(classmethod(lambda cls, v: cluster_nodes(v)))

    @property
    def engine(self) -> str:
        """The engine its nodes run, as the other kinds name it."""
        return "mysql-8.0" if self.flavor == "pxc-8.0" else "mariadb"


class ExistingTarget(TargetBase):
    """A server the user already runs. One model for both backends: locally (``run --local``) the agent
    runs here and reads the password from ``password_env`` or ``password_file``; on AWS it runs on
    ``instance_id`` and reads ``password_secret_arn``. Which keys each backend needs is checked by
    that backend (``existing_problems`` here, the plan Lambda for AWS)."""

    kind: Literal["existing"]
    host: str = Field(pattern=HOST.pattern)
    port: int = Field(3306, ge=1, le=65535)
    engine: str = Field("mysql-8.0", pattern=ENGINE.pattern)
    user: str = Field("sbtest", pattern=DB_USER.pattern, description="Account benchfleet logs in as")
    database: str = Field("benchfleet", pattern=SCHEMA.pattern,
                          description="The one schema benchfleet works in (created if missing)")
    keep_tables: bool = Field(False, description="Leave benchfleet's tables in the schema after the run")
    password_env: str | None = Field(None, pattern=ENV_NAME.pattern,
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


Target = Annotated[Ec2Target | RdsTarget | AuroraTarget | ClusterTarget | LocalTarget | ExistingTarget,
                   Field(discriminator="kind")]
TARGET_KINDS = ("ec2", "rds", "aurora", "cluster", "local", "existing")


def is_cluster(target: Any) -> bool:
    """A Galera cluster: a cloud ``cluster`` target, or a local target with ``cluster``."""
    return isinstance(target, ClusterTarget) or (isinstance(target, LocalTarget) and target.cluster is not None)
