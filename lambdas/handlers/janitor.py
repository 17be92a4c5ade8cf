"""Hourly janitor: remove whatever a run left behind once that run is no longer running or its
resources are past ``benchfleet:expires-at``. Publishes what it removed and what it could not; the
CDK app alarms on ``RemovalFailures`` and on this function's errors.

Environment: ``STATE_MACHINE_ARN``; ``BENCHFLEET_STACK`` (only this stack's resources are swept);
``SWEEP_REGIONS`` (comma separated: the CDK app's targetRegions and sweepRegions) — every region a
spec may put targets in; the function's own region always.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from benchfleet.aws import clients
from benchfleet.aws.fleet.sweep import SweepReport, janitor_sweep, region_clients, running_executions
from benchfleet.aws.settings import Settings

logger = Logger()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


def regions(settings: Settings) -> list[str]:
    """The home region (where runs start) and every configured one, each once."""
    configured = [r.strip() for r in os.environ.get("SWEEP_REGIONS", "").split(",") if r.strip()]
    return list(dict.fromkeys([settings.home_region, *configured]))


def publish(report: SweepReport) -> None:
    metrics.add_metric(name="ResourcesRemoved", unit=MetricUnit.Count, value=len(report.removed))
    metrics.add_metric(name="ResourcesAlreadyGone", unit=MetricUnit.Count, value=len(report.already_gone))
    metrics.add_metric(name="ResourcesKept", unit=MetricUnit.Count, value=len(report.kept))
    metrics.add_metric(name="RemovalFailures", unit=MetricUnit.Count, value=len(report.failed))


def sweep(now: datetime | None = None) -> SweepReport:
    settings = Settings.from_env()
    owner = settings.owner()
    sfn = clients.client("stepfunctions")
    arn = settings.state_machine_arn
    return janitor_sweep(region_clients, regions(settings), lambda: running_executions(sfn, arn), owner,
                         now or datetime.now(UTC))


@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    report = sweep()
    publish(report)
    summary = report.summary()
    if report.removed or report.failed:
        logger.info("janitor sweep", extra=summary)
    for item in summary["failed"]:
        logger.error("could not remove", extra=item)
    return summary
