"""The agent's run: what each kind of step does on the host, from its connection to its last record.

``run_prepare`` (the prepare step) installs the engine and sysbench on a fresh host where the job says
so (benchfleet_install), records the fingerprint of what is measured (the host, the server and the
settings it really runs, the storage, the placement), refuses a server that does not run the target's
settings or is not the one benchfleet checked, then loads the data set (sysbench cleanup and prepare,
or go-tpc prepare) and starts the row count. ``run_step`` (warm-up and measure steps) switches to a
variant's settings and reads them back, starts sysbench or go-tpc for the step's threads and seconds
with the server status poller beside it, and hands the tool's output to benchfleet_sample.
``run_setup`` is a cluster host's set-up (benchfleet_cluster). The tools' command lines
(``sysbench_argv``, ``gotpc_argv``: the host's own binaries, never a path a job names), the database
connection and its password (a file, a secret or the job) are built here.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
from typing import Any, Dict, List, Optional, Tuple

import benchfleet_cluster
import benchfleet_dbclient
import benchfleet_diskstats
import benchfleet_install
import benchfleet_placement
import benchfleet_rows
import benchfleet_status
import benchfleet_storage
from benchfleet.workload import gotpc
from benchfleet.workload.sysbench import (
    MAX_LINE_CHARS,
    build_command,
    option_refusal,
)
from benchfleet_emit import Emitter
from benchfleet_job import JobError
from benchfleet_sample import CpuTimes, Meters, read_gotpc, read_sysbench

BUNDLE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # workloads/: lua/ and gotpc/ are in it
# The one sysbench this host runs: the distribution's, on PATH. Never a path from the job.
SYSBENCH = "sysbench"
# The one go-tpc: built from workloads/gotpc/go.mod (the pinned version) for this host's architecture
# by `make go-tpc` and shipped in the bundle (gotpc_binary). Never a path from the job.
GOTPC_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# How often the prepare step reads the server again while a parameter group's values settle (verify.settle_s).
SETTLE_POLL_S = 10


def gotpc_binary() -> str:
    """This host's go-tpc: <bundle>/gotpc/bin/go-tpc-<arch>, built for each architecture from the pinned
    workloads/gotpc/go.mod and shipped with the agent (hosts need no Go toolchain or network for it)."""
    arch = GOTPC_ARCH.get(platform.machine())
    path = os.path.join(BUNDLE, "gotpc", "bin", "go-tpc-{}".format(arch))
    if arch is None or not os.access(path, os.X_OK):
        raise JobError("no go-tpc for {} in the agent bundle ({}): `make go-tpc` builds it".format(
            platform.machine(), path))
    return path


def gotpc_argv(job: Dict[str, Any], command: str, threads: int, conn: benchfleet_dbclient.Connection,
               time_s: Optional[int] = None) -> List[str]:
    """go-tpc's argv for this job's database (benchfleet.workload.gotpc.build_command)."""
    db = dict(job.get("db") or {}, host=conn.host, password=db_password(job))
    db.setdefault("port", 3306)
    db.setdefault("user", "sbtest")
    db.setdefault("database", "sbtest")
    try:
        return gotpc.build_command(gotpc_binary(), command, warehouses=int(job["gotpc"]["warehouses"]),
                                   threads=threads, db=db, time_s=time_s,
                                   interval_s=int(job.get("report_interval_s") or 1))
    except (ValueError, KeyError) as e:
        raise JobError("go-tpc: {}".format(e)) from None


def sysbench_argv(job: Dict[str, Any], command: str, extra: Dict[str, Any],
                  conn: benchfleet_dbclient.Connection) -> List[str]:
    """sysbench's argv: the connection comes from ``conn`` (the password from its option file)."""
    bench = job.get("sysbench") or {}
    test = bench.get("test")
    if not isinstance(test, str) or not test:
        raise JobError("sysbench.test is missing")
    if test.startswith("lua/"):
        # Resolved, links followed: a workload script of the bundle's lua/ folder, nothing else.
        folder = os.path.realpath(os.path.join(BUNDLE, "lua"))
        test = os.path.realpath(os.path.join(BUNDLE, test))
        if os.path.dirname(test) != folder or not os.path.isfile(test):
            raise JobError("sysbench.test: {} is not a Lua script in the agent bundle".format(bench.get("test")))
    options = dict(bench.get("options") or {})
    # The spec's rule again (benchfleet.workload.sysbench.option_refusal): a job, however it was made, cannot
    # fake the figures (mysql-dry-run), end the step early (events) or connect elsewhere (db-driver),
    # nor give a value sysbench would refuse mid-run or misread (rate: -5, point_selects: 1e308).
    for name, value in options.items():
        refusal = option_refusal(str(name), in_job=True, value=value)
        if refusal:
            raise JobError("sysbench.options.{}: {}".format(name, refusal))
    options.update(conn.sysbench_options())
    options.update(extra)
    return build_command(test, command, options, sysbench=SYSBENCH)


