"""Striped storage in the spec, the catalogue, the price and the plan (issue 26, item 1): every key
refused where it cannot hold, every volume priced, and the stripe's figures held against the
instance's EBS bandwidth with warnings that carry them. Figures are computed here by hand from the
EBS user guide's rules, ec2-storage.json and workloads/pricing/ebs.json."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import REPO

from benchfleet.cli.main import main
from benchfleet.cost import catalogue, pricing
from benchfleet.plan import stripe
from benchfleet.plan.model import make_plan
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import LoadedSpec, parse_spec

WORKLOAD = {"name": "w", "test": "oltp_read_only", "threads": [1]}


def spec(*targets: dict[str, Any]) -> Any:
    return parse_spec({"name": "s", "workload": dict(WORKLOAD), "targets": list(targets)})


def ec2(storage: dict[str, Any], instance_type: str = "m6i.xlarge", **more: Any) -> dict[str, Any]:
    return {"id": "t", "kind": "ec2", "instance_type": instance_type, "storage": storage, **more}


def problem(*targets: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(SpecError) as e:
        spec(*targets)
    return e.value.problems[0]


@pytest.mark.parametrize(("storage", "field", "fragment"), [
    ({"volumes": 8}, "storage.raid", "8 volumes need a RAID level"),
    ({"raid": 0}, "storage.raid", "needs volumes > 1"),
    ({"volumes": 3, "raid": 10}, "storage.volumes", "even number, not 3"),
    ({"volumes": 25, "raid": 0}, "storage.volumes", "less than or equal to 24"),
    ({"volumes": 0}, "storage.volumes", "greater than or equal to 1"),
    ({"volumes": 2, "raid": 5}, "storage.raid", "0 or 10"),
    ({"filesystem": "zfs"}, "storage.filesystem", "'xfs' or 'ext4'"),
    ({"mount_options": "noatime,ro"}, "storage.mount_options", "ro: the data directory must be mounted"),
    ({"mount_options": "noatime;reboot"}, "storage.mount_options", "is not a mount option"),
    ({"mount_options": "noatime,noatime"}, "storage.mount_options", "given twice"),
])
def test_the_spec_refuses_a_stripe_that_cannot_be_built(storage: dict[str, Any], field: str, fragment: str) -> None:
    where, message = problem(ec2(storage))
    assert where == f"targets[0].{field}" and fragment in message, (where, message)


@pytest.mark.parametrize(("storage", "key"), [
    ({"volumes": 2, "raid": 0}, "volumes"), ({"filesystem": "ext4"}, "filesystem"),
    ({"mount_options": "noatime,nobarrier"}, "mount_options")])
def test_rds_refuses_every_layout_key_naming_it(storage: dict[str, Any], key: str) -> None:
    where, message = problem({"id": "r", "kind": "rds", "instance_class": "db.m6g.large",
                              "storage": {"type": "gp3", **storage}})
    assert where == f"targets[0].storage.{key}" and "RDS lays out its own storage" in message
    # The defaults, as the plan hands a target on, validate again (provision re-reads it).
    dumped = spec({"id": "r", "kind": "rds", "instance_class": "db.m6g.large"}).targets[0].model_dump(mode="json")
    assert spec(dumped).targets[0].storage.volumes == 1


def test_a_stripe_validates_with_its_defaults() -> None:
    target = spec(ec2({"volumes": 8, "raid": 10, "size_gb": 200})).targets[0]
    assert (target.storage.volumes, target.storage.raid, target.storage.filesystem,
            target.storage.mount_options, target.storage.data_volumes) == (8, 10, "xfs", "noatime", 4)


@pytest.mark.parametrize(("target", "field", "fragment"), [
    (ec2({"type": "instance-store", "volumes": 3, "raid": 0}, "i4i.8xlarge"), "storage.volumes",
     "i4i.8xlarge has 2 instance-store disks (3750 GB each), not 3"),
    (ec2({"type": "instance-store", "volumes": 2, "raid": 0}, "i4i.large"), "storage.volumes",
     "has 1 instance-store disk"),
    (ec2({"type": "instance-store", "iops": 3000}, "i4i.large"), "storage.iops", "take no provisioned iops"),
    (ec2({"type": "instance-store"}, "m2.4xlarge"), "storage.type", "is not NVMe (hdd)"),
    (ec2({"volumes": 20, "raid": 0}, "i4i.32xlarge"), "storage.volumes", "at most 19 EBS volumes"),
])
def test_the_catalogue_refuses_what_the_instance_type_cannot_hold(target: dict[str, Any], field: str,
                                                                  fragment: str) -> None:
    problems = catalogue.spec_problems(list(spec(target).targets), home_region="us-east-1")
    assert problems and problems[0][0] == f"targets[0].{field}" and fragment in problems[0][1], problems


def test_the_catalogue_has_ebs_bandwidth_and_disks_of_every_type_it_can() -> None:
    cat = catalogue.load_catalogue()
    limits = cat.storage_limits
    assert limits is not None and "DescribeInstanceTypes" in limits.source
    m6i = cat.type_storage("m6i.xlarge")
    assert m6i is not None and m6i.ebs is not None
    ebs = m6i.ebs
    assert (ebs.baseline_iops, ebs.baseline_mb_s, ebs.max_iops, ebs.max_mb_s) == (6000, 156.25, 40000, 1250.0)
    i3 = cat.type_storage("i3.8xlarge")
    assert i3 is not None and i3.instance_store is not None
    assert (i3.instance_store.disks, i3.instance_store.nvme) == (4, True)
    named = [f"{f}.{s}" for f, fam in cat.ec2.families.items() for s in fam.sizes]
    recorded = [n for n in named if cat.type_storage(n) is not None]
    assert len(recorded) >= len(named) - 8  # the few moto's recording lacks are "not checked", never guessed


@pytest.mark.parametrize(("storage", "iops", "mib_s"), [
    ({"type": "gp3"}, 3000, 125.0),
    ({"type": "gp3", "iops": 16000, "throughput_mbps": 1000}, 16000, 1000.0),
    ({"type": "gp2", "size_gb": 20}, 100, 128.0),
    ({"type": "gp2", "size_gb": 200}, 600, 128.0),
    ({"type": "gp2", "size_gb": 334}, 1002, 250.0),
    ({"type": "gp2", "size_gb": 8000}, 16000, 250.0),
    ({"type": "io1", "size_gb": 200, "iops": 4000}, 4000, 500.0 if 4000 / 4 > 500 else 1000.0),
    ({"type": "io1", "size_gb": 1000, "iops": 40000}, 40000, 1000.0),
    ({"type": "io2", "size_gb": 200, "iops": 10000}, 10000, 2560.0),
    ({"type": "io2", "size_gb": 1000, "iops": 64000}, 64000, 4000.0),
    ({"type": "instance-store"}, None, None),
])
def test_per_volume_figures_follow_the_ebs_rules(storage: dict[str, Any], iops: int | None,
                                                 mib_s: float | None) -> None:
    built = spec(ec2(storage, "i4i.large" if storage["type"] == "instance-store" else "m6i.xlarge")).targets[0]
    assert stripe.volume_figures(built.storage) == (iops, mib_s)


def test_raid10_of_eight_gp3_on_m6i_xlarge_warns_with_the_figures() -> None:
    target = spec(ec2({"volumes": 8, "raid": 10, "size_gb": 200})).targets[0]
    out = stripe.figures(target.storage, "m6i.xlarge", catalogue.load_catalogue().type_storage("m6i.xlarge"))
    assert out["array"] == {"capacity_gib": 800, "read_iops": 24000, "read_mib_s": 1000.0,
                            "write_iops": 12000, "write_mib_s": 500.0}
    iops, mb_s = out["warnings"]
    assert "8 gp3 volumes x 3,000 IOPS = 24,000 IOPS exceed m6i.xlarge's EBS baseline of 6,000 IOPS" in iops
    assert "up to 40,000 IOPS" in iops
    # 1000 MiB/s is 1048.576 MB/s, against the instance's 156.25 MB/s (1250 Mbps / 8).
    assert "= 1,000 MiB/s (1,048.58 MB/s) exceed m6i.xlarge's EBS baseline of 156.25 MB/s" in mb_s


def test_a_stripe_the_instance_carries_has_no_warning_and_one_past_its_maximum_says_it_gains_nothing() -> None:
    cat = catalogue.load_catalogue()
    fits = spec(ec2({"volumes": 8, "raid": 10, "size_gb": 200}, "m6i.8xlarge")).targets[0]
    assert stripe.figures(fits.storage, "m6i.8xlarge", cat.type_storage("m6i.8xlarge"))["warnings"] == []
    past = spec(ec2({"volumes": 4, "raid": 0, "type": "io2", "size_gb": 100, "iops": 20000}, "m6i.8xlarge")).targets[0]
    warnings = stripe.figures(past.storage, "m6i.8xlarge", cat.type_storage("m6i.8xlarge"))["warnings"]
    assert warnings == [
        "4 io2 volumes x 20,000 IOPS = 80,000 IOPS exceed m6i.8xlarge's EBS maximum of 40,000 IOPS: the instance "
        "cannot use more, striping past it gains nothing",
        "4 io2 volumes x 4,000 MiB/s = 16,000 MiB/s (16,777.22 MB/s) exceed m6i.8xlarge's EBS maximum of 1,250 MB/s: "
        "the instance cannot use more, striping past it gains nothing"]
    unknown = stripe.figures(fits.storage, "x9z.large", None)["warnings"]
    assert unknown == ["x9z.large's EBS bandwidth is not recorded (workloads/catalogue/ec2-storage.json): whether "
                       "it carries the stripe is not checked"]


def test_every_volume_is_priced() -> None:
    prices = pricing.load_prices()
    gp3 = prices.ebs.storage_rate("us-east-1", "gp3", by_region=True)
    assert gp3 is not None
    one = spec(ec2({"size_gb": 200, "iops": 24000, "throughput_mbps": 1000})).targets[0]
    eight = spec(ec2({"size_gb": 200, "volumes": 8, "raid": 10})).targets[0]
    # us-east-1 gp3: $0.08/GB-month, $0.005 per IOPS-month above 3000, $0.04 per MiB/s-month above 125.
    lines = {line.item: line.usd_per_hour["on_demand"] for line in pricing.volume_lines(gp3, one.storage)}
    assert lines == pytest.approx({"storage": 200 * 0.08 / 730, "iops": (24000 - 3000) * 0.005 / 730,
                                   "throughput": (1000 - 125) * 0.04 / 730})
    (capacity,) = pricing.volume_lines(gp3, eight.storage, quantity=8)
    assert capacity.quantity == 8 and capacity.usd_per_hour["on_demand"] == pytest.approx(8 * 200 * 0.08 / 730)
    (priced,) = (line for line in pricing.target_prices(eight).lines if line.item == "storage")
    assert priced.quantity == 8 and priced.usd_per_hour["on_demand"] == pytest.approx(8 * 200 * 0.08 / 730)
    assert pricing.price_per_hour(eight) == pytest.approx(0.192 + 8 * 200 * 0.08 / 730 + 0.005, abs=1e-6)  # + IPv4
    nvme = spec(ec2({"type": "instance-store", "volumes": 2, "raid": 0}, "i4i.8xlarge")).targets[0]
    # The disks come with the instance: no storage line, the instance's price is the whole price.
    assert [line.item for line in pricing.target_prices(nvme).lines] == ["instance", "public_ipv4"]


def test_the_plan_carries_every_volume_priced_and_the_warnings() -> None:
    s = spec(ec2({"volumes": 8, "raid": 10, "size_gb": 200}),
             {**ec2({"size_gb": 200, "iops": 24000, "throughput_mbps": 1000}), "id": "one"},
             {"id": "db", "kind": "rds", "instance_class": "db.m6g.large"})
    summary = make_plan(LoadedSpec(spec=s, workload=s.workload, source="x"), pricing.price_per_hour).summary()
    striped, _, db = summary["targets"]
    assert striped["storage"]["usd_per_hour"]["volumes"] == 8
    assert striped["storage"]["usd_per_hour"]["total"] == pytest.approx(8 * 200 * 0.08 / 730)
    assert striped["storage"]["instance"]["baseline_iops"] == 6000
    assert db["storage"]["usd_per_hour"]["total"] == pytest.approx(100 * 0.115 / 730)
    assert [w.split(":")[0] for w in summary["warnings"]] == ["t", "t", "one", "one"]
    assert striped["warnings"] == [w.split(": ", 1)[1] for w in summary["warnings"][:2]]


def test_benchfleet_plan_prints_the_storage_and_the_warnings(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "stripe.yaml"
    path.write_text("name: stripe\nworkload: {name: w, test: oltp_read_only, threads: [1]}\ntargets:\n"
                    "  - {id: raid10, kind: ec2, instance_type: m6i.xlarge, storage: {volumes: 8, raid: 10}}\n")
    assert main(["plan", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "8 x gp3 100 GiB" in out and "RAID 10, xfs (noatime)" in out
    assert "warning: raid10: 8 gp3 volumes x 3,000 IOPS = 24,000 IOPS exceed m6i.xlarge's EBS baseline" in out
    assert main(["validate", str(REPO / "workloads" / "comparisons" / "storage.yaml")]) == 0


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_validate_and_plan_refuse_what_the_instance_type_cannot_hold_naming_the_field(
        command: str, tmp_path: Any, capsys: Any) -> None:
    # What the API refuses (the catalogue) is refused here first, not after `benchfleet run --remote`.
    path = tmp_path / "disks.yaml"
    path.write_text("name: disks\nworkload: {name: w, test: oltp_read_only, threads: [1]}\ntargets:\n"
                    "  - {id: nvme, kind: ec2, instance_type: i4i.2xlarge, region: us-east-1,\n"
                    "     storage: {type: instance-store, volumes: 2, raid: 0}}\n")
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "targets[0].storage.volumes: i4i.2xlarge has 1 instance-store disk (1875 GB each), not 2" in err
    assert main([command, str(path), "--local"] if command == "plan" else [command, "--schema"]) == 0
