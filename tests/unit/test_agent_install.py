"""workloads/agent/benchfleet_install.py against fake apt-get / dpkg-query / systemctl / mysql on PATH
(shell scripts that log their argv and stdin) and a temporary root for /etc, /proc and /var paths.
No real package manager runs here."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from tests.agent_modules import imported, load

REPO = Path(__file__).resolve().parents[2]
AGENT_DIR = REPO / "workloads" / "agent"
sys.path.insert(0, str(AGENT_DIR))
_spec = importlib.util.spec_from_file_location("benchfleet_install", AGENT_DIR / "benchfleet_install.py")
assert _spec and _spec.loader
install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install)
_aspec = importlib.util.spec_from_file_location("benchfleet_agent_for_install", AGENT_DIR / "benchfleet_agent.py")
assert _aspec and _aspec.loader
agent = importlib.util.module_from_spec(_aspec)
_aspec.loader.exec_module(agent)
# The agent's run as main() uses it (the modules it imported are what these tests patch), and the
# JobError it raises.
running, jobcheck, emitting = imported("benchfleet_run"), imported("benchfleet_job"), load("benchfleet_emit")

CNF = """[mysqld]
innodb_buffer_pool_size = 50%
max_connections = 500
[mysqld:mariadb]
innodb_adaptive_hash_index_parts = 8
[mysqld:mysql]
innodb_redo_log_capacity = 1G
"""

SCRIPT = """#!/bin/sh
log="$FAKE_DIR/calls.log"
printf '%s' "$(basename "$0")" >> "$log"
for a in "$@"; do printf ' %s' "$a" >> "$log"; done
printf '\\n' >> "$log"
name="$(basename "$0")"
case "$name" in
  dpkg-query)
    for a in "$@"; do pkg="$a"; done
    if grep -qx "$pkg" "$FAKE_DIR/installed" 2>/dev/null; then printf 'install ok installed'; exit 0; fi
    echo "dpkg-query: no packages found matching $pkg" >&2; exit 1 ;;
  dpkg)
    rm -f "$FAKE_DIR/dpkg-interrupted"
    if [ -f "$FAKE_DIR/half-installed" ]; then cat "$FAKE_DIR/half-installed" >> "$FAKE_DIR/installed"; fi
    exit 0 ;;
  apt-get)
    if [ -f "$FAKE_DIR/dpkg-interrupted" ]; then
      echo "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem." >&2; exit 100
    fi
    if [ -f "$FAKE_DIR/apt-killed" ] && [ "$1" != update ] && [ "$7" = install ]; then
      rm -f "$FAKE_DIR/apt-killed"; touch "$FAKE_DIR/dpkg-interrupted"; exit 137
    fi
    if [ -f "$FAKE_DIR/apt-locked" ]; then
      n=$(cat "$FAKE_DIR/apt-locked"); if [ "$n" -gt 0 ]; then echo $((n-1)) > "$FAKE_DIR/apt-locked";
      echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1234 (apt-get)" >&2; exit 100; fi
    fi
    if [ -f "$FAKE_DIR/apt-fail" ]; then echo "E: Unable to locate package mysql-server-8.0" >&2; exit 100; fi
    exit 0 ;;
  systemctl)
    if [ -f "$FAKE_DIR/systemctl-fail" ] && [ "$1" = restart ]; then echo "Job failed" >&2; exit 1; fi
    exit 0 ;;
  mysql)
    cat >> "$FAKE_DIR/sql.log"; exit 0 ;;
