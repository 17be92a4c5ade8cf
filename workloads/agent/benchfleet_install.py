"""benchfleet agent: set up a fresh Ubuntu host before the first step of a repetition.

Imported by benchfleet_agent.py on the ``prepare`` step when the job carries an ``install`` object:

- ``{"engine": "mysql-8.0", "mysql_config": "cpu-bound", "cnf": "<workloads/mysql/cpu-bound.cnf>"}``
  (an ``ec2`` target, the engine on this host): the engine package and sysbench are installed, the
  cnf is rendered for this host's memory (``benchfleet.workload.mysqlcnf``) and written where the engine
  reads it last, the service restarted, and the ``sbtest`` user (localhost and 127.0.0.1) and
  database created with a password generated here and kept in a root-only option file
  (``PASSWORD_FILE``) that every later step reads: no database password travels in the job.
  With ``storage`` (the target's data volumes), the engine's data directory is moved onto them
  before the cnf is written and the service restarted (``benchfleet_storage.py``: the array, the
  file system, the mounts); mdadm and the file system's tools are installed first when missing.
- ``{"client": true}`` (an ``rds`` / ``aurora`` client): sysbench, the mysql client and python3-boto3
  (the agent reads the managed master password from Secrets Manager with the instance role).

Every action is reported as an ``{"type": "install", ...}`` record, options the engine does not
take as one ``{"type": "notice", ...}`` record; a failure raises InstallError, which the agent
reports as an error record and a non-zero exit. Idempotent: installed packages are skipped, an
existing password file is reused, so a retried prepare step converges.

Standard library only, Python 3.8+; runs as root under SSM Run Command. Paths (``root``) and the
commands (found on ``PATH``) are injectable, so tests run it against fake apt-get/systemctl/mysql.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import benchfleet_storage

PASSWORD_FILE = "/var/lib/benchfleet/db.cnf"  # noqa: S105 - a path, not a password
# Which variant's settings the host's server runs with, and their rendered values (variants).
VARIANT_FILE = "/var/lib/benchfleet/variant.json"
CNF_NAME = "zz-benchfleet.cnf"
DB_USER = "sbtest"
DB_NAME = "sbtest"
# Ubuntu 24.04's packages. The engine's own directory is read after /etc/mysql/conf.d and after the
# package's defaults (mysqld.cnf / 50-server.cnf), so a "zz-" file there has the last word.
ENGINE_PACKAGES = {"mysql": "mysql-server-8.0", "mariadb": "mariadb-server"}
MYSQL_VERSIONS = ("8.0",)
CONF_DIRS = {"mysql": "etc/mysql/mysql.conf.d", "mariadb": "etc/mysql/mariadb.conf.d"}
FALLBACK_CONF_DIR = "etc/mysql/conf.d"
SERVICES = {"mysql": "mysql", "mariadb": "mariadb"}
CLIENT_PACKAGES = ("sysbench", "mysql-client", "python3-boto3")
FILESYSTEM_PACKAGES = {"xfs": "xfsprogs", "ext4": "e2fsprogs"}
APT_LOCK_WAIT_S = 900       # cloud-init's own apt run may hold the lock at boot
APT_RETRY_S = 10
SERVER_WAIT_S = 120
_LOCK_MESSAGES = ("Could not get lock", "Unable to acquire the dpkg frontend lock", "Unable to lock",
                  "is another process using it")
# Ubuntu's background apt: package lists and unattended upgrades, which would compete with the
# measured workload for CPU and disk (and hold the dpkg lock). Masked until the next boot.
BACKGROUND_APT_UNITS = ("apt-daily.timer", "apt-daily-upgrade.timer", "apt-daily.service",
                        "apt-daily-upgrade.service", "unattended-upgrades.service")
# The authentication plugin the sbtest user gets: MySQL 8.0 defaults to caching_sha2_password, whose
# first login over TCP without TLS needs an RSA key exchange that sysbench 1.0.20 never requests
# (client error 2061; cpu-bound.cnf turns TLS off with ssl = 0). mysql_native_password is built into
# MySQL 8.0 and enabled by default there (8.4 disables it, 9.0 removes it: engine_family admits 8.0
# only). MariaDB's IDENTIFIED BY already makes a mysql_native_password account.
IDENTIFIED = {"mysql": "IDENTIFIED WITH mysql_native_password BY", "mariadb": "IDENTIFIED BY"}

Emit = Callable[..., None]


class InstallError(RuntimeError):
    """A setup action failed; ``fields`` go into the agent's error record."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


