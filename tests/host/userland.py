"""The booted host's root file system: Debian built once with debootstrap and cached outside the
checkout, keyed by what goes into it, so that later runs take seconds.

What an EC2 Ubuntu image brings (python3, systemd, dbus, apt with its daily timers and
unattended-upgrades, ca-certificates, openssl) plus what the install step would fetch (the engine,
sysbench, the mysql client, python3-boto3, for data volumes xfsprogs, e2fsprogs and mdadm, and for
a cluster galera-4, rsync and haproxy),
pre-installed so that a cached run needs no network:
the install step still runs all of its code and finds them present. Service starts are disabled
while packages install (policy-rc.d), as image builders do, so nothing runs in the build chroot.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

CACHE = Path(os.environ.get("BENCHFLEET_HOST_CACHE", "/var/cache/benchfleet/host-userland"))
BASE = ("python3", "systemd", "systemd-sysv", "dbus", "iproute2", "ca-certificates", "openssl", "procps",
        "unattended-upgrades")
ENGINE = ("mariadb-server", "mariadb-client", "sysbench", "python3-boto3")
# What the install step adds for an ec2 target's data volumes (benchfleet_install.storage_packages):
# the real mdadm is installed as on Ubuntu, and shadowed on the host tier by hostfleet's stand-in.
STORAGE = ("xfsprogs", "e2fsprogs", "mdadm")
# What a cluster node's set-up installs (benchfleet_cluster.FLAVOR_PACKAGES: the Galera provider and
# rsync, its state transfer) and the client host's proxy (HAProxy).
CLUSTER = ("galera-4", "rsync", "haproxy")
# Bump when the recipe below changes what a cached tree contains.
RECIPE = 2


def host_suite() -> tuple[str, str]:
    """(Debian suite, archive URL) of this machine's own apt configuration: the guest uses the
    same archive the host already reaches."""
    release = Path("/etc/os-release").read_text()
    suite = re.search(r"^VERSION_CODENAME=(\S+)", release, re.M)
    sources = ""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.is_file() and not path.name.endswith(".disabled-by-farm"):
            sources += path.read_text() + "\n"
    uri = re.search(r"^URIs:\s*(\S+)", sources, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", sources, re.M)
    if not suite or not uri:
        raise RuntimeError("cannot tell this machine's Debian suite and archive from /etc/os-release and apt sources")
    return suite.group(1), uri.group(1)


def key(suite: str) -> str:
    recipe = f"{RECIPE}|{suite}|{' '.join(BASE)}|{' '.join(ENGINE)}|{' '.join(STORAGE)}|{' '.join(CLUSTER)}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _run(argv: list[str], log: Path, **kw: object) -> None:
    with log.open("a") as f:
        f.write(f"$ {' '.join(argv)}\n")
        f.flush()
        done = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=False, **kw)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): see {log}\n{log.read_text()[-3000:]}")


def ensure() -> tuple[Path, dict[str, float]]:
    """The cached tree (built if missing) and how long each phase took here."""
    suite, mirror = host_suite()
    tree = CACHE / f"{suite}-{key(suite)}"
    timings: dict[str, float] = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others then find it built
        if (tree / ".complete").exists():
            return tree, timings
        work = CACHE / f".build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        log = CACHE / f"build-{key(suite)}.log"
        log.write_text("")
        started = time.monotonic()
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE)}", suite, str(work), mirror], log)
        timings["debootstrap_s"] = time.monotonic() - started
        started = time.monotonic()
        policy = work / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
        _run(["chroot", str(work), "apt-get", "install", "-y", "-q", "--no-install-recommends", *ENGINE, *STORAGE,
              *CLUSTER],
             log, env=env)
        policy.unlink()
        # The engine package's own server is enabled at boot, as on a fresh Ubuntu with the package.
        (work / "etc/hostname").write_text("benchfleet-host\n")
        timings["engine_packages_s"] = time.monotonic() - started
        (work / ".complete").write_text(f"{suite} {key(suite)}\n")
        shutil.rmtree(tree, ignore_errors=True)
        work.rename(tree)
        return tree, timings
