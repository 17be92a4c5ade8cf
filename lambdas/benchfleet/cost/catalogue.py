"""What exists on AWS, checked before any execution starts: ``workloads/catalogue/aws.json``.

The spec model checks shapes (``m6i.large`` looks like an instance type); this module checks that the
thing named exists and that the combination is possible: instance types and DB classes, regions,
engines and major versions per target kind, and the storage rules of EBS and RDS (which volume types
take IOPS or throughput, within which bounds, io1/io2 needing IOPS, RDS having no instance store).
Per region, which of those EC2 types the region offers (``workloads/catalogue/ec2-offerings.json``,
from EC2's DescribeInstanceTypeOfferings; ``benchfleet.cost.catalogue_refresh``): a target or client type
a region does not offer is refused naming its ``instance_type`` and the region. A region without a
recording refuses nothing. DB instance classes per region are not recorded (AWS documents no list:
the RDS pricing pages and DescribeOrderableDBInstanceOptions are the sources).
Per instance type, what its storage can do (``workloads/catalogue/ec2-storage.json``, from EC2's
DescribeInstanceTypes): EBS baseline and maximum IOPS and throughput (the plan warns when a stripe
asks for more, ``benchfleet.plan.stripe``), how many volumes it attaches, and its instance-store disks
(a stripe of instance-store disks cannot use more disks than the type has).
A spec that fails here would otherwise start an execution and fail at provision, minutes later.

The catalogue is data, dated by its ``as_of``; tests check that it covers every shipped comparison
and every priced type. Standard library and pydantic only (the API Lambda imports this module).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

Problem = tuple[str, str]


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Family(_Data):
    sizes: list[str]
    instance_store: bool = False


class StorageRule(_Data):
    size_gb: tuple[int, int] | None = None
    iops: tuple[int, int] | None = None
    iops_per_gb: int | None = None
    iops_required: bool = False
    throughput_mbps: tuple[int, int] | None = None
    # MiB/s of throughput per IOPS at most (gp3, EBS and RDS alike: 0.25); without ``iops`` the volume
    # has the type's least IOPS (``iops[0]``: gp3's included 3,000 on EBS, 12,000 on RDS from 400 GiB).
    throughput_per_iops: float | None = None
    provisioned_from_gb: int | None = None
    instance_store_required: bool = False


class Ec2Section(_Data):
    families: dict[str, Family]
    engines: dict[str, list[str]]


class DbSection(_Data):
    classes: dict[str, list[str]]
    engines: dict[str, list[str]]


class Offerings(_Data):
    """Per region, the catalogue's EC2 families it offers: ``"*"`` every listed size, else the sizes."""

    as_of: str
    source: str
    regions: dict[str, dict[str, str | list[str]]]

    def offered(self, instance_type: str, region: str) -> bool | None:
        """Whether ``region`` offers the type (None: the region has no recording)."""
        families = self.regions.get(region)
        if families is None:
            return None
        family, _, size = instance_type.partition(".")
        sizes = families.get(family)
        return sizes == "*" or (isinstance(sizes, list) and size in sizes)


class EbsLimits(_Data):
    """An instance type's EBS bandwidth (EBS-optimized): baseline (sustained) and maximum (burst)."""

    baseline_iops: int | None = None
    baseline_mb_s: float | None = None
    max_iops: int | None = None
    max_mb_s: float | None = None


class InstanceStore(_Data):
    disks: int
    size_gb: int
    type: str | None = None
    nvme: bool = False


class TypeStorage(_Data):
    hypervisor: str | None = None
    ebs_nvme: str | None = None
    max_ebs_attachments: int | None = None
    ebs: EbsLimits | None = None
    instance_store: InstanceStore | None = None


class StorageLimits(_Data):
    """Per instance type, what its storage can do (ec2-storage.json)."""

    as_of: str
    source: str
    types: dict[str, TypeStorage]


class Catalogue(_Data):
    as_of: str
    regions: list[str]
    ec2: Ec2Section
    rds: DbSection
    aurora: DbSection
    storage: dict[str, dict[str, StorageRule]]
    offerings: Offerings | None = None
    storage_limits: StorageLimits | None = None

    def type_storage(self, instance_type: str) -> TypeStorage | None:
        """What ``instance_type``'s storage can do; None when ec2-storage.json has no recording."""
        return self.storage_limits.types.get(instance_type) if self.storage_limits else None

    def instance_type(self, name: str) -> Family | None:
        family, _, size = name.partition(".")
        found = self.ec2.families.get(family)
        return found if found is not None and size in found.sizes else None

    def db_class(self, section: DbSection, name: str) -> bool:
        prefix, family, size = [*name.split("."), "", ""][:3]
        return prefix == "db" and size in section.classes.get(family, [])


def catalogue_path() -> Path:
    from benchfleet.spec.documents import workloads_dir

    return workloads_dir() / "catalogue" / "aws.json"


OFFERINGS_FILE = "ec2-offerings.json"
STORAGE_FILE = "ec2-storage.json"


