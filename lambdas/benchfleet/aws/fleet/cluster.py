"""The hosts of one repetition of a ``kind: cluster`` target: its nodes, one per availability zone,
the client (sysbench, and the proxy unless the proxy has a host of its own) and the password secrets.

Every host is launched at once, in the subnets of distinct zones (node ``n1`` in the first, the client
and the proxy beside it), tagged like any target's (run, target, expiry, stack) plus
``benchfleet:node`` (n1..n9 | client | proxy), so teardown, teardown-by-tag and the janitor find them
all by the run's and the target's tags. Nothing is created per run in the network: the deployment's
target security group lets its members reach each other on Galera's ports (cdk/lib/target-fleet.ts).

The benchmark user's password is generated here and kept in Secrets Manager, one secret per host that
reads it (the bootstrap node creates the users; the client and the proxy host log in), because a
host may read only a secret whose ``benchfleet:secret-reader`` tag is its own ARN
(benchfleet.aws.fleet.secret_binding; readiness binds each once the host runs).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import TargetFailed, aws_errors, error_code
from benchfleet.aws.fleet import secret_binding
from benchfleet.aws.fleet import targets as t
from benchfleet.aws.settings import Settings
from benchfleet.cluster import galera
from benchfleet.cluster import jobs as clusterjob
from benchfleet.plan import naming

TAG_NODE = "benchfleet:node"
DB_USER = "sbtest"
# Hosts that read the password secret: the bootstrap node (it creates the users), the client, the proxy.
READERS = ("n1", "client", "proxy")


def zones(ec2: Any, settings: Settings) -> list[tuple[str, str]]:
    """(subnet id, zone) of the deployment's subnets, the first subnet of each distinct zone, in
    SUBNET_IDS order."""
    if not settings.subnet_ids:
        raise TargetFailed("SUBNET_IDS is empty: nowhere to launch")
    with aws_errors():
        found = {s["SubnetId"]: str(s["AvailabilityZone"])
                 for s in ec2.describe_subnets(SubnetIds=list(settings.subnet_ids))["Subnets"]}
    out: list[tuple[str, str]] = []
    for subnet_id in settings.subnet_ids:
        zone = found.get(subnet_id)
        if zone and zone not in {z for _, z in out}:
            out.append((subnet_id, zone))
    return out


def zone_problem(nodes: int, region: str, available: list[str]) -> str | None:
    """Why ``nodes`` nodes cannot each have a zone of their own (None when they can)."""
    if nodes <= len(available):
        return None
    # CDK gives an environment-agnostic stack (one synthesized without its account) 2 zones whatever
    # maxAzs says (VpcProps.maxAzs): the likely cause of exactly 2.
    agnostic = (" (a stack deployed without its account and region known gets 2 zones whatever maxAzs says: "
                "deploy with AWS credentials, `npx cdk deploy` then gives it the CLI's account and region, or "
                "with -c account=... -c region=...)") if len(available) == 2 else ""
    return (f"nodes: {nodes} nodes need {nodes} availability zones, and this deployment has subnets in "
            f"{len(available)} of {region} ({', '.join(available) or 'none'}): deploy with CDK context "
            f"maxAzs of at least {nodes}{agnostic}, or use fewer nodes")


def host_roles(target: dict[str, Any]) -> list[str]:
    """Every host one repetition launches: the nodes, the client, the proxy's own host."""
    roles = [*galera.node_names(int(target["nodes"])), "client"]
    if clusterjob.proxy_has_host(target.get("proxy")):
        roles.append("proxy")
    return roles


def provision(ec2: Any, ssm: Any, secretsmanager: Any, settings: Settings, *, run_id: str,
              target: dict[str, Any], repetition: int, tags: dict[str, str], out: dict[str, Any]) -> None:
    """Launch every host of the cluster and create its secrets, recording each in ``out`` as it is
    created (``hosts``: role -> {instance_id, zone, subnet_id}; ``secrets``: role -> ARN;
    ``instance_id``: the client's, where the benchmark steps run), so a failure part-way leaves
    teardown the ids as well as the tags."""
    region = ec2.meta.region_name
    placed = zones(ec2, settings)
    problem = zone_problem(int(target["nodes"]), region, [z for _, z in placed])
    if problem:
        raise TargetFailed(f"target {target['id']}: {problem}")
    password = secrets.token_urlsafe(24)
    out["secrets"] = {}
    for role in [r for r in READERS if r in host_roles(target)]:  # the proxy's only when it has a host
        out["secrets"][role] = create_secret(secretsmanager, settings,
                                             name=naming.cluster_secret_name(run_id, target["id"], repetition, role),
                                             password=password, tags=tags)
    out["hosts"] = {}
    nodes = galera.node_names(int(target["nodes"]))
    for role in host_roles(target):
        subnet_id, zone = placed[nodes.index(role)] if role in nodes else placed[0]
        instance_type = {"client": target["client"]["instance_type"],
                         "proxy": (target.get("proxy") or {}).get("instance_type")}.get(role, target["instance_type"])
        instance_id = t.launch_instance(
            ec2, ssm, settings, instance_type=str(instance_type), subnet_id=subnet_id, tags={**tags, TAG_NODE: role},
            name=naming.instance_name(run_id, target["id"], repetition, role),
            token=naming.client_token(run_id, target["id"], repetition, 0, role),
            storage=target.get("storage") if role in nodes else None,
            security_group_ids=groups_of(role, nodes, settings))
        out["hosts"][role] = {"instance_id": instance_id, "zone": zone, "subnet_id": subnet_id,
                              "instance_type": instance_type}
    out["instance_id"] = out["hosts"]["client"]["instance_id"]
    out["instance_type"] = target["client"]["instance_type"]
    out["zone"], out["subnet_id"] = placed[0][1], placed[0][0]


