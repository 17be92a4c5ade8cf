"""StepCallback: how a step's Run Command ended, for the step's task.

Two callers (benchfleet.aws.steps.callbacks says why a callback, and where the token waits):

- the EventBridge rule of cdk/lib/step-callback.ts, with SSM's "EC2 Command Invocation Status-change
  Notification" of an agent document command: complete the step's task token from its status;
- the state machine's "Ask how the step ended", when "Start the step" timed out (the status change
  was lost, or never sent): the step's status if it succeeded, else AgentFailed / StepTimedOut.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ConfigDict, Field

from benchfleet.aws import clients
from benchfleet.aws.settings import Settings
from benchfleet.aws.steps import callbacks
from benchfleet.plan import naming

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class InvocationDetail(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    command_id: str = Field(alias="command-id")
    instance_id: str = Field(alias="instance-id")
    status: str


class InvocationEvent(BaseModel):
    detail_type: str = Field(alias="detail-type")
    region: str
    detail: InvocationDetail


class StepTimedOutEvent(BaseModel):
    """What "Ask how the step ended" passes: which step of which run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    target_id: str
    repetition: int
    step: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    s3, bucket = clients.client("s3"), Settings.from_env().results_bucket
    if "detail-type" in event:
        change = InvocationEvent.model_validate(event)
        detail = change.detail
        logger.append_keys(command_id=detail.command_id, instance_id=detail.instance_id, status=detail.status)
        result = callbacks.complete(s3, clients.client("stepfunctions"),
                                    lambda region: clients.client("ssm", region or change.region), bucket,
                                    command_id=detail.command_id, instance_id=detail.instance_id)
        logger.info("step completed", extra=result)
        metrics.add_metric(name="StepsCompleted", unit=MetricUnit.Count, value=1)
        return result
    asked = StepTimedOutEvent.model_validate(event)
    logger.append_keys(run_id=asked.run_id, target_id=asked.target_id, repetition=asked.repetition, step=asked.step)
    metrics.add_metric(name="StepEndsAsked", unit=MetricUnit.Count, value=1)
    status = callbacks.ended(s3, lambda region: clients.client("ssm", region), bucket,
                             naming.step_command_key(asked.run_id, asked.target_id, asked.repetition, asked.step))
    logger.warning("step recovered without its status change", extra=status)
    return status
