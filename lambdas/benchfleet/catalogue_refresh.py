"""Rewrite ``workloads/catalogue/ec2-offerings.json`` (which catalogue instance types each region
offers) and, with ``--live``, the price tables of ``workloads/pricing`` for every region too.

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


def refresh_prices(pricing_client: Any, ec2_client_of: Any, directory: Path,
                   regions: list[str] | None = None) -> list[Path]:
    """Rebuild the price tables in ``directory`` from the Price List API (``pricing_client``, which
    answers in us-east-1) and each region's EC2 (``ec2_client_of(region)``), every catalogue region
    unless ``regions`` is given. Written only once every region has been read."""
    from benchfleet import price_list

    cat = load_catalogue()
    tables = price_list.build_tables(price_list.products_of(pricing_client), ec2_client_of,
                                     regions or cat.regions, cat,
                                     progress=lambda r: print(f"prices: {r}", file=sys.stderr))
    return price_list.write_tables(tables, directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true",
                        help="ask AWS (needs credentials): EC2 offerings in every region, and the price tables")
    parser.add_argument("--only", choices=("offerings", "pricing"), help="refresh one of the two only")
    args = parser.parse_args(argv)
    if args.only == "pricing" and not args.live:
        parser.error("prices are read from the AWS Price List API: --only pricing needs --live")
    if args.only != "pricing":
        out = catalogue_path().parent / OFFERINGS_FILE
        out.write_text(json.dumps(offerings(args.live), indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}", file=sys.stderr)
    if args.live and args.only != "offerings":
        import boto3

        from benchfleet.pricing import pricing_dir

        written = refresh_prices(boto3.client("pricing", region_name="us-east-1"),
                                 lambda region: boto3.client("ec2", region_name=region), pricing_dir())
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
