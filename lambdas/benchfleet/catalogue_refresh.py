"""Rewrite ``workloads/catalogue/ec2-offerings.json``: which catalogue instance types each region offers.

``python -m benchfleet.catalogue_refresh`` reads the recording of EC2's DescribeInstanceTypeOfferings
(LocationType=region) that moto ships (``moto/ec2/resources/instance_type_offerings/region``; moto
is a development dependency), or, with ``--live``, asks EC2 in every region of the catalogue with
the caller's credentials. Only the families of ``workloads/catalogue/aws.json`` are kept: per region,
``"*"`` when the region offers every size the catalogue lists, else the sizes it offers. A region
without a recording is left out: its offerings are unknown, and nothing is refused there.
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

from benchfleet.catalogue import OFFERINGS_FILE, catalogue_path, load_catalogue


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
        "source": source + "; refreshed by python -m benchfleet.catalogue_refresh. Per region, the catalogue's "
                  "EC2 families it offers: \"*\" for every size aws.json lists, else the sizes offered. "
                  "A region not listed has no recording: nothing is refused there.",
        "regions": regions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="ask EC2 in every region (needs credentials)")
    args = parser.parse_args(argv)
    out = catalogue_path().parent / OFFERINGS_FILE
    out.write_text(json.dumps(offerings(args.live), indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
