"""Rewrite ``workloads/catalogue/ec2-offerings.json`` and ``ec2-storage.json`` from EC2's own answers
and, with ``--live``, the price tables of ``workloads/pricing`` for every region too.

``ec2-offerings.json``: which catalogue instance types each region offers. ``python -m
benchfleet.cost.catalogue_refresh`` reads the recording of EC2's DescribeInstanceTypeOfferings
(LocationType=region) that moto ships (``moto/ec2/resources/instance_type_offerings/region``; moto
is a development dependency), or, with ``--live``, asks EC2 in every region of the catalogue with
the caller's credentials. Only the families of ``workloads/catalogue/aws.json`` are kept: per region,
``"*"`` when the region offers every size the catalogue lists, else the sizes it offers. A region
without a recording is left out: its offerings are unknown, and nothing is refused there.

``ec2-storage.json``: per catalogue instance type, what its storage can do (DescribeInstanceTypes:
``EbsInfo`` and ``InstanceStorageInfo``, from moto's recording ``moto/ec2/resources/instance_types.json.gz``
or, with ``--live``, asked in the catalogue's first region): the EBS baseline and maximum IOPS and
throughput, how many EBS volumes it can attach, its hypervisor, and its instance-store disks.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchfleet.cost.catalogue import OFFERINGS_FILE, STORAGE_FILE, catalogue_path, load_catalogue


def _recorded(region: str) -> set[str] | None:
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_type_offerings" / "region" / f"{region}.json.gz"
    if not path.exists():
        return None
    with gzip.open(path, "rt") as f:
        return {str(o["InstanceType"]) for o in json.load(f)}


def _live(region: str) -> set[str]:
    import boto3

    pages = boto3.client("ec2", region_name=region).get_paginator("describe_instance_type_offerings").paginate(
        LocationType="region")
    return {o["InstanceType"] for page in pages for o in page["InstanceTypeOfferings"]}


def _recorded_types() -> dict[str, Any]:
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path, "rt") as f:
        return dict(json.load(f))


def _live_types(names: list[str], region: str) -> dict[str, Any]:
    import boto3

    ec2 = boto3.client("ec2", region_name=region)
    found: dict[str, Any] = {}
    for start in range(0, len(names), 100):  # DescribeInstanceTypes takes at most 100 names
        chunk: Any = names[start:start + 100]  # boto3-stubs type these as a Literal of every type name
        pages = ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=chunk)
        found.update({t["InstanceType"]: t for page in pages for t in page["InstanceTypes"]})
    return found


def storage_of(described: dict[str, Any]) -> dict[str, Any]:
    """One DescribeInstanceTypes answer -> its ec2-storage.json entry. EC2 states throughput in MB/s
    (its bandwidth in Mbps / 8); volumes are sized in MiB/s (benchfleet.plan.stripe converts)."""
    ebs = (described.get("EbsInfo") or {})
    optimized = ebs.get("EbsOptimizedInfo") or {}
    entry: dict[str, Any] = {"hypervisor": described.get("Hypervisor") or None,
                             "ebs_nvme": ebs.get("NvmeSupport") or None,
                             "max_ebs_attachments": ebs.get("MaximumEbsAttachments")}
    if optimized:
        entry["ebs"] = {"baseline_iops": optimized.get("BaselineIops"),
                        "baseline_mb_s": optimized.get("BaselineThroughputInMBps"),
                        "max_iops": optimized.get("MaximumIops"),
                        "max_mb_s": optimized.get("MaximumThroughputInMBps")}
    disks = (described.get("InstanceStorageInfo") or {}).get("Disks") or []
    if disks:
        entry["instance_store"] = {"disks": sum(int(d.get("Count", 0)) for d in disks),
                                   "size_gb": int(disks[0].get("SizeInGB", 0)),
                                   "type": disks[0].get("Type"),
                                   "nvme": (described.get("InstanceStorageInfo") or {}).get("NvmeSupport")
                                   in ("required", "supported")}
    return {k: v for k, v in entry.items() if v is not None}


def storage(live: bool = False) -> dict[str, Any]:
    cat = load_catalogue()
    names = [f"{family}.{size}" for family, f in cat.ec2.families.items() for size in f.sizes]
    described = _live_types(names, cat.regions[0]) if live else _recorded_types()
    source = ("EC2 DescribeInstanceTypes, asked in " + cat.regions[0] if live else
              f"EC2 DescribeInstanceTypes as recorded in moto {metadata.version('moto')} "
              "(moto/ec2/resources/instance_types.json.gz)")
    return {
        "as_of": datetime.now(UTC).strftime("%Y-%m-%d"),
        "source": source + "; refreshed by python -m benchfleet.cost.catalogue_refresh. Per instance type of "
                  "aws.json: EBS baseline and maximum IOPS and throughput (MB/s, as EC2 states them), "
                  "the most EBS volumes it attaches, its hypervisor and its instance-store disks. A type "
                  "not listed has no recording: its EBS limits are not checked.",
        "types": {name: storage_of(described[name]) for name in names if name in described},
    }


def offerings(live: bool = False) -> dict[str, Any]:
    cat = load_catalogue()
    regions: dict[str, dict[str, Any]] = {}
    for region in cat.regions:
        types = _live(region) if live else _recorded(region)
        if types is None:
            continue
        offered: dict[str, Any] = {}
        for name, family in cat.ec2.families.items():
            sizes = [s for s in family.sizes if f"{name}.{s}" in types]
            if sizes:
                offered[name] = "*" if sizes == family.sizes else sizes
        regions[region] = offered
    source = ("EC2 DescribeInstanceTypeOfferings (LocationType=region), asked in every region" if live else
              f"EC2 DescribeInstanceTypeOfferings (LocationType=region) as recorded in moto "
              f"{metadata.version('moto')} (moto/ec2/resources/instance_type_offerings/region)")
    return {
        "as_of": datetime.now(UTC).strftime("%Y-%m-%d"),
        "source": source + "; refreshed by python -m benchfleet.cost.catalogue_refresh. Per region, the catalogue's "
                  "EC2 families it offers: \"*\" for every size aws.json lists, else the sizes offered. "
                  "A region not listed has no recording: nothing is refused there.",
        "regions": regions,
    }


def refresh_prices(pricing_client: Any, ec2_client_of: Any, directory: Path,
                   regions: list[str] | None = None) -> list[Path]:
    """Rebuild the price tables in ``directory`` from the Price List API (``pricing_client``, which
    answers in us-east-1) and each region's EC2 (``ec2_client_of(region)``), every catalogue region
    unless ``regions`` is given. Written only once every region has been read."""
    from benchfleet.cost import price_list

    cat = load_catalogue()
    tables = price_list.build_tables(price_list.products_of(pricing_client), ec2_client_of,
                                     regions or cat.regions, cat,
                                     progress=lambda r: print(f"prices: {r}", file=sys.stderr))
    return price_list.write_tables(tables, directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true",
                        help="ask AWS (needs credentials): EC2 offerings in every region, instance types' "
                             "storage, and the price tables")
    parser.add_argument("--only", choices=("offerings", "storage", "pricing"), help="refresh one of them only")
    args = parser.parse_args(argv)
    if args.only == "pricing" and not args.live:
        parser.error("prices are read from the AWS Price List API: --only pricing needs --live")
    for name, part, build in ((OFFERINGS_FILE, "offerings", offerings), (STORAGE_FILE, "storage", storage)):
        if args.only in (None, part):
            out = catalogue_path().parent / name
            out.write_text(json.dumps(build(args.live), indent=1, sort_keys=True) + "\n")
            print(f"wrote {out}", file=sys.stderr)
    if args.live and args.only in (None, "pricing"):
        import boto3

        from benchfleet.cost.pricing import pricing_dir

        written = refresh_prices(boto3.client("pricing", region_name="us-east-1"),
                                 lambda region: boto3.client("ec2", region_name=region), pricing_dir())
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
