"""Targets run where their spec says or nowhere: Plan and the API refuse a region with nothing
deployed (naming the field and the CDK context key), every plan shows each target's region, prices
are those of the region the target runs in, and an unpriced region stays unpriced."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws import clients
from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import CONTEXT_KEY, TargetRegions
from benchfleet.cli.main import main
from benchfleet.cost import pricing
from benchfleet.plan.model import make_plan
from benchfleet.spec.loading import load_spec

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "statemachine"))
from sm_harness import Context  # noqa: E402  (the LambdaContext the handlers' tests use)

COMPARISONS = sorted((REPO / "workloads" / "comparisons").glob("*.yaml"))
STEAL_REGIONS = REPO / "workloads" / "comparisons" / "steal-regions.yaml"
WORKLOAD = {"name": "w", "test": "oltp_read_only", "threads": [1], "duration_s": 60, "warmup_s": 0}


def request(*targets: dict[str, object]) -> runplan.RunRequest:
    return runplan.RunRequest(spec={"name": "r", "workload": WORKLOAD, "targets": list(targets)})


def ec2(tid: str, **extra: object) -> dict[str, object]:
    return {"id": tid, "kind": "ec2", "instance_type": "t3.xlarge", **extra}


def test_plan_refuses_a_region_that_is_not_deployed_naming_field_region_and_key() -> None:
    regions = TargetRegions.of("us-east-1", ["us-west-1"])
    with pytest.raises(PlanRejected) as e:
        runplan.plan_run(request(ec2("a", region="us-west-1"), ec2("b", region="eu-north-1")), regions=regions)
    message = str(e.value)
    assert "targets[1].region" in message and "eu-north-1" in message and CONTEXT_KEY in message
    assert "targets[0]" not in message


def test_every_planned_target_carries_the_region_it_runs_in() -> None:
    regions = TargetRegions.of("eu-north-1", ["us-west-1"])
    plan = runplan.plan_run(request(ec2("home"), ec2("west", region="us-west-1")), regions=regions)
    by_id = {t["target_id"]: t for t in plan["targets"]}
    assert by_id["home"]["region"] == by_id["home"]["target"]["region"] == "eu-north-1"
    assert by_id["west"]["region"] == by_id["west"]["target"]["region"] == "us-west-1"
    # Priced where it runs: the same t3.xlarge costs what each region charges.
    prices = pricing.load_prices()
    assert by_id["home"]["target"]["price_per_hour"] == pytest.approx(
        prices.ec2.instance("eu-north-1", "t3.xlarge") + pricing.storage_per_hour(
            prices.ebs.storage_rate("eu-north-1", "gp3", by_region=True), 100)
        + pricing.public_ipv4_rate(prices), abs=1e-6)
    assert by_id["west"]["target"]["price_per_hour"] > by_id["home"]["target"]["price_per_hour"]


def test_the_plan_handler_reads_the_regions_the_cdk_app_deploys(monkeypatch: pytest.MonkeyPatch) -> None:
    """TARGET_REGIONS / AWS_REGION as the template sets them (tests/cdk/context.test.ts)."""
    from handlers import plan as handler

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("TARGET_REGIONS", "us-west-1,eu-north-1")
    monkeypatch.setenv("RESULTS_BUCKET", "bf-results")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")
    spec = load_spec(STEAL_REGIONS)
    data = spec.spec.model_dump(mode="json") | {"workload": spec.workload.model_dump(mode="json")}
    with mock_aws():  # Plan writes its targets to the results bucket
        clients.reset()
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="bf-results")
        out = handler.handler({"input": {"spec": data}, "execution_name": "steal-1"}, Context(function_name="plan"))
        clients.reset()
    assert [t["region"] for t in out["targets"]] == ["us-west-1", "us-west-1", "eu-north-1", "eu-north-1"]
    monkeypatch.setenv("TARGET_REGIONS", "us-west-1")
    with pytest.raises(PlanRejected, match=r"targets\[2\]\.region: eu-north-1 .*targetRegions"):
        handler.handler({"input": {"spec": data}, "execution_name": "steal-2"}, Context(function_name="plan"))


def test_cli_plan_shows_each_targets_region(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(STEAL_REGIONS), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [t["region"] for t in summary["targets"]] == ["us-west-1", "us-west-1", "eu-north-1", "eu-north-1"]
    assert main(["plan", str(STEAL_REGIONS)]) == 0
    table = capsys.readouterr().out.split("storage, per host")[0]  # the plan's own table
    assert "region" in table
    rows = [line for line in table.splitlines() if "t3-xlarge-" in line or "m5-xlarge-" in line]
    assert len(rows) == 4
    for row in rows:
        target_id = row.split("│")[1].strip()
        assert target_id.rsplit("-", 3)[-3:] == row.split("│")[3].strip().split("-")


@pytest.mark.parametrize("path", COMPARISONS, ids=lambda p: p.stem)
def test_the_price_tables_cover_every_region_the_shipped_specs_use(path: Path) -> None:
    loaded = load_spec(path)
    plan = make_plan(loaded, pricing.price_per_hour)
    assert plan.unpriced_targets == [], [pricing.unpriced_reason(t) for t in loaded.spec.targets]
    assert all(t.price_per_hour and t.price_per_hour > 0 for t in plan.targets if t.kind != "local")


def test_an_unpriced_region_is_shown_unpriced_never_zero_and_refused_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "far.yaml"
    spec.write_text(json.dumps({"name": "far", "workload": WORKLOAD, "targets": [
        ec2("virginia", region="us-east-1"), ec2("mumbai", region="ap-south-1")]}))
    assert main(["plan", str(spec), "--format", "json"]) == 2
    out = capsys.readouterr()
    summary = json.loads(out.out)
    mumbai = summary["targets"][1]
    assert mumbai["region"] == "ap-south-1"
    assert mumbai["price_per_hour"] is None and mumbai["estimated_cost_usd"] is None
    assert summary["unpriced_targets"] == ["mumbai"]
    # Refused as the deployed stack refuses it: the field, the region, and how to get its prices.
    assert "targets[1].region: target mumbai has no price" in out.err
    assert "no ec2 prices for ap-south-1" in out.err and "catalogue_refresh --live" in out.err
    assert summary["refused"] and "ap-south-1" in summary["refused"]
    assert main(["plan", str(spec)]) == 2
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if "mumbai" in line)
    assert "unpriced" in row and "$0" not in row and "0.00" not in row
    assert "1 target unpriced" in table


@pytest.mark.parametrize(("env", "region", "source"), [
    ({"AWS_REGION": "eu-north-1"}, "eu-north-1", "AWS_REGION"),
    ({"AWS_DEFAULT_REGION": "us-west-1"}, "us-west-1", "AWS_DEFAULT_REGION"),
    ({}, "us-east-1", "no AWS region is configured here")])
def test_a_target_without_a_region_is_priced_in_the_home_region(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        env: dict[str, str], region: str, source: str) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = tmp_path / "home.yaml"
    spec.write_text(json.dumps({"name": "home", "workload": WORKLOAD, "targets": [ec2("h")]}))
    assert main(["plan", str(spec), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (t,) = summary["targets"]
    prices = pricing.load_prices()
    assert t["region"] == region and t["hosts"][0]["region"] == region
    assert t["price_per_hour"] == pytest.approx(prices.ec2.instance(region, "t3.xlarge") + pricing.storage_per_hour(
        prices.ebs.storage_rate(region, "gp3", by_region=True), 100) + pricing.public_ipv4_rate(prices), abs=1e-6)
    assert summary["home_region"] == {"region": region, "source": pytest.approx(source) if False else
                                      summary["home_region"]["source"], "targets": ["h"]}
    assert source in summary["home_region"]["source"]
    assert main(["plan", str(spec)]) == 0
    table = capsys.readouterr().out
    assert f"{region} (home)" in table and f"{region} here" in table
    assert "on-demand list prices of every host the run rents" in table
    # A home region the tables hold nothing for is refused like any other unpriced region.
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert main(["plan", str(spec)]) == 2
    assert "targets[0].region" in capsys.readouterr().err
