"""benchfleet agent: set up a cluster target's hosts (the ``setup`` jobs of ``benchfleet.cluster.jobs``).

A **node** job (``setup.role: node``) on each node host:
  install the flavor (``mariadb-galera``: the distribution's mariadb-server, galera-4 and rsync;
  ``pxc-8.0``: Percona's repository through percona-release, then percona-xtradb-cluster), stop the
  server the package started (a standalone server is not a node), build the data volumes as ec2's
  install does (``benchfleet_storage``), write the target's cnf rendered for this host's memory followed
  by the node's Galera options (``benchfleet.cluster.galera.node_options``) and what makes it reachable
  (``bind-address`` its private address, its error log), then either bootstrap the cluster
  (``galera_new_cluster``, PXC's ``mysql@bootstrap`` unit) and create the benchmark and proxy users
  with the password of the job's secret (replicated to every node that joins), or start and join by
  state transfer. It returns once the node is Synced (a joiner: in a cluster of every node) and
  fails, naming the node, on a state-transfer failure in its log, a server that exits, or the
  timeout, with the cause its error log gives (``benchfleet.cluster.galera.node_failure``).

A **proxy** job (``setup.role: proxy``) on the client host: HAProxy (the distribution's package) or
ProxySQL (ProxySQL's apt repository), configured from ``benchfleet.cluster.proxyconf``, started, and awaited
until it listens and sees every backend up. A failed install names the package and the stage.

Every action is an ``install`` record (as ec2's install), the result one ``setup`` record; failures
raise ``ClusterSetupError``. Standard library only, Python 3.8+, runs as root under SSM Run Command;
commands are found on PATH, so tests run it against fake apt-get/systemctl/mysql.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import benchfleet_dbclient
import benchfleet_install
import benchfleet_storage
from benchfleet.cluster import galera, proxyconf

# Packages per flavor: galera-4 is the provider MariaDB's server loads, rsync its state transfer.
FLAVOR_PACKAGES = {"mariadb-galera": ["mariadb-server", "galera-4", "rsync"], "pxc-8.0": ["percona-xtradb-cluster"]}
ENGINES = {"mariadb-galera": "mariadb", "pxc-8.0": "mysql-8.0"}  # the engine the cnf is rendered for
FAMILIES = {"mariadb-galera": "mariadb", "pxc-8.0": "mysql"}
SERVICES = {"mariadb-galera": "mariadb", "pxc-8.0": "mysql"}
# Debian's socket activation of MariaDB listens on every address's port 3306 in systemd itself, which
# a node bound to its private address cannot share: turned off on a node.
SOCKET_UNITS = {"mariadb-galera": "mariadb.socket"}
BOOTSTRAP = {"mariadb-galera": ["galera_new_cluster"], "pxc-8.0": ["systemctl", "start", "mysql@bootstrap.service"]}
# Percona's repository package, and the repository percona-release enables for PXC 8.0.
PERCONA_RELEASE_URL = "https://repo.percona.com/apt/percona-release_latest.generic_all.deb"
PERCONA_RELEASE_DEB = "/var/cache/benchfleet/percona-release.deb"
PERCONA_REPOSITORY = "pxc-80"
# ProxySQL's own apt repository (Debian and Ubuntu do not package ProxySQL 2).
PROXYSQL_KEY_URL = "https://repo.proxysql.com/ProxySQL/proxysql-2.7.x/repo_pub_key"
PROXYSQL_REPOSITORY = "https://repo.proxysql.com/ProxySQL/proxysql-2.7.x/{codename}/ ./"
PROXYSQL_KEY = "/etc/apt/keyrings/proxysql.asc"
PROXYSQL_LIST = "/etc/apt/sources.list.d/proxysql.list"
ERROR_LOG = "/var/log/mysql/error.log"
NODE_CNF = "zz-benchfleet-node.cnf"
HAPROXY_CFG = "/etc/haproxy/haproxy.cfg"
PROXYSQL_CNF = "/etc/proxysql.cnf"
PROXYSQL_DATADIR = "/var/lib/proxysql"
POLL_S = 1.0
USER_HOSTS = ["%"]  # clients and proxies reach the nodes from other hosts; the nodes' security group closes them

Emit = Callable[..., None]


class ClusterSetupError(benchfleet_install.InstallError):
    """A node or the proxy could not be set up; the message names which and why."""


def node_problem_now(installer: "benchfleet_install.Installer", name: str, expected: int) -> Optional[str]:
    """Why this host's node is not Synced in a cluster of at least ``expected`` nodes (a node that joined
    after this job's started counts); root over the socket."""
    names = ",".join("'{}'".format(n) for n in galera.HEALTH_COUNTERS)
    out = installer._sql("SHOW GLOBAL STATUS WHERE Variable_name IN ({});".format(names))
    if out.returncode != 0:
        return galera.node_problem(name, None, expected or 1)
    values = galera.lowered([line.split("\t") for line in out.stdout.splitlines()])
    with contextlib.suppress(ValueError):
        expected = max(expected, int(values.get("wsrep_cluster_size") or 0))
    return galera.node_problem(name, values, expected)


