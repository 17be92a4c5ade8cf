"""Run shapes beyond the happy path, offline: a scheduled run, repetitions on fresh hosts, the
Distributed Map branch (its threshold lowered through the input, never by editing the definition)
and an ``existing`` target (nothing provisioned, nothing torn down, the agent on the given host)."""

from __future__ import annotations

import json
from collections import Counter

import boto3
from sm_harness import leftovers, spec
from sm_world import BUCKET, REGION

from benchfleet.plan import naming

EC2 = {"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"}
RDS = {"id": "rds-m6g", "kind": "rds", "instance_class": "db.m6g.large", "client": {"instance_type": "c6i.large"}}


def summary_of(run_id: str) -> dict:
    return json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())


def entered(result: dict) -> Counter:
    return Counter(e["stateEnteredEventDetails"]["name"] for e in result["history"]
                   if "stateEnteredEventDetails" in e)


def test_a_scheduled_run_is_named_after_its_schedule_and_its_id_is_the_execution_name(harness):
    # EventBridge Scheduler's input (cdk/lib/schedules.ts); Step Functions names the execution.
    execution = "3f2b8c1e-6d4a-4e8b-9c0d-1a2b3c4d5e6f"
    result = harness.run(spec(targets=[EC2]), name=execution, extra={"schedule": "nightly-graviton"})
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    output = json.loads(result["output"])
    assert output["run_id"] == execution
    summary = summary_of(execution)
    assert summary["name"] == "nightly-graviton" and summary["status"] == "SUCCEEDED"
    (provision,) = harness.calls_of("provision")
    assert provision.event["run_id"] == execution
    assert leftovers(execution) == []
    # The run's metadata beside its summary: the spec and the target row from the prepare fingerprint.
    s3 = boto3.client("s3", region_name=REGION)
    (row,) = json.loads(s3.get_object(Bucket=BUCKET, Key=f"runs/{execution}/targets.json")["Body"].read())
    assert row["kind"] == "ec2" and row["instance_type"] == "m6g.large" and row["cpu_model"]
    assert row["price_per_hour"] and row["price_per_hour"] > 0
    spec_json = json.loads(s3.get_object(Bucket=BUCKET, Key=f"runs/{execution}/spec.json")["Body"].read())
    assert spec_json["targets"][0]["id"] == "ec2-m6g"


def test_an_input_run_id_other_than_the_execution_name_is_refused(harness):
    result = harness.run(spec(targets=[EC2]), name="named-run", extra={"run_id": "another-run"})
    assert result["status"] == "FAILED"
    assert harness.calls_of("provision") == []
    summary = summary_of("named-run")
    assert summary["status"] == "FAILED" and "differs from the execution name" in summary["error"]["cause"]


def test_each_repetition_runs_on_a_fresh_host_and_is_torn_down(harness):
    result = harness.run(spec(targets=[EC2, RDS], repetitions=2), name="two-reps")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    # rds: provision's second call ("Create the databases") creates the database, after its groups settled.
    provisions = [c for c in harness.calls_of("provision") if not c.event.get("resources")]
    databases = [c for c in harness.calls_of("provision") if c.event.get("resources")]
    assert sorted((c.event["target"]["id"], c.event["repetition"]) for c in provisions) == [
        ("ec2-m6g", 1), ("ec2-m6g", 2), ("rds-m6g", 1), ("rds-m6g", 2)]
    assert sorted((c.event["target"]["id"], c.event["repetition"]) for c in databases) == [
        ("rds-m6g", 1), ("rds-m6g", 2)]
    # A fresh host (and database) per repetition, each torn down after its repetition.
    hosts = [c.result["instance_id"] for c in provisions]
    assert len(set(hosts)) == 4
    assert len({c.result["db_instance_id"] for c in databases}) == 2
    teardowns = harness.calls_of("teardown")
    assert sorted((c.event["target"]["target_id"], c.event["repetition"]) for c in teardowns) == [
        ("ec2-m6g", 1), ("ec2-m6g", 2), ("rds-m6g", 1), ("rds-m6g", 2)]
    torn = {d for c in teardowns for d in c.result["deleted"] if d.startswith("instance ")}
    assert torn == {f"instance {h}" for h in hosts}
    # Repetitions start at once (no spacing in the spec): each waited 0 s for its start.
    assert sorted(harness.waits)[:4] == [0, 0, 0, 0]
    # Every repetition prepares again (install on its fresh host) and measures.
    starts = Counter((c.event["target"]["id"], c.event["repetition"], c.event["step"]["name"])
                     for c in harness.calls_of("start_step"))
    assert all(starts[(t, r, s)] == 1 for t in ("ec2-m6g", "rds-m6g") for r in (1, 2) for s in ("prepare", "t0001"))
    summary = summary_of("two-reps")
    assert [len(t["repetitions"]) for t in summary["targets"]] == [2, 2]
    assert leftovers("two-reps") == []


