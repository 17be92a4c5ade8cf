"""Target lifecycle on AWS: EC2 hosts, RDS MySQL, Aurora MySQL (+ an EC2 client in the same zone).

Every resource is tagged at creation with the run, the target and the expiry; names come from
benchfleet.plan.naming. Clients (ec2, rds, ssm) are passed in.
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import TargetFailed, aws_errors, error_code
from benchfleet.aws.fleet import paramgroups
from benchfleet.aws.settings import Settings
from benchfleet.plan import naming

UBUNTU_AMI_PARAMETER = "/aws/service/canonical/ubuntu/server/24.04/stable/current/{arch}/hvm/ebs-gp3/ami-id"
# The root volume, as the launch template gives it (cdk/lib/target-fleet.ts; tests/synthesized checks
# both): restated in every RunInstances that adds data volumes, so the root stays encrypted and sized
# whether EC2 merges the request's block device mappings with the template's or replaces them.
ROOT_DEVICE = "/dev/sda1"
ROOT_VOLUME = {"VolumeSize": 30, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True}
# Data volumes' device names, in stripe order (the EC2 user guide's names for EBS on Linux: /dev/sd[f-z],
# then /dev/xvdb[a-z]). Nitro exposes them as /dev/nvme*n1 in any order: the agent finds them by
# volume id; Xen types keep the name (/dev/sdf as /dev/xvdf).
DATA_DEVICES = (*tuple(f"/dev/sd{c}" for c in "fghijklmnopqrstuvwxyz"), "/dev/xvdba", "/dev/xvdbb", "/dev/xvdbc")
MASTER_USER = "benchfleet"
DATABASE = "sbtest"
_FAMILY = re.compile(r"^([a-z]+)(\d+)([a-z-]*)")


def architecture(instance_type: str) -> str:
    """``arm64`` for Graviton families (a g after the generation: m6g, c7gn, r6gd, t4g, hpc7g),
    else ``amd64`` (Canonical's parameter names)."""
    m = _FAMILY.match(instance_type.split(".")[0])
    return "arm64" if m and "g" in m.group(3) else "amd64"


def ubuntu_ami(ssm: Any, arch: str) -> str:
    with aws_errors():
        value = ssm.get_parameter(Name=UBUNTU_AMI_PARAMETER.format(arch=arch))["Parameter"]["Value"]
    return str(value)


def engine_version(rds: Any, engine: str, spec_engine: str) -> tuple[str, str]:
    """(version, parameter group family) of the newest version of ``engine`` (mysql | mariadb |
    aurora-mysql) in the spec's major line, looked up (DescribeDBEngineVersions), never hard-coded.
    Aurora MySQL 3 is MySQL 8.0. The family is what the run's parameter groups are created for."""
    wanted = spec_engine.partition("-")[2]  # "mysql-8.0" -> "8.0"; "" for any
    versions: dict[str, str] = {}
    marker: str | None = None
    with aws_errors():
        while True:
            page = rds.describe_db_engine_versions(Engine=engine, **({"Marker": marker} if marker else {}))
            versions.update({v["EngineVersion"]: str(v.get("DBParameterGroupFamily") or "")
                             for v in page["DBEngineVersions"]})
            marker = page.get("Marker")
            if not marker:
                break
    if wanted:
        versions = {v: f for v, f in versions.items() if v == wanted or v.startswith(wanted + ".")}
    if not versions:
        raise TargetFailed(f"no {engine} engine version matches {spec_engine}")

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version))

    newest = max(versions, key=key)
    if not versions[newest]:
        raise TargetFailed(f"{engine} {newest}: DescribeDBEngineVersions names no parameter group family")
    return newest, versions[newest]


def subnet_for(ec2: Any, settings: Settings, zone_index: int) -> tuple[str, str]:
    if not settings.subnet_ids:
        raise TargetFailed("SUBNET_IDS is empty: nowhere to launch")
    subnet_id = settings.subnet_ids[zone_index % len(settings.subnet_ids)]
    with aws_errors():
        subnet = ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
    return subnet_id, str(subnet["AvailabilityZone"])


