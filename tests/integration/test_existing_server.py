"""``kind: existing`` from this machine, against a real MariaDB that stands for the user's own server.

The server is the test's own (started here with the distribution's binaries, not by benchfleet), it
holds a schema of the user's that must survive untouched, and benchfleet's account may do anything
on it (ALL ON *.*): what keeps the user's data safe has to be benchfleet, not missing privileges.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from tests.per_second import assert_per_second

from benchfleet.cli.main import main
from benchfleet.local.mariadb import free_port

pytestmark = pytest.mark.integration

PASSWORD = "s3cret-but-not-in-the-spec"


@dataclass
class UsersServer:
    port: int
    socket: Path
    process: subprocess.Popen[bytes]

    def sql(self, statement: str) -> list[list[str]]:
        out = subprocess.run(["mariadb", "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-B", "-e",
                              statement], capture_output=True, text=True, check=True, timeout=60)
        return [line.split("\t") for line in out.stdout.splitlines()]

    def state(self) -> dict[str, object]:
        """What must not change: the user's schemas and rows, and every global variable."""
        return {
            "schemas": self.sql("SELECT schema_name FROM information_schema.schemata ORDER BY 1"),
            "tables": self.sql("SELECT table_schema, table_name FROM information_schema.tables "
                               "WHERE table_schema = 'shop' ORDER BY 1, 2"),
            "orders": self.sql("CHECKSUM TABLE shop.orders"),
            "variables": self.sql("SHOW GLOBAL VARIABLES"),
        }


