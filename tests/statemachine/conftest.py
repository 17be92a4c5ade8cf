"""The offline-execution harness lives in sm_harness.py (its docstring describes the moto seam)."""

from sm_harness import _world, harness  # noqa: F401 - fixtures
