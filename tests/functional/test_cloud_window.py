"""A step's cloud_metrics are its own window's points: the GetMetricData query is padded by 5
minutes each side (so a 5-minute metric has a point for a short step), the rows are not (moto's
CloudWatch: points bucketed by the query's period from its start)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws.steps import cloudwatch as cw

T0 = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
HOST = "i-0123456789abcdef0"
COOLDOWN = timedelta(seconds=30)


@pytest.fixture
def cloudwatch():
    with mock_aws():
        client = boto3.client("cloudwatch", region_name="us-east-1")
        # CWAgent's 1 s steal from 10 minutes before the first step to after the second, the value
        # being the second it was taken; CPUCreditBalance every 5 minutes.
        steal = [{"MetricName": "cpu_usage_steal", "Timestamp": T0 + timedelta(seconds=s), "Value": float(s),
                  "Unit": "Percent", "StorageResolution": 1,
                  "Dimensions": [{"Name": "InstanceId", "Value": HOST}, {"Name": "cpu", "Value": "cpu-total"}]}
                 for s in range(-600, 1300)]
        for i in range(0, len(steal), 500):
            client.put_metric_data(Namespace="CWAgent", MetricData=steal[i:i + 500])
        client.put_metric_data(Namespace="AWS/EC2", MetricData=[
            {"MetricName": "CPUCreditBalance", "Timestamp": T0 + timedelta(minutes=m), "Value": 100.0 + m,
             "Unit": "Count", "Dimensions": [{"Name": "InstanceId", "Value": HOST}]} for m in range(-10, 25, 5)])
        yield client


def window(client, start: datetime, end: datetime, step: str) -> list[cw.CloudMetric]:
    qs = cw.queries("ec2", {"instance_id": HOST, "instance_type": "t3.large"}, {})
    return cw.step_window(client, qs=qs, start=start, end=end, run_id="r", target_id="t3", repetition=1,
                          step=step, now=T0 + timedelta(hours=1))


def test_each_step_stores_its_own_seconds_and_the_5_minute_points_it_overlaps(cloudwatch):
    # Two 300 s steps, 30 s apart; a step's window starts at its first sample (mid-second).
    a_start = T0 + timedelta(seconds=0.25)
    a_end = a_start + timedelta(seconds=300)
    b_start = a_end + COOLDOWN
    a = window(cloudwatch, a_start, a_end, "t0001")
    b = window(cloudwatch, b_start, b_start + timedelta(seconds=300), "t0002")

    def seconds(rows: list[cw.CloudMetric]) -> list[float]:
        return [r.value for r in rows if r.metric == "cpu_usage_steal"]

    # The seconds a window touches: 0..300 (its first and last partly), each once, each its own value.
    assert seconds(a) == [float(s) for s in range(0, 301)]
    assert len(seconds(a)) == cw.points_overlapping(300, 1)
    assert seconds(b) == [float(s) for s in range(330, 631)]
    assert not set(seconds(a)) & set(seconds(b))
    # CPUCreditBalance (5-minute, the query's period): the points whose 5 minutes overlap the step.
    credit = [(r.time, r.period_s) for r in a if r.metric == "CPUCreditBalance"]
    assert [p for _, p in credit] == [300, 300] and len(credit) <= cw.points_overlapping(300, 300)
    assert all(cw.overlaps(t, 300, a_start, a_end) for t, _ in credit)
    # A step shorter than 5 minutes still gets the 5-minute point it falls in.
    short = window(cloudwatch, T0 + timedelta(seconds=60.5), T0 + timedelta(seconds=90.5), "t0004")
    (point,) = [r for r in short if r.metric == "CPUCreditBalance"]
    assert cw.overlaps(point.time, 300, T0 + timedelta(seconds=60.5), T0 + timedelta(seconds=90.5))
    assert seconds(short) == [float(s) for s in range(60, 91)]
