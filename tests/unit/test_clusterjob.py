"""The cluster's agent-job contract (benchfleet.cluster.jobs): what each builder produces, and that the
client's steps built with it pass the agent's own job check (workloads/agent/benchfleet_job.py)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.agent_modules import load

from benchfleet.aws.fleet import cluster
from benchfleet.cluster import galera, proxyconf
from benchfleet.cluster import jobs as clusterjob
from benchfleet.plan import naming
from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.estimates import cluster_setup_hosts
from benchfleet.plan.model import PlanStep, hosts_of
from benchfleet.spec.loading import parse_spec
from benchfleet.spec.workload import Workload
from benchfleet.workload import serverstatus

NODES = [("n1", "10.0.1.5"), ("n2", "10.0.2.6"), ("n3", "10.0.3.7")]
ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:bf-run1-c1-r1-AbCdEf"
IDS: dict[str, Any] = {"run_id": "run1", "target_id": "c1", "repetition": 1}
jobcheck = load("benchfleet_job")


def node(name: str, **extra: Any) -> dict[str, Any]:
    host = dict(NODES)[name]
    return clusterjob.node_job(**IDS, flavor="mariadb-galera", cluster_name="bf-run1-c1-r1", node=name, host=host,
                               nodes=NODES, mysql_config="cpu-bound", cnf="[mysqld]\nmax_connections = 500\n",
                               password_secret_arn=ARN, **extra)


def test_node_jobs_bootstrap_on_the_first_node_only_and_name_every_node() -> None:
    jobs = [node(n) for n, _ in NODES]
    assert [j["setup"]["bootstrap"] for j in jobs] == [True, False, False]
    first = jobs[0]
    assert first["step"] == {"name": "setup-n1", "kind": "setup", "threads": 1, "duration_s": 0}
    assert first["setup"]["nodes"] == [{"name": n, "host": h} for n, h in NODES]
    assert (first["setup"]["node"], first["setup"]["host"]) == ("n1", "10.0.1.5")
    assert first["setup"]["synced_timeout_s"] == clusterjob.SYNCED_TIMEOUT_S
    assert first["setup"]["password_secret_arn"] == ARN
    assert "password" not in first["setup"]  # never a password in a job: SSM keeps parameters
    storage = {"type": "gp3", "count": 2, "raid": 0, "filesystem": "xfs", "mount_options": "noatime"}
    assert node("n2", storage=storage, memory_mb=2048)["setup"]["storage"] == storage


@pytest.mark.parametrize(("change", "said"), [
    ({"flavor": "galera-3"}, "flavor 'galera-3'"),
    ({"node": "n4"}, "node 'n4' is not one of"),
    ({"nodes": [("n1", "10.0.1.5"), ("n1", "10.0.2.6")]}, "its own name and address"),
    # Galera's handshake carries 32 characters of the name: a longer one lets no node join
    ({"cluster_name": "bf-" + "7c8e747fdbc99fcf3936e2cde4fcd494"}, "1 to 32 characters"),
])
def test_node_job_refuses_what_cannot_form_a_cluster(change: dict[str, Any], said: str) -> None:
    args: dict[str, Any] = {**IDS, "flavor": "mariadb-galera", "cluster_name": "c", "node": "n1",
                            "host": "10.0.1.5", "nodes": NODES, "mysql_config": "x", "cnf": "",
                            "password_secret_arn": ARN, **change}
    with pytest.raises(ValueError, match=said):
        clusterjob.node_job(**args)


def test_proxy_job_fronts_every_node_with_the_first_as_writer() -> None:
    job = clusterjob.proxy_job(**IDS, software="haproxy", nodes=NODES, password_secret_arn=ARN)
    setup = job["setup"]
    assert job["step"]["kind"] == "setup"
    assert setup["backends"] == [{"name": n, "host": h, "port": 3306} for n, h in NODES]
    assert (setup["writer"], setup["writes"]) == ("n1", "one")
    assert (setup["listen_port"], setup["admin_port"]) == (proxyconf.LISTEN_PORT["haproxy"],
                                                           proxyconf.ADMIN_PORT["haproxy"])
    assert setup["monitor_user"] == proxyconf.MONITOR_USER
    with pytest.raises(ValueError, match="proxy 'none'"):
        clusterjob.proxy_job(**IDS, software="none", nodes=NODES, password_secret_arn=ARN)


@pytest.mark.parametrize(("route", "proxy", "where"), [
    ("direct", "haproxy", ("10.0.1.5", 3306)),
    ("proxy", "haproxy", ("127.0.0.1", proxyconf.LISTEN_PORT["haproxy"])),
    ("proxy", "proxysql", ("127.0.0.1", proxyconf.LISTEN_PORT["proxysql"])),
    ("direct", "none", ("10.0.1.5", 3306)),
])
def test_client_steps_connect_by_route_and_pass_the_agents_check(route: str, proxy: str,
                                                                 where: tuple[str, int]) -> None:
    db = clusterjob.client_db(route, NODES, ARN, proxy)
    assert (db["host"], db["port"]) == where
    assert db["password_secret_arn"] == ARN and "password" not in db
    status = clusterjob.client_status({"counters": ["wsrep_flow_control_paused"], "interval_s": 1}, NODES, proxy)
    assert status["cluster_nodes"] == 3
    assert [s["name"] for s in status["sources"] if s["kind"] == "mysql"] == ["n1", "n2", "n3"]
    proxies = [s for s in status["sources"] if s["kind"] != "mysql"]
    assert [s["kind"] for s in proxies] == ([] if proxy == "none" else [proxy])
    if proxy == "proxysql":
        assert proxies[0]["password_file"] == proxyconf.PROXY_PASSWORD_FILE and "password" not in proxies[0]
    workload = Workload(name="w", test="oltp_read_write")
    step = PlanStep(index=1, name="t0004", kind="measure", threads=4, duration_s=10, variant=route)
    job = agent_job(**IDS, workload=workload, step=step, db=db, status=status)
    assert jobcheck.check_job(job) == "measure"


def test_route_proxy_without_a_proxy_is_refused() -> None:
    with pytest.raises(ValueError, match="route proxy needs a proxy"):
        clusterjob.client_db("proxy", NODES, ARN, "none")
    with pytest.raises(ValueError, match="route 'both'"):
        clusterjob.client_db("both", NODES, ARN, "haproxy")


def test_joins_one_at_a_time_wait_for_their_own_size_and_a_proxy_host_of_its_own_is_reached() -> None:
    """cluster-fleet's state machine joins the nodes one after another (node k waits to be Synced in
    a cluster of k), and a proxy with its own host is reached at that host's address."""
    assert [node(n)["setup"]["expected_size"] for n, _ in NODES] == [3, 3, 3]  # default: every node
    assert [node(n, expected_size=k)["setup"]["expected_size"] for k, (n, _) in enumerate(NODES, 1)] == [1, 2, 3]
    with pytest.raises(ValueError, match="expected_size 4"):
        node("n1", expected_size=4)
    db = clusterjob.client_db("proxy", NODES, ARN, "haproxy", own_host="10.0.1.9")
    assert (db["host"], db["port"]) == ("10.0.1.9", proxyconf.LISTEN_PORT["haproxy"])
    status = clusterjob.client_status({"counters": ["Threads_running"]}, NODES, "haproxy", own_host="10.0.1.9")
    assert status["sources"][-1]["host"] == "10.0.1.9"
    # It listens there, and its statistics are read from the client with the secret's password.
    own = clusterjob.proxy_job(**IDS, software="proxysql", nodes=NODES, password_secret_arn=ARN, own_host="10.0.1.9")
    beside = clusterjob.proxy_job(**IDS, software="proxysql", nodes=NODES, password_secret_arn=ARN)
    assert [(j["setup"]["listen_host"], j["setup"]["stats_password"]) for j in (own, beside)] == [
        ("10.0.1.9", "secret"), ("127.0.0.1", "generated")]
    sources = [clusterjob.client_status({"counters": []}, NODES, "proxysql", own_host=h)["sources"][-1]
               for h in ("10.0.1.9", None)]
    assert [s.get("password_file") for s in sources] == [None, proxyconf.PROXY_PASSWORD_FILE]
    assert {s["user"] for s in sources} == {proxyconf.STATS_USER}


