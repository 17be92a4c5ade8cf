"""The agent's job for one step on AWS: ``agentjob.agent_job`` plus where the database is.

No database password travels in the job (SSM keeps a command's parameters in its history):

- ec2: the engine runs on the target itself. The prepare step's ``install`` (from the plan: engine,
  mysql_config and the cnf text) makes the agent install and configure it and create the ``sbtest``
  user with a password generated on the host, kept in ``PASSWORD_FILE`` (root only), which
  ``db.password_file`` points every step at;
- rds / aurora: the endpoint found by readiness; ``db.password_secret_arn`` names the managed master
  secret, which the agent reads on the client with the instance role (the prepare step installs
  sysbench, the mysql client and python3-boto3 there);
- existing: the host, user and schema (``database``) the user named; ``db.password_secret_arn`` when
  the spec gives one (the agent reads it with the instance's own role), nothing is installed.

TLS (``db.tls``, workloads/agent/benchfleet_dbclient.py): off on an ec2 target's loopback; required
to RDS and Aurora (RDS for MariaDB 11.8+ refuses anything else, and MySQL 8.4's default
caching_sha2_password needs it); preferred to an existing endpoint unless the target says more.
"""

from __future__ import annotations

from typing import Any

from benchfleet.aws.events import Resources, Step, StepState
from benchfleet.aws.planning import dbparams
from benchfleet.cluster import galera
from benchfleet.cluster import jobs as clusterjob
from benchfleet.plan import naming
from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.model import PlanStep
from benchfleet.spec.targets import ExistingTarget
from benchfleet.spec.workload import Workload

# workloads/agent/benchfleet_install.py PASSWORD_FILE: where the install step keeps the password.
PASSWORD_FILE = "/var/lib/benchfleet/db.cnf"  # noqa: S105 - a path, not a password
# Where the install puts the engine's data directory (workloads/agent/benchfleet_storage.py DATA_DIR).
DATA_DIR = "/var/lib/mysql"
# Where the agent keeps what outlives a step on the host (the rows in an insert workload's table).
STATE_DIR = "/var/lib/benchfleet/state"
# Client certificate files on the client host, for sysbench builds that need them for TLS.
TLS_FILES = ("ssl_ca", "ssl_cert", "ssl_key")


def instance_of(state: StepState) -> str | None:
    return host_instance(state.resources, state.step, state.target["id"])


def host_instance(resources: Resources, step: Step, target_id: str) -> str | None:
    """The host a step runs on (start_step sends it there, collect reads its output): a cluster's
    set-up step names its host (a node, the client, the proxy's); every other step runs on the
    target's (the client of rds / aurora / cluster)."""
    if step.host:
        host = resources.hosts.get(step.host)
        if not host:
            raise ValueError(f"target {target_id} has no host {step.host} for step {step.name}")
        return str(host["instance_id"])
    return resources.instance_id


def _cluster_nodes(state: StepState) -> list[tuple[str, str]]:
    """(name, private address) of every node, as readiness found them."""
    addresses = (state.db or {}).get("hosts") or {}
    names = galera.node_names(int(state.target["nodes"]))
    missing = [n for n in names if n not in addresses]
    if missing:
        raise ValueError(f"cluster {state.target['id']}: no address for {', '.join(missing)}")
    return [(n, str(addresses[n])) for n in names]


def _proxy_host(state: StepState) -> str | None:
    """The private address of the proxy's own host, as readiness found it (None: the proxy runs on the
    client host)."""
    if not clusterjob.proxy_has_host(state.target.get("proxy")):
        return None
    own = ((state.db or {}).get("hosts") or {}).get("proxy")
    if not own:
        raise ValueError(f"cluster {state.target['id']}: no address for its proxy host")
    return str(own)


