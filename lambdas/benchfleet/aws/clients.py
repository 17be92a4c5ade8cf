"""boto3 clients for the handlers. Adapters never create clients: handlers pass these in.

One client per service and region per process, created under a lock (creating clients is not thread
safe, using them is; the offline state machine runs Map iterations in threads). ``region`` None is
the Lambda's own (home) region; a target's EC2, RDS, SSM and CloudWatch calls use the target's
region (benchfleet.aws.regions), the results bucket and record store stay at home. Tests replace a
service with ``override`` to fake what moto lacks or to inject faults, in one region or in all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

# Timestream's WriteRecords carries 100 multi-measure records of a dozen or more measures each: botocore
# checks every value of every record against the model in Python before sending (about two thirds of a
# collect's CPU, measured offline: tests/perf/cloud_scale.py). The records are built from typed rows by
# benchfleet.aws.store.timestream, which bounds them as Timestream does (<= 100 a request, <= 2 KB each),
# and Timestream validates what it receives; so that client skips botocore's check.
_CONFIGS: dict[str, Config] = {"timestream-write": Config(parameter_validation=False)}

_lock = threading.Lock()
_cache: dict[tuple[str, str | None], Any] = {}
_overrides: dict[tuple[str, str | None], Callable[[], Any]] = {}


def client(service: str, region: str | None = None) -> Any:
    factory = _overrides.get((service, region)) or _overrides.get((service, None))
    if factory is not None:
        return factory()
    with _lock:
        if (service, region) not in _cache:
            session = boto3.session.Session()
            _cache[(service, region)] = session.client(  # type: ignore[call-overload]
                service, region_name=region, config=config(service))
        return _cache[(service, region)]


def config(service: str) -> Config | None:
    """The botocore configuration the handlers' client of ``service`` is made with (tests make their
    stand-ins' real clients with it too, so they measure what the Lambdas run)."""
    return _CONFIGS.get(service)


def override(service: str, factory: Callable[[], Any] | None, region: str | None = None) -> None:
    """Tests only: serve ``service`` from ``factory`` (None restores boto3), in ``region`` only when
    given, else in every region without an override of its own."""
    if factory is None:
        _overrides.pop((service, region), None)
    else:
        _overrides[(service, region)] = factory


def reset() -> None:
    """Forget overrides and cached clients (tests: around each moto context)."""
    with _lock:
        _overrides.clear()
        _cache.clear()
