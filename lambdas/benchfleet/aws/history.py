"""How many history events a run can write, and the poll interval that keeps it inside the limit.

A Standard execution holds at most 25,000 history events; inline Map iterations count against the
parent, a Distributed Map child execution has its own history. Every loop of the ASL is bounded by
a counter, so the worst case is computable: these constants are the events one pass through each
part of ``statemachines/benchmark-run.asl.json`` writes (a Task: entered, scheduled, started,
succeeded, exited), and tests/statemachine checks them against moto's recorded history.
"""

from __future__ import annotations

import math

HISTORY_LIMIT = 25_000
# Plans are sized to stay under this share of the limit ("well inside": room for retries,
# Catch paths and anything we count wrong).
HISTORY_BUDGET = 20_000
# Of the budget, what timed polling of running steps may use; the rest is fixed per-step overhead.
POLL_EVENT_BUDGET = 10_000

TASK = 5          # TaskStateEntered, LambdaFunctionScheduled/Started/Succeeded, TaskStateExited
WAIT = 2          # WaitStateEntered, WaitStateExited
CHOICE = 2        # ChoiceStateEntered, ChoiceStateExited
PASS = 2
POLL_ITERATION = WAIT + TASK + CHOICE                 # one "Wait for the step" -> "Step finished?" lap
READY_ITERATION = TASK + CHOICE + WAIT                # one "Check the target" -> "Wait for the target" lap
# Per step: Map iteration started/succeeded, StartStep, Collect, Cool down.
STEP_FIXED = 2 + TASK + TASK + WAIT
# Per repetition: Map iteration 2, the Wait for its start, Provision, Teardown, outcome Pass, the
# outcome's S3 PutObject (an aws-sdk Task: entered, scheduled, started, succeeded, exited), the
# steps Map (entered, started, succeeded, exited) and the "Target ready?" Choice after the last
# readiness check.
REPETITION_FIXED = 2 + WAIT + TASK + TASK + PASS + TASK + 4
# Per execution: started/succeeded, Plan, the mode Choice, the targets Map (4 + 2 per target is
# counted per target), Summarize, "Run succeeded?" Choice, "Report the run" Pass, Succeed.
EXECUTION_FIXED = 2 + TASK + CHOICE + 4 + TASK + CHOICE + PASS + 2
TARGET_FIXED = 2 + 4  # targets-Map iteration, repetitions Map

MIN_POLL_CAP_S = 30
MAX_POLL_CAP_S = 3600


def polls_for(duration_s: int, cap_s: int) -> int:
    """Timed polls while a step of ``duration_s`` runs, waiting min(remaining, cap) each time."""
    return max(1, math.ceil(duration_s / max(1, cap_s)))


def poll_cap_for(total_step_seconds: int) -> int:
    """The longest wait between polls of a running step such that all the steps sharing one history
    (``total_step_seconds`` of them, summed over targets and repetitions) poll within
    POLL_EVENT_BUDGET. Shorter runs poll more often (failures surface sooner), never under 30 s."""
    needed = math.ceil(POLL_ITERATION * total_step_seconds / POLL_EVENT_BUDGET)
    return min(MAX_POLL_CAP_S, max(MIN_POLL_CAP_S, needed))


def repetition_events(steps: int, polls: int, ready_polls: int) -> int:
    """One repetition of one target: ``steps`` steps polled ``polls`` times in all (timed polls
    while steps run plus overrun polls after), ``ready_polls`` readiness checks."""
    return REPETITION_FIXED + READY_ITERATION * ready_polls + STEP_FIXED * steps + POLL_ITERATION * polls


def execution_events(per_target: list[tuple[int, int]]) -> int:
    """``per_target``: (repetitions, events of one repetition) for every target in this history."""
    return EXECUTION_FIXED + sum(TARGET_FIXED + reps * events for reps, events in per_target)
