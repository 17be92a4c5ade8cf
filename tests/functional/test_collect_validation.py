"""Cloud collect stores only what local mode would (issue 28 item 5): one validation module
(benchfleet.workload.validation) decides for both. Each hostile output below was stored by collect before (or
raised OverflowError instead of CollectFailed); it now fails the step with the reason, stores nothing,
and the local runner refuses the same output with the same reason."""

from __future__ import annotations

import json
import sys
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from moto.core import DEFAULT_ACCOUNT_ID
from sm_world import BUCKET, FIXTURES, REGION
from tests.functional.test_cloud_handlers import RUN, aws, call  # noqa: F401 - aws is a fixture

from benchfleet.aws import errors
from benchfleet.local import runner
from benchfleet.local.mariadb import Connection
from benchfleet.plan import naming
from benchfleet.plan.model import PlanStep
from benchfleet.spec.loading import inline_loaded, parse_spec

TARGET = "ec2-m6g"
INSTANCE = "i-0123456789abcdef0"


def fixture_records(status: bool = False) -> list[dict[str, Any]]:
    """The fixture step (240 samples and sysbench's summary of a 240 s step) as this run's; its server
    status readings only with ``status`` (left out, the cases' indices count samples)."""
    out = []
    for line in (FIXTURES / "t0001.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "status" and not status:
            continue
        record.update(run_id=RUN, target_id=TARGET, repetition=1, step="t0001", workload="w")
        out.append(record)
    return out


def status_reading(**fields: Any):
    """The output with one of the fixture's server status readings changed (they carry the step's
    labels too: a reading of another variant would be stored as this step's)."""
    def apply(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        reading = next(r for r in fixture_records(status=True) if r["type"] == "status")
        return [reading | fields, *records]
    return apply


def short_run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a 0.002 s run leaves for a 3 s step: no interval, a summary of 0.002 s."""
    summary = records[-1] | {"total_time_s": 0.002, "transactions": 2, "events": 2}
    return [summary]


def edit(index: int, **fields: Any):
    def apply(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        records[index] = records[index] | fields
        return records
    return apply


def twice(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return records + records


HOSTILE = {  # name: (mutation, duration of the step, what the refusal says)
    "a 0.002 s run for a 3 s step": (short_run, 3, "sysbench ran 0.002 s for a 3 s step"),
    "NaN tps": (edit(5, tps=float("nan")), 240, "tps is nan, not a finite number"),
    "negative tps": (edit(5, tps=-12.5), 240, "tps is -12.5, below zero"),
    "1e308 tps in the summary": (edit(-1, tps=1e308), 240, "tps is 1e+308, above 1e+08"),
    "negative latency": (edit(7, latency_ms=-3.0), 240, "latency_ms is -3.0, below zero"),
    "steal over 100%": (edit(9, cpu_steal_pct=250.0), 240, "cpu_steal_pct is 250, above 100"),
    "a sample timed 1e300": (edit(3, time=1e300), 240, "time 1e+300 is not a time"),
    "a sample timed a year ahead": (edit(3, time=datetime.now(UTC).timestamp() + 365 * 86400), 240,
                                    "after the output was read"),
    "two runs' output in one": (twice, 240, "follows one at 240 s: the output of two runs"),
    "another step's rows": (edit(2, step="t0002"), 240, "rows of another step"),
    "another variant's rows": (edit(4, variant="relaxed"), 240, "t0001 variant relaxed) in this step's output"),
    "another block's rows": (edit(-1, block=2), 240, "t0001 block 2) in this step's output"),
    "another variant's status reading": (status_reading(variant="relaxed"), 240,
                                         "t0001 variant relaxed) in this step's output"),
    "another step's status reading": (status_reading(step="t0002"), 240, "rows of another step"),
    "a status reading from a source the server is not": (
        status_reading(source="n1"), 240, "step t0001: status rows from 'n1', which is not one of this target's "
                                          "sources (server)"),
}


def jsonl(records: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n"


def collect(repetition: int, records: list[dict[str, Any]], duration_s: int, target: dict[str, Any] | None = None,
            **step: Any) -> dict[str, Any]:
    """The collect handler on ``records`` as Run Command leaves them in S3 (each case its own repetition);
    ``target``: the plan's target (an ec2 host's by default); ``step``: more of the plan step (its
    variant and block)."""
    target = target or {"id": TARGET, "kind": "ec2", "instance_type": "m6g.large"}
    for record in records:
        record["repetition"] = repetition
    host = naming.instance_arn("aws", REGION, DEFAULT_ACCOUNT_ID, INSTANCE)  # where the host's role writes
    key = f"{naming.host_output_prefix(host, RUN, TARGET, repetition, 't0001')}/cmd/{INSTANCE}/awsrunShellScript/" \
          "0.runAgent/stdout"
    boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key=key, Body=jsonl(records).encode())
    event = {"run_id": RUN, "target": target, "kind": target["kind"],
             "repetition": repetition, "step": {"index": 1, "name": "t0001", "kind": "measure", "threads": 1,
                                                "duration_s": duration_s, "report_interval_s": 1, **step},
             "resources": {"instance_id": INSTANCE}, "started_at": "2026-11-22T02:31:54Z"}
    return dict(call("collect", event))


def raw_keys() -> list[str]:
    """The run's raw keys (``naming.raw_key``): what ``results --remote`` and the history load as results."""
    prefix = naming.raw_key(RUN, TARGET, 1, "t0001").split(f"/{TARGET}/")[0] + "/"
    listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_collect_refuses_what_local_mode_refuses_and_stores_nothing(aws) -> None:  # noqa: F811
    proxies, _ = aws
    for repetition, (case, (mutate, duration, reason)) in enumerate(HOSTILE.items(), start=1):
        with pytest.raises(errors.CollectFailed) as refused:
            collect(repetition, mutate(fixture_records()), duration)
        assert reason in str(refused.value), case
    assert proxies["timestream-write"].records_per_call == []  # nothing stored
    assert raw_keys() == []  # nor kept where results --remote and the history would load it
    assert collect(len(HOSTILE) + 1, fixture_records(), 240)["samples"] == 240  # the fixture itself is
    # A variant's step: stored with its rows labelled as the plan's step is, and its result says which.
    mine = [r | {"variant": "relaxed", "block": 1} for r in fixture_records()]
    result = collect(len(HOSTILE) + 2, mine, 240, variant="relaxed", block=1)
    assert (result["samples"], result["variant"], result["block"]) == (240, "relaxed", 1)


CLUSTER = {"id": TARGET, "kind": "cluster", "instance_type": "r6i.large", "nodes": 3, "proxy": {"software": "haproxy"}}


def cluster_records(*sources: str) -> list[dict[str, Any]]:
    """The fixture step with each server status reading as the client of a cluster reads it: one row
    per source (nodes, the proxy's backends)."""
    out = []
    for record in fixture_records(status=True):
        out += [record | {"source": s} for s in sources] if record["type"] == "status" else [record]
    return out


def test_collect_refuses_a_clusters_status_from_an_unknown_source_or_missing_a_node(aws) -> None:  # noqa: F811
    """Rows are stored by source: one from a source the cluster does not have would be drawn as a node's,
    and a node with no row would look healthy by its absence."""
    proxies, _ = aws
    every = ("n1", "n2", "n3", "proxy/n1", "proxy/n2", "proxy/n3")
    cases = {
        "a fourth node": ((*every, "n4"), "status rows from 'n4', which is not one of this target's sources "
                                           "(n1, n2, n3, proxy)"),
        "a stranger's proxy backend": ((*every, "proxy/n9"), "status rows from 'proxy/n9'"),
        "a node with no row": (("n1", "n3", "proxy/n1"), "no status rows from n2 (this target's sources: "
                                                         "n1, n2, n3, proxy)"),
        "a proxy with no row": (("n1", "n2", "n3"), "no status rows from proxy"),
        "one server's rows": (("server",), "status rows from 'server'"),
        # issue 41 item 7: a cluster step without a single status row was stored (nothing says the
        # cluster stayed whole through it)
        "no row at all": ((), "no status rows from n1, n2, n3, proxy (this target's sources: n1, n2, n3, proxy)"),
    }
    for repetition, (case, (sources, reason)) in enumerate(cases.items(), start=1):
        with pytest.raises(errors.CollectFailed) as refused:
            collect(repetition, cluster_records(*sources), 240, CLUSTER)
        assert f"step t0001: {reason}" in str(refused.value) and "not stored" in str(refused.value), case
    assert proxies["timestream-write"].records_per_call == []  # nothing stored
    assert raw_keys() == []
    # Every node and backend, or the proxy's unanswered reading: stored, each under its source.
    readings = len([r for r in fixture_records(status=True) if r["type"] == "status"])
    assert collect(len(cases) + 1, cluster_records(*every), 240, CLUSTER)["status"] > 6 * readings
    assert collect(len(cases) + 2, cluster_records("n1", "n2", "n3", "proxy"), 240, CLUSTER)["status"] > 3 * readings


def run_local_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: list[dict[str, Any]], duration: int,
                   target: dict[str, Any]) -> Any:
    """The local runner's step path (runner._run_step) with an agent that prints ``records``, whatever the job."""
    output = tmp_path / "agent.jsonl"
    output.write_text(jsonl(records))
    agent = tmp_path / "agent.py"
    agent.write_text(f"import sys\nsys.stdin.read()\nsys.stdout.write(open({str(output)!r}).read())\n")
    monkeypatch.setattr(runner, "agent_path", lambda: agent)
    loaded = inline_loaded(parse_spec({"name": "s", "workload": {"name": "w", "test": "oltp_read_only",
                                                                 "threads": [1], "duration_s": duration},
                                       "targets": [target]}), "s")
    step = PlanStep(index=1, name="t0001", kind="measure", threads=1, duration_s=duration)
    observer = types.SimpleNamespace(sample=lambda *a: None)
    server = types.SimpleNamespace(config_hash=None)
    result = runner.RunResult(run_id=RUN, status="running")
    return runner._run_step(loaded, loaded.spec.targets[0], 1, step, RUN, Connection("127.0.0.1", 1, "u", "p"),
                            server, tmp_path, observer, result)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", HOSTILE)