@pytest.mark.parametrize(("proxy", "own"), [("proxysql", False), ("none", False),
                                            ({"software": "haproxy", "instance_type": "c6i.large"}, True)])
def test_whether_the_proxy_has_a_host_of_its_own_is_one_test_the_plan_provision_and_the_jobs_share(
        proxy: Any, own: bool) -> None:
    """clusterjob.proxy_has_host, on the spec's model and on the JSON the state machine carries alike:
    provision launches the host, the plan counts it and sets the proxy up there exactly when it says so."""
    workload = {"name": "w", "test": "oltp_read_write", "threads": [1], "duration_s": 10, "tables": 1,
                "table_size": 1000}
    target = parse_spec({"name": "c", "workload": workload, "targets": [
        {"id": "c1", "kind": "cluster", "instance_type": "r6i.large", "proxy": proxy}]}).targets[0]
    dumped = target.model_dump(mode="json")
    assert clusterjob.proxy_has_host(target.proxy) is clusterjob.proxy_has_host(dumped["proxy"]) is own
    assert ("proxy" in cluster.host_roles(dumped), "proxy" in cluster_setup_hosts(target)) == (own, own)
    assert len(hosts_of(target)) == target.nodes + 1 + own


def test_a_clusters_name_fits_galeras_handshake_and_differs_per_repetition() -> None:
    names = {naming.cluster_name("run-1", "pxc", rep) for rep in (1, 2)}
    assert len(names) == 2 and all(len(n) == galera.MAX_CLUSTER_NAME for n in names)
    # The name start_step gave before it moved here: the same per repetition, so a run's jobs keep it.
    assert naming.cluster_name("run-1", "pxc", 1) == naming.client_token("run-1", "pxc", 1, 0, "cluster")[:32]


