"""Collect: the step's raw agent output (S3) into the results store, plus its CloudWatch window."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.events import Resources, Step
from benchfleet.aws.settings import Settings
from benchfleet.aws.steps import jobs
from benchfleet.aws.steps.collect import collect_step
from benchfleet.aws.store.results_store import store_from_settings
from benchfleet.plan import naming

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class CollectEvent(BaseModel):
    run_id: str
    target: dict[str, Any]
    kind: str
    repetition: int
    step: Step
    resources: Resources
    started_at: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=CollectEvent)
def handler(event: CollectEvent, context: LambdaContext) -> dict[str, Any]:
    settings = Settings.from_env()
    logger.append_keys(run_id=event.run_id, target_id=event.target["id"], repetition=event.repetition,
                       step=event.step.name)
    store = store_from_settings(settings, clients.client)
    # Raw output and the record store are at home; CloudWatch and RDS where the target ran.
    region = settings.regions.region_of(event.resources)
    instance_id = jobs.host_instance(event.resources, event.step, event.target["id"])
    if not instance_id:
        raise ValueError(f"target {event.target['id']} has no host whose output to collect")
    output_prefix = naming.host_output_prefix(settings.host_arn(region, instance_id), event.run_id,
                                              event.target["id"], event.repetition, event.step.name)
    result = collect_step(
        clients.client("s3"), clients.client("cloudwatch", region), store, settings.results_bucket,
        run_id=event.run_id, target=event.target, kind=event.kind, repetition=event.repetition,
        step=event.step.model_dump(), resources=event.resources.model_dump(), started_at=event.started_at,
        output_prefix=output_prefix, rds=clients.client("rds", region))
    for name in ("samples", "summaries", "cloud_metrics"):
        metrics.add_metric(name=f"Collected_{name}", unit=MetricUnit.Count, value=result[name])
    logger.info("collected", extra=result)
    return result
