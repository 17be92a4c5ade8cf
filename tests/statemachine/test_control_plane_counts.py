"""The control-plane estimate counts what the deployed definition really does: the walker
(benchfleet.aws.planning.asl_walk), given the readiness checks a run made, must give exactly the
state transitions (StateEntered events: what Step Functions bills) and Lambda invocations of
moto's recorded execution of statemachines/benchmark-run.asl.json."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from sm_harness import slow_start, spec

from benchfleet.aws.fleet import lifecycle
from benchfleet.aws.planning import asl_walk, runplan
from benchfleet.aws.planning.controlplane import RepetitionScope, RunScope, StepScope, TargetScope, expected_scope
from benchfleet.spec.loading import parse_spec, resolve

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


def test_walked_definition_matches_moto_history_where_parameter_groups_settle(harness):
    """rds: provision makes the groups, "Let the new parameter groups settle", provision again for the
    database (issue 41 item 11); the walk takes that branch for rds and aurora only."""
    targets = [{"id": "rds-m6g", "kind": "rds", "instance_class": "db.m6g.large",
                "client": {"instance_type": "c6i.large"}}, TWO_TARGETS[0]]
    result = harness.run(spec(targets=targets, repetitions=1), name="count-settle")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    ready = Counter(c.event["resources"]["kind"] for c in harness.calls_of("readiness"))
    scope = RunScope([TargetScope([RepetitionScope([StepScope(), StepScope()], ready["rds"], settles=True)]),
                      TargetScope([RepetitionScope([StepScope(), StepScope()], ready["ec2"])])])
    definition = asl_walk.load_definition()
    counts = asl_walk.walk(definition["States"], definition["StartAt"], scope)
    assert counts.transitions == sum(1 for e in result["history"] if e["type"].endswith("StateEntered"))
    called = Counter(c.module for c in harness.calls)
    called.pop("step_callback")
    assert dict(counts.invocations) == dict(called) and called["provision"] == 3


def test_the_estimate_counts_the_readiness_checks_the_handler_makes(monkeypatch):
    """The estimate's readiness checks per repetition are those the real readiness handler
    (lifecycle.check_ready) makes, driven as the definition drives it (check; not ready: wait the
    answer's wait_s; check again), for a target ready exactly at its planned provisioning time,
    with the timing the plan puts in the state machine input. (The estimate once assumed a check
    every poll interval: 20 checks for an EC2 host where the handler makes 3.)"""
    targets = [{"id": "e", "kind": "ec2", "instance_type": "m6g.large"},
               {"id": "r", "kind": "rds", "instance_class": "db.r6g.large"},
               {"id": "a", "kind": "aurora", "instance_class": "db.r6g.large"}]
    workload = {"name": "w", "test": "oltp_read_only", "threads": [1], "duration_s": 60, "warmup_s": 0}
    request = runplan.RunRequest(spec={"name": "ready", "workload": workload, "targets": targets})
    planned = runplan.plan_run(request)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = {"now": start}
    for item in planned["targets"]:
        timing = item["timing"]
        clock["ready_at"] = start + timedelta(seconds=timing["provision_s"])
        monkeypatch.setattr(lifecycle.t, "instance_ready", lambda *_: clock["now"] >= clock["ready_at"])
        clock["now"], checks = start, 0
        resources = {"instance_id": "i-0", "provisioned_at": start.strftime("%Y-%m-%dT%H:%M:%SZ")}
        while True:
            checks += 1
            answer = lifecycle.check_ready(None, None, None, None, resources=resources, timing=timing,
                                           attempt=checks, deadline=item["deadline"], now=clock["now"])
            if answer["ready"]:
                break
            clock["now"] += timedelta(seconds=answer["wait_s"])
        assert checks < timing["ready_max_polls"]
        plan = runplan.aws_plan(resolve(parse_spec(request.spec), "ready"))[0]
        target = next(t for t in plan.targets if t.target_id == item["target_id"])
        expected = expected_scope(plan.model_copy(update={"targets": [target]}), runplan.READY_POLL_S)
        assert [r.ready_checks for r in expected.targets[0].repetitions] == [checks], item["kind"]
        assert checks <= 3, (item["kind"], checks)
