"""Summarize: write runs/<run_id>/summary.json with the terminal status (its only writer)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.settings import Settings
from benchfleet.aws.store.results_store import store_from_settings
from benchfleet.aws.store.summary import summarize

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class RunState(BaseModel):
    spec: dict[str, Any] | None = None
    # The plan as the state carries it: no targets' results (they are in S3, see summary.py).
    plan: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class SummarizeEvent(BaseModel):
    state: RunState
    execution_name: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=SummarizeEvent)
def handler(event: SummarizeEvent, context: LambdaContext) -> dict[str, Any]:
    state = event.state
    # The run id is the execution's name (Plan refuses an input run_id that differs from it).
    run_id = (state.plan or {}).get("run_id") or event.execution_name
    logger.append_keys(run_id=run_id)
    settings = Settings.from_env()
    result = summarize(clients.client("s3"), settings.results_bucket, run_id=run_id, plan=state.plan,
                       error=state.error, spec=state.spec,
                       store=store_from_settings(settings, clients.client))
    logger.info("run finished", extra=result)
    metrics.add_metric(name="RunsSucceeded" if result["status"] == "SUCCEEDED" else "RunsFailed",
                       unit=MetricUnit.Count, value=1)
    return result
