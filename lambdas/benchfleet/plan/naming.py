"""One source of truth for names and tags of everything a run creates."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

TAG_RUN_ID = "benchfleet:run-id"
TAG_TARGET_ID = "benchfleet:target-id"
TAG_EXPIRES_AT = "benchfleet:expires-at"
# The owning deployment ("<stack name>@<region>", BENCHFLEET_STACK from the CDK app): IAM lets a
# stack create and remove only resources that carry its own value, and the sweepers look for it,
# so two stacks in one account never touch each other's runs, and nothing untagged is ever ours.
TAG_STACK = "benchfleet:stack"
# On an existing target's host: its owner lets that stack run the agent there (SendCommand only);
# the sweepers never look for it, so such a host is never stopped or terminated.
TAG_AGENT_HOST = "benchfleet:agent-host"
# On the RDS-managed secret of a run's database: the instance ARN of the one host that may read it
# (IAM compares it with the caller's ec2:SourceInstanceARN; benchfleet.aws.fleet.secret_binding).
TAG_SECRET_READER = "benchfleet:secret-reader"  # noqa: S105 (a tag key, not a password)
DEFAULT_DB_PREFIX = "bf"
RUN_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,78}[a-z0-9]$")
# Names under runs/ in the results bucket that are not runs: step callbacks (aws/steps/callbacks.py)
# and the Distributed Map's results (the ASL's ResultWriter). A run of such an id would share them.
RESERVED_RUN_IDS = ("callbacks", "map-results")


def run_id_problem(run_id: object) -> str | None:
    """Why ``run_id`` cannot be a run's id (None: it can)."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        return "is not a run id ([a-z0-9-], 2-80 characters, no leading or trailing -)"
    if run_id in RESERVED_RUN_IDS:
        held = "step callbacks" if run_id == "callbacks" else "the Distributed Map's results"
        return f"{run_id!r} is reserved: runs/{run_id}/ in the results bucket holds {held}"
    return None


def new_run_id(name: str, now: datetime | None = None) -> str:
    """``<name>-<UTC time>-<4 hex>``: sortable, unique, valid as an execution name, tag and S3 key."""
    now = now or datetime.now(UTC)
    return f"{name[:40].rstrip('-')}-{now:%Y%m%dt%H%M%S}-{secrets.token_hex(2)}"


def raw_key(run_id: str, target_id: str, repetition: int, step: str) -> str:
    """Where the agent's raw JSON lines of one step live, in S3 and under the local data dir."""
    return f"runs/{run_id}/{target_id}/rep-{repetition}/{step}.jsonl"


def tags(run_id: str, target_id: str, expires_at: datetime, owner: str | None = None) -> dict[str, str]:
    """The run's tags; with ``owner``, the owning stack's too (what provision puts on everything)."""
    out = {TAG_RUN_ID: run_id, TAG_TARGET_ID: target_id,
           TAG_EXPIRES_AT: expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if owner is not None:
        out[TAG_STACK] = owner
    return out


# ---- resource names (AWS backend) ----------------------------------------------------------------

DB_IDENTIFIER_MAX = 63


def _digest(*parts: object, size: int = 8) -> str:
    import hashlib

    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:size]


def instance_name(run_id: str, target_id: str, repetition: int, role: str = "target") -> str:
    """The Name tag of an EC2 instance (role: target | client); for people, never parsed."""
    return f"benchfleet-{run_id}-{target_id}-rep-{repetition}-{role}"[:255]


def db_identifier(run_id: str, target_id: str, repetition: int, role: str = "db",
                  prefix: str = DEFAULT_DB_PREFIX) -> str:
    """RDS instance / Aurora cluster identifier: a letter first, [a-z0-9-], no '--', at most 63
    characters, unique per run x target x repetition x role (cluster | writer | db). ``prefix`` is
    the stack's (DB_IDENTIFIER_PREFIX): IAM lets a stack create and tag only DBs named with it, so
    no existing database can be adopted by tagging it."""
    readable = re.sub(r"-+", "-", target_id)[:28].strip("-")
    name = f"{prefix}-{readable}-{_digest(run_id, target_id, repetition, role)}-r{repetition}-{role}"
    return name[:DB_IDENTIFIER_MAX].rstrip("-")


