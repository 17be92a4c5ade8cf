"""One source of truth for how long a run may take: the CDK context key maxRunHours becomes the
state machine's TimeoutSeconds and every Lambda's MAX_RUN_HOURS; Plan, with the environment the
template gives it, refuses what the deployed machine could not finish and names the limit."""

from __future__ import annotations

import json

import pytest
from synth import REPO, Template

from benchfleet.aws.errors import PlanRejected
from benchfleet.aws.planning import runplan
from benchfleet.aws.settings import Settings

HOUR = 3600


def python_functions(template: Template) -> dict[str, dict]:
    return {k: r for k, r in template.of_type("AWS::Lambda::Function").items()
            if r["Properties"].get("Handler", "").startswith("handlers.")}


def plan_settings(template: Template) -> Settings:
    (plan,) = [r for r in python_functions(template).values() if r["Properties"]["Handler"] == "handlers.plan.handler"]
    env = template.resolve(plan["Properties"]["Environment"]["Variables"])
    return Settings.from_env({k: str(v) for k, v in env.items()})


def soak(step_hours: float, steps: int = 2) -> runplan.RunRequest:
    workload = {"name": "soak", "test": "oltp_read_only", "warmup_s": 0, "threads": list(range(1, steps + 1)),
                "duration_s": int(step_hours * HOUR)}
    return runplan.RunRequest(spec={"name": "soak", "workload": workload, "targets": [
        {"id": "m7g", "kind": "ec2", "instance_type": "m7g.large", "engine": "mysql-8.0"}]})


def test_every_lambda_knows_the_deployed_execution_timeout(synthesized: Template):
    (definition,) = synthesized.state_machine_definitions().values()
    functions = python_functions(synthesized)
    assert functions
    for name, function in functions.items():
        hours = function["Properties"]["Environment"]["Variables"]["MAX_RUN_HOURS"]
        assert int(hours) * HOUR == definition["TimeoutSeconds"], name


def test_plan_refuses_a_run_the_deployed_machine_cannot_finish_naming_the_limit(synthesized: Template):
    settings = plan_settings(synthesized)
    limit_h = settings.max_run_hours
    (definition,) = synthesized.state_machine_definitions().values()
    assert limit_h * HOUR == definition["TimeoutSeconds"]
    regions = settings.regions
    # Two steps that together nearly fill the limit fit (margins included); a little more does not.
    fits = runplan.plan_run(soak((limit_h - 3) / 2), max_run_hours=limit_h, regions=regions)
    assert fits["wall_s"] + 2 * HOUR <= limit_h * HOUR
    with pytest.raises(PlanRejected, match=rf"time out after {limit_h} h \(CDK context maxRunHours\)"):
        runplan.plan_run(soak(limit_h / 2), max_run_hours=limit_h, regions=regions)


def test_the_settings_default_is_the_cdk_apps_default():
    context = json.loads((REPO / "cdk.json").read_text())["context"]
    assert Settings().max_run_hours == Settings.from_env({}).max_run_hours == context["maxRunHours"]


def test_a_failed_child_execution_leaves_the_others_running_and_summarize_decides(synthesized: Template):
    """Issue 30, finding 7: a Distributed Map tolerates no failed child by default (0 %), so one child
    failing with an error its Catch cannot take (States.Runtime, States.DataLimitExceeded) would stop
    every other target mid-run. The deployed Map tolerates them all; Summarize reads the outcomes
    (a repetition without one is FAILED, NoOutcome)."""
    (definition,) = synthesized.state_machine_definitions().values()
    maps = [s for s in definition["States"].values() if s["Type"] == "Map"
            and s.get("ItemProcessor", {}).get("ProcessorConfig", {}).get("Mode") == "DISTRIBUTED"]
    assert len(maps) == 1
    assert maps[0]["ToleratedFailurePercentage"] == 100
    assert maps[0]["Next"] == "Summarize the run"