_PASSWORDS: Dict[str, str] = {}


def db_password(job: Dict[str, Any]) -> Optional[str]:
    """The database password from wherever the job says it is (read once per process)."""
    db = job.get("db") or {}
    if db.get("password") is not None:
        return str(db["password"])
    if db.get("password_file"):
        path = str(db["password_file"])
        if path not in _PASSWORDS:
            found = benchfleet_install.read_password_file(path)
            if found is None:
                raise JobError("no password in {}: the prepare step of this repetition sets up the "
                               "database and writes it".format(path))
            _PASSWORDS[path] = found
        return _PASSWORDS[path]
    if db.get("password_secret_arn"):
        arn = str(db["password_secret_arn"])
        if arn not in _PASSWORDS:
            _PASSWORDS[arn] = secret_password(arn)
        return _PASSWORDS[arn]
    return None


def secret_password(arn: str) -> str:
    """The ``password`` of a Secrets Manager secret (RDS managed master secrets hold JSON with
    username and password), read with the instance's role in the secret's own region."""
    try:
        import boto3  # python3-boto3: installed by the prepare step on RDS / Aurora clients
    except ImportError:
        raise JobError("db.password_secret_arn needs python3-boto3 on this host") from None
    parts = arn.split(":")
    if len(parts) < 7 or parts[2] != "secretsmanager":
        raise JobError("db.password_secret_arn is not a Secrets Manager ARN")
    try:
        # AWS_ENDPOINT_URL_SECRETSMANAGER is botocore's own setting since 1.31; older botocore
        # (Debian 12's python3-boto3) ignores it, so it is passed on explicitly.
        client = boto3.client("secretsmanager", region_name=parts[3],
                              endpoint_url=os.environ.get("AWS_ENDPOINT_URL_SECRETSMANAGER") or None)
        value = client.get_secret_value(SecretId=arn)
        data = json.loads(value["SecretString"])
        return str(data["password"])
    except Exception as e:  # botocore's errors, a secret that is not JSON: say which, never the value
        raise JobError("cannot read the database password from {}: {}".format(arn, type(e).__name__)) from None


def connect(job: Dict[str, Any]) -> benchfleet_dbclient.Connection:
    """The connection settings of this job (after the install step wrote the password file)."""
    try:
        return benchfleet_dbclient.Connection(job.get("db") or {}, db_password(job), sysbench=SYSBENCH)
    except benchfleet_dbclient.ClientError as e:
        raise JobError(str(e)) from None