esac
"""


@pytest.fixture
def host(tmp_path):
    bin_dir, root, fake = tmp_path / "bin", tmp_path / "root", tmp_path / "fake"
    for d in (bin_dir, root / "proc", root / "etc/mysql/mysql.conf.d", root / "etc/mysql/mariadb.conf.d", fake):
        d.mkdir(parents=True)
    (root / "proc/meminfo").write_text("MemTotal:        8000000 kB\nMemFree: 1 kB\n")
    for name in ("apt-get", "dpkg", "dpkg-query", "systemctl", "mysql"):
        path = bin_dir / name
        path.write_text(SCRIPT)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_DIR": str(fake)}
    records: list[dict] = []
    sleeps: list[float] = []

    def emit(kind, **fields):
        records.append({"type": kind, **fields})

    def make(**kw):
        return install.Installer(emit, root=str(root), env=env, sleep=sleeps.append, **kw)

    class Host:
        pass

    h = Host()
    h.root, h.fake, h.records, h.sleeps, h.make, h.env = root, fake, records, sleeps, make, env
    h.calls = lambda: (fake / "calls.log").read_text().splitlines() if (fake / "calls.log").exists() else []
    return h


def test_ec2_engine_host_installs_configures_restarts_and_creates_the_user(host):
    done = host.make().run({"engine": "mysql-8.0", "mysql_config": "cpu-bound", "cnf": CNF})
    calls = host.calls()
    apt = [c for c in calls if c.startswith("apt-get")]
    assert apt[0].endswith("update -q")
    assert apt[1].endswith("install -y -q --no-install-recommends mysql-server-8.0 sysbench")
    assert "DPkg::Lock::Timeout=60" in apt[1]
    assert "systemctl restart mysql" in calls
    cnf = (host.root / "etc/mysql/mysql.conf.d/zz-benchfleet.cnf").read_text()
    assert "innodb_buffer_pool_size = 3906M" in cnf and "innodb_redo_log_capacity = 1G" in cnf
    assert "innodb_adaptive_hash_index_parts" not in cnf.split("# not applied")[0]
    assert done["config_hash"] and len(done["config_hash"]) == 64
    # The password never appears in argv; SQL goes on stdin; the file is root-only.
    pw_file = host.root / "var/lib/benchfleet/db.cnf"
    password = install.read_password_file(str(pw_file))
    assert password and len(password) >= 24
    assert oct(pw_file.stat().st_mode & 0o777) == "0o600"
    assert oct((pw_file.parent).stat().st_mode & 0o777) == "0o700"
    assert all(password not in c for c in calls)
    sql = (host.fake / "sql.log").read_text()
    for account in ("'sbtest'@'localhost'", "'sbtest'@'127.0.0.1'"):
        # MySQL 8.0 (issue 11 defect 5): a mysql_native_password account, which sysbench can log in
        # to over TCP without TLS (cpu-bound.cnf: ssl = 0); the default caching_sha2_password
        # fails there with client error 2061.
        assert f"CREATE USER IF NOT EXISTS {account} IDENTIFIED WITH mysql_native_password BY '{password}'" in sql
        assert f"ALTER USER {account} IDENTIFIED WITH mysql_native_password BY '{password}'" in sql
        assert f"GRANT ALL PRIVILEGES ON `sbtest%`.* TO {account}" in sql
    assert "CREATE DATABASE IF NOT EXISTS sbtest" in sql
    actions = [(r["type"], r.get("action")) for r in host.records]
    assert actions == [("install", "background-apt"), ("install", "dpkg-configure"), ("install", "apt-update"),
                       ("install", "package"), ("install", "package"), ("install", "cnf"), ("notice", None),
                       ("install", "restart"), ("install", "database")]
    assert calls[0] == "systemctl mask --runtime --now " + " ".join(install.BACKGROUND_APT_UNITS)
    assert calls.index("dpkg --configure -a") < calls.index(apt[0])
    assert done["requested"]["max_connections"] == "500"
    notice = next(r for r in host.records if r["type"] == "notice")
    assert "innodb_adaptive_hash_index_parts" in notice["message"]
    assert all(password not in json.dumps(r) for r in host.records)


def test_mariadb_writes_its_own_conf_dir_and_a_rerun_is_idempotent(host):
    first = host.make()
    first.run({"engine": "mariadb-10.11", "mysql_config": "default", "cnf": CNF})
    password = install.read_password_file(str(host.root / "var/lib/benchfleet/db.cnf"))
    assert (host.root / "etc/mysql/mariadb.conf.d/zz-benchfleet.cnf").exists()
    assert "systemctl restart mariadb" in host.calls()
    (host.fake / "installed").write_text("mariadb-server\nsysbench\n")
    (host.fake / "calls.log").unlink()
    host.records.clear()
    host.make().run({"engine": "mariadb-10.11", "mysql_config": "default", "cnf": CNF})
    assert not any(c.startswith(("apt-get", "dpkg ")) for c in host.calls())
    assert [r.get("status") for r in host.records if r.get("action") == "package"] == ["present", "present"]
    assert install.read_password_file(str(host.root / "var/lib/benchfleet/db.cnf")) == password
    # MariaDB's IDENTIFIED BY makes a mysql_native_password account already; its grammar differs.
    assert f"IDENTIFIED BY '{password}'" in (host.fake / "sql.log").read_text()
    assert "mysql_native_password" not in (host.fake / "sql.log").read_text()


def test_a_retry_after_an_interrupted_install_converges(host):
    """apt-get killed mid-install (SSM timeout, reboot) leaves dpkg interrupted: every later apt-get
    fails until ``dpkg --configure -a`` runs, which the retried prepare step does first."""
    (host.fake / "apt-killed").write_text("")
    with pytest.raises(install.InstallError, match="apt-get install"):
        host.make().run({"engine": "mariadb", "cnf": CNF})
    assert (host.fake / "dpkg-interrupted").exists()
    host.make().run({"engine": "mariadb", "cnf": CNF})
    calls = host.calls()
    retry = calls[calls.index("dpkg --configure -a", calls.index("dpkg --configure -a") + 1):]
    assert any(c.startswith("apt-get") and "install -y" in c for c in retry)
    assert "systemctl restart mariadb" in retry


def test_packages_dpkg_finishes_configuring_need_no_apt(host):
    (host.fake / "installed").write_text("mariadb-server\n")
    (host.fake / "half-installed").write_text("sysbench\n")  # unpacked, not configured
    host.make().run({"engine": "mariadb", "cnf": CNF})
    assert "dpkg --configure -a" in host.calls()
    assert not any(c.startswith("apt-get") for c in host.calls())


def test_background_apt_that_cannot_be_masked_is_a_notice_not_a_failure(host):
    (host.fake / "installed").write_text("sysbench\nmysql-client\npython3-boto3\n")
    sc = host.root.parent / "bin" / "systemctl"
    sc.write_text("#!/bin/sh\necho 'System has not been booted with systemd' >&2; exit 1\n")
    host.make().run({"client": True})
    notice = next(r for r in host.records if r["type"] == "notice")
    assert "background apt not masked" in notice["message"] and "not been booted" in notice["message"]


def test_conf_d_is_the_fallback_when_the_engine_dir_is_missing(host):
    (host.root / "etc/mysql/mysql.conf.d").rmdir()
    host.make().run({"engine": "mysql-8.0", "cnf": CNF})
    assert (host.root / "etc/mysql/conf.d/zz-benchfleet.cnf").exists()


def test_rds_client_installs_sysbench_the_client_and_boto3_only(host):
    host.make().run({"client": True})
    apt = [c for c in host.calls() if c.startswith("apt-get")]
    assert apt[-1].endswith("install -y -q --no-install-recommends sysbench mysql-client python3-boto3")
    assert not any(c.startswith(("systemctl restart", "mysql ")) for c in host.calls())
    assert not (host.root / "var/lib/benchfleet").exists()


def test_apt_lock_contention_is_waited_for_then_bounded(host):
    (host.fake / "apt-locked").write_text("2")
    host.make().run({"client": True})
    assert [r["action"] for r in host.records if r.get("action") == "apt-lock-wait"] == ["apt-lock-wait"] * 2
    assert host.sleeps == [install.APT_RETRY_S] * 2

    (host.fake / "apt-locked").write_text("1000")
    host.records.clear()
    ticks = iter(range(0, 10_000, 100))
    with pytest.raises(install.InstallError, match="apt-get update -q failed") as e:
        host.make(clock=lambda: next(ticks), lock_wait_s=500).run({"client": True})
    assert e.value.fields["exit_code"] == 100 and "Could not get lock" in e.value.fields["output_tail"]


def test_apt_failure_and_unknown_engines_are_errors(host):
    (host.fake / "apt-fail").write_text("")
    with pytest.raises(install.InstallError, match="apt-get") as e:
        host.make().run({"engine": "mysql-8.0", "cnf": CNF})
    assert "Unable to locate package" in e.value.fields["output_tail"]
    with pytest.raises(install.InstallError, match="not packaged"):
        host.make().run({"engine": "mysql-8.4", "cnf": CNF})
    with pytest.raises(install.InstallError, match="cnf"):
        host.make().run({"engine": "mysql-8.0"})


def test_a_refused_restart_is_reported_with_the_service_status(host):
    (host.fake / "systemctl-fail").write_text("")
    with pytest.raises(install.InstallError, match="systemctl restart mysql failed"):
        host.make().run({"engine": "mysql-8.0", "cnf": CNF})


def test_the_agent_reports_an_install_failure_as_an_error_record_and_exits_non_zero(host, monkeypatch, capsys):
    (host.fake / "apt-fail").write_text("")
    monkeypatch.setattr(running.benchfleet_install, "Installer",
                        lambda emit: install.Installer(emit, root=str(host.root), env=host.env,
                                                       sleep=host.sleeps.append))
    # The agent imports its own copy of the module: make it raise the class this test's copy raises.
    monkeypatch.setattr(running.benchfleet_install, "InstallError", install.InstallError)
    job = {"run_id": "r", "target_id": "t", "repetition": 1, "workload": "w",
           "step": {"name": "prepare", "kind": "prepare", "threads": 1, "duration_s": 0},
           "sysbench": {"test": "oltp_read_write", "options": {}},
           "db": {"host": "127.0.0.1", "user": "sbtest", "password_file": "/nonexistent/db.cnf"},
           "install": {"engine": "mysql-8.0", "mysql_config": "default", "cnf": CNF}}
    code = agent.main(["--job-json", json.dumps(job)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == emitting.EXIT_FAILED
    assert lines[-1]["type"] == "error" and lines[-1]["stage"] == "install"
    assert "Unable to locate package" in lines[-1]["output_tail"]


def test_the_agent_reads_the_password_from_the_file_or_the_secret_never_the_job(tmp_path, monkeypatch):
    path = tmp_path / "db.cnf"
    install.write_password_file(str(path), "sbtest", "s3cret-from-file")
    running._PASSWORDS.clear()
    job = {"db": {"password_file": str(path)}, "sysbench": {"test": "oltp_read_only", "options": {}}}
    conn = running.connect(job)
    argv = running.sysbench_argv(job, "run", {}, conn)
    # Never on the command line (`ps` shows argv to every user): in sysbench's own option file,
    # readable by this user only, removed when the agent is done.
    assert not any("s3cret" in a or a.startswith("--mysql-password") for a in argv)
    config = Path(next(a.split("=", 1)[1] for a in argv if a.startswith("--config-file=")))
    assert config.read_text() == "mysql-password=s3cret-from-file\n"
    assert oct(config.stat().st_mode & 0o777) == "0o600" and oct(config.parent.stat().st_mode & 0o777) == "0o700"
    conn.close()
    assert not config.parent.exists()
    with pytest.raises(jobcheck.JobError, match="prepare step"):
        running.db_password({"db": {"password_file": str(tmp_path / "missing.cnf")}})

    seen = []

    class FakeClient:
        def get_secret_value(self, SecretId):
            seen.append(SecretId)
            return {"SecretString": json.dumps({"username": "benchfleet", "password": "from-secret"})}

    fake_boto3 = type(sys)("boto3")
    fake_boto3.client = lambda service, region_name, endpoint_url=None: (
        seen.append((service, region_name)), FakeClient())[1]
    monkeypatch.setitem(sys.modules, "boto3", fake_boto3)
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-abc-123"
    assert running.db_password({"db": {"password_secret_arn": arn}}) == "from-secret"
    assert running.db_password({"db": {"password_secret_arn": arn}}) == "from-secret"
    assert seen == [("secretsmanager", "eu-west-1"), arn]  # read once per process
    running._PASSWORDS.clear()


@pytest.mark.parametrize("engine", ["mysql-8.0", "mysql-8.0.36", "mysql", "mariadb", "mariadb-10.11",
                                    "mysql-8.4", "mysql-5.7"])
def test_what_plan_accepts_for_ec2_is_what_the_agent_can_install(engine):
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.steps import jobs

    try:
        install.engine_family(engine)
        installable = True
    except install.InstallError:
        installable = False
    assert runplan._ec2_engine_ok(engine) is installable
    assert jobs.PASSWORD_FILE == install.PASSWORD_FILE and os.path.isabs(install.PASSWORD_FILE)


def test_a_variants_settings_switch_on_the_host_by_set_global_or_restart(host):
    """Issue 24: the agent switches an ec2 host's server to a step's variant: SET GLOBAL (as root over
    the socket) where the plan says so, else the variant's cnf and a restart; where the server runs
    its settings already, nothing. A restart that fails is the variant's error."""
    durable = "[mysqld]\ninnodb_flush_log_at_trx_commit = 1\nsync_binlog = 1\n"
    relaxed = "[mysqld]\ninnodb_flush_log_at_trx_commit = 2\nsync_binlog = 0\n"
    fsync = durable + "innodb_flush_method = fsync\n"
    varying = ["innodb_flush_log_at_trx_commit", "innodb_flush_method", "sync_binlog"]
    host.make().run({"engine": "mariadb", "mysql_config": "durable", "cnf": durable, "variant": "durable"})
    before = len(host.calls())
    agent_side = host.make()

    def switch(variant: str, cnf: str, table: dict) -> dict:
        return agent_side.switch_variant({"engine": "mariadb", "mysql_config": variant, "cnf": cnf, "varying": varying,
                                          "switch": table}, variant)

    assert switch("durable", durable, {}) == {"method": "none", "requested": {
        "innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"}}
    done = switch("relaxed", relaxed, {"durable": "set-global", "fsync": "restart"})
    assert done["method"] == "set-global" and done["requested"]["sync_binlog"] == "0"
    sql = (host.fake / "sql.log").read_text()
    assert "SET GLOBAL innodb_flush_log_at_trx_commit = 2;" in sql and "SET GLOBAL sync_binlog = 0;" in sql
    assert not any(c.startswith("systemctl restart") for c in host.calls()[before:])
    done = switch("fsync", fsync, {"durable": "restart", "relaxed": "restart"})
    assert done["method"] == "restart" and "systemctl restart mariadb" in host.calls()[before:]
    assert "innodb_flush_method = fsync" in (host.root / "etc/mysql/mariadb.conf.d/zz-benchfleet.cnf").read_text()
    assert json.loads((host.root / "var/lib/benchfleet/variant.json").read_text())["variant"] == "fsync"
    (host.fake / "systemctl-fail").touch()
    with pytest.raises(install.InstallError, match="systemctl restart mariadb failed"):
        switch("durable", durable, {"fsync": "restart", "relaxed": "set-global"})


