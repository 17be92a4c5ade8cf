"""Readiness: one check of the AwaitReady loop (instance Online in SSM; database available)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.events import Resources, Timing
from benchfleet.aws.fleet import lifecycle
from benchfleet.aws.settings import Settings

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class ReadinessEvent(BaseModel):
    resources: Resources
    timing: Timing
    deadline: str
    attempt: int


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=ReadinessEvent)
def handler(event: ReadinessEvent, context: LambdaContext) -> dict[str, Any]:
    region = Settings.from_env().regions.region_of(event.resources)  # where provision created it
    answer = lifecycle.check_ready(
        clients.client("ec2", region), clients.client("rds", region), clients.client("ssm", region),
        clients.client("secretsmanager", region), resources=event.resources.model_dump(),
        timing=event.timing.model_dump(), attempt=event.attempt, deadline=event.deadline)
    logger.info("readiness", extra={"ready": answer["ready"], "attempt": event.attempt,
                                    "wait_s": answer["wait_s"]})
    return answer
