"""Step completion by callback, on what `cdk synth` deploys: the EventBridge rule's pattern (taken
from the template) matches the event SSM sends when a step's Run Command ends -- the same event the
offline executions deliver to the real handler (sm_agent.ssm_invocation_event) -- and nothing
else; it invokes step_callback, which may complete tasks of this state machine only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from moto.events.models import EventPattern
from synth import ACCOUNT, REGION, Template
from test_grants import allows, state_machine_name, statements_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_agent import ssm_invocation_event
from tests.conftest import TARGET_REGIONS


def callback_rule(template: Template) -> dict:
    (rule,) = [r for k, r in template.of_type("AWS::Events::Rule").items() if k.startswith("OrchestrationStepCallback")]
    return template.resolve(rule["Properties"])


def document_name(template: Template) -> str:
    (document,) = template.of_type("AWS::SSM::Document")
    return str(template.resolve({"Ref": document}))


def matches(pattern: dict, event: dict) -> bool:
    """The pattern matcher moto's EventBridge routes events with (moto has no TestEventPattern),
    not one written here."""
    return bool(EventPattern.load(json.dumps(pattern)).matches_event(event))


# Every way an invocation ends: its Status values, and the detailed ones (StatusDetails) a command that
# never ran ends with (SSM API Reference, GetCommandInvocation / "Understanding command statuses").
ENDED = ["Success", "Failed", "TimedOut", "Cancelled", "DeliveryTimedOut", "ExecutionTimedOut", "Undeliverable",
         "Terminated", "InvalidPlatform", "AccessDenied"]


@pytest.mark.parametrize("status", ENDED)
def test_the_rule_matches_every_end_of_a_step_of_the_agent_document(synthesized: Template, status: str):
    rule = callback_rule(synthesized)
    event = ssm_invocation_event("0b9b5a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b", "i-0123456789abcdef0", status,
                                 document_name(synthesized), REGION)
    assert matches(rule["EventPattern"], event)


def test_the_rule_ignores_running_steps(synthesized: Template):
    pattern = callback_rule(synthesized)["EventPattern"]
    for status in ("InProgress", "Pending", "Delayed", "Cancelling"):
        event = ssm_invocation_event("c-1", "i-1", status, document_name(synthesized), REGION)
        assert not matches(pattern, event), status


def test_the_rule_ignores_every_other_run_command_of_the_account(synthesized: Template):
    """Issue 30, finding 6: without the document's name in the pattern, every Run Command of the account
    (patching, inventory, a person's own) invoked step_callback, whose GetObject of a token that is not
    there answers AccessDenied (no s3:ListBucket): an error and retries for each. The document has a
    fixed name, the same in every region, and the rule matches it only."""
    (document,) = synthesized.of_type("AWS::SSM::Document").values()
    assert document["Properties"]["Name"] == "Benchfleet-Agent"
    assert document["Properties"]["UpdateMethod"] == "NewVersion"
    pattern = callback_rule(synthesized)["EventPattern"]
    for other in ("AWS-RunPatchBaseline", "AWS-RunShellScript", "Benchfleet-Agent-copy"):
        event = ssm_invocation_event("c-2", "i-2", "Success", other, REGION)
        assert not matches(pattern, event), other


def test_every_target_region_forwards_the_same_events_home(synthesized_regions: dict[str, Template]):
    """SSM sends the event in the target's region; each regional stack's rule sends it, unchanged,
    to the home region's default bus, where the home rule takes it."""
    stacks = synthesized_regions
    (home,) = [s for s in stacks.values() if any(k.startswith("OrchestrationStepCallback")
                                                  for k in s.of_type("AWS::Events::Rule"))]
    pattern = callback_rule(home)["EventPattern"]
    regional = [s for s in stacks.values() if s is not home]
    assert len(regional) == len(TARGET_REGIONS) > 1
    for stack in regional:
        (rule,) = [r for k, r in stack.of_type("AWS::Events::Rule").items() if k.startswith("ForwardStepEnds")]
        assert rule["Properties"]["EventPattern"] == pattern
        (document,) = stack.of_type("AWS::SSM::Document").values()
        assert document["Properties"]["Name"] in json.dumps(pattern)
        (target,) = rule["Properties"]["Targets"]
        assert f"{REGION}:" in json.dumps(target["Arn"]) and "event-bus/default" in json.dumps(target["Arn"])


def test_the_rule_invokes_step_callback_which_may_complete_this_machines_tasks_only(synthesized: Template):
    (target,) = callback_rule(synthesized)["Targets"]
    functions = synthesized.of_type("AWS::Lambda::Function")
    (callback,) = [k for k, f in functions.items() if f["Properties"]["Handler"] == "handlers.step_callback.handler"]
    assert target["Arn"] == synthesized.arn(callback)
    statements = statements_of(synthesized, "OrchestrationFunctionsStepCallbackRole")
    machine = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{state_machine_name(synthesized)}"
    # Issue 30, finding 3: a Distributed Map's children run as stateMachine:<name>/<map run label>, the
    # owner IAM checks their tokens against.
    child = f"{machine}/Runtargetsinchildexecutions-1a2b3c4d"
    for action in ("states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"):
        assert allows(statements, action, machine), action
        assert allows(statements, action, child), action
        for other in ("SomeoneElses", "SomeoneElses/label", f"{state_machine_name(synthesized)}X/label"):
            assert not allows(statements, action, f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{other}")
    # The token start_step kept, and the agent step's status.
    assert allows(statements, "s3:GetObject", synthesized.arn(
        next(k for k in synthesized.of_type("AWS::S3::Bucket") if k.startswith("Results") and "AccessLogs" not in k))
        + "/runs/callbacks/0b9b5a3c.json")
    assert allows(statements, "ssm:GetCommandInvocation", "*")
