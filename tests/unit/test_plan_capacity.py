"""Cloud plans as the deployed state machine runs them: repetitions at once or one after another
(read from the definition), peak hosts and vCPUs per region with their caps, repetition spacing,
and the control plane's charges in the estimate and the budget check."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import asl_walk, runplan
from benchfleet.cli.main import main
from benchfleet.cost.pricing import price_per_hour
from benchfleet.plan import waves
from benchfleet.plan.estimates import vcpus_of
from benchfleet.plan.model import Host, make_plan
from benchfleet.spec.loading import load_spec, parse_spec, resolve

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


def test_a_run_above_the_caps_is_planned_in_waves_within_them() -> None:
    """Issue 30 item 2: five 8-vCPU targets (40 vCPUs) under a cap of 32 run four, then the fifth once
    the first wave's hosts are planned gone; the check of the deployment's caps then holds."""
    plan, _, _ = runplan.aws_plan(loaded([ec2(i) for i in range(5)]), price_per_hour, within=runplan.caps())
    rep = plan.targets[0].repetition_s
    assert [t.starts_s for t in plan.targets] == [[0], [0], [0], [0], [rep + waves.GAP_S]]
    assert [(w["wave"], w["start_s"], w["repetitions"]) for w in plan.waves] == [
        (1, 0, ["t0#1", "t1#1", "t2#1", "t3#1"]), (2, rep + waves.GAP_S, ["t4#1"])]
    assert plan.region_peaks()[0]["ec2_vcpus"] == 32 and plan.wall_s == 2 * rep + waves.GAP_S
    runplan.check_plan(plan)
    # The hosts cap the same way: at most 4 at once.
    plan, _, _ = runplan.aws_plan(loaded([ec2(i) for i in range(5)]), price_per_hour,
                                  within=runplan.caps(max_vcpus=40, max_hosts=4))
    assert max(w["regions"][0]["ec2_hosts"] for w in plan.waves) == 4 and len(plan.waves) == 2
    # Without the schedule (a plan made for no cap), the deployment's check still names the caps.
    unscheduled, _, _ = runplan.aws_plan(loaded([ec2(i) for i in range(5)]), price_per_hour)
    with pytest.raises(PlanRejected, match=r"40 EC2 vCPUs .* above the caps of 32 \(cdk context maxVcpusPerRegion\)"):
        runplan.check_plan(unscheduled)


def test_regions_are_capped_each_on_its_own_and_every_host_of_a_target_counts() -> None:
    # RDS targets count their DB instance and client. (eu-west-1 priced here by a stand-in.)
    split, _, _ = runplan.aws_plan(loaded([ec2(1), ec2(2), ec2(3), ec2(4, region="eu-west-1"),
                                           {"id": "db", "kind": "rds", "instance_class": "db.m6g.large",
                                            "region": "eu-west-1"}], budget_usd=50), lambda _: 0.5,
                                   within=runplan.caps())
    runplan.check_plan(split)
    assert len(split.waves) == 1
    assert [(p["region"], p["ec2_hosts"], p["ec2_vcpus"], p["db_instances"]) for p in split.region_peaks()] == [
        ("eu-west-1", 2, 12, 1), ("us-east-1", 3, 24, 0)]
    # A target of several hosts (a cluster's nodes, its proxy, its client) is scheduled whole.
    node = Host(service="ec2", instance_type="m6i.xlarge", vcpus=4, region="us-east-1")
    items = [waves.Item(f"cluster{n}", 1, (node,) * 5, 1000) for n in range(3)]
    slots = waves.schedule(items, waves.Caps(max_vcpus=48, max_hosts=20))
    assert [s.start_s for s in slots] == [0, 0, 1000 + waves.GAP_S]  # 20 vCPUs each: two fit in 48


def test_only_a_single_target_larger_than_a_cap_is_refused_naming_it() -> None:
    with pytest.raises(PlanRejected, match=r"targets\[1\]: target big alone needs 64 EC2 vCPUs at once in "
                                           r"us-east-1 .* above the cap of 32 \(cdk context maxVcpusPerRegion\)"):
        runplan.aws_plan(loaded([ec2(1), {"id": "big", "kind": "ec2", "instance_type": "m6i.16xlarge"}]),
                         price_per_hour, within=runplan.caps())
    with pytest.raises(PlanRejected, match=r"targets\[0\]: target db alone needs 2 hosts .* cap of 1 "
                                           r"\(cdk context maxHostsPerRegion\)"):
        runplan.aws_plan(loaded([{"id": "db", "kind": "rds", "instance_class": "db.m6g.large"}]), price_per_hour,
                         within=runplan.caps(max_hosts=1))


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


def test_plan_cli_shows_waves_regions_and_control_plane_within_the_default_caps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30, finding 2: the shipped Graviton comparison (3 repetitions of 6 targets: 90 vCPUs were
    it run at once) used to be refused with the default cap of 32; it plans in waves and says how long."""
    assert main(["plan", str(GRAVITON), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["refused"] is None and summary["control_plane_usd"] > 0
    assert summary["regions"] == [{"region": "us-east-1", "ec2_hosts": 7, "ec2_vcpus": 32, "db_instances": 0,
                                   "unknown_vcpus": []}]
    rep = max(t["repetition_s"] for t in summary["targets"])
    # Every target's first repetition starts at once; the rest as the first ones' hosts go.
    assert summary["waves"][0]["start_s"] == 0 and len(summary["waves"][0]["repetitions"]) >= 6
    assert all(r["ec2_vcpus"] <= 32 for w in summary["waves"] for r in w["regions"])
    assert sorted(rp for w in summary["waves"] for rp in w["repetitions"]) == sorted(
        f"{t['target_id']}#{n}" for t in summary["targets"] for n in (1, 2, 3))
    assert 3 * rep <= summary["wall_s"] <= 3 * (rep + waves.GAP_S)
    assert summary["wall_s"] == sum(summary["wall_parts"].values())
    assert summary["wall_parts"]["waiting"] >= 2 * waves.GAP_S
    assert summary["estimated_cost_usd"] == pytest.approx(summary["hosts_usd"] + summary["control_plane_usd"],
                                                          abs=1e-4)
    assert main(["plan", str(GRAVITON)]) == 0
    out = capsys.readouterr().out
    assert "waves" in out and "control plane" in out and "EC2 vCPUs" in out and "waiting" in out
    # A deployment whose quota and cap were raised (-c maxVcpusPerRegion=96) runs it at once.
    monkeypatch.setenv("BENCHFLEET_MAX_VCPUS_PER_REGION", "96")
    assert main(["plan", str(GRAVITON), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["wall_s"] == rep and len({w["start_s"] for w in summary["waves"]}) == 1
    # Below the largest target's own needs (an m6*.2xlarge: 8 vCPUs), refused naming it and the key.
    monkeypatch.setenv("BENCHFLEET_MAX_VCPUS_PER_REGION", "6")
    assert main(["plan", str(GRAVITON)]) == 2
    err = capsys.readouterr().err
    assert "alone needs 8 EC2 vCPUs" in err and "above the cap of 6 (cdk context maxVcpusPerRegion)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("path", sorted((REPO / "workloads" / "comparisons").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_spec_plans_with_the_default_caps(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(path), "--format", "json"]) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert sum(summary["wall_parts"].values()) == summary["wall_s"]
    for peak in summary["regions"]:
        assert peak["ec2_vcpus"] <= runplan.DEFAULT_MAX_VCPUS_PER_REGION
        assert peak["ec2_hosts"] + peak["db_instances"] <= runplan.DEFAULT_MAX_HOSTS_PER_REGION


def test_each_repetition_waits_for_its_wave_in_the_state_machine() -> None:
    """The plan's schedule is what the deployed definition runs: each repetition's start_after_s is its
    wave's start, and each target's deadline (readiness ends a late target) its last repetition's end."""
    request = runplan.RunRequest(spec={"name": "p", "workload": WORKLOAD, "targets": [ec2(i) for i in range(5)]})
    now = datetime(2026, 11, 23, tzinfo=UTC)
    plan = runplan.plan_run(request, now=now)
    rep = runplan.aws_plan(loaded([ec2(0)]), price_per_hour)[0].targets[0].repetition_s
    assert [t["start_after_s"] for t in plan["targets"]] == [[0]] * 4 + [[rep + waves.GAP_S]]
    assert plan["wall_s"] == 2 * rep + waves.GAP_S
    deadline = datetime.fromisoformat(plan["targets"][4]["deadline"].replace("Z", "+00:00"))
    assert deadline == now + timedelta(seconds=2 * rep + waves.GAP_S) + runplan.DEADLINE_MARGIN


def test_the_wall_time_is_itemised_and_provisioning_is_in_it(capsys: pytest.CaptureFixture[str]) -> None:
    """The storage comparison's steps add to less than its wall time: provisioning (5 min for EC2) and
    teardown were in it, unsaid; the plan now lists every part, and they add up to the wall time."""
    assert main(["plan", str(REPO / "workloads" / "comparisons" / "storage.yaml"), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    parts = summary["wall_parts"]
    assert parts["provisioning"] == 300 and parts["teardown"] == 60
    assert parts["prepare"] > 0 and parts["steps"] > 0 and sum(parts.values()) == summary["wall_s"]
    assert main(["plan", str(REPO / "workloads" / "comparisons" / "storage.yaml")]) == 0
    assert "provisioning 5m00s" in capsys.readouterr().out
