"""Step completion by callback, not polling.

"Start the step" is a ``lambda:invoke.waitForTaskToken`` Task: start_step sends the agent's
command and records the task token; Step Functions then waits, at no cost, until the token is
completed or the step's ``timeout_s`` (from the plan) passes. Run Command's own status change
completes it: an EventBridge rule on "EC2 Command Invocation Status-change Notification" events in
a terminal status (cdk/lib/step-callback.ts) invokes step_callback, which
reads the agent step's status (GetCommandInvocation of ``runAgent``: a failed CloudWatch agent
install fails the invocation, not the benchmark) and calls SendTaskSuccess / SendTaskFailure.

Where the token waits: the event names only the command, the instance and the status. The
command's Comment holds 100 characters and a token up to 1,024; a document parameter would put the
token in SSM's command history (anyone who may list commands could complete the step) and change
the agent document. So start_step puts it in the results bucket under the command's id
(``token_key``), beside what the step's status carries; the callback reads it there, and leaves
alone the commands it finds no token for (the rule, in every target region forwarded home, sees
every Run Command of the account).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import aws_errors, error_code
from benchfleet.aws.steps import commands

# Run Command's terminal statuses (the rule's pattern matches these only).
TERMINAL_STATUSES = ("Success", "Failed", "TimedOut", "Cancelled")
# Step Functions' errors for a token that can no longer be completed (the step timed out, the
# execution was stopped): nothing is waiting, so nothing to do.
GONE = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})
# The errors "Start the step" fails with (the state machine's error names).
FAILED_ERROR = {"failed": "AgentFailed", "timed_out": "StepTimedOut"}


def token_key(command_id: str) -> str:
    return f"runs/callbacks/{command_id}.json"


def record(s3: Any, bucket: str, *, task_token: str, status: dict[str, Any]) -> None:
    """Keep the token (and the step's status: command, host, region, start) for the callback."""
    body = json.dumps({"task_token": task_token, "status": status}, separators=(",", ":"))
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=token_key(status["command_id"]), Body=body.encode(),
                      ContentType="application/json")


def complete(s3: Any, sfn: Any, ssm_in: Callable[[str | None], Any], bucket: str, *,
             command_id: str, instance_id: str) -> dict[str, Any]:
    """Complete the step's task from its command's status; what was done (``state``, ``sent``)."""
    try:
        with aws_errors():
            recorded = json.loads(s3.get_object(Bucket=bucket, Key=token_key(command_id))["Body"].read())
    except ClientError as e:
        # Not a step of ours (the rule sees every command of the account in its region): leave it.
        # start_step keeps the token as soon as SendCommand returns, long before any agent can end.
        if error_code(e) in ("NoSuchKey", "404"):
            return {"state": "not a step", "sent": None}
        raise
    status = recorded["status"]
    state, detail = commands.invocation_state(ssm_in(status.get("region")), command_id, instance_id)
    if state == "running":  # not the agent's end yet (only an earlier plugin's)
        return {"state": state, "sent": None}
    try:
        with aws_errors():
            if state == "succeeded":
                sfn.send_task_success(taskToken=recorded["task_token"],
                                      output=json.dumps({**status, "state": state, "detail": detail}))
                sent = "success"
            else:
                sfn.send_task_failure(taskToken=recorded["task_token"], error=FAILED_ERROR[state],
                                      cause=f"{command_id} on {instance_id}: {detail}"[:32_768])
                sent = FAILED_ERROR[state]
    except ClientError as e:
        if error_code(e) not in GONE:
            raise
        sent = f"nothing waits ({error_code(e)})"
    return {"state": state, "sent": sent}
