"""`make lock-check` (.ci/check_lock.py): names the package pyproject.toml asks for that uv.lock, or the
Lambda-runtime environment, does not hold — on copies of the real files, edited the way a change would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "check_lock.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / ".ci", tmp_path / ".ci")
    return tmp_path


def check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(project)], capture_output=True, text=True, check=False)


def test_the_committed_lock_is_current(project: Path) -> None:
    result = check(project)
    assert result.returncode == 0, result.stderr


def test_a_raised_floor_the_lock_does_not_meet_is_named(project: Path) -> None:
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace('"boto3>=1.35"', '"boto3>=1.50"'))
    result = check(project)
    assert result.returncode == 1
    assert "boto3: pyproject.toml dependencies asks for 'boto3>=1.50', uv.lock has boto3 1.44.13" in result.stderr


def test_a_new_dependency_missing_from_the_lock_is_named(project: Path) -> None:
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace('  "pytest>=8",', '  "pytest>=8",\n  "tabulate>=0.9",'))
    result = check(project)
    assert result.returncode == 1
    assert "tabulate: pyproject.toml optional-dependencies.dev asks for 'tabulate>=0.9', uv.lock has no tabulate" \
        in result.stderr


def test_a_lambda_runtime_set_behind_the_lock_is_named(project: Path) -> None:
    compiled = project / ".ci" / "lambda-runtime.txt"
    compiled.write_text(compiled.read_text().replace("\npydantic==2.14.1 ", "\npydantic==2.14.0 "))
    result = check(project)
    assert result.returncode == 1
    assert "pydantic: .ci/lambda-runtime.txt has 2.14.0, uv.lock has 2.14.1" in result.stderr
