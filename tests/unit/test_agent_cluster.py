"""The agent's set-up of a cluster's hosts (workloads/agent/benchfleet_cluster.py) against fake
apt-get / systemctl / mysql / curl on PATH: the commands each flavor and proxy runs (Percona's and
ProxySQL's packages cannot be installed here), the node's cnf, the users, the wait for Synced and
every failure naming the node (or the package and stage) and the reason."""

from __future__ import annotations

import json
import socket
import socketserver
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent_modules import imported, load

from benchfleet.cluster import jobs as clusterjob
from benchfleet.cluster import proxyconf

# The agent's run (its set-up step) and the modules it imported, as the agent imports them (one
# InstallError class for the agent, the set-up and the test).
running = imported("benchfleet_run")
install, cluster = running.benchfleet_install, running.benchfleet_cluster
jobcheck, emitting = load("benchfleet_job"), load("benchfleet_emit")

ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:bf-r1-c1-1-AbCdEf"
SECRET = "s3cret-from-the-secret"
NODES = [("n1", "10.0.1.5"), ("n2", "10.0.2.6"), ("n3", "10.0.3.7")]
IDS: dict[str, Any] = {"run_id": "r1", "target_id": "c1", "repetition": 1}
CNF = "[mysqld]\ninnodb_buffer_pool_size = 50%\nmax_connections = 500\n"

# Every command logs its argv; mysql answers SHOW GLOBAL STATUS from the queue in $FAKE_DIR/states
# ("<local_state> <size> <status>" per reading, the last one repeated) and logs other SQL.
SCRIPT = """#!/bin/sh
printf '%s' "$(basename "$0")" >> "$FAKE_DIR/calls.log"
for a in "$@"; do printf ' %s' "$a" >> "$FAKE_DIR/calls.log"; done
printf '\\n' >> "$FAKE_DIR/calls.log"
case "$(basename "$0")" in
  dpkg-query) for a in "$@"; do pkg="$a"; done
    grep -qx "$pkg" "$FAKE_DIR/installed" 2>/dev/null && { printf 'install ok installed'; exit 0; }; exit 1 ;;
  apt-get) case "$*" in *" install "*) [ -f "$FAKE_DIR/apt-fail" ] && { echo "E: Unable to locate package" >&2
      exit 100; } ;; esac; exit 0 ;;
  curl) [ -f "$FAKE_DIR/curl-fail" ] && { echo "curl: (6) Could not resolve host" >&2; exit 6; }; exit 0 ;;
  lsb_release) echo bookworm ;;
  systemctl) [ "$1" = is-failed ] && { cat "$FAKE_DIR/failed" 2>/dev/null || echo active; exit 0; }; exit 0 ;;
  haproxy) echo "HAProxy version 2.6.12-1+deb12u1 2023/12/16" ;;
  mysql) sql="$(cat)"
    case "$sql" in
      "SHOW GLOBAL STATUS"*) line="$(head -n 1 "$FAKE_DIR/states")"
        [ "$(wc -l < "$FAKE_DIR/states")" -gt 1 ] && sed -i 1d "$FAKE_DIR/states"
        set -- $line
        printf 'wsrep_local_state\\t%s\\nwsrep_cluster_size\\t%s\\nwsrep_cluster_status\\t%s\\n' "$1" "$2" "$3" ;;
      "SHOW GLOBAL VARIABLES"*) cat "$FAKE_DIR/variables" 2>/dev/null ;;
      *) printf '%s\\n' "$sql" >> "$FAKE_DIR/sql.log" ;;
    esac ;;
esac
exit 0
"""
COMMANDS = ("apt-get", "dpkg", "dpkg-query", "systemctl", "mysql", "galera_new_cluster", "curl", "percona-release",
            "lsb_release", "haproxy", "proxysql")


