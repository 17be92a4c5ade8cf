"""Spec files that are not specs: each is refused with exit 2 naming the file, quickly, in a few lines.

Before issue 13 these exited 1 with UnicodeDecodeError / RecursionError / ValueError tracebacks, took
minutes and gigabytes (a 50 MB YAML), printed millions of lines, or blocked forever (a FIFO).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchfleet.cli.main import main

VALID = {"name": "s", "workload": {"name": "w", "test": "oltp_read_only", "threads": [1]},
         "targets": [{"id": "a", "kind": "local"}]}


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, float]:
    started = time.monotonic()
    code = main(["validate", str(path)])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    return code, err, elapsed


@pytest.mark.parametrize(("name", "content", "words"), [
    ("latin1.yaml", "name: caf\xe9\n".encode("latin-1"), "UTF-8"),
    ("utf16.yaml", "name: s\n".encode("utf-16"), "UTF-16"),
    ("utf16.json", json.dumps(VALID).encode("utf-16-be"), "UTF-8"),
    ("binary.yaml", bytes(range(256)) * 4, "binary"),
    ("image.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
])
def test_undecodable_files_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                         content: bytes, words: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, err, _ = validate(path, capsys)
    assert code == 2, err
    assert str(path) in err and words in err, err
    assert "Traceback" not in err and "Error:" not in err.split(":", 1)[0]


@pytest.mark.parametrize("name", ["deep.yaml", "deep-flow.yaml", "deep.json"])
def test_nesting_10000_deep_is_exit_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      name: str) -> None:
    path = tmp_path / name
    if name == "deep.json":
        path.write_text('{"name": "s", "targets": ' + "[" * 10_000 + "]" * 10_000 + "}")
    elif name == "deep-flow.yaml":
        path.write_text("name: s\ntargets: " + "[" * 10_000 + "]" * 10_000 + "\n")
    else:
        path.write_text("".join("  " * i + f"k{i}:\n" for i in range(10_000)))
    code, err, elapsed = validate(path, capsys)
    assert code == 2, err
    assert str(path) in err and "deep" in err, err
    assert elapsed < 30


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_5000_digit_integers_are_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        suffix: str) -> None:
    path = tmp_path / f"big{suffix}"
    doc = json.dumps({**VALID, "repetitions": "PLACEHOLDER"}).replace('"PLACEHOLDER"', "9" * 5000)
    path.write_text(doc)  # JSON is YAML too
    code, err, _ = validate(path, capsys)
    assert code == 2, err
    assert str(path) in err and "repetitions" in err, err
    assert len(err) < 2000, err  # the number itself is not echoed back


def test_at_most_a_screenful_of_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(json.dumps({**VALID, **{f"extra_{i}": i for i in range(500)}}))
    code, err, _ = validate(path, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert 10 <= len(lines) <= 25, lines
    assert "and 480 more" in lines[-1], lines[-1]


def test_a_50_mb_yaml_is_refused_by_its_size_quickly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.write(b"name: s\n")
        line = b"".join(b"key_%07d: 1\n" % i for i in range(100_000))
        for _ in range(35):  # 35 x 1.5 MB
            f.write(line)
    assert path.stat().st_size > 50 * 1000 * 1000
    code, err, elapsed = validate(path, capsys)
    assert code == 2 and str(path) in err and "larger than" in err, err
    assert elapsed < 2, elapsed


def _validate_in_a_process(path: str) -> subprocess.CompletedProcess[str]:
    # A separate process with a timeout: a spec reader that blocks must fail this test, not hang it.
    return subprocess.run([sys.executable, "-m", "benchfleet.cli", "validate", path], capture_output=True,
                          text=True, timeout=60, check=False)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    result = _validate_in_a_process(str(fifo))
    assert result.returncode == 2, result.stderr
    assert str(fifo) in result.stderr and "not a regular file" in result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/stdin"])
def test_devices_are_refused(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} is not on this machine")
    result = _validate_in_a_process(device)
    assert result.returncode == 2, result.stderr
    assert device in result.stderr and "regular file" in result.stderr, result.stderr


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err, _ = validate(tmp_path, capsys)
    assert code == 2 and str(tmp_path) in err, err


def test_a_workload_file_is_named_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`validate workloads/oltp-read-write.yaml` (a workload, not a spec) listed its documented keys as
    "unknown key" and targets as missing; every shipped workload now says what it is and what goes
    there instead, in one line."""
    root = Path(__file__).resolve().parents[2] / "workloads"
    for path in sorted(root.glob("*.yaml")):
        code, err, _ = validate(path, capsys)
        assert code == 2 and err.strip() == f"error: {path}: is a workload (test, threads, ...), not a comparison " \
            "spec: a spec names it as its workload and gives the targets (workloads/comparisons/*.yaml; " \
            "workloads/README.md, 'Comparison spec')"
