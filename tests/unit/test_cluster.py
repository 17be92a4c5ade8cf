"""Galera clusters without servers: the spec keys, node and proxy configuration, the health check,
server status as rows and rates, the cluster's figures, its plan and its price (issue 25)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest
from tests.conftest import REPO

from benchfleet.cluster import galera, proxyconf
from benchfleet.cost.pricing import target_prices
from benchfleet.plan.estimates import LOCAL_CLUSTER_PROVISION_S
from benchfleet.plan.model import hosts_of, make_plan
from benchfleet.plan.scale import as_local
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import parse_spec, resolve
from benchfleet.spec.targets import is_cluster
from benchfleet.stats.status import cluster_table, counter_table
from benchfleet.workload import serverstatus
from benchfleet.workload.records import parse_agent_lines

sys.path.insert(0, str(REPO / "workloads" / "agent"))
import benchfleet_status

WORKLOAD = {"name": "w", "test": "oltp_read_write", "threads": [1, 4], "duration_s": 10, "warmup_s": 0,
            "tables": 1, "table_size": 1000}
BACKENDS = [proxyconf.Backend(n, f"10.0.0.{i}", 3306) for i, n in enumerate(("n1", "n2", "n3"))]
CLOUD = {"id": "pxc", "kind": "cluster", "flavor": "pxc-8.0", "instance_type": "r6i.large", "region": "us-east-1",
         "storage": {"type": "io2", "size_gb": 200, "iops": 10000}, "proxy": "proxysql"}


def spec(targets: list[dict[str, object]], **over: object):  # type: ignore[no-untyped-def]
    return parse_spec({"name": "c", "workload": WORKLOAD, "targets": targets, **over})


# ---- the spec --------------------------------------------------------------------------------------

def test_a_cluster_target_takes_defaults_and_the_proxy_shorthand() -> None:
    target = spec([CLOUD]).targets[0]
    assert (target.nodes, target.proxy.software, target.proxy.instance_type, target.client.instance_type) == (
        3, "proxysql", None, "c6i.xlarge")
    assert target.engine == "mysql-8.0" and is_cluster(target)
    own = spec([{**CLOUD, "proxy": {"software": "haproxy", "instance_type": "c6i.large"}}]).targets[0]
    assert own.proxy.instance_type == "c6i.large"
    local = spec([{"id": "g", "kind": "local", "cluster": {}}]).targets[0]
    assert (local.cluster.nodes, local.cluster.proxy) == (3, "haproxy") and is_cluster(local)
    assert not is_cluster(spec([{"id": "g", "kind": "local"}]).targets[0])


@pytest.mark.parametrize(("target", "field", "says"), [
    ({**CLOUD, "nodes": 4}, "targets[0].nodes", "odd number of nodes"),
    ({**CLOUD, "nodes": 11}, "targets[0].nodes", "3 to 9"),
    ({**CLOUD, "flavor": "galera-3"}, "targets[0].flavor", "mariadb-galera"),
    ({**CLOUD, "proxy": "nginx"}, "targets[0].proxy.software", "proxysql"),
    ({**CLOUD, "proxy": {"software": "none", "instance_type": "c6i.large"}}, "targets[0].proxy", "needs a proxy"),
    ({"id": "g", "kind": "local", "cluster": {"nodes": 2}}, "targets[0].cluster.nodes", "odd number"),
    ({"id": "g", "kind": "local", "cluster": {"proxy": "envoy"}}, "targets[0].cluster.proxy", "haproxy"),
])
def test_what_a_cluster_spec_refuses_names_the_field(target: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(SpecError) as e:
        spec([target])
    assert any(path == field and says in message for path, message in e.value.problems), e.value.problems


def test_status_counters_are_names_each_given_once() -> None:
    chosen = spec([{"id": "a", "kind": "local"}], status_counters=["Threads_running"]).status_counters
    assert chosen == ["Threads_running"]
    for bad, says in ((["Threads_running", "threads_RUNNING"], "named twice"), (["1x"], "pattern"),
                      (["a; DROP"], "pattern")):
        with pytest.raises(SpecError) as e:
            spec([{"id": "a", "kind": "local"}], status_counters=bad)
        assert e.value.problems[0][0].startswith("status_counters") and says in str(e.value), e.value


def test_counters_for_adds_the_cluster_set_once_and_keeps_the_choice() -> None:
    assert serverstatus.counters_for(None, False) == list(serverstatus.DEFAULT_COUNTERS)
    assert serverstatus.counters_for([], False) == []
    both = serverstatus.counters_for(["WSREP_CLUSTER_SIZE", "Threads_running"], True)
    assert both[:2] == ["WSREP_CLUSTER_SIZE", "Threads_running"]
    assert [c.lower() for c in both].count("wsrep_cluster_size") == 1
    assert set(galera.HEALTH_COUNTERS) <= {c.lower() for c in both}


# ---- nodes, proxies, health ------------------------------------------------------------------------

def test_node_options_make_a_galera_node_on_its_own_ports() -> None:
    nodes = [galera.NodeAddress(n, "127.0.0.1", 10 + i, 20 + i, 30 + i, 40 + i)
             for i, n in enumerate(galera.node_names(3))]
    options = dict(galera.node_options("mariadb-galera", "c-r1", nodes[1], nodes, gcache_mb=64))
    assert options["wsrep_cluster_address"] == "gcomm://127.0.0.1:20,127.0.0.1:21,127.0.0.1:22"
    assert options["wsrep_provider_options"] == '"gmcast.listen_addr=tcp://127.0.0.1:21;ist.recv_addr=127.0.0.1:31;gcache.size=64M"'
    assert (options["wsrep_node_name"], options["wsrep_sst_receive_address"], options["binlog_format"]) == (
        "n2", "127.0.0.1:41", "ROW")
    # What wsrep_incoming_addresses gossips: the client port (left to AUTO, MariaDB 10.11 said "AUTO"
    # for local nodes, which set bind-address, and port 0 elsewhere).
    assert options["wsrep_node_incoming_address"] == "127.0.0.1:11"
    host = galera.NodeAddress("n1", "10.0.1.5")
    pxc = dict(galera.node_options("pxc-8.0", "c", host, [host]))
    # On a host of its own a node listens on every address and uses the default ports.
    assert pxc["wsrep_provider_options"] == '"gmcast.listen_addr=tcp://0.0.0.0:4567;ist.recv_addr=10.0.1.5:4568"'
    assert (pxc["wsrep_sst_method"], pxc["pxc-encrypt-cluster-traffic"]) == ("xtrabackup-v2", "OFF")
    assert pxc["wsrep_node_incoming_address"] == "10.0.1.5:3306"
    assert "wsrep_on = ON\n" in galera.render_node(list(pxc.items()))


@pytest.mark.parametrize(("values", "problem"), [
    ({"wsrep_local_state": "4", "wsrep_cluster_size": "3", "wsrep_cluster_status": "Primary"}, None),
    (None, "n2 did not answer"),
    ({"wsrep_local_state": "1", "wsrep_cluster_size": "3"}, "n2 is Joining (wsrep_local_state 1)"),
    ({"wsrep_local_state": "4", "wsrep_cluster_size": "2"}, "n2 sees a cluster of 2 of 3 nodes"),
    ({"wsrep_local_state": "4", "wsrep_cluster_size": "3", "wsrep_cluster_status": "non-Primary"},
     "n2 is in a non-Primary component"),
    ({"version": "10.11"}, "n2 reports no wsrep_local_state (is it a Galera node?)"),
])
def test_node_problem_says_why_a_node_is_not_a_synced_member(values: dict[str, str] | None,
                                                             problem: str | None) -> None:
    assert galera.node_problem("n2", values, 3) == problem


def test_cluster_problem_names_every_node_in_order() -> None:
    synced = {"wsrep_local_state": "4", "wsrep_cluster_size": "2"}
    assert galera.cluster_problem({"n3": None, "n1": synced, "n2": synced}, 3) == (
        "n1 sees a cluster of 2 of 3 nodes; n2 sees a cluster of 2 of 3 nodes; n3 did not answer")


def test_haproxy_config_puts_one_writer_first_and_checks_every_backend() -> None:
    setup = proxyconf.ProxySetup("haproxy", "127.0.0.1", 3307, 3308, BACKENDS)
    text = proxyconf.render(setup)
    assert "balance first" in text and "stats socket ipv4@127.0.0.1:3308 level user" in text
    assert "server n1 10.0.0.0:3306 check inter 1s fall 2 rise 2\n" in text
    assert "server n2 10.0.0.1:3306 check inter 1s fall 2 rise 2 backup\n" in text
    assert f"option mysql-check user {proxyconf.CHECK_USER} post-41" in text


def test_proxysql_config_is_tuned_as_seed_002_says() -> None:
    setup = proxyconf.ProxySetup("proxysql", "0.0.0.0", 6033, 6032, BACKENDS)
    passwords = {"sbtest": "s3", "monitor": "m0", "admin": "a1", "stats": "st"}
    text = proxyconf.render(setup, "/var/lib/proxysql", passwords)
    assert "max_stmts_per_connection = 1000" in text and "connection_warming = true" in text
    assert f'admin_credentials = "{proxyconf.ADMIN_USER}:a1"' in text and "admin:admin" not in text
    assert f'monitor_username = "{proxyconf.MONITOR_USER}"' in text and 'monitor_password = "m0"' in text
    assert "max_writers = 1, writer_is_also_reader = 1" in text and "writer_hostgroup = 10" in text
    assert text.count("hostgroup = 10, max_connections") == 3 and 'interfaces = "0.0.0.0:6033"' in text
    fp = proxyconf.fingerprint(setup, "ProxySQL version 2.7.1")
    assert fp["proxy_settings"]["mysql-max_stmts_per_connection"] == "1000"
    # The fingerprint's hash leaves passwords out: two setups that differ only in them hash alike.
    assert fp["proxy_config_hash"] == proxyconf.fingerprint(setup, None)["proxy_config_hash"]
    sql = proxyconf.monitor_sql("m0", ["%"], "IDENTIFIED WITH mysql_native_password BY")
    user = f"'{proxyconf.MONITOR_USER}'@'%'"
    assert f"CREATE USER IF NOT EXISTS {user} IDENTIFIED WITH mysql_native_password BY 'm0';" in sql


def test_proxy_statistics_are_read_per_backend() -> None:
    stat = ("# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status\n"
            "galera,FRONTEND,,,4,4,8192,15,10,20,0,0,0,,,,,OPEN\n"
            "galera,n1,0,0,4,4,,15,10,20,,0,,0,0,0,0,UP\n"
            "galera,n2,0,0,0,0,,0,0,0,,0,,0,0,0,0,UP\n"
            "galera,BACKEND,0,0,4,4,8192,15,10,20,0,0,,0,0,0,0,UP\n")
    found = benchfleet_status.parse_haproxy_stat(stat, {"n1": "a:1", "n2": "b:1"})
    assert set(found) == {"n1", "n2"} and found["n1"]["stot"] == "15" and found["n1"]["status"] == "UP"
    pool = [["10.0.0.1", "3306", "ONLINE", "4", "0", "10", "0", "900", "1", "2", "350"],
            ["10.0.0.1", "3306", "ONLINE", "0", "2", "5", "1", "100", "1", "2", "350"],  # also a reader
            ["10.0.0.2", "3306", "SHUNNED", "0", "0", "0", "0", "0", "0", "0", "0"]]
    per = benchfleet_status.parse_proxysql_pool(pool, {"n1": "10.0.0.1:3306", "n2": "10.0.0.2:3306"})
    assert float(per["n1"]["Queries"]) == 1000 and float(per["n1"]["ConnERR"]) == 1
    assert per["n1"]["Latency_us"] == "350" and per["n2"]["status"] == "SHUNNED"


# ---- status rows -----------------------------------------------------------------------------------

def _status(second: float, source: str, values: dict[str, str] | None, step: str = "t0001") -> str:
    import json

    return json.dumps({"type": "status", "run_id": "r", "target_id": "g", "repetition": 1, "workload": "w",
                       "step": step, "phase": "measure", "threads": 1, "time": 1.7e9 + second, "second": second,
                       "source": source, "values": values, "error": None if values else "no answer in time"})


def test_status_records_become_values_and_rates_per_source() -> None:
    lines = [_status(0, "n1", {"wsrep_flow_control_paused_ns": "0", "wsrep_local_recv_queue": "0",
                               "wsrep_cluster_status": "Primary", "wsrep_local_state_comment": "Synced"}),
             _status(1, "n1", {"wsrep_flow_control_paused_ns": "250000000", "wsrep_local_recv_queue": "7",
                               "wsrep_cluster_status": "Primary", "wsrep_local_state_comment": "Synced"}),
             _status(1, "n2", None),
             _status(2, "n1", {"wsrep_flow_control_paused_ns": "100", "wsrep_local_recv_queue": "2"})]
    rows = parse_agent_lines("\n".join(lines)).status
    by = {(r.second, r.source, r.counter): r for r in rows}
    assert by[(1, "n1", "wsrep_flow_control_paused_ns")].rate == 250_000_000  # ns per second
    assert by[(1, "n1", "wsrep_local_recv_queue")].rate is None and by[(1, "n1", "wsrep_local_recv_queue")].value == 7
    assert by[(0, "n1", "wsrep_flow_control_paused_ns")].rate is None  # the baseline
    assert by[(2, "n1", "wsrep_flow_control_paused_ns")].rate is None  # went down: a restart, not a rate
    assert by[(1, "n1", "wsrep_cluster_status")].value == 1.0
    assert (1, "n1", "wsrep_local_state_comment") not in by  # words that are not states are not numbers
    assert by[(1, "n2", "answered")].value == 0 and by[(1, "n1", "answered")].value == 1
    with pytest.raises(Exception, match="status record needs a source"):
        parse_agent_lines(_status(0, "n1", {"a": "1"}).replace('"source": "n1", ', ""))


def test_cluster_figures_take_the_most_paused_node_and_sum_the_rest() -> None:
    def step(source: str, counter: str, rate: float | None, value: float | None = None, rep: int = 1,
             silent: int = 0) -> dict[str, object]:
        return {"target_id": "g", "threads": 4, "repetition": rep, "source": source, "counter": counter,
                "rate": rate, "value": value, "readings": 5, "silent": silent}

    rows = [step("n1", "wsrep_cluster_size", None, 3), step("n2", "wsrep_cluster_size", None, 3),
            step("n1", "wsrep_flow_control_paused_ns", 1e8), step("n2", "wsrep_flow_control_paused_ns", 3e8),
            step("n1", "wsrep_flow_control_sent", 0.5), step("n2", "wsrep_flow_control_sent", 1.5),
            step("n1", "wsrep_local_recv_queue", None, 1), step("n2", "wsrep_local_recv_queue", None, 4),
            step("n2", "answered", None, 0.8, silent=1), step("proxy/n1", "stot", 10),
            step("n1", "wsrep_cluster_size", None, 3, rep=2), step("n1", "wsrep_flow_control_paused_ns", 1e8, rep=2)]
    (row,) = cluster_table(rows)
    assert row["repetitions"] == 2
    # The most paused node per step (rep 1: n2's 3e8 ns/s, 30% of the time; rep 2: 10%), then the mean.
    assert row["fc_paused_pct"] == pytest.approx(20.0)
    assert row["fc_sent_per_s"] == pytest.approx(2.0) and row["recv_queue"] == 4.0
    assert row["unanswered"] == 0.5
    counters = {(r["source"], r["counter"]): r for r in counter_table(rows)}
    assert counters[("proxy/n1", "stot")]["per_s"] == 10 and ("n2", "answered") not in counters
    assert cluster_table([step("server", "Threads_running", None, 2)]) == []  # not a cluster


# ---- plan, price, stand-ins --------------------------------------------------------------------------

def test_a_cloud_cluster_counts_every_host_and_its_price() -> None:
    target = spec([{**CLOUD, "proxy": {"software": "proxysql", "instance_type": "c6i.large"}}]).targets[0]
    assert [h.instance_type for h in hosts_of(target)] == ["r6i.large"] * 3 + ["c6i.xlarge", "c6i.large"]
    tp = target_prices(target)
    lines = {line.item: line for line in tp.lines}
    node = target_prices(spec([{"id": "e", "kind": "ec2", "instance_type": "r6i.large", "region": "us-east-1",
                                "storage": {"type": "io2", "size_gb": 200, "iops": 10000}}]).targets[0])
    one = {line.item: line.usd_per_hour["on_demand"] for line in node.lines}
    assert lines["nodes"].quantity == 3
    assert lines["nodes"].usd_per_hour["on_demand"] == pytest.approx(3 * one["instance"])
    assert lines["storage"].usd_per_hour["on_demand"] == pytest.approx(3 * one["storage"])
    assert lines["iops"].usd_per_hour["on_demand"] == pytest.approx(3 * one["iops"])
    assert lines["proxy"].serving and not lines["client"].serving
    # Cross-zone traffic is billed by use: before the run its line is pending, None, in no total.
    assert lines["cross_zone"].basis == "pending" and lines["cross_zone"].serving
    assert set(lines["cross_zone"].usd_per_hour.values()) == {None} and "after the run" in lines["cross_zone"].what
    assert tp.total("on_demand") == pytest.approx(sum(line.usd_per_hour["on_demand"] or 0.0 for line in tp.lines))
    # Reserved pricing lowers the nodes and the proxy, never the provisioned IOPS.
    assert lines["iops"].usd_per_hour["reserved_1y_all_upfront"] == lines["iops"].usd_per_hour["on_demand"]
    on_client = target_prices(spec([CLOUD]).targets[0])
    assert "proxy" not in {line.item for line in on_client.lines}
    assert any("client host" in note for note in on_client.notes)


def test_smoke_local_maps_a_cloud_cluster_to_a_local_one() -> None:
    loaded = resolve(spec([CLOUD, {"id": "e", "kind": "ec2", "instance_type": "m6i.large"}]), "c")
    local = as_local(loaded)
    cluster, server = local.spec.targets
    assert cluster.kind == "local" and cluster.cluster.nodes == 3 and cluster.cluster.proxy == "proxysql"
    assert server.cluster is None
    plan = make_plan(local)
    assert plan.targets[0].provision_s == LOCAL_CLUSTER_PROVISION_S and plan.targets[0].hosts == []


def test_a_local_cluster_this_machine_cannot_run_is_refused_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from benchfleet.local import galera as local_galera
    from benchfleet.local.preflight import cluster_problems

    target = spec([{"id": "g", "kind": "local", "cluster": {"proxy": "proxysql"}}]).targets[0]
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name in ("proxysql", "rsync") else real(name))
    monkeypatch.setattr(local_galera.shutil, "which", shutil.which)
    problems = dict(cluster_problems(target, 0))
    assert "proxysql is not on the PATH" in problems["targets[0].cluster.proxy"]
    assert "ProxySQL's own apt repository" in problems["targets[0].cluster.proxy"]
    assert "rsync" in problems["targets[0].cluster"]


def test_status_rows_keep_their_time(tmp_path: object) -> None:
    (row, *_rest) = parse_agent_lines(_status(1, "n1", {"Threads_running": "3"})).status
    assert row.time == datetime.fromtimestamp(1.7e9 + 1, UTC) and row.value == 1.0  # 'answered' first
