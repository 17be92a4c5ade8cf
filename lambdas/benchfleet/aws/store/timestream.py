"""The data model as Timestream multi-measure records, written in WriteRecords requests.

Tables (one database, TIMESTREAM_DATABASE): samples, step_summaries, cloud_metrics, status_samples.
Dimensions are
what a row is grouped by (run, target, repetition, workload, step, phase, threads, and the variant in a
spec with variants); every figure is
a measure of one multi-measure record per row, named after the row kind. Missing figures (a CPU
share where there is no /proc) are left out: a multi-measure record cannot hold a null.
``status_samples`` holds one record per status row, its ``source`` (a server, a cluster node, a proxy's
backend) and ``counter`` dimensions beside the step's: the same long shape as the Athena table, so a
spec's own choice of counters needs no schema, and the records of one counter of one source share
their dimensions in a request.

The record builders (``sample_record``...) make whole records; ``write_requests`` sends the
attributes a batch shares (dimensions, measure name, value type, time unit) once, as the request's
CommonAttributes, and each record carries only its Time and MeasureValues. Timestream meters a
request by its size: ``write_units`` is that metering, used by the writer's tests and by the
control-plane estimate (benchfleet.aws.planning.controlplane).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchfleet.workload.records import Sample, StatusSample, StepSummary

MAX_RECORDS_PER_WRITE = 100  # WriteRecords' limit (moto accepts more: checked here)
# Timestream for LiveAnalytics quotas (developer guide, "Quotas" > "Service limits",
# https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html): a record is at most
# 2 KB; they name no limit on a request's bytes, which its 100 records of at most 2 KB each bound.
MAX_RECORD_BYTES = 2048
TABLE_SAMPLES = "samples"
TABLE_SUMMARIES = "step_summaries"
TABLE_CLOUD = "cloud_metrics"
TABLE_STATUS = "status_samples"
_DIMENSIONS = ("run_id", "target_id", "repetition", "workload", "step", "phase", "threads")
NO_VARIANT = "-"


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
    if "variant" in data:
        # Every sample and summary carries its variant as a dimension, so that the column exists for the
        # dataset queries. Timestream takes no empty dimension value: a row without a variant is written
        # NO_VARIANT, which no variant id can be (ids are slugs); the queries read it back as ''.
        dimensions = [*dimensions, "variant"]
        data["variant"] = data["variant"] or NO_VARIANT
    dims = [{"Name": d, "Value": str(data[d])} for d in dimensions]
    skip = {"time", "variant", *dimensions}
    for key, value in data.items():  # a variant's settings, a latency distribution, go-tpc's rates per type
        if isinstance(value, dict):  # as JSON text (VARCHAR)
            data[key] = json.dumps(value, sort_keys=True, separators=(",", ":"))
    measures = [m for k, v in data.items() if k not in skip and (m := _measure(k, v)) is not None]
    return {"Dimensions": dims, "MeasureName": measure_name, "MeasureValueType": "MULTI",
            "MeasureValues": measures, "Time": _millis(data["time"]), "TimeUnit": "MILLISECONDS"}


def sample_record(sample: Sample) -> dict[str, Any]:
    return _record(sample, "sample", _DIMENSIONS)


def summary_record(summary: StepSummary, margin_pct: float | None = None) -> dict[str, Any]:
    """One step summary; ``margin_pct``, the spec's equivalence margin, rides along as a measure:
    Timestream holds no run metadata, and the dataset's verdict words are judged by it."""
    record = _record(summary, "summary", _DIMENSIONS)
    if margin_pct is not None:
        record["MeasureValues"].append(_measure("margin_pct", float(margin_pct)))
    return record


def status_record(row: StatusSample) -> dict[str, Any]:
    """One status row: dimensions name the step, the source and the counter; measures are the value,
    the rate (when there is one) and the step's second."""
    return _record(row, "status", (*_DIMENSIONS, "source", "counter"))


def cloud_record(metric: CloudMetric) -> dict[str, Any]:
    record = _record(metric, metric.metric, ("run_id", "target_id", "repetition", "step"))
    record["MeasureValues"] = [m for m in record["MeasureValues"] if m["Name"] in ("value", "unit", "period_s")]
    return record


# ---- requests and their metering ----------------------------------------------------------------
#
# Metering (developer guide, "Metering and cost optimization" > "Writes",
# https://docs.aws.amazon.com/timestream/latest/developerguide/metering-and-pricing.writes.html):
# an event's write size is its timestamp (8 bytes) plus the UTF-8 length of each dimension name,
# dimension value and measure name, plus each measure value (8 bytes for BIGINT and DOUBLE, 1 for
# BOOLEAN, its UTF-8 length for VARCHAR). Writes are counted in units of 1 KiB of a request: its
# example batches 12 events of 83 bytes into one write, 100 of them into 9; and attributes sent once
# in a request's CommonAttributes count once for the request, not once per record (the same 100
# events with their region, az, vpc and measure name common: 4 writes).
WRITE_UNIT_BYTES = 1024
_FIXED_VALUE_BYTES = {"BIGINT": 8, "DOUBLE": 8, "TIMESTAMP": 8, "BOOLEAN": 1}
# What a batch's records share, sent once per request: every record of one table and step has the
# same dimensions and measure name (a cloud_metrics record's measure name is its metric).
COMMON_KEYS = ("Dimensions", "MeasureName", "MeasureValueType", "TimeUnit")