def cluster_setup_job(state: StepState, volumes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A cluster's set-up step as its agent job (benchfleet.cluster.jobs): the plan's static part
    (runplan.cluster_setup) with the nodes' addresses, the secrets and the data volumes' ids."""
    step, target, setup = state.step, state.target, dict(state.step.setup or {})
    nodes = _cluster_nodes(state)
    secrets = state.resources.secrets
    ids = {"run_id": state.run_id, "target_id": target["id"], "repetition": state.repetition}
    if setup.get("role") == "node":
        storage = dict(setup.get("storage") or {}) or None
        if volumes:
            storage = {**(storage or {}), "volumes": volumes}
        name = str(setup["node"])
        names = [n for n, _ in nodes]
        return clusterjob.node_job(
            **ids, flavor=str(setup["flavor"]), node=name, host=dict(nodes)[name], nodes=nodes,
            cluster_name=naming.cluster_name(state.run_id, target["id"], state.repetition),
            mysql_config=str(setup["mysql_config"]), cnf=str(setup["cnf"]), storage=storage,
            password_secret_arn=secrets["n1"], expected_size=names.index(name) + 1,
            synced_timeout_s=max(60, step.setup_s - 300))
    if setup.get("role") == "proxy":
        reader = "proxy" if step.host == "proxy" else "client"
        return clusterjob.proxy_job(**ids, software=str(setup["software"]), nodes=nodes, own_host=_proxy_host(state),
                                    password_secret_arn=secrets[reader], timeout_s=max(60, step.setup_s - 300))
    raise ValueError(f"step {step.name}: a set-up step of role {setup.get('role')!r}")


def db_of(state: StepState) -> dict[str, Any]:
    target = state.target
    if state.kind == "cluster":  # the writer node, or the proxy (the step's route)
        return clusterjob.client_db(state.step.route or "direct", _cluster_nodes(state),
                                    state.resources.secrets["client"], str(target["proxy"]["software"]),
                                    own_host=_proxy_host(state))
    if state.kind == "ec2":
        return {"host": "127.0.0.1", "port": 3306, "user": "sbtest", "database": "sbtest",
                "password_file": PASSWORD_FILE, "tls": "off"}
    if state.kind == "existing":
        mine = ExistingTarget.model_validate(target)  # the spec's defaults, defined once
        db: dict[str, Any] = {"host": mine.host, "port": mine.port, "user": mine.user, "database": mine.database,
                              "tls": mine.tls}
        db.update({k: getattr(mine, k) for k in ("password_secret_arn", *TLS_FILES) if getattr(mine, k)})
        return db
    if not state.db:
        raise ValueError(f"no database endpoint for {state.kind} target {target['id']}")
    db = {k: v for k, v in state.db.items() if k in ("host", "port", "user", "database", "password_secret_arn")}
    if not db.get("password_secret_arn"):
        raise ValueError(f"{state.kind} target {target['id']} has no managed master secret")
    return {**db, "tls": "required"}


def settings_of(state: StepState) -> dict[str, Any] | None:
    """A variant step's ``settings`` for the agent: on ec2 what it needs to switch the host's server
    itself (the variant's cnf, the settings that differ between variants, the switch table); on rds /
    aurora the values start_step put into the parameter group, which the agent waits to see; elsewhere
    the variant's name (nothing to switch)."""
    step = state.step
    if step.settings is None:
        return None
    given: dict[str, Any] = dict(step.variant_settings) if step.variant_settings else {}
    out: dict[str, Any] = {"variant": step.settings}
    if state.kind == "ec2":
        apply: dict[str, Any] = {k: given[k] for k in ("engine", "mysql_config", "cnf", "varying") if k in given}
        out["apply"] = {**apply, "switch": dict(step.switch)}
    elif state.kind in ("rds", "aurora"):
        out.update(method="parameter-group", wait_s=given.get("wait_s", 0),
                   requested=dbparams.requested(given.get("parameters") or []))
    else:
        out.update(method="none", requested={})
    return out


def installs(state: StepState) -> bool:
    """Whether this step's job installs the host: the first step of the repetition's sequence (with
    variants, the later prepares of other variants run on the server already installed)."""
    return state.step.index == 0 and bool(state.step.install)


def needs_volume_ids(state: StepState) -> int:
    """How many EBS volume ids this step's install needs (0: none; instance-store disks are found by
    their model, not by id)."""
    storage = (state.step.install or {}).get("storage") if installs(state) else None
    if state.step.kind == clusterjob.SETUP:  # a node's set-up builds its data directory
        storage = (state.step.setup or {}).get("storage")
    if not storage or storage.get("type") == "instance-store":
        return 0
    return int(storage.get("count") or 1)


def job_for(state: StepState, volumes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """``volumes``: the ids of the data volumes the instance was launched with, in stripe order
    (``targets.data_volumes``), for the step that builds them (``needs_volume_ids``)."""
    if state.step.kind == clusterjob.SETUP:
        return cluster_setup_job(state, volumes)
    step = PlanStep.model_validate(state.step.model_dump())
    workload = Workload.model_validate(state.step.workload or state.workload)
    # ec2: the engine's data directory on the target (benchfleet_storage.DATA_DIR), the device whose
    # /proc/diskstats the agent samples every second; elsewhere the database is on another host.
    job = agent_job(run_id=state.run_id, target_id=state.target["id"], repetition=state.repetition,
                    workload=workload, step=step, db=db_of(state), settings=settings_of(state),
                    data_dir=DATA_DIR if state.kind == "ec2" else None, state_dir=STATE_DIR,
                    verify=state.step.verify if step.index == 0 else None)
    if installs(state):
        job["install"] = dict(state.step.install or {})
        wanted = needs_volume_ids(state)
        if wanted:
            if not volumes or len(volumes) != wanted:
                raise ValueError(f"{state.target['id']}: the install builds on {wanted} EBS volumes, "
                                 f"but {len(volumes or [])} volume ids were found")
            job["install"]["storage"] = {**job["install"]["storage"], "volumes": volumes}
    if step.index == 0 and state.step.requested:  # rds / aurora: what the run's parameter groups set
        job["requested"] = dict(state.step.requested)
    if state.step.status and state.kind == "cluster":  # every node, and the proxy
        job["status"] = clusterjob.client_status(dict(state.step.status), _cluster_nodes(state),
                                                 str(state.target["proxy"]["software"]), own_host=_proxy_host(state))
    elif state.step.status:
        job["status"] = dict(state.step.status)  # the one server the job connects to
    return job
