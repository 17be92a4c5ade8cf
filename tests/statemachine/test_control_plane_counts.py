"""The control-plane estimate counts what the deployed definition really does: the walker
(benchfleet.aws.asl_walk), given the readiness checks a run made, must give exactly the
state transitions (StateEntered events: what Step Functions bills) and Lambda invocations of
moto's recorded execution of statemachines/benchmark-run.asl.json."""

from __future__ import annotations

from collections import Counter

from sm_harness import slow_start, spec

from benchfleet.aws import asl_walk
from benchfleet.aws.controlplane import RepetitionScope, RunScope, StepScope, TargetScope

TWO_TARGETS = [{"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"},
               {"id": "ec2-m6i", "kind": "ec2", "instance_type": "m6i.large"}]


def test_walked_definition_matches_moto_history(harness):
    # Readiness says "not yet" twice (one target's first checks); steps end by callback.
    with slow_start(harness, not_ready=2):
        result = harness.run(spec(targets=TWO_TARGETS, repetitions=2), name="count-transitions")
    assert result["status"] == "SUCCEEDED", harness.explain(result)

    # What the run did, per target x repetition: readiness checks, from the calls.
    ready: Counter[tuple[str, int]] = Counter()
    # Readiness checks name the host, which provision created for one target x repetition.
    host_of = {c.result["instance_id"]: (c.event["target"]["id"], c.event["repetition"])
               for c in harness.calls_of("provision")}
    for call in harness.calls_of("readiness"):
        ready[host_of[call.event["resources"]["instance_id"]]] += 1
    steps = ["prepare", "t0001"]
    scope = RunScope([TargetScope([RepetitionScope([StepScope() for _ in steps], ready[(t["id"], r)])
                                   for r in (1, 2)]) for t in TWO_TARGETS])
    assert sum(ready.values()) == 4 + 2  # the scenario happened

    definition = asl_walk.load_definition()
    counts = asl_walk.walk(definition["States"], definition["StartAt"], scope)
    entered = sum(1 for e in result["history"] if e["type"].endswith("StateEntered"))
    assert counts.transitions == entered
    called = Counter(c.module for c in harness.calls)
    # EventBridge, not the definition, invokes step_callback: once per step (controlplane adds it).
    assert called.pop("step_callback") == len(TWO_TARGETS) * 2 * len(steps)
    assert dict(counts.invocations) == dict(called)