@lru_cache(maxsize=4)
def _load(path: str) -> Catalogue:
    with open(path) as f:
        data = json.load(f)
    offerings = Path(path).parent / OFFERINGS_FILE
    if offerings.exists():
        data["offerings"] = json.loads(offerings.read_text())
    limits = Path(path).parent / STORAGE_FILE
    if limits.exists():
        data["storage_limits"] = json.loads(limits.read_text())
    return Catalogue.model_validate(data)


def load_catalogue(path: Path | None = None) -> Catalogue:
    return _load(str(path or catalogue_path()))


def _engine_problem(engines: dict[str, list[str]], engine: str, kind: str) -> str | None:
    family, _, version = engine.partition("-")
    lines = engines.get(family)
    if lines is None:
        return f"{kind} targets run {' or '.join(sorted(engines))}, not {family}"
    if version and not any(version == v or version.startswith(v + ".") or v.startswith(version + ".")
                           for v in lines):
        return f"{family} {version} is not offered for {kind} targets (major versions: {', '.join(lines)})"
    if kind == "ec2" and version and version not in lines and not any(v.startswith(version + ".") for v in lines):
        # The host installs Ubuntu's package of the line, whatever its patch level: mysql-8.0.99 ran
        # Ubuntu's 8.0 and was recorded as 8.0.99 (the fingerprint has the version that ran).
        return (f"{family} {version}: EC2 targets install Ubuntu's {family} {', '.join(lines)} package, whose "
                f"patch level Ubuntu decides; give {family}-{next(v for v in lines if version.startswith(v + '.'))} "
                "(the results record the version that ran)")
    return None


def _instance_store_problems(storage: Any, where: str, family: Family | None,
                             limits: TypeStorage | None, instance_type: str) -> list[Problem]:
    # DescribeInstanceTypes' recording decides where there is one; aws.json's family flag otherwise.
    store = limits.instance_store if limits else None
    if (store is None and limits is not None) or (limits is None and family is not None and not family.instance_store):
        return [(f"{where}.type", "this instance type has no instance store (types with local NVMe: "
                                  "m6id, c6gd, r6id, i4i, ...)")]
    problems: list[Problem] = [(f"{where}.{key}", f"instance-store disks take no provisioned {key} (their "
                                                  "performance comes with the instance type)")
                               for key in ("iops", "throughput_mbps") if getattr(storage, key) is not None]
    if store is not None and not store.nvme:
        problems.append((f"{where}.type", f"{instance_type}'s instance store is not NVMe ({store.type}); the "
                                          "agent finds instance-store disks by their NVMe model"))
    elif store is not None and storage.volumes > store.disks:
        problems.append((f"{where}.volumes", f"{instance_type} has {store.disks} instance-store disk"
                                             f"{'s' if store.disks != 1 else ''} ({store.size_gb} GB each), "
                                             f"not {storage.volumes}"))
    return problems


def _storage_problems(rules: dict[str, StorageRule], storage: Any, where: str, kind: str,
                      family: Family | None, cat: Catalogue | None = None, instance_type: str = "") -> list[Problem]:
    rule = rules.get(storage.type)
    if rule is None:
        offered = ", ".join(rules)
        return [(f"{where}.type", f"{kind} targets have no {storage.type} storage (offered: {offered})")]
    limits = cat.type_storage(instance_type) if cat is not None and instance_type else None
    if rule.instance_store_required:
        return _instance_store_problems(storage, where, family, limits, instance_type)
    problems: list[Problem] = []
    # The root volume is attached too; EC2 counts both against the type's attachment limit.
    most = limits.max_ebs_attachments if limits else None
    if most is not None and getattr(storage, "volumes", 1) + 1 > most:
        problems.append((f"{where}.volumes", f"{instance_type} attaches at most {most} EBS volumes, the root "
                                             f"volume included: at most {most - 1} data volumes"))
    low, high = rule.size_gb or (1, 65536)
    if not low <= storage.size_gb <= high:
        problems.append((f"{where}.size_gb", f"{storage.type} volumes are {low}..{high} GiB on {kind}"))
    if storage.iops is not None:
        if rule.iops is None:
            problems.append((f"{where}.iops", f"{storage.type} takes no provisioned IOPS (io1, io2 or gp3 do)"))
        elif rule.provisioned_from_gb is not None and storage.size_gb < rule.provisioned_from_gb:
            problems.append((f"{where}.iops", f"{storage.type} on {kind} takes provisioned IOPS from "
                                              f"{rule.provisioned_from_gb} GiB"))
        elif not rule.iops[0] <= storage.iops <= rule.iops[1]:
            problems.append((f"{where}.iops", f"{storage.type} takes {rule.iops[0]}..{rule.iops[1]} IOPS on {kind}"))
        elif rule.iops_per_gb is not None and storage.iops > rule.iops_per_gb * storage.size_gb:
            problems.append((f"{where}.iops", f"{storage.type} allows at most {rule.iops_per_gb} IOPS per GiB "
                                              f"({rule.iops_per_gb * storage.size_gb} for {storage.size_gb} GiB)"))
    elif rule.iops_required:
        problems.append((f"{where}.iops", f"{storage.type} volumes need iops"))
    if storage.throughput_mbps is not None:
        if rule.throughput_mbps is None:
            problems.append((f"{where}.throughput_mbps", f"{storage.type} takes no provisioned throughput (gp3 does)"))
        elif rule.provisioned_from_gb is not None and storage.size_gb < rule.provisioned_from_gb:
            problems.append((f"{where}.throughput_mbps", f"{storage.type} on {kind} takes provisioned throughput "
                                                         f"from {rule.provisioned_from_gb} GiB"))
        elif not rule.throughput_mbps[0] <= storage.throughput_mbps <= rule.throughput_mbps[1]:
            low_t, high_t = rule.throughput_mbps
            problems.append((f"{where}.throughput_mbps", f"{storage.type} takes {low_t}..{high_t} MB/s on {kind}"))
        elif rule.throughput_per_iops is not None and rule.iops is not None:
            problems += _throughput_ratio_problems(rule, storage, where, kind)
    return problems