def engine_family(engine: str) -> str:
    family = engine.split("-", 1)[0].lower()
    if family not in ENGINE_PACKAGES:
        raise InstallError("unknown engine {!r}: expected mysql-8.0 or mariadb[-X.Y]".format(engine))
    version = engine.partition("-")[2]
    if family == "mysql" and version and not any(version == v or version.startswith(v + ".")
                                                 for v in MYSQL_VERSIONS):
        raise InstallError("engine {} is not packaged for this host: Ubuntu 24.04 offers mysql-8.0 "
                           "(mysql-server-8.0) and mariadb (mariadb-server)".format(engine))
    return family


class Installer:
    def __init__(self, emit: Emit, *, root: str = "/", env: Optional[Dict[str, str]] = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 lock_wait_s: float = APT_LOCK_WAIT_S, server_wait_s: float = SERVER_WAIT_S) -> None:
        self.emit = emit
        self.root = root
        self.env = dict(os.environ if env is None else env)
        self.env.update(DEBIAN_FRONTEND="noninteractive", NEEDRESTART_MODE="a", LC_ALL="C")
        self.sleep = sleep
        self.clock = clock
        self.lock_wait_s = lock_wait_s
        self.server_wait_s = server_wait_s
        self._updated = False

    # ---- helpers --------------------------------------------------------------------------------
    def path(self, absolute: str) -> str:
        return os.path.join(self.root, absolute.lstrip("/"))

    def _run(self, argv: Sequence[str], stdin: Optional[str] = None,
             timeout: float = 1800) -> "subprocess.CompletedProcess[str]":
        try:
            return subprocess.run(list(argv), input=stdin, capture_output=True, text=True, env=self.env,
                                  timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InstallError("{} could not run: {}".format(argv[0], e), command=list(argv[:3])) from None

    def _record(self, action: str, started: float, **fields: Any) -> None:
        self.emit("install", action=action, seconds=round(self.clock() - started, 3), time=time.time(),
                  **fields)

    # ---- packages -------------------------------------------------------------------------------
    def installed(self, package: str) -> bool:
        out = self._run(["dpkg-query", "-W", "-f=${Status}", package], timeout=60)
        return out.returncode == 0 and out.stdout.strip().endswith("install ok installed")

    def _apt(self, args: List[str]) -> None:
        """apt-get, waiting (bounded) while another apt/dpkg holds the lock."""
        argv = ["apt-get", "-o", "DPkg::Lock::Timeout=60", "-o", "Dpkg::Options::=--force-confdef",
                "-o", "Dpkg::Options::=--force-confold", *args]
        deadline = self.clock() + self.lock_wait_s
        attempt = 0
        while True:
            attempt += 1
            out = self._run(argv)
            if out.returncode == 0:
                return
            text = (out.stdout or "") + (out.stderr or "")
            if any(m in text for m in _LOCK_MESSAGES) and self.clock() < deadline:
                self.emit("install", action="apt-lock-wait", attempt=attempt, time=time.time(),
                          command=" ".join(args[:2]))
                self.sleep(APT_RETRY_S)
                continue
            raise InstallError("apt-get {} failed (exit {})".format(" ".join(args), out.returncode),
                               exit_code=out.returncode, output_tail=text[-4000:], attempts=attempt)

    def quiet_background_apt(self) -> None:
        """Stop and mask (until reboot) the timers and services that run apt in the background."""
        started = self.clock()
        out = self._run(["systemctl", "mask", "--runtime", "--now", *BACKGROUND_APT_UNITS], timeout=600)
        if out.returncode != 0:  # no systemd (a container without it): nothing runs them either
            self.emit("notice", stage="install", time=time.time(),
                      message="background apt not masked (systemctl exit {}): {}".format(
                          out.returncode, (out.stderr or "").strip()[-300:]))
            return
        self._record("background-apt", started, masked=list(BACKGROUND_APT_UNITS))

    def configure_pending(self) -> None:
        """Finish what an interrupted dpkg left half-installed: apt refuses to do anything until
        ``dpkg --configure -a`` has run ("dpkg was interrupted, you must manually run ...")."""
        started = self.clock()
        out = self._run(["dpkg", "--configure", "-a"])
        if out.returncode != 0:
            raise InstallError("dpkg --configure -a failed (exit {})".format(out.returncode),
                               exit_code=out.returncode, output_tail=((out.stdout or "") + (out.stderr or ""))[-4000:])
        self._record("dpkg-configure", started)

    def packages(self, names: Sequence[str]) -> List[str]:
        """Install what is missing; returns what was installed."""
        missing = []
        for name in names:
            if self.installed(name):
                self.emit("install", action="package", package=name, status="present", time=time.time())
            else:
                missing.append(name)
        if not missing:
            return []
        self.configure_pending()
        # What dpkg has just finished configuring (half-installed by an interrupted run) is done.
        missing = [name for name in missing if not self.installed(name)]
        if not missing:
            return []
        started = self.clock()
        if not self._updated:
            self._apt(["update", "-q"])
            self._updated = True
            self._record("apt-update", started)
        started = self.clock()
        self._apt(["install", "-y", "-q", "--no-install-recommends", *missing])
        for name in missing:
            self._record("package", started, package=name, status="installed")
        return missing

    # ---- engine ---------------------------------------------------------------------------------
    def memory_bytes(self) -> int:
        try:
            with open(self.path("/proc/meminfo")) as f:
                m = re.search(r"MemTotal:\s+(\d+) kB", f.read())
        except OSError:
            m = None
        if not m:
            raise InstallError("cannot read MemTotal from /proc/meminfo")
        return int(m.group(1)) * 1024

    def conf_path(self, family: str) -> str:
        directory = self.path(CONF_DIRS[family])
        if not os.path.isdir(directory):
            directory = self.path(FALLBACK_CONF_DIR)
            os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, CNF_NAME)

    def write_cnf(self, family: str, engine: str, name: str, source: str) -> Tuple[str, Any]:
        """Render for this host's memory; returns (path, the rendered cnf)."""
        from benchfleet.workload.mysqlcnf import CnfError, render

        started = self.clock()
        memory = self.memory_bytes()
        try:
            rendered = render(source, engine, memory, name="{}.cnf".format(name))
        except CnfError as e:
            raise InstallError("cnf {}: {}".format(name, e)) from None
        path = self.conf_path(family)
        with open(path, "w") as f:
            f.write("# benchfleet: workloads/mysql/{}.cnf rendered for {} bytes of memory\n".format(name, memory))
            f.write(rendered.text)
        os.chmod(path, 0o644)
        self._record("cnf", started, path="/" + os.path.relpath(path, self.root), mysql_config=name,
                     memory_bytes=memory, config_hash=rendered.sha256, options=len(rendered.options))
        if rendered.skipped:
            self.emit("notice", stage="install", time=time.time(), mysql_config=name,
                      message="options not applied on {}: {}".format(family, ", ".join(rendered.skipped)),
                      skipped=rendered.skipped)
        return path, rendered

    def restart(self, family: str) -> None:
        started = self.clock()
        service = SERVICES[family]
        out = self._run(["systemctl", "restart", service], timeout=600)
        if out.returncode != 0:
            status = self._run(["systemctl", "status", "--no-pager", "-l", service], timeout=60)
            raise InstallError("systemctl restart {} failed (exit {}): the rendered cnf may hold an option "
                               "this version refuses".format(service, out.returncode), exit_code=out.returncode,
                               output_tail=((out.stderr or "") + (status.stdout or ""))[-4000:])
        deadline = self.clock() + self.server_wait_s
        while True:
            ping = self._sql("SELECT 1;")
            if ping.returncode == 0:
                break
            if self.clock() >= deadline:
                raise InstallError("{} did not accept connections within {} s".format(service, self.server_wait_s),
                                   output_tail=(ping.stderr or "")[-4000:])
            self.sleep(2)
        self._record("restart", started, service=service)

    def _sql(self, statements: str) -> "subprocess.CompletedProcess[str]":
        # As root over the socket (auth_socket / unix_socket on Ubuntu); SQL on stdin, never argv.
        return self._run(["mysql", "--protocol=socket", "-uroot", "-N", "-B"], stdin=statements, timeout=120)

    def password(self) -> str:
        """The sbtest password: the one kept on this host, else a new one."""
        path = self.path(PASSWORD_FILE)
        existing = read_password_file(path)
        return existing or secrets.token_urlsafe(24)

    def create_user(self, family: str) -> str:
        started = self.clock()
        password = self.password()
        out = self._sql(user_sql(family, password))
        if out.returncode != 0:
            raise InstallError("creating the {} user failed (exit {})".format(DB_USER, out.returncode),
                               exit_code=out.returncode, output_tail=(out.stderr or "")[-4000:])
        write_password_file(self.path(PASSWORD_FILE), DB_USER, password)
        self._record("database", started, user=DB_USER, database=DB_NAME, hosts=["localhost", "127.0.0.1"],
                     password_file=PASSWORD_FILE, auth=IDENTIFIED[family])
        return password

    # ---- entry points -----------------------------------------------------------------------------
    def engine_host(self, spec: Dict[str, Any]) -> Dict[str, Any]:
        engine = str(spec.get("engine") or "mysql-8.0")
        family = engine_family(engine)
        cnf = spec.get("cnf")
        if not isinstance(cnf, str):
            raise InstallError("install.cnf (the text of workloads/mysql/<mysql_config>.cnf) is missing")
        storage = spec.get("storage")
        if storage is not None and not isinstance(storage, dict):
            raise InstallError("install.storage must be an object")
        self.quiet_background_apt()
        self.packages([ENGINE_PACKAGES[family], "sysbench", *storage_packages(storage)])
        layout = None
        if storage:  # before the cnf and the restart: the server starts on its own volumes
            layout = benchfleet_storage.Storage(self._run, self.emit, root=self.root, sleep=self.sleep,
                                                clock=self.clock).build(storage, SERVICES[family])
        _, rendered = self.write_cnf(family, engine, str(spec.get("mysql_config") or "default"), cnf)
        self.restart(family)
        self.create_user(family)
        if spec.get("variant"):  # a spec with variants: the server starts with the first one's settings
            self.record_variant(str(spec["variant"]), dict(rendered.options))
        # What was asked for: the fingerprint compares it with what the server reports it runs with.
        return {"config_hash": rendered.sha256, "requested": dict(rendered.options), "storage_layout": layout}

    # ---- variants ---------------------------------------------------------------------------------
    def record_variant(self, variant: str, options: Dict[str, str]) -> None:
        path = self.path(VARIANT_FILE)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump({"variant": variant, "options": options}, f)
        os.replace(path + ".tmp", path)

    def current_variant(self) -> Dict[str, Any]:
        try:
            with open(self.path(VARIANT_FILE)) as f:
                found = json.load(f)
            return found if isinstance(found, dict) else {}
        except (OSError, ValueError):
            return {}

    def switch_variant(self, apply: Dict[str, Any], variant: str) -> Dict[str, Any]:
        """Bring ``variant``'s settings into effect on this host's server before a step: nothing when
        they are, SET GLOBAL (as root over the socket) of what differs when the plan's switch from the
        current variant says so, else the variant's cnf rendered for this host and a restart on the
        same data. Returns the method and the values the variant asks for (the agent checks them)."""
        from benchfleet.workload.mysqlcnf import CnfError, render, set_global_value

        if self.root == "/" and hasattr(os, "geteuid") and os.geteuid() != 0:
            raise InstallError("switching a variant's settings needs root (the agent runs as root under SSM)")
        engine = str(apply.get("engine") or "mysql-8.0")
        family = engine_family(engine)
        name = str(apply.get("mysql_config") or "variant")
        try:
            options = dict(render(str(apply.get("cnf") or ""), engine, self.memory_bytes(), name + ".cnf").options)
        except CnfError as e:
            raise InstallError("cnf {}: {}".format(name, e)) from None
        varying = [str(n) for n in apply.get("varying") or []]
        requested = {n: options[n] for n in varying if n in options}
        state = self.current_variant()
        current = state.get("variant")
        if current == variant:
            return {"method": "none", "requested": requested}
        started = self.clock()
        method = (apply.get("switch") or {}).get(current or "", "restart")
        if method == "set-global":
            before = state.get("options") or {}
            values = {}
            for option in varying:
                if options.get(option) == before.get(option):
                    continue
                value = set_global_value(options.get(option, ""))
                if value is None:
                    raise InstallError("{} = {!r} cannot be given to SET GLOBAL".format(option, options.get(option)))
                values[option] = value
            out = self._sql("".join("SET GLOBAL {} = {};\n".format(k, v) for k, v in values.items()))
            if out.returncode != 0:
                said = (out.stderr or "").strip()
                raise InstallError("SET GLOBAL failed (exit {}): {}".format(out.returncode, said[-500:]),
                                   exit_code=out.returncode, output_tail=said[-4000:])
        elif method != "none":
            method = "restart"
            self.write_cnf(family, engine, name, str(apply.get("cnf") or ""))
            self.restart(family)
        self.record_variant(variant, options)
        self._record("variant", started, variant=variant, method=method)
        return {"method": method, "requested": requested}

    def client_host(self, spec: Dict[str, Any]) -> Dict[str, Any]:
        self.quiet_background_apt()
        self.packages(list(CLIENT_PACKAGES))
        return {}

    def run(self, spec: Dict[str, Any]) -> Dict[str, Any]:
        if self.root == "/" and hasattr(os, "geteuid") and os.geteuid() != 0:
            raise InstallError("installing needs root (the agent runs as root under SSM Run Command)")
        return self.client_host(spec) if spec.get("client") else self.engine_host(spec)


