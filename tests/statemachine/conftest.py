"""The offline-execution harness lives in sm_harness.py (its docstring describes the moto seam)."""

from sm_harness import harness  # noqa: F401 - the fixture
