"""benchfleet agent: how sysbench and the mysql client reach the database, and what the server runs with.

- **No password on a command line.** Every process that connects reads it from a file in a private
  working directory (``mkdtemp``: 0700, files 0600, removed when the agent exits): sysbench from its
  own ``--config-file`` (``mysql-password=...``), the mysql client from ``--defaults-extra-file``.
- **TLS** (``db.tls``: ``off`` | ``preferred`` | ``required``). sysbench 1.0.20 has one switch,
  ``--mysql-ssl=on``, which hands the client library the fixed file names ``client-key.pem``,
  ``client-cert.pem`` and ``cacert.pem`` relative to its working directory; what works depends on
  the library sysbench links (read with ldd):

  * libmysqlclient (Ubuntu's sysbench): the library's own default ssl-mode is PREFERRED, so with
    ``--mysql-ssl=off`` every connection negotiates TLS when the server offers it, with no files;
    for ``required`` the agent first proves the server offers it (mysql client, ssl-mode=REQUIRED)
    and records the cipher.
  * libmariadb 3.3 (Debian's sysbench): no TLS without ``--mysql-ssl=on``, and then all three files
    must load and the server must accept the client certificate (checked on this machine: a
    missing file is error 2026, a self-signed client certificate the server's CA did not sign ends
    the handshake). ``required`` therefore needs ``db.ssl_ca``, ``db.ssl_cert`` and ``db.ssl_key``
    (paths on this host), which are copied into the working directory under those names.

- **Effective server variables**: ``SHOW GLOBAL VARIABLES`` read back over the same connection, and
  every requested cnf option the server runs with a different value (MariaDB caps
  table_open_cache by the open-files limit, for example).

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from benchfleet.workload.mysqlcnf import plain_number
from benchfleet.workload.sysbench import TABLE_MARKER, tcp_host

TLS_MODES = ("off", "preferred", "required")
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
SYSBENCH_TLS_FILES = {"ssl_ca": "cacert.pem", "ssl_cert": "client-cert.pem", "ssl_key": "client-key.pem"}
# Always recorded, whatever the cnf asked for: what most often explains a difference between hosts.
ALWAYS_RECORDED = ("version", "version_comment", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
                   "sync_binlog", "log_bin", "max_connections", "table_open_cache", "open_files_limit",
                   "innodb_flush_method", "innodb_log_file_size", "require_secure_transport")


class ClientError(ValueError):
    """The job's database settings cannot work with this host's client."""


# Written into option files (sysbench's --config-file, the client's --defaults-extra-file): a newline
# or any other control character would end the value and start an option of the job's choosing.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
OPTION_FILE_KEYS = ("host", "user", "database", "ssl_ca", "ssl_cert", "ssl_key")


def option_value(where: str, value: Any) -> str:
    """``value`` as text for an option file; ClientError naming ``where`` for a control character."""
    text = str(value)
    bad = _CONTROL.search(text)
    if bad:
        raise ClientError("{} holds a control character (U+{:04X}); an option file cannot carry it".format(
            where, ord(bad.group())))
    return text


def quoted(value: str) -> str:
    """An option-file value in double quotes, so '#', ';' and spaces are part of it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def client_library(sysbench: str) -> Optional[str]:
    """``libmysqlclient`` or ``libmariadb``: the client library sysbench is linked with."""
    path = shutil.which(sysbench) or sysbench
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for name in ("libmysqlclient", "libmariadb", "libperconaserverclient"):
        if name in out.stdout:
            return "libmysqlclient" if name == "libperconaserverclient" else name
    return None


