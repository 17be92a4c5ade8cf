"""WriteRecords requests read as Timestream reads them, for tests stricter than moto: moto keeps a
request's records as sent and ignores its CommonAttributes; Timestream merges those into every
record and refuses a request that would make a record with a dimension twice."""

from __future__ import annotations

from typing import Any

from benchfleet.aws.store import timestream

# The data model's dimensions per table (DESIGN.md "Data model"; the Timestream dataset SQL in
# cdk/lib/sql/timestream/ groups and filters by them).
TABLE_DIMENSIONS = {
    "samples": {"run_id", "target_id", "repetition", "workload", "step", "phase", "threads", "variant"},
    "status_samples": {"run_id", "target_id", "repetition", "workload", "step", "phase", "threads", "variant",
                       "source", "counter"},
    "step_summaries": {"run_id", "target_id", "repetition", "workload", "step", "phase", "threads", "variant"},
    "cloud_metrics": {"run_id", "target_id", "repetition", "step"},
}


def stored_records(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of one WriteRecords request as Timestream stores them: each merged with the
    request's CommonAttributes."""
    assert len(request["Records"]) <= timestream.MAX_RECORDS_PER_WRITE, "WriteRecords takes at most 100 records"
    common = request.get("CommonAttributes") or {}
    stored = []
    for record in request["Records"]:
        shared = {d["Name"] for d in common.get("Dimensions", [])} & {d["Name"] for d in record.get("Dimensions", [])}
        assert not shared, f"dimensions both common and the record's own: {shared}"
        merged = common | record
        merged["Dimensions"] = [*common.get("Dimensions", []), *record.get("Dimensions", [])]
        stored.append(merged)
    return stored


def dimensions(record: dict[str, Any]) -> dict[str, str]:
    return {d["Name"]: d["Value"] for d in record["Dimensions"]}
