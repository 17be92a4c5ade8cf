"""What a run costs in history events, state transitions and Timestream writes, measured on moto's
recorded history; and the arithmetic that keeps a 24-hour soak inside the 25,000-event limit."""

from __future__ import annotations

import math

from sm_harness import slow_start, spec

from benchfleet.aws import history, runplan

ONE_TARGET = [{"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"}]


def entered(events, name):
    return [i for i, e in enumerate(events) if (e.get("stateEnteredEventDetails") or {}).get("name") == name]


def transitions(events):
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def test_events_per_step_and_per_poll_match_the_model(harness, record_property):
    # Readiness answers "not yet" twice, and the measure step is still running at its first 2 polls.
    with slow_start(harness, not_ready=2, running_polls={"t0001": 2}):
        result = harness.run(spec(targets=ONE_TARGET), name="measure-one")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    events = result["history"]

    checks = entered(events, "Check the target")
    assert len(checks) == 3
    assert checks[1] - checks[0] == history.READY_ITERATION == 9

    polls = entered(events, "Check the step")
    starts = entered(events, "Start the step")
    teardown = entered(events, "Tear down the target")[0]
    assert len(polls) == 1 + 3  # prepare: 1 poll; t0001: 3 (2 still running)
    assert polls[3] - polls[2] == history.POLL_ITERATION == 9
    prepare_events = starts[1] - starts[0]
    # From "Start the step" to teardown: minus the steps Map's 2 closing events, plus the iteration start.
    measure_events = teardown - starts[1] - 2 + 1
    assert prepare_events == history.STEP_FIXED + history.POLL_ITERATION * 1
    assert measure_events == history.STEP_FIXED + history.POLL_ITERATION * 3
    # The whole execution, event for event.
    assert len(events) == (history.EXECUTION_FIXED + history.TARGET_FIXED + history.REPETITION_FIXED
                           + history.READY_ITERATION * 3 - history.WAIT
                           + history.STEP_FIXED * 2 + history.POLL_ITERATION * 4)

    step_transitions = transitions(events[starts[0]:starts[1]])
    writes = harness.proxies["timestream-write"].records_per_call
    collects = {c.event["step"]["name"]: c.result for c in harness.calls_of("collect")}
    tables = harness.proxies["timestream-write"].tables_per_call
    # Full batches: every batch of a table write but its last (the remainder).
    full = [n for i, n in enumerate(writes) if i + 1 < len(writes) and tables[i + 1] == tables[i]]
    record_property("events_per_step_one_poll", prepare_events)
    record_property("transitions_per_step_one_poll", step_transitions)
    record_property("write_records_calls", writes)
    print(f"\nhistory events per step (1 poll): {prepare_events}; per extra poll: {history.POLL_ITERATION}; "
          f"state transitions per step (1 poll): {step_transitions}; whole 1-target run: {len(events)} events")
    print(f"WriteRecords per step: prepare 0, t0001 {len(writes)} calls, records per call {writes}")
    assert collects["prepare"]["samples"] == 0 and collects["t0001"]["samples"] == 240
    # t0001: 240 samples -> 100 + 100 + 40, then 1 summary: 4 calls.
    assert writes == [100, 100, 40, 1]
    assert full and sum(full) / len(full) >= 95
    assert tables == ["samples", "samples", "samples", "step_summaries"]


def soak(targets: list[dict], hours: int = 24) -> dict:
    workload = {"name": "soak", "test": "oltp_read_write", "tables": 8, "table_size": 1_000_000,
                "warmup_s": 600, "threads": [16], "duration_s": hours * 3600}
    # History is the subject here, not the cost (a budget the soak fits; without one the deployment's
    # ceiling would refuse it) nor the per-region caps (an account raised for 41 targets).
    request = runplan.RunRequest(spec={"name": "soak", "workload": workload, "targets": targets,
                                       "budget_usd": 100_000})
    return runplan.plan_run(request, zone_count=3, max_vcpus=1000, max_hosts=1000)


def test_a_24_hour_soak_stays_well_inside_the_history_limit(record_property):
    targets = spec()["targets"]  # ec2, rds, aurora side by side, inline
    plan = soak(targets)
    assert not plan["distributed"]
    cap = plan["targets"][0]["timing"]["poll_cap_s"]
    # Poll cap: 9 events per poll x 3 targets x (86,400 + 600 + prepare) s / 10,000 events.
    step_seconds = sum(s["duration_s"] for s in plan["targets"][0]["steps"])
    assert cap == math.ceil(9 * 3 * step_seconds / 10_000)
    timed_polls = sum(math.ceil(s["duration_s"] / cap) for s in plan["targets"][0]["steps"])
    # Expected: every step ends on time (one timed poll lap per cap, no overrun, one readiness check).
    per_target = (history.TARGET_FIXED + history.REPETITION_FIXED + history.READY_ITERATION
                  + history.STEP_FIXED * 3 + history.POLL_ITERATION * timed_polls)
    expected = history.EXECUTION_FIXED + 3 * per_target
    # Worst case: every readiness and overrun loop runs to its bound.
    worst = plan["history_bound"]
    print(f"\n24 h soak, 3 targets inline: poll cap {cap} s, {timed_polls} timed polls per target, "
          f"{history.POLL_ITERATION} events per poll -> {3 * timed_polls * history.POLL_ITERATION} poll events; "
          f"whole execution expected {expected} events, worst case {worst} (limit {history.HISTORY_LIMIT})")
    record_property("soak_24h_expected_events", expected)
    record_property("soak_24h_worst_events", worst)
    assert 3 * timed_polls * history.POLL_ITERATION <= history.POLL_EVENT_BUDGET + 3 * 3 * history.POLL_ITERATION
    assert expected <= worst <= history.HISTORY_BUDGET < history.HISTORY_LIMIT


def test_a_soak_of_many_targets_runs_distributed_with_a_bounded_history_per_child():
    many = [{"id": f"ec2-{i:02d}", "kind": "ec2", "instance_type": "m6i.large"} for i in range(41)]
    plan = soak(many)
    assert plan["distributed"] and plan["target_count"] == 41
    cap = plan["targets"][0]["timing"]["poll_cap_s"]
    assert plan["history_bound"] <= history.HISTORY_BUDGET
    print(f"\n24 h soak, 41 targets: distributed, each child polls every <= {cap} s, "
          f"worst case {plan['history_bound']} events per child execution")
    # Five targets fit inline, each polled less often than with three (one history shared).
    five = soak(many[:5])
    assert not five["distributed"]
    assert five["targets"][0]["timing"]["poll_cap_s"] > soak(many[:3])["targets"][0]["timing"]["poll_cap_s"]
