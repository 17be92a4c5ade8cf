"""A cloud cluster target end to end on four booted hosts (issue 25): one execution of
statemachines/benchmark-run.asl.json in moto's executor (tests/statemachine/sm_harness.py) for a
3-node MariaDB Galera cluster with HAProxy on the client host, variants route direct and proxy.
Provisioning launches the four instances in moto; every SendCommand start_step sends (the nodes'
set-up, the proxy's, prepare, the measure steps) runs through the synthesized document and agent
bundle on the booted host of the instance it targets (hostagent.HostAgent), its output going to
moto's S3 for collect, its status change to step_callback.

The four hosts share one network namespace whose loopback carries the private addresses moto gave
the instances (tests/host/README.md "Galera clusters"): each node's server, group communication, IST
and SST listen on its own address, as on EC2. The password is the secret provisioning created, read
by the agent with boto3 from moto's Secrets Manager served inside the namespace (secrets_standin).

After the execution, the faults that need a formed cluster run on the same hosts with jobs made by
benchfleet.cluster.jobs's builders (what start_step makes of them is the execution's): a ProxySQL
install failing, a node stopped mid-step, a node sent to join a cluster of another name. Then a
second execution on fresh hosts where n2's join fails for real (its Galera port taken): the target
fails naming the node, and teardown leaves nothing.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from deployed import Capture
from hostagent import HostAgent, data_volumes
from hostfleet import Disks, Fleet, Lan, provide_ubuntu_names, record
from machine import Machine
from runcommand import Invocation, RunCommand
from secrets_standin import serve_in
from sm_harness import Harness, leftovers, offline_world, recording
from sm_moto import FaultProxy
from sm_world import BUCKET, REGION
from timestream_requests import dimensions, stored_records

from benchfleet.aws import clients
from benchfleet.aws.fleet.cluster import TAG_NODE
from benchfleet.aws.steps import commands
from benchfleet.cluster import jobs as clusterjob
from benchfleet.cluster import proxyconf
from benchfleet.plan import naming
from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import PlanStep
from benchfleet.spec.workload import Workload
from benchfleet.workload.records import parse_agent_lines

# Every test here builds a Lan (conftest skips them, naming why, without one).
pytestmark = [pytest.mark.lan, pytest.mark.long(3)]

RUN, TARGET = "host-cluster", "galera"
NODES = ("n1", "n2", "n3")
ROLES = (*NODES, "client")
BLOCKS = 3  # three interleaved pairs of steps: the fewest a paired verdict is computed from
DURATION_S = 9  # per variant, in BLOCKS steps
STEP_S = DURATION_S // BLOCKS
THREADS = 2
WORKLOAD = {"name": "host-rw", "test": "oltp_read_write", "tables": 1, "table_size": 1000, "prepare_threads": 1,
            "warmup_s": 0, "threads": [THREADS], "duration_s": DURATION_S, "report_interval_s": 1}
SPEC = {
    "name": RUN, "repetitions": 1, "workload": WORKLOAD,
    "targets": [{"id": TARGET, "kind": "cluster", "flavor": "mariadb-galera", "nodes": 3,
                 "instance_type": "m6i.large", "mysql_config": "default", "region": REGION,
                 "storage": {"type": "gp3", "size_gb": 20}, "proxy": "haproxy",
                 "client": {"instance_type": "c6i.large"}}],
    "variants": [{"id": "direct", "route": "direct"}, {"id": "proxy", "route": "proxy"}],
    "blocks": BLOCKS,
    "status_counters": ["wsrep_flow_control_paused", "wsrep_replicated_bytes", "Threads_running"],
}
# Node hosts run no proxy; the client host runs no engine (its userland has one installed: on EC2
# the client's prepare installs none). A node's socket activation is the node job's to turn off.
MASKED = {**{n: ("haproxy.service",) for n in NODES}, "client": ("mariadb.service", "mariadb.socket")}


class ClusterAgent(HostAgent):
    """HostAgent for one cluster repetition: at the first command to any of its instances, the
    cluster's four instances (found in moto by the run's and target's tags, each's role by its
    ``benchfleet:node`` tag) are booted together in one namespace, with their private addresses on
    its loopback, each node with the data volume it was launched with."""

    def __init__(self, fleet: Fleet, runner: RunCommand) -> None:
        super().__init__(fleet, runner)
        self.lan: Lan | None = None
        self.instance: dict[str, str] = {}  # role -> instance id
        self.address: dict[str, str] = {}  # role -> private address (moto's)
        self.machine: dict[str, Machine] = {}  # role -> booted host
        self.volumes: dict[str, list[str]] = {}  # node -> its data volumes' ids (moto's)
        self.served: list[dict[str, Any]] = []  # the secrets the agent read
        # What happens on the hosts just before a step's command runs (a fault), by step name.
        self.before: dict[str, Callable[[ClusterAgent], None]] = {}
        self.server: Any = None

    def ran(self, event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        self.host_of(event, result["instance_id"])
        fault = self.before.get(event["step"]["name"])
        if fault:
            fault(self)
        return super().ran(event, result)

    def host_of(self, event: dict[str, Any], instance_id: str) -> Machine:
        if self.lan is None:
            self.boot_cluster(event["run_id"], event["target"]["id"], event["repetition"])
        assert instance_id in self.hosts, f"{instance_id} is none of the cluster's hosts {self.instance}"
        return self.hosts[instance_id]

    def boot_cluster(self, run_id: str, target_id: str, repetition: int) -> None:
        ec2 = boto3.client("ec2", region_name=REGION)
        filters = [{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]},
                   {"Name": f"tag:{naming.TAG_TARGET_ID}", "Values": [target_id]},
                   {"Name": "instance-state-name", "Values": ["running"]}]
        for reservation in ec2.describe_instances(Filters=filters)["Reservations"]:
            for instance in reservation["Instances"]:
                role = {t["Key"]: t["Value"] for t in instance["Tags"]}[TAG_NODE]
                self.instance[role] = instance["InstanceId"]
                self.address[role] = instance["PrivateIpAddress"]
                vpc_id = instance["VpcId"]
        assert sorted(self.instance) == sorted(ROLES), self.instance
        (vpc,) = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
        self.lan = Lan(self.fleet, vpc["CidrBlock"], {role: self.address[role] for role in ROLES})
        self.volumes = {n: data_volumes(self.instance[n]) for n in NODES}
        disks = {n: Disks(self.volumes[n], array=False) for n in NODES}
        started = time.monotonic()
        booted = self.fleet.boot_together(list(ROLES), self.lan.hosts, MASKED, disks)
        for role, machine in zip(ROLES, booted, strict=True):
            self.machine[role] = self.hosts[self.instance[role]] = machine
            self.where[self.instance[role]] = (target_id, repetition)
        record("cluster_boot_s", time.monotonic() - started)
        provide_ubuntu_names(self.machine["client"])  # its prepare installs the client's packages
        # Secrets Manager as the hosts reach it from the VPC (an endpoint on the segment), answering
        # from this test's moto account: the secrets provisioning created.
        self.server = serve_in(self.lan.switch.path, boto3.client("secretsmanager", region_name=REGION), self.served,
                               host=self.lan.service)
        self.env.update({"AWS_ENDPOINT_URL_SECRETSMANAGER": f"http://{self.lan.service}:{self.server.server_address[1]}",
                         "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                         "AWS_DEFAULT_REGION": REGION})

    def nodes(self) -> list[tuple[str, str]]:
        return [(n, self.address[n]) for n in NODES]

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        for role in ROLES:  # the nodes' data is thrown away; killed, then stopped (Restart=on-abort)
            if role in NODES and role in self.machine and self.machine[role] in self.fleet.machines:
                self.machine[role].run("systemctl kill -s KILL mariadb; systemctl stop mariadb", timeout_s=60)
        for machine in self.machine.values():
            if machine in self.fleet.machines:
                self.fleet.release(machine)
        if self.lan is not None:
            self.lan.close()


@dataclass
class Execution:
    h: Harness
    result: dict[str, Any]
    agent: ClusterAgent
    sent: list[dict[str, Any]]  # the SendCommand requests, as start_step sent them
    written: list[dict[str, Any]]  # the WriteRecords requests, as collect sent them

    @property
    def run_id(self) -> str:
        return str(json.loads(self.result["output"])["run_id"])

    def jobs(self) -> list[dict[str, Any]]:
        return [json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in self.sent]

    def records(self, step: str) -> list[dict[str, Any]]:
        (sent,) = [s for s in self.agent.sent if s.step == step]
        return records_of(sent.invocation.step(commands.AGENT_PLUGIN).stdout)


@pytest.fixture(scope="module")
def execution(fleet: Fleet, run_command: RunCommand) -> Iterator[Execution]:
    with offline_world() as h:
        agent = ClusterAgent(fleet, RunCommand(run_command.document, run_command.bundle_zip,
                                               boto3.client("s3", region_name=REGION)))
        h.agent = agent  # type: ignore[assignment]
        sent, written = recording(h)
        try:
            started = time.monotonic()
            result = h.run(SPEC, name=RUN, timeout_s=900)
            record("cluster_execution_s", time.monotonic() - started)
            for s in agent.sent:
                record(f"cluster_{s.step}_s", s.seconds)
            yield Execution(h, result, agent, sent, written)
        finally:
            agent.close()


def jobs_db(e: Execution, step: str) -> tuple[str, int]:
    (job,) = [j for j in e.jobs() if j["step"]["name"] == step]
    return job["db"]["host"], job["db"]["port"]


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"type"')]


def mariadb(host: Machine, sql: str) -> str:
    out = host.run("mariadb -uroot -N -B", stdin=sql)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_execution_runs_every_command_on_the_host_of_its_instance(execution: Execution) -> None:
    e, agent = execution, execution.agent
    failed = [(s.step, s.invocation.step(commands.AGENT_PLUGIN).stdout[-2000:]) for s in agent.sent
              if s.status != "Success"]
    assert e.result["status"] == "SUCCEEDED", (failed, e.h.explain(e.result))
    # Set-up first: the bootstrap, the joins one at a time, the proxy; then the client's steps.
    steps = [s.step for s in agent.sent]
    assert steps[:4] == ["setup-n1", "setup-n2", "setup-n3", "setup-proxy"]
    assert steps[4] == "prepare" and len(steps) == 5 + 2 * BLOCKS
    assert sorted(steps[5:]) == sorted(f"t0002.b{b}.{v}" for b in range(1, BLOCKS + 1) for v in ("direct", "proxy"))
    assert all(s.status == "Success" for s in agent.sent), [(s.step, s.status) for s in agent.sent]
    on = {s.step: s.instance_id for s in agent.sent}
    for n in NODES:
        assert on[f"setup-{n}"] == agent.instance[n]
    assert {on[s] for s in steps[3:]} == {agent.instance["client"]}
    # Each command ran on its instance's booted host: the agent kept its output there, and only there.
    for s in agent.sent:
        kept = f"/var/lib/benchfleet/output/{e.run_id}/{TARGET}/rep-1/{s.step}.jsonl"
        assert [r for r in ROLES if agent.machine[r].path(kept).exists()] == [
            r for r in ROLES if agent.instance[r] == s.instance_id], (s.step, kept)
    # The jobs name the private addresses provisioning gave the instances (moto's).
    jobs = e.jobs()
    addresses = [agent.address[n] for n in NODES]
    for k, n in enumerate(NODES):
        setup = jobs[k]["setup"]
        assert (setup["node"], setup["host"], setup["bootstrap"], setup["expected_size"]) == (
            n, agent.address[n], n == "n1", k + 1)
        assert [x["host"] for x in setup["nodes"]] == addresses
        assert [v["volume_id"] for v in setup["storage"]["volumes"]] == agent.volumes[n]
    assert [b["host"] for b in jobs[3]["setup"]["backends"]] == addresses
    routes = {j["variant"]: (j["db"]["host"], j["db"]["port"]) for j in jobs[5:]}
    assert len({j["step"]["name"] for j in jobs[5:]}) == 2 * BLOCKS
    assert routes == {"direct": (agent.address["n1"], 3306), "proxy": ("127.0.0.1", proxyconf.LISTEN_PORT["haproxy"])}


def test_the_nodes_formed_one_cluster_one_join_at_a_time(execution: Execution) -> None:
    e, agent = execution, execution.agent
    # What collect stored of each set-up step (the summary's rows): each node Synced at its own size.
    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(e.run_id))["Body"].read())
    (target,) = summary["targets"]
    setups = [s["setup"] for s in target["repetitions"][0]["steps"] if s.get("setup")]
    assert [(s.get("node"), s.get("cluster_size")) for s in setups] == [("n1", 1), ("n2", 2), ("n3", 3), (None, None)]
    # Joins one at a time: each node's job ended before the next was sent.
    windows = [s for s in agent.sent if s.step.startswith("setup-n")]
    assert [s.step for s in windows] == ["setup-n1", "setup-n2", "setup-n3"]
    for k, n in enumerate(NODES):
        machine = agent.machine[n]
        status = dict(line.split("\t") for line in mariadb(machine, "SHOW GLOBAL STATUS WHERE Variable_name IN "
                      "('wsrep_cluster_size','wsrep_local_state_comment','wsrep_incoming_addresses');").splitlines())
        assert status["wsrep_cluster_size"] == "3" and status["wsrep_local_state_comment"] == "Synced"
        assert sorted(a.rsplit(":", 1)[0] for a in status["wsrep_incoming_addresses"].split(",")) == sorted(
            agent.address[m] for m in NODES)
        cnf = machine.path("/etc/mysql/mariadb.conf.d/zz-benchfleet-node.cnf").read_text()
        assert f"bind-address = {agent.address[n]}" in cnf
        # The node's data directory on the volume it was launched with (ec2's storage code, on a node).
        mounts = machine.run("cat /proc/mounts").stdout
        (volume,) = agent.volumes[n]
        assert f"{e.agent.fleet.disks[machine.name].volumes[volume]} /srv/benchfleet" in mounts, mounts
        assert k < 1 or "rsync" in machine.path("/var/log/mysql/error.log").read_text(errors="replace")
    # The table the client loaded (prepare: direct, to the writer) and then wrote to is the same on every node.
    assert jobs_db(e, "prepare") == (agent.address["n1"], 3306)
    counts = {n: int(mariadb(agent.machine[n], "SELECT COUNT(*) FROM sbtest.sbtest1;")) for n in NODES}
    assert len(set(counts.values())) == 1 and counts["n1"] >= 1000, counts
    users = mariadb(agent.machine["n3"], "SELECT CONCAT(User,'@',Host) FROM mysql.user ORDER BY 1;").split()
    assert {"sbtest@%", f"{proxyconf.MONITOR_USER}@%", f"{proxyconf.CHECK_USER}@%"} <= set(users)
    # The agent read the secrets provisioning created (n1's, the client's); no password in what the steps printed.
    secrets = {k: v for c in e.h.calls_of("provision") for k, v in (c.result.get("secrets") or {}).items()}
    assert {s["ARN"] for s in agent.served} == {secrets["n1"], secrets["client"]}, (secrets, agent.served)
    password = json.loads(agent.served[0]["SecretString"])["password"]
    assert all(password not in s.invocation.step(commands.AGENT_PLUGIN).stdout for s in agent.sent)
    client = agent.machine["client"]
    assert f"bind 127.0.0.1:{proxyconf.LISTEN_PORT['haproxy']}" in client.path("/etc/haproxy/haproxy.cfg").read_text()
    assert client.run("systemctl is-active mariadb").stdout.strip() != "active"  # the client runs no engine


def proxy_sessions(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """HAProxy's total sessions per backend, every second of a step (the agent's proxy/<node> rows)."""
    out: dict[str, list[int]] = {}
    for r in records:
        if r["type"] == "status" and r["source"].startswith("proxy/"):
            out.setdefault(r["source"].split("/", 1)[1], []).append(int(r["values"].get("stot") or 0))
    return out


def test_the_proxied_steps_went_through_haproxy_to_the_writer_and_the_direct_steps_did_not(
        execution: Execution) -> None:
    """HAProxy's per-backend statistics the client read every second of each step: a direct step
    opens no session through it; a proxied step's sysbench connections all go to the writer, n1."""
    measured = [s.step for s in execution.agent.sent[5:]]
    last: dict[str, int] | None = None  # each backend's sessions at the end of the step before
    for step in measured:
        sessions = proxy_sessions(execution.records(step))
        assert set(sessions) == set(NODES), (step, sessions)
        before = last or {n: v[0] for n, v in sessions.items()}
        if step.endswith(".direct"):
            assert sessions == {n: [before[n]] * len(v) for n, v in sessions.items()}, (step, sessions)
        else:
            assert sessions["n1"][-1] >= before["n1"] + THREADS, (step, sessions)
        assert sessions["n2"][-1] == sessions["n3"][-1] == 0, (step, sessions)  # never a reader
        last = {n: v[-1] for n, v in sessions.items()}


