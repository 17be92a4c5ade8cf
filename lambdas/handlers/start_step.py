"""StartStep: send the agent document with the step's job (output to S3 beside the raw key) and keep
the task token the state machine waits on, for the step's callback (benchfleet.aws.steps.callbacks)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from benchfleet.aws import clients
from benchfleet.aws.errors import VariantNotApplied
from benchfleet.aws.events import StepState
from benchfleet.aws.fleet import paramgroups, regional, targets
from benchfleet.aws.settings import Settings
from benchfleet.aws.steps import callbacks, commands, jobs
from benchfleet.plan import naming

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


def variant_parameters(event: StepState, rds: Any) -> list[str]:
    """An rds / aurora step of a variant: its values into the run's parameter groups, immediately
    (Plan refused every static one), before the agent is sent; it waits until the server reports
    them. A change RDS refuses fails the step, and so the repetition, which is torn down."""
    given = event.step.variant_settings or {}
    if event.kind not in ("rds", "aurora") or not given.get("parameters"):
        return []
    groups = paramgroups.Groups(instance=event.resources.parameter_group,
                                cluster=event.resources.cluster_parameter_group)
    try:
        return paramgroups.apply_now(rds, groups, list(given["parameters"]))
    except ClientError as e:
        raise VariantNotApplied(f"variant {given.get('variant')}: its parameters could not be set: {e}") from e


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=StepState)
def handler(event: StepState, context: LambdaContext) -> dict[str, Any]:
    home = Settings.from_env()
    # Run Command in the target's region, with that region's agent document; output to the home bucket.
    region = home.regions.region_of(event.resources)
    ssm = clients.client("ssm", region)
    settings = regional.settings_in(region, home, ssm)
    target_id, step = event.target["id"], event.step
    logger.append_keys(run_id=event.run_id, target_id=target_id, repetition=event.repetition, step=step.name)
    # The target's host, or the one a cluster's set-up step names (a node, the client, the proxy's).
    instance_id = jobs.instance_of(event)
    if not instance_id:
        raise ValueError(f"target {target_id} has no instance to run the agent on")
    # The prepare step of a host with data volumes: the agent finds them by the ids they got at launch.
    wanted = jobs.needs_volume_ids(event)
    volumes = targets.data_volumes(clients.client("ec2", region), instance_id, wanted) if wanted else None
    switched = variant_parameters(event, clients.client("rds", region))
    output_prefix = naming.host_output_prefix(home.host_arn(region, instance_id), event.run_id, target_id,
                                              event.repetition, step.name)
    command_id = commands.send_step(
        ssm, document=settings.agent_document_name, bucket_region=home.home_region,
        instance_id=instance_id, job=jobs.job_for(event, volumes),
        bucket=settings.results_bucket,
        output_prefix=output_prefix,
        execution_timeout_s=step.duration_s + step.setup_s + 600,  # runplan.execution_timeout_s
        comment=f"benchfleet {event.run_id} {target_id} rep {event.repetition} {step.name}")
    status = {"command_id": command_id, "instance_id": instance_id, "region": region,
              "started_at": targets.now_iso()}
    if event.kind == "cluster":  # a failure names the step, the host (a node, the client) and the agent's reason
        status.update(step=step.name, host=step.host or "client", output_prefix=output_prefix)
    if event.task_token:
        callbacks.record(clients.client("s3"), home.results_bucket, task_token=event.task_token, status=status,
                         step_key=naming.step_command_key(event.run_id, target_id, event.repetition, step.name))
    logger.info("step sent", extra={"command_id": command_id, "parameters": switched})
    metrics.add_metric(name="StepsStarted", unit=MetricUnit.Count, value=1)
    return {**status, "state": "running"}
