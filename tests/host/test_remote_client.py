"""The client role (as on an RDS/Aurora client or in front of an existing endpoint): the agent on a
client host, no engine of its own, against a MariaDB endpoint on another host that requires TLS
(require_secure_transport), the password read from a Secrets Manager stand-in the way the agent
reads a managed master secret. Both hosts share one network namespace, the endpoint at 127.0.0.1."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from deployed import job_of, plan, send_parameters, step_state
from hostfleet import Fleet, assert_per_second, guest_ps, record
from machine import Machine
from runcommand import RunCommand

from benchfleet.aws.steps import commands
from benchfleet.workload.records import parse_agent_lines

HERE = Path(__file__).resolve().parent
TLS_DIR = "/etc/benchfleet/tls"
INSTANCE = "i-0fedcba9876543210"
DURATION_S = 5
ENDPOINT_CNF = """[mysqld]
bind-address = 127.0.0.1
ssl_ca = /etc/mysql/tls/ca.pem
ssl_cert = /etc/mysql/tls/server-cert.pem
ssl_key = /etc/mysql/tls/server-key.pem
require_secure_transport = ON
"""
# A CA, the server's certificate (for 127.0.0.1) and a client certificate from the same CA: Debian's
# libmariadb only does TLS through sysbench with a client certificate the server accepts (README).
MAKE_CERTS = """set -e
mkdir -p /etc/mysql/tls && cd /etc/mysql/tls
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=benchfleet-test-ca -keyout ca-key.pem -out ca.pem
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout $who-key.pem -out $who.csr
  printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf
  openssl x509 -req -days 2 -in $who.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -extfile ext.cnf \
    -out $who-cert.pem
