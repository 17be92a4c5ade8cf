"""boto3 clients for the handlers. Adapters never create clients: handlers pass these in.

One cache per thread (boto3 sessions are not thread safe; the offline state machine runs Map
iterations in threads). Tests replace a service with ``override`` to fake what moto lacks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3

_local = threading.local()
_overrides: dict[str, Callable[[], Any]] = {}


def client(service: str) -> Any:
    if service in _overrides:
        return _overrides[service]()
    cache: dict[str, Any] | None = getattr(_local, "clients", None)
    if cache is None:
        cache = _local.clients = {}
    if service not in cache:
        cache[service] = boto3.session.Session().client(service)  # type: ignore[call-overload]
    return cache[service]


def override(service: str, factory: Callable[[], Any] | None) -> None:
    """Tests only: serve ``service`` from ``factory`` (None restores boto3)."""
    if factory is None:
        _overrides.pop(service, None)
    else:
        _overrides[service] = factory


def reset() -> None:
    """Forget cached clients (tests: after entering a new moto context)."""
    _overrides.clear()
    _local.__dict__.clear()
