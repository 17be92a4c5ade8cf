"""How a step's Run Command ended, when SSM's status change is unusual or never comes (issue 30,
findings 4 and 5): the real step_callback handler, its token and step record in moto's S3, SSM's
answers from botocore's Stubber (moto cannot make an invocation that never reached its step)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_agent import ssm_invocation_event
from sm_harness import Context
from sm_world import BUCKET, ENV, REGION

from benchfleet.aws import clients
from benchfleet.aws.steps import callbacks
from benchfleet.plan import naming

RUN = "fn-20261122t000000-abcd"
HOST = "i-0123456789abcdef0"
STEP = {"run_id": RUN, "target_id": "aurora-r6g", "repetition": 1, "step": "t0001"}
STEP_KEY = naming.step_command_key(RUN, "aurora-r6g", 1, "t0001")


def command(n: int) -> str:
    """A command id as SSM makes them (a UUID: botocore checks the length)."""
    return f"0b9b5a3c-1d2e-4f50-8a6b-{n:012d}"


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    """The results bucket (moto), with the environment the stack gives step_callback."""
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        for k, v in {**ENV, "RESULTS_BUCKET": BUCKET}.items():
            monkeypatch.setenv(k, v)
        clients.reset()
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET)
        yield client
        clients.reset()


def keep(s3: Any, command_id: str) -> dict[str, str]:
    """What start_step keeps when it sends the step's command: the token and the step's record."""
    status = {"command_id": command_id, "instance_id": HOST, "region": REGION, "started_at": "2026-11-23T06:00:00Z"}
    callbacks.record(s3, BUCKET, task_token=f"token-{command_id}", status=status, step_key=STEP_KEY)
    return status


def call(event: dict[str, Any]) -> Any:
    return importlib.import_module("handlers.step_callback").handler(event, Context(function_name="step_callback"))


def stubbed() -> tuple[Any, Any]:
    ssm, sfn = boto3.client("ssm", region_name=REGION), boto3.client("stepfunctions", region_name=REGION)
    clients.override("ssm", lambda: ssm)
    clients.override("stepfunctions", lambda: sfn)
    return ssm, sfn


def agent_step(stub: Stubber, command_id: str, status: str | None) -> None:
    """GetCommandInvocation of the agent's step: its status, or none (InvocationDoesNotExist)."""
    where = {"CommandId": command_id, "InstanceId": HOST, "PluginName": "runAgent"}
    if status is None:
        stub.add_client_error("get_command_invocation", "InvocationDoesNotExist", expected_params=where)
    else:
        stub.add_response("get_command_invocation", {"Status": status, "StatusDetails": status, "ResponseCode": 1},
                          where)


def invocation(stub: Stubber, command_id: str, status: str, detail: str) -> None:
    """ListCommandInvocations: the invocation's own status."""
    stub.add_response("list_command_invocations", {"CommandInvocations": [{"Status": status, "StatusDetails": detail}]},
                      {"CommandId": command_id, "InstanceId": HOST})


NEVER_RAN = [  # (invocation status, its detail, the agent step's status or None, the step's error)
    ("Failed", "Undeliverable", None, "AgentFailed"),
    ("TimedOut", "DeliveryTimedOut", None, "StepTimedOut"),
    # Cancelled is reported as cancelled, not as a timeout (issue 28 item 8).
    ("Cancelled", "Cancelled", "Pending", "StepCancelled"),
    ("Failed", "Terminated", "Pending", "AgentFailed"),
    ("Success", "Success", None, "AgentFailed"),  # ended without ever reaching the agent's step
]


def test_a_command_that_never_ran_fails_its_step_at_once(s3: Any):
    """Finding 5: a command that never reached the agent's step (undeliverable, delivery timed out,
    cancelled or terminated before it started) has no runAgent status, or a Pending one; the callback
    waited for the step's bound instead (or errored). The invocation's own status decides, at once."""
    ssm, sfn = stubbed()
    for n, (status, detail, step_status, error) in enumerate(NEVER_RAN):
        command_id = command(n)
        keep(s3, command_id)
        with Stubber(ssm) as ssm_stub, Stubber(sfn) as sfn_stub:
            agent_step(ssm_stub, command_id, step_status)
            invocation(ssm_stub, command_id, status, detail)
            sfn_stub.add_response("send_task_failure", {}, {"taskToken": f"token-{command_id}", "error": error,
                                                            "cause": ANY})
            out = call(ssm_invocation_event(command_id, HOST, detail, "bf-agent"))
            sfn_stub.assert_no_pending_responses()
        state = {"AgentFailed": "failed", "StepTimedOut": "timed_out", "StepCancelled": "cancelled"}[error]
        assert out == {"state": state, "sent": error}, detail
    # Still running (an earlier step of the document): nothing is sent yet.
    keep(s3, command(99))
    with Stubber(ssm) as ssm_stub, Stubber(sfn):
        agent_step(ssm_stub, command(99), "Pending")
        invocation(ssm_stub, command(99), "InProgress", "InProgress")
        assert call(ssm_invocation_event(command(99), HOST, "Failed", "bf-agent")) == {"state": "running",
                                                                                       "sent": None}


LOST = [("Success", "succeeded"), ("Failed", "AgentFailed"), ("TimedOut", "StepTimedOut"),
        ("InProgress", "StepTimedOut")]


def test_a_step_whose_status_change_was_lost_is_completed_from_its_invocation(s3: Any):
    """Finding 4: SSM's events are best effort. When "Start the step" times out, the state machine asks
    step_callback how the step ended (the command start_step kept under the step's own key): a step
    that succeeded goes on to Collect with the status the callback would have sent; one that failed,
    or still runs past its bound, fails with the error the callback would have sent."""
    ssm, _ = stubbed()
    for n, (invocation_status, outcome) in enumerate(LOST):
        status = keep(s3, command(100 + n))
        with Stubber(ssm) as ssm_stub:
            agent_step(ssm_stub, status["command_id"], invocation_status)
            if invocation_status == "InProgress":
                invocation(ssm_stub, status["command_id"], "InProgress", "InProgress")
            if outcome == "succeeded":
                assert call(STEP) == {**status, "state": "succeeded", "detail": "Success",
                                      "recovered": "the status change never arrived"}
            else:
                with pytest.raises(Exception) as raised:
                    call(STEP)
                assert type(raised.value).__name__ == outcome, invocation_status  # the state machine's error
            ssm_stub.assert_no_pending_responses()
    # No command was ever recorded for the step: it timed out.
    s3.delete_object(Bucket=BUCKET, Key=STEP_KEY)
    with Stubber(ssm), pytest.raises(Exception, match="no command was recorded") as raised:
        call(STEP)
    assert type(raised.value).__name__ == "StepTimedOut"
