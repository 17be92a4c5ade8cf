"""The host tier's shared pieces, imported by its tests by name (a test module importing
``conftest`` gets whichever conftest.py was imported first: tests/browser's when both tiers run).

``Fleet`` boots hosts on demand; ``record`` keeps the phase timings conftest prints at the end.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from machine import Machine, Netns

TIMINGS: dict[str, float] = {}


def record(name: str, seconds: float) -> None:
    TIMINGS[name] = max(TIMINGS.get(name, 0.0), seconds)


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
