"""Whether this kernel can build a hostfleet.Lan: a bridge and veth pairs, tried in a throwaway network
namespace (nothing is added to this machine's own network; the namespace goes with its links)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

# The link types a Lan is made of, in the order it makes them (hostfleet.Lan.__init__).
LINKS = (("bridge", "link add br0 type bridge"), ("veth", "link add v0 type veth peer name v1"))


def lan_unavailable(ip: Sequence[str] = ("ip",)) -> str | None:
    """Why a Lan cannot be built here (the link types the kernel refused and what ``ip`` said), or None."""
    name = f"bf-lanprobe-{os.getpid()}"
    added = subprocess.run([*ip, "netns", "add", name], capture_output=True, text=True, check=False)
    if added.returncode != 0:
        return f"needs a network namespace for the kernel's bridge and veth links: {added.stderr.strip()}"
    try:
        refused = []
        for kind, command in LINKS:
            out = subprocess.run([*ip, "-n", name, *command.split()], capture_output=True, text=True, check=False)
            if out.returncode != 0:
                refused.append(f"{kind} ({out.stderr.strip() or f'exit {out.returncode}'})")
    finally:
        subprocess.run([*ip, "netns", "del", name], capture_output=True, check=False)
    if refused:
        return f"needs the kernel's bridge and veth links: {', '.join(refused)} refused"
    return None
