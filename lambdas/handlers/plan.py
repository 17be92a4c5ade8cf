"""Plan: validate the spec, expand it, estimate it, refuse it above budget (PlanRejected)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.planning import runplan
from benchfleet.aws.settings import Settings

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class PlanEvent(BaseModel):
    input: dict[str, Any]
    execution_name: str | None = None


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=PlanEvent)
def handler(event: PlanEvent, context: LambdaContext) -> dict[str, Any]:
    settings = Settings.from_env()
    request = runplan.parse_request(event.input)
    # The run id is the execution's name (the janitor and teardown-by-tag rely on it).
    plan = runplan.plan_run(
        request, execution_name=event.execution_name, zone_count=len(settings.subnet_ids),
        regions=settings.regions, store=settings.results_store)
    logger.append_keys(run_id=plan["run_id"])
    logger.info("planned", extra={"targets": plan["target_count"], "distributed": plan["distributed"],
                                  "history_bound": plan["history_bound"], "wall_s": plan["wall_s"],
                                  "control_plane_usd": plan["control_plane_usd"],
                                  "schedule": plan["schedule"]})
    metrics.add_metric(name="TargetsPlanned", unit=MetricUnit.Count, value=plan["target_count"])
    return runplan.state_of(plan, clients.client("s3"), settings.results_bucket)
