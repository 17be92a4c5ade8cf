"""StepStatus: one poll of GetCommandInvocation, with the next wait (adaptive, see commands.next_wait).

Only the status is read here: results come from S3 in collect, never from the API's stdout."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchfleet.aws import clients, commands
from benchfleet.aws.events import Timing
from benchfleet.aws.settings import Settings

logger = Logger()
tracer = Tracer()
metrics = Metrics()  # namespace from POWERTOOLS_METRICS_NAMESPACE, set by the CDK app


class StatusEvent(BaseModel):
    command_id: str
    instance_id: str
    region: str | None = None
    started_at: str
    duration_s: int
    deadline: str
    timing: Timing
    poll: int


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=StatusEvent)
def handler(event: StatusEvent, context: LambdaContext) -> dict[str, Any]:
    region = event.region or Settings.from_env().home_region  # start_step's: the target's region
    state, detail = commands.invocation_state(clients.client("ssm", region), event.command_id, event.instance_id)
    now = datetime.now(UTC)
    if state == "running" and now > datetime.strptime(event.deadline, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC):
        state, detail = "timed_out", f"past the target's deadline {event.deadline}"
    wait = commands.next_wait(started_at=event.started_at, duration_s=event.duration_s,
                              cap_s=event.timing.poll_cap_s, overrun_poll_s=event.timing.overrun_poll_s, now=now)
    logger.info("step status", extra={"command_id": event.command_id, "state": state, "detail": detail,
                                      "poll": event.poll, "wait_s": wait})
    return {"command_id": event.command_id, "instance_id": event.instance_id, "region": region,
            "started_at": event.started_at,
            "state": state, "detail": detail, "poll": event.poll, "wait_s": wait}
