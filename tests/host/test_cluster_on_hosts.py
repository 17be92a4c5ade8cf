"""A cloud cluster target's on-host half on four booted hosts (issue 25): three node hosts form a
MariaDB Galera cluster from the synthesized agent document's set-up jobs (bootstrap, then one join at
a time by rsync state transfer), and a fourth, the client, sets up HAProxy in front of them and runs
prepare and measure steps direct (the writer node) and through the proxy, reading every node's status
and the proxy's statistics every second; one node stopped mid-step fails the step naming it.

The hosts share one network namespace, each node on its own loopback address (127.0.0.2-4: its
server, group communication, IST and SST ports), the client's proxy on 127.0.0.1 (tests/host/README.md
"Clusters"). The jobs are benchfleet.clusterjob's (the contract both halves build on) and
agentjob.agent_job's, sent through start_step's own ``commands.send_step`` (JobJson as SSM gets it);
the password is the secret's, read by the bootstrap node and the client from the Secrets Manager
stand-in the way they read the real one.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from deployed import Capture
from hostfleet import Fleet, assert_per_second, record
from machine import Machine
from runcommand import Invocation, RunCommand

from benchfleet import clusterjob, proxyconf
from benchfleet.agentjob import agent_job
from benchfleet.aws.steps import commands
from benchfleet.plan import PlanStep
from benchfleet.records import parse_agent_lines
from benchfleet.spec import Workload

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUN, TARGET = "host-cluster", "galera"
NODES = [("n1", "127.0.0.2"), ("n2", "127.0.0.3"), ("n3", "127.0.0.4")]
INSTANCES = {"n1": "i-0c1a000000000001", "n2": "i-0c1a000000000002", "n3": "i-0c1a000000000003",
             "client": "i-0c1a0000000000c1"}
DURATION_S = 5
WORKLOAD = Workload(name="host-rw", test="oltp_read_write", tables=1, table_size=1000, report_interval_s=1)
STATUS = {"counters": ["wsrep_flow_control_paused", "wsrep_replicated_bytes", "Threads_running"], "interval_s": 1}


class Cluster:
    def __init__(self, fleet: Fleet, runner: RunCommand, machines: dict[str, Machine], served: dict[str, Any]) -> None:
        self.fleet = fleet
        self.runner = runner
        self.machines = machines
        self.arn = served["arn"]
        # The instance role and the regional endpoint, on a host of this tier: credentials and the stand-in.
        self.env = {"AWS_ENDPOINT_URL_SECRETSMANAGER": f"http://127.0.0.1:{served['port']}",
                    "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_DEFAULT_REGION": "us-east-1"}
        self.sent = 0
        self.results: dict[str, Any] = {}

    def send(self, host: str, job: dict[str, Any], timeout_s: int = 900) -> Invocation:
        capture = Capture()
        commands.send_step(capture, document="bf-agent", instance_id=INSTANCES[host], job=job, bucket="bf-results",
                           output_prefix=f"runs/{RUN}", execution_timeout_s=timeout_s, comment=job["step"]["name"])
        self.sent += 1
        return self.runner.send(self.machines[host], instance_id=INSTANCES[host], command_id=f"cmd-{self.sent}",
                                parameters=capture.sent["Parameters"], env=self.env)

    def client_job(self, name: str, kind: str, route: str, threads: int = 2,
                   duration_s: int = DURATION_S) -> dict[str, Any]:
        step = PlanStep(index=0 if kind == "prepare" else 1, name=name, kind=kind, threads=threads,
                        duration_s=0 if kind == "prepare" else duration_s, variant=route)
        return agent_job(run_id=RUN, target_id=TARGET, repetition=1, workload=WORKLOAD, step=step,
                         db=clusterjob.client_db(route, NODES, self.arn, "haproxy"),
                         status=clusterjob.client_status(STATUS, NODES, "haproxy"))


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"type"')]


def agent_records(inv: Invocation, ok: bool = True) -> list[dict[str, Any]]:
    run = inv.step(commands.AGENT_PLUGIN)
    assert (run.status == "Success") == ok, run.stdout[-4000:] + run.stderr[-2000:]
    return records_of(run.stdout)


def mariadb(host: Machine, sql: str) -> str:
    out = host.run("mariadb -uroot -N -B", stdin=sql)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def cluster(fleet: Fleet, run_command: RunCommand) -> Any:
    ns = fleet.netns()
    started = time.monotonic()
    names = [n for n, _ in NODES] + ["client"]
    # Node hosts run no proxy; the client host runs no engine. MariaDB's socket activation (systemd
    # itself listening on *:3306) is off from the boot: in the namespace the hosts share, the first
    # host's would hold every address's port 3306 before its node job turns it off (on EC2 each host
    # has its own network, and the job turning it off is enough).
    booted = fleet.boot_together(names, ns, {**{n: ("haproxy.service", "mariadb.socket") for n, _ in NODES},
                                             "client": ("mariadb.service", "mariadb.socket")})
    machines = dict(zip(names, booted, strict=True))
    record("cluster_boot_s", time.monotonic() - started)
    password = secrets.token_urlsafe(18)
    standin = subprocess.Popen(["ip", "netns", "exec", ns.name, sys.executable, str(HERE / "secrets_standin.py")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert standin.stdin is not None and standin.stdout is not None
    standin.stdin.write(json.dumps({"name": f"bf-{RUN}-{TARGET}-1", "secret": {"username": "sbtest",
                                                                              "password": password}}) + "\n")
    standin.stdin.flush()
    c = Cluster(fleet, run_command, machines, json.loads(standin.stdout.readline()))
    c.password = password  # type: ignore[attr-defined]
    cnf = (REPO / "workloads/mysql/default.cnf").read_text()
    try:
        # As the state machine forms it: the first node bootstraps, the others join one at a time.
        for k, (name, host) in enumerate(NODES, start=1):
            job = clusterjob.node_job(run_id=RUN, target_id=TARGET, repetition=1, flavor="mariadb-galera",
                                      cluster_name=f"bf-{RUN}-1", node=name, host=host, nodes=NODES,
                                      mysql_config="default", cnf=cnf, password_secret_arn=c.arn, memory_mb=512,
                                      synced_timeout_s=120, expected_size=k)
            began = time.monotonic()
            c.results[name] = agent_records(c.send(name, job))
            record(f"node_{name}_setup_s", time.monotonic() - began)
        began = time.monotonic()
        c.results["proxy"] = agent_records(c.send("client", clusterjob.proxy_job(
            run_id=RUN, target_id=TARGET, repetition=1, software="haproxy", nodes=NODES, password_secret_arn=c.arn,
            timeout_s=60)))
        record("proxy_setup_s", time.monotonic() - began)
        record("cluster_formed_s", time.monotonic() - started)
        yield c
    finally:
        standin.stdin.close()
        standin.wait(timeout=30)
        # The nodes' data is thrown away. Killed, then stopped: the unit restarts a killed server
        # (Restart=on-abort), and a node rejoining (n3, after the fault) holds the power-off a minute.
        for name, _ in NODES:
            machines[name].run("systemctl kill -s KILL mariadb; systemctl stop mariadb", timeout_s=60)
        for machine in booted:
            fleet.release(machine)


def test_three_hosts_form_a_synced_cluster_from_the_documents_setup_jobs(cluster: Cluster) -> None:
    for k, (name, host) in enumerate(NODES, start=1):
        # What the state machine's side reads back of a set-up job: benchfleet.records' reader.
        (setup,) = [r.model_dump() for r in parse_agent_lines(
            "\n".join(json.dumps(r) for r in cluster.results[name]), name).setups]
        assert (setup["node"], setup["state"], setup["cluster_size"]) == (name, "Synced", k)
        assert len(setup["config_hash"]) == 64 and setup["requested"]["max_connections"] == "1000"
        machine = cluster.machines[name]
        status = dict(line.split("\t") for line in mariadb(machine, "SHOW GLOBAL STATUS WHERE Variable_name IN "
                      "('wsrep_cluster_size','wsrep_local_state_comment','wsrep_incoming_addresses');").splitlines())
        assert status["wsrep_cluster_size"] == "3" and status["wsrep_local_state_comment"] == "Synced"
        assert sorted(a.rsplit(":", 1)[0] for a in status["wsrep_incoming_addresses"].split(",")) == [
            h for _, h in NODES]
        assert f"bind-address = {host}" in machine.path("/etc/mysql/mariadb.conf.d/zz-benchfleet-node.cnf").read_text()
    # The joiners received the bootstrap node's users by state transfer (rsync), not by the job.
    joiner_log = cluster.machines["n3"].path("/var/log/mysql/error.log").read_text(errors="replace")
    assert "rsync" in joiner_log and "SST" in joiner_log
    users = mariadb(cluster.machines["n3"], "SELECT CONCAT(User,'@',Host) FROM mysql.user ORDER BY 1;").split()
    assert {"sbtest@%", f"{proxyconf.MONITOR_USER}@%", f"{proxyconf.CHECK_USER}@%"} <= set(users)
    installs = [r for r in cluster.results["n1"] if r["type"] == "install"]
    assert {"cnf", "database"} <= {r["action"] for r in installs}
    assert all(cluster.password not in json.dumps(r) for rs in cluster.results.values() for r in rs)  # type: ignore[attr-defined]


def test_the_client_hosts_haproxy_sees_every_node(cluster: Cluster) -> None:
    (setup,) = [r for r in cluster.results["proxy"] if r["type"] == "setup"]
    assert setup["proxy"] == "haproxy" and setup["proxy_version"].startswith("HAProxy version")
    assert setup["proxy_settings"] == {"writes": "one", "backends": "3", "balance": "first", "maxconn": "8192"}
    client = cluster.machines["client"]
    assert "bind 127.0.0.1:3307" in client.path("/etc/haproxy/haproxy.cfg").read_text()
    assert client.run("systemctl is-active mariadb").stdout.strip() != "active"  # the client runs no engine


def test_prepare_and_measure_direct_and_through_the_proxy_with_every_nodes_status(cluster: Cluster) -> None:
    out = agent_records(cluster.send("client", cluster.client_job("prepare", "prepare", "direct")))
    assert out[-1]["type"] == "prepared"
    # The table the client loaded through the writer is on every node.
    for name, _ in NODES:
        assert mariadb(cluster.machines[name], "SELECT COUNT(*) FROM sbtest.sbtest1;").strip() == "1000"
    connections_before = _haproxy_sessions(cluster.machines["client"])
    seen: dict[str, Any] = {}
    for route in ("direct", "proxy"):
        began = time.monotonic()
        records = agent_records(cluster.send("client", cluster.client_job(f"t0002-{route}", "measure", route)))
        record(f"cluster_measure_{route}_s", time.monotonic() - began)
        parsed = parse_agent_lines("\n".join(json.dumps(r) for r in records), "client")
        assert_per_second([s.second for s in parsed.samples], DURATION_S)
        assert all(s.tps > 0 for s in parsed.samples) and parsed.summaries[0].tps > 0
        status = [r for r in records if r["type"] == "status"]
        by_source: dict[str, list[dict[str, Any]]] = {}
        for r in status:
            by_source.setdefault(r["source"], []).append(r)
        # Every node over SQL, and the proxy's statistics per backend.
        assert set(by_source) == {"n1", "n2", "n3", "proxy/n1", "proxy/n2", "proxy/n3"}
        for name, _ in NODES:  # every node, every second, over SQL
            readings = by_source[name]
            assert len(readings) >= DURATION_S and all(r.get("values") for r in readings), readings[:2]
            assert all(r["values"]["wsrep_cluster_size"] == "3" for r in readings)
        seen[route] = (by_source, _haproxy_sessions(cluster.machines["client"]))
    # Direct: no session through the proxy; proxied: every sysbench connection went to the writer n1.
    assert seen["direct"][1] == connections_before
    assert seen["proxy"][1]["n1"] >= connections_before["n1"] + 2
    assert seen["proxy"][1]["n2"] == connections_before["n2"]
    writes = [int(r["values"].get("wsrep_replicated_bytes", 0)) for r in seen["proxy"][0]["n1"]]
    assert writes[-1] > writes[0]  # the writer replicated the step's writes to the others


def _haproxy_sessions(client: Machine) -> dict[str, int]:
    """HAProxy's total sessions per backend, read from its stats socket on the client host."""
    text = client.run("python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', 3308)); "
                      "s.sendall(b'show stat\\n'); import sys; sys.stdout.write(s.makefile().read())\"").stdout
    header = text.splitlines()[0][2:].split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in text.splitlines()[1:] if line]
    return {r["svname"]: int(r["stot"] or 0) for r in rows if r.get("svname") in {"n1", "n2", "n3"}}


