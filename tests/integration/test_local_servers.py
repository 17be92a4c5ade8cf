"""Local MariaDB servers: server options from the spec, a private temp dir, failures that say their
cause first, one retry of a transient failure, and nothing left behind either way."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from benchfleet.cli import main
from benchfleet.local import mariadb
from benchfleet.local.mariadb import LocalServer, LocalServerError
from benchfleet.local.sqlclient import SqlClient

pytestmark = pytest.mark.integration


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else already listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def leftovers(home: Path) -> list[str]:
    servers = home / "servers"
    return sorted(p.name for p in servers.iterdir()) if servers.exists() else []


def test_a_start_that_fails_once_is_retried_on_a_fresh_server(tmp_path: Path, busy_port: int,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    ports = iter([busy_port])
    real = mariadb.free_port
    monkeypatch.setattr(mariadb, "free_port", lambda: next(ports, None) or real())
    server = LocalServer(tmp_path / "home", "retry", "[mysqld]\n", 256)
    with server as conn:
        assert conn.port != busy_port
        assert server.retried and "Address already in use" in server.retried.splitlines()[0]
        # The server's temporary files go to its own temp dir, not the shared /tmp.
        client = SqlClient(conn.host, conn.port, conn.user, conn.password)
        (tmpdir,) = client.query("SELECT @@tmpdir")[0]
        assert server.dir is not None and tmpdir == str(server.dir / "tmp")
    assert leftovers(tmp_path / "home") == []


def test_a_start_that_fails_twice_says_the_servers_cause_first_and_leaves_nothing(
        tmp_path: Path, busy_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mariadb, "free_port", lambda: busy_port)
    server = LocalServer(tmp_path / "home", "broken", "[mysqld]\n", 256)
    with pytest.raises(LocalServerError) as e, server:
        pass
    first_line = str(e.value).splitlines()[0]
    assert first_line.startswith("[ERROR]") and "Address already in use" in first_line
    assert "the first attempt failed too" in str(e.value)
    assert leftovers(tmp_path / "home") == []


def spec_with(tmp_path: Path, **options: object) -> Path:
    spec = {"name": "opts", "repetitions": 2,
            "workload": {"name": "it", "test": "oltp_read_only", "tables": 1, "table_size": 500,
                         "warmup_s": 0, "threads": [1], "duration_s": 2},
            "targets": [{"id": "bp", "kind": "local", "memory_mb": 256, "server_options": options}]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_an_option_the_server_does_not_know_stops_the_run_before_it_starts(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(spec_with(tmp_path, innodb_buffer_pool_sise="64M"))]) == 2
    err = capsys.readouterr().err
    assert "targets[0].server_options: MariaDB refuses it: /usr/sbin/mariadbd: unknown variable " \
           "'innodb_buffer_pool_sise=64M'" in err
    assert leftovers(bf_home) == []


def test_server_options_reach_the_server_and_the_fingerprint_and_adjustments_are_said_once(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # max_connections below 10 is raised to 10 by the server: a notice in its words, once for 2 repetitions.
    assert main(["run", str(spec_with(tmp_path, innodb_buffer_pool_size="64M", max_connections=5))]) == 0
    out = capsys.readouterr().out
    assert out.count("value 5 adjusted to 10") == 1, out
    assert main(["results", "opts-", "--format", "json"]) == 0
    targets = json.loads(capsys.readouterr().out)["targets"]
    assert len(targets) == 2
    for t in targets:
        variables = json.loads(t["server_variables"])
        assert variables["innodb_buffer_pool_size"] == str(64 * 1024 * 1024)
        assert variables["max_connections"] == "10" and t["steal_source"] == "server"
    assert leftovers(bf_home) == []
