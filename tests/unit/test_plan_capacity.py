"""Cloud plans as the deployed state machine runs them: repetitions at once or one after another
(read from the definition), peak hosts and vCPUs per region with their caps, repetition spacing,
and the control plane's charges in the estimate and the budget check."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import asl_walk, runplan
from benchfleet.cli import main
from benchfleet.plan import make_plan, vcpus_of
from benchfleet.pricing import price_per_hour
from benchfleet.spec import load_spec, parse_spec, resolve

REPO = Path(__file__).resolve().parents[2]
GRAVITON = REPO / "workloads" / "comparisons" / "graviton-vs-intel-vs-amd.yaml"
WORKLOAD = {"name": "w", "test": "oltp_read_only", "threads": [1, 2], "duration_s": 300, "warmup_s": 60,
            "tables": 2, "table_size": 10_000}


def loaded(targets: list[dict[str, object]], **over: object):
    return resolve(parse_spec({"name": "p", "workload": WORKLOAD, "targets": targets, **over}), "p")


def ec2(i: int, instance_type: str = "m6i.2xlarge", **over: object) -> dict[str, object]:
    return {"id": f"t{i}", "kind": "ec2", "instance_type": instance_type, **over}


def concurrent(definition: dict, limit: int) -> dict:
    """The definition with every repetitions Map at MaxConcurrency ``limit``."""
    changed = copy.deepcopy(definition)
    for state in changed["States"].values():
        if state["Type"] == "Map":
            for inner in state["ItemProcessor"]["States"].values():
                if inner["Type"] == "Map":
                    inner["MaxConcurrency"] = limit
    return changed


@pytest.mark.parametrize(("name", "vcpus"), [
    ("m6i.large", 2), ("m6g.xlarge", 4), ("c7g.16xlarge", 64), ("t3.micro", 2), ("m6g.medium", 1),
    ("db.r6g.2xlarge", 8), ("db.t4g.medium", 2), ("m7i.metal-48xl", None), ("c5.metal", None)])
def test_vcpus_from_the_size_name(name: str, vcpus: int | None) -> None:
    assert vcpus_of(name) == vcpus


def test_the_deployed_definition_runs_repetitions_at_once() -> None:
    definition = asl_walk.load_definition()
    assert runplan.repetitions_at_once(definition) == 0
    assert runplan.repetitions_at_once(concurrent(definition, 1)) == 1


def test_the_plan_follows_the_deployed_definition_and_shows_the_spacing() -> None:
    """Wall time from the definition's concurrency: all repetitions at once, or started
    repetition_spacing_s apart (each repetition's start_after_s, the definition's Wait)."""
    rep = runplan.aws_plan(loaded([ec2(1)], repetitions=3), price_per_hour)[0].targets[0].repetition_s
    request = runplan.RunRequest(spec={"name": "p", "workload": WORKLOAD, "targets": [ec2(1)], "repetitions": 3})
    plan = runplan.plan_run(request, zone_count=3, max_vcpus=24)
    assert plan["wall_s"] == rep and plan["targets"][0]["start_after_s"] == [0, 0, 0]
    spaced = request.model_copy(update={"spec": {**request.spec, "repetition_spacing_s": 3600}})
    plan = runplan.plan_run(spaced, zone_count=3)
    assert plan["targets"][0]["start_after_s"] == [0, 3600, 7200]
    assert plan["wall_s"] == 7200 + rep


def test_wall_time_peak_and_cost_follow_how_repetitions_run() -> None:
    spec = loaded([ec2(1), ec2(2, "m6g.large")], repetitions=3)
    definition = asl_walk.load_definition()
    one_by_one, _, _ = runplan.aws_plan(spec, price_per_hour, definition=concurrent(definition, 1))
    at_once, _, _ = runplan.aws_plan(spec, price_per_hour, definition=definition)
    rep = one_by_one.targets[0].repetition_s
    assert one_by_one.wall_s == 3 * rep and at_once.wall_s == rep
    assert one_by_one.region_peaks() == [{"region": "us-east-1", "ec2_hosts": 2, "ec2_vcpus": 10,
                                          "db_instances": 0, "unknown_vcpus": []}]
    assert at_once.region_peaks()[0]["ec2_vcpus"] == 30 and at_once.region_peaks()[0]["ec2_hosts"] == 6
    # Each repetition's host exists for one repetition either way: the hosts cost the same.
    assert one_by_one.hosts_usd == at_once.hosts_usd > 0
    # Spaced starts: three repetitions 2 h apart on a machine that runs them at once.
    spaced, _, _ = runplan.aws_plan(loaded([ec2(1)], repetitions=3, repetition_spacing_s=7200), price_per_hour,
                                    definition=definition)
    assert spaced.wall_s == 2 * 7200 + rep and spaced.targets[0].peak_repetitions == 1
    # Locally everything runs one after another, spacing or not.
    local = make_plan(loaded([{"id": "l", "kind": "local"}], repetitions=3, repetition_spacing_s=60), at_once=0)
    assert local.targets[0].peak_repetitions == 1 and local.region_peaks() == []


def test_caps_name_the_cap_and_its_key() -> None:
    plan, _, _ = runplan.aws_plan(loaded([ec2(i) for i in range(5)]), price_per_hour)  # 5 x 8 vCPUs
    with pytest.raises(PlanRejected, match=r"40 EC2 vCPUs at once in us-east-1, above the cap of 32 "
                                           r"\(cdk context maxVcpusPerRegion\)"):
        runplan.check_plan(plan)
    runplan.check_plan(plan, max_vcpus=40)
    with pytest.raises(PlanRejected, match=r"5 hosts at once in us-east-1, above the cap of 4 "
                                           r"\(cdk context maxHostsPerRegion\)"):
        runplan.check_plan(plan, max_vcpus=40, max_hosts=4)
    # Regions are capped each on its own; RDS targets count their DB instance and client.
    # (eu-west-1 is not in the shipped price tables, which refuse it: priced here by a stand-in.)
    split, _, _ = runplan.aws_plan(loaded([ec2(1), ec2(2), ec2(3), ec2(4, region="eu-west-1"),
                                           {"id": "db", "kind": "rds", "instance_class": "db.m6g.large",
                                            "region": "eu-west-1"}], budget_usd=50), lambda _: 0.5)
    runplan.check_plan(split)
    assert [(p["region"], p["ec2_hosts"], p["ec2_vcpus"], p["db_instances"]) for p in split.region_peaks()] == [
        ("eu-west-1", 2, 12, 1), ("us-east-1", 3, 24, 0)]


def test_a_spacing_a_one_after_another_machine_cannot_keep_is_refused() -> None:
    one_by_one = concurrent(asl_walk.load_definition(), 1)
    rep = runplan.aws_plan(loaded([ec2(1)], repetitions=2), price_per_hour)[0].targets[0].repetition_s
    runplan.check_plan(runplan.aws_plan(loaded([ec2(1)], repetitions=2, repetition_spacing_s=rep),
                                        price_per_hour, definition=one_by_one)[0])
    too_long, _, _ = runplan.aws_plan(loaded([ec2(1)], repetitions=2, repetition_spacing_s=rep + 1),
                                      price_per_hour, definition=one_by_one)
    with pytest.raises(PlanRejected, match=r"repetition_spacing_s: .* runs repetitions one after another"):
        runplan.check_plan(too_long)
    # The deployed machine starts each repetition when its spacing says.
    runplan.check_plan(runplan.aws_plan(loaded([ec2(1)], repetitions=2, repetition_spacing_s=rep + 1),
                                        price_per_hour)[0])


def test_the_control_plane_is_in_the_estimate_and_the_budget() -> None:
    plan, _, cp = runplan.aws_plan(resolve(load_spec(GRAVITON).spec, "g"), price_per_hour)
    items = {c.item: c for c in plan.control_plane}
    assert items["Step Functions state transitions"].quantity == cp.counts.transitions > 0
    assert items["Lambda requests"].quantity == cp.counts.invocation_total > 0
    assert {"Lambda compute (GB-s)", "CloudWatch GetMetricData metrics", "S3 PUT requests"} <= set(items)
    assert plan.control_plane_usd > 0
    assert plan.estimated_cost_usd == pytest.approx(plan.hosts_usd + plan.control_plane_usd, abs=1e-4)
    # A budget between the hosts' cost and the whole estimate is refused, naming both parts.
    tight = plan.model_copy(update={"budget_usd": round(plan.hosts_usd + plan.control_plane_usd / 2, 4)})
    with pytest.raises(PlanRejected, match=r"budget_usd: .*hosts \$.*control plane \$"):
        runplan.check_plan(tight)
    # The default store (Athena) writes objects; a Timestream deployment pays for its records instead.
    assert "Timestream writes" not in items
    timestream, _, _ = runplan.aws_plan(resolve(load_spec(GRAVITON).spec, "g"), price_per_hour, store="timestream")
    assert "Timestream writes" in {c.item for c in timestream.control_plane}


def test_plan_cli_shows_regions_and_control_plane_and_refuses_above_the_cap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The shipped Graviton comparison runs its 3 repetitions of 6 targets at once: 90 vCPUs, above a
    # fresh account's 32 (the default cap). Refused by default, naming the key and the way out.
    assert main(["plan", str(GRAVITON), "--format", "json"]) == 2
    summary = json.loads(capsys.readouterr().out)
    assert summary["regions"] == [{"region": "us-east-1", "ec2_hosts": 18, "ec2_vcpus": 90, "db_instances": 0,
                                   "unknown_vcpus": []}]
    assert "above the cap of 32 (cdk context maxVcpusPerRegion)" in summary["refused"]
    assert "repetition_spacing_s" in summary["refused"]
    # A deployment whose quota and cap were raised (-c maxVcpusPerRegion=96) takes it.
    monkeypatch.setenv("BENCHFLEET_MAX_VCPUS_PER_REGION", "96")
    assert main(["plan", str(GRAVITON), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["control_plane_usd"] > 0 and summary["refused"] is None
    assert summary["estimated_cost_usd"] == pytest.approx(summary["hosts_usd"] + summary["control_plane_usd"],
                                                          abs=1e-4)
    assert summary["wall_s"] == max(t["repetition_s"] for t in summary["targets"])
    assert main(["plan", str(GRAVITON)]) == 0
    out = capsys.readouterr().out
    assert "control plane" in out and "EC2 vCPUs" in out and "at once" in out
    monkeypatch.setenv("BENCHFLEET_MAX_VCPUS_PER_REGION", "16")
    assert main(["plan", str(GRAVITON)]) == 2
    err = capsys.readouterr().err
    assert "above the cap of 16 (cdk context maxVcpusPerRegion)" in err and "Traceback" not in err