def test_a_proxy_install_that_fails_names_the_package_and_stage(cluster: Cluster) -> None:
    """ProxySQL comes from its own apt repository, which these hosts cannot reach (no network): the real
    failure path of the install on a booted host, leaving the running HAProxy alone."""
    client = cluster.machines["client"]
    records = agent_records(cluster.send("client", clusterjob.proxy_job(
        run_id=RUN, target_id=TARGET, repetition=1, software="proxysql", nodes=NODES, password_secret_arn=cluster.arn,
        timeout_s=30)), ok=False)
    (error,) = [r for r in records if r["type"] == "error"]
    assert (error["stage"], error["package"], error["during"]) == ("proxy-install", "proxysql", "repository"), error
    (read,) = parse_agent_lines("\n".join(json.dumps(r) for r in records), "client").errors
    assert read.stage == "proxy-install" and read.step == "setup-proxy"
    assert error["message"].startswith("proxy install failed: package proxysql at stage repository: apt-get")
    assert client.run("systemctl is-active haproxy").stdout.strip() == "active"
    assert not client.path("/etc/proxysql.cnf").exists()


def test_a_node_stopped_mid_step_fails_the_step_naming_it(cluster: Cluster) -> None:
    """It takes the cluster apart: after the tests that need it whole."""
    timer = threading.Timer(2.5, lambda: cluster.machines["n3"].run("systemctl kill -s KILL mariadb"))
    timer.start()
    try:
        records = agent_records(cluster.send("client", cluster.client_job("t0002-fault", "measure", "direct",
                                                                           duration_s=20)), ok=False)
    finally:
        timer.join()
    (error,) = [r for r in records if r["type"] == "error"]
    assert "the cluster was not Synced at full size" in error["message"] and "n3" in error["message"], error
    samples = [r for r in records if r["type"] == "sample"]
    assert len(samples) < 15  # stopped when the node went, not at the step's end


def test_a_node_that_cannot_join_fails_its_job_naming_it_within_the_timeout(cluster: Cluster) -> None:
    """n3 sent to join a cluster of another name (its peers refuse the handshake): the job fails at its
    timeout naming the node and the state it was stuck in, not after systemd's own start timeout."""
    job = clusterjob.node_job(run_id=RUN, target_id=TARGET, repetition=1, flavor="mariadb-galera",
                              cluster_name="bf-another-cluster", node="n3", host=NODES[2][1], nodes=NODES,
                              mysql_config="default", cnf="[mysqld]\n", password_secret_arn=cluster.arn,
                              memory_mb=512, synced_timeout_s=8)
    began = time.monotonic()
    records = agent_records(cluster.send("n3", job), ok=False)
    record("node_never_joins_s", time.monotonic() - began)
    (error,) = [r for r in records if r["type"] == "error"]
    assert error["stage"] == "node" and error["node"] == "n3", error
    assert error["message"].startswith("bf-another-cluster: node n3 "), error
    assert "was not Synced within 8 s" in error["message"] or "did not join" in error["message"], error
    assert time.monotonic() - began < 60