def client_token(run_id: str, target_id: str, repetition: int, zone: int, role: str) -> str:
    """RunInstances idempotency token (at most 64 characters): a retried Lambda never launches twice."""
    return f"bf-{_digest(run_id, target_id, repetition, zone, role, size=32)}"


def cluster_name(run_id: str, target_id: str, repetition: int) -> str:
    """A cluster's ``wsrep_cluster_name``: one per repetition, so no host of another cluster can ever join
    it; "bf-" and 29 hex digits, 32 characters, the most Galera's handshake carries
    (``galera.MAX_CLUSTER_NAME``, which ``clusterjob.node_job`` checks)."""
    return f"bf-{_digest(run_id, target_id, repetition, 0, 'cluster', size=29)}"


def cluster_secret_name(run_id: str, target_id: str, repetition: int, role: str) -> str:
    """The Secrets Manager secret holding a cluster repetition's password for one host that reads it
    (role: ``benchfleet.aws.fleet.cluster.READERS``). The deployment grants on ``benchfleet/*`` only
    (cdk/lib/permissions.ts ``clusterSecretArn``)."""
    return f"benchfleet/{run_id}/{target_id}/rep-{repetition}/{role}"


_CLUSTER_SECRET = re.compile(
    r"^benchfleet/(?P<run>[a-z0-9-]+)/(?P<target>[^/]+)/rep-(?P<rep>[0-9]+)/(?P<role>[a-z0-9]+)$")


def cluster_secret_role(name: str, run_id: str, target_id: str) -> str | None:
    """The role ``name`` is the secret of, when it is exactly the name ``cluster_secret_name`` gives one
    of this run's and target's repetitions (None: it is not): a secret can be tagged after it was
    created, so the sweepers take a tagged secret for the run's only when its name proves it."""
    m = _CLUSTER_SECRET.match(name)
    if m and name == cluster_secret_name(run_id, target_id, int(m["rep"]), m["role"]):
        return m["role"]
    return None


def instance_arn(partition: str, region: str, account: str, instance_id: str) -> str:
    """An EC2 instance's ARN, as IAM puts it in ``ec2:SourceInstanceARN`` for its instance profile."""
    return f"arn:{partition}:ec2:{region}:{account}:instance/{instance_id}"


def host_output_prefix(host_arn: str, run_id: str, target_id: str, repetition: int, step: str) -> str:
    """Where Run Command writes a step's stdout/stderr: under the host's own prefix, the only one its
    role may write (``hosts/${ec2:SourceInstanceARN}/*``), so no host can overwrite another run's
    output; collect copies the agent's lines to the step's raw_key under runs/."""
    return f"hosts/{host_arn}/{run_id}/{target_id}/rep-{repetition}/{step}"


def step_command_key(run_id: str, target_id: str, repetition: int, step: str) -> str:
    """The command start_step sent for a step (its id, host, region, start), beside the step's raw
    key: what "Ask how the step ended" reads when the step's status change never arrived."""
    return raw_key(run_id, target_id, repetition, step).removesuffix(".jsonl") + "/command.json"


def summary_key(run_id: str) -> str:
    return f"runs/{run_id}/summary.json"


def plan_targets_key(run_id: str) -> str:
    """The plan's targets (a JSON array): the Distributed Map's items (ItemReader) and what
    summarize expects an outcome of."""
    return f"runs/{run_id}/plan-targets.json"


def target_row_key(run_id: str, target_id: str, repetition: int) -> str:
    """One repetition's ``targets`` row, written by collect from its prepare step's fingerprint and read
    by summarize (targets.json)."""
    return f"runs/{run_id}/{target_id}/rep-{repetition}/target.json"


def outcome_key(run_id: str, target_id: str, repetition: int) -> str:
    """One repetition's outcome (its steps' results, error, teardown), written by the state machine's
    "Record the outcome" state (statemachines/benchmark-run.asl.json builds the same key)."""
    return f"runs/{run_id}/{target_id}/rep-{repetition}/outcome.json"


def tag_list(tag_map: dict[str, str]) -> list[dict[str, str]]:
    """``tags(...)`` in the Key/Value list form EC2 and RDS take."""
    return [{"Key": k, "Value": v} for k, v in tag_map.items()]
