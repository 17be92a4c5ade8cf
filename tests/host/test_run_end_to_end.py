"""One offline execution of statemachines/benchmark-run.asl.json (moto's executor, the handlers
in-process: tests/statemachine/sm_harness.py) where SendCommand really runs the synthesized agent
document on booted hosts: 2 ec2 targets x 2 repetitions, each repetition on a fresh host. Real
sysbench output flows through Collect, the results store and Summarize; `results` and `report`
read the run back the way `--remote` does (raw output from S3 into a local store).

Each host has the data volumes provision launched its instance with (moto's volume ids), as loop
devices under their by-id names (hostfleet.Disks): m6i stripes 8 in RAID 10 (xfs, through the mdadm
stand-in: this kernel has no md driver), m6g has one on ext4 (issue 26)."""

from __future__ import annotations

import json
import sys
import time
import types
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest
from hostagent import HostAgent
from hostfleet import Fleet, assert_per_second, record
from moto import mock_aws
from runcommand import RunCommand

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))

from sm_harness import Harness, leftovers, setup_account
from sm_world import BUCKET, ENV, REGION

from benchfleet.aws import clients
from benchfleet.plan import naming

pytestmark = pytest.mark.long(2)  # four booted hosts and the canary
DURATION_S = 5
SPEC = {
    "name": "host-e2e",
    "repetitions": 2,
    "workload": {"name": "host-rw", "test": "oltp_read_write", "tables": 1, "table_size": 2000,
                 "prepare_threads": 1, "warmup_s": 0, "threads": [1], "duration_s": DURATION_S},
    "targets": [
        {"id": "m6g", "kind": "ec2", "instance_type": "m6g.large", "engine": "mariadb", "mysql_config": "default",
         "storage": {"type": "gp3", "size_gb": 50, "filesystem": "ext4", "mount_options": "noatime,nodiratime"}},
        {"id": "m6i", "kind": "ec2", "instance_type": "m6i.large", "engine": "mariadb", "mysql_config": "relaxed",
         "storage": {"type": "gp3", "size_gb": 20, "volumes": 8, "raid": 10}},
    ],
}


@pytest.fixture(scope="module")
def e2e(fleet: Fleet, run_command: RunCommand) -> Any:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    with pytest.MonkeyPatch.context() as mp:
        for k, v in ENV.items():
            mp.setenv(k, v)
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            clients.reset()
            setup_account(mp)
            h = Harness()
            runner = RunCommand(run_command.document, run_command.bundle_zip, boto3.client("s3", region_name=REGION))
            h.agent = HostAgent(fleet, runner)  # type: ignore[assignment]
            fake_time = types.SimpleNamespace(sleep=lambda s: h.sleeps.append(s))
            with mock.patch.object(lambda_eval_utils, "_invoke_lambda_function", h.invoke), \
                    mock.patch.object(retrier_decl, "time", fake_time):
                started = time.monotonic()
                result = h.run(SPEC, name="host-e2e", timeout_s=1200)
                record("e2e_execution_s", time.monotonic() - started)
                yield h, result
                for machine in h.agent.hosts.values():
                    fleet.release(machine)
            clients.reset()


def test_the_execution_succeeds_on_four_fresh_hosts(e2e: Any) -> None:
    h, result = e2e
    assert result["status"] == "SUCCEEDED", h.explain(result)
    agent: HostAgent = h.agent
    assert len(agent.hosts) == 4  # 2 targets x 2 repetitions, each on its own host
    assert [(t, s, st) for t, s, st, _ in agent.commands].count(("m6g", "t0001", "Success")) == 2
    assert all(status == "Success" for _, _, status, _ in agent.commands), agent.commands
    for _target, step, _, seconds in agent.commands:
        record(f"e2e_{step}_s", seconds)