done
chown mysql: server-key.pem && chmod 0600 server-key.pem
"""


def spec(arn: str, **tls: str) -> dict[str, Any]:
    return {"name": "host-client",
            "workload": {"name": "host-ps", "test": "oltp_point_select", "tables": 1, "table_size": 2000,
                         "prepare_threads": 1, "warmup_s": 0, "threads": [2], "duration_s": DURATION_S},
            "targets": [{"id": "endpoint", "kind": "existing", "host": "127.0.0.1", "port": 3306,
                         "engine": "mariadb", "instance_id": INSTANCE, "password_secret_arn": arn,
                         "user": "benchfleet", "database": "sbtest", **tls}]}


@pytest.fixture(scope="module")
def hosts(fleet: Fleet) -> Any:
    ns = fleet.netns()
    endpoint = fleet.boot("endpoint", ns)
    client = fleet.boot("client", ns, masked=("mariadb.service",))
    password = secrets.token_urlsafe(18)
    made = endpoint.run(MAKE_CERTS)
    assert made.returncode == 0, made.stderr
    endpoint.path("/etc/mysql/mariadb.conf.d/zz-endpoint.cnf").write_text(ENDPOINT_CNF)
    sql = ("DROP USER IF EXISTS ''@'localhost';\n"
           f"CREATE USER 'benchfleet'@'%' IDENTIFIED BY '{password}';\n"
           "GRANT ALL PRIVILEGES ON *.* TO 'benchfleet'@'%';\n")
    setup = endpoint.run("systemctl restart mariadb && mariadb -uroot", stdin=sql)
    assert setup.returncode == 0, setup.stderr
    for name in ("ca.pem", "client-cert.pem", "client-key.pem"):
        target = client.path(f"{TLS_DIR}/{name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(endpoint.path(f"/etc/mysql/tls/{name}").read_bytes())
    standin = subprocess.Popen(["ip", "netns", "exec", ns.name, sys.executable, str(HERE / "secrets_standin.py")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert standin.stdin is not None and standin.stdout is not None
    # An RDS-managed master secret's shape: JSON with username and password.
    standin.stdin.write(json.dumps({"name": "rds!db-benchfleet", "secret": {"username": "benchfleet",
                                                                            "password": password}}) + "\n")
    standin.stdin.flush()
    served = json.loads(standin.stdout.readline())
    try:
        yield endpoint, client, served, password
    finally:
        standin.stdin.close()
        standin.wait(timeout=30)
        fleet.release(client)
        fleet.release(endpoint)


def send(client: Machine, runner: RunCommand, planned: dict[str, Any], step: str, served: dict[str, Any],
         monkeypatch: pytest.MonkeyPatch) -> Any:
    params = send_parameters(step_state(planned, "endpoint", step, instance_id=INSTANCE), monkeypatch)
    # What the instance role and the regional endpoint would be: test credentials and the stand-in.
    env = {"AWS_ENDPOINT_URL_SECRETSMANAGER": f"http://127.0.0.1:{served['port']}",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    return params, runner.send(client, instance_id=INSTANCE, command_id=f"cmd-{step}-{time.monotonic_ns()}",
                               parameters=params["Parameters"], env=env)


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"type"')]


def test_plain_connections_are_refused_by_the_endpoint(hosts: Any) -> None:
    _, client, _, password = hosts
    plain = client.run(f"MYSQL_PWD='{password}' mariadb --skip-ssl -h127.0.0.1 -ubenchfleet -e 'SELECT 1'")
    assert plain.returncode != 0


def test_the_client_prepares_and_measures_over_tls_with_the_secret(hosts: Any, run_command: RunCommand,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, client, served, password = hosts
    planned = plan(spec(served["arn"], tls="required", ssl_ca=f"{TLS_DIR}/ca.pem",
                        ssl_cert=f"{TLS_DIR}/client-cert.pem", ssl_key=f"{TLS_DIR}/client-key.pem"), "host-client")
    params, inv = send(client, run_command, planned, "prepare", served, monkeypatch)
    job = job_of(params)
    assert "password" not in job["db"] and job["db"]["password_secret_arn"] == served["arn"]
    assert job["db"]["tls"] == "required" and "install" not in job
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Success", run.stdout[-3000:] + run.stderr[-2000:]
    out = records_of(run.stdout)
    (fp,) = [r for r in out if r["type"] == "fingerprint"]
    assert fp["tls_cipher"] and fp["client_library"] == "libmariadb" and fp["engine_version"].startswith("10.11")
    assert fp["server_variables"]["require_secure_transport"] == "ON"
    assert out[-1]["type"] == "prepared"
    # The agent created the schema on the endpoint (nothing on an endpoint until someone does).
    assert "sbtest" in endpoint.run("mariadb -uroot -N -e 'SHOW DATABASES'").stdout.split()

    started = time.monotonic()
    _, inv = send(client, run_command, planned, "t0002", served, monkeypatch)
    record("client_measure_step_s", time.monotonic() - started)
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Success", run.stdout[-3000:]
    parsed = parse_agent_lines("\n".join(json.dumps(r) for r in records_of(run.stdout)), "client")
    assert_per_second([s.second for s in parsed.samples], DURATION_S)
    assert all(s.tps > 0 for s in parsed.samples) and parsed.summaries[0].tps > 0
    assert all(password not in line for line in guest_ps(client))
    # Every sysbench session was TLS: the endpoint refuses anything else, and counted the handshakes.
    accepts = endpoint.run("mariadb -uroot -N -e \"SHOW GLOBAL STATUS LIKE 'Ssl_accepts'\"").stdout.split()
    assert int(accepts[1]) >= 3


def test_tls_required_without_the_files_debians_sysbench_needs_is_refused_by_name(
        hosts: Any, run_command: RunCommand, monkeypatch: pytest.MonkeyPatch) -> None:
    _, client, served, _ = hosts
    planned = plan(spec(served["arn"], tls="required"), "host-client-nofiles")
    _, inv = send(client, run_command, planned, "prepare", served, monkeypatch)
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Failed" and run.code == 2
    (error,) = [r for r in records_of(run.stdout) if r["type"] == "error"]
    assert "db.ssl_ca, db.ssl_cert, db.ssl_key" in error["message"] and "libmariadb" in error["message"]
