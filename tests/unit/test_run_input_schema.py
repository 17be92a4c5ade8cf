"""The state machine's input has one definition, benchfleet.aws.planning.runplan.RunRequest; its JSON Schema
is committed (statemachines/benchmark-run.input.schema.json) for the producers that are not Python
(jest checks every synthesized schedule's Input against it) and must stay current."""

from __future__ import annotations

import json
from pathlib import Path

from benchfleet.aws.planning import runplan

SCHEMA = Path(__file__).resolve().parents[2] / "statemachines" / "benchmark-run.input.schema.json"
REGENERATE = (".venv/bin/python -c 'import json; from benchfleet.aws.planning.runplan import input_schema; "
              "print(json.dumps(input_schema(), indent=2))' > statemachines/benchmark-run.input.schema.json")


def test_the_committed_schema_is_the_models():
    assert json.loads(SCHEMA.read_text()) == runplan.input_schema(), f"stale schema; regenerate: {REGENERATE}"


def test_the_schema_wants_the_workload_inline_and_cloud_targets():
    schema = runplan.input_schema()
    assert schema["required"] == ["spec"] and schema["additionalProperties"] is False
    spec = schema["$defs"]["InlineSpec"]
    assert spec["properties"]["workload"] == {"$ref": "#/$defs/Workload",
                                              "description": spec["properties"]["workload"]["description"]}
    kinds = set(spec["properties"]["targets"]["items"]["discriminator"]["mapping"])
    assert kinds == set(runplan.CLOUD_KINDS)
