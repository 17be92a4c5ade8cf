"""Provision: create one target for one repetition in the zone the state machine chose."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients
from benchfleet.aws.fleet import lifecycle, regional
from benchfleet.aws.settings import Settings

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class ProvisionEvent(BaseModel):
    run_id: str
    target: dict[str, Any]
    repetition: int
    zone_index: int = 0
    expires_at: str
    # An rds / aurora target's parameter group entries (Plan: runplan, from mysql_config and server_options).
    parameters: list[dict[str, Any]] = []
    # rds / aurora, "Create the databases": the first call's answer (its groups_settle_s has passed).
    resources: dict[str, Any] | None = None


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=ProvisionEvent)
def handler(event: ProvisionEvent, context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(run_id=event.run_id, target_id=event.target["id"], repetition=event.repetition)
    settings = Settings.from_env()
    # In the target's own region, with that region's network, launch template and subnet group.
    region = settings.regions.region_of(event.target)
    ssm = clients.client("ssm", region)
    resources = lifecycle.provision(
        clients.client("ec2", region), clients.client("rds", region), ssm, regional.settings_in(region, settings, ssm),
        run_id=event.run_id, target=event.target, repetition=event.repetition,
        zone_index=event.zone_index, expires_at=event.expires_at, parameters=event.parameters,
        secretsmanager=clients.client("secretsmanager", region) if event.target.get("kind") == "cluster" else None,
        resources=event.resources)
    logger.info("provisioned", extra={"resources": resources})
    metrics.add_metric(name="TargetsProvisioned", unit=MetricUnit.Count, value=1)
    return resources
