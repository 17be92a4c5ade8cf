"""What a run costs in history events, state transitions and Timestream writes, measured on moto's
recorded history; and the arithmetic that keeps a 24-hour soak far inside the 25,000-event limit
(steps wait for their callback: a day of measuring writes no more events than a minute)."""

from __future__ import annotations

from sm_harness import slow_start, spec

from benchfleet.aws.planning import history, runplan

ONE_TARGET = [{"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"}]


def entered(events, name):
    return [i for i, e in enumerate(events) if (e.get("stateEnteredEventDetails") or {}).get("name") == name]


def transitions(events):
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def test_events_per_step_match_the_model(harness, record_property):
    # Readiness answers "not yet" twice; each step waits for its callback (no polling).
    with slow_start(harness, not_ready=2):
        result = harness.run(spec(captured_step=True, targets=ONE_TARGET), name="measure-one")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    events = result["history"]

    checks = entered(events, "Check the target")
    assert len(checks) == 3
    assert checks[1] - checks[0] == history.READY_ITERATION == 9

    starts = entered(events, "Start the step")
    teardown = entered(events, "Tear down the target")[0]
    prepare_events = starts[1] - starts[0]
    # From "Start the step" to teardown: minus the steps Map's 2 closing events, plus the iteration start.
    measure_events = teardown - starts[1] - 2 + 1
    assert prepare_events == measure_events == history.STEP_FIXED
    # The whole execution, event for event.
    assert len(events) == (history.EXECUTION_FIXED + history.TARGET_FIXED + history.REPETITION_FIXED
                           + history.READY_ITERATION * 3 - history.WAIT + history.STEP_FIXED * 2)

    step_transitions = transitions(events[starts[0]:starts[1]])
    writes = harness.proxies["timestream-write"].records_per_call
    collects = {c.event["step"]["name"]: c.result for c in harness.calls_of("collect")}
    tables = harness.proxies["timestream-write"].tables_per_call
    # Full batches: every batch of the samples' write but its last (the remainder).
    full = [n for i, n in enumerate(writes) if i + 1 < len(writes) and tables[i] == tables[i + 1] == "samples"]
    record_property("events_per_step", prepare_events)
    record_property("transitions_per_step", step_transitions)
    record_property("write_records_calls", writes)
    print(f"\nhistory events per step: {prepare_events}; state transitions per step: {step_transitions}; "
          f"whole 1-target run: {len(events)} events")
    print(f"WriteRecords per step: prepare 0, t0001 {len(writes)} calls, records per call {writes}")
    assert step_transitions == 3  # Start the step, Cool down, Collect the results
    assert collects["prepare"]["samples"] == 0 and collects["t0001"]["samples"] == 240
    # t0001: 240 samples -> its ramp (the first report, a phase of its own) alone, then 100 + 100 + 39;
    # 241 status readings of 6 rows (the server's 5 counters and whether it answered), a request per
    # counter -> 6 x (100 + 100 + 41); then 1 summary.
    assert writes == [1, 100, 100, 39, *[100, 100, 41] * 6, 1]
    full = full[1:]  # the ramp's request is not a batch cut short
    assert full and sum(full) / len(full) >= 95
    assert tables == ["samples"] * 4 + ["status_samples"] * 18 + ["step_summaries"]


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
    # Expected: one readiness check per repetition, every step ends with its callback (no polls,
    # however long it runs).
    per_target = history.TARGET_FIXED + history.REPETITION_FIXED + history.READY_ITERATION + history.STEP_FIXED * 3
    expected = history.EXECUTION_FIXED + 3 * per_target
    # Worst case: every readiness loop runs to its bound.
    worst = plan["history_bound"]
    print(f"\n24 h soak, 3 targets inline: whole execution expected {expected} events, worst case {worst} "
          f"(limit {history.HISTORY_LIMIT})")
    record_property("soak_24h_expected_events", expected)
    record_property("soak_24h_worst_events", worst)
    assert expected <= worst <= history.HISTORY_BUDGET < history.HISTORY_LIMIT
    assert worst < history.HISTORY_LIMIT / 10  # far inside: a day of measuring costs no events
    # Each step waits for its callback up to its bound: the 24 h step's covers its day.
    step = plan["targets"][0]["steps"][-1]
    assert step["timeout_s"] > step["duration_s"] >= 24 * 3600


def test_many_targets_run_distributed_with_a_bounded_history_per_child():
    many = [{"id": f"ec2-{i:02d}", "kind": "ec2", "instance_type": "m6i.large"} for i in range(41)]
    plan = soak(many)
    assert plan["distributed"] and plan["target_count"] == 41
    assert plan["history_bound"] <= history.HISTORY_BUDGET
    print(f"\n24 h soak, 41 targets: distributed, worst case {plan['history_bound']} events per child execution")
    assert not soak(many[:5])["distributed"]
