"""tests/host/lanprobe: the host tier's cluster tests skip, naming what is missing, on a kernel without
bridge or veth links. Its negative path runs against a stand-in ``ip`` (this machine's network is not
touched): the reason names each refused link type, and the throwaway namespace is removed either way."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "host"))

from lanprobe import lan_unavailable


def fake_ip(tmp_path: Path, refuse: str) -> tuple[list[str], Path]:
    """An ``ip`` that logs its arguments and fails the commands containing ``refuse`` as iproute2 does."""
    log = tmp_path / "calls"
    script = tmp_path / "ip"
    script.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in *"{refuse}"*) echo 'Error: Unknown device type.' >&2; exit 2;; esac
""")
    script.chmod(0o755)
    return [str(script)], log


@pytest.mark.parametrize(("refuse", "named"), [
    ("type bridge", "bridge (Error: Unknown device type.) refused"),
    ("type veth", "veth (Error: Unknown device type.) refused"),
    ("type ", "bridge (Error: Unknown device type.), veth (Error: Unknown device type.) refused"),
])
def test_a_kernel_without_the_links_is_named_and_the_probe_namespace_removed(
        tmp_path: Path, refuse: str, named: str) -> None:
    ip, log = fake_ip(tmp_path, refuse)
    why = lan_unavailable(ip)
    assert why == f"needs the kernel's bridge and veth links: {named}"
    calls = log.read_text().splitlines()
    (namespace,) = {c.split()[-1] for c in calls if c.startswith("netns add")}
    assert calls[-1] == f"netns del {namespace}"


def test_no_namespace_is_named_and_nothing_is_left_to_remove(tmp_path: Path) -> None:
    ip, log = fake_ip(tmp_path, "netns add")
    assert lan_unavailable(ip) == ("needs a network namespace for the kernel's bridge and veth links: "
                                   "Error: Unknown device type.")
    assert len(log.read_text().splitlines()) == 1


def test_a_kernel_with_the_links_is_fine(tmp_path: Path) -> None:
    ip, log = fake_ip(tmp_path, "never")
    assert lan_unavailable(ip) is None
    assert log.read_text().splitlines()[-1].startswith("netns del ")
