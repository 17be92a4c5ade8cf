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
(``token_key``), beside what the step's status carries; the callback reads it there. The rule (in
every target region, forwarded home) matches the agent document's commands only; one without a
token is left alone.

SSM's events are delivered best effort: a lost one would turn a finished step into a failure at
the step's bound (a 24 h soak would lose its day). So start_step also keeps the step's command under
the step's own key (``naming.step_command_key``), and when "Start the step" times out, "Ask how the
step ended" (``ended``, the same function) reads the invocation itself: a step that succeeded goes
on to Collect, one that failed or is still running fails as it would have.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import AgentFailed, StepCancelled, StepTimedOut, aws_errors, error_code
from benchfleet.aws.steps import commands

# Run Command's invocation statuses before the end: the rule (cdk/lib/step-callback.ts
# RUNNING_COMMAND_STATUSES) matches every other status, detailed ones included.
RUNNING_STATUSES = ("Pending", "InProgress", "Delayed", "Cancelling")
# Step Functions' errors for a token that can no longer be completed (the step timed out, the
# execution was stopped): nothing is waiting, so nothing to do.
GONE = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})
# A key that is not there: NoSuchKey, or AccessDenied where the caller may not list the bucket.
ABSENT = frozenset({"NoSuchKey", "404", "AccessDenied"})
# The errors "Start the step" fails with (the state machine's error names).
FAILED_ERROR: dict[str, type[Exception]] = {"failed": AgentFailed, "timed_out": StepTimedOut,
                                            "cancelled": StepCancelled}


def token_key(command_id: str) -> str:
    return f"runs/callbacks/{command_id}.json"


def record(s3: Any, bucket: str, *, task_token: str, status: dict[str, Any], step_key: str) -> None:
    """Keep the token (and the step's status: command, host, region, start) for the callback, and the
    status under the step's own key for "Ask how the step ended"."""
    for key, body in ((token_key(status["command_id"]), {"task_token": task_token, "status": status}),
                      (step_key, {"status": status})):
        with aws_errors():
            s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(body, separators=(",", ":")).encode(),
                          ContentType="application/json")


def _read(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    try:
        with aws_errors():
            return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())  # type: ignore[no-any-return]
    except ClientError as e:
        if error_code(e) in ABSENT:
            return None
        raise


def complete(s3: Any, sfn: Any, ssm_in: Callable[[str | None], Any], bucket: str, *,
             command_id: str, instance_id: str) -> dict[str, Any]:
    """Complete the step's task from its command's status; what was done (``state``, ``sent``)."""
    recorded = _read(s3, bucket, token_key(command_id))
    if recorded is None:
        # Not a step start_step kept a token for (it keeps it as soon as SendCommand returns, long
        # before any agent can end): leave it.
        return {"state": "not a step", "sent": None}
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
                sent = FAILED_ERROR[state].__name__
                sfn.send_task_failure(taskToken=recorded["task_token"], error=sent,
                                      cause=failure_cause(s3, bucket, status, detail)[:32_768])
    except ClientError as e:
        if error_code(e) not in GONE:
            raise
        sent = f"nothing waits ({error_code(e)})"
    return {"state": state, "sent": sent}


def failure_cause(s3: Any, bucket: str, status: dict[str, Any], detail: str) -> str:
    """Why a step failed: its command and host, and for a cluster's step (``host`` recorded) the
    step, the node, proxy or client host, and the agent's own reason (its error record in the output:
    a node that did not join, a proxy that did not install, a node that left the cluster mid-step)."""
    where = f"{status['command_id']} on {status['instance_id']}"
    if not status.get("host"):
        return f"{where}: {detail}"
    reason = agent_error(s3, bucket, str(status.get("output_prefix") or ""))
    return f"{status.get('step')} on {status['host']} ({where}): {reason or detail}"


def agent_error(s3: Any, bucket: str, prefix: str) -> str | None:
    """The message of the agent's last error record under a step's Run Command output, if any (Run
    Command uploads the output before it sends the status change; a missing one says nothing)."""
    if not prefix:
        return None
    try:
        with aws_errors():
            pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/")
            keys = sorted(o["Key"] for page in pages for o in page.get("Contents", []) if o["Key"].endswith("/stdout"))
            text = "\n".join(s3.get_object(Bucket=bucket, Key=k)["Body"].read().decode() for k in keys)
    except ClientError:
        return None
    reasons = []
    for line in text.splitlines():
        if line.startswith('{"type"'):
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if record.get("type") == "error":
                    stage = record.get("stage")
                    reasons.append(f"{stage}: {record.get('message')}" if stage else str(record.get("message")))
    return reasons[-1] if reasons else None


def ended(s3: Any, ssm_in: Callable[[str | None], Any], bucket: str, step_key: str) -> dict[str, Any]:
    """"Start the step" timed out: how did its command end? A succeeded step's status (what the
    callback would have sent), else AgentFailed / StepTimedOut / StepCancelled as the callback would
    have failed it."""
    recorded = _read(s3, bucket, step_key)
    if recorded is None:
        raise StepTimedOut(f"no command was recorded for this step ({step_key}) within its bound")
    status = recorded["status"]
    command_id, instance_id = status["command_id"], status["instance_id"]
    state, detail = commands.invocation_state(ssm_in(status.get("region")), command_id, instance_id)
    if state == "succeeded":
        return {**status, "state": state, "detail": detail, "recovered": "the status change never arrived"}
    if state == "running":
        raise StepTimedOut(f"{command_id} on {instance_id}: still {detail} past the step's bound (timeout_s)")
    raise FAILED_ERROR[state](failure_cause(s3, bucket, status, detail)[:32_768])
