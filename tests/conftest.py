"""Shared test setup. Test tiers (what each folder holds):

- unit/: pure domain code, no servers, no AWS; fast.
- functional/: AWS adapters and Lambda handlers against moto (botocore Stubber where moto falls short).
- statemachine/: the ASL definitions executed offline by moto's Step Functions executor.
- integration/: real MariaDB servers and the real sysbench binary on this machine (marked integration).
- browser/: the HTML report in headless Chromium (marked browser).
- host/: the synthesized agent document run on booted Debian hosts (systemd-nspawn), faults included,
  and one state-machine execution whose steps run there (tests/host/README.md).
- synthesized/: what `cdk synth` deploys, read from its output: independent validators (ASL, IAM) and
  the inputs deployed components send, fed to the code that consumes them.
- cdk/: jest tests of the CDK app (run by `npm test`).
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
# The published study's logs live in shared/ beside the checkout (CI has it); a clone elsewhere skips
# the tests that read them instead of failing on a missing folder.
needs_shared_fixtures = pytest.mark.skipif(not SHARED_FIXTURES.is_dir(),
                                           reason=f"{SHARED_FIXTURES} is not beside this checkout")

# What the CDK app sets on every Lambda (cdk/lib/lambdas.ts); handlers read it, never hard-code it.
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Benchfleet")
# One lock file per test process (and the processes it starts, which inherit it) instead of the
# machine's (benchfleet.local.machine): the local runs of one suite still exclude each other, and two
# suites on one machine, or a suite beside a user's run, do not wait for one another.
_OWN_LOCK = None if "BENCHFLEET_MACHINE_LOCK" in os.environ else os.path.join(
    tempfile.gettempdir(), f"benchfleet-tests-{os.getpid()}.lock")
if _OWN_LOCK:
    os.environ["BENCHFLEET_MACHINE_LOCK"] = _OWN_LOCK

for path in (REPO / "lambdas", REPO / "tests" / "synthesized"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def pytest_configure(config: pytest.Config) -> None:
    """A suite stopped with SIGTERM (CI cancelling, `kill`, a killed `make`'s children) tears down what
    it set up, as Ctrl-C does: pytest runs the fixtures' finalizers after a KeyboardInterrupt, while
    SIGTERM's default ends the process at once. One such stop left four booted hosts of the host tier
    running (a 3-node Galera cluster and its client), their loop devices and network namespaces."""
    import signal
    import threading

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long(minutes)`` first, the longest first (a stable sort: files keep their order
    otherwise): the workers take files in collection order, and a file of minutes started last ran
    alone at the end of the suite."""
    def minutes(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        return float(marker.args[0]) if marker is not None else 0.0

    items.sort(key=lambda item: -minutes(item))


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's own lock file goes with it (every local run of the session has ended)."""
    if _OWN_LOCK:
        Path(_OWN_LOCK).unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def service_models_parsed_once() -> Iterator[None]:
    """Every botocore session of the test process reads AWS service models through one loader.

    moto replaces boto3's default session at each mock and the handlers' clients module opens a
    session per client (benchfleet.aws.clients, as a Lambda does once per cold start), so each test
    parsed the same service-model JSON files again (most of a moto account's set-up). A loader
    is what one session already shares between all its clients: the models are botocore's own
    files, loaded once, and nothing else about a session or a mock changes."""
    import botocore.loaders
    import botocore.session

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(botocore.session, "create_loader",
                            functools.lru_cache(maxsize=None)(botocore.loaders.create_loader))
        yield


@pytest.fixture
def bf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data dir for one test."""
    home = tmp_path / "bfhome"
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    return home


# Scheduled comparisons as an operator would configure them (cdk/README.md, context `schedules`): the
# flagship comparison (YAML) and a one-target fixture (JSON), both naming their workload, and a
# fleet without budget_usd that costs more than the deployment's ceiling (Plan refuses it).
SCHEDULES = [
    {"name": "nightly-graviton", "expression": "cron(0 2 * * ? *)",
     "spec": "workloads/comparisons/graviton-vs-intel-vs-amd.yaml", "timezone": "Europe/Paris"},
    {"name": "weekly-fixture", "expression": "rate(7 days)", "spec": "tests/cdk/fixtures/nightly-spec.json"},
    {"name": "monthly-fleet", "expression": "cron(0 3 1 * ? *)",
     "spec": "tests/cdk/fixtures/fleet-without-budget.json"},
]
# A deployment whose region's quota and cap were raised (cdk/README.md, maxVcpusPerRegion): the flagship
# comparison's 3 repetitions of 6 targets (90 vCPUs) then run at once; at the default cap, in waves.
CAPS = {"maxVcpusPerRegion": 96}


def synthesized_once(tmp_path_factory: pytest.TempPathFactory, name: str,
                     context: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], Path]:
    """Every stack's template of one `cdk synth` with ``context`` and its output folder, synthesized
    once per suite run: the workers of a parallel run (pytest-xdist) share the first one's, as a
    single process shares its session fixture (a synth is half a minute of a core)."""
    from synth import synthesize_all, templates_in

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        return synthesize_all(out, context), out
    shared = tmp_path_factory.getbasetemp().parent / name  # the run's folder above every worker's own
    with (shared.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker synthesizes; the others wait, then read it
        if not (shared / ".complete").exists():
            shutil.rmtree(shared, ignore_errors=True)
            synthesize_all(shared, context)
            (shared / ".complete").touch()
    return templates_in(shared), shared


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The stack as `cdk synth` writes it (cdk.json's context plus SCHEDULES and CAPS), once per session:
    a ``synth.Template`` (tests/synthesized/synth.py) whose ``out_dir`` holds the assets."""
    from synth import STACK, Template

    stacks, out = synthesized_once(tmp_path_factory, "cdk.out", {"schedules": SCHEDULES, **CAPS})
    return Template(stacks[STACK], out)


# The other deployment the tests read: home us-east-1 with three target regions (regional stacks,
# cdk/lib/regional-stack.ts) and the other record store, Timestream.
HOME_REGION = "us-east-1"
TARGET_REGIONS = ("us-west-1", "eu-north-1", "ap-southeast-2")


@pytest.fixture(scope="session")
def synthesized_regions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What `cdk deploy --all` deploys with TARGET_REGIONS and Timestream (the ``synthesized`` stack
    has one region and Athena), once per session: a ``synth.Template`` per stack by stack name, the
    home stack ``Benchfleet`` and ``Benchfleet-<region>`` for each target region. The IAM linter,
    the callback rule's forwarding and the offline multi-region execution all read this one synth."""
    from synth import Template

    stacks, out = synthesized_once(tmp_path_factory, "cdk.out-regions", {
        "targetRegions": list(TARGET_REGIONS), "region": HOME_REGION, "resultsStore": "timestream"})
    return {name: Template(template, out) for name, template in stacks.items()}
