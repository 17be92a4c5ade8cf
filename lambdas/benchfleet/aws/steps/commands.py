"""One benchmark step through SSM Run Command: send the agent's job, read the invocation's status.

Results never come from GetCommandInvocation (it returns only the first 24,000 characters of
stdout): the invocation writes its output to S3 beside the step's raw key, and collect reads it.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import aws_errors, error_code

# Run Command delivery timeout (the run limit is the document's executionTimeout).
DELIVERY_TIMEOUT_S = 600
# The agent document's step that runs the agent (cdk/lib/target-fleet.ts AGENT_PLUGIN; the host tier
# checks the synthesized document has it). Its status is the step's: the CloudWatch agent's own
# plugin may fail without failing the benchmark, and GetCommandInvocation needs a step name for a
# document of several steps.
AGENT_PLUGIN = "runAgent"
MAX_EXECUTION_TIMEOUT_S = 172_800
RUNNING = {"Pending", "InProgress", "Delayed"}
TIMED_OUT = {"TimedOut"}
# Stopped by CancelCommand (a person, a script, SSM itself): the step did not time out, and says so.
CANCELLED = {"Cancelled", "Cancelling"}
State = tuple[str, str]


def send_step(ssm: Any, *, document: str, instance_id: str, job: dict[str, Any], bucket: str,
              output_prefix: str, execution_timeout_s: int, comment: str, bucket_region: str | None = None) -> str:
    """``bucket_region``: the results bucket's, when the target (and ``ssm``) is in another region."""
    # The document refuses single quotes (its shell fallback quotes JobJson with them); in JSON a
    # quote can only be inside a string, where \u0027 means the same (a cnf comment, a Lua path).
    job_json = json.dumps(job, separators=(",", ":"), sort_keys=True).replace("'", "\\u0027")
    with aws_errors():
        response = ssm.send_command(
            InstanceIds=[instance_id], DocumentName=document, Comment=comment[:100],
            TimeoutSeconds=DELIVERY_TIMEOUT_S,
            Parameters={"JobJson": [job_json],
                        "executionTimeout": [str(min(execution_timeout_s, MAX_EXECUTION_TIMEOUT_S))]},
            OutputS3BucketName=bucket, OutputS3KeyPrefix=output_prefix,
            **({"OutputS3Region": bucket_region} if bucket_region else {}))
    return str(response["Command"]["CommandId"])


def _classify(status: str, detail: str, code: Any) -> State:
    if status in RUNNING:
        return "running", detail
    if status == "Success":
        return "succeeded", detail
    if status in CANCELLED:
        return "cancelled", detail
    if status in TIMED_OUT or "Timed" in detail.replace(" ", ""):
        return "timed_out", detail
    return "failed", f"{detail} (exit {code})"


def invocation_state(ssm: Any, command_id: str, instance_id: str) -> State:
    """(running | succeeded | failed | timed_out | cancelled, SSM's status detail) of the agent's step.

    A command that never reached the agent's step (undeliverable, delivery timed out, cancelled or
    terminated before it started) has no status of that step, or leaves it Pending: then the
    invocation's own status decides, so such a step fails at once instead of waiting for its bound."""
    try:
        with aws_errors():
            inv = ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id,
                                             PluginName=AGENT_PLUGIN)
    except ClientError as e:
        if error_code(e) != "InvocationDoesNotExist":  # also: not registered yet, right after SendCommand
            raise
        inv = None
    if inv is not None:
        state = _classify(str(inv.get("Status", "")), str(inv.get("StatusDetails", inv.get("Status", ""))),
                          inv.get("ResponseCode"))
        if state[0] != "running":
            return state
    with aws_errors():
        listed = ssm.list_command_invocations(CommandId=command_id, InstanceId=instance_id)
    overall = (listed.get("CommandInvocations") or [None])[0]
    if overall is None:
        return "running", "InvocationDoesNotExist"
    status = str(overall.get("Status", ""))
    detail = str(overall.get("StatusDetails", status))
    if status in RUNNING:  # the command runs, only an earlier step of its document so far
        return "running", detail if inv is None else str(inv.get("StatusDetails", detail))
    if status == "Success" and inv is None:  # ended well, yet without the agent's step: not a step that ran
        return "failed", f"{detail}: the command ended without running {AGENT_PLUGIN}"
    return _classify(status, f"{detail} ({AGENT_PLUGIN} never ran)", overall.get("ResponseCode", "none"))
