"""The catalogue of what exists on AWS (workloads/catalogue/aws.json) covers what the repository
ships and prices, and refuses what cannot exist (the API's 400s are in tests/functional/test_api.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchfleet.cost.catalogue import load_catalogue, spec_problems
from benchfleet.spec.loading import load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "workloads" / "comparisons").glob("*.yaml"))


def test_the_catalogue_is_dated():
    assert re.match(r"^20[0-9]{2}-[01][0-9]-[0-3][0-9]$", load_catalogue().as_of)


# Where a target without a region runs in these checks: the region tests deploy to (sm_harness).
HOME = "us-east-1"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_comparison_is_possible(path):
    loaded = load_spec(path)
    assert spec_problems(list(loaded.spec.targets), home_region=HOME) == []


def test_the_region_offerings_are_dated_and_cover_every_shipped_cloud_target():
    """Each EC2 type a shipped comparison launches (targets and RDS/Aurora clients) is checked
    against a recording of its region: none falls in a region whose offerings are unknown."""
    cat = load_catalogue()
    offerings = cat.offerings
    assert offerings is not None
    assert re.match(r"^20[0-9]{2}-[01][0-9]-[0-3][0-9]$", offerings.as_of)
    assert "DescribeInstanceTypeOfferings" in offerings.source
    checked = []
    for path in SHIPPED:
        for target in load_spec(path).spec.targets:
            if target.kind not in ("ec2", "rds", "aurora"):
                continue
            region = target.region or HOME
            instance_type = target.instance_type if target.kind == "ec2" else target.client.instance_type
            assert offerings.offered(instance_type, region) is True, (path.name, target.id, region)
            checked.append((instance_type, region))
    assert len({r for _, r in checked}) >= 2  # steal-regions.yaml compares regions
    # The recording names only the catalogue's families and sizes, and most of its regions.
    for region, families in offerings.regions.items():
        assert region in cat.regions
        for family, sizes in families.items():
            assert family in cat.ec2.families and (sizes == "*" or set(sizes) <= set(cat.ec2.families[family].sizes))
    assert len(offerings.regions) >= len(cat.regions) - 4


@pytest.mark.parametrize(("target", "field", "region"), [
    ({"id": "t", "kind": "ec2", "instance_type": "m6id.large", "region": "eu-north-1"}, "instance_type", "eu-north-1"),
    ({"id": "t", "kind": "ec2", "instance_type": "x2gd.large", "region": "us-west-1"}, "instance_type", "us-west-1"),
    ({"id": "t", "kind": "ec2", "instance_type": "m7i.32xlarge"}, "instance_type", HOME),  # m7i has no 32xlarge
    ({"id": "t", "kind": "rds", "instance_class": "db.r6g.large", "region": "eu-north-1",
      "client": {"instance_type": "c7gn.large"}}, "client.instance_type", "eu-north-1"),
])
def test_a_type_its_region_does_not_offer_is_refused_naming_the_field_and_the_region(target, field, region):
    spec = parse_spec({"name": "x", "workload": "oltp-read-only-sweep", "targets": [target]}, "spec.yaml")
    problems = spec_problems(list(spec.targets), home_region=HOME)
    assert [f for f, _ in problems] == [f"targets[0].{field}"], problems
    assert f"not offered in {region}" in problems[0][1]
    # Without a recording for the region (or a region at all), nothing is refused for it.
    unrecorded = [r for r in load_catalogue().regions if r not in load_catalogue().offerings.regions]
    if "region" in target and unrecorded:
        moved = parse_spec({"name": "x", "workload": "oltp-read-only-sweep",
                            "targets": [{**target, "region": unrecorded[0]}]}, "spec.yaml")
        assert spec_problems(list(moved.targets), home_region=HOME) == []


def test_shipped_comparisons_include_cloud_targets():
    kinds = {t.kind for p in SHIPPED for t in load_spec(p).spec.targets}
    assert {"ec2", "aurora"} <= kinds  # the coverage test above reads real cloud targets


def test_every_priced_type_exists():
    cat = load_catalogue()
    pricing = REPO / "workloads" / "pricing"
    for region, types in json.loads((pricing / "ec2.json").read_text())["regions"].items():
        missing = [t for t in types if cat.instance_type(t) is None]
        assert missing == [], f"ec2 {region}: {missing}"
    for name, section in (("rds", cat.rds), ("aurora", cat.aurora)):
        for region, classes in json.loads((pricing / f"{name}.json").read_text())["regions"].items():
            missing = [c for c in classes if not cat.db_class(section, c)]
            assert missing == [], f"{name} {region}: {missing}"


EC2 = {"id": "t", "kind": "ec2", "instance_type": "m6i.large"}
RDS = {"id": "t", "kind": "rds", "instance_class": "db.r6g.large"}
THROUGHPUT = "targets[0].storage.throughput_mbps"


@pytest.mark.parametrize(("target", "field"), [
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "iops": 3000, "throughput_mbps": 125}}, None),
    ({**EC2, "instance_type": "i4i.large", "storage": {"type": "instance-store", "size_gb": 468}}, None),
    ({**RDS, "engine": "mariadb-10.11", "storage": {"type": "io1", "size_gb": 200, "iops": 3000}}, None),
    ({**EC2, "storage": {"type": "gp3", "size_gb": 8, "iops": 5000}}, "targets[0].storage.iops"),  # 500/GiB
    ({**EC2, "storage": {"type": "io1", "size_gb": 100, "iops": 6000}}, "targets[0].storage.iops"),  # 50/GiB
    ({**RDS, "storage": {"type": "gp3", "size_gb": 100, "iops": 12000}}, "targets[0].storage.iops"),  # >=400 GiB
    ({**EC2, "engine": "mariadb-11.4"}, "targets[0].engine"),  # not packaged on the EC2 image
    # At most 0.25 MiB/s per provisioned IOPS (EBS and RDS gp3); without iops, the least IOPS count.
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "throughput_mbps": 1000}}, THROUGHPUT),
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "iops": 3000, "throughput_mbps": 751}},
     "targets[0].storage.throughput_mbps"),
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "iops": 3000, "throughput_mbps": 750}}, None),
    ({**EC2, "storage": {"type": "gp3", "size_gb": 100, "iops": 4000, "throughput_mbps": 1000}}, None),
    ({**RDS, "storage": {"type": "gp3", "size_gb": 400, "throughput_mbps": 4000}}, THROUGHPUT),
    ({**RDS, "storage": {"type": "gp3", "size_gb": 400, "iops": 16000, "throughput_mbps": 4000}}, None),
    # Below 400 GiB RDS gp3 gives its baseline (3,000 IOPS, 125 MiB/s) and provisions neither.
    ({**RDS, "storage": {"type": "gp3", "size_gb": 100, "throughput_mbps": 500}}, THROUGHPUT),
])
def test_storage_and_engine_rules(target, field):
    targets = list(parse_spec({"name": "x", "workload": "w", "targets": [target]}).targets)
    problems = spec_problems(targets)
    assert [p[0] for p in problems] == ([field] if field else []), problems