def _utf8(text: str) -> int:
    return len(text.encode())


def _value_bytes(value: str, value_type: str) -> int:
    return _FIXED_VALUE_BYTES.get(value_type) or _utf8(value)  # VARCHAR: its length


def metered_bytes(attributes: Mapping[str, Any], value_type: str = "DOUBLE") -> int:
    """The metered size of a record, or of a request's CommonAttributes (``value_type``: a
    single-measure value's type when the record leaves it to the CommonAttributes)."""
    size = 8 if "Time" in attributes else 0
    size += sum(_utf8(d["Name"]) + _utf8(d["Value"]) for d in attributes.get("Dimensions", ()))
    if "MeasureName" in attributes:
        size += _utf8(attributes["MeasureName"])
    if "MeasureValue" in attributes:
        size += _value_bytes(attributes["MeasureValue"], attributes.get("MeasureValueType", value_type))
    size += sum(_utf8(m["Name"]) + _value_bytes(m["Value"], m["Type"]) for m in attributes.get("MeasureValues", ()))
    return size


def _units(total_bytes: int) -> int:
    return math.ceil(total_bytes / WRITE_UNIT_BYTES)


def write_units(request: Mapping[str, Any]) -> int:
    """The writes one WriteRecords request is billed: its CommonAttributes once plus every record,
    in 1 KiB units."""
    common = request.get("CommonAttributes") or {}
    value_type = common.get("MeasureValueType", "DOUBLE")
    return _units(metered_bytes(common) + sum(metered_bytes(r, value_type) for r in request["Records"]))


@dataclass(frozen=True)
class Writes:
    """WriteRecords requests, the records they carry and the write units they are billed."""

    requests: int = 0
    records: int = 0
    units: int = 0

    def __add__(self, other: Writes) -> Writes:
        return Writes(self.requests + other.requests, self.records + other.records, self.units + other.units)

    def times(self, n: int) -> Writes:
        return Writes(self.requests * n, self.records * n, self.units * n)


def writes_of(requests: Iterable[Mapping[str, Any]]) -> Writes:
    total = Writes()
    for r in requests:
        total += Writes(1, len(r["Records"]), write_units(r))
    return total


def _split(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the attributes a batch shares, the record's own: Time and MeasureValues)."""
    size = metered_bytes(record)
    if size > MAX_RECORD_BYTES:
        raise ValueError(f"a Timestream record holds at most {MAX_RECORD_BYTES} bytes; this "
                         f"{record.get('MeasureName')} record has {size}")
    return ({k: record[k] for k in COMMON_KEYS}, {k: v for k, v in record.items() if k not in COMMON_KEYS})


def write_requests(table: str, records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """WriteRecords requests (all but DatabaseName) for whole records: records sharing dimensions and
    measure name go together, at most 100 a request, with what they share as the CommonAttributes."""
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for record in records:
        common, own = _split(record)
        key = (*((d["Name"], d["Value"]) for d in common["Dimensions"]),
               common["MeasureName"], common["MeasureValueType"], common["TimeUnit"])
        groups.setdefault(key, (common, []))[1].append(own)
    return [{"TableName": table, "CommonAttributes": common, "Records": own[i:i + MAX_RECORDS_PER_WRITE]}
            for common, own in groups.values() for i in range(0, len(own), MAX_RECORDS_PER_WRITE)]


def repeated_writes(table: str, record: Mapping[str, Any], n: int,
                    first: Mapping[str, Any] | None = None) -> Writes:
    """What ``write_requests(table, [first or record] + [record] * (n - 1))`` costs, without building n
    records (a plan of hundreds of targets and day-long steps estimates millions): full requests of
    100 and the rest. ``first``: a first record of another size with the same common attributes (a
    status counter's first reading has no rate)."""
    if n <= 0:
        return Writes()
    (request,) = write_requests(table, [record])
    common, own = metered_bytes(request["CommonAttributes"]), metered_bytes(request["Records"][0])
    lead = own if first is None else metered_bytes(write_requests(table, [first])[0]["Records"][0])
    full, rest = divmod(n, MAX_RECORDS_PER_WRITE)
    if not full:
        return Writes(1, rest, _units(common + (rest - 1) * own + lead))
    writes = Writes(1, MAX_RECORDS_PER_WRITE, _units(common + (MAX_RECORDS_PER_WRITE - 1) * own + lead))
    writes += Writes(1, MAX_RECORDS_PER_WRITE, _units(common + MAX_RECORDS_PER_WRITE * own)).times(full - 1)
    return writes + (Writes(1, rest, _units(common + rest * own)) if rest else Writes())
