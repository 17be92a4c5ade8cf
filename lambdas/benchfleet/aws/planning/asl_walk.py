"""What one run of the state machine does, counted from its definition: state transitions and Lambda
invocations along the path a successful run takes.

Step Functions bills a Standard execution per state transition (every state entered, retries
included) and Lambda per invocation; both follow from the definition's shape and the plan, not from
a constant. ``walk`` follows ``StartAt``/``Next`` through ``statemachines/benchmark-run.asl.json``:

* a Task, Pass, Wait or Choice is one transition; a Task whose resource is a Lambda
  (``${XFunctionArn}``, or ``arn:aws:states:::lambda:invoke`` naming one) is one invocation of
  handler ``x``;
* a Map is one transition plus its item processor once per item; which items comes from the
  ``Scope`` (the plan's targets, a target's repetitions, a repetition's steps: one level down per
  nested Map);
* a Choice branch back to a state already passed is a polling loop: its body (from that state to
  the Choice) is added once per extra lap, and the scope says how many laps a loop that calls a
  given handler makes (``readiness``: the readiness checks);
* a branch the plan decides (``Scope.choose``: "New parameter groups?" only for rds and aurora) is
  taken; of the other branches, Fail states are left out (a failed run is not what an estimate
  prices) and the one that does the most work is taken: "the target is ready" leads through the
  steps, "never ready" straight to teardown.

Catch and Retry paths are not followed. Standard library only: the Plan Lambda imports this.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

DEFINITION_FILE = "benchmark-run.asl.json"
_SUBSTITUTION = re.compile(r"^\$\{([A-Za-z0-9]+)FunctionArn\}$")
_LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
# "New parameter groups?" tests this: provision's answer for an rds / aurora target (lifecycle.GROUPS_SETTLE).
GROUPS_SETTLE_VARIABLE = "$.resources.groups_settle_s"


@dataclass
class Counts:
    """State transitions and Lambda invocations by handler module."""

    transitions: int = 0
    invocations: Counter[str] = field(default_factory=Counter)

    def add(self, other: Counts, times: int = 1) -> None:
        self.transitions += other.transitions * times
        for name, n in other.invocations.items():
            self.invocations[name] += n * times

    def minus(self, other: Counts) -> Counts:
        return Counts(self.transitions - other.transitions, self.invocations - other.invocations)

    def copy(self) -> Counts:
        return Counts(self.transitions, Counter(self.invocations))

    @property
    def invocation_total(self) -> int:
        return sum(self.invocations.values())


class Scope(Protocol):
    """The plan, seen from one level of the definition."""

    def items(self) -> Sequence[Scope]:
        """What a Map at this level iterates (one level down)."""
        ...

    def laps(self, handlers: frozenset[str]) -> int:
        """Extra laps of a loop whose body invokes ``handlers`` (0: the loop body runs once)."""
        ...

    def choose(self, state: Mapping[str, Any]) -> str | None:
        """The branch the plan decides at this Choice state (None: not the plan's to decide)."""
        ...


def handler_of(state: Mapping[str, Any]) -> str | None:
    """The handler module a Task invokes (``${StartStepFunctionArn}`` -> ``start_step``), or None
    when the Task calls no Lambda of ours."""
    resource = str(state.get("Resource", ""))
    if resource.startswith(_LAMBDA_INVOKE):
        params = state.get("Parameters") or state.get("Arguments") or {}
        resource = str(params.get("FunctionName", ""))
    m = _SUBSTITUTION.match(resource)
    if m is None:
        return None
    return re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(1)).lower()