def launch_instance(ec2: Any, ssm: Any, settings: Settings, *, instance_type: str, subnet_id: str,
                    tags: dict[str, str], name: str, token: str,
                    storage: dict[str, Any] | None = None, security_group_ids: list[str] | None = None) -> str:
    """One Ubuntu LTS host with the SSM agent (from the launch template / instance profile), in the
    launch template's security group unless ``security_group_ids`` replace it (a cluster's hosts)."""
    args: dict[str, Any] = {
        "ImageId": ubuntu_ami(ssm, architecture(instance_type)), "InstanceType": instance_type,
        "MinCount": 1, "MaxCount": 1, "SubnetId": subnet_id, "ClientToken": token,
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled",
                            "InstanceMetadataTags": "enabled"},
        "TagSpecifications": [{"ResourceType": kind, "Tags": naming.tag_list({**tags, "Name": name})}
                              for kind in ("instance", "volume")],
    }
    if settings.launch_template_id:
        args["LaunchTemplate"] = {"LaunchTemplateId": settings.launch_template_id, "Version": "$Latest"}
    else:
        if settings.target_instance_profile_arn:
            args["IamInstanceProfile"] = {"Arn": settings.target_instance_profile_arn}
        if settings.client_security_group_id:
            args["SecurityGroupIds"] = [settings.client_security_group_id]
    if security_group_ids:  # RunInstances' groups replace the template's
        args["SecurityGroupIds"] = list(security_group_ids)
    if storage and storage.get("type") != "instance-store":
        args["BlockDeviceMappings"] = block_devices(storage)
    with aws_errors():
        return str(ec2.run_instances(**args)["Instances"][0]["InstanceId"])


def block_devices(storage: dict[str, Any]) -> list[dict[str, Any]]:
    """The root volume and ``storage["volumes"]`` data volumes, each with the type, size, IOPS and
    throughput given, encrypted, deleted with the instance (and tagged with the run at launch, by
    RunInstances' volume TagSpecification). Instance-store NVMe disks need no mapping: EC2 attaches
    every one by itself."""
    ebs: dict[str, Any] = {"VolumeSize": storage.get("size_gb", 100), "VolumeType": storage.get("type", "gp3"),
                           "Encrypted": True, "DeleteOnTermination": True}
    if storage.get("iops"):
        ebs["Iops"] = storage["iops"]
    if storage.get("throughput_mbps") and ebs["VolumeType"] == "gp3":
        ebs["Throughput"] = storage["throughput_mbps"]
    count = int(storage.get("volumes") or 1)
    return [{"DeviceName": ROOT_DEVICE, "Ebs": dict(ROOT_VOLUME)},
            *({"DeviceName": name, "Ebs": dict(ebs)} for name in DATA_DEVICES[:count])]


def data_volumes(ec2: Any, instance_id: str, count: int) -> list[dict[str, str]]:
    """The ids of the ``count`` data volumes attached to the instance, in stripe order (what the
    agent looks for under /dev/disk/by-id); TargetFailed naming the devices that are not attached."""
    with aws_errors():
        reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    mappings = {m.get("DeviceName"): (m.get("Ebs") or {}).get("VolumeId")
                for r in reservations for i in r["Instances"] for m in i.get("BlockDeviceMappings", [])}
    wanted = DATA_DEVICES[:count]
    missing = [name for name in wanted if not mappings.get(name)]
    if missing:
        raise TargetFailed(f"instance {instance_id} has no data volume at {', '.join(missing)} "
                           f"({count - len(missing)} of {count} attached)")
    return [{"volume_id": str(mappings[name]), "device": name} for name in wanted]


def _engine(target: dict[str, Any]) -> str:
    if target["kind"] == "aurora":
        return "aurora-mysql"
    return "mariadb" if target["engine"].startswith("mariadb") else "mysql"


def create_parameter_groups(rds: Any, *, target: dict[str, Any], groups: paramgroups.Groups,
                            parameters: list[dict[str, Any]], tags: dict[str, str]) -> None:
    """The run's parameter groups of an rds / aurora target, set to the plan's ``parameters``, for the
    family of the engine version its database will run (``engine_version``)."""
    family = engine_version(rds, _engine(target), target["engine"])[1]
    paramgroups.create(rds, groups, family=family, parameters=parameters, tags=tags,
                       description=f"benchfleet {tags.get(naming.TAG_RUN_ID, '')} {target['id']}: "
                                   f"{target.get('mysql_config', 'default')} with its server_options")


