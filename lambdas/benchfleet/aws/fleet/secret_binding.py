"""Bind the RDS-managed master secret of a run's database to that run's client host.

One instance role serves every host, so IAM tells hosts apart by the instance itself: a call made
with an instance profile's credentials carries ``ec2:SourceInstanceARN``, and the host role may read
a secret only when its ``benchfleet:secret-reader`` tag equals that ARN (cdk/lib/permissions.ts,
grantRdsManagedSecretsRead). Readiness tags the secret once the database is available and before
the host is told where the secret is; re-tagging replaces the value, so a secret has one reader.
The secret, its database and the host share a region and an account: the host's ARN is built from
the secret's.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import TargetFailed, aws_errors, error_code
from benchfleet.plan import naming


def host_arn(secret_arn: str, instance_id: str) -> str:
    """The ARN IAM puts in ``ec2:SourceInstanceARN`` for ``instance_id``, in the secret's region and
    account (``arn:<partition>:secretsmanager:<region>:<account>:secret:<name>``)."""
    parts = secret_arn.split(":")
    if len(parts) < 7 or parts[2] != "secretsmanager":
        raise TargetFailed(f"{secret_arn!r} is not a Secrets Manager secret ARN")
    return naming.instance_arn(parts[1], parts[3], parts[4], instance_id)


def bind(secretsmanager: Any, secret_arn: str, instance_id: str) -> str:
    """Tag the secret with the host's ARN (the only key the readiness role may set); the ARN."""
    reader = host_arn(secret_arn, instance_id)
    try:
        with aws_errors():
            secretsmanager.tag_resource(SecretId=secret_arn,
                                        Tags=[{"Key": naming.TAG_SECRET_READER, "Value": reader}])
    except ClientError as e:
        # Without the tag the host cannot read the password: the target can never run.
        raise TargetFailed(f"could not bind secret {secret_arn} to host {instance_id} "
                           f"({error_code(e)}): its host could not read the database password") from None
    return reader