def certificates(base: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=base, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=users-ca")
    (base / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-key.pem", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-out", f"{name}-cert.pem", "-days", "2", "-extfile", "san.ext")
    return {n: base / f for n, f in (("ca", "ca.pem"), ("server_cert", "server-cert.pem"),
                                     ("server_key", "server-key.pem"), ("client_cert", "client-cert.pem"),
                                     ("client_key", "client-key.pem"))}


@pytest.fixture(params=[False], ids=["plain"])
def users_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[UsersServer]:
    """The user's server; ``indirect`` param True: it accepts TLS connections only."""
    if not shutil.which("mariadbd", path="/usr/sbin:/usr/bin"):
        pytest.skip("mariadb-server is not installed")
    base = tmp_path / "users-server"
    (base / "tmp").mkdir(parents=True)
    port = free_port()
    sock = Path("/tmp") / f"users-server-{os.getpid()}-{port}.sock"
    cnf = base / "my.cnf"
    tls = ""
    if request.param:
        certs = certificates(base)
        tls = (f"ssl_ca={certs['ca']}\nssl_cert={certs['server_cert']}\nssl_key={certs['server_key']}\n"
               "require_secure_transport=ON\n")
    cnf.write_text(f"[mysqld]\ndatadir={base / 'data'}\nsocket={sock}\nport={port}\nbind-address=127.0.0.1\n"
                   f"log-error={base / 'error.log'}\npid-file={base / 'pid'}\ntmpdir={base / 'tmp'}\n"
                   "skip-name-resolve\ninnodb_buffer_pool_size=64M\n" + tls
                   + ("user=root\n" if os.geteuid() == 0 else ""))
    subprocess.run(["mariadb-install-db", f"--defaults-file={cnf}", "--auth-root-authentication-method=normal",
                    "--skip-test-db"], check=True, capture_output=True, timeout=120)
    process = subprocess.Popen(["/usr/sbin/mariadbd", f"--defaults-file={cnf}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    server = UsersServer(port, sock, process)
    deadline = time.monotonic() + 90
    while True:
        try:
            server.sql("SELECT 1")
            break
        except subprocess.CalledProcessError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError((base / "error.log").read_text()[-2000:]) from None
            time.sleep(0.2)
    server.sql(
        "DELETE FROM mysql.global_priv WHERE User='';"
        "CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, item VARCHAR(20));"
        "INSERT INTO shop.orders VALUES (1, 'tea'), (2, 'cake');"
        # A table named like sysbench's, in the user's schema: benchfleet must leave it alone too.
        "CREATE TABLE shop.sbtest1 (id INT PRIMARY KEY); INSERT INTO shop.sbtest1 VALUES (42);"
        f"CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"
        "GRANT ALL ON *.* TO 'bench'@'127.0.0.1'; FLUSH PRIVILEGES;")
    try:
        yield server
    finally:
        process.terminate()
        process.wait(timeout=60)
        sock.unlink(missing_ok=True)


def existing_spec(tmp_path: Path, port: int, **target: object) -> Path:
    spec = {"name": "mine", "repetitions": 1,
            "workload": {"name": "it", "test": "oltp_read_write", "tables": 2, "table_size": 1000,
                         "warmup_s": 1, "threads": [2], "duration_s": 3},
            "targets": [{"id": "my-server", "kind": "existing", "host": "127.0.0.1", "port": port,
                         "user": "bench", "password_env": "MY_DB_PASSWORD", **target}]}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_an_existing_server_is_measured_from_here_and_left_as_it_was(
        users_server: UsersServer, bf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MY_DB_PASSWORD", PASSWORD)
    # `localhost` with a port is TCP everywhere (issue 28 item 3): the client libraries would take the
    # default Unix socket for it, here a path with no server, as a socket of another server once was.
    monkeypatch.setenv("MYSQL_UNIX_PORT", str(tmp_path / "another-server.sock"))
    before = users_server.state()
    spec = existing_spec(tmp_path, users_server.port, host="localhost")
    assert PASSWORD not in spec.read_text()

    assert main(["run", str(spec), "--local"]) == 0
    out = capsys.readouterr().out
    assert "this machine's (the client's)" in out  # steal is this host's, and the run says so
    assert main(["results", "mine-", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The real server was measured with --local: not a stand-in, not marked as one (issue 28 item 2).
    assert doc["run"]["trial"] is None
    # The fingerprint read the server's identity over the agent's own (TCP) connection.
    (prepare,) = (bf_home / "raw" / doc["run"]["run_id"]).rglob("prepare.jsonl")
    (fingerprint,) = [json.loads(line) for line in prepare.read_text().splitlines() if '"fingerprint"' in line]
    uid = users_server.sql("SELECT @@hostname, @@port, VARIABLE_VALUE FROM information_schema.global_variables "
                           "WHERE VARIABLE_NAME = 'SERVER_UID'")[0]
    assert fingerprint["server_identity"] == {"hostname": uid[0], "port": uid[1], "uuid": uid[2]}

    (target,) = doc["targets"]
    version = users_server.sql("SELECT VERSION()")[0][0]
    assert target["kind"] == "existing" and target["engine_version"] == version
    assert target["engine"] == "mariadb-" + version.split("-")[0] and target["steal_source"] == "client"
    variables = json.loads(target["server_variables"])
    assert variables["innodb_buffer_pool_size"] == str(64 * 1024 * 1024)
    # Not this host's hardware: the server's host is not ours to describe.
    assert target["cpu_model"] is None and target["memory_mb"] is None
    (step,) = [s for s in doc["steps"] if s["phase"] == "measure"]
    assert step["tps"] > 0
    (measured,) = (bf_home / "raw" / doc["run"]["run_id"]).rglob(f"{step['step']}.jsonl")
    seconds = [json.loads(line)["second"] for line in measured.read_text().splitlines() if '"type":"sample"' in line]
    assert_per_second(seconds, 3, step)  # not a line a second: a starved sysbench skips reports

    # The user's server: same schemas (benchfleet's is gone), same rows, same settings, still running.
    assert users_server.state() == before
    assert users_server.process.poll() is None


def test_keep_tables_leaves_benchfleets_tables_and_nothing_else(
        users_server: UsersServer, bf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text(PASSWORD + "\n")
    spec = existing_spec(tmp_path, users_server.port, keep_tables=True, database="bf_kept",
                         password_env=None, password_file=str(password_file))
    assert main(["run", str(spec), "--local"]) == 0
    tables = users_server.sql("SELECT table_name FROM information_schema.tables WHERE table_schema='bf_kept' "
                              "ORDER BY 1")
    assert tables == [["sbtest1"], ["sbtest2"]]
    assert users_server.sql("SELECT id FROM shop.sbtest1") == [["42"]]
    # Marked as benchfleet's when its prepare created them: a later run may drop these, and only these.
    comments = users_server.sql("SELECT table_comment FROM information_schema.tables WHERE table_schema='bf_kept'")
    assert all(c[0].startswith("benchfleet: created by run mine-") for c in comments)


def test_a_schema_with_someone_elses_tables_is_refused_before_anything_runs(
        users_server: UsersServer, bf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MY_DB_PASSWORD", PASSWORD)
    users_server.sql("CREATE DATABASE benchfleet; CREATE TABLE benchfleet.customers (id INT PRIMARY KEY);"
                     "INSERT INTO benchfleet.customers VALUES (7)")
    before = users_server.state()
    assert main(["run", str(existing_spec(tmp_path, users_server.port)), "--local"]) == 2
    err = capsys.readouterr().err
    assert "targets[0].database" in err and "customers" in err and "refusing" in err
    assert users_server.sql("SELECT id FROM benchfleet.customers") == [["7"]]
    assert users_server.state() == before
    assert not (bf_home / "benchfleet.duckdb").exists() or main(["runs", "--format", "json"]) == 0

    # A schema holding a user's own table that is *named* like benchfleet's (another layout, the user's
    # row in it): it was dropped by a run that "succeeded" (issue 28 item 2). Refused, naming it.
    users_server.sql("CREATE DATABASE legacy; CREATE TABLE legacy.sbtest1 (note VARCHAR(20));"
                     "INSERT INTO legacy.sbtest1 VALUES ('mine')")
    assert main(["run", str(existing_spec(tmp_path, users_server.port, database="legacy")), "--local"]) == 2
    err = capsys.readouterr().err
    assert "targets[0].database" in err and "sbtest1 is named like benchfleet's but not marked" in err
    assert users_server.sql("SELECT note FROM legacy.sbtest1") == [["mine"]]

    # The agent is the last line: whatever its caller checked, it prepares nowhere but on the server it
    # was told about, and never where a table of someone else's is.
    agent = Path(__file__).resolve().parents[2] / "workloads" / "agent" / "benchfleet_agent.py"
    users_server.sql("CREATE DATABASE guest")
    identity = users_server.sql("SELECT @@hostname, @@port, VARIABLE_VALUE FROM information_schema.global_variables "
                                "WHERE VARIABLE_NAME = 'SERVER_UID'")[0]

    def prepare(**db: object) -> tuple[int, dict[str, object]]:
        job = {"run_id": "r-1", "target_id": "t", "repetition": 1, "workload": "w",
               "step": {"name": "prepare", "kind": "prepare", "threads": 1, "duration_s": 2},
               "sysbench": {"test": "oltp_read_only", "options": {"tables": 1, "table-size": 10}},
               "db": {"host": "127.0.0.1", "port": users_server.port, "user": "bench", "password": PASSWORD,
                      "database": "guest", **db}}
        done = subprocess.run(["python3", str(agent), "--job", "-"], input=json.dumps(job), capture_output=True,
                              text=True, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, json.loads(done.stdout.splitlines()[-1])

    code, last = prepare(expect_server={"hostname": "elsewhere", "port": identity[1], "uuid": identity[2]})
    assert code == 3 and last["stage"] == "server" and "not the one benchfleet checked" in str(last["message"])
    assert users_server.sql("SHOW TABLES FROM guest") == []
    users_server.sql("CREATE TABLE guest.sbtest1 (mine INT)")
    code, last = prepare()
    assert code == 3 and last["stage"] == "tables" and "(sbtest1)" in str(last["message"])
    assert users_server.sql("SHOW COLUMNS FROM guest.sbtest1")[0][0] == "mine"
    users_server.sql("DROP TABLE guest.sbtest1")
    code, last = prepare(expect_server={"hostname": identity[0], "port": identity[1], "uuid": identity[2]})
    assert code == 0 and last["type"] == "prepared"
    assert users_server.sql("SELECT table_comment FROM information_schema.tables WHERE table_schema = 'guest'") == \
        [["benchfleet: created by run r-1"]]


def test_a_missing_password_variable_is_named(bf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MY_DB_PASSWORD", raising=False)
    assert main(["run", str(existing_spec(tmp_path, 3306)), "--local"]) == 2
    assert "targets[0].password_env: $MY_DB_PASSWORD is not set" in capsys.readouterr().err


@pytest.mark.parametrize("users_server", [True], ids=["tls-only"], indirect=True)
def test_a_server_that_accepts_only_tls_is_benchmarked_over_tls(
        users_server: UsersServer, bf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MY_DB_PASSWORD", PASSWORD)
    base = tmp_path / "users-server"
    # Debian's sysbench (libmariadb) needs a client certificate the server's CA signed; without one
    # the run fails at its first step, saying which keys are missing.
    assert main(["run", str(existing_spec(tmp_path, users_server.port)), "--local"]) == 1
    assert "db.ssl_ca, db.ssl_cert, db.ssl_key" in capsys.readouterr().out.replace("\n", "")
    spec = existing_spec(tmp_path, users_server.port, ssl_ca=str(base / "ca.pem"),
                         ssl_cert=str(base / "client-cert.pem"), ssl_key=str(base / "client-key.pem"))
    assert main(["run", str(spec), "--local"]) == 0
    run_id = re.search(r"run (\S+) succeeded", capsys.readouterr().out)
    assert run_id
    assert main(["results", run_id.group(1), "--format", "json"]) == 0
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert json.loads(target["server_variables"])["require_secure_transport"] == "ON"
    # The agent's own session was encrypted (its fingerprint records the cipher).
    (prepare,) = (bf_home / "raw" / run_id.group(1)).rglob("prepare.jsonl")
    (fingerprint,) = [json.loads(line) for line in prepare.read_text().splitlines() if '"fingerprint"' in line]
    assert fingerprint["tls_cipher"]
    assert users_server.sql("SHOW DATABASES LIKE 'benchfleet'") == []