def test_a_clusters_secrets_are_named_by_naming_and_only_those_names_are_the_runs() -> None:
    """naming.cluster_secret_name is the one rule: provision names the secrets with it (the deployment's
    grants cover benchfleet/*, tests/synthesized), and the sweepers take a secret tagged with a run for
    that run's only when its name is one this gives a host that reads it (aws.fleet.cluster.secret_named)."""
    name = naming.cluster_secret_name("run-1", "pxc", 2, "client")
    assert name == "benchfleet/run-1/pxc/rep-2/client"  # the name provision gave before it moved here
    assert naming.cluster_secret_role(name, "run-1", "pxc") == "client"
    for other in ("benchfleet/run-1/pxc/rep-02/client", "benchfleet/run-2/pxc/rep-2/client",
                  "benchfleet/run-1/pxc-b/rep-2/client", "benchfleet/run-1/pxc/rep-2/client/x",
                  "run-1/pxc/rep-2/client"):
        assert naming.cluster_secret_role(other, "run-1", "pxc") is None, other
    assert [cluster.secret_named(naming.cluster_secret_name("run-1", "pxc", 1, role), "run-1", "pxc")
            for role in ("n1", "client", "proxy", "n2")] == [True, True, True, False]  # n2 reads no secret
    assert not cluster.secret_named(name, "run-1", None)


@pytest.mark.parametrize("proxy", ["none", "haproxy", "proxysql"])
def test_a_clusters_status_sources_are_one_definition_the_job_and_the_row_check_share(proxy: str) -> None:
    """serverstatus.target_sources names the job's sources (the client reads each) and is what collect
    and the local runner check the rows against; the proxy's rows are one per backend."""
    names = [s["name"] for s in clusterjob.client_status({"counters": []}, NODES, proxy)["sources"]]
    assert names == serverstatus.target_sources(3, proxy) == ["n1", "n2", "n3", *(["proxy"] if proxy != "none" else [])]
    rows = {source for source, _ in serverstatus.series(["Threads_running"], 3, proxy)}
    assert rows == {"n1", "n2", "n3", *serverstatus.backend_sources(3, proxy)}
    assert serverstatus.backend_sources(3, proxy) == ([] if proxy == "none" else ["proxy/n1", "proxy/n2", "proxy/n3"])
    assert serverstatus.source_problem(rows, 3, proxy) is None
    assert serverstatus.target_sources() == ["server"] and {s for s, _ in serverstatus.series(["x"])} == {"server"}
