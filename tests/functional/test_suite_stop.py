"""The suite's own clean-up when it is stopped: SIGTERM tears down session fixtures as Ctrl-C does
(tests/conftest.py, pytest_configure)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO

# A session fixture that holds a resource (a marker file) and removes it at teardown, and a test that
# says it started, then waits to be stopped.
SUITE = '''
import time
from pathlib import Path

import pytest

MARK = Path({mark!r})


@pytest.fixture(scope="session")
def held():
    MARK.write_text("held")
    yield
    MARK.unlink()


def test_waits(held):
    Path({started!r}).write_text("started")
    time.sleep(60)
'''


def test_a_suite_stopped_with_sigterm_runs_its_fixtures_teardown(tmp_path: Path) -> None:
    mark, started = tmp_path / "held", tmp_path / "started"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_held.py").write_text(SUITE.format(mark=str(mark), started=str(started)))
    # The repository's conftest loaded as the real suite loads it (the suite's folder is outside it).
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                             str(suite)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert started.exists() and mark.exists(), proc.communicate(timeout=30)[0]
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert not mark.exists(), out  # the session fixture's teardown ran
    assert proc.returncode != 0, out
