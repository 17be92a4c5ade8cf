"""A cloud cluster's plan (issue 25): the API and Plan accept ``kind: cluster`` (one list of the kinds
the state machine provisions), refuse one whose nodes the deployment's zones cannot spread (naming the
region and its zones), put the set-up (bootstrap, joins one at a time, the proxy) before the benchmark's
steps of every repetition, and refuse a cluster variant that would reconfigure the nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchfleet import api_service
from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import TargetRegions
from benchfleet.scale import apply_scale
from benchfleet.spec import load_spec

SEED = Path(__file__).resolve().parents[2] / "workloads" / "comparisons" / "pxc-on-aws.yaml"
HOME = TargetRegions.of("us-east-1")


def pxc(**changes: object) -> dict:
    body = apply_scale(load_spec(SEED), "smoke").inline()
    body["targets"] = [{**body["targets"][0], **changes}]
    return body


def plan(body: dict) -> dict:
    return runplan.plan_run(runplan.RunRequest(spec=body), execution_name="pxc-1", regions=HOME,
                            max_run_cost_usd=1000)


def test_the_api_and_plan_take_one_list_of_cloud_kinds_with_clusters() -> None:
    assert "cluster" in runplan.CLOUD_KINDS and not hasattr(api_service, "CLOUD_KINDS")
    loaded = api_service.validate_submission(pxc(), home_region="us-east-1")
    assert loaded.spec.targets[0].kind == "cluster"


def test_a_cluster_sets_up_its_nodes_one_at_a_time_then_its_proxy_before_every_repetition(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1f")
    (target,) = plan(pxc(nodes=5, proxy="haproxy"))["targets"]
    setup = target["steps"][:6]
    assert [(s["name"], s["host"], s["kind"]) for s in setup] == [
        *[(f"setup-n{i}", f"n{i}", "setup") for i in range(1, 6)], ("setup-proxy", "client", "setup")]
    assert [s["setup"]["role"] for s in setup] == ["node"] * 5 + ["proxy"]
    assert setup[0]["setup"]["flavor"] == "pxc-8.0" and "[mysqld]" in setup[0]["setup"]["cnf"]
    assert all(seq[:6] == list(range(6)) for seq in target["sequence"])
    assert sorted(i for seq in target["sequence"] for i in seq[6:]) == list(range(6, len(target["steps"])))
    routes = {s.get("variant"): s["route"] for s in target["steps"][6:] if s.get("variant")}
    assert routes == {"direct": "direct", "proxy": "proxy"}


def test_fewer_zones_than_nodes_is_refused_naming_the_region_and_its_zones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    with pytest.raises(PlanRejected) as e:
        plan(pxc(nodes=5))
    message = str(e.value)
    assert "targets[0].nodes" in message and "us-east-1" in message
    assert "us-east-1a, us-east-1b, us-east-1c" in message and "maxAzs" in message


def test_a_cluster_variant_that_would_reconfigure_the_nodes_is_refused_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    body = pxc()
    body["variants"] = [{"id": "direct", "route": "direct"},
                        {"id": "relaxed", "route": "proxy", "server_options": {"sync_binlog": 0}}]
    with pytest.raises(PlanRejected, match=r"variants\[1\]\.server_options: a cluster's nodes are configured once"):
        plan(body)
    with pytest.raises(PlanRejected, match=r"variants\[1\]\.server_options"):  # the API's estimate refuses it too
        runplan.estimate(runplan.RunRequest(spec=body), regions=HOME)


def test_a_proxy_on_a_host_of_its_own_is_refused_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the proxy job says which address to listen on, such a proxy could not be reached."""
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    with pytest.raises(PlanRejected, match=r"targets\[0\]\.proxy\.instance_type: a proxy on a host of its own"):
        plan(pxc(proxy={"software": "haproxy", "instance_type": "c6i.large"}))
