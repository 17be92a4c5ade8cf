"""Every shipped cloud comparison as a scheduled run (issue 41 item 16): the spec a synthesized
schedule's Input carries is the spec ``benchfleet run --remote`` sends, read the way Plan reads it.

cdk/lib/schedules.ts inlines named workloads in TypeScript at synth; the CLI inlines them with
``benchfleet.spec.loading.LoadedSpec.inline``. A variant's workload left by name made Plan refuse the input at
every firing (``variants[1].workload: 'insert-pk-order-random' is a name``) while ``run --remote`` of
the same file ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from synth import REPO, Template, synthesize

from benchfleet.cli.remote import inline_spec
from benchfleet.spec.loading import inline_loaded, load_spec, parse_spec

COMPARISONS = REPO / "workloads" / "comparisons"
CLOUD_SPECS = [p for p in sorted(COMPARISONS.glob("*.yaml"))
               if all(t.kind != "local" for t in load_spec(p).spec.targets)]


@pytest.fixture(scope="module")
def schedule_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    schedules = [{"name": p.stem, "expression": "cron(0 2 * * ? *)", "spec": str(p.relative_to(REPO))}
                 for p in CLOUD_SPECS]
    template = Template(synthesize(tmp_path_factory.mktemp("cdk.out-schedules"), {"schedules": schedules}))
    inputs = [json.loads(s["Properties"]["Target"]["Input"])
              for s in template.of_type("AWS::Scheduler::Schedule").values()]
    return {i["schedule"]: i for i in inputs}


def as_plan_reads_it(spec: dict[str, Any]) -> dict[str, Any]:
    """What Plan makes of an execution's spec (runplan._loaded's parse), dumped with every workload inline."""
    return inline_loaded(parse_spec(spec, "spec"), "spec").inline()


def test_the_shipped_cloud_specs_include_variants_with_their_own_workload() -> None:
    with_variant_workloads = [p.name for p in CLOUD_SPECS
                              if any(v.get("workload") for v in inline_spec(p).get("variants") or [])]
    assert "aurora-pk-order.yaml" in with_variant_workloads, with_variant_workloads


@pytest.mark.parametrize("path", CLOUD_SPECS, ids=lambda p: Path(p).stem)
def test_a_schedule_sends_what_run_remote_sends(schedule_inputs: dict[str, dict[str, Any]], path: Path) -> None:
    scheduled = schedule_inputs[path.stem]["spec"]
    assert as_plan_reads_it(scheduled) == as_plan_reads_it(inline_spec(path))