def storage_packages(storage: Optional[Dict[str, Any]]) -> List[str]:
    """What building ``storage`` needs: mdadm for an array, the file system's tools."""
    if not storage:
        return []
    count = len(storage.get("volumes") or []) or int(storage.get("count") or 1)
    needed = ["mdadm"] if count > 1 else []
    return [*needed, FILESYSTEM_PACKAGES.get(str(storage.get("filesystem") or "xfs"), "xfsprogs")]


def user_sql(family: str, password: str, hosts: Sequence[str] = ("localhost", "127.0.0.1")) -> str:
    """The statements that create the database and the benchmark user logging in from ``hosts`` (the
    server's own host by default; a cluster node: its clients' and proxy's). Idempotent: a retried
    prepare resets the password to the one kept on the host (or its secret)."""
    identified = IDENTIFIED[family]
    sql = ["CREATE DATABASE IF NOT EXISTS {};".format(DB_NAME)]
    for host in hosts:
        account = "'{}'@'{}'".format(DB_USER, host)
        sql += ["CREATE USER IF NOT EXISTS {} {} '{}';".format(account, identified, password),
                "ALTER USER {} {} '{}';".format(account, identified, password),
                # sbtest and sbtest_<variant>: variants with their own data set load it there.
                "GRANT ALL PRIVILEGES ON `{}%`.* TO {};".format(DB_NAME, account)]
    return "\n".join(sql) + "\n"


def write_password_file(path: str, user: str, password: str) -> None:
    """A MySQL option file only root can read (directory 0700, file 0600, created so)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write("[client]\nuser={}\npassword={}\n".format(user, password))
    os.replace(path + ".tmp", path)


def read_password_file(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep and key.strip() == "password" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None