def test_storage_is_built_after_its_tools_and_before_the_cnf_and_the_restart(host, monkeypatch):
    """An ec2 target's data volumes (benchfleet_storage.py, tested on its own in test_agent_storage.py):
    mdadm and xfsprogs installed with the engine when missing, the data directory moved onto the array
    before the cnf is written and the server restarted on it, the layout handed back for the fingerprint."""
    built = []

    def build(self, spec, service):
        built.append((spec, service, (host.root / "etc/mysql/mariadb.conf.d/zz-benchfleet.cnf").exists(),
                      any(c.startswith("systemctl restart") for c in host.calls())))
        return {"device": "/dev/md0", "level": 10}

    monkeypatch.setattr(install.benchfleet_storage.Storage, "build", build)
    storage = {"type": "gp3", "count": 2, "raid": 0, "filesystem": "xfs", "mount_options": "noatime",
               "volumes": [{"volume_id": "vol-1", "device": "/dev/sdf"}, {"volume_id": "vol-2", "device": "/dev/sdg"}]}
    done = host.make().run({"engine": "mariadb", "mysql_config": "default", "cnf": CNF, "storage": storage})
    apt = [c for c in host.calls() if c.startswith("apt-get") and "install -y" in c]
    assert apt[0].endswith("--no-install-recommends mariadb-server sysbench mdadm xfsprogs")
    assert built == [(storage, "mariadb", False, False)]  # before the cnf and before any restart
    assert done["storage_layout"] == {"device": "/dev/md0", "level": 10}
    assert install.storage_packages({"count": 1, "filesystem": "ext4"}) == ["e2fsprogs"]


def test_a_storage_failure_is_the_prepare_steps_error_naming_the_device(monkeypatch, capsys):
    def fail(self, spec):
        raise running.benchfleet_storage.StorageError("volume vol-9 (/dev/sdm) did not appear under /dev/disk/by-id",
                                                      device="volume vol-9 (/dev/sdm)")

    monkeypatch.setattr(running.benchfleet_install.Installer, "run", fail)
    job = {"run_id": "r", "target_id": "t", "repetition": 1, "workload": "w",
           "step": {"name": "prepare", "kind": "prepare", "threads": 1, "duration_s": 1},
           "install": {"engine": "mariadb", "cnf": CNF}, "db": {"host": "127.0.0.1"},
           "sysbench": {"test": "oltp_read_only", "options": {}}}  # a whole job: the agent refuses less
    assert agent.main(["--job-json", json.dumps(job)]) == emitting.EXIT_FAILED
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["type"], record["stage"], record["device"]) == ("error", "storage", "volume vol-9 (/dev/sdm)")
    assert record["message"].startswith("volume vol-9 (/dev/sdm) did not appear")