class Host:
    def __init__(self, tmp: Path) -> None:
        self.root, self.fake, bin_dir = tmp / "root", tmp / "fake", tmp / "bin"
        for d in (bin_dir, self.root / "proc", self.root / "etc/mysql/mariadb.conf.d",
                  self.root / "etc/mysql/mysql.conf.d", self.root / "etc/haproxy", self.fake):
            d.mkdir(parents=True)
        (self.root / "proc/meminfo").write_text("MemTotal:        8000000 kB\n")
        for name in COMMANDS:
            (bin_dir / name).write_text(SCRIPT)
            (bin_dir / name).chmod(0o755 | stat.S_IEXEC)
        self.env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_DIR": str(self.fake)}
        self.records: list[dict[str, Any]] = []
        self.states("4 1 Primary")
        self.clock = 0.0

    def states(self, *lines: str) -> None:
        (self.fake / "states").write_text("\n".join(lines) + "\n")

    def emit(self, kind: str, **fields: Any) -> None:
        self.records.append({"type": kind, **fields})

    def installer(self) -> Any:
        def sleep(seconds: float) -> None:
            self.clock += seconds

        return install.Installer(self.emit, root=str(self.root), env=self.env, sleep=sleep, clock=lambda: self.clock)

    def calls(self) -> list[str]:
        log = self.fake / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def run(self, setup: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = cluster.run(setup, self.emit, lambda arn: SECRET if arn == ARN else "",
                                             self.installer())
        return result


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def node_setup(name: str, flavor: str = "mariadb-galera", **extra: Any) -> dict[str, Any]:
    job = clusterjob.node_job(**IDS, flavor=flavor, cluster_name="bf-r1-c1-1", node=name, host=dict(NODES)[name],
                              nodes=NODES, mysql_config="cpu-bound", cnf=CNF, password_secret_arn=ARN,
                              synced_timeout_s=5, **extra)
    assert jobcheck.check_job(job) == "setup"  # what the agent accepts is what the contract builds
    setup: dict[str, Any] = job["setup"]
    return setup


def test_the_first_node_installs_bootstraps_and_creates_the_users_from_the_secret(host: Host) -> None:
    done = host.run(node_setup("n1"))
    calls = host.calls()
    install_line = next(c for c in calls if c.startswith("apt-get") and " install " in c)
    assert install_line.endswith("mariadb-server galera-4 rsync python3-boto3")
    # The package's standalone server is stopped before the node's cnf, then the cluster bootstrapped.
    assert calls.index("systemctl stop mariadb") < calls.index("galera_new_cluster")
    assert calls.index("systemctl disable --now mariadb.socket") < calls.index("galera_new_cluster")
    cnf = (host.root / "etc/mysql/mariadb.conf.d/zz-benchfleet-node.cnf").read_text()
    assert "innodb_buffer_pool_size = 3906M" in cnf  # the target's cnf, rendered for this host
    for line in ("wsrep_cluster_address = gcomm://10.0.1.5:4567,10.0.2.6:4567,10.0.3.7:4567",
                 "wsrep_node_name = n1", "wsrep_node_address = 10.0.1.5:4567", "wsrep_sst_method = rsync",
                 "wsrep_node_incoming_address = 10.0.1.5:3306",
                 "bind-address = 10.0.1.5", "log_error = /var/log/mysql/error.log"):
        assert line in cnf
    assert cnf.index("innodb_buffer_pool_size") < cnf.index("wsrep_on") < cnf.index("bind-address")
    sql = (host.fake / "sql.log").read_text()
    assert f"CREATE USER IF NOT EXISTS 'sbtest'@'%' IDENTIFIED BY '{SECRET}'" in sql
    assert f"'{proxyconf.MONITOR_USER}'@'%' IDENTIFIED BY '{SECRET}'" in sql
    assert f"'{proxyconf.CHECK_USER}'@'%'" in sql
    assert all(SECRET not in c for c in calls) and all(SECRET not in json.dumps(r) for r in host.records)
    assert done["state"] == "Synced" and done["node"] == "n1" and len(done["config_hash"]) == 64
    assert host.records[-1]["type"] == "setup"


def test_a_node_whose_server_does_not_run_the_targets_settings_fails_naming_them(host: Host) -> None:
    """Issue 41 item 11: a node's server that ran max_connections 214 where the cnf asked 500 joined,
    and the cluster was measured as the spec's. Now its set-up fails naming the node and the setting;
    the buffer pool rounded to its chunk size is the server's documented adjustment, not a failure."""
    (host.fake / "variables").write_text("max_connections\t214\ninnodb_buffer_pool_size\t4160749568\n"
                                         "innodb_buffer_pool_chunk_size\t134217728\nwsrep_on\tON\n")
    with pytest.raises(cluster.ClusterSetupError) as e:
        host.run(node_setup("n1"))
    assert str(e.value) == ("node n1: its server does not run with what the target asks for, so nothing is "
                            "measured: max_connections asked 500, the server runs 214")
    assert e.value.fields["settings"] == [{"option": "max_connections", "requested": "500", "effective": "214"}]
    (host.fake / "variables").write_text("max_connections\t500\ninnodb_buffer_pool_size\t4160749568\n"
                                         "innodb_buffer_pool_chunk_size\t134217728\n")
    assert host.run(node_setup("n1"))["state"] == "Synced"


def test_a_joiner_starts_without_waiting_and_returns_once_synced_at_full_size(host: Host) -> None:
    host.states("", "1 3 Primary", "3 3 Primary", "4 2 Primary", "4 3 Primary")
    done = host.run(node_setup("n2"))
    calls = host.calls()
    assert "systemctl restart --no-block mariadb" in calls and "galera_new_cluster" not in calls
    assert not (host.fake / "sql.log").exists()  # the users arrive with the state transfer
    assert "python3-boto3" not in " ".join(calls)
    assert (done["cluster_size"], host.clock) == (3, 4.0)  # four readings short of Synced at full size
    host.states("1 1 Primary", "4 2 Primary")  # the second node of a cluster joined one node at a time
    assert host.run(node_setup("n2", expected_size=2))["cluster_size"] == 2


def test_a_joiner_whose_state_transfer_fails_names_the_node_and_the_logs_reason(host: Host) -> None:
    host.states("1 3 Primary")
    log = host.root / "var/log/mysql/error.log"
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-27  2:10:01 0 [Note] WSREP: Requesting state transfer\n"
                   "2026-11-27  2:10:03 0 [ERROR] WSREP: Failed to read 'ready <addr>' from: wsrep_sst_rsync\n"
                   "2026-11-27  2:10:03 0 [ERROR] Aborting\n")
    with pytest.raises(cluster.ClusterSetupError) as failed:
        host.run(node_setup("n3"))
    message = str(failed.value)
    assert message.startswith("bf-r1-c1-1: node n3 did not join the cluster: its state transfer failed: ")
    assert "Failed to read 'ready <addr>'" in message and failed.value.fields["node"] == "n3"
    assert "Aborting" in failed.value.fields["log_tail"]


