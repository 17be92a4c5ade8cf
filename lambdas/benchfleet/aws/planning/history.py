"""How many history events a run can write (inside the 25,000-event limit).

A Standard execution holds at most 25,000 history events; inline Map iterations count against the
parent, a Distributed Map child execution has its own history. Every loop of the ASL is bounded by
a counter, so the worst case is computable: these constants are the events one pass through each
part of ``statemachines/benchmark-run.asl.json`` writes (a Task: entered, scheduled, started,
succeeded, exited), and tests/statemachine checks them against moto's recorded history.
"""

from __future__ import annotations

HISTORY_LIMIT = 25_000
# Plans are sized to stay under this share of the limit ("well inside": room for retries,
# Catch paths and anything we count wrong).
HISTORY_BUDGET = 20_000

TASK = 5          # TaskStateEntered, LambdaFunctionScheduled/Started/Succeeded, TaskStateExited
# A lambda:invoke.waitForTaskToken Task: entered, scheduled, started, submitted, succeeded, exited.
CALLBACK_TASK = 6
WAIT = 2          # WaitStateEntered, WaitStateExited
CHOICE = 2        # ChoiceStateEntered, ChoiceStateExited
PASS = 2
READY_ITERATION = TASK + CHOICE + WAIT                # one "Check the target" -> "Wait for the target" lap
# Per step: Map iteration started/succeeded, "Start the step" (waits for its callback: no polling),
# Cool down, Collect.
STEP_FIXED = 2 + CALLBACK_TASK + TASK + WAIT
# A repetition whose provision met a full quota (a previous wave's hosts still going): "Provision the
# target" retried up to PROVISION_QUOTA_RETRIES times, each retry a scheduled, started and failed Lambda.
PROVISION_QUOTA_RETRIES = 10
QUOTA_RETRY = 3 * PROVISION_QUOTA_RETRIES
# A step whose status change never came: "Start the step" times out (its events are STEP_FIXED's) and
# "Ask how the step ended" (a Task) reads the command; the worst case counts it for every step.
STEP_RECOVERY = TASK
# Per repetition: Map iteration 2, the Wait for its start, Provision, Teardown, outcome Pass, the
# outcome's S3 PutObject (an aws-sdk Task: entered, scheduled, started, succeeded, exited), the
# steps Map (entered, started, succeeded, exited) and the "Target ready?" Choice after the last
# readiness check, the "New parameter groups?" Choice after provision and the "Parameter groups gone?"
# Choice after teardown.
REPETITION_FIXED = 2 + WAIT + TASK + TASK + PASS + TASK + 4 + CHOICE + CHOICE
# rds / aurora: "Let the new parameter groups settle" and "Create the databases" (a second provision,
# its quota retries as the first's).
GROUPS_SETTLE = WAIT + TASK + QUOTA_RETRY
# Each further teardown lap while a parameter group waits for its database to go (rds and aurora:
# benchfleet.aws.fleet.lifecycle.next_lap): "Wait for the databases to go", teardown, the Choice.
TEARDOWN_LAP = WAIT + TASK + CHOICE
# Per execution: started/succeeded, Plan, the mode Choice, the targets Map (4 + 2 per target is
# counted per target), Summarize, "Run succeeded?" Choice, "Report the run" Pass, Succeed.
EXECUTION_FIXED = 2 + TASK + CHOICE + 4 + TASK + CHOICE + PASS + 2
TARGET_FIXED = 2 + 4  # targets-Map iteration, repetitions Map


def repetition_events(steps: int, ready_polls: int, teardown_laps: int = 1, groups: bool = False) -> int:
    """One repetition of one target: ``steps`` steps, ``ready_polls`` readiness checks,
    ``teardown_laps`` teardowns (the first is in REPETITION_FIXED); ``groups``: it makes parameter
    groups (rds, aurora) and waits for them before its database."""
    return (REPETITION_FIXED + QUOTA_RETRY + READY_ITERATION * ready_polls + (STEP_FIXED + STEP_RECOVERY) * steps
            + TEARDOWN_LAP * (teardown_laps - 1) + (GROUPS_SETTLE if groups else 0))


def execution_events(per_target: list[tuple[int, int]]) -> int:
    """``per_target``: (repetitions, events of one repetition) for every target in this history."""
    return EXECUTION_FIXED + sum(TARGET_FIXED + reps * events for reps, events in per_target)
