"""CloudWatch keeps sub-minute data 3 hours, 60 s data 15 days, 300 s data 63 days, then 3600 s:
collect asks for the finest period still retained for the step's window and records it per row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchfleet.aws.steps import cloudwatch as cw

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("age", "period"), [
    (timedelta(hours=2, minutes=59), 1), (timedelta(hours=3), 60), (timedelta(days=14, hours=23), 60),
    (timedelta(days=15), 300), (timedelta(days=62), 300), (timedelta(days=63), 3600), (timedelta(days=400), 3600),
])
def test_the_finest_retained_period_for_the_windows_age(age, period):
    assert cw.retained_period(1, NOW - age, NOW) == period


def test_a_metric_never_gets_finer_than_its_own_period():
    assert cw.retained_period(300, NOW - timedelta(minutes=10), NOW) == 300


class RecordingCloudWatch:
    """GetMetricData through its paginator: records each query's period, returns one point each, at
    the start of the step (the query's start is padded)."""

    def __init__(self) -> None:
        self.periods: dict[str, int] = {}

    def get_paginator(self, name: str):
        assert name == "get_metric_data"
        return self

    def paginate(self, MetricDataQueries, StartTime, EndTime, ScanBy):
        for q in MetricDataQueries:
            self.periods[q["MetricStat"]["Metric"]["MetricName"]] = q["MetricStat"]["Period"]
        yield {"MetricDataResults": [{"Id": q["Id"], "Timestamps": [StartTime + cw.PAD], "Values": [1.0]}
                                     for q in MetricDataQueries]}


def window(age: timedelta) -> tuple[RecordingCloudWatch, list]:
    client = RecordingCloudWatch()
    qs = cw.queries("ec2", {"instance_id": "i-0123456789abcdef0", "instance_type": "t3.large"}, {})
    start = NOW - age
    rows = cw.step_window(client, qs=qs, start=start, end=start + timedelta(hours=4), run_id="r1",
                          target_id="t", repetition=1, step="measure", now=NOW)
    return client, rows


def test_a_recent_window_reads_steal_at_1_s():
    client, rows = window(timedelta(minutes=30))
    assert client.periods == {"cpu_usage_steal": 1, "CPUCreditBalance": 300}
    assert {r.metric: r.period_s for r in rows} == {"cpu_usage_steal": 1, "CPUCreditBalance": 300}


def test_a_4_hour_step_collected_at_its_end_reads_steal_at_60_s_and_says_so():
    # steal-soak: a 4 h step is collected when it ends; its window starts 4 h (+ padding) ago.
    client, rows = window(timedelta(hours=4))
    assert client.periods["cpu_usage_steal"] == 60
    assert {r.metric: r.period_s for r in rows}["cpu_usage_steal"] == 60
