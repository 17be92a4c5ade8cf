"""Tear down a run that failed, timed out or was aborted: everything tagged with its run id.

Called by an EventBridge rule on "Step Functions Execution Status Change" (FAILED / TIMED_OUT /
ABORTED): StopExecution skips the state machine's Catch, so its Teardown never ran. The run id is
``run_id`` of the execution input, else the execution name; the regions are those the spec's
targets name, plus this function's own; only resources of this stack (``BENCHFLEET_STACK``) are
removed. Idempotent; races with the janitor are harmless.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict, ValidationError

from benchfleet.aws import clients, run_status
from benchfleet.aws.fleet.sweep import region_clients, run_id_of, teardown_run
from benchfleet.aws.settings import Settings
from benchfleet.plan.naming import RUN_ID

logger = Logger()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class ExecutionDetail(BaseModel):
    model_config = ConfigDict(extra="ignore")

    executionArn: str  # EventBridge's own field names
    stateMachineArn: str
    name: str
    status: str
    input: str | None = None


class StatusChangeEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    detail: ExecutionDetail


def home_region() -> str:
    return os.environ.get("AWS_REGION") or boto3.session.Session().region_name or "us-east-1"


def spec_regions(execution_input: str | None) -> list[str]:
    """Regions the run's targets name (a target without a region is in the home region)."""
    try:
        data = json.loads(execution_input or "{}")
    except ValueError:
        return []
    spec = data.get("spec") if isinstance(data, dict) else None
    targets = spec.get("targets") if isinstance(spec, dict) else None
    return sorted({t["region"] for t in targets or []
                   if isinstance(t, dict) and isinstance(t.get("region"), str)})


def teardown(event: dict[str, Any]) -> dict[str, Any]:
    try:
        detail = StatusChangeEvent.model_validate(event).detail
    except ValidationError as e:
        logger.warning("not an execution status change event", extra={"errors": e.errors()})
        return {"skipped": "not an execution status change event"}
    expected = os.environ.get("STATE_MACHINE_ARN")
    if expected and detail.stateMachineArn != expected:
        return {"skipped": f"execution of another state machine: {detail.stateMachineArn}"}
    if detail.status not in run_status.FAILED:
        return {"skipped": f"status {detail.status}"}
    execution_input = detail.input
    if execution_input is None:  # the event omits inputs that are too large; ask for it
        described = clients.client("stepfunctions").describe_execution(executionArn=detail.executionArn)
        execution_input = described.get("input")
    run_id = run_id_of(detail.name, execution_input)
    if not RUN_ID.match(run_id):
        logger.warning("execution name is not a run id; nothing of ours carries it", extra={"run_id": run_id})
        return {"skipped": "not a run id", "run_id": run_id}
    regions = [home_region(), *spec_regions(execution_input)]
    report = teardown_run(run_id, Settings.from_env().owner(), region_clients, regions)
    metrics.add_metric(name="ResourcesRemoved", unit=MetricUnit.Count, value=len(report.removed))
    metrics.add_metric(name="RemovalFailures", unit=MetricUnit.Count, value=len(report.failed))
    summary = {"run_id": run_id, "status": detail.status, **report.summary()}
    logger.info("teardown by tag", extra=summary)
    if report.failed:
        # Fail the invocation so EventBridge retries it; the janitor is the backstop after that.
        raise RuntimeError(f"could not remove {len(report.failed)} resource(s) of run {run_id}")
    return summary


@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = teardown(event)
    metrics.add_metric(name="TeardownsSkipped", unit=MetricUnit.Count, value=int("skipped" in result))
    return result