def test_spaced_repetitions_each_wait_for_their_start(harness):
    """repetition_spacing_s: every repetition starts at once and waits its offset from the plan
    (recorded, not slept), so the n-th starts (n - 1) x spacing after the first."""
    result = harness.run(spec(targets=[EC2], repetitions=3, repetition_spacing_s=5400), name="spaced-reps")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    plan = harness.calls_of("plan")[0].result
    assert plan["targets"][0]["start_after_s"] == [0, 5400, 10800]
    starts = [json.loads(e["stateEnteredEventDetails"]["input"])["start_after_s"] for e in result["history"]
              if (e.get("stateEnteredEventDetails") or {}).get("name") == "Wait for its start"]
    assert sorted(starts) == [0, 5400, 10800]
    assert {5400, 10800} <= set(harness.waits)
    assert len({c.result["instance_id"] for c in harness.calls_of("provision")}) == 3
    assert leftovers("spaced-reps") == []


def test_the_distributed_map_runs_every_target_in_child_executions(harness):
    result = harness.run(spec(), name="distributed", timing={"distributed_above": 2}, timeout_s=180)
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    states = entered(result)
    assert states["Run targets in child executions"] == 1 and states["Run targets side by side"] == 0
    # The iterator's states ran in child executions, whose events are in their own histories (as on
    # AWS): the parent's holds none of them.
    assert states["Provision the target"] == 0 and states["Provision the target (child)"] == 0
    plan = next(c for c in harness.calls_of("plan"))
    assert plan.result["distributed"] is True and plan.result["target_count"] == 3
    assert sorted((c.event["target"]["id"], bool(c.event.get("resources"))) for c in harness.calls_of("provision")) == [
        ("aurora-r6g", False), ("aurora-r6g", True), ("ec2-m6g", False), ("rds-m6g", False), ("rds-m6g", True)]
    assert len(harness.calls_of("teardown")) == 3
    summary = summary_of("distributed")
    assert summary["status"] == "SUCCEEDED" and len(summary["targets"]) == 3
    assert leftovers("distributed") == []


def test_an_existing_target_is_neither_provisioned_nor_torn_down(harness):
    ec2 = boto3.client("ec2", region_name=REGION)
    instance = ec2.run_instances(ImageId=harness.gaps.ami, InstanceType="c6i.large", MinCount=1,
                                 MaxCount=1)["Instances"][0]["InstanceId"]
    existing = {"id": "mine", "kind": "existing", "host": "db.internal.example", "instance_id": instance}
    result = harness.run(spec(targets=[existing], repetitions=2), name="existing-host")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    assert harness.proxies["ec2"].calls["run_instances"] == 0
    assert harness.proxies["ec2"].calls["terminate_instances"] == 0
    assert harness.proxies["rds"].calls["create_db_instance"] == 0
    provisions = harness.calls_of("provision")
    assert [p.result["managed"] for p in provisions] == [False, False]
    assert {p.result["instance_id"] for p in provisions} == {instance}
    teardowns = harness.calls_of("teardown")
    assert [t.result for t in teardowns] == [{"deleted": [], "left": [], "managed": False}] * 2
    starts = harness.calls_of("start_step")
    assert [c.result["instance_id"] for c in starts] == [instance] * 4
    # Its two repetitions share its one host: one after the other, never at once (issue 28 item 8).
    order = [c.event.get("repetition") for c in harness.calls if c.module in ("provision", "start_step", "teardown")]
    assert order == [1, 1, 1, 1, 2, 2, 2, 2], order
    state = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state == "running"