class NodeSetup:
    """One node's set-up (``run``); ``read_secret``: the agent's Secrets Manager reader."""

    def __init__(self, installer: "benchfleet_install.Installer", read_secret: Callable[[str], str]) -> None:
        self.i = installer
        self.read_secret = read_secret

    def log_lines(self) -> List[str]:
        try:
            with open(self.i.path(ERROR_LOG), errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def fail(self, setup: Dict[str, Any], what: str, said: str = "") -> ClusterSetupError:
        """The node named, and the cause its error log gives (the service's journal when the server
        never opened its log: a refused option, a unit that did not start)."""
        lines = self.log_lines()
        if not lines:
            with contextlib.suppress(benchfleet_install.InstallError):  # no journal: the log's tail is all there is
                journal = self.i._run(["journalctl", "-u", SERVICES[str(setup["flavor"])], "-n", "40", "--no-pager",
                                       "-o", "cat"], timeout=60)
                lines = (journal.stdout or "").splitlines()
        first, tail = galera.node_failure(str(setup["cluster_name"]), str(setup["node"]), what,
                                          lines + said.splitlines())
        return ClusterSetupError(first, node=setup["node"], log_tail=tail)

    def repository(self, flavor: str) -> None:
        """PXC: Percona's repository, once (percona-release enables it and refreshes the lists)."""
        if flavor != "pxc-8.0" or self.i.installed("percona-xtradb-cluster"):
            return
        started = self.i.clock()
        self.i.packages(["curl", "gnupg2", "lsb-release"])
        for argv, stage in percona_commands():
            out = self.i._run(argv)
            if out.returncode != 0:
                raise ClusterSetupError("Percona's repository: {} failed (exit {})".format(stage, out.returncode),
                                        during=stage, output_tail=((out.stdout or "") + (out.stderr or ""))[-4000:])
        self.i._updated = False  # the new repository's lists: apt-get update again
        self.i._record("repository", started, repository=PERCONA_REPOSITORY)

    def write_cnf(self, setup: Dict[str, Any]) -> Dict[str, Any]:
        from benchfleet.workload.mysqlcnf import CnfError, render

        started = self.i.clock()
        flavor = str(setup["flavor"])
        memory = int(setup["memory_mb"]) * 1024 * 1024 if setup.get("memory_mb") else self.i.memory_bytes()
        name = str(setup.get("mysql_config") or "default")
        try:
            rendered = render(str(setup.get("cnf") or ""), ENGINES[flavor], memory, name="{}.cnf".format(name))
        except CnfError as e:
            raise ClusterSetupError("node {}: cnf {}: {}".format(setup["node"], name, e), node=setup["node"]) from None
        text = node_cnf(setup, rendered.text)
        path = os.path.join(os.path.dirname(self.i.conf_path(FAMILIES[flavor])), NODE_CNF)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
        log_dir = os.path.dirname(self.i.path(ERROR_LOG))
        os.makedirs(log_dir, exist_ok=True)
        # The server writes its log as mysql; a directory only root may write would send it to the
        # journal instead, where a failure's cause is not looked for first.
        with contextlib.suppress(KeyError, OSError):
            account = pwd.getpwnam("mysql")
            os.chown(log_dir, account.pw_uid, account.pw_gid)
        self.i._record("cnf", started, path="/" + os.path.relpath(path, self.i.root), mysql_config=name,
                       memory_bytes=memory, config_hash=rendered.sha256, node=setup["node"])
        return {"config_hash": rendered.sha256, "requested": dict(rendered.options)}

    def systemctl(self, setup: Dict[str, Any], *args: str) -> None:
        out = self.i._run(["systemctl", *args], timeout=900)
        if out.returncode != 0:
            raise self.fail(setup, "could not {} (systemctl exit {}{})".format(
                " ".join(args), out.returncode, ": " + out.stderr.strip()[-300:] if out.stderr.strip() else ""))

    def users(self, setup: Dict[str, Any]) -> None:
        """The benchmark user and the proxies' users, on the bootstrap node (the others receive them)."""
        started = self.i.clock()
        family = FAMILIES[str(setup["flavor"])]
        password = self.read_secret(str(setup["password_secret_arn"]))
        sql = benchfleet_install.user_sql(family, password, USER_HOSTS) + proxyconf.monitor_sql(
            password, USER_HOSTS, benchfleet_install.IDENTIFIED[family])
        out = self.i._sql(sql)
        if out.returncode != 0:
            raise self.fail(setup, "refused the benchmark user (exit {}): {}".format(
                out.returncode, (out.stderr or "").strip()[-300:]))
        self.i._record("database", started, user=benchfleet_install.DB_USER, hosts=USER_HOSTS,
                       proxy_users=[proxyconf.CHECK_USER, proxyconf.MONITOR_USER])

    def wait_synced(self, setup: Dict[str, Any], expected: int, timeout_s: float) -> None:
        name = str(setup["node"])
        service = SERVICES[str(setup["flavor"])]
        deadline = self.i.clock() + timeout_s
        while True:
            failed = galera.state_transfer_failure("\n".join(self.log_lines()))
            if failed:
                raise self.fail(setup, "did not join the cluster: its state transfer failed")
            problem = node_problem_now(self.i, name, expected)
            if problem is None:
                return
            state = self.i._run(["systemctl", "is-failed", service], timeout=60)
            if state.stdout.strip() == "failed":
                raise self.fail(setup, "did not {}: its server exited".format(
                    "bootstrap the cluster" if setup.get("bootstrap") else "join the cluster"))
            if self.i.clock() >= deadline:
                raise self.fail(setup, "was not Synced within {:g} s: {}".format(timeout_s, problem))
            self.i.sleep(POLL_S)

    def verify(self, setup: Dict[str, Any], requested: Dict[str, str]) -> None:
        """Every node runs what the target's cnf asks for before anything is measured (issue 41 item
        11): a setting its server runs with another value fails the set-up naming it, as the prepare
        step of a single server does (benchfleet_run.unmet_settings), the documented adjustments
        to the host (benchfleet_dbclient.SERVER_ADJUSTED) apart."""
        out = self.i._sql("SHOW GLOBAL VARIABLES;")
        if out.returncode != 0:
            raise ClusterSetupError("node {}: cannot read its server's variables to check its settings: {}".format(
                setup["node"], (out.stderr or "").strip()[-300:]), node=setup["node"])
        variables = {r[0].lower(): (r[1] if len(r) > 1 else "")
                     for r in (line.split("\t") for line in out.stdout.splitlines()) if r and r[0]}
        changed = benchfleet_dbclient.differences(requested, variables)[0]
        adjusted = benchfleet_dbclient.adjusted(changed, variables)
        unmet = [d for d in changed if d not in adjusted]
        if unmet:
            raise ClusterSetupError("node {}: its server does not run with what the target asks for, so nothing is "
                                    "measured: {}".format(setup["node"], "; ".join(
                                        "{option} asked {requested}, the server runs {effective}".format(**d)
                                        for d in unmet)), node=setup["node"], settings=unmet)

    def size_now(self) -> Optional[int]:
        out = self.i._sql("SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size');")
        try:
            return int(galera.lowered([line.split("\t") for line in out.stdout.splitlines()])["wsrep_cluster_size"])
        except (KeyError, ValueError):
            return None

    def run(self, setup: Dict[str, Any]) -> Dict[str, Any]:
        started = self.i.clock()
        flavor = str(setup["flavor"])
        service = SERVICES[flavor]
        storage = setup.get("storage")
        self.i.quiet_background_apt()
        self.repository(flavor)
        extra = ["python3-boto3"] if setup.get("bootstrap") else []  # the secret is read there
        try:
            self.i.packages([*FLAVOR_PACKAGES[flavor], *extra, *benchfleet_install.storage_packages(storage)])
        except benchfleet_install.InstallError as e:
            raise ClusterSetupError("node {}: installing {} failed: {}".format(setup["node"], flavor, e),
                                    node=setup["node"], **e.fields) from None
        # The package started a standalone server: a node starts only with its cluster's settings.
        self.systemctl(setup, "stop", service)
        if flavor in SOCKET_UNITS:  # absent on some images: nothing to turn off then
            self.i._run(["systemctl", "disable", "--now", SOCKET_UNITS[flavor]], timeout=300)
        layout = None
        if storage:
            try:
                layout = benchfleet_storage.Storage(self.i._run, self.i.emit, root=self.i.root, sleep=self.i.sleep,
                                                    clock=self.i.clock).build(storage, service)
            except benchfleet_storage.StorageError as e:
                raise ClusterSetupError("node {}: its data volumes: {}".format(setup["node"], e), node=setup["node"],
                                        during="storage", **e.fields) from None
        done = self.write_cnf(setup)
        # The cluster size this job waits for (the state machine joins the nodes one at a time: node k
        # waits for k; the first, which bootstraps, for itself).
        size = int(setup.get("expected_size") or len(setup["nodes"]))
        if setup.get("bootstrap"):
            self.systemctl(setup, "reset-failed", service)
            out = self.i._run(BOOTSTRAP[flavor], timeout=900)
            if out.returncode != 0:
                raise self.fail(setup, "could not bootstrap the cluster ({} exit {})".format(
                    BOOTSTRAP[flavor][0], out.returncode), (out.stdout or "") + (out.stderr or ""))
            self.wait_synced(setup, 1, float(setup["synced_timeout_s"]))
            self.users(setup)
        else:
            # Not waited for by systemctl: a joiner's start lasts its whole state transfer, which the
            # loop below watches (its log, its server, the timeout).
            self.systemctl(setup, "reset-failed", service)
            self.systemctl(setup, "restart", "--no-block", service)
            self.wait_synced(setup, size, float(setup["synced_timeout_s"]))
        self.verify(setup, done["requested"])
        record = {"role": "node", "node": setup["node"], "state": "Synced", "cluster_size": self.size_now(),
                  "seconds": round(self.i.clock() - started, 3), "storage_layout": layout, **done}
        self.i.emit("setup", time=time.time(), **record)
        return record


def node_cnf(setup: Dict[str, Any], rendered: str) -> str:
    """The target's cnf, then the node's Galera options, then what makes it reachable (last wins:
    a workload cnf can neither turn replication off nor move the node)."""
    nodes = [galera.NodeAddress(str(n["name"]), str(n["host"])) for n in setup["nodes"]]
    me = next(n for n in nodes if n.name == setup["node"])
    options = galera.node_options(str(setup["flavor"]), str(setup["cluster_name"]), me, nodes)
    return ("# benchfleet: {} node {} of {}\n".format(setup["flavor"], me.name, setup["cluster_name"]) + rendered
            + galera.render_node(options) + "bind-address = {}\nlog_error = {}\n".format(me.host, ERROR_LOG))


def percona_commands() -> List[Tuple[List[str], str]]:
    """Percona's repository: its release package, then PXC 8.0's repository enabled (and its tools')."""
    return [(["curl", "-fsSL", "--retry", "3", "-o", PERCONA_RELEASE_DEB, "--create-dirs", PERCONA_RELEASE_URL],
             "download percona-release"),
            (["dpkg", "-i", PERCONA_RELEASE_DEB], "install percona-release"),
            (["percona-release", "enable-only", PERCONA_REPOSITORY, "release"], "percona-release enable"),
            (["percona-release", "enable", "tools", "release"], "percona-release enable tools")]  # type: ignore[list-item]


class ProxySetup:
    """The proxy's set-up (``run``) on the host its job went to: the client's, or its own."""

    def __init__(self, installer: "benchfleet_install.Installer", read_secret: Callable[[str], str]) -> None:
        self.i = installer
        self.read_secret = read_secret

    def install(self, software: str) -> None:
        package = proxyconf.PACKAGES[software]
        stage = "apt-get install"
        try:
            if software == "proxysql" and not self.i.installed(package):
                stage = "repository"
                self.repository()
                stage = "apt-get install"
            self.i.packages([package])
        except benchfleet_install.InstallError as e:
            raise ClusterSetupError("proxy install failed: package {} at stage {}: {}".format(package, stage, e),
                                    package=package, during=stage, **e.fields) from None

    def repository(self) -> None:
        started = self.i.clock()
        self.i.packages(["curl", "gnupg2", "lsb-release"])
        codename = self.i._run(["lsb_release", "-sc"], timeout=60).stdout.strip() or "bookworm"
        out = self.i._run(["curl", "-fsSL", "--retry", "3", "-o", self.i.path(PROXYSQL_KEY), "--create-dirs",
                           PROXYSQL_KEY_URL])
        if out.returncode != 0:
            raise benchfleet_install.InstallError("downloading ProxySQL's repository key failed (exit {})".format(
                out.returncode), output_tail=(out.stderr or "")[-4000:])
        os.makedirs(os.path.dirname(self.i.path(PROXYSQL_LIST)), exist_ok=True)
        with open(self.i.path(PROXYSQL_LIST), "w") as f:
            f.write(proxysql_source_line(codename))
        self.i._updated = False
        self.i._record("repository", started, repository="proxysql")

    def passwords(self, password: str, stats: str = "generated") -> Dict[str, str]:
        """sbtest and monitor: the secret's; admin: made here once, kept root-only, never leaving this
        host; stats the same, or (``stats: secret``, a proxy on a host of its own, whose statistics
        the client reads over the network with the secret it already reads) the secret's."""
        path = self.i.path(proxyconf.PROXY_PASSWORD_FILE)
        try:
            with open(path) as f:
                kept = json.load(f)
        except (OSError, ValueError):
            kept = {"admin": secrets.token_urlsafe(18), "stats": secrets.token_urlsafe(18)}
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(kept, f)
            os.replace(path + ".tmp", path)
        return {"sbtest": password, "monitor": password, "admin": kept["admin"],
                "stats": password if stats == "secret" else kept["stats"]}

    def run(self, setup: Dict[str, Any]) -> Dict[str, Any]:
        started = self.i.clock()
        software = str(setup["software"])
        self.i.quiet_background_apt()
        self.install(software)
        proxy = proxyconf.ProxySetup(software, str(setup.get("listen_host") or "127.0.0.1"), int(setup["listen_port"]),
                                     int(setup["admin_port"]),
                                     [proxyconf.Backend(str(b["name"]), str(b["host"]), int(b["port"]))
                                      for b in setup["backends"]], str(setup.get("writes") or "one"))
        if software == "haproxy":
            path, text, service = HAPROXY_CFG, proxyconf.render(proxy), "haproxy"
        else:
            passwords = self.passwords(self.read_secret(str(setup["password_secret_arn"])),
                                       str(setup.get("stats_password") or "generated"))
            path, text, service = PROXYSQL_CNF, proxyconf.render(proxy, PROXYSQL_DATADIR, passwords), "proxysql"
        fd = os.open(self.i.path(path) + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(self.i.path(path) + ".tmp", self.i.path(path))
        if software == "proxysql":
            # ProxySQL reads its file only into an empty database: a changed configuration starts afresh.
            db = self.i.path(os.path.join(PROXYSQL_DATADIR, "proxysql.db"))
            if os.path.exists(db):
                self.i._run(["systemctl", "stop", service], timeout=300)
                os.remove(db)
        out = self.i._run(["systemctl", "restart", service], timeout=300)
        if out.returncode != 0:
            raise ClusterSetupError("proxy {} did not start (systemctl exit {}): {}".format(
                software, out.returncode, (out.stderr or "").strip()[-500:]), during="start")
        down = self.wait_backends(proxy, float(setup.get("timeout_s") or 120))
        if down:
            raise ClusterSetupError("proxy {} does not see backend(s) {} up within {:g} s".format(
                software, ", ".join(down), float(setup.get("timeout_s") or 120)), during="backends", down=down)
        try:
            version = self.i._run([service, "-v"], timeout=60)
            found = (version.stdout or version.stderr or "").strip().splitlines()
        except benchfleet_install.InstallError:
            found = []  # recorded as unknown: the proxy runs, its version is not what fails a run
        record = {"role": "proxy", "seconds": round(self.i.clock() - started, 3),
                  **proxyconf.fingerprint(proxy, found[0][:200] if found else None)}
        self.i.emit("setup", time=time.time(), **record)
        return record

    def wait_backends(self, proxy: "proxyconf.ProxySetup", timeout_s: float) -> List[str]:
        """The backends the proxy does not see up after ``timeout_s`` ([] once it sees them all)."""
        import benchfleet_status

        names = {b.name: "{}:{}".format(b.host, b.port) for b in proxy.backends}
        deadline = self.i.clock() + timeout_s
        while True:
            down = sorted(names)
            if answers(proxy.listen_host, proxy.listen_port) and proxy.software == "haproxy":
                stat, _ = benchfleet_status.HaproxySource("proxy", proxy.listen_host, proxy.admin_port,
                                                          names).finish(time.monotonic() + 2)
                down = [n for n in sorted(names) if (stat or {}).get(n, {}).get("status") != "UP"]
            elif answers(proxy.listen_host, proxy.listen_port):
                down = []  # ProxySQL moves backends between hostgroups itself; the step's status shows them
            if not down or self.i.clock() >= deadline:
                return down
            self.i.sleep(POLL_S)


def proxysql_source_line(codename: str) -> str:
    return "deb [signed-by={}] {}\n".format(PROXYSQL_KEY, PROXYSQL_REPOSITORY.format(codename=codename))


def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def run(setup: Dict[str, Any], emit: Emit, read_secret: Callable[[str], str],
        installer: Optional["benchfleet_install.Installer"] = None) -> Dict[str, Any]:
    i = installer or benchfleet_install.Installer(emit)
    if i.root == "/" and hasattr(os, "geteuid") and os.geteuid() != 0:
        raise ClusterSetupError("setting up a cluster host needs root (the agent runs as root under SSM)")
    if setup.get("role") == "node":
        return NodeSetup(i, read_secret).run(setup)
    return ProxySetup(i, read_secret).run(setup)
