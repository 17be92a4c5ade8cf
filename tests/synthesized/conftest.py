"""The synthesized tier: checks that read what `cdk synth` deploys (one synth per session)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import Template, synthesize

# Scheduled comparisons as an operator would configure them (cdk/README.md, context `schedules`):
# a spec naming its workload (YAML) and one with the workload inline (JSON).
SCHEDULES = [
    {"name": "nightly-durability", "expression": "cron(0 2 * * ? *)",
     "spec": "workloads/comparisons/demo-durability.yaml", "timezone": "Europe/Paris"},
    {"name": "weekly-fixture", "expression": "rate(7 days)", "spec": "tests/cdk/fixtures/nightly-spec.json"},
]


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return Template(synthesize(tmp_path_factory.mktemp("cdk.out"), {"schedules": SCHEDULES}))
