"""Independent ASL validators on the definition Step Functions receives: the synthesized
DefinitionString with its DefinitionSubstitutions applied (not the file in statemachines/).

- asl-validator (npm): the States Language schema, unique state names across the whole machine
  (Map iterators and Distributed Map item processors included), JSONPath and ARN checks.
- statelint (PyPI): the States Language spec's rules, reported per field. ``--ignore=FLOAT``: its
  one FLOAT rule wants BackoffRate written as a float (2.0); JSON.stringify in the CDK app writes 2,
  which AWS accepts (the States Language says "a number greater than 1.0"). Its schema predates
  ItemReader's ``ReaderConfig.InputType`` (AWS's reference, and CDK's S3JsonItemReader, write
  ``"InputType": "JSON"`` for a JSON array read from S3): that one finding is allowed, by its text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from synth import REPO, Template

ASL_VALIDATOR = REPO / "node_modules" / ".bin" / "asl-validator"
STATELINT = Path(sys.executable).parent / "statelint"
STATELINT_OUTDATED = {'Field "InputType" not allowed in State Machine.States.Run targets in child executions.'
                      'ItemReader.ReaderConfig'}


@pytest.fixture(scope="module")
def definitions(synthesized: Template, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("asl")
    files = {}
    for name, definition in synthesized.state_machine_definitions().items():
        files[name] = out / f"{name}.asl.json"
        files[name].write_text(json.dumps(definition, indent=1))
    assert files, "the synthesized template has no state machine"
    return files


def test_the_synthesized_definition_has_every_substitution_applied(definitions: dict[str, Path]):
    for path in definitions.values():
        assert "${" not in path.read_text()


def test_asl_validator_finds_no_error(definitions: dict[str, Path]):
    for name, path in definitions.items():
        done = subprocess.run([str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{name}: asl-validator:\n{done.stdout}{done.stderr}"


def test_statelint_finds_no_error(definitions: dict[str, Path]):
    for name, path in definitions.items():
        done = subprocess.run([str(STATELINT), "--ignore=FLOAT", str(path)], capture_output=True, text=True,
                              timeout=120)
        lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        findings = [line for line in lines if not line.endswith("error:") and not line.endswith("errors:")]
        assert done.stderr == "" and set(findings) <= STATELINT_OUTDATED, f"{name}: statelint:\n{done.stdout}"
