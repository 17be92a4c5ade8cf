"""The data model as Timestream multi-measure records, written in batches of at most 100.

Tables (one database, TIMESTREAM_DATABASE): samples, step_summaries, cloud_metrics. Dimensions are
what a row is grouped by (run, target, repetition, workload, step, phase, threads); every figure is
a measure of one multi-measure record per row, named after the row kind. Missing figures (a CPU
share where there is no /proc) are left out: a multi-measure record cannot hold a null.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchfleet.records import Sample, StepSummary

MAX_RECORDS_PER_WRITE = 100  # WriteRecords' limit (moto accepts more: checked here)
TABLE_SAMPLES = "samples"
TABLE_SUMMARIES = "step_summaries"
TABLE_CLOUD = "cloud_metrics"
_DIMENSIONS = ("run_id", "target_id", "repetition", "workload", "step", "phase", "threads")


class CloudMetric(BaseModel):
    """One CloudWatch datapoint of a step's window (cloud_metrics)."""

    model_config = ConfigDict(frozen=True)

    time: datetime
    run_id: str
    target_id: str
    repetition: int
    step: str
    metric: str
    value: float
    unit: str
    # The CloudWatch period of this point, s (the finest still retained when collected).
    period_s: int


def _millis(ts: datetime) -> str:
    return str(int(ts.timestamp() * 1000))


def _measure(name: str, value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return {"Name": name, "Value": str(value).lower(), "Type": "BOOLEAN"}
    if isinstance(value, int):
        return {"Name": name, "Value": str(value), "Type": "BIGINT"}
    if isinstance(value, float):
        return {"Name": name, "Value": repr(value), "Type": "DOUBLE"}
    return {"Name": name, "Value": str(value), "Type": "VARCHAR"}


def _record(row: BaseModel, measure_name: str, dimensions: Iterable[str]) -> dict[str, Any]:
    data = row.model_dump()
    dims = [{"Name": d, "Value": str(data[d])} for d in dimensions]
    skip = {"time", *dimensions}
    measures = [m for k, v in data.items() if k not in skip and (m := _measure(k, v)) is not None]
    return {"Dimensions": dims, "MeasureName": measure_name, "MeasureValueType": "MULTI",
            "MeasureValues": measures, "Time": _millis(data["time"]), "TimeUnit": "MILLISECONDS"}


def sample_record(sample: Sample) -> dict[str, Any]:
    return _record(sample, "sample", _DIMENSIONS)


def summary_record(summary: StepSummary) -> dict[str, Any]:
    return _record(summary, "summary", _DIMENSIONS)


def cloud_record(metric: CloudMetric) -> dict[str, Any]:
    record = _record(metric, metric.metric, ("run_id", "target_id", "repetition", "step"))
    record["MeasureValues"] = [m for m in record["MeasureValues"] if m["Name"] in ("value", "unit", "period_s")]
    return record


def batches(records: list[dict[str, Any]], size: int = MAX_RECORDS_PER_WRITE) -> Iterator[list[dict[str, Any]]]:
    if not 1 <= size <= MAX_RECORDS_PER_WRITE:
        raise ValueError(f"a WriteRecords batch holds 1..{MAX_RECORDS_PER_WRITE} records, not {size}")
    for start in range(0, len(records), size):
        yield records[start:start + size]