def test_collect_stored_real_per_second_samples_and_summarize_the_run(e2e: Any) -> None:
    h, result = e2e
    run_id = json.loads(result["output"])["run_id"]
    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())
    assert summary["status"] == "SUCCEEDED"
    assert {t["target_id"] for t in summary["targets"]} == {"m6g", "m6i"}
    for target in summary["targets"]:
        assert [r["repetition"] for r in target["repetitions"]] == [1, 2]
        for rep in target["repetitions"]:
            steps = {s["step"]: s for s in rep["steps"]}
            assert 0 < steps["t0001"]["samples"] <= DURATION_S  # every report sysbench printed: assert_per_second
            assert steps["t0001"]["summaries"] == 1
            assert steps["t0001"]["tps"] > 0
    collected = [c.result for c in h.calls_of("collect")]
    assert len(collected) == 8 and all(c["fingerprints"] == 1 for c in collected if c["step"] == "prepare")


def test_results_and_report_read_the_run_back_from_s3(e2e: Any, bf_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from benchfleet.cli import remote
    from benchfleet.cli.main import main
    from benchfleet.local.store import DuckDBStore

    _h, result = e2e
    run_id = json.loads(result["output"])["run_id"]
    monkeypatch.setenv("BENCHFLEET_BUCKET", BUCKET)
    described = {"run_id": run_id, "name": SPEC["name"], "status": result["status"]}
    monkeypatch.setattr(remote, "get_run", lambda run, api_url=None: described)
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    assert main(["results", run_id, *api, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["target_id"]: r for r in doc["comparison"]}
    assert set(rows) == {"m6g", "m6i"} and all(r["tps_mean"] > 0 for r in rows.values())
    store = DuckDBStore(bf_home / "benchfleet.duckdb")
    # A measure step's first report is its ramp: every second still has its sample.
    samples = store.samples(run_id, "ramp") + store.samples(run_id, "measure")
    for target in ("m6g", "m6i"):
        for rep in (1, 2):
            seconds = sorted(s["second"] for s in samples if s["target_id"] == target and s["repetition"] == rep)
            assert_per_second(seconds, DURATION_S)
    assert all(s["tps"] > 0 for s in samples)
    # The data directory's disk beside every second (real /proc/diskstats of the loop devices); a
    # read-write mix writes to it.
    for target in ("m6g", "m6i"):
        mine = [s for s in samples if s["target_id"] == target]
        assert all(s["disk_writes_per_s"] is not None and s["disk_read_mib_per_s"] is not None for s in mine)
        assert sum(s["disk_writes_per_s"] for s in mine) > 0 and sum(s["disk_write_mib_per_s"] for s in mine) > 0
    fingerprints = {(t["target_id"], t["repetition"]): t for t in store.targets(run_id)}
    assert len(fingerprints) == 4 and all(str(t["engine_version"]).startswith("10.11") for t in fingerprints.values())
    out = bf_home / "report.html"
    assert main(["report", run_id, *api, "-o", str(out)]) == 0
    html = out.read_text()
    assert "m6g" in html and "m6i" in html and len(html) > 10_000
    assert "Data storage as measured" in html and "RAID 10 of 8, chunk 512 KiB" in html


def test_the_data_directory_was_on_the_volumes_the_instance_was_launched_with(e2e: Any, fleet: Fleet) -> None:
    """Issue 26 through the whole pipeline: the volume ids moto gave at launch reached the agent
    (start_step), which found each under /dev/disk/by-id, built the array (m6i: RAID 10 of 8 through
    the stand-in, chunk 512 KiB, in launch order whatever the loop numbers), made the file system
    aligned to it for real, mounted it with the options and nofail, and ran MariaDB on it; the
    layout reached the targets rows."""
    h, result = e2e
    agent: HostAgent = h.agent
    s3 = boto3.client("s3", region_name=REGION)
    run_id = json.loads(result["output"])["run_id"]
    for instance_id, machine in agent.hosts.items():
        disks = fleet.disks[machine.name]
        volumes = list(disks.volumes)
        target, rep = agent.where[instance_id]
        row = json.loads(s3.get_object(Bucket=BUCKET, Key=naming.raw_key(run_id, target, rep, "target").replace(
            ".jsonl", ".json"))["Body"].read())
        layout = json.loads(row["storage_layout"])
        built = layout["built"]
        assert [d["volume_id"] for d in built["devices"]] == volumes  # as moto launched them (data_volumes)
        assert [d["device"] for d in built["devices"]] == [disks.volumes[v] for v in volumes]
        mounts = machine.run("cat /proc/mounts").stdout
        if target == "m6i":
            (create,) = [c for c in disks.mdadm_calls(machine) if c[0] == "--create"]
            assert create[:2] == ["--create", "/dev/md0"] and "--level=10" in create and "--chunk=512" in create
            assert create[-8:] == [disks.volumes[v] for v in volumes]  # the stripe in launch order
            assert (built["level"], built["filesystem"], layout["source"]) == (10, "xfs", disks.spare)
            assert built["alignment"] == {"sunit_bytes": 512 * 1024, "swidth_bytes": 4 * 512 * 1024}  # as made
            assert f"{disks.spare} /srv/benchfleet xfs rw,noatime" in mounts
        else:
            assert (built["level"], built["filesystem"]) == (None, "ext4")
            assert f"{disks.volumes[volumes[0]]} /srv/benchfleet ext4 rw,noatime,nodiratime" in mounts
        assert "nofail" in machine.path("/etc/fstab").read_text()


def test_everything_is_torn_down(e2e: Any) -> None:
    h, result = e2e
    run_id = json.loads(result["output"])["run_id"]
    assert leftovers(run_id) == []
    ec2 = boto3.client("ec2", region_name=REGION)
    states = {i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances(InstanceIds=list(h.agent.hosts))[
        "Reservations"] for i in r["Instances"]}
    assert set(states.values()) == {"terminated"} and len(states) == 4
    assert len(h.calls_of("teardown")) == 4


@pytest.fixture(scope="module")
def canary(e2e: Any) -> Any:
    """The canary (workloads/comparisons/canary.yaml) at smoke scale, on a fresh booted host of its own,
    in the same offline world once the two-target run is done."""
    from benchfleet.plan.scale import apply_scale
    from benchfleet.spec.loading import load_spec

    h, _ = e2e
    loaded = apply_scale(load_spec(Path(__file__).resolve().parents[2] / "workloads/comparisons/canary.yaml"), "smoke")
    spec = {**loaded.spec.model_dump(mode="json", exclude_none=True),
            "workload": loaded.workload.model_dump(mode="json")}
    before = len(h.agent.hosts)
    result = h.run(spec, name="canary-host", timeout_s=600)
    return h, result, loaded, before


def test_the_canary_runs_on_a_booted_host_and_leaves_nothing(canary: Any, bf_home: Path) -> None:
    from benchfleet.aws.fleet.leftovers import left_behind
    from benchfleet.cli.reading import run_results
    from benchfleet.local.rawsync import sync_run
    from benchfleet.local.store import open_store

    h, result, loaded, before = canary
    assert result["status"] == "SUCCEEDED", h.explain(result)
    assert len(h.agent.hosts) == before + 1  # its own host
    canary_steps = [c for c in h.agent.commands if c[0] == "graviton"]
    assert [(step, status) for _, step, status, _ in canary_steps] == [("prepare", "Success"), ("t0001", "Success")]
    run = {"run_id": "canary-host", "name": "canary", "spec": loaded.spec.model_dump(mode="json"),
           "estimated_cost_usd": None}
    with open_store(bf_home) as store:
        sync_run(boto3.client("s3", region_name=REGION), BUCKET, run, store, bf_home)
        (step,) = run_results(store, "canary-host")["steps"]
    assert step["target_id"] == "graviton" and step["tps"] > 0
    assert loaded.workload.duration_s - 1 <= step["samples"] <= loaded.workload.duration_s
    assert left_behind("canary-host", [REGION], lambda s, r: boto3.client(s, region_name=r)) == []
    assert leftovers("canary-host") == []