def fingerprint(job: Dict[str, Any], conn: benchfleet_dbclient.Connection,
                requested: Dict[str, str]) -> Dict[str, Any]:
    """What the figures were measured on, the server's effective settings included."""
    cpu_model, vcpus = None, os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "cpu model")):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_mb = None
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+) kB", f.read())
            memory_mb = int(m.group(1)) // 1024 if m else None
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = vcpus
    return {"cpu_model": cpu_model or platform.processor() or None, "vcpus": vcpus, "cpus_usable": affinity,
            "memory_mb": memory_mb, "arch": platform.machine(), "kernel": platform.release(),
            "os": _os_name(), "python": platform.python_version(),
            "sysbench_version": benchfleet_dbclient.first_line([SYSBENCH, "--version"]),
            "gotpc_version": gotpc_version() if job.get("gotpc") is not None else None,
            "config_hash": job.get("config_hash"), "client_library": conn.library, "tls": conn.tls,
            "hostname_hash": hashlib.sha256(platform.node().encode()).hexdigest()[:12],
            # The device, file system and mount options the data directory is on (and the array the
            # install built for it): what the disk figures of the samples were measured on.
            "storage_layout": benchfleet_storage.measured_layout(str(job["data_dir"])) if job.get("data_dir") else None,
            **benchfleet_dbclient.server_state(conn, requested),
            # Where the figures were measured (EC2: instance metadata), not where the spec asked for.
            **benchfleet_placement.placement()}