def _throughput_ratio_problems(rule: StorageRule, storage: Any, where: str, kind: str) -> list[Problem]:
    """Throughput above what the volume's IOPS allow: EC2's CreateVolume / RunInstances and RDS's
    CreateDBInstance refuse it, minutes into a run."""
    assert rule.throughput_per_iops is not None and rule.iops is not None
    iops = storage.iops if storage.iops is not None else rule.iops[0]
    most = int(iops * rule.throughput_per_iops)
    if storage.throughput_mbps <= most:
        return []
    given = f"{storage.iops} provisioned" if storage.iops is not None else f"{iops} (the least, as no iops is given)"
    need = -(-storage.throughput_mbps // rule.throughput_per_iops)  # ceil
    return [(f"{where}.throughput_mbps", f"{storage.type} allows at most {rule.throughput_per_iops} MiB/s per "
                                         f"provisioned IOPS on {kind}: {storage.throughput_mbps} MiB/s needs "
                                         f"iops of at least {int(need)}; with {given} IOPS at most {most} MiB/s")]


def _offered_problems(cat: Catalogue, instance_type: str, region: str | None, field: str) -> list[Problem]:
    """An existing type the target's region does not offer."""
    if region is None or cat.offerings is None or cat.offerings.offered(instance_type, region) is not False:
        return []
    return [(field, f"{instance_type} is not offered in {region} (workloads/catalogue/{OFFERINGS_FILE}, "
                    f"as of {cat.offerings.as_of}): choose another type or region")]


def _client_problems(cat: Catalogue, target: Any, where: str, region: str | None) -> list[Problem]:
    client = target.client.instance_type
    if cat.instance_type(client) is None:
        return [(f"{where}.client.instance_type", f"{client} is not an EC2 instance type "
                                                 f"(workloads/catalogue/aws.json, as of {cat.as_of})")]
    return _offered_problems(cat, client, region, f"{where}.client.instance_type")


def target_problems(target: Any, index: int, cat: Catalogue | None = None,
                    home_region: str | None = None) -> list[Problem]:
    """Why one spec target cannot exist on AWS (empty when it can); local and existing targets pass.
    A target without a region runs in ``home_region`` (the stack's), when given."""
    cat = cat or load_catalogue()
    where = f"targets[{index}]"
    kind = target.kind
    if kind not in ("ec2", "rds", "aurora"):
        return []
    problems: list[Problem] = []
    region = target.region or home_region
    if target.region is not None and target.region not in cat.regions:
        problems.append((f"{where}.region", f"{target.region} is not an AWS region"))
        region = None
    if kind == "ec2":
        family = cat.instance_type(target.instance_type)
        if family is None:
            problems.append((f"{where}.instance_type", f"{target.instance_type} is not an EC2 instance type "
                                                      f"(workloads/catalogue/aws.json, as of {cat.as_of})"))
        else:
            problems += _offered_problems(cat, target.instance_type, region, f"{where}.instance_type")
        engine = _engine_problem(cat.ec2.engines, target.engine, kind)
        problems += [(f"{where}.engine", engine)] if engine else []
        problems += _storage_problems(cat.storage["ec2"], target.storage, f"{where}.storage", kind, family,
                                      cat, target.instance_type)
        return problems
    section = cat.rds if kind == "rds" else cat.aurora
    if not cat.db_class(section, target.instance_class):
        problems.append((f"{where}.instance_class", f"{target.instance_class} is not a {kind} DB instance class "
                                                    f"(workloads/catalogue/aws.json, as of {cat.as_of})"))
    engine = _engine_problem(section.engines, target.engine, kind)
    problems += [(f"{where}.engine", engine)] if engine else []
    if kind == "rds":
        problems += _storage_problems(cat.storage["rds"], target.storage, f"{where}.storage", kind, None)
    problems += _client_problems(cat, target, where, region)
    return problems


def spec_problems(targets: list[Any], cat: Catalogue | None = None, home_region: str | None = None) -> list[Problem]:
    """Every target's problems, in order (a target without a region: in ``home_region``)."""
    cat = cat or load_catalogue()
    return [p for i, t in enumerate(targets) for p in target_problems(t, i, cat, home_region)]
