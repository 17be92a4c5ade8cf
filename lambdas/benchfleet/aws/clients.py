"""boto3 clients for the handlers. Adapters never create clients: handlers pass these in.

One client per service per process, created under a lock (creating clients is not thread safe,
using them is; the offline state machine runs Map iterations in threads). Tests replace a service
with ``override`` to fake what moto lacks or to inject faults.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3

_lock = threading.Lock()
_cache: dict[str, Any] = {}
_overrides: dict[str, Callable[[], Any]] = {}


def client(service: str) -> Any:
    if service in _overrides:
        return _overrides[service]()
    with _lock:
        if service not in _cache:
            _cache[service] = boto3.session.Session().client(service)  # type: ignore[call-overload]
        return _cache[service]


def override(service: str, factory: Callable[[], Any] | None) -> None:
    """Tests only: serve ``service`` from ``factory`` (None restores boto3)."""
    if factory is None:
        _overrides.pop(service, None)
    else:
        _overrides[service] = factory


def reset() -> None:
    """Forget overrides and cached clients (tests: around each moto context)."""
    with _lock:
        _overrides.clear()
        _cache.clear()
