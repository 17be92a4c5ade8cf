"""The definition itself: JSONPath only, the contract's substitutions, one target iterator (the
Distributed Map's derived from the inline one), names unique across the machine, prose state names,
every failure path reaches teardown, and the execution cap the plan respects."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import asl_iterators
import pytest

ASL = Path(__file__).resolve().parents[2] / "statemachines" / "benchmark-run.asl.json"
CONTRACT = {"Plan", "Provision", "Readiness", "StartStep", "Collect", "Teardown", "Summarize", "StepCallback"}
# Task resources besides the contract's Lambdas: each has its grant in cdk/lib/state-machine.ts.
SDK_TASKS = {"arn:aws:states:::aws-sdk:s3:putObject"}
CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken"


def load() -> dict:
    return json.loads(ASL.read_text())


def all_states(machine: dict):
    for name, state in machine["States"].items():
        yield name, state
        processor = state.get("ItemProcessor")
        if processor:
            yield from all_states(processor)


def test_jsonpath_only_and_lambda_resources_from_the_contract():
    text = ASL.read_text()
    definition = load()
    assert "JSONata" not in text and "QueryLanguage" not in text
    used = set(re.findall(r"\$\{(\w+)FunctionArn\}", text))
    assert used == CONTRACT
    for _, state in all_states(definition):
        if state["Type"] == "Task":
            assert re.fullmatch(r"\$\{\w+FunctionArn\}", state["Resource"]) or state["Resource"] in SDK_TASKS or (
                state["Resource"] == CALLBACK
                and re.fullmatch(r"\$\{\w+FunctionArn\}", state["Parameters"]["FunctionName"]))
            assert "TimeoutSeconds" in state or "TimeoutSecondsPath" in state


def test_the_distributed_iterator_is_the_inline_one_renamed():
    """One iterator, two Maps: the Distributed Map's is derived from the inline Map's by the rename
    rule of asl_iterators (the States Language wants names unique across the machine)."""
    definition = load()
    inline = definition["States"][asl_iterators.INLINE_MAP]
    distributed = definition["States"][asl_iterators.DISTRIBUTED_MAP]
    assert inline["ItemProcessor"]["ProcessorConfig"] == {"Mode": "INLINE"}
    assert distributed["ItemProcessor"] == asl_iterators.derived_distributed_processor(definition), (
        "the Distributed Map's iterator is not the inline one renamed: edit the inline Map, then run "
        ".venv/bin/python tests/statemachine/asl_iterators.py --write")
    # Where their items come from and where their results go differ (the state, or S3); the rest not.
    # A Distributed Map tolerates failed children (Summarize decides): an inline Map has no such field.
    own = ("ItemProcessor", "Comment", "MaxConcurrency", "ItemsPath", "ItemReader", "ResultWriter",
           "ToleratedFailurePercentage")
    assert {k: v for k, v in inline.items() if k not in own} == {k: v for k, v in distributed.items() if k not in own}


def test_a_full_quota_is_retried_as_often_as_the_history_budget_counts():
    from benchfleet.aws.planning import history

    definition = load()
    provision = next(s for name, s in all_states(definition) if name == "Provision the target")
    (retry,) = [r for r in provision["Retry"] if r["ErrorEquals"] == ["QuotaExceeded"]]
    assert retry["MaxAttempts"] == history.PROVISION_QUOTA_RETRIES and retry["BackoffRate"] == 1.0


def test_state_names_are_unique_across_the_whole_machine():
    names = Counter(name for name, _ in all_states(load()))
    assert [n for n, count in names.items() if count > 1] == []


def test_state_names_read_as_prose():
    for name, _ in all_states(load()):
        assert re.fullmatch(r"[A-Z][a-z]+( [a-z]+)*\??(" + re.escape(asl_iterators.CHILD_SUFFIX) + ")?", name), name


def test_every_catch_in_a_target_reaches_teardown_and_every_loop_is_bounded():
    rep = load()["States"]["Run targets side by side"]["ItemProcessor"]["States"]["Run each repetition"]
    states = rep["ItemProcessor"]["States"]
    # Teardown, then the outcome recorded to S3 (or, if S3 refuses it, the repetition left without one).
    after_teardown = ("Tear down the target", "Repetition done", "Record the outcome", "Outcome not recorded")
    for name, state in states.items():
        for catch in state.get("Catch", []):
            nxt = catch["Next"]
            while nxt not in after_teardown:
                nxt = states[nxt].get("Next") or states[nxt].get("Default")
            assert nxt in after_teardown, name
    # Both wait loops leave through a counter compared in a Choice.
    assert any(c.get("NumericGreaterThanEqualsPath") == "$.target.timing.ready_max_polls"
               for c in states["Target ready?"]["Choices"])
    # A step waits for its callback, bounded by the plan's timeout_s; at the bound the state machine
    # asks how the step ended (a lost status change, issue 30 finding 4): a succeeded step goes on, a
    # failed or silent one fails (AgentFailed, StepTimedOut) and its steps Map's Catch tears it down.
    steps = states["Run each step"]["ItemProcessor"]["States"]
    start = steps["Start the step"]
    assert start["Resource"] == CALLBACK and start["TimeoutSecondsPath"] == "$.step.timeout_s"
    assert start["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token"
    assert start["Catch"] == [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error",
                               "Next": "Ask how the step ended"}]
    ask = steps["Ask how the step ended"]
    assert ask["Resource"] == "${StepCallbackFunctionArn}" and ask["ResultPath"] == start["ResultPath"]
    assert ask["Next"] == start["Next"] and "Catch" not in ask
    assert not any(s["Type"] == "Choice" for s in steps.values())  # no polling loop
    assert states["Run each step"]["MaxConcurrency"] == 1


def test_one_state_writes_the_terminal_status_and_the_cap_matches_the_plan():
    definition = load()
    # The CDK app sets TimeoutSeconds from maxRunHours (and Plan's limit from the same value).
    assert "TimeoutSeconds" not in definition
    writers = [n for n, s in all_states(definition) if s.get("Resource") == "${SummarizeFunctionArn}"]
    assert writers == ["Summarize the run"]


def test_cfn_lint_accepts_the_definition():
    """cfn-lint's ASL schema (E3601) on a template holding the definition as the CDK app does (the
    substitutions left for CloudFormation); the CDK app keeps E3601 on."""
    api = pytest.importorskip("cfnlint.api")
    definition = load()
    subs = set(re.findall(r"\$\{(\w+)\}", ASL.read_text()))
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {"Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
            "RoleArn": "arn:aws:iam::123456789012:role/sfn", "Definition": definition,
            "DefinitionSubstitutions": {s: f"arn:aws:lambda:us-east-1:123456789012:function:{s}" for s in subs}}}},
    }
    matches = api.lint(json.dumps(template), config=api.ManualArgs(regions=["us-east-1"]))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []
