"""Collect reads a step's CloudWatch window after the cool-down, so the step's last minute is in it.

The CloudWatch agent on the host (cdk/lib/target-fleet.ts: 1 s steal, force_flush_interval 60)
sends what it has gathered once a minute: when the step's Run Command ends, up to its last 60 s of
steal have not reached CloudWatch yet. Here the harness's agent plays that: at the step's end it
publishes the step's steal but for its last minute, and the last minute goes out during the next
Wait state the execution passes (the flush happens while the machine waits, not instantly). A
collect that ran before that Wait stored the step without its last minute.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import boto3
from sm_harness import spec
from sm_world import FIXTURES, REGION

from benchfleet.aws.planning.controlplane import load_prices
from benchfleet.aws.steps import cloudwatch as cw
from benchfleet.workload.records import parse_agent_lines

# The agent config's force_flush_interval (tests/cdk/control-plane.test.ts holds the synthesized
# config to this figure).
FLUSH_S = load_prices().requests["cloudwatch_agent_flush_s"]


def _fixture_seconds() -> list[datetime]:
    """The seconds the step's samples cover (the captured agent output the harness replays)."""
    times = [s.time for s in parse_agent_lines((FIXTURES / "t0001.jsonl").read_text()).samples]
    first, last = min(times).replace(microsecond=0), max(times)
    return [first + timedelta(seconds=s) for s in range(int((last - first).total_seconds()) + 1)]


def _steal(instance_id: str, seconds: list[datetime]) -> list[dict[str, Any]]:
    return [{"MetricName": "cpu_usage_steal", "Timestamp": ts, "Value": 2.0, "Unit": "Percent",
             "StorageResolution": 1,
             "Dimensions": [{"Name": "InstanceId", "Value": instance_id}, {"Name": "cpu", "Value": "cpu-total"}]}
            for ts in seconds]


def test_collect_reads_the_steps_last_minute_of_steal_flushed_after_it_ended(harness):
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    seconds = _fixture_seconds()
    pending: list[dict[str, Any]] = []
    real_ran = harness.agent.ran

    def ran(event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
        if event["step"]["kind"] != "prepare":
            steal = _steal(result["instance_id"], seconds)
            cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=steal[:-FLUSH_S])
            pending.extend(steal[-FLUSH_S:])  # gathered, not yet flushed
        return real_ran(event, result)

    def flush(_seconds: int) -> None:
        if pending:
            cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=pending)
            pending.clear()

    harness.on_wait.append(flush)
    one = spec(captured_step=True, targets=[{"id": "ec2-tail", "kind": "ec2", "instance_type": "m6g.large"}])
    # As on AWS, collect runs right after the step: CloudWatch still holds its 1 s points (the
    # replayed samples' own timestamps are days old, which would coarsen the query's period).
    with mock.patch.object(harness.agent, "ran", ran), \
            mock.patch.object(cw, "retained_period", lambda period, start, now: period):
        result = harness.run(one, name="cloud-tail")
    assert result["status"] == "SUCCEEDED", harness.explain(result)

    (measured,) = [c.result for c in harness.calls_of("collect") if c.event["step"]["kind"] == "measure"]
    # Every second of the step: the window [first sample, last sample + 1 s) at a 1 s period.
    assert measured["cloud_metrics"] == len(seconds) == 240
    assert not pending
