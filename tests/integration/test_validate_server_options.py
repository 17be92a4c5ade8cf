"""validate checks a local target's server options as doctor and run do (issue 41 item 8): the server
installed here parses them (``mariadbd --verbose --help``), and a misspelt option is named with the
option it most likely is. Needs this machine's MariaDB; starts no server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchfleet.cli.main import main

pytestmark = pytest.mark.integration


def write(tmp_path: Path, **target: object) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "typo", "workload": "oltp-read-write",
                                    "targets": [{"id": "a", "kind": "local", **target}]}))
    return path


def test_validate_refuses_a_misspelt_server_option_as_doctor_does(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, server_options={"innodb_buffer_pool_szie": "64M"})
    assert main(["validate", str(path)]) == 2  # exit 0, "valid", before
    err = " ".join(capsys.readouterr().err.split())
    assert ("targets[0].server_options: MariaDB refuses it" in err and "unknown variable 'innodb_buffer_pool_szie"
            in err and "(did you mean innodb_buffer_pool_size?)" in err), err
    assert main(["doctor", str(path)]) == 1  # doctor, through the same check
    captured = capsys.readouterr()
    assert "innodb_buffer_pool_szie" in " ".join((captured.out + captured.err).split())
    assert main(["validate", str(write(tmp_path, server_options={"innodb_buffer_pool_size": "64M"}))]) == 0
