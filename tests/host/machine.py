"""A booted Linux host: systemd-nspawn --boot on an overlay of the cached userland.

Each Machine is a fresh host: an overlayfs whose lower layer is the cached tree and whose upper
layer is a new directory on disk (what the host writes is thrown away with it; the cache is never
written), in its own network namespace with only loopback (no network: everything the tier needs is
in the userland; two machines can share one namespace to talk over 127.0.0.1, as a client host and
its database endpoint do). Commands run inside with nsenter into the container's PID 1 namespaces.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Netns:
    """A network namespace with loopback up, removed on close."""

    def __init__(self, name: str) -> None:
        self.name = name
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True)

    @property
    def path(self) -> str:
        return f"/run/netns/{self.name}"

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], check=False, capture_output=True)


class Machine:
    def __init__(self, tree: Path, name: str, netns: Netns, masked: tuple[str, ...] = (),
                 devices: tuple[str, ...] = ()) -> None:
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir="/var/tmp"))
        self.root = self.dir / "root"
        for d in ("upper", "work", "root"):
            (self.dir / d).mkdir()
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir={tree},upperdir={self.dir / 'upper'},workdir={self.dir / 'work'}", str(self.root)],
                       check=True, capture_output=True)
        for unit in masked:  # units this host must not start (a client host runs no engine)
            (self.root / "etc/systemd/system" / unit).symlink_to("/dev/null")
        self.log = (self.dir / "console.log").open("w")
        self.proc = subprocess.Popen(
            # No machined and no systemd as PID 1 here: --register=no --keep-unit need neither.
            ["systemd-nspawn", "--quiet", "--boot", f"--machine={name}", "--register=no", "--keep-unit",
             "--console=pipe", f"--network-namespace-path={netns.path}",
             # Block devices of this host (loop devices standing in for its volumes: hostfleet.Disks).
             *[f"--bind={d}" for d in devices], "-D", str(self.root)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.leader = 0
        self.boot_s = 0.0

    def wait_booted(self, timeout_s: float = 180) -> float:
        """Seconds until systemd reports the boot finished (running, or degraded by a unit that
        needs what a container lacks)."""
        started = time.monotonic()
        deadline = started + timeout_s
        while not self.leader:
            if self.proc.poll() is not None:
                raise RuntimeError(f"systemd-nspawn exited {self.proc.returncode}: {self.console()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no init process after {timeout_s} s")
            self.leader = self._find_leader()
            time.sleep(0.1)
        while True:
            out = self.run("systemctl is-system-running --wait", timeout_s=max(1.0, deadline - time.monotonic()))
            if out.stdout.strip() in ("running", "degraded"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: boot did not finish: {out.stdout} {self.console()[-3000:]}")
            time.sleep(0.5)
        self.boot_s = time.monotonic() - started
        return self.boot_s

    def _find_leader(self) -> int:
        """The container's PID 1 as seen from here: the systemd among systemd-nspawn's descendants."""
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        for pid in sorted(parents):
            ancestor = parents.get(pid)
            while ancestor and ancestor != self.proc.pid:
                ancestor = parents.get(ancestor)
            if ancestor == self.proc.pid:
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                        return pid
                except OSError:
                    continue
        return 0

    def run(self, script: str, *, env: dict[str, str] | None = None, stdin: str | None = None,
            timeout_s: float = 600, cwd: str = "/") -> subprocess.CompletedProcess[str]:
        """``sh -c script`` inside the host as root, with only ``env`` (and PATH) in its environment."""
        environment = {"PATH": GUEST_PATH, "LANG": "C.UTF-8", **(env or {})}
        # nsenter's --wd resolves before entering the mount namespace: cd inside instead.
        argv = ["nsenter", f"--target={self.leader}", "--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup",
                "--root", "env", "-i", *[f"{k}={v}" for k, v in environment.items()],
                "sh", "-c", f"cd '{cwd}' && {script}"]
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False)

    def path(self, guest_path: str) -> Path:
        """Where a path of the host's file system is, seen from here."""
        return self.root / guest_path.lstrip("/")

    def console(self) -> str:
        self.log.flush()
        return (self.dir / "console.log").read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # nspawn asks the container's systemd to power off
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        self.log.close()
        subprocess.run(["umount", str(self.root)], check=False, capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
