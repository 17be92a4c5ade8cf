"""The whole run, offline: 3 targets (EC2, RDS, Aurora) through statemachines/benchmark-run.asl.json."""

from __future__ import annotations

import json

import boto3
from sm_harness import leftovers, spec
from sm_world import BUCKET, REGION

from benchfleet.plan import naming


def test_happy_path_runs_every_step_and_tears_everything_down(harness):
    result = harness.run(spec(captured_step=True), name="happy")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    output = json.loads(result["output"])
    run_id = output["run_id"]
    assert output["status"] == "SUCCEEDED" and output["failed_targets"] == []

    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())
    assert summary["status"] == "SUCCEEDED"
    assert {t["target_id"] for t in summary["targets"]} == {"ec2-m6g", "rds-m6g", "aurora-r6g"}
    for target in summary["targets"]:
        steps = target["repetitions"][0]["steps"]
        assert [s["step"] for s in steps] == ["prepare", "t0001"]
        assert steps[1]["samples"] == 240 and steps[1]["summaries"] == 1
    assert len(harness.calls_of("teardown")) == 3
    assert leftovers(run_id) == []
    # m6g target and c7g client are Graviton (arm64), the c6i client is x86 (amd64).
    arch = sorted(name.split("/")[-4] for name in harness.gaps.ami_requests)
    assert arch == ["amd64", "arm64", "arm64"]