class Connection:
    """The private working directory with the option files of one agent process."""

    def __init__(self, db: Dict[str, Any], password: Optional[str], sysbench: str = "sysbench",
                 library: Optional[str] = None) -> None:
        self.db = db
        self.tls = str(db.get("tls") or "off")
        if self.tls not in TLS_MODES:
            raise ClientError("db.tls must be one of {}, not {!r}".format(", ".join(TLS_MODES), self.tls))
        for key in OPTION_FILE_KEYS:
            if db.get(key) is not None:
                option_value("db." + key, db[key])
        if password is not None:
            option_value("the database password", password)
        # TCP everywhere: sysbench, the client and benchfleet's checks reach one server (tcp_host).
        self.host = tcp_host(str(db.get("host") or "127.0.0.1"))
        self.library = library if library is not None else client_library(sysbench)
        self.dir = tempfile.mkdtemp(prefix="benchfleet-")  # 0700
        try:
            self.sysbench_ssl = self._sysbench_tls()
            self.sysbench_config = self._write("sysbench.conf", "mysql-password={}\n".format(password or ""))
        except BaseException:
            self.close()  # a job refused for its TLS files leaves no directory behind on the host
            raise
        self.password = password

    def _write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def _sysbench_tls(self) -> bool:
        """Whether sysbench runs with --mysql-ssl=on (see the module docstring)."""
        if self.tls == "off" or self.library == "libmysqlclient":
            return False
        given = {key: self.db.get(key) for key in SYSBENCH_TLS_FILES}
        if self.tls == "preferred" and not all(given.values()):
            return False
        missing = [key for key, value in given.items() if not value]
        if missing:
            raise ClientError(
                "db.tls=required with sysbench linked to {}: sysbench 1.0.20's --mysql-ssl=on loads "
                "cacert.pem, client-cert.pem and client-key.pem, so the job needs {} (paths on this host)"
                .format(self.library or "an unknown client library", ", ".join("db." + m for m in missing)))
        for key, name in SYSBENCH_TLS_FILES.items():
            try:
                shutil.copyfile(str(given[key]), os.path.join(self.dir, name))
            except OSError as e:
                raise ClientError("db.{}: cannot read {}: {}".format(key, given[key], e.strerror)) from None
            os.chmod(os.path.join(self.dir, name), 0o600)
        return True

    def sysbench_options(self) -> Dict[str, Any]:
        """Connection options for sysbench's command line: everything but the password."""
        return {"config-file": self.sysbench_config, "mysql-host": self.host,
                "mysql-port": self.db.get("port", 3306), "mysql-user": self.db.get("user", "sbtest"),
                "mysql-db": self.db.get("database", "sbtest"), "mysql-ssl": "on" if self.sysbench_ssl else "off"}

    # ---- the mysql client -----------------------------------------------------------------------
    def client_argv(self, client: str, sql: str) -> List[str]:
        return [client, "--defaults-extra-file={}".format(self.option_file(client)), "-N", "-B", "-e", sql]

    def option_file(self, client: str, name: str = "client.cnf", host: Optional[str] = None,
                    port: Optional[int] = None, user: Optional[str] = None, password: Optional[str] = None,
                    tls: Optional[str] = None) -> str:
        """The mysql client's option file (in the private working directory): the job's database, or
        another server (a cluster's other nodes with the job's TLS settings, a proxy's admin port
        with ``tls`` off)."""
        tls = tls or self.tls
        mariadb = "mariadb" in (first_line([client, "--version"]) or "").lower()
        lines = ["[client]", "user={}".format(quoted(str(user or self.db.get("user", "sbtest")))),
                 "password={}".format(quoted((self.password or "") if password is None else password)),
                 "host={}".format(tcp_host(host) if host else self.host),
                 "port={}".format(port or self.db.get("port", 3306)), "protocol=TCP"]
        ca = self.db.get("ssl_ca")
        if tls == "required":
            if mariadb:
                lines.append("ssl")
                if ca:
                    lines += ["ssl-ca={}".format(ca), "ssl-verify-server-cert"]
                for key in ("ssl_cert", "ssl_key"):
                    if self.db.get(key):
                        lines.append("{}={}".format(key.replace("_", "-"), self.db[key]))
            else:
                lines += ["ssl-mode=VERIFY_CA", "ssl-ca={}".format(ca)] if ca else ["ssl-mode=REQUIRED"]
        elif tls == "off" and not mariadb:
            lines.append("ssl-mode=PREFERRED")
        return self._write(name, "\n".join(lines) + "\n")

    def query(self, sql: str) -> Tuple[Optional[List[List[str]]], str]:
        """Rows of ``sql`` through the mysql client, or (None, why)."""
        client = shutil.which("mariadb") or shutil.which("mysql")
        if not client:
            return None, "no mysql client on this host"
        try:
            out = subprocess.run(self.client_argv(client, sql), capture_output=True, text=True, timeout=60,
                                 check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, str(e)
        if out.returncode != 0:
            return None, (out.stderr or "").strip()[-500:]
        return [line.split("\t") for line in out.stdout.splitlines()], ""

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def first_line(argv: List[str]) -> Optional[str]:
    """The first line a command prints (a program's ``--version``), or None when it cannot run."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


# ---- requested versus effective --------------------------------------------------------------------
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kmgt])$")
_TRUE, _FALSE = {"on", "true", "yes", "1"}, {"off", "false", "no", "0"}


def normalise(value: str) -> str:
    """One spelling for a value: sizes in bytes, booleans as ON/OFF, the rest as the server prints it."""
    text = str(value).strip().strip("'\"")
    low = text.lower()
    size = _SIZE.match(low)
    if size:
        return str(int(float(size.group(1)) * 1024 ** ("kmgt".index(size.group(2)) + 1)))
    if low in _TRUE:
        return "ON"
    if low in _FALSE:
        return "OFF"
    return plain_number(low) or low  # 50 and 50.000000 (how MariaDB shows a double) are one value


def differences(requested: Dict[str, str], effective: Dict[str, str]) -> Tuple[List[Dict[str, str]], List[str]]:
    """(options the server runs with another value, options that are not server variables)."""
    changed: List[Dict[str, str]] = []
    unverified: List[str] = []
    for option, wanted in requested.items():
        name = option.replace("-", "_")
        if name.startswith("loose_"):
            name = name[len("loose_"):]
        if name.startswith("skip_") and wanted == "" and name[len("skip_"):] in effective:
            name, wanted = name[len("skip_"):], "OFF"
        if name not in effective:
            unverified.append(option)
            continue
        have = effective[name]
        if name == "log_bin" and wanted and normalise(have) == "ON":
            # log_bin = binlog names the binary log's files; the variable says only that it is on, so
            # "binlog -> ON" was reported (and shown) as a setting the server did not take.
            continue
        if normalise(wanted) != normalise(have) and not (wanted == "" and normalise(have) == "ON"):
            changed.append({"option": option, "requested": wanted, "effective": have})
    return changed, unverified


def amount(value: str) -> Optional[float]:
    """A setting's value as a number (sizes in bytes: 128M is 134217728), None when it is none."""
    text = str(value).strip().strip("'\"").lower()
    size = _SIZE.match(text)
    if size:
        return float(size.group(1)) * 1024 ** ("kmgt".index(size.group(2)) + 1)
    try:
        return float(text)
    except ValueError:
        return None


# Values the server itself documents that it adjusts to its host, which a target is not failed for
# (its prepare step says so and records both values): each a test of (requested, effective, the
# server's variables), as numbers.
def _buffer_pool_rounded(wanted: float, have: float, variables: Dict[str, str]) -> bool:
    """innodb_buffer_pool_size "must always be equal to or a multiple of innodb_buffer_pool_chunk_size *
    innodb_buffer_pool_instances" and the server rounds it so (MySQL and MariaDB manuals)."""
    unit = (amount(variables.get("innodb_buffer_pool_chunk_size") or "0") or 0) * (
        amount(variables.get("innodb_buffer_pool_instances") or "1") or 1)
    return unit > 0 and have % unit == 0 and abs(have - wanted) < unit


def _lowered(wanted: float, have: float, variables: Dict[str, str]) -> bool:
    return 0 < have <= wanted


SERVER_ADJUSTED = {
    "innodb_buffer_pool_size": _buffer_pool_rounded,
    # Lowered to what the open-files limit of the server's host allows (open_files_limit).
    "table_open_cache": _lowered,
    # MariaDB: a maximum; it starts with one instance and adds them when it sees contention.
    "table_open_cache_instances": _lowered,
}


def adjusted(changed: List[Dict[str, str]], variables: Dict[str, str]) -> List[Dict[str, str]]:
    """Those of ``changed`` (``differences``) the server adjusted the way it documents (SERVER_ADJUSTED)."""
    out = []
    for d in changed:
        name = d["option"].replace("-", "_")
        test = SERVER_ADJUSTED.get(name[len("loose_"):] if name.startswith("loose_") else name)
        wanted, have = amount(d["requested"]), amount(d["effective"])
        if test is not None and wanted is not None and have is not None and test(wanted, have, variables):
            out.append(d)
    return out


def ensure_database(conn: Connection) -> Optional[str]:
    """``CREATE DATABASE IF NOT EXISTS`` for the job's database (an RDS/Aurora endpoint has none
    until someone makes it; sysbench prepare needs it). None when done, else why not."""
    name = str(conn.db.get("database") or "sbtest")
    if not re.match(r"^[A-Za-z0-9_]{1,64}$", name):
        return "db.database {!r} is not a plain identifier".format(name)
    rows, why = conn.query("CREATE DATABASE IF NOT EXISTS `{}`".format(name))
    return None if rows is not None else why


def server_state(conn: Connection, requested: Dict[str, str]) -> Dict[str, Any]:
    """Fingerprint fields: the server's version, its effective variables for what was requested (and
    ALWAYS_RECORDED), the differences, and the TLS cipher of the agent's own session."""
    rows, why = conn.query("SHOW GLOBAL VARIABLES; SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    if rows is None:
        return {"engine_version": None, "server_variables_error": why}
    variables = {r[0].lower(): (r[1] if len(r) > 1 else "") for r in rows if r and r[0] != "Ssl_cipher"}
    cipher = next((r[1] for r in rows if r and r[0] == "Ssl_cipher" and len(r) > 1), "")
    changed, unverified = differences(requested, variables)
    names = sorted({o.replace("-", "_") for o in requested} | set(ALWAYS_RECORDED))
    return {"engine_version": variables.get("version"), "tls_cipher": cipher or None,
            "server_identity": identity(variables),
            "server_variables": {n: variables[n] for n in names if n in variables},
            "config_differences": changed, "config_adjusted": adjusted(changed, variables),
            "config_unverified": unverified}


# ---- whose tables, which server ---------------------------------------------------------------------
def schema_tables(conn: Connection) -> Tuple[Optional[List[Tuple[str, bool]]], str]:
    """(table, benchfleet's?) of the job's database, or (None, why): benchfleet's tables carry
    TABLE_MARKER as their comment (``mark_tables``)."""
    name = str(conn.db.get("database") or "sbtest")
    if not re.match(r"^[A-Za-z0-9_]{1,64}$", name):
        return None, "db.database {!r} is not a plain identifier".format(name)
    rows, why = conn.query("SELECT table_name, table_comment FROM information_schema.tables "
                           "WHERE table_schema = '{}' ORDER BY table_name".format(name))
    if rows is None:
        return None, why
    return [(r[0], len(r) > 1 and r[1].startswith(TABLE_MARKER)) for r in rows if r and r[0]], ""


def mark_tables(conn: Connection, tables: List[str], run_id: str) -> Optional[str]:
    """Comment ``tables`` as benchfleet's (a metadata change, no rebuild); None when done, else why not."""
    name = str(conn.db.get("database") or "sbtest")
    statements = ["ALTER TABLE `{}`.`{}` COMMENT = '{} created by run {}'".format(
        name, table.replace("`", "``"), TABLE_MARKER, re.sub(r"[^A-Za-z0-9._-]", "", run_id)) for table in tables]
    rows, why = conn.query("; ".join(statements))
    return None if rows is not None else why


def identity(variables: Dict[str, str]) -> Dict[str, Optional[str]]:
    """Which server this is: its host name, port and id (MySQL's server_uuid, MariaDB's server_uid)."""
    return {"hostname": variables.get("hostname"), "port": variables.get("port"),
            "uuid": variables.get("server_uuid") or variables.get("server_uid")}
