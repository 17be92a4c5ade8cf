"""A server the user already runs, benchmarked from this machine (``kind: existing``, ``run --local``).

benchfleet is a guest there. It works in one schema (``database``, ``benchfleet`` unless the spec
names another), creates it when missing, and owns only the tables its prepare step created there:
the agent comments each one (``benchfleet.workload.sysbench.TABLE_MARKER``) right after sysbench made it.
Before anything is written it proves the schema is safe: a schema that holds any table without that
comment -- another layout, or a user's own table that happens to be called ``sbtest1`` -- is refused
naming it, so a user's data can never be a sysbench ``cleanup`` away from deletion. Afterwards it
drops the tables that carry the comment (and the schema, if it created it and nothing else appeared
there) unless the spec says ``keep_tables: true``. It never changes a server setting; the fingerprint
records the server as measured (engine, version, effective variables).

One connection path: the checks, the clean-up, sysbench and the fingerprint all speak TCP to the same
address and port (``localhost`` is 127.0.0.1: the client libraries would otherwise take the default
Unix socket, another server), and the server's identity (host name, port, server id) read by the
checks must be the one the agent's fingerprint reads, or nothing is written.

CPU figures in the samples (steal included) come from /proc/stat of *this* machine, the client:
benchfleet cannot see the server's hypervisor, and the run says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from benchfleet.local.mariadb import Connection
from benchfleet.local.sqlclient import SqlClient, SqlError, quote_name
from benchfleet.spec.documents import workloads_dir
from benchfleet.spec.targets import ExistingTarget
from benchfleet.workload.sysbench import TABLE_MARKER

_LUA_PREFIX = re.compile(r'^\s*prefix\s*=\s*"([a-z][a-z0-9_]*)"', re.MULTILINE)


class ExistingServerError(RuntimeError):
    """The existing server cannot be benchmarked safely; the message says why, in the server's words."""


def table_prefixes(root: Path | None = None) -> list[str]:
    """Names benchfleet's tables start with: sysbench's built-in tests, and each Lua workload's ``prefix``."""
    prefixes = {"sbtest"}
    for lua in sorted((root or workloads_dir()).glob("lua/*.lua")):
        prefixes.update(_LUA_PREFIX.findall(lua.read_text()))
    return sorted(prefixes)


def is_benchfleet_table(name: str, prefixes: list[str]) -> bool:
    """Named like a table of benchfleet's workloads (``sbtest1``, ``seqpk3``): what a stray could be
    called; whether it *is* benchfleet's is its comment (TABLE_MARKER)."""
    return any(re.fullmatch(re.escape(p) + r"[0-9]+", name) for p in prefixes)


def password_of(target: ExistingTarget, index: int | None = None) -> str | None:
    """The password from the environment variable or file the spec names (None: no password)."""
    field = f"targets[{index}]." if index is not None else f"{target.id}: "
    if target.password_env:
        value = os.environ.get(target.password_env)
        if value is None:
            raise ExistingServerError(f"{field}password_env: ${target.password_env} is not set")
        return value
    if target.password_file:
        path = Path(target.password_file).expanduser()
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            raise ExistingServerError(f"{field}password_file: cannot read {path}: {e.strerror or e}") from None
        return lines[0] if lines else ""
    return None


def client_for(target: ExistingTarget, password: str | None) -> SqlClient:
    """A client that speaks TLS when the server requires it."""
    try:
        return SqlClient(target.host, target.port, target.user, password).negotiated()
    except SqlError as e:
        raise ExistingServerError(f"{target.id}: cannot connect: {e}") from None


def server_identity(client: SqlClient) -> dict[str, str | None]:
    """The server ``client`` reaches: host name, port and id (server_uuid; MariaDB's server_uid), as
    the agent's fingerprint reads them (benchfleet_dbclient.identity)."""
    rows = client.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('hostname', 'port', 'server_uuid', "
                        "'server_uid')")
    found = {row[0].lower(): (row[1] if len(row) > 1 else "") for row in rows if row}
    return {"hostname": found.get("hostname"), "port": found.get("port"),
            "uuid": found.get("server_uuid") or found.get("server_uid")}