def test_collect_stored_every_nodes_status_every_second(execution: Execution) -> None:
    """What collect wrote to the results store (Timestream's status_samples): every node's cluster
    size (3) and replicated bytes every second of every measured step, and the proxy's backends."""
    rows = [r for w in execution.written if w["TableName"] == "status_samples" for r in stored_records(w)]
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        d = dimensions(r)
        by.setdefault((d["step"], d["source"], d["counter"]), []).append(r)
    measured = [s.step for s in execution.agent.sent[5:]]
    assert {step for step, _, _ in by} == set(measured)
    for step in measured:
        for n in NODES:
            sizes = by[(step, n, "wsrep_cluster_size")]
            assert len(sizes) >= STEP_S and all(value_of(r) == 3 for r in sizes), (step, n, sizes[:2])
            assert len(by[(step, n, "wsrep_replicated_bytes")]) >= STEP_S
            assert by[(step, f"proxy/{n}", "stot")]


def value_of(record: dict[str, Any]) -> float:
    (measure,) = [m for m in record["MeasureValues"] if m["Name"] == "value"]
    return float(measure["Value"])


def test_results_give_the_paired_route_verdict(execution: Execution, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from benchfleet.cli import remote
    from benchfleet.cli.main import main

    e = execution
    monkeypatch.setenv("BENCHFLEET_BUCKET", BUCKET)
    described = {"run_id": e.run_id, "name": SPEC["name"], "status": e.result["status"]}
    monkeypatch.setattr(remote, "get_run", lambda run, api_url=None: described)
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    assert main(["results", e.run_id, *api, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["variant"]: r for r in doc["comparison"]}
    assert set(rows) == {"direct", "proxy"} and all(r["tps_mean"] > 0 for r in rows.values())
    # The proxy's overhead against direct, paired on the same cluster. One repetition of BLOCKS blocks is
    # too few for an interval: blocks refine a repetition's figure, they are no repetitions (issue 37).
    (relative,) = [r["relative"] for r in doc["statistics"]["rows"] if r["variant"] == "proxy"]
    assert (relative["vs_variant"], relative["design"], relative["unit"], relative["pairs"], relative["blocks"]) == (
        "direct", "paired", "repetition", 1, BLOCKS)
    assert relative["pct"] is not None and relative["verdict"] == "too few repetitions", relative
    assert rows["proxy"]["verdict"] == relative["verdict"] and rows["proxy"]["design"] == "paired"
    # Every node's status and the proxy's backends, read back from the run's raw output.
    assert {r["source"] for r in doc["status"]["counters"]} == {*NODES, *(f"proxy/{n}" for n in NODES)}
    sizes = [r for r in doc["status"]["counters"] if r["counter"] == "wsrep_cluster_size"]
    assert len(sizes) == 2 * len(NODES) and all(r["value"] == 3 and r["repetitions"] == BLOCKS for r in sizes)
    assert {r["variant"] for r in doc["status"]["cluster"]} == {"direct", "proxy"}
    assert all(r["replicated_mb_per_s"] > 0 for r in doc["status"]["cluster"])


def test_teardown_left_nothing_in_moto(execution: Execution) -> None:
    e = execution
    assert len(e.h.calls_of("teardown")) == 1 and leftovers(e.run_id) == []
    ec2 = boto3.client("ec2", region_name=REGION)
    states = {i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances(
        InstanceIds=list(e.agent.instance.values()))["Reservations"] for i in r["Instances"]}
    assert set(states.values()) == {"terminated"} and len(states) == 4


# -- faults that need a formed cluster: on the same hosts, jobs made by clusterjob's builders ------

STATUS = {"counters": SPEC["status_counters"], "interval_s": 1}


class Faults:
    """Jobs sent to the execution's hosts as start_step sends them (``commands.send_step``), with a
    secret of the cluster's password (the execution's are gone with its teardown)."""

    def __init__(self, agent: ClusterAgent) -> None:
        self.agent = agent
        password = agent.served[0]["SecretString"]
        self.arn = boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name=f"{RUN}-faults", SecretString=password)["ARN"]
        self.sent = 0

    def send(self, role: str, job: dict[str, Any], timeout_s: int = 300) -> Invocation:
        capture = Capture()
        instance_id = self.agent.instance[role]
        commands.send_step(capture, document="bf-agent", instance_id=instance_id, job=job, bucket=BUCKET,
                           output_prefix=f"runs/{RUN}-faults", execution_timeout_s=timeout_s,
                           comment=job["step"]["name"])
        self.sent += 1
        return self.agent.runner.send(self.agent.machine[role], instance_id=instance_id,
                                      command_id=f"fault-{self.sent}", parameters=capture.sent["Parameters"],
                                      env=self.agent.env)

    def measure(self, name: str, duration_s: int) -> dict[str, Any]:
        workload = Workload.model_validate({k: v for k, v in WORKLOAD.items() if k != "threads"} | {"threads": [2]})
        step = PlanStep(index=1, name=name, kind="measure", threads=THREADS, duration_s=duration_s, variant="direct")
        nodes = self.agent.nodes()
        return agent_job(run_id=f"{RUN}-faults", target_id=TARGET, repetition=1, workload=workload, step=step,
                         db=clusterjob.client_db("direct", nodes, self.arn, "haproxy"),
                         status=clusterjob.client_status(STATUS, nodes, "haproxy"))


@pytest.fixture(scope="module")
def faults(execution: Execution) -> Faults:
    return Faults(execution.agent)


def failed_records(inv: Invocation) -> list[dict[str, Any]]:
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Failed", run.stdout[-3000:]
    return records_of(run.stdout)


def test_a_proxy_install_that_fails_names_the_package_and_stage(faults: Faults) -> None:
    """ProxySQL comes from its own apt repository, which these hosts cannot reach (no network): the real
    failure path of the install on a booted host, leaving the running HAProxy alone."""
    client = faults.agent.machine["client"]
    records = failed_records(faults.send("client", clusterjob.proxy_job(
        run_id=f"{RUN}-faults", target_id=TARGET, repetition=1, software="proxysql", nodes=faults.agent.nodes(),
        password_secret_arn=faults.arn, timeout_s=30)))
    (error,) = [r for r in records if r["type"] == "error"]
    assert (error["stage"], error["package"], error["during"]) == ("proxy-install", "proxysql", "repository"), error
    (read,) = parse_agent_lines("\n".join(json.dumps(r) for r in records), "client").errors
    assert read.stage == "proxy-install" and read.step == "setup-proxy"
    assert error["message"].startswith("proxy install failed: package proxysql at stage repository: apt-get")
    assert client.run("systemctl is-active haproxy").stdout.strip() == "active"
    assert not client.path("/etc/proxysql.cnf").exists()


def test_a_node_stopped_mid_step_fails_the_step_naming_it(faults: Faults) -> None:
    """It takes the cluster apart: after the tests that need it whole."""
    timer = threading.Timer(2.5, lambda: faults.agent.machine["n3"].run("systemctl kill -s KILL mariadb"))
    timer.start()
    try:
        records = failed_records(faults.send("client", faults.measure("t0002-fault", duration_s=20)))
    finally:
        timer.join()
    (error,) = [r for r in records if r["type"] == "error"]
    assert "the cluster was not Synced at full size" in error["message"] and "n3" in error["message"], error
    samples = [r for r in records if r["type"] == "sample"]
    assert len(samples) < 15  # stopped when the node went, not at the step's end


def test_a_node_that_cannot_join_fails_its_job_naming_it_within_the_timeout(faults: Faults) -> None:
    """n3 sent to join a cluster of another name (its peers refuse the handshake): the job fails at its
    timeout naming the node and the state it was stuck in, not after systemd's own start timeout."""
    agent = faults.agent
    job = clusterjob.node_job(run_id=f"{RUN}-faults", target_id=TARGET, repetition=1, flavor="mariadb-galera",
                              cluster_name="bf-another-cluster", node="n3", host=agent.address["n3"],
                              nodes=agent.nodes(), mysql_config="default", cnf="[mysqld]\n",
                              password_secret_arn=faults.arn, memory_mb=512, synced_timeout_s=8)
    began = time.monotonic()
    records = failed_records(faults.send("n3", job))
    record("node_never_joins_s", time.monotonic() - began)
    (error,) = [r for r in records if r["type"] == "error"]
    assert error["stage"] == "node" and error["node"] == "n3", error
    assert error["message"].startswith("bf-another-cluster: node n3 "), error
    assert "was not Synced within 8 s" in error["message"] or "did not join" in error["message"], error
    assert time.monotonic() - began < 60


def test_the_booted_hosts_are_gone_with_their_instances(execution: Execution) -> None:
    """What stands for EC2 terminating the instances teardown terminated: every host powered off,
    its volumes detached and its network removed; nothing of the cluster left on this machine."""
    agent = execution.agent
    machines = list(agent.machine.values())
    files = [f for d in (execution.agent.fleet.disks.get(m.name) for m in machines) if d for f in d.files]
    namespaces = [ns.name for ns in [*agent.lan.hosts.values(), agent.lan.switch]] if agent.lan else []
    assert len(machines) == 4 and len(files) == 3 and len(namespaces) == 5
    agent.close()
    assert all(m.proc.poll() is not None and m not in agent.fleet.machines for m in machines)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not [n for n in namespaces if n in listed]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    assert not [f for f in files if str(f) in loops] and not any(f.exists() for f in files)


# -- a join failing through the state machine, on fresh hosts --------------------------------------

def occupy_the_group_port(agent: ClusterAgent) -> None:
    """Something else on n2's host listens on Galera's group communication port (4567) when its
    set-up runs: its server cannot start, for real."""
    out = agent.machine["n2"].run("systemd-run --unit=bf-squatter python3 -c \"import socket, time; "
                                  "s = socket.socket(); s.bind(('0.0.0.0', 4567)); s.listen(); time.sleep(3600)\" "
                                  "&& sleep 0.5 && systemctl is-active bf-squatter")
    assert out.stdout.strip() == "active", out.stdout + out.stderr


def test_a_node_whose_join_fails_fails_the_target_naming_it_and_teardown_runs(
        execution: Execution, fleet: Fleet) -> None:
    """A second execution of the spec on four fresh hosts, n2's server unable to start: the target
    fails at setup-n2 naming the node and the agent's reason, nothing is sent after it, and teardown
    leaves nothing (moto, then the hosts)."""
    h = execution.h
    agent = ClusterAgent(fleet, execution.agent.runner)
    agent.before["setup-n2"] = occupy_the_group_port
    h.agent = agent  # type: ignore[assignment]
    calls = len(h.calls)
    run_id = f"{RUN}-join-fails"
    # The SendTaskFailure step_callback sends (its cause: moto's history and Map errors leave it out).
    failures: list[dict[str, Any]] = []
    clients.override("stepfunctions", lambda: FaultProxy(boto3.client("stepfunctions", region_name=REGION),
                                                         faults={"send_task_failure": failures.append}))
    try:
        started = time.monotonic()
        result = h.run(SPEC, name=run_id, timeout_s=600)
        record("cluster_join_fails_execution_s", time.monotonic() - started)
    finally:
        clients.override("stepfunctions", None)
        agent.close()
    assert result["status"] == "FAILED", h.explain(result)
    assert [(s.step, s.status) for s in agent.sent] == [("setup-n1", "Success"), ("setup-n2", "Failed")]
    (failure,) = failures
    assert failure["error"] == "AgentFailed"
    cause = failure["cause"]
    assert cause.startswith("setup-n2 on n2") and "node n2" in cause, cause
    # The server's own first error about its group port: usually the bind's "Address already in use";
    # under load Galera's listener thread can die of it before the server reads that thread's
    # scheduling parameters, and the first error is then "failed to open gcomm backend connection: 3:
    # Failed to read thread schedparams" (seen once in a full suite run on a loaded machine).
    assert "Address already in use" in cause or "failed to open gcomm backend connection" in cause, cause
    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())
    (target,) = summary["targets"]
    assert "AgentFailed" in json.dumps(target["repetitions"][0]["error"])
    assert [c.module for c in h.calls[calls:]].count("teardown") == 1 and leftovers(run_id) == []
    assert not [m for m in agent.machine.values() if m in fleet.machines]