def test_a_joiner_stuck_short_of_synced_fails_at_its_timeout_with_its_state(host: Host) -> None:
    host.states("3 3 Primary")
    with pytest.raises(cluster.ClusterSetupError, match=r"node n2 was not Synced within 5 s: n2 is Joined "
                                                        r"\(wsrep_local_state 3\)"):
        host.run(node_setup("n2"))
    host.states("4 2 Primary")
    (host.fake / "failed").write_text("failed\n")
    with pytest.raises(cluster.ClusterSetupError, match="node n2 did not join the cluster: its server exited"):
        host.run(node_setup("n2"))


def test_pxc_comes_from_perconas_repository_and_bootstraps_with_its_unit(host: Host) -> None:
    host.run(node_setup("n1", flavor="pxc-8.0"))
    calls = host.calls()
    steps = [c.split()[0] for c in calls if c.startswith(("curl", "dpkg -i", "percona-release"))]
    assert steps == ["curl", "dpkg", "percona-release", "percona-release"]
    assert f"percona-release enable-only {cluster.PERCONA_REPOSITORY} release" in calls
    updates = [i for i, c in enumerate(calls) if c.startswith("apt-get") and c.endswith("update -q")]
    enabled = calls.index(f"percona-release enable-only {cluster.PERCONA_REPOSITORY} release")
    assert any(i > enabled for i in updates)  # the repository's lists are read before the install
    assert any(c.endswith("install -y -q --no-install-recommends percona-xtradb-cluster python3-boto3")
               for c in calls)
    assert "systemctl start mysql@bootstrap.service" in calls and "systemctl stop mysql" in calls
    cnf = (host.root / "etc/mysql/mysql.conf.d/zz-benchfleet-node.cnf").read_text()
    assert "wsrep_sst_method = xtrabackup-v2" in cnf and "pxc-encrypt-cluster-traffic = OFF" in cnf
    assert "IDENTIFIED WITH mysql_native_password BY" in (host.fake / "sql.log").read_text()


def test_a_failed_install_names_the_node_and_the_package_stage(host: Host) -> None:
    (host.fake / "apt-fail").write_text("")
    with pytest.raises(cluster.ClusterSetupError, match="node n2: installing mariadb-galera failed: apt-get install"):
        host.run(node_setup("n2"))


# A proxy host's private address here: any 127/8 address is this machine's, and is not the client's loopback.
OWN_HOST = "127.0.0.2"


