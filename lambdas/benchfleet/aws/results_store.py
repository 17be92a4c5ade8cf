"""Where collected rows go: a small interface, so that the store can be Timestream or S3 + Athena.

RESULTS_STORE selects the implementation (timestream | athena). The Athena store lives in
benchfleet/aws/athena_store.py and exposes ``from_settings(settings, client) -> ResultsStore``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from benchfleet.aws.errors import aws_errors
from benchfleet.aws.settings import Settings
from benchfleet.aws.timestream import (
    TABLE_CLOUD,
    TABLE_SAMPLES,
    TABLE_SUMMARIES,
    CloudMetric,
    batches,
    cloud_record,
    sample_record,
    summary_record,
)
from benchfleet.records import Sample, StepSummary

ClientFactory = Callable[[str], Any]


class ResultsStore(Protocol):
    """Each write returns how many rows it stored; writing the same rows twice is harmless."""

    def write_samples(self, samples: Sequence[Sample]) -> int: ...
    def write_summaries(self, summaries: Sequence[StepSummary]) -> int: ...
    def write_cloud_metrics(self, metrics: Sequence[CloudMetric]) -> int: ...


class TimestreamStore:
    """Timestream for LiveAnalytics. A retried write rewrites identical records, which Timestream
    accepts (same dimensions, time and measures), so a retried collect does not duplicate rows."""

    def __init__(self, client: Any, database: str) -> None:
        self.client = client
        self.database = database
        self.write_calls = 0
        self.records_written = 0

    def _write(self, table: str, records: list[dict[str, Any]]) -> int:
        for batch in batches(records):
            with aws_errors():
                self.client.write_records(DatabaseName=self.database, TableName=table, Records=batch)
            self.write_calls += 1
            self.records_written += len(batch)
        return len(records)

    def write_samples(self, samples: Sequence[Sample]) -> int:
        return self._write(TABLE_SAMPLES, [sample_record(s) for s in samples])

    def write_summaries(self, summaries: Sequence[StepSummary]) -> int:
        return self._write(TABLE_SUMMARIES, [summary_record(s) for s in summaries])

    def write_cloud_metrics(self, metrics: Sequence[CloudMetric]) -> int:
        return self._write(TABLE_CLOUD, [cloud_record(m) for m in metrics])


def store_from_settings(settings: Settings, client: ClientFactory) -> ResultsStore:
    if settings.results_store == "timestream":
        if not settings.timestream_database:
            raise ValueError("RESULTS_STORE=timestream needs TIMESTREAM_DATABASE")
        return TimestreamStore(client("timestream-write"), settings.timestream_database)
    if settings.results_store == "athena":
        module = importlib.import_module("benchfleet.aws.athena_store")
        store: ResultsStore = module.from_settings(settings, client)
        return store
    raise ValueError(f"RESULTS_STORE must be timestream or athena, not {settings.results_store!r}")
