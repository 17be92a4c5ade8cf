"""The targets iterator exists once: the Distributed Map's copy is derived from the inline Map's.

The States Language requires state names unique across the whole state machine, Map iterators and
Distributed Map item processors included (AWS rejects the definition otherwise), so the Distributed
Map cannot carry the inline Map's iterator verbatim. The rule: every state of the inline iterator,
renamed with CHILD_SUFFIX, with every transition (StartAt, Next, Default, Choices, Catch) following
the rename; the ProcessorConfig is the Distributed Map's own. Edit the inline iterator
("Run targets side by side"), then regenerate the copy:

    .venv/bin/python tests/statemachine/asl_iterators.py --write

tests/statemachine/test_definition.py fails while the file's copy differs from the derived one.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ASL = Path(__file__).resolve().parents[2] / "statemachines" / "benchmark-run.asl.json"
INLINE_MAP = "Run targets side by side"
DISTRIBUTED_MAP = "Run targets in child executions"
CHILD_SUFFIX = " (child)"
DISTRIBUTED_CONFIG = {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}


def child_name(name: str) -> str:
    return name + CHILD_SUFFIX


def _rename_machine(machine: dict[str, Any]) -> dict[str, Any]:
    """A (nested) machine's States, StartAt and every transition renamed."""
    out = {k: v for k, v in machine.items() if k not in ("StartAt", "States")}
    out["StartAt"] = child_name(machine["StartAt"])
    out["States"] = {child_name(name): _rename_state(state) for name, state in machine["States"].items()}
    return out


def _rename_state(state: dict[str, Any]) -> dict[str, Any]:
    state = copy.deepcopy(state)
    if "Next" in state:
        state["Next"] = child_name(state["Next"])
    if "Default" in state:
        state["Default"] = child_name(state["Default"])
    for choice in state.get("Choices", []):
        choice["Next"] = child_name(choice["Next"])
    for catch in state.get("Catch", []):
        catch["Next"] = child_name(catch["Next"])
    for key in ("ItemProcessor", "Iterator"):
        if key in state:
            state[key] = _rename_machine(state[key])
    if "Branches" in state:
        state["Branches"] = [_rename_machine(b) for b in state["Branches"]]
    return state


def derived_distributed_processor(definition: dict[str, Any]) -> dict[str, Any]:
    """The Distributed Map's ItemProcessor, derived from the inline Map's by the rename rule."""
    inline = definition["States"][INLINE_MAP]["ItemProcessor"]
    processor = _rename_machine({k: v for k, v in inline.items() if k != "ProcessorConfig"})
    return {"ProcessorConfig": DISTRIBUTED_CONFIG, **processor}


def write(path: Path = ASL) -> None:
    definition = json.loads(path.read_text())
    definition["States"][DISTRIBUTED_MAP]["ItemProcessor"] = derived_distributed_processor(definition)
    path.write_text(json.dumps(definition, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (rewrites {ASL.name}'s Distributed Map iterator)")
    write()