@pytest.fixture
def fake_haproxy(request: pytest.FixtureRequest) -> Iterator[tuple[int, int, list[str]]]:
    """A listener and a stats socket answering ``show stat`` with the backends' states (``states``),
    on loopback or (indirect parameter) another address."""
    address = getattr(request, "param", "127.0.0.1")
    states = ["UP", "UP", "UP"]

    class Stats(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(100)
            rows = "".join(f"galera,{n},0,0,0,0,,0,{s}\n" for (n, _), s in zip(NODES, states, strict=True))
            self.request.sendall(("# pxname,svname,qcur,qmax,scur,smax,slim,stot,status\n" + rows).encode())

    servers = [socketserver.TCPServer((address, 0), socketserver.BaseRequestHandler),
               socketserver.TCPServer((address, 0), Stats)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1], states
    for s in servers:
        s.shutdown()
        s.server_close()


def proxy_setup(software: str, listen: int = 1, admin: int = 2, timeout_s: int = 3,
                own_host: str | None = None) -> dict[str, Any]:
    job = clusterjob.proxy_job(**IDS, software=software, nodes=NODES, password_secret_arn=ARN, timeout_s=timeout_s,
                               own_host=own_host)
    job["setup"].update(listen_port=listen, admin_port=admin)
    assert jobcheck.check_job(job) == "setup"
    setup: dict[str, Any] = job["setup"]
    return setup


def test_haproxy_is_configured_started_and_awaited_until_every_backend_is_up(
        host: Host, fake_haproxy: tuple[int, int, list[str]]) -> None:
    listen, admin, states = fake_haproxy
    done = host.run(proxy_setup("haproxy", listen, admin))
    config = (host.root / "etc/haproxy/haproxy.cfg").read_text()
    assert f"bind 127.0.0.1:{listen}" in config
    assert "server n2 10.0.2.6:3306 check inter 1s fall 2 rise 2 backup" in config
    assert "systemctl restart haproxy" in host.calls()
    assert done["proxy"] == "haproxy" and done["proxy_version"].startswith("HAProxy version 2.6")
    assert done["proxy_config_hash"] == proxyconf.fingerprint(
        proxyconf.ProxySetup("haproxy", "127.0.0.1", listen, admin,
                             [proxyconf.Backend(n, h, 3306) for n, h in NODES]), None)["proxy_config_hash"]
    states[2] = "DOWN"
    with pytest.raises(cluster.ClusterSetupError, match=r"proxy haproxy does not see backend\(s\) n3 up within 3 s"):
        host.run(proxy_setup("haproxy", listen, admin))


def test_proxysql_comes_from_its_repository_with_generated_admin_passwords(host: Host) -> None:
    with socket.socket() as taken:  # a port that answers, so the wait is over at once
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        host.run(proxy_setup("proxysql", taken.getsockname()[1]))
    calls = host.calls()
    assert any(c.startswith("curl") and c.endswith(cluster.PROXYSQL_KEY_URL) for c in calls)
    listed = (host.root / cluster.PROXYSQL_LIST.lstrip("/")).read_text()
    assert listed == f"deb [signed-by={cluster.PROXYSQL_KEY}] " + cluster.PROXYSQL_REPOSITORY.format(
        codename="bookworm") + "\n"
    assert any(c.endswith("--no-install-recommends proxysql") for c in calls)
    kept = json.loads((host.root / proxyconf.PROXY_PASSWORD_FILE.lstrip("/")).read_text())
    assert oct((host.root / proxyconf.PROXY_PASSWORD_FILE.lstrip("/")).stat().st_mode & 0o777) == "0o600"
    config = (host.root / "etc/proxysql.cnf").read_text()
    assert f'admin_credentials = "{proxyconf.ADMIN_USER}:{kept["admin"]}"' in config
    assert f'monitor_password = "{SECRET}"' in config and "max_stmts_per_connection = 1000" in config
    assert oct((host.root / "etc/proxysql.cnf").stat().st_mode & 0o777) == "0o640"


@pytest.mark.parametrize("fake_haproxy", [OWN_HOST], indirect=True)
def test_haproxy_on_a_host_of_its_own_listens_and_serves_its_stats_on_that_hosts_address(
        host: Host, fake_haproxy: tuple[int, int, list[str]]) -> None:
    """The job's listen_host (the proxy host's private address) is where HAProxy binds its listener and
    its read-only stats socket (the client reads it), and where the set-up waits for every backend."""
    listen, admin, _ = fake_haproxy
    setup = proxy_setup("haproxy", listen, admin, own_host=OWN_HOST)
    assert (setup["listen_host"], setup["stats_password"]) == (OWN_HOST, "secret")
    done = host.run(setup)
    config = (host.root / "etc/haproxy/haproxy.cfg").read_text()
    assert f"    bind {OWN_HOST}:{listen}\n" in config
    assert f"    stats socket ipv4@{OWN_HOST}:{admin} level user\n" in config
    assert "127.0.0.1" not in config
    calls = host.calls()
    assert any(c.endswith("--no-install-recommends haproxy") for c in calls) and "systemctl restart haproxy" in calls
    assert done["proxy_config_hash"] == proxyconf.fingerprint(
        proxyconf.ProxySetup("haproxy", OWN_HOST, listen, admin,
                             [proxyconf.Backend(n, h, 3306) for n, h in NODES]), None)["proxy_config_hash"]


def test_proxysql_on_a_host_of_its_own_binds_that_address_and_its_stats_user_has_the_secrets_password(
        host: Host) -> None:
    """The client reads ProxySQL's statistics over the network with the secret it already reads; the
    admin password is still made on the proxy host and never leaves it."""
    with socket.socket() as taken:
        taken.bind((OWN_HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        host.run(proxy_setup("proxysql", port, 6032, own_host=OWN_HOST))
    config = (host.root / "etc/proxysql.cnf").read_text()
    kept = json.loads((host.root / proxyconf.PROXY_PASSWORD_FILE.lstrip("/")).read_text())
    assert f'    interfaces = "{OWN_HOST}:{port}"\n' in config and f'    mysql_ifaces = "{OWN_HOST}:6032"\n' in config
    assert f'stats_credentials = "{proxyconf.STATS_USER}:{SECRET}"' in config
    assert f'admin_credentials = "{proxyconf.ADMIN_USER}:{kept["admin"]}"' in config and kept["admin"] != SECRET
    assert "127.0.0.1" not in config
    assert "systemctl restart proxysql" in host.calls()
    bad = proxy_setup("proxysql", port, own_host=OWN_HOST)
    with pytest.raises(jobcheck.JobError, match=r"setup\.stats_password must be generated or secret"):
        jobcheck.check_job({**IDS, "step": {"name": "setup-proxy", "kind": "setup", "threads": 1, "duration_s": 0},
                            "setup": {**bad, "stats_password": "plain"}})


def test_the_nodes_proxy_users_accept_a_proxy_host_of_its_own(host: Host) -> None:
    """HAProxy's check login and ProxySQL's monitor user come from the proxy host's address when it has
    a host of its own: the bootstrap node creates them for every host (the nodes' security group admits
    only the clients' group, which the proxy host is in)."""
    host.run(node_setup("n1"))
    sql = (host.fake / "sql.log").read_text()
    for user in (proxyconf.CHECK_USER, proxyconf.MONITOR_USER):
        assert f"CREATE USER IF NOT EXISTS '{user}'@'%'" in sql
    assert cluster.USER_HOSTS == ["%"]


@pytest.mark.parametrize(("software", "fault", "stage"), [("haproxy", "apt-fail", "apt-get install"),
                                                          ("proxysql", "curl-fail", "repository")])
def test_proxy_install_fails_naming_the_package_and_stage(host: Host, tmp_path: Path, software: str, fault: str,
                                                          stage: str) -> None:
    (host.fake / fault).write_text("")
    job = clusterjob.proxy_job(**IDS, software=software, nodes=NODES, password_secret_arn=ARN)
    emitted: list[dict[str, Any]] = []

    class Emit:
        def emit(self, kind: str, **fields: Any) -> None:
            emitted.append({"type": kind, **fields})

        def error(self, stage: str, message: str, **fields: Any) -> int:
            self.emit("error", stage=stage, message=message, **fields)
            return int(emitting.EXIT_FAILED)

    original = cluster.run
    cluster.run = lambda setup, emit, read: original(setup, emit, read, host.installer())
    try:
        assert running.run_setup(job, Emit()) == emitting.EXIT_FAILED
    finally:
        cluster.run = original
    error = emitted[-1]
    assert (error["type"], error["stage"], error["package"]) == ("error", "proxy-install", software)
    assert error["message"].startswith(f"proxy install failed: package {software} at stage {stage}")


@pytest.mark.parametrize(("change", "said"), [
    ({"role": "client"}, "setup.role must be node or proxy"),
    ({"password_secret_arn": "hunter2"}, "setup.password_secret_arn must be a Secrets Manager secret ARN"),
    ({"host": "10.9.9.9"}, "setup.node and setup.host must be one of setup.nodes"),
    ({"nodes": [{"name": "n1", "host": "10.0.1.5; rm -rf /"}]}, r"setup.nodes\[0\]"),
    ({"synced_timeout_s": 0}, "setup.synced_timeout_s must be an integer"),
    ({"flavor": "galera-3"}, "setup.flavor must be one of"),
    ({"cluster_name": "bf-7c8e747fdbc99fcf3936e2cde4fcd494"}, "setup.cluster_name must be at most 32 characters"),
])
def test_a_node_job_the_agent_cannot_use_is_refused_naming_the_field(change: dict[str, Any], said: str) -> None:
    job = clusterjob.node_job(**IDS, flavor="mariadb-galera", cluster_name="c", node="n1", host="10.0.1.5",
                              nodes=NODES, mysql_config="x", cnf=CNF, password_secret_arn=ARN)
    job["setup"].update(change)
    with pytest.raises(jobcheck.JobError, match=said):
        jobcheck.check_job(job)


def test_the_set_up_jobs_records_are_read_back_by_benchfleets_reader(host: Host) -> None:
    """What the state machine's side reads of a set-up job's output (benchfleet.workload.records): the setup
    record and an error of a step of kind setup (refused before: "unknown record type 'setup'")."""
    from benchfleet.workload.records import parse_agent_lines

    job = clusterjob.node_job(**IDS, flavor="mariadb-galera", cluster_name="c", node="n1", host="10.0.1.5",
                              nodes=NODES, mysql_config="x", cnf=CNF, password_secret_arn=ARN)
    base = {"run_id": "r1", "target_id": "c1", "repetition": 1, "workload": None, "step": job["step"]["name"],
            "phase": "setup", "threads": 1, "time": 1795747565.2}
    host.run(node_setup("n1"))
    lines = [json.dumps({**base, **r, "time": 1795747565.2}) for r in host.records]
    lines.append(json.dumps({**base, "type": "error", "stage": "node", "message": "c: node n1 ...", "node": "n1"}))
    out = parse_agent_lines("\n".join(lines), "n1")
    (setup,) = out.setups
    assert setup.model_dump()["node"] == "n1" and setup.model_dump()["state"] == "Synced"
    assert out.errors[0].stage == "node" and out.errors[0].step == "setup-n1"
    assert {i.action for i in out.installs} >= {"cnf", "database"}


def test_a_status_source_password_file_must_be_an_absolute_path() -> None:
    status = clusterjob.client_status({"counters": [], "interval_s": 1}, NODES, "proxysql")
    status["sources"][-1]["password_file"] = "../proxy.json"
    job = {**IDS, "workload": "w", "step": {"name": "t1", "kind": "measure", "threads": 1, "duration_s": 5},
           "sysbench": {"test": "oltp_read_only"}, "status": status}
    with pytest.raises(jobcheck.JobError, match=r"status.sources\[3\].password_file must be an absolute path"):
        jobcheck.check_job(job)


def test_the_proxysql_status_source_logs_in_with_the_password_kept_on_the_client(tmp_path: Path) -> None:
    kept = tmp_path / "proxy.json"
    kept.write_text(json.dumps({"admin": "a-pw", "stats": "s-pw"}))
    status = running.benchfleet_status
    assert status._kept_password(str(kept), "stats") == "s-pw"
    assert status._kept_password(str(tmp_path / "missing.json"), "stats") == ""  # the reading then says why
    assert status._kept_password(None, "stats") is None


def test_the_proxysql_status_source_of_a_proxy_host_logs_in_with_the_steps_own_password() -> None:
    """On a host of its own, the statistics user's password is the secret's: the source names no file,
    so the client's option file carries the job's password (read from that secret)."""
    spec = clusterjob.client_status({"counters": [], "interval_s": 1}, NODES, "proxysql", own_host="10.0.1.9")
    source = spec["sources"][-1]
    assert (source["host"], source["port"], source["user"]) == ("10.0.1.9", 6032, proxyconf.STATS_USER)
    assert "password_file" not in source and "password" not in source
    conn = running.benchfleet_dbclient.Connection({"host": "10.0.1.9", "port": 6033, "user": "sbtest"}, SECRET)
    reader = running.benchfleet_status._ProxysqlSource("proxy", conn, source)
    assert reader.where["password"] is None  # None: the option file takes the connection's own password
    try:
        text = Path(conn.option_file("mysql", **reader.where)).read_text()
    finally:
        conn.close()
    assert f'user="{proxyconf.STATS_USER}"\npassword="{SECRET}"\nhost=10.0.1.9\nport=6032\n' in text
