"""A few SQL statements against a server, through the distribution's ``mariadb`` command-line client.

benchfleet's own queries (fingerprints, the safety check and clean-up of an existing server) are
few and small, and the client is already here for the local servers, so no Python driver is needed.
The password goes in a private option file (mode 0600), never on a command line ``ps`` can show.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from benchfleet.local.mariadb import find_binary
from benchfleet.workload.sysbench import tcp_host

_TIMEOUT_S = 60
# The server's own refusal of an unencrypted connection: MySQL 3159, MariaDB 4151 (and, for an
# account created REQUIRE SSL, 1045 "Access denied"; told apart by retrying with TLS).
_NEEDS_TLS = re.compile(r"ERROR (3159|4151|1045)\b")


class SqlError(RuntimeError):
    """The client or the server refused a statement; the message is theirs."""


@dataclass(frozen=True)
class SqlClient:
    host: str
    port: int
    user: str
    password: str | None
    tls: bool = False

    def _option_file(self, directory: str) -> str:
        # TCP to the address sysbench is given (benchfleet.workload.sysbench.tcp_host: localhost is 127.0.0.1).
        lines = ["[client]", f"host={tcp_host(self.host)}", f"port={self.port}", f"user={self.user}",
                 "protocol=tcp", "connect-timeout=15"]
        if self.password is not None:
            # Option-file values may be quoted; a quote or backslash inside is escaped.
            escaped = self.password.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'password="{escaped}"')
        # Explicit either way: the distribution's client defaults differ between versions. With TLS
        # the client does not verify the certificate, like sysbench: it is about what the server
        # requires, not about authenticating it.
        lines.append("ssl" if self.tls else "skip-ssl")
        path = os.path.join(directory, "client.cnf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def query(self, sql: str) -> list[list[str]]:
        """Rows of the last result set, each a list of strings (SQL NULL reads as ``NULL``)."""
        with tempfile.TemporaryDirectory(prefix="benchfleet-sql-") as directory:
            argv = [find_binary("mariadb", "mysql"), f"--defaults-file={self._option_file(directory)}",
                    "--batch", "--skip-column-names", "--raw", "-e", sql]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise SqlError(f"{self.where}: no answer in {_TIMEOUT_S} s") from None
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()
            raise SqlError(f"{self.where}: {said[-1]}")
        return [line.split("\t") for line in done.stdout.splitlines()]

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def negotiated(self) -> SqlClient:
        """This client, with TLS if and only if the server refuses to talk without it."""
        try:
            self.query("SELECT 1")
            return self
        except SqlError as plain:
            if self.tls or not _NEEDS_TLS.search(str(plain)):
                raise
            secure = SqlClient(self.host, self.port, self.user, self.password, tls=True)
            try:
                secure.query("SELECT 1")
            except SqlError:
                raise plain from None
            return secure


def quote_name(name: str) -> str:
    """A schema or table name as an SQL identifier (names are checked by the spec; this is belt and braces)."""
    return "`" + name.replace("`", "``") + "`"
