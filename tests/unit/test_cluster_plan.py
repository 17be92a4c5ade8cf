"""A cloud cluster's plan (issue 25): the API and Plan accept ``kind: cluster`` (one list of the kinds
the state machine provisions), refuse one whose nodes the deployment's zones cannot spread (naming the
region and its zones), put the set-up (bootstrap, joins one at a time, the proxy) before the benchmark's
steps of every repetition, and refuse a cluster variant that would reconfigure the nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchfleet.aws import api_service
from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import TargetRegions
from benchfleet.cli.main import main
from benchfleet.plan.scale import apply_scale
from benchfleet.spec.loading import load_spec

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
    with pytest.raises(PlanRejected, match=r"variants\[1\]\.server_options\.sync_binlog: targets\[0\] \(gp3\) is a "
                                           r"cluster: its nodes run the target's settings for every variant"):
        plan(body)
    # The API's estimate refuses it too.
    with pytest.raises(PlanRejected, match=r"variants\[1\]\.server_options\.sync_binlog"):
        runplan.estimate(runplan.RunRequest(spec=body), regions=HOME)


def test_a_proxy_on_a_host_of_its_own_is_accepted_and_set_up_on_that_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """proxy.instance_type (refused before: "a proxy on a host of its own does not run on AWS yet"): the
    API's checks, its estimate and Plan accept it; the proxy's set-up step names the proxy host."""
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    body = pxc(proxy={"software": "haproxy", "instance_type": "c6i.large"})
    assert api_service.validate_submission(body, home_region="us-east-1").spec.targets[0].proxy.instance_type
    assert runplan.estimate(runplan.RunRequest(spec=body), regions=HOME)
    (target,) = plan(body)["targets"]
    (proxy,) = [s for s in target["steps"] if s["name"] == "setup-proxy"]
    assert (proxy["host"], proxy["setup"]) == ("proxy", {"role": "proxy", "software": "haproxy"})


def test_plan_prints_and_prices_a_proxy_host_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = pxc(proxy={"software": "haproxy", "instance_type": "c6i.large"})
    path = tmp_path / "pxc.json"
    path.write_text(json.dumps(body))
    assert main(["plan", str(path), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (target,) = summary["targets"]
    assert [h["instance_type"] for h in target["hosts"]][-2:] == ["c6i.xlarge", "c6i.large"]
    assert summary["regions"][0]["ec2_hosts"] == 5
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "client c6i.xlarge, haproxy c6i.large" in out
    priced = [line.split()[:2] for line in out.splitlines() if line.strip().startswith("proxy ")]
    assert priced == [["proxy", "c6i.large"]]


def test_the_planned_wall_time_has_the_clusters_serial_set_up(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Bootstrap, then each join, then the proxy, one after another, in every repetition: the plan's
    wall time and each repetition's (which its deadline and its hosts' hours follow) include them (they
    were left out: a 3-node cluster planned as if its nodes were ready the moment they booted)."""
    from benchfleet.plan import estimates

    body = pxc(proxy={"software": "haproxy", "instance_type": "c6i.large"})
    path = tmp_path / "pxc.json"
    path.write_text(json.dumps(body))
    assert main(["plan", str(path), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    serial = 3 * estimates.CLUSTER_NODE_SETUP_S + estimates.CLUSTER_PROXY_SETUP_S
    assert summary["wall_parts"]["set-up"] == serial
    assert summary["wall_s"] == sum(summary["wall_parts"].values())
    (target,) = summary["targets"]
    assert target["repetition_s"] >= summary["wall_parts"]["provisioning"] + serial
    without = pxc(proxy="none")  # the nodes' set-up only
    del without["variants"]
    path.write_text(json.dumps(without))
    assert main(["plan", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["wall_parts"]["set-up"] == 3 * estimates.CLUSTER_NODE_SETUP_S
    assert main(["plan", str(path)]) == 0
    assert f"set-up {3 * estimates.CLUSTER_NODE_SETUP_S // 60}m00s" in capsys.readouterr().out
