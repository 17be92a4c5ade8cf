"""The rule that tears a run down by tag, on what `cdk synth` deploys: its pattern (taken from the
template, matched by moto's EventBridge matcher) selects exactly the execution statuses the handler acts
on (benchfleet.aws.run_status.FAILED, the one list of them), for this state machine's executions."""

from __future__ import annotations

from typing import get_args

import pytest
from synth import REGION, Template
from test_step_callback_rule import matches

from benchfleet.aws import run_status


def teardown_rule(template: Template) -> dict:
    (rule,) = [template.resolve(r["Properties"]) for r in template.of_type("AWS::Events::Rule").values()
               if template.resolve(r["Properties"]).get("EventPattern", {}).get("source") == ["aws.states"]]
    return rule


@pytest.mark.parametrize("status", get_args(run_status.RunStatus))
def test_the_rule_selects_the_statuses_the_handler_acts_on(synthesized: Template, status: str):
    pattern = teardown_rule(synthesized)["EventPattern"]
    machine = pattern["detail"]["stateMachineArn"][0]
    event = {"version": "0", "id": "e", "detail-type": "Step Functions Execution Status Change",
             "source": "aws.states", "account": "123456789012", "time": "2026-12-07T00:00:00Z", "region": REGION,
             "resources": [], "detail": {"executionArn": "arn:x", "stateMachineArn": machine, "status": status}}
    assert matches(pattern, event) == (status in run_status.FAILED)