def gotpc_version() -> Optional[str]:
    """The go-tpc the steps run, as it says (``Release version: v1.0.7``: the Makefile stamps the pinned
    version in); None when it does not say."""
    try:
        out = subprocess.run([gotpc_binary(), "version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"^Release version:\s*(\S+)", out, re.M)
    return "go-tpc " + found.group(1) if found else None


def _os_name() -> Optional[str]:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def run_setup(job: Dict[str, Any], emit: Emitter) -> int:
    """A cluster host's set-up job: its node, or the client host's proxy (benchfleet_cluster)."""
    setup = job["setup"]
    try:
        benchfleet_cluster.run(setup, emit.emit, secret_password)
    except benchfleet_install.InstallError as e:
        stage = "node" if setup["role"] == "node" else ("proxy-install" if e.fields.get("package") else "proxy")
        return emit.error(stage, str(e), **e.fields)
    except benchfleet_storage.StorageError as e:
        return emit.error("storage", "node {}: {}".format(setup.get("node"), e), node=setup.get("node"), **e.fields)
    return 0


def run_install(job: Dict[str, Any], emit: Emitter) -> Dict[str, Any]:
    """The prepare step's setup of a fresh host (``job["install"]``): what the install reports."""
    spec = job.get("install")
    if not spec:
        return {}
    if not isinstance(spec, dict):
        raise JobError("install must be an object")
    done = benchfleet_install.Installer(emit.emit).run(spec)
    if done.get("config_hash") and not job.get("config_hash"):
        job["config_hash"] = done["config_hash"]
    return done


def run_prepare(job: Dict[str, Any], emit: Emitter) -> int:
    try:
        done = run_install(job, emit)
    except benchfleet_install.InstallError as e:
        return emit.error("install", str(e), **e.fields)
    except benchfleet_storage.StorageError as e:
        return emit.error("storage", str(e), **e.fields)
    conn = connect(job)
    try:
        return _prepare(job, emit, conn, done.get("requested") or job.get("requested") or {})
    finally:
        conn.close()


def _prepare(job: Dict[str, Any], emit: Emitter, conn: benchfleet_dbclient.Connection,
             requested: Dict[str, str]) -> int:
    found = fingerprint(job, conn, requested)
    emit.emit("fingerprint", time=time.time(), **found)
    if found.get("config_differences"):
        emit.emit("notice", stage="fingerprint", time=time.time(),
                  message="the server runs with other values than the cnf asked for: " + ", ".join(
                      "{option} {requested} -> {effective}".format(**d) for d in found["config_differences"]))
    unmet = unmet_settings(job, conn, requested, found)
    if unmet:
        return emit.error("settings", "the server does not run with what the target asks for, so nothing is "
                          "measured: " + "; ".join("{option} asked {requested}, the server runs {effective}".format(**d)
                                                   for d in unmet), settings=unmet)
    if conn.tls == "required" and not found.get("tls_cipher"):
        why = found.get("server_variables_error") or "the session has no TLS cipher"
        return emit.error("tls", "db.tls=required but no TLS connection to {}: {}".format(
            conn.db.get("host"), why))
    where = "{} on {}:{}".format(conn.db.get("database", "sbtest"), conn.host, conn.db.get("port", 3306))
    expected = (conn.db.get("expect_server") or {})
    reached = found.get("server_identity") or {}
    if expected and any(str(expected.get(k)) != str(reached.get(k)) for k in ("hostname", "port", "uuid")):
        return emit.error("server", "the server this host reaches at {}:{} is {} (port {}, id {}), not the one "
                          "benchfleet checked: {} (port {}, id {}); nothing was written".format(
                              conn.host, conn.db.get("port", 3306), reached.get("hostname"), reached.get("port"),
                              reached.get("uuid"), expected.get("hostname"), expected.get("port"),
                              expected.get("uuid")))
    cluster = job.get("status") or {}
    if cluster.get("cluster_nodes"):
        # A cluster is benchmarked only when every node is Synced at full size.
        problem = benchfleet_status.check_cluster(cluster, conn)
        if problem:
            return emit.error("cluster", "the cluster is not Synced at full size before prepare: {}".format(problem))
    guest = not job.get("install")  # an endpoint this job did not set up, maybe holding someone's data
    if guest:
        why = benchfleet_dbclient.ensure_database(conn)
        if why is not None:  # it may exist already: sysbench prepare then says what is wrong
            emit.emit("notice", stage="prepare", time=time.time(), message="CREATE DATABASE IF NOT EXISTS {} "
                      "failed: {}".format(where, why))
        tables, why = benchfleet_dbclient.schema_tables(conn)
        if tables is None:
            return emit.error("tables", "cannot list the tables of {}: {}".format(where, why))
        foreign = [name for name, ours in tables if not ours]
        if foreign:  # sysbench cleanup would drop a same-named table of the user's
            return emit.error("tables", "refusing to prepare in {}: it holds tables benchfleet did not create "
                              "({}); benchfleet drops only its own tables: name an empty schema, or remove "
                              "them yourself".format(where, ", ".join(foreign[:10])))
    step = job["step"]
    started = time.time()
    if job.get("gotpc") is not None:
        # go-tpc drops its tables first (--dropdata), loads the warehouses, then checks them (TPC-C 3.3.2).
        argv = gotpc_argv(job, "prepare", int(step.get("threads") or 1), conn)
        code, failures, tail = run_to_end([*argv, "--dropdata"], conn.dir, failed=_gotpc_failed)
        if code != 0 or failures or not tail.rstrip().endswith("Finished"):
            return emit.error("prepare", "; ".join(failures[:5]) or "go-tpc prepare failed", exit_code=code,
                              output_tail=tail)
    for command in ("cleanup", "prepare") if job.get("gotpc") is None else ():
        argv = sysbench_argv(job, command, {"threads": step.get("threads") or 1}, conn)
        code, failures, tail = run_to_end(argv, conn.dir)
        # cleanup of tables that are not there yet is not a failure; any prepare problem is.
        if command == "prepare" and (code != 0 or failures):
            return emit.error("prepare", "; ".join(failures[:5]) or "sysbench prepare failed",
                              exit_code=code, output_tail=tail)
    if guest:
        tables, why = benchfleet_dbclient.schema_tables(conn)
        created = [name for name, ours in tables or [] if not ours]
        if tables is None or not created:
            return emit.error("tables", "sysbench prepare created no table in {} as this host's client sees it: "
                              "sysbench reached another server{}".format(where, ": " + why if why else ""))
        why = benchfleet_dbclient.mark_tables(conn, created, str(job.get("run_id")))
        if why is not None:  # unmarked, they would block every later run: take them away again
            run_to_end(gotpc_argv(job, "cleanup", 1, conn) if job.get("gotpc") is not None
                       else sysbench_argv(job, "cleanup", {"threads": 1}, conn), conn.dir)
            return emit.error("tables", "cannot mark the tables sysbench created in {} as benchfleet's (the "
                              "account needs ALTER there); they were dropped again: {}".format(where, why))
    benchfleet_rows.RowCounter(job).prepared_now()
    emit.emit("prepared", time=time.time(), seconds=round(time.time() - started, 3))
    return 0


def target_differences(job: Dict[str, Any], found: Dict[str, Any]) -> List[Dict[str, str]]:
    """The settings of ``found`` the server runs with another value that fail the target: all but those
    the spec's variants set apart (``verify.varying``: each variant's step reads them back and a verdict
    between variants the server ran alike is refused, issue 41 item 3, so one value the server changes
    leaves the other variants' comparisons standing) and those the server sizes to its host as it
    documents (``benchfleet_dbclient.SERVER_ADJUSTED``: the prepare step's notice names them)."""
    varying = {str(n).replace("-", "_") for n in (job.get("verify") or {}).get("varying") or []}
    adjusted = found.get("config_adjusted") or []
    return [d for d in found.get("config_differences") or []
            if d["option"].replace("-", "_") not in varying and d not in adjusted]


def unmet_settings(job: Dict[str, Any], conn: benchfleet_dbclient.Connection, requested: Dict[str, str],
                   found: Dict[str, Any]) -> List[Dict[str, str]]:
    """Before anything is measured: the target's settings the server still runs with other values
    after ``verify.settle_s`` (an RDS or Aurora parameter group applies its values in the service's
    own time; a server this host or this machine started runs its cnf from the start: 0)."""
    unmet = target_differences(job, found)
    deadline = time.time() + float((job.get("verify") or {}).get("settle_s") or 0)
    while unmet and time.time() < deadline:
        time.sleep(max(0.0, min(SETTLE_POLL_S, deadline - time.time())))
        unmet = target_differences(job, benchfleet_dbclient.server_state(conn, requested))
    return unmet


def _gotpc_failed(line: str) -> bool:
    return bool(gotpc.parse_output([line]).errors)


def run_to_end(argv: List[str], cwd: str, failed: Any = lambda line: "FATAL" in line) -> Tuple[int, List[str], str]:
    """Run a sysbench (or go-tpc) command to its end with its output in a file, not in memory: (exit
    code, its failure lines (``failed``: sysbench's FATAL), the last 4,000 characters)."""
    path = os.path.join(cwd, "output.log")
    with open(path, "w+b") as sink:
        code = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False, cwd=cwd).returncode
        sink.seek(0)
        failures = []
        for raw in iter(lambda: sink.readline(MAX_LINE_CHARS), b""):
            line = raw.decode("utf-8", "replace").strip()
            if failed(line) and len(failures) < 5:
                failures.append(line[:1000])
        sink.seek(max(0, sink.tell() - 4000))
        tail = sink.read().decode("utf-8", "replace")
    os.unlink(path)
    return code, failures, tail


def run_step(job: Dict[str, Any], emit: Emitter) -> int:
    conn = connect(job)
    try:
        return _run_step(job, emit, conn)
    finally:
        conn.close()


def step_settings(job: Dict[str, Any], conn: benchfleet_dbclient.Connection) -> Optional[Dict[str, Any]]:
    """A variant's step: the settings it must run with, as the server reports them (SHOW GLOBAL
    VARIABLES over the step's own connection) beside the requested values. None without variants."""
    wanted = job.get("settings")
    if not isinstance(wanted, dict):
        return None
    requested = {str(k): str(v) for k, v in (wanted.get("requested") or {}).items()}
    found = benchfleet_dbclient.server_state(conn, requested) if requested else {}
    effective = found.get("server_variables") or {}
    return {"variant": wanted.get("variant"), "method": wanted.get("method"), "requested": requested,
            "effective": {k.replace("-", "_"): effective.get(k.replace("-", "_")) for k in requested},
            "differences": found.get("config_differences") or [],
            # Options no server variable shows (skip_log_bin, a plugin's load option): applied, but
            # nothing reads back what they did; without this their effective value read as a plain null.
            "unverified": found.get("config_unverified") or [],
            "error": found.get("server_variables_error")}


def settings_notice(settings: Optional[Dict[str, Any]]) -> Optional[str]:
    """What a variant step's user is told about settings whose effect cannot be read back."""
    if not settings or not settings.get("unverified"):
        return None
    return ("variant {}: no server variable shows {}: applied as asked, its effect not verified".format(
        settings["variant"], ", ".join(settings["unverified"])))


def _run_step(job: Dict[str, Any], emit: Emitter, conn: benchfleet_dbclient.Connection) -> int:
    step = job["step"]
    duration = int(step["duration_s"])
    wanted = job.get("settings")
    if isinstance(wanted, dict) and isinstance(wanted.get("apply"), dict):
        # A server this host runs (ec2): switch it to the variant's settings first.
        try:
            done = benchfleet_install.Installer(emit.emit).switch_variant(wanted["apply"], str(wanted.get("variant")))
        except benchfleet_install.InstallError as e:
            return emit.error("variant", "variant {}: its settings could not be applied: {}".format(
                wanted.get("variant"), e), **e.fields)
        wanted.update(method=done["method"], requested=done["requested"])
    settings = step_settings(job, conn)
    deadline = time.time() + float((wanted or {}).get("wait_s") or 0)
    while settings and settings["differences"] and time.time() < deadline:
        # A managed server (rds / aurora) takes a parameter group's change in its own time.
        time.sleep(5)
        settings = step_settings(job, conn)
    if settings and settings["differences"] and (wanted or {}).get("wait_s"):
        return emit.error("variant", "variant {}: the server still runs with other values after {} s: {}".format(
            settings["variant"], wanted.get("wait_s"), ", ".join(
                "{option} {requested} -> {effective}".format(**d) for d in settings["differences"])))
    if settings and settings["differences"]:
        emit.emit("notice", stage="settings", time=time.time(),
                  message="variant {}: the server runs with other values than requested: {}".format(
                      settings["variant"], ", ".join("{option} {requested} -> {effective}".format(**d)
                                                     for d in settings["differences"])))
    unverified = settings_notice(settings)
    if unverified:
        emit.emit("notice", stage="settings", time=time.time(), message=unverified)
    # The histogram (printed at the end, before the summary) gives the step's latency distribution
    # (summary's latency_percentiles_ms); sysbench prints only one percentile otherwise.
    if job.get("gotpc") is not None:
        argv = gotpc_argv(job, "run", int(step["threads"]), conn, time_s=duration)
    else:
        argv = sysbench_argv(job, "run", {"threads": int(step["threads"]), "time": duration, "histogram": "on",
                                          "report-interval": int(job.get("report_interval_s") or 1)}, conn)
    started = time.time()
    disk = benchfleet_diskstats.DiskStats(job.get("data_dir"))
    if job.get("data_dir") and disk.why_not:
        emit.emit("notice", stage="diskstats", time=time.time(),
                  message="no disk figures for this step: {}".format(disk.why_not))
    rows = benchfleet_rows.RowCounter(job)
    rows.start()
    rows_at_start = rows.rows
    cpu = CpuTimes()
    before, disk_before = cpu.read(), disk.read()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                cwd=conn.dir, errors="replace")
    except OSError as e:
        cpu.close()
        return emit.error("run", "cannot start sysbench: {}".format(e))
    assert proc.stdout is not None
    # Server status per second beside sysbench's; a cluster that stops being whole ends the step.
    poller = None
    if job.get("status"):
        poller = benchfleet_status.StatusPoller(job["status"], conn, emit.emit, started,
                                                on_problem=lambda _reason: proc.terminate())
        poller.start()
    read = read_gotpc if job.get("gotpc") is not None else read_sysbench
    try:
        return read(job, emit, proc, Meters(cpu, before, disk, disk_before, rows, rows_at_start),
                    started, duration, poller, settings)
    finally:
        if poller is not None:
            poller.stop()
            poller.join()
