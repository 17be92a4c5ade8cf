"""The agent's job check: what a job the agent takes looks like, checked before anything runs.

A job is one plan step as JSON (built by benchfleet.agentjob, a cluster host's set-up by
benchfleet.clusterjob). ``check_job`` checks every value the agent will use, with its range -- the
step, the names that become path components, sysbench's test and options or go-tpc's warehouses, the
database connection, variants, blocks and row counts, the server status sources, a cluster host's
set-up -- and raises ``JobError`` naming the field: a bad job is one error record and exit code 2
(benchfleet_agent.main), never a traceback halfway through a step. Keys the agent does not use are
left alone.

Owns ``JobError`` (also what the later phases raise for a job they cannot carry out), the limits the
check enforces and ``SAFE_COMPONENT``, the names that may become a path on the host.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict

import benchfleet_cluster
from benchfleet.workload import gotpc
from benchfleet.workload.sysbench import BUILTIN_TESTS

SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_THREADS = 4096
MAX_STEP_SECONDS = 48 * 3600
# Where the agent keeps what outlives a step on a cloud host (benchfleet.aws.steps.jobs.STATE_DIR).
HOST_STATE_DIR = "/var/lib/benchfleet/state"
_KINDS = ("prepare", "warmup", "measure", "setup")  # setup: a cluster host's (benchfleet_cluster)


class JobError(ValueError):
    """The job document is not usable."""


def _integer(job: Dict[str, Any], path: str, low: int, high: int, required: bool = True) -> None:
    parent, _, key = path.rpartition(".")
    holder = job.get(parent) if parent else job
    value = holder.get(key) if isinstance(holder, dict) else None
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise JobError("{} must be an integer from {} to {}, not {!r}".format(path, low, high, value))


def check_job(job: Any) -> str:
    """The job's shape, before anything runs (every value the agent uses, with its range): JobError
    naming the field, never a traceback later. Returns the step's kind. Keys the agent does not use
    are left alone."""
    if not isinstance(job, dict) or not isinstance(job.get("step"), dict):
        raise JobError("the job must be an object with a 'step' object")
    step = job["step"]
    kind = step.get("kind")
    if kind not in _KINDS:
        raise JobError("step.kind must be prepare, warmup, measure or setup, not {!r}".format(kind))
    named = (("run_id", job.get("run_id")), ("target_id", job.get("target_id")), ("step.name", step.get("name")))
    if kind == "setup":
        for path, value in named:
            if not isinstance(value, str) or not SAFE_COMPONENT.match(value):
                raise JobError("{} must be a name of [A-Za-z0-9._-] (a safe path component), not {!r}".format(
                    path, value))
        _integer(job, "repetition", 1, 1000)
        _check_setup(job.get("setup"))
        return str(kind)
    for path, value in (*named, ("workload", job.get("workload"))):
        if not isinstance(value, str) or not SAFE_COMPONENT.match(value):
            raise JobError("{} must be a name of [A-Za-z0-9._-] (a safe path component), not {!r}".format(
                path, value))
    _integer(job, "repetition", 1, 1000)
    _integer(job, "step.threads", 1, MAX_THREADS)
    _integer(job, "step.duration_s", 0 if kind == "prepare" else 1, MAX_STEP_SECONDS)  # prepare's: an estimate
    _integer(job, "report_interval_s", 1, 60, required=False)
    if job.get("gotpc") is not None:
        _check_gotpc(job)
    else:
        _check_sysbench(job)
    db = job.get("db") if job.get("db") is not None else {}
    if not isinstance(db, dict):
        raise JobError("db must be an object")
    _integer(job, "db.port", 1, 65535, required=False)
    for key in ("host", "user", "database", "password", "password_file", "password_secret_arn", "tls",
                "ssl_ca", "ssl_cert", "ssl_key"):
        if db.get(key) is not None and not isinstance(db[key], str):
            raise JobError("db.{} must be a string".format(key))
    for key in ("requested", "install", "expect_server", "settings", "rows", "verify"):
        where = db if key == "expect_server" else job
        if where.get(key) is not None and not isinstance(where[key], dict):
            raise JobError("{}{} must be an object".format("db." if where is db else "", key))
    _check_variant_keys(job)
    _check_status_keys(job)
    return str(kind)


def _check_sysbench(job: Dict[str, Any]) -> None:
    bench = job.get("sysbench")
    if not isinstance(bench, dict) or not isinstance(bench.get("test"), str) or not bench["test"]:
        raise JobError("sysbench.test is missing")
    if bench["test"] not in BUILTIN_TESTS and not bench["test"].startswith("lua/"):
        # sysbench runs any Lua file it is given by path: an absolute one ran and yielded a summary.
        raise JobError("sysbench.test must be a built-in test ({}) or lua/<script>.lua of the agent bundle, "
                       "not {!r}".format(", ".join(BUILTIN_TESTS), bench["test"][:200]))
    options = bench.get("options") or {}
    if not isinstance(options, dict):
        raise JobError("sysbench.options must be an object")
    for name, value in options.items():
        if not isinstance(value, (bool, int, float, str)) or (isinstance(value, float) and value != value):
            raise JobError("sysbench.options.{} must be a number, a word or true/false".format(name))


def _check_gotpc(job: Dict[str, Any]) -> None:
    """A go-tpc job (benchfleet.agentjob): TPC-C, its warehouses, and a percentile go-tpc prints."""
    bench = job.get("gotpc")
    if not isinstance(bench, dict) or bench.get("test") != "tpcc":
        raise JobError("gotpc.test must be tpcc")
    _integer(job, "gotpc.warehouses", 1, gotpc.MAX_WAREHOUSES)
    if bench.get("percentile") not in gotpc.WORKLOAD_PERCENTILES:
        raise JobError("gotpc.percentile must be one of {}".format(", ".join(map(str, gotpc.WORKLOAD_PERCENTILES))))
    if (job.get("db") or {}).get("tls") == "required":
        raise JobError("db.tls=required: go-tpc 1.0.7 has no TLS option, so it cannot keep that promise")


_COUNTER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$")


_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$")


def _check_setup(setup: Any) -> None:
    """A cluster host's set-up (benchfleet.clusterjob, which documents each field): every value goes
    into a cnf, a proxy configuration or a command, so each is checked before anything runs."""
    if not isinstance(setup, dict) or setup.get("role") not in ("node", "proxy"):
        raise JobError("setup.role must be node or proxy")
    wrap = {"setup": setup}
    if not isinstance(setup.get("password_secret_arn"), str) or not _ARN.match(setup["password_secret_arn"]):
        raise JobError("setup.password_secret_arn must be a Secrets Manager secret ARN")
    if setup["role"] == "node":
        if setup.get("flavor") not in benchfleet_cluster.FLAVOR_PACKAGES:
            raise JobError("setup.flavor must be one of {}".format(", ".join(benchfleet_cluster.FLAVOR_PACKAGES)))
        nodes = setup.get("nodes")
        if not isinstance(nodes, list) or not 1 <= len(nodes) <= 99:
            raise JobError("setup.nodes must be a list of 1 to 99 nodes")
        for i, node in enumerate(nodes):
            if not isinstance(node, dict) or not isinstance(node.get("name"), str) \
                    or not SAFE_COMPONENT.match(node["name"]) or not isinstance(node.get("host"), str) \
                    or not _HOST.match(node["host"]):
                raise JobError("setup.nodes[{}] must be {{name, host}} (a name, an address)".format(i))
        if [n["name"] for n in nodes].count(setup.get("node")) != 1 or \
                {"name": setup.get("node"), "host": setup.get("host")} not in nodes:
            raise JobError("setup.node and setup.host must be one of setup.nodes")
        if not isinstance(setup.get("cluster_name"), str) or not SAFE_COMPONENT.match(setup["cluster_name"]):
            raise JobError("setup.cluster_name must be a name of [A-Za-z0-9._-]")
        if len(setup["cluster_name"]) > benchfleet_cluster.galera.MAX_CLUSTER_NAME:
            raise JobError("setup.cluster_name must be at most {} characters (Galera's handshake carries no "
                           "more: no node could join)".format(benchfleet_cluster.galera.MAX_CLUSTER_NAME))
        if not isinstance(setup.get("cnf"), str) or not isinstance(setup.get("bootstrap"), bool):
            raise JobError("setup.cnf (the cnf text) and setup.bootstrap (true on the first node) are required")
        if setup.get("storage") is not None and not isinstance(setup["storage"], dict):
            raise JobError("setup.storage must be an object")
        _integer(wrap, "setup.memory_mb", 64, 16 * 1024 * 1024, required=False)
        _integer(wrap, "setup.synced_timeout_s", 1, 24 * 3600)
        _integer(wrap, "setup.expected_size", 1, len(nodes), required=False)
        return
    if setup.get("software") not in ("haproxy", "proxysql"):
        raise JobError("setup.software must be haproxy or proxysql")
    backends = setup.get("backends")
    if not isinstance(backends, list) or not backends:
        raise JobError("setup.backends must be a list of {name, host, port}")
    for i, backend in enumerate(backends):
        if not isinstance(backend, dict) or not SAFE_COMPONENT.match(str(backend.get("name"))) \
                or not _HOST.match(str(backend.get("host"))):
            raise JobError("setup.backends[{}] must be {{name, host, port}}".format(i))
        _integer({"b": backend}, "b.port", 1, 65535)
    if setup.get("listen_host") is not None and not _HOST.match(str(setup["listen_host"])):
        raise JobError("setup.listen_host must be an address")
    if setup.get("writes", "one") not in ("one", "all"):
        raise JobError("setup.writes must be one or all")
    if setup.get("stats_password", "generated") not in ("generated", "secret"):
        raise JobError("setup.stats_password must be generated or secret")
    for key in ("listen_port", "admin_port"):
        _integer(wrap, "setup." + key, 1, 65535)
    _integer(wrap, "setup.timeout_s", 1, 24 * 3600)


_SOURCE_KINDS = ("mysql", "haproxy", "proxysql")


def _check_status_keys(job: Dict[str, Any]) -> None:
    """The server status the agent reads every second (benchfleet_status): counters go into SQL and
    sources name the servers and proxies it connects to, so each is checked before anything runs."""
    status = job.get("status")
    if status is None:
        return
    if not isinstance(status, dict):
        raise JobError("status must be an object")
    counters = status.get("counters")
    if not isinstance(counters, list) or not all(isinstance(c, str) and _COUNTER.match(c) for c in counters):
        raise JobError("status.counters must be a list of SHOW GLOBAL STATUS names, not {!r}".format(counters))
    _integer(job, "status.interval_s", 1, 60, required=False)
    _integer(job, "status.cluster_nodes", 1, 99, required=False)
    sources = status.get("sources")
    if sources is None:
        return
    if not isinstance(sources, list):
        raise JobError("status.sources must be a list")
    for i, source in enumerate(sources):
        if not isinstance(source, dict) or source.get("kind") not in _SOURCE_KINDS:
            raise JobError("status.sources[{}].kind must be one of {}".format(i, ", ".join(_SOURCE_KINDS)))
        name = source.get("name")
        if not isinstance(name, str) or not SAFE_COMPONENT.match(name):
            raise JobError("status.sources[{}].name must be a name of [A-Za-z0-9._-], not {!r}".format(i, name))
        port = source.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
            raise JobError("status.sources[{}].port must be a port number, not {!r}".format(i, port))
        kept = source.get("password_file")  # a ProxySQL statistics password kept on this host
        if kept is not None and not (isinstance(kept, str) and os.path.isabs(kept) and ".." not in kept.split("/")):
            raise JobError("status.sources[{}].password_file must be an absolute path, not {!r}".format(i, kept))


def _check_variant_keys(job: Dict[str, Any]) -> None:
    """The keys variants, blocks, row counts and disk figures added: each record carries the variant
    and block (what results are paired by), the settings are waited for and applied, the row count is
    kept in a file: a value of the wrong type would fail halfway or label every record wrongly."""
    for path, value in (("variant", job.get("variant")), ("settings.variant", (job.get("settings") or {}).get(
            "variant"))):
        if value is not None and not (isinstance(value, str) and SAFE_COMPONENT.match(value)):
            raise JobError("{} must be a name of [A-Za-z0-9._-], not {!r}".format(path, value))
    applied = (job.get("settings") or {}).get("variant") if isinstance(job.get("settings"), dict) else None
    if applied is not None and applied != job.get("variant"):
        # Every record is labelled with ``variant``; the server runs ``settings.variant``'s settings.
        raise JobError("settings.variant {!r} is not the step's variant {!r}: its records would be labelled "
                       "with one variant and measure another's settings".format(applied, job.get("variant")))
    _integer(job, "step.block", 1, 1000, required=False)
    _integer(job, "settings.wait_s", 0, 3600, required=False)
    _integer(job, "verify.settle_s", 0, 3600, required=False)
    varying = (job.get("verify") or {}).get("varying")
    if varying is not None and not (isinstance(varying, list) and all(isinstance(n, str) for n in varying)):
        raise JobError("verify.varying must be a list of setting names")
    settings = job.get("settings") or {}
    for key in ("requested", "apply"):
        if settings.get(key) is not None and not isinstance(settings[key], dict):
            raise JobError("settings.{} must be an object".format(key))
    _integer(job, "rows.prepared", 0, 10 ** 13, required=False)
    for path, value in (("rows.state_dir", (job.get("rows") or {}).get("state_dir")),
                        ("data_dir", job.get("data_dir"))):
        if value is not None and not (isinstance(value, str) and os.path.isabs(value)
                                      and ".." not in value.split("/") and "\n" not in value):
            raise JobError("{} must be an absolute path, not {!r}".format(path, value))
    state = (job.get("rows") or {}).get("state_dir")
    if state is not None and state.rstrip("/") != HOST_STATE_DIR and \
            state.rstrip("/").split("/")[-2:] != ["state", str(job.get("run_id"))]:
        # The agent writes files there: the host's state folder, or a local run's own (state/<run id>).
        raise JobError("rows.state_dir must be {} or a run's state/<run id> folder, not {!r}".format(
            HOST_STATE_DIR, state))
