"""The host tier: the synthesized agent document run on booted Debian hosts (tests/host/README.md).

Session fixtures: the agent document and bundle asset of the synthesized template (tests/conftest.py's
`synthesized`, the session's one `cdk synth`), the cached userland, and a factory of booted hosts closed at
the end. Phase timings are printed at the end of the session (name=value lines).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "synthesized"))
sys.path.insert(0, str(HERE.parent / "statemachine"))  # sm_harness: the in-process Step Functions run

import userland  # noqa: E402
from machine import Machine, Netns  # noqa: E402
from runcommand import RunCommand, zip_asset  # noqa: E402
from synth import Template  # noqa: E402

TIMINGS: dict[str, float] = {}
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    why = unavailable()
    if why:
        for item in items:
            if HERE in Path(str(item.fspath)).parents:
                item.add_marker(pytest.mark.skip(reason=f"host tier: {why}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.write_line("host tier phases: " + " ".join(
            f"{k}={v:.1f}" for k, v in sorted(TIMINGS.items())))


def record(name: str, seconds: float) -> None:
    TIMINGS[name] = max(TIMINGS.get(name, 0.0), seconds)


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


class Fleet:
    """Boots hosts on demand; every host and namespace is removed at the end of the session."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.machines: list[Machine] = []
        self.namespaces: list[Netns] = []

    def netns(self) -> Netns:
        ns = Netns(f"bf-{uuid.uuid4().hex[:8]}")
        self.namespaces.append(ns)
        return ns

    def boot(self, name: str, netns: Netns | None = None, masked: tuple[str, ...] = ()) -> Machine:
        machine = Machine(self.tree, f"bf-{name}-{uuid.uuid4().hex[:6]}", netns or self.netns(), masked)
        self.machines.append(machine)
        record("boot_s", machine.wait_booted())
        return machine

    def release(self, machine: Machine) -> None:
        """Power a host off now (its instance is gone) rather than at the end of the session."""
        machine.close()
        self.machines.remove(machine)

    def close(self) -> None:
        for machine in self.machines:
            machine.close()
        for ns in self.namespaces:
            ns.close()


@pytest.fixture(scope="session")
def fleet(userland_tree: Path) -> Iterator[Fleet]:
    f = Fleet(userland_tree)
    try:
        yield f
    finally:
        f.close()


def assert_per_second(seconds: list[float], duration_s: int) -> None:
    """One sample per second of the step: 1, 2, ... with no gap. sysbench 1.0.20 may skip the
    report that falls due as --time ends (seen here under load), so the last second may be missing;
    nothing else may."""
    assert seconds == [float(i) for i in range(1, len(seconds) + 1)], seconds
    assert duration_s - 1 <= len(seconds) <= duration_s, (len(seconds), duration_s)


def guest_ps(host: Machine) -> list[str]:
    return host.run("ps -eo args").stdout.splitlines()


def dpkg_status(host: Machine, package: str) -> str:
    return host.run(f"dpkg-query -W -f='${{Status}}' {package}").stdout


__all__ = ["Fleet", "assert_per_second", "dpkg_status", "guest_ps", "record", "subprocess"]
