"""Timestream's write metering (developer guide, "Metering and cost optimization" > "Writes") and
the requests the store builds: what a batch shares is sent once, as its CommonAttributes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchfleet.aws.store import timestream as ts
from benchfleet.workload.records import parse_agent_lines

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "agent" / "t0001.jsonl"
T0 = datetime(2026, 11, 22, tzinfo=UTC)


def cpu_event(host: str) -> dict:
    """The guide's example: an EC2 instance's CPU utilization, 83 bytes."""
    return {"Dimensions": [{"Name": "region", "Value": "us-east-1"}, {"Name": "az", "Value": "1d"},
                           {"Name": "vpc", "Value": "vpc-1a2b3c4d"}, {"Name": "hostname", "Value": host}],
            "MeasureName": "cpu_utilization", "MeasureValue": "35.0", "MeasureValueType": "DOUBLE",
            "Time": "1602983435238563000", "TimeUnit": "NANOSECONDS"}


def test_the_guides_worked_examples():
    assert ts.metered_bytes(cpu_event("host-24Gju")) == 83
    # One event per request: 100 writes; batched: 12 events in one write, 100 events in 9.
    assert ts.write_units({"Records": [cpu_event("host-24Gju")]}) == 1
    assert ts.write_units({"Records": [cpu_event(f"host-{i:05d}") for i in range(12)]}) == 1
    assert ts.write_units({"Records": [cpu_event(f"host-{i:05d}") for i in range(100)]}) == 9
    # Region, az, vpc and the measure name common to the 100 events: sent once, 4 writes.
    common = {"Dimensions": cpu_event("")["Dimensions"][:3], "MeasureName": "cpu_utilization",
              "MeasureValueType": "DOUBLE"}
    own = [{"Dimensions": [{"Name": "hostname", "Value": f"host-{i:05d}"}], "MeasureValue": "35.0",
            "Time": "1602983435238563000"} for i in range(100)]
    assert ts.metered_bytes(common) == 15 + 4 + 15 + 15 and ts.metered_bytes(own[0]) == 8 + 18 + 8
    assert ts.write_units({"CommonAttributes": common, "Records": own}) == 4


def test_multi_measure_values_count_name_and_value_by_type():
    record = {"MeasureName": "m", "MeasureValueType": "MULTI", "Time": "1", "TimeUnit": "MILLISECONDS",
              "Dimensions": [], "MeasureValues": [{"Name": "a", "Value": "1.5", "Type": "DOUBLE"},
                                                  {"Name": "bb", "Value": "12345678901", "Type": "BIGINT"},
                                                  {"Name": "c", "Value": "true", "Type": "BOOLEAN"},
                                                  {"Name": "dé", "Value": "1.0.20", "Type": "VARCHAR"}]}
    assert ts.metered_bytes(record) == 8 + 1 + (1 + 8) + (2 + 8) + (1 + 1) + (3 + 6)


def rows():
    return parse_agent_lines(FIXTURE.read_text(), str(FIXTURE))


def merged(request: dict) -> list[dict]:
    """The records as Timestream stores them: each with the request's CommonAttributes."""
    return [request["CommonAttributes"] | record for record in request["Records"]]


def test_requests_send_what_a_step_shares_once_and_lose_nothing():
    out = rows()
    records = [ts.sample_record(s) for s in out.samples]
    requests = ts.write_requests(ts.TABLE_SAMPLES, records)
    # The step's first report is its ramp (a phase, so dimensions, of its own): a request of its own.
    assert [len(r["Records"]) for r in requests] == [1, 100, 100, 39]
    assert [m for r in requests for m in merged(r)] == records
    for r in requests:
        assert r["TableName"] == "samples" and set(r["CommonAttributes"]) == set(ts.COMMON_KEYS)
        assert all(set(record) == {"Time", "MeasureValues"} for record in r["Records"])
    # Every record alone carries its 7 dimensions: the common attributes save a fifth of the bytes
    # (the rest are the sample's own measures, the data directory's disk figures included).
    alone = ts.writes_of([{"Records": records}])
    assert ts.writes_of(requests).units < alone.units * 0.8


def test_cloud_metrics_are_batched_per_metric():
    def point(metric: str, i: int) -> ts.CloudMetric:
        return ts.CloudMetric(time=T0 + timedelta(seconds=i), run_id="r", target_id="t", repetition=1, step="s",
                              metric=metric, value=1.0, unit="Percent", period_s=1)

    metrics = [point("cpu_usage_steal", i) for i in range(150)] + [point("CPUCreditBalance", 0)]
    requests = ts.write_requests(ts.TABLE_CLOUD, [ts.cloud_record(m) for m in metrics])
    assert [(r["CommonAttributes"]["MeasureName"], len(r["Records"])) for r in requests] == [
        ("cpu_usage_steal", 100), ("cpu_usage_steal", 50), ("CPUCreditBalance", 1)]
    assert [d["Name"] for d in requests[0]["CommonAttributes"]["Dimensions"]] == [
        "run_id", "target_id", "repetition", "step"]


@pytest.mark.parametrize("n", [1, 40, 99, 100, 101, 240, 1001])
def test_repeated_writes_is_the_batcher_on_n_records(n):
    sample = ts.sample_record(rows().samples[0])
    assert ts.repeated_writes(ts.TABLE_SAMPLES, sample, n) == ts.writes_of(
        ts.write_requests(ts.TABLE_SAMPLES, [sample] * n))
    assert ts.repeated_writes(ts.TABLE_SAMPLES, sample, 0) == ts.Writes()


def test_a_record_over_the_2_kb_quota_is_refused_naming_it():
    record = ts.summary_record(rows().summaries[0])
    record["MeasureValues"] = record["MeasureValues"] + [
        {"Name": f"padding_{i}", "Value": "x" * 100, "Type": "VARCHAR"} for i in range(20)]
    with pytest.raises(ValueError, match=r"at most 2048 bytes; this summary record has \d+"):
        ts.write_requests(ts.TABLE_SUMMARIES, [record])