def groups_of(role: str, nodes: list[str], settings: Settings) -> list[str] | None:
    """A host's security groups: a node the nodes' (Galera between them, MySQL from clients); a proxy
    host the clients' (it reaches the nodes as a client) and the proxy's (its port from the clients);
    the client the launch template's (None)."""
    if role in nodes:
        wanted = [settings.cluster_security_group_id]
    elif role == "proxy":
        wanted = [settings.client_security_group_id, settings.proxy_security_group_id]
    else:
        return None
    if not all(wanted):
        raise TargetFailed(f"the deployment names no security group for a cluster's {role} host "
                           "(CLUSTER_SECURITY_GROUP_ID / PROXY_SECURITY_GROUP_ID): redeploy the stack")
    return wanted


def secret_named(name: str, run_id: str, target_id: str | None) -> bool:
    """Whether ``name`` is one provision gives a secret of this run and target
    (``naming.cluster_secret_name``, for a host that reads it)."""
    return target_id is not None and naming.cluster_secret_role(name, run_id, target_id) in READERS


def create_secret(secretsmanager: Any, settings: Settings, *, name: str, password: str,
                  tags: dict[str, str]) -> str:
    """The JSON secret ``{"username", "password"}`` (as RDS's managed secret holds it: the agent reads
    both the same way), tagged with the run at creation; an existing one (a retried Lambda) is reused."""
    body = json.dumps({"username": DB_USER, "password": password})
    try:
        with aws_errors():
            return str(secretsmanager.create_secret(Name=name, SecretString=body,
                                                    Tags=naming.tag_list(tags))["ARN"])
    except ClientError as e:
        if error_code(e) != "ResourceExistsException":
            raise
    with aws_errors():
        return str(secretsmanager.describe_secret(SecretId=name)["ARN"])


def ready(ec2: Any, ssm: Any, secretsmanager: Any, resources: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(every host running and Online in SSM, each host's private address): a host that died fails
    the target naming it. Once all are ready each secret is bound to the host that reads it."""
    addresses: dict[str, str] = {}
    for role, host in (resources.get("hosts") or {}).items():
        try:
            if not t.instance_ready(ec2, ssm, host["instance_id"]):
                return False, {}
        except TargetFailed as e:
            raise TargetFailed(f"cluster host {role}: {e}") from None
        addresses[role] = private_address(ec2, host["instance_id"])
    for role, arn in (resources.get("secrets") or {}).items():
        secret_binding.bind(secretsmanager, arn, resources["hosts"][role]["instance_id"])
    return True, {"hosts": addresses}


def private_address(ec2: Any, instance_id: str) -> str:
    with aws_errors():
        reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    address = reservations[0]["Instances"][0].get("PrivateIpAddress") if reservations else None
    if not address:
        raise TargetFailed(f"instance {instance_id} has no private address")
    return str(address)


def tagged_secrets(secretsmanager: Any, run_id: str, target_id: str, owner: str) -> list[str]:
    """ARNs of the secrets carrying the run's, the target's and the owning stack's tags."""
    filters = [{"Key": "tag-key", "Values": [naming.TAG_RUN_ID]}, {"Key": "tag-value", "Values": [run_id]}]
    wanted = {naming.TAG_RUN_ID: run_id, naming.TAG_TARGET_ID: target_id, naming.TAG_STACK: owner}
    with aws_errors():
        pages = secretsmanager.get_paginator("list_secrets").paginate(Filters=filters)
        return [str(s["ARN"]) for page in pages for s in page["SecretList"]
                if all({x["Key"]: x["Value"] for x in s.get("Tags", [])}.get(k) == v for k, v in wanted.items())
                and not s.get("DeletedDate")]


def delete_secrets(secretsmanager: Any, arns: list[str]) -> list[str]:
    """Delete at once (no recovery window: the password protects a cluster that is gone)."""
    deleted = []
    for arn in arns:
        with aws_errors(), contextlib.suppress(secretsmanager.exceptions.ResourceNotFoundException):
            secretsmanager.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
            deleted.append(arn)
    return deleted