def create_rds(rds: Any, settings: Settings, *, target: dict[str, Any], identifier: str, zone: str,
               tags: dict[str, str], groups: paramgroups.Groups | None = None) -> str:
    """The DB instance, with the run's parameter group it boots with (``groups.instance``, made by
    ``create_parameter_groups`` at least paramgroups.SETTLE_S before)."""
    engine = _engine(target)
    storage = target.get("storage") or {}
    version = engine_version(rds, engine, target["engine"])[0]
    args: dict[str, Any] = {
        "DBInstanceIdentifier": identifier, "DBInstanceClass": target["instance_class"],
        "Engine": engine, "EngineVersion": version,
        "MasterUsername": MASTER_USER, "ManageMasterUserPassword": True, "DBName": DATABASE,
        "AllocatedStorage": storage.get("size_gb", 100), "StorageType": storage.get("type", "gp3"),
        "StorageEncrypted": True, "MultiAZ": False, "PubliclyAccessible": False,
        "AvailabilityZone": zone, "DeletionProtection": False, "BackupRetentionPeriod": 0,
        "Tags": naming.tag_list(tags),
    }
    if groups and groups.instance:
        args["DBParameterGroupName"] = groups.instance
    if storage.get("iops"):
        args["Iops"] = storage["iops"]
    if settings.db_subnet_group_name:
        args["DBSubnetGroupName"] = settings.db_subnet_group_name
    if settings.db_security_group_id:
        args["VpcSecurityGroupIds"] = [settings.db_security_group_id]
    with aws_errors(), contextlib.suppress(rds.exceptions.DBInstanceAlreadyExistsFault):
        rds.create_db_instance(**args)  # already there: a retried Lambda, same name
    return identifier


def create_aurora(rds: Any, settings: Settings, *, target: dict[str, Any], cluster_id: str, writer_id: str,
                  zone: str, tags: dict[str, str], groups: paramgroups.Groups | None = None) -> tuple[str, str]:
    """CreateDBCluster makes an empty cluster: the writer instance is created here too, each with
    the run's parameter group of its level (``create_parameter_groups``)."""
    version = engine_version(rds, "aurora-mysql", target["engine"])[0]
    args: dict[str, Any] = {
        "DBClusterIdentifier": cluster_id, "Engine": "aurora-mysql", "EngineVersion": version,
        "MasterUsername": MASTER_USER, "ManageMasterUserPassword": True, "DatabaseName": DATABASE,
        "StorageEncrypted": True, "DeletionProtection": False, "BackupRetentionPeriod": 1,
        "Tags": naming.tag_list(tags),
    }
    writer: dict[str, Any] = {}
    if groups and groups.cluster and groups.instance:
        args["DBClusterParameterGroupName"] = groups.cluster
        writer["DBParameterGroupName"] = groups.instance
    if settings.db_subnet_group_name:
        args["DBSubnetGroupName"] = settings.db_subnet_group_name
    if settings.db_security_group_id:
        args["VpcSecurityGroupIds"] = [settings.db_security_group_id]
    with aws_errors():
        with contextlib.suppress(rds.exceptions.DBClusterAlreadyExistsFault):
            rds.create_db_cluster(**args)
        with contextlib.suppress(rds.exceptions.DBInstanceAlreadyExistsFault):
            rds.create_db_instance(DBInstanceIdentifier=writer_id, DBClusterIdentifier=cluster_id,
                                   Engine="aurora-mysql", DBInstanceClass=target["instance_class"],
                                   AvailabilityZone=zone, PubliclyAccessible=False,
                                   Tags=naming.tag_list(tags), **writer)
    return cluster_id, writer_id


# ---- readiness ----------------------------------------------------------------------------------

_INSTANCE_DEAD = {"shutting-down", "terminated", "stopping", "stopped"}
_DB_DEAD = {"failed", "deleting", "incompatible-parameters", "incompatible-network", "incompatible-restore",
            "inaccessible-encryption-credentials", "restore-error", "storage-full"}


