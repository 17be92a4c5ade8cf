"""A target's data volumes as one array: what each volume and the stripe can do, and what the
instance lets through. The plan shows these figures and warns, with them, when a stripe asks for
more IOPS or throughput than the instance's EBS bandwidth (striping past it gains nothing).

Per-volume figures are the sustained ones of the Amazon EBS User Guide ("Amazon EBS volume types"):

- gp3: 3000 IOPS and 125 MiB/s included, or what ``iops`` / ``throughput_mbps`` provision;
- gp2: 3 IOPS per GiB (100 at least, 16000 at most; bursts to 3000 are not sustained), 128 MiB/s
  below 334 GiB, 250 MiB/s from 334 GiB;
- io1: the provisioned IOPS, 256 KiB each, up to 500 MiB/s (1000 MiB/s above 32000 IOPS);
- io2: the provisioned IOPS, 0.256 MiB/s per IOPS, up to 4000 MiB/s;
- instance-store: not EBS; its performance comes with the instance type (no figures here).

An instance's EBS bandwidth (``workloads/catalogue/ec2-storage.json``, DescribeInstanceTypes) has a
baseline (sustained) and a maximum, which instances smaller than 4xlarge reach for 30 minutes at
least once every 24 hours. EC2 states it in MB/s (10^6 bytes); volumes are sized in MiB/s.

RAID 0 spreads reads and writes over every volume. RAID 10 (mdadm's near-2 layout) mirrors pairs:
reads use every volume, each write lands on two, so the array writes at half the stripe's figures
and holds half its capacity. The instance's link carries both copies: the stripe's whole
provisioned figures are what is compared with the instance's bandwidth.

Standard library and pydantic only (Lambdas import this module).
"""

from __future__ import annotations

from typing import Any

MB_PER_MIB = 1.048576


def volume_figures(storage: Any) -> tuple[int | None, float | None]:
    """(IOPS, MiB/s) one volume sustains; (None, None) for instance-store disks."""
    kind, size = str(storage.type), int(storage.size_gb)
    iops = getattr(storage, "iops", None)
    if kind == "gp3":
        return iops or 3000, float(getattr(storage, "throughput_mbps", None) or 125)
    if kind == "gp2":
        return min(max(3 * size, 100), 16000), 250.0 if size >= 334 else 128.0
    if kind == "io1" and iops:
        return iops, min(iops / 4, 500.0 if iops <= 32000 else 1000.0)
    if kind == "io2" and iops:
        return iops, min(iops * 0.256, 4000.0)
    return None, None


def _fmt(value: float) -> str:
    """1,250 / 156.25 / 1,048.58: whole numbers without decimals, others to two places."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def figures(storage: Any, instance_type: str, limits: Any | None) -> dict[str, Any]:
    """The stripe of ``storage`` on ``instance_type``: per volume, the array (reads, writes, usable
    GiB), the instance's EBS bandwidth (``limits``: the catalogue's TypeStorage, None when not
    recorded) and ``warnings`` with the figures."""
    n = int(getattr(storage, "volumes", 1) or 1)
    raid = getattr(storage, "raid", None)
    data = n // 2 if raid == 10 else n
    iops, mib_s = volume_figures(storage)
    out: dict[str, Any] = {
        "type": storage.type, "volumes": n, "raid": raid, "size_gb": storage.size_gb,
        "filesystem": getattr(storage, "filesystem", None), "mount_options": getattr(storage, "mount_options", None),
        "per_volume": {"iops": iops, "mib_s": mib_s},
        "array": {"capacity_gib": data * int(storage.size_gb),
                  "read_iops": iops * n if iops else None, "read_mib_s": mib_s * n if mib_s else None,
                  "write_iops": iops * data if iops else None, "write_mib_s": mib_s * data if mib_s else None},
        "instance": None, "warnings": [],
    }
    store = getattr(limits, "instance_store", None)
    if storage.type == "instance-store":
        if store is not None:  # the disks are the type's: their size is its, not the spec's
            out["size_gb"] = store.size_gb
            out["array"]["capacity_gib"] = data * store.size_gb
        return out
    ebs = getattr(limits, "ebs", None)
    if ebs is None:
        out["warnings"].append(f"{instance_type}'s EBS bandwidth is not recorded (workloads/catalogue/"
                               "ec2-storage.json): whether it carries the stripe is not checked")
        return out
    out["instance"] = {"type": instance_type, "baseline_iops": ebs.baseline_iops, "baseline_mb_s": ebs.baseline_mb_s,
                       "max_iops": ebs.max_iops, "max_mb_s": ebs.max_mb_s}
    what = f"{n} {storage.type} volumes x" if n > 1 else f"the {storage.type} volume's"
    if iops:
        total = iops * n
        asked = f"{what} {_fmt(iops)} IOPS" + (f" = {_fmt(total)} IOPS" if n > 1 else "")
        out["warnings"] += _over(asked, total, "IOPS", ebs.baseline_iops, ebs.max_iops, instance_type)
    if mib_s:
        total_mb = mib_s * n * MB_PER_MIB
        asked = (f"{what} {_fmt(mib_s)} MiB/s" + (f" = {_fmt(mib_s * n)} MiB/s" if n > 1 else "")
                 + f" ({_fmt(total_mb)} MB/s)")
        out["warnings"] += _over(asked, total_mb, "MB/s", ebs.baseline_mb_s, ebs.max_mb_s, instance_type)
    return out


def _over(asked: str, total: float, unit: str, baseline: float | None, maximum: float | None,
          instance_type: str) -> list[str]:
    if maximum is not None and total > maximum:
        return [f"{asked} exceed {instance_type}'s EBS maximum of {_fmt(maximum)} {unit}: the instance cannot "
                "use more, striping past it gains nothing"]
    if baseline is not None and total > baseline:
        return [f"{asked} exceed {instance_type}'s EBS baseline of {_fmt(baseline)} {unit}; above it only in "
                f"bursts (up to {_fmt(maximum or baseline)} {unit}, 30 minutes at least once a day)"]
    return []
