"""Teardown: idempotently delete one target's resources (recorded ids, then by tag) and verify."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.events import Resources
from benchfleet.aws.fleet import lifecycle
from benchfleet.aws.settings import Settings

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class TeardownTarget(BaseModel):
    target_id: str
    kind: str
    region: str | None = None  # the plan's: where the target runs


class TeardownEvent(BaseModel):
    run_id: str
    target: TeardownTarget
    repetition: int = 1
    resources: Resources = Resources()
    # The previous lap's answer ({} the first time): teardown runs again while a parameter group
    # waits for its database to go ("Parameter groups gone?").
    teardown: dict[str, Any] = {}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=TeardownEvent)
def handler(event: TeardownEvent, context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(run_id=event.run_id, target_id=event.target.target_id, repetition=event.repetition)
    resources = event.resources.model_dump()
    resources["kind"] = resources.get("kind") or event.target.kind
    if event.target.kind == "existing":
        resources["managed"] = False
    settings = Settings.from_env()
    # Where provision created it; when provision failed before recording that, the target's region.
    region = resources.get("region") or settings.regions.region_of(event.target)
    result = lifecycle.teardown(clients.client("ec2", region), clients.client("rds", region), run_id=event.run_id,
                                target_id=event.target.target_id, resources=resources, owner=settings.owner(),
                                repetition=event.repetition, prefix=settings.db_identifier_prefix,
                                # a cluster's password secrets (no other kind has any)
                                secretsmanager=clients.client("secretsmanager", region)
                                if resources["kind"] == "cluster" else None)
    result = lifecycle.next_lap(event.teardown, result)
    logger.info("torn down", extra=result)
    metrics.add_metric(name="TargetsTornDown", unit=MetricUnit.Count, value=1)
    return result