def engine_of(variables: dict[str, str]) -> str:
    """``mariadb-10.11.19``, ``mysql-8.0.36``, ``percona-8.0.36``: from what the server says it is
    (a distribution's version_comment may name only the distribution, "Debian 12")."""
    version, comment = variables.get("version") or "", variables.get("version_comment") or ""
    family = ("mariadb" if "mariadb" in version.lower() else
              "percona" if "percona" in comment.lower() else "mysql")
    number = version.split("-", 1)[0]
    return f"{family}-{number}" if number else family


def variables_hash(variables: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(variables, sort_keys=True).encode()).hexdigest()


class ExistingServer:
    """``with ExistingServer(target) as conn:`` checks the schema, yields where the agent connects, and
    removes benchfleet's tables afterwards (whatever happened in between)."""

    def __init__(self, target: ExistingTarget, prefixes: list[str] | None = None) -> None:
        self.target = target
        self.prefixes = prefixes or table_prefixes()
        self.client: SqlClient | None = None
        self.created_schema = False
        self.identity: dict[str, str | None] | None = None
        # The agent's prepare step fingerprints the server (effective variables) over its own connection.
        self.config_hash: str | None = None

    def inspect(self) -> SqlClient:
        """Connect and prove the schema is safe to write to; writes nothing."""
        target = self.target
        password = password_of(target)
        client = client_for(target, password)
        try:
            self._check_schema(client)
            self.identity = server_identity(client)
        except SqlError as e:
            raise ExistingServerError(f"{target.id}: {e}") from None
        return client

    def __enter__(self) -> Connection:
        target = self.target
        client = self.inspect()
        schema = target.database
        try:
            if not client.query(f"SELECT schema_name FROM information_schema.schemata WHERE schema_name = '{schema}'"):
                client.query(f"CREATE DATABASE {quote_name(schema)}")
                self.created_schema = True
        except SqlError as e:
            raise ExistingServerError(f"{target.id}: cannot create schema {schema}: {e}") from None
        self.client = client
        # TLS as the server demands it (the agent says what its sysbench build needs for that).
        tls = "required" if client.tls else target.tls
        files = {k: v for k in ("ssl_ca", "ssl_cert", "ssl_key") if (v := getattr(target, k))}
        return Connection(target.host, target.port, target.user, client.password or "", database=schema,
                          tls=tls, tls_files=files, expect_server=self.identity)

    def __exit__(self, *exc: object) -> None:
        if self.client is None or self.target.keep_tables:
            return
        try:
            self.remove_tables()
        except SqlError as e:
            raise ExistingServerError(f"{self.target.id}: could not remove benchfleet's tables: {e}") from None

    def _tables(self, client: SqlClient) -> list[tuple[str, bool]]:
        """(table, benchfleet's?) in the schema: benchfleet's carry TABLE_MARKER as their comment."""
        schema = self.target.database
        rows = client.query("SELECT table_name, table_comment FROM information_schema.tables "
                            f"WHERE table_schema = '{schema}' ORDER BY table_name")
        return [(row[0], len(row) > 1 and row[1].startswith(TABLE_MARKER)) for row in rows]

    def _check_schema(self, client: SqlClient) -> None:
        schema = self.target.database
        foreign = [t for t, ours in self._tables(client) if not ours]
        if foreign:
            named = [t for t in foreign if is_benchfleet_table(t, self.prefixes)]
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            why = (f"; {', '.join(named[:5])} {'is' if len(named) == 1 else 'are'} named like benchfleet's "
                   "but not marked as created by it" if named else "")
            raise ExistingServerError(
                f"{self.target.id}: refusing to write to {client.where}: schema {schema} holds tables "
                f"benchfleet did not create ({shown}){why}; name an empty or new schema with `database:`")

    def remove_tables(self) -> list[str]:
        """Drop benchfleet's tables; drop the schema too when benchfleet created it and it is now empty."""
        assert self.client is not None
        client, schema = self.client, self.target.database
        ours = [t for t, marked in self._tables(client) if marked]
        if ours:
            client.query("DROP TABLE IF EXISTS " + ", ".join(f"{quote_name(schema)}.{quote_name(t)}" for t in ours))
        if self.created_schema and not self._tables(client):
            client.query(f"DROP DATABASE IF EXISTS {quote_name(schema)}")
        return ours