def test_the_local_runner_refuses_the_same_output_for_the_same_reason(case: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mutate, duration, reason = HOSTILE[case]
    with pytest.raises(runner.StepFailed) as refused:
        run_local_step(tmp_path, monkeypatch, mutate(fixture_records()), duration, {"id": TARGET, "kind": "local"})
    assert reason in str(refused.value) and "not stored as a result" in str(refused.value)


def test_the_local_runner_refuses_a_clusters_status_from_a_source_it_does_not_have(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local cluster's sources (its nodes and proxy) go to the same check as collect's: a row from
    a fourth node is refused, every node and the proxy are stored."""
    target = {"id": TARGET, "kind": "local", "cluster": {"nodes": 3, "proxy": "haproxy"}}
    with pytest.raises(runner.StepFailed) as refused:
        run_local_step(tmp_path, monkeypatch, cluster_records("n1", "n2", "n3", "proxy", "n4"), 240, target)
    assert ("status rows from 'n4', which is not one of this target's sources (n1, n2, n3, proxy)"
            in str(refused.value)) and "not stored as a result" in str(refused.value)
    stored = run_local_step(tmp_path, monkeypatch, cluster_records("n1", "n2", "n3", "proxy"), 240, target)
    assert {r.source for r in stored.status} == {"n1", "n2", "n3", "proxy"}


def test_collect_refuses_a_prepare_whose_data_directory_is_not_on_the_planned_storage(aws) -> None:  # noqa: F811
    """Issue 41 item 1, the second line of defence: a prepare whose plan installs storage is stored only
    when the fingerprint shows the data directory on the layout the install built, of as many devices.
    The variants branch of the plan once left storage out: the volumes were billed, the row said gp3 x2
    RAID 0, the server ran on the root volume, and collect stored it."""
    from sm_agent import built_layout

    def prepare(layout: dict[str, Any] | None) -> list[dict[str, Any]]:
        records = []
        for line in (FIXTURES / "prepare.jsonl").read_text().splitlines():
            record = json.loads(line) | {"run_id": RUN, "target_id": TARGET, "step": "t0001", "workload": "w"}
            if record["type"] == "fingerprint":
                record["storage_layout"] = layout if layout is not None else record["storage_layout"]
            records.append(record)
        return records

    storage = {"type": "gp3", "count": 2, "raid": 0, "filesystem": "xfs", "mount_options": "noatime",
               "volumes": [{"volume_id": f"vol-0{c}", "device": f"/dev/sd{d}"} for c, d in (("a", "f"), ("b", "g"))]}
    step = {"kind": "prepare", "install": {"engine": "mariadb", "storage": storage}}
    with pytest.raises(errors.CollectFailed) as refused:  # the root volume's layout, as the fixture host had
        collect(1, prepare(None), 0, **step)
    assert ("the data directory is on /dev/vda, not on the 2 gp3 device(s) the plan gives it"
            in str(refused.value)) and "not stored" in str(refused.value)
    one = {**built_layout(storage), "built": {**built_layout(storage)["built"], "devices": storage["volumes"][:1]}}
    with pytest.raises(errors.CollectFailed, match="the install built 1 gp3"):
        collect(2, prepare(one), 0, **step)
    assert raw_keys() == []
    collect(3, prepare(built_layout(storage)), 0, **step)  # on both volumes: stored
