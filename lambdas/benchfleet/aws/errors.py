"""Errors the state machine routes on. A Lambda's error name in Step Functions is the exception's
class name, so these class names are the ``ErrorEquals`` strings of the ASL: rename neither alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import ClientError

THROTTLING_CODES = frozenset({"Throttling", "ThrottlingException", "RequestLimitExceeded",
                              "TooManyRequestsException", "ProvisionedThroughputExceededException",
                              "SlowDown", "RequestThrottled"})
CAPACITY_CODES = frozenset({"InsufficientInstanceCapacity", "InsufficientDBInstanceCapacity",
                            "InsufficientDBClusterCapacityFault", "InsufficientDBInstanceCapacityFault",
                            "Unsupported"})
# The account's quota is full in the region (EC2 vCPUs or instances, RDS instances or clusters, DB and
# DB cluster parameter groups: 50 each, the cluster groups' not adjustable; CreateDB(Cluster)ParameterGroup
# answers DBParameterGroupQuotaExceeded for both).
QUOTA_CODES = frozenset({"VcpuLimitExceeded", "InstanceLimitExceeded", "InstanceQuotaExceeded",
                         "InstanceQuotaExceededFault", "DBClusterQuotaExceededFault", "StorageQuotaExceeded",
                         "StorageQuotaExceededFault", "DBParameterGroupQuotaExceeded",
                         "DBParameterGroupQuotaExceededFault"})


class ThrottlingException(Exception):  # the ASL matches this exact name
    """AWS throttled a call; the state machine retries with backoff."""


class InsufficientInstanceCapacity(Exception):  # the ASL matches this exact name
    """No capacity (or no support) for the instance type in this zone; try another zone."""


class QuotaExceeded(Exception):  # the ASL matches this exact name
    """The region's quota is full: a previous wave's hosts are still going (the plan schedules waves
    within the deployment's caps, with a margin); the state machine retries for a while."""


class TargetFailed(Exception):
    """A target can never become ready (terminated, failed, deleted)."""


class PlanRejected(Exception):
    """The spec cannot run: invalid, over budget, or beyond what one execution can hold. ``field``
    is the spec field the refusal is about when the message does not start with it (the API
    answers naming it); ``problems`` every ``(field, message)`` when there are several."""

    def __init__(self, message: str, field: str | None = None,
                 problems: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems or []


class VariantNotApplied(Exception):
    """A variant's settings could not be put into effect on its target (its repetition fails)."""


class CollectFailed(Exception):
    """A step's raw output is missing or unreadable."""


class AgentFailed(Exception):  # the ASL and step_callback's SendTaskFailure use this exact name
    """The step's agent (or its Run Command) ended in failure."""


class StepTimedOut(Exception):  # the ASL and step_callback's SendTaskFailure use this exact name
    """The step's Run Command timed out, or never ended within the step's bound."""


class StepCancelled(Exception):  # step_callback's SendTaskFailure uses this exact name
    """The step's Run Command was cancelled (someone, or SSM, stopped it): not a timeout."""


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


@contextmanager
def aws_errors() -> Iterator[None]:
    """Turn throttling and capacity ClientErrors into the named errors the ASL retries on."""
    try:
        yield
    except ClientError as e:
        code = error_code(e)
        if code in THROTTLING_CODES:
            raise ThrottlingException(str(e)) from e
        if code in CAPACITY_CODES:
            raise InsufficientInstanceCapacity(str(e)) from e
        if code in QUOTA_CODES:
            raise QuotaExceeded(str(e)) from e
        raise
