"""Step Functions' 256 KiB limit on every state's input and output (issue 11 defect 7).

The harness is as strict as AWS (sfn_limits): a state over the limit fails the execution with
States.DataLimitExceeded, which no States.ALL Catch handles. The run's state carries references,
not results: the largest comparisons Plan accepts stay well under the limit, measured on every
state's input and output and every Lambda payload and result."""

from __future__ import annotations

import json

import pytest
from sfn_limits import MAX_PAYLOAD_BYTES
from sm_harness import leftovers, spec
from sm_moto import client_error
from sm_world import BUCKET

from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.plan import naming

PEAK_KIB = 200


def test_an_oversized_state_fails_the_execution_and_no_catch_handles_it(harness):
    # A Map whose iteration doubles a 150 KiB input: its Pass outputs 300 KiB. On AWS the execution
    # fails; the Map's States.ALL Catch does not run (moto alone would take it).
    definition = {"StartAt": "Each", "States": {
        "Each": {"Type": "Map", "ItemsPath": "$.items", "ItemSelector": {"blob.$": "$.blob"},
                 "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Double", "States": {
                     "Double": {"Type": "Pass", "Parameters": {"a.$": "$.blob", "b.$": "$.blob"}, "End": True}}},
                 "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}], "End": True},
        "Caught": {"Type": "Succeed"}}}
    arn = harness.create(json.dumps(definition), "too-large")
    result = harness.execute({"items": [1], "blob": "x" * (150 * 1024)}, name="too-large", state_machine_arn=arn)
    assert result["status"] == "FAILED"
    assert result["error"] == "States.DataLimitExceeded"
    entered = [e["stateEnteredEventDetails"]["name"] for e in result["history"] if "stateEnteredEventDetails" in e]
    assert "Caught" not in entered
    size, state, where = harness.payloads.exceeded[0]
    assert state == "Double" and where == "output" and size > MAX_PAYLOAD_BYTES


def largest_spec(targets: int, repetitions: int, threads: int) -> dict:
    """A comparison at Plan's bounds: every text field at its longest. Steps of 5 s: what a state
    carries of a step is its references and counts, the same for any length (the peak payload is the
    same as with 60 s steps), while each measured second costs collect a sample to parse and write:
    5 s instead of 60 took a third off the 380-step execution."""
    workload = {"name": "w" * 63, "description": "d" * 2000, "test": "oltp_read_write", "tables": 2,
                "table_size": 2000, "prepare_threads": 1, "warmup_s": 0, "duration_s": 5,
                "threads": list(range(1, threads + 1))}
    many = [{"id": f"t{i:03d}-" + "x" * 27, "kind": "ec2", "instance_type": "m6g.large"} for i in range(targets)]
    return spec(name="largest", description="d" * 2000, workload=workload, targets=many, repetitions=repetitions)


def test_two_hundred_targets_carry_references_not_results(harness, monkeypatch):
    """Spec.targets' maximum: the Distributed Map reads them from S3 and writes its results there;
    every target fails at provision (cheaply), each repetition's outcome is recorded in S3 and
    Summarize reads them all back."""
    # A deployment whose per-region caps were raised for 200 hosts (context maxVcpusPerRegion...).
    monkeypatch.setenv("MAX_VCPUS_PER_REGION", "400")
    monkeypatch.setenv("MAX_HOSTS_PER_REGION", "200")
    big = largest_spec(targets=200, repetitions=1, threads=1)
    harness.proxies["ec2"].faults["run_instances"] = lambda kw: client_error("UnauthorizedOperation", "RunInstances")
    result = harness.run(big, name="two-hundred", timeout_s=600)
    assert result["status"] == "FAILED" and result["error"] == "RunFailed", harness.explain(result)
    assert harness.payloads.exceeded == []
    assert harness.payloads.peak_kib < PEAK_KIB, harness.payloads.peak
    (plan,) = harness.calls_of("plan")
    assert plan.error is None, plan.result
    assert plan.result["distributed"] and "targets" not in plan.result
    items = json.loads(harness.s3.get_object(Bucket=BUCKET, Key=plan.result["targets_key"])["Body"].read())
    assert len(items) == 200
    summary = json.loads(harness.s3.get_object(Bucket=BUCKET, Key=naming.summary_key("two-hundred"))["Body"].read())
    assert len(summary["targets"]) == 200
    assert {t["repetitions"][0]["error"]["error"] for t in summary["targets"]} == {"ClientError"}
    assert leftovers("two-hundred") == []
    print(f"\n200 targets: peak payload {harness.payloads.peak_kib:.1f} KiB "
          f"({harness.payloads.peak[1]} {harness.payloads.peak[2]})")


def test_the_most_repetitions_and_steps_of_one_target_stay_far_under_the_limit(harness, monkeypatch):
    """One target with the most repetitions Plan accepts (one history holds them all), then the
    longest sweep it accepts with them: the step results stay within their repetition, whose outcome
    goes to S3."""
    repetitions = largest_accepted(lambda n: largest_spec(targets=1, repetitions=n, threads=1), 20)
    threads = largest_accepted(lambda n: largest_spec(targets=1, repetitions=repetitions, threads=n), 64)
    monkeypatch.setenv("MAX_VCPUS_PER_REGION", str(2 * repetitions))
    result = harness.run(largest_spec(targets=1, repetitions=repetitions, threads=threads), name="most-steps",
                         timeout_s=600)
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    assert harness.payloads.exceeded == []
    assert harness.payloads.peak_kib < PEAK_KIB, harness.payloads.peak
    summary = json.loads(harness.s3.get_object(Bucket=BUCKET, Key=naming.summary_key("most-steps"))["Body"].read())
    (target,) = summary["targets"]
    assert len(target["repetitions"]) == repetitions
    assert all(len(r["steps"]) == threads + 1 for r in target["repetitions"])
    print(f"\none target: {repetitions} repetitions x {threads + 1} steps, peak payload "
          f"{harness.payloads.peak_kib:.1f} KiB ({harness.payloads.peak[1]} {harness.payloads.peak[2]})")


def largest_accepted(spec_of, most: int) -> int:
    """The largest n <= ``most`` whose spec Plan accepts (it refuses what one history cannot hold)."""
    accepted = 0
    for n in range(1, most + 1):
        try:
            runplan.plan_run(runplan.RunRequest(spec=spec_of(n)), zone_count=3, max_vcpus=10_000, max_hosts=10_000)
        except PlanRejected as e:
            assert "history" in str(e), e
            break
        accepted = n
    if accepted == 0:
        pytest.fail("Plan accepts none")
    return accepted