def walk(states: Mapping[str, Any], start: str, scope: Scope,
         trail: tuple[tuple[str, Counts], ...] = ()) -> Counts:
    """Transitions and invocations from ``start`` to the end of ``states`` (one state list: the
    top level, or a Map's item processor)."""
    total = Counts()
    passed = list(trail)
    name: str | None = start
    while name is not None:
        state = states[name]
        passed.append((name, total.copy()))
        total.transitions += 1
        kind = state["Type"]
        if kind == "Task":
            handler = handler_of(state)
            if handler:
                total.invocations[handler] += 1
        elif kind == "Map":
            processor = state.get("ItemProcessor") or state["Iterator"]
            for item in scope.items():
                total.add(walk(processor["States"], processor["StartAt"], item))
        elif kind == "Parallel":
            for branch in state["Branches"]:
                total.add(walk(branch["States"], branch["StartAt"], scope))
        elif kind == "Choice":
            return _choose(states, state, scope, total, passed)
        elif kind in ("Succeed", "Fail"):
            break
        name = None if state.get("End") else state.get("Next")
    return total


def _choose(states: Mapping[str, Any], state: Mapping[str, Any], scope: Scope, total: Counts,
            passed: list[tuple[str, Counts]]) -> Counts:
    decided = scope.choose(state)
    if decided is not None:
        total.add(walk(states, decided, scope, tuple(passed)))
        return total
    targets = list(dict.fromkeys([c["Next"] for c in state.get("Choices", [])] + (
        [state["Default"]] if "Default" in state else [])))
    before = dict(passed)
    loops = []
    for target in targets:
        back = _loop_back(states, target, before)
        if back is not None:
            joined, lead_in = back
            body = total.minus(before[joined])
            body.add(lead_in)
            total.add(body, scope.laps(frozenset(body.invocations)))
            loops.append(target)
    forward = [t for t in targets if t not in loops and states[t]["Type"] != "Fail"]
    if forward:
        # Where the branches join again (teardown), the state is counted on each: compare whole tails.
        rests = [walk(states, t, scope, tuple(passed)) for t in forward]
        total.add(max(rests, key=lambda c: (c.transitions, c.invocation_total)))
    return total


def _loop_back(states: Mapping[str, Any], target: str, before: Mapping[str, Counts]) -> tuple[str, Counts] | None:
    """If ``target`` leads straight (through Wait, Pass and Task states) back to a passed state:
    that state and what the states on the way add (the Wait before the next check)."""
    lead_in = Counts()
    name: str | None = target
    while name is not None and name not in before:
        state = states[name]
        if state["Type"] not in ("Wait", "Pass", "Task") or state.get("End"):
            return None
        lead_in.transitions += 1
        handler = handler_of(state) if state["Type"] == "Task" else None
        if handler:
            lead_in.invocations[handler] += 1
        name = state.get("Next")
    return None if name is None else (name, lead_in)


def definitions_dir() -> Path:
    """statemachines/ of the checkout, or ``$BENCHFLEET_STATEMACHINES`` (the Lambda asset's copy)."""
    env = os.environ.get("BENCHFLEET_STATEMACHINES")
    if env:
        return Path(env)
    from benchfleet.spec.documents import repo_root

    return repo_root() / "statemachines"


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or "States" not in data:
        raise ValueError(f"{path}: not a state machine definition")
    return data


def load_definition(path: Path | None = None) -> dict[str, Any]:
    """The benchmark run's definition (cached): the file the CDK app deploys."""
    return _load(str(path or definitions_dir() / DEFINITION_FILE))


def map_concurrency(definition: Mapping[str, Any], level: int) -> list[int]:
    """MaxConcurrency of every Map ``level`` Maps deep (0: the top level's Maps), 0 meaning
    unbounded: how many items of that level the deployed machine runs at once."""
    found: list[int] = []

    def visit(states: Mapping[str, Any], depth: int) -> None:
        for state in states.values():
            if state["Type"] != "Map":
                continue
            processor = state.get("ItemProcessor") or state["Iterator"]
            if depth == level:
                found.append(int(state.get("MaxConcurrency", 0)))
            else:
                visit(processor["States"], depth + 1)

    visit(definition["States"], 0)
    return found
