"""Scheduled runs start from what the template deploys: each EventBridge Scheduler schedule's Input,
taken from the synthesized template, is what Plan receives and what the deployed definition runs
with. Nothing wraps, patches or inlines it; Wait states are recorded, not slept (sm_harness)."""

from __future__ import annotations

import json
import uuid

import pytest
from sm_harness import Context, leftovers
from sm_world import BUCKET

from benchfleet.aws.errors import PlanRejected
from handlers import plan as plan_handler


@pytest.fixture(scope="module")
def schedule_inputs(synthesized) -> dict[str, dict]:
    schedules = synthesized.of_type("AWS::Scheduler::Schedule").values()
    inputs = {s["Properties"]["Name"]: json.loads(s["Properties"]["Target"]["Input"]) for s in schedules}
    assert len(inputs) == 3, inputs.keys()
    return inputs


# The schedule whose spec has no budget_usd and costs more than the deployment's ceiling.
OVER_CEILING = "Benchfleet-monthly-fleet"


def plan_event(payload: dict, execution_name: str) -> dict:
    """The Plan state's Parameters: the execution input and $$.Execution.Name."""
    return {"input": payload, "execution_name": execution_name}


def plan_environment(synthesized) -> dict[str, str]:
    """The Plan function's environment as the template gives it (its caps among it)."""
    (plan,) = [f for f in synthesized.of_type("AWS::Lambda::Function").values()
               if f["Properties"].get("Handler") == "handlers.plan.handler"]
    return {k: str(synthesized.resolve(v)) for k, v in plan["Properties"]["Environment"]["Variables"].items()}


def test_plan_accepts_every_synthesized_schedule_input_within_its_cost(synthesized, schedule_inputs, harness,
                                                                       monkeypatch):
    environment = plan_environment(synthesized)
    for key in ("MAX_VCPUS_PER_REGION", "MAX_HOSTS_PER_REGION"):
        monkeypatch.setenv(key, environment[key])
    for name, payload in schedule_inputs.items():
        if name == OVER_CEILING:
            continue
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


def test_plan_refuses_a_scheduled_run_above_the_deployments_ceiling(synthesized, schedule_inputs, harness,
                                                                    monkeypatch):
    """Scheduled runs go straight to the Plan state, never through the API: Plan applies the same
    cost rules, with the ceiling the template gives the Plan function (MAX_RUN_COST_USD, from the
    CDK context key maxRunCostUsd) and the control plane's charges counted."""
    ceiling = plan_environment(synthesized)["MAX_RUN_COST_USD"]
    assert ceiling == "100", ceiling
    monkeypatch.setenv("MAX_RUN_COST_USD", ceiling)
    payload = schedule_inputs[OVER_CEILING]
    assert "budget_usd" not in payload["spec"]
    with pytest.raises(PlanRejected) as refused:
        plan_handler.handler(plan_event(payload, str(uuid.uuid4())), Context(function_name="plan"))
    message = str(refused.value)
    assert message.startswith("spec: budget_usd: the estimate is $"), message
    assert "control plane $" in message and "ceiling of $100.00" in message and "maxRunCostUsd" in message
    # The same schedule with a budget the user accepts runs.
    budgeted = {**payload, "spec": {**payload["spec"], "budget_usd": 200}}
    plan = plan_handler.handler(plan_event(budgeted, str(uuid.uuid4())), Context(function_name="plan"))
    assert 100 < plan["estimated_cost_usd"] <= 200 and plan["control_plane_usd"] > 0
