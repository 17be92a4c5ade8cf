"""Where collected rows go: a small interface, so that the store can be Timestream or S3 + Athena.

RESULTS_STORE selects the implementation (timestream | athena). The Athena store lives in
benchfleet/aws/store/athena_store.py and exposes ``from_settings(settings, client) -> ResultsStore``.

Run and target metadata: S3 holds it for every store (collect writes each repetition's target row
to ``runs/<id>/<target>/rep-<n>/target.json``; summarize writes ``runs/<id>/spec.json``,
``targets.json`` and ``summary.json``). ``write_targets`` / ``write_run`` add it to the store where
the store has tables for it (Athena's ``targets`` and ``runs``, which its dashboards join on);
Timestream has none, so there they write nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from benchfleet.aws.errors import aws_errors
from benchfleet.aws.settings import Settings
from benchfleet.aws.store.timestream import (
    TABLE_CLOUD,
    TABLE_SAMPLES,
    TABLE_STATUS,
    TABLE_SUMMARIES,
    CloudMetric,
    cloud_record,
    sample_record,
    status_record,
    summary_record,
    write_requests,
)
from benchfleet.workload.records import Sample, StatusSample, StepSummary

ClientFactory = Callable[[str], Any]


class ResultsStore(Protocol):
    """Each write returns how many rows it stored; writing the same rows twice is harmless."""

    def write_samples(self, samples: Sequence[Sample]) -> int: ...
    def write_status(self, rows: Sequence[StatusSample]) -> int: ...
    # margin_pct: the spec's equivalence margin, for a store that holds no run row (Timestream).
    def write_summaries(self, summaries: Sequence[StepSummary], margin_pct: float | None = None) -> int: ...
    def write_cloud_metrics(self, metrics: Sequence[CloudMetric]) -> int: ...
    def write_targets(self, targets: Sequence[Mapping[str, Any]]) -> list[str]: ...
    def write_run(self, run: Mapping[str, Any]) -> str | None: ...


class TimestreamStore:
    """Timestream for LiveAnalytics. A retried write rewrites identical records, which Timestream
    accepts (same dimensions, time and measures), so a retried collect does not duplicate rows.
    Each request sends what its records share once (``timestream.write_requests``): Timestream
    bills a request by its bytes."""

    def __init__(self, client: Any, database: str) -> None:
        self.client = client
        self.database = database

    def _write(self, table: str, records: list[dict[str, Any]]) -> int:
        for request in write_requests(table, records):
            with aws_errors():
                self.client.write_records(DatabaseName=self.database, **request)
        return len(records)

    def write_samples(self, samples: Sequence[Sample]) -> int:
        return self._write(TABLE_SAMPLES, [sample_record(s) for s in samples])

    def write_status(self, rows: Sequence[StatusSample]) -> int:
        return self._write(TABLE_STATUS, [status_record(r) for r in rows])

    def write_summaries(self, summaries: Sequence[StepSummary], margin_pct: float | None = None) -> int:
        return self._write(TABLE_SUMMARIES, [summary_record(s, margin_pct) for s in summaries])

    def write_cloud_metrics(self, metrics: Sequence[CloudMetric]) -> int:
        return self._write(TABLE_CLOUD, [cloud_record(m) for m in metrics])

    def write_targets(self, targets: Sequence[Mapping[str, Any]]) -> list[str]:
        """No targets table in Timestream: the rows stay in S3 (runs/<id>/.../target.json, targets.json)."""
        return []

    def write_run(self, run: Mapping[str, Any]) -> str | None:
        """No runs table in Timestream: the run is runs/<id>/summary.json and spec.json in S3."""
        return None


def store_from_settings(settings: Settings, client: ClientFactory) -> ResultsStore:
    if settings.results_store == "timestream":
        if not settings.timestream_database:
            raise ValueError("RESULTS_STORE=timestream needs TIMESTREAM_DATABASE")
        return TimestreamStore(client("timestream-write"), settings.timestream_database)
    if settings.results_store == "athena":
        module = importlib.import_module("benchfleet.aws.store.athena_store")
        store: ResultsStore = module.from_settings(settings, client)
        return store
    raise ValueError(f"RESULTS_STORE must be timestream or athena, not {settings.results_store!r}")