def instance_ready(ec2: Any, ssm: Any, instance_id: str) -> bool:
    """Running and its SSM agent Online (DescribeInstanceInformation PingStatus)."""
    with aws_errors():
        reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    state = reservations[0]["Instances"][0]["State"]["Name"] if reservations else "terminated"
    if state in _INSTANCE_DEAD:
        raise TargetFailed(f"instance {instance_id} is {state}")
    if state != "running":
        return False
    with aws_errors():
        info = ssm.describe_instance_information(
            Filters=[{"Key": "InstanceIds", "Values": [instance_id]}])["InstanceInformationList"]
    return any(i.get("InstanceId") == instance_id and i.get("PingStatus") == "Online" for i in info)


def db_instance(rds: Any, identifier: str) -> dict[str, Any]:
    try:
        with aws_errors():
            found: dict[str, Any] = rds.describe_db_instances(DBInstanceIdentifier=identifier)["DBInstances"][0]
    except ClientError as e:
        if error_code(e) == "DBInstanceNotFound":
            raise TargetFailed(f"DB instance {identifier} is gone") from None
        raise
    if found.get("DBInstanceStatus") in _DB_DEAD:
        raise TargetFailed(f"DB instance {identifier} is {found['DBInstanceStatus']}")
    return found


def db_connection(rds: Any, resources: dict[str, Any]) -> dict[str, Any] | None:
    """Where the agent reaches the database once it is available, else None."""
    writer = db_instance(rds, resources["db_instance_id"])
    if writer.get("DBInstanceStatus") != "available":
        return None
    cluster: dict[str, Any] | None = None
    if resources.get("db_cluster_id"):
        with aws_errors():
            cluster = rds.describe_db_clusters(DBClusterIdentifier=resources["db_cluster_id"])["DBClusters"][0]
        if cluster.get("Status") != "available":
            return None
    if paramgroups.pending_reboot(writer, cluster):
        # A static parameter of the run's groups is not in effect yet: the writer reboots into it
        # before anything is measured (it is "rebooting", so the next check waits).
        with aws_errors(), contextlib.suppress(rds.exceptions.InvalidDBInstanceStateFault):
            rds.reboot_db_instance(DBInstanceIdentifier=writer["DBInstanceIdentifier"])
        return None
    if cluster is not None:
        host, port = cluster["Endpoint"], cluster.get("Port", 3306)
        secret = (cluster.get("MasterUserSecret") or {}).get("SecretArn")
    else:
        endpoint = writer.get("Endpoint") or {}
        host, port = endpoint.get("Address"), endpoint.get("Port", 3306)
        secret = (writer.get("MasterUserSecret") or {}).get("SecretArn")
    if not host:
        return None
    return {"host": host, "port": int(port), "user": MASTER_USER, "database": DATABASE,
            "password_secret_arn": secret}


# ---- teardown -----------------------------------------------------------------------------------

def _owned(run_id: str, target_id: str, owner: str, state_filter: str, states: list[str]) -> list[dict[str, Any]]:
    """EC2 filters: tagged with the run, the target and the owning stack, in one of ``states``."""
    return [{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]},
            {"Name": f"tag:{naming.TAG_TARGET_ID}", "Values": [target_id]},
            {"Name": f"tag:{naming.TAG_STACK}", "Values": [owner]},
            {"Name": state_filter, "Values": states}]


def tagged_instances(ec2: Any, run_id: str, target_id: str, owner: str) -> list[str]:
    filters = _owned(run_id, target_id, owner, "instance-state-name", ["pending", "running", "stopping", "stopped"])
    with aws_errors():
        pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
        return [i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]]


def tagged_volumes(ec2: Any, run_id: str, target_id: str, owner: str) -> list[dict[str, Any]]:
    """EBS volumes tagged with the run, the target and the owning stack, not already being deleted."""
    filters = _owned(run_id, target_id, owner, "status", ["creating", "available", "in-use", "error"])
    with aws_errors():
        pages = ec2.get_paginator("describe_volumes").paginate(Filters=filters)
        return [v for page in pages for v in page["Volumes"]]


def goes_with_its_instance(volume: dict[str, Any]) -> bool:
    """An attached volume EC2 deletes when its instance terminates (DeleteOnTermination)."""
    attachments = volume.get("Attachments") or []
    return bool(attachments) and all(a.get("DeleteOnTermination") for a in attachments)


