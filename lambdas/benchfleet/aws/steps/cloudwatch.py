"""A step's window of CloudWatch metrics -> cloud_metrics rows.

- CWAgent ``cpu_usage_steal`` of the host running the agent (InstanceId + cpu=cpu-total); on DB
  targets that host is the client, so the row is named ``client_cpu_usage_steal``;
- ``CPUCreditBalance`` of burstable (t*) instances and DB classes (5-minute metrics);
- RDS ``WriteLatency`` / ``ReadLatency``, published in seconds, stored in ms;
- Aurora ``CommitLatency`` / ``DMLLatency`` (already ms) by DBClusterIdentifier + Role=WRITER.

CloudWatch keeps data at a period under 60 s for 3 hours, at 60 s for 15 days, at 300 s for 63 days,
then at 3600 s: a query at a finer period than the window's age allows returns no points (a 4 h
step's 1 s steal came back empty). Each query asks for the finest period still retained for the
window's start, never finer than the metric's own, and every row records the period it has.

The query is padded by 5 minutes each side, so a 5-minute metric has a point for a short step; only
the points whose period overlaps the step's own window are stored (a point at ts covers
[ts, ts + period)): a step's 1 s steal rows are its own seconds, never its neighbours'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from benchfleet.aws.errors import aws_errors
from benchfleet.aws.store.timestream import CloudMetric


@dataclass(frozen=True)
class Query:
    name: str          # the cloud_metrics metric name
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    period: int
    unit: str
    scale: float = 1.0


# (age of the data below which it is kept, finest period kept) — GetMetricData's retention.
RETENTION: tuple[tuple[timedelta, int], ...] = (
    (timedelta(hours=3), 1), (timedelta(days=15), 60), (timedelta(days=63), 300))
OLDEST_PERIOD_S = 3600
# The query's padding each side of the step: one 5-minute period, so coarse metrics have a point.
PAD = timedelta(minutes=5)


def retained_period(period: int, start: datetime, now: datetime) -> int:
    """The finest period at least ``period`` that CloudWatch still holds for data from ``start``."""
    age = now - start
    finest = next((p for limit, p in RETENTION if age < limit), OLDEST_PERIOD_S)
    return max(period, finest)


def overlaps(ts: datetime, period: int, start: datetime, end: datetime) -> bool:
    """Whether a point at ``ts`` (covering [ts, ts + period)) falls in the window [start, end)."""
    return ts < end and ts + timedelta(seconds=period) > start


def points_overlapping(window_s: float, period: int) -> int:
    """The most points of ``period`` seconds a window of ``window_s`` seconds overlaps: one more than
    fit in it, as a step's window starts at its first sample, never on a period boundary."""
    return math.ceil(window_s / period) + 1


def _burstable(instance_type: str | None) -> bool:
    return bool(instance_type) and str(instance_type).removeprefix("db.").startswith("t")


def queries(kind: str, resources: dict[str, Any], target: dict[str, Any]) -> list[Query]:
    out: list[Query] = []
    host = resources.get("instance_id")
    host_type = resources.get("instance_type") or target.get("instance_type")
    if host:
        steal = "cpu_usage_steal" if kind in ("ec2", "existing") else "client_cpu_usage_steal"
        out.append(Query(steal, "CWAgent", "cpu_usage_steal",
                         (("InstanceId", host), ("cpu", "cpu-total")), 1, "Percent"))
        if _burstable(host_type):
            out.append(Query("CPUCreditBalance" if kind == "ec2" else "client_CPUCreditBalance",
                             "AWS/EC2", "CPUCreditBalance", (("InstanceId", host),), 300, "Credits"))
    db = resources.get("db_instance_id")
    if kind == "rds" and db:
        dims: tuple[tuple[str, str], ...] = (("DBInstanceIdentifier", db),)
        out += [Query("WriteLatency", "AWS/RDS", "WriteLatency", dims, 60, "Milliseconds", 1000.0),
                Query("ReadLatency", "AWS/RDS", "ReadLatency", dims, 60, "Milliseconds", 1000.0)]
    if kind == "aurora" and resources.get("db_cluster_id"):
        dims = (("DBClusterIdentifier", str(resources["db_cluster_id"])), ("Role", "WRITER"))
        out += [Query("CommitLatency", "AWS/RDS", "CommitLatency", dims, 60, "Milliseconds"),
                Query("DMLLatency", "AWS/RDS", "DMLLatency", dims, 60, "Milliseconds")]
    if kind in ("rds", "aurora") and db and _burstable(target.get("instance_class")):
        out.append(Query("CPUCreditBalance", "AWS/RDS", "CPUCreditBalance",
                         (("DBInstanceIdentifier", db),), 300, "Credits"))
    return out


def step_window(cloudwatch: Any, *, qs: list[Query], start: datetime, end: datetime, run_id: str,
                target_id: str, repetition: int, step: str, now: datetime | None = None) -> list[CloudMetric]:
    if not qs:
        return []
    padded_start, padded_end = start - PAD, end + PAD
    now = now or datetime.now(UTC)
    qs = [replace(q, period=retained_period(q.period, padded_start, now)) for q in qs]
    by_id = {f"m{i}": q for i, q in enumerate(qs)}
    data = [{"Id": qid, "ReturnData": True, "MetricStat": {
        "Metric": {"Namespace": q.namespace, "MetricName": q.metric,
                   "Dimensions": [{"Name": k, "Value": v} for k, v in q.dimensions]},
        "Period": q.period, "Stat": "Average"}} for qid, q in by_id.items()]
    rows: list[CloudMetric] = []
    with aws_errors():
        for page in cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=data, StartTime=padded_start, EndTime=padded_end, ScanBy="TimestampAscending"):
            for result in page["MetricDataResults"]:
                q = by_id[result["Id"]]
                for ts, value in zip(result["Timestamps"], result["Values"], strict=True):
                    if not overlaps(ts, q.period, start, end):
                        continue  # the padding's: a neighbouring step's, or before the run
                    rows.append(CloudMetric(time=ts, run_id=run_id, target_id=target_id, repetition=repetition,
                                            step=step, metric=q.name, value=round(value * q.scale, 6),
                                            unit=q.unit, period_s=q.period))
    return rows
