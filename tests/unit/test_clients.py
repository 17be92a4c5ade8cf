"""The handlers' boto3 clients (benchfleet.aws.clients): one per service and region, made with the
configuration the service needs."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ParamValidationError
from moto import mock_aws

from benchfleet.aws import clients


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch):
    for key, value in {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    clients.reset()
    yield
    clients.reset()


def test_timestream_writes_skip_botocore_s_own_check_of_every_value():
    """Issue 41 item 17: botocore checked each of a WriteRecords request's ~2,000 values in Python, two
    thirds of a collect's CPU offline (tests/perf/cloud_scale.py); benchfleet.aws.store.timestream bounds
    the records itself (<= 100 a request, <= 2 KB each) and Timestream validates what it receives."""
    bad = {"DatabaseName": "db", "TableName": "samples", "Records": [{"Time": 5}]}  # Time is a string
    with mock_aws():
        writer = clients.client("timestream-write")
        assert clients.client("timestream-write") is writer  # one per service and region
        with pytest.raises(ClientError):  # sent: Timestream (here moto) answers for itself
            writer.write_records(**bad)
        # Every other service keeps botocore's check: their calls are few and built by hand.
        with pytest.raises(ParamValidationError):
            clients.client("ec2").describe_instances(InstanceIds="i-1")