def delete_volumes(ec2: Any, volumes: list[dict[str, Any]]) -> list[str]:
    """Delete the detached ones (a volume left by a failed attach, or whose instance is gone); the
    attached ones that go with their instance are left to EC2. Returns the ids deleted."""
    deleted = []
    for volume in volumes:
        if volume.get("State") == "in-use":
            continue
        try:
            with aws_errors():
                ec2.delete_volume(VolumeId=volume["VolumeId"])
        except ClientError as e:
            if error_code(e) in ("InvalidVolume.NotFound", "VolumeInUse", "IncorrectState"):
                continue  # gone, or attached after all: leftovers says which
            raise
        deleted.append(volume["VolumeId"])
    return deleted


def _has_tags(tag_list: list[dict[str, str]], wanted: dict[str, str]) -> bool:
    tags = {t["Key"]: t["Value"] for t in tag_list}
    return all(tags.get(k) == v for k, v in wanted.items())


def tagged_databases(rds: Any, run_id: str, target_id: str, owner: str) -> tuple[list[str], list[str]]:
    """(DB instance ids, DB cluster ids) tagged with the run, the target and the owning stack."""
    wanted = {naming.TAG_RUN_ID: run_id, naming.TAG_TARGET_ID: target_id, naming.TAG_STACK: owner}
    with aws_errors():
        instances = [d["DBInstanceIdentifier"]
                     for page in rds.get_paginator("describe_db_instances").paginate()
                     for d in page["DBInstances"] if _has_tags(d.get("TagList", []), wanted)]
        clusters = [c["DBClusterIdentifier"]
                    for page in rds.get_paginator("describe_db_clusters").paginate()
                    for c in page["DBClusters"] if _has_tags(c.get("TagList", []), wanted)]
    return instances, clusters


def terminate_instances(ec2: Any, instance_ids: list[str]) -> list[str]:
    if not instance_ids:
        return []
    try:
        with aws_errors():
            ec2.terminate_instances(InstanceIds=instance_ids)
    except ClientError as e:
        if error_code(e) != "InvalidInstanceID.NotFound":
            raise
    return instance_ids


def delete_db_instance(rds: Any, identifier: str) -> bool:
    try:
        with aws_errors():
            rds.delete_db_instance(DBInstanceIdentifier=identifier, SkipFinalSnapshot=True,
                                   DeleteAutomatedBackups=True)
    except ClientError as e:
        code = error_code(e)
        if code == "DBInstanceNotFound":
            return False
        if code != "InvalidDBInstanceState":  # already deleting
            raise
    return True


def delete_db_cluster(rds: Any, identifier: str) -> bool:
    try:
        with aws_errors():
            rds.delete_db_cluster(DBClusterIdentifier=identifier, SkipFinalSnapshot=True)
    except ClientError as e:
        code = error_code(e)
        if code == "DBClusterNotFoundFault":
            return False
        if code != "InvalidDBClusterStateFault":
            raise
    return True


def leftovers(ec2: Any, rds: Any, run_id: str, target_id: str, owner: str) -> list[str]:
    """What of this target is neither gone nor going (terminated / shutting-down / deleting; a
    volume attached to a terminating instance with DeleteOnTermination goes with it)."""
    left = [f"instance {i}" for i in tagged_instances(ec2, run_id, target_id, owner)]
    for volume in tagged_volumes(ec2, run_id, target_id, owner):
        if volume.get("State") == "in-use" and goes_with_its_instance(volume):
            continue
        left.append(f"volume {volume['VolumeId']} ({volume.get('State')})")
    instances, clusters = tagged_databases(rds, run_id, target_id, owner)
    with aws_errors():
        for ident in instances:
            with contextlib.suppress(rds.exceptions.DBInstanceNotFoundFault):
                status = rds.describe_db_instances(DBInstanceIdentifier=ident)["DBInstances"][0]["DBInstanceStatus"]
                if status != "deleting":
                    left.append(f"db instance {ident} ({status})")
        for ident in clusters:
            with contextlib.suppress(rds.exceptions.DBClusterNotFoundFault):
                status = rds.describe_db_clusters(DBClusterIdentifier=ident)["DBClusters"][0]["Status"]
                if status != "deleting":
                    left.append(f"db cluster {ident} ({status})")
    return left


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
