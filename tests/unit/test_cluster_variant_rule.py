"""One rule for a cluster's variants and its nodes' settings (benchfleet.spec.rules.cluster_settings_problems),
the same everywhere: ``benchfleet validate``, the local runner (``benchfleet run``, its preflight), the
API and Plan. The nodes run the target's settings, configured once: a variant that restates them
changes nothing and runs (locally and on AWS alike; AWS refused it before), one that changes a
setting is refused naming the variant's field and the setting, in one wording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from benchfleet.aws import api_service
from benchfleet.aws.api_service import ApiError
from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import TargetRegions
from benchfleet.cli.main import main
from benchfleet.local.preflight import preflight
from benchfleet.plan.scale import apply_scale
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import load_spec

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "workloads" / "comparisons" / "local-galera.yaml"
CLOUD = REPO / "workloads" / "comparisons" / "pxc-on-aws.yaml"
HOME = TargetRegions.of("us-east-1")
OWN = {"innodb_flush_log_at_trx_commit": 1, "sync_binlog": 1}


def with_variants(source: Path, tmp_path: Path, *variants: dict[str, Any]) -> Path:
    """``source`` (a cluster spec) with server_options OWN on its target and ``variants`` (route
    direct, then proxy)."""
    doc = yaml.safe_load(source.read_text())
    target = doc["targets"][0]
    doc["targets"] = [{**target, "server_options": OWN}]
    own = target.get("mysql_config", "default")  # a variant's mysql_config "OWN" restates the target's
    doc["variants"] = [{"id": id_, "route": id_, **{k: own if v == "OWN" else v for k, v in variant.items()}}
                       for id_, variant in zip(("direct", "proxy"), variants, strict=True)]
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(doc))
    return path


def cloud_body(path: Path) -> dict[str, Any]:
    return apply_scale(load_spec(path), "smoke").inline()


def plan(body: dict[str, Any]) -> dict[str, Any]:
    return runplan.plan_run(runplan.RunRequest(spec=body), execution_name="pxc-1", regions=HOME,
                            max_run_cost_usd=1000)


@pytest.fixture(autouse=True)
def zones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUBNET_ZONES", "us-east-1a,us-east-1b,us-east-1c")
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path / "home"))


CHANGES = [
    ({"server_options": {"sync_binlog": 0}}, "variants[1].server_options.sync_binlog", "sync_binlog (1 -> 0)"),
    ({"server_options": {"innodb-flush-log-at-trx-commit": 2}},
     "variants[1].server_options.innodb_flush_log_at_trx_commit", "innodb_flush_log_at_trx_commit (1 -> 2)"),
    # A cnf changes the local and the cloud cluster's settings differently (their own cnfs differ):
    # what the rule names first for each.
    ({"mysql_config": "relaxed"}, "variants[1].mysql_config",
     ("innodb_doublewrite (the server's default -> 1)", "innodb_buffer_pool_size (80% -> 70%)")),
]


@pytest.mark.parametrize(("change", "field", "what"), CHANGES)
def test_a_variant_changing_a_cluster_setting_is_refused_in_one_wording_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str,
        what: str | tuple[str, str]) -> None:
    messages = []
    for source, named in zip((LOCAL, CLOUD), (what, what) if isinstance(what, str) else what, strict=True):
        path = with_variants(source, tmp_path, {}, change)
        for command in (["validate", str(path)], ["run", str(path)], ["plan", str(path)]):
            assert main(command) == 2, command
            err = capsys.readouterr().err
            assert f"{field}: targets[0] (" in err and named in err and "is a cluster" in err, (command, err)
        with pytest.raises(SpecError) as e:
            load_spec(path)
        messages.append(dict(e.value.problems)[field].split(") is a cluster", 1)[1])
    # The local and the cloud cluster: one rule, one wording (the settings differ: their cnfs do).
    assert [m.split(" this changes ")[0] for m in messages[:1]] == [m.split(" this changes ")[0] for m in messages[1:]]
    assert messages[0].rsplit("; ", 1)[1] == messages[1].rsplit("; ", 1)[1]
    body = yaml.safe_load(path.read_text())  # the cloud spec, its workload inline, as the API takes it
    body["workload"] = load_spec(CLOUD).workload.model_dump(mode="json")
    with pytest.raises(ApiError) as api:
        api_service.validate_submission(body, home_region="us-east-1")
    assert dict(api.value.problems)[field].endswith(messages[1])
    with pytest.raises(PlanRejected) as rejected:
        plan(body)
    assert f"spec: {field}: targets[0] (" in str(rejected.value) and messages[1] in str(rejected.value)


def test_a_variant_restating_the_clusters_own_settings_runs_locally_and_on_aws(tmp_path: Path) -> None:
    """The target's mysql_config and its server_options written out on both variants, in
    another spelling on one: nothing changes, so nothing is refused (AWS refused any such key)."""
    restated = ({"mysql_config": "OWN", "server_options": OWN},
                {"server_options": {"innodb-flush-log-at-trx-commit": "1", "sync_binlog": 1}})
    local = load_spec(with_variants(LOCAL, tmp_path, *restated))
    assert [v.server_options for v in local.variants] == [OWN, {"innodb_flush_log_at_trx_commit": "1",
                                                               "sync_binlog": 1}]
    preflight(local)  # the local runner's own checks (the server parses the nodes' options)
    body = cloud_body(with_variants(CLOUD, tmp_path, *restated))
    assert api_service.validate_submission(body, home_region="us-east-1").variants[1].server_options
    (target,) = plan(body)["targets"]
    node_cnf = target["steps"][0]["setup"]["cnf"]
    assert "innodb_flush_log_at_trx_commit = 1" in node_cnf and "sync_binlog = 1" in node_cnf


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"wsrep_on": "OFF", "binlog_format": "STATEMENT"}, "targets[0].server_options.wsrep_on",
     "a cluster's nodes run wsrep_on = ON, not OFF"),
    ({"binlog-format": "MIXED"}, "targets[0].server_options.binlog_format",
     "a cluster's nodes run binlog_format = ROW, not MIXED"),
    ({"wsrep_node_name": "db1"}, "targets[0].server_options.wsrep_node_name",
     "benchfleet sets wsrep_node_name on every node"),
])
def test_a_setting_the_cluster_manages_is_refused_up_front_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], options: dict[str, Any], field: str, words: str) -> None:
    """Issue 41 item 3: a cluster target with server_options {wsrep_on: 'OFF', binlog_format: STATEMENT}
    validated, passed doctor and the API, and ran with wsrep_on ON and ROW (the node's options win)."""
    for source in (LOCAL, CLOUD):
        doc = yaml.safe_load(source.read_text())
        doc["targets"] = [{**doc["targets"][0], "server_options": options}]
        path = tmp_path / source.name
        path.write_text(yaml.safe_dump(doc))
        for command in (["validate", str(path)], ["doctor", str(path)], ["plan", str(path)], ["run", str(path)]):
            assert main(command) == 2, command
            err = capsys.readouterr().err
            assert f"{field}: {words}" in err, (command, err)
    body = cloud_body(CLOUD)
    body["targets"] = [{**body["targets"][0], "server_options": options}]
    with pytest.raises(PlanRejected) as rejected:
        plan(body)
    assert f"{field}: {words}" in str(rejected.value)


def test_restating_what_the_cluster_sets_is_allowed(tmp_path: Path) -> None:
    doc = yaml.safe_load(LOCAL.read_text())
    doc["targets"] = [{**doc["targets"][0], "server_options": {"binlog_format": "row", "wsrep_on": "ON",
                                                               "wsrep_slave_threads": 4}}]
    path = tmp_path / "restated.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_spec(path).spec.targets[0].server_options["wsrep_slave_threads"] == 4
