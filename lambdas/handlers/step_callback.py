"""StepCallback: a Run Command invocation of the agent document ended; complete its step's task.

Invoked by the EventBridge rule of cdk/lib/step-callback.ts with the "EC2 Command Invocation
Status-change Notification" event (benchfleet.aws.steps.callbacks says why a callback, and where the
token waits)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ConfigDict, Field

from benchfleet.aws import clients
from benchfleet.aws.settings import Settings
from benchfleet.aws.steps import callbacks

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


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=InvocationEvent)
def handler(event: InvocationEvent, context: LambdaContext) -> dict[str, Any]:
    detail = event.detail
    logger.append_keys(command_id=detail.command_id, instance_id=detail.instance_id, status=detail.status)
    result = callbacks.complete(clients.client("s3"), clients.client("stepfunctions"),
                                lambda region: clients.client("ssm", region or event.region),
                                Settings.from_env().results_bucket,
                                command_id=detail.command_id, instance_id=detail.instance_id)
    logger.info("step completed", extra=result)
    metrics.add_metric(name="StepsCompleted", unit=MetricUnit.Count, value=1)
    return result
