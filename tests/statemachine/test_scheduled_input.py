"""Scheduled runs start from what the template deploys: each EventBridge Scheduler schedule's Input,
taken from the synthesized template, is what Plan receives and what the deployed definition runs
with. Nothing wraps, patches or inlines it; Wait states are recorded, not slept (sm_harness)."""

from __future__ import annotations

import json
import uuid

import pytest
from sm_harness import BUCKET, Context, leftovers

from handlers import plan as plan_handler


@pytest.fixture(scope="module")
def schedule_inputs(synthesized) -> dict[str, dict]:
    schedules = synthesized.of_type("AWS::Scheduler::Schedule").values()
    inputs = {s["Properties"]["Name"]: json.loads(s["Properties"]["Target"]["Input"]) for s in schedules}
    assert len(inputs) == 2, inputs.keys()
    return inputs


def plan_event(payload: dict, execution_name: str) -> dict:
    """The Plan state's Parameters: the execution input and $$.Execution.Name."""
    return {"input": payload, "execution_name": execution_name}


def test_plan_accepts_every_synthesized_schedule_input(schedule_inputs, harness):
    for name, payload in schedule_inputs.items():
        # EventBridge Scheduler names the executions it starts with a UUID.
        execution = str(uuid.uuid4())
        plan = plan_handler.handler(plan_event(payload, execution), Context(function_name="plan"))
        assert plan["run_id"] == execution and plan["schedule"] == payload["schedule"], name
        assert plan["name"] == payload["schedule"] and plan["target_count"] == len(payload["spec"]["targets"])


def test_the_synthesized_schedule_input_runs_the_deployed_definition(synthesized, schedule_inputs, harness):
    machine = harness.deploy(synthesized)
    payload = schedule_inputs["Benchfleet-weekly-fixture"]
    execution = str(uuid.uuid4())
    result = harness.execute(payload, name=execution, state_machine_arn=machine, timeout_s=240)
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    output = json.loads(result["output"])
    assert output["run_id"] == execution and output["status"] == "SUCCEEDED"
    summary = json.loads(harness.s3.get_object(Bucket=BUCKET, Key=output["summary_key"])["Body"].read())
    assert summary["status"] == "SUCCEEDED" and summary["name"] == "weekly-fixture"
    assert [t["target_id"] for t in summary["targets"]] == ["m7g-large"]
    steps = [c.event["step"]["name"] for c in harness.calls_of("start_step")]
    assert steps[0] == "prepare" and len(steps) == len(set(steps)) > 2
    # The plan's real waits were taken (recorded): readiness polls and cool-downs, none of them 0.
    assert harness.waits and min(harness.waits) >= 0 and max(harness.waits) > 0
    assert leftovers(execution) == []
