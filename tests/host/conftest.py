"""The host tier: the synthesized agent document run on booted Debian hosts (tests/host/README.md).

Session fixtures: the agent document and bundle asset of the synthesized template (tests/conftest.py's
`synthesized`, the session's one `cdk synth`), the cached userland, and a factory of booted hosts closed at
the end. Phase timings are printed at the end of the session (name=value lines).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "synthesized"))
sys.path.insert(0, str(HERE.parent / "statemachine"))  # sm_harness: the in-process Step Functions run

import userland  # noqa: E402
from hostfleet import TIMINGS, Fleet, record  # noqa: E402
from lanprobe import lan_unavailable  # noqa: E402
from runcommand import RunCommand, zip_asset  # noqa: E402
from synth import Template  # noqa: E402

TOOLS = ("debootstrap", "systemd-nspawn", "nsenter", "ip", "mount", "chroot")


def unavailable() -> str | None:
    """Why this machine cannot boot a host, or None."""
    if os.geteuid() != 0:
        return "needs root (debootstrap, overlay mounts, systemd-nspawn)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)} (make system-deps installs debootstrap and systemd-container)"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlayfs"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lan: builds a hostfleet.Lan (needs the kernel's bridge and veth links)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    host = [item for item in items if HERE in Path(str(item.fspath)).parents]
    why = unavailable()
    if why:
        for item in host:
            item.add_marker(pytest.mark.skip(reason=f"host tier: {why}"))
        return
    # Probed only when a test that builds a Lan was collected: the single-server tests need none.
    lan = [item for item in host if item.get_closest_marker("lan")]
    why = lan_unavailable() if lan else None
    if why:
        for item in lan:
            item.add_marker(pytest.mark.skip(reason=f"host tier: {why}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.write_line("host tier phases: " + " ".join(
            f"{k}={v:.1f}" for k, v in sorted(TIMINGS.items())))


@pytest.fixture(scope="session")
def userland_tree() -> Path:
    started = time.monotonic()
    tree, phases = userland.ensure()
    record("userland_cold_s" if phases else "userland_cached_s", time.monotonic() - started)
    for k, v in phases.items():
        record(f"userland_{k}", v)
    return tree


@pytest.fixture(scope="session")
def agent_document(synthesized: Template) -> dict[str, Any]:
    """The AWS::SSM::Document's content as CloudFormation creates it (intrinsics resolved)."""
    (doc,) = synthesized.of_type("AWS::SSM::Document").values()
    content: dict[str, Any] = synthesized.resolve(doc["Properties"]["Content"])
    return content


@pytest.fixture(scope="session")
def bundle_zip(synthesized: Template, agent_document: dict[str, Any],
               tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent bundle asset the stack publishes: cdk.out/asset.<hash>, zipped as the CLI zips it."""
    out = synthesized.out_dir
    assert out is not None
    url = agent_document["parameters"]["BundleUri"]["default"]
    digest = url.rsplit("/", 1)[1].removesuffix(".zip")
    asset = out / f"asset.{digest}"
    assert asset.is_dir(), f"{url} names no staged asset in {out}"
    return zip_asset(asset, tmp_path_factory.mktemp("bundle") / f"{digest}.zip")


@pytest.fixture(scope="session")
def run_command(agent_document: dict[str, Any], bundle_zip: Path) -> RunCommand:
    return RunCommand(agent_document, bundle_zip, s3=None)


@pytest.fixture(scope="session")
def fleet(userland_tree: Path) -> Iterator[Fleet]:
    f = Fleet(userland_tree)
    try:
        yield f
    finally:
        f.close()
