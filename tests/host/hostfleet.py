"""The host tier's shared pieces, imported by its tests by name (a test module importing
``conftest`` gets whichever conftest.py was imported first: tests/browser's when both tiers run).

``Fleet`` boots hosts on demand, with ``Disks`` standing in for their volumes; ``record`` keeps the
phase timings conftest prints at the end.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from machine import Machine, Netns
from tests.per_second import assert_per_second  # noqa: F401 (the host tests' name for it)

# What the host tier presents a volume as: the name Nitro's udev rules give an EBS volume's NVMe
# device under /dev/disk/by-id (workloads/agent/benchfleet_storage.py EBS_PREFIX).
EBS_BY_ID = "nvme-Amazon_Elastic_Block_Store_{}"
STANDIN_LOG = "/var/log/mdadm-standin.log"
# mdadm stand-in, installed ahead of the real one on PATH: this kernel has no md driver, so --create
# hands out a loop device (the host's spare) as the array, and --detail reports what --create was
# given in mdadm's own format. Everything else the agent runs on the array (mkfs, blkid, mount,
# xfs_info, dumpe2fs, /proc/diskstats) is real, on that device.
MDADM_STANDIN = r'''#!/usr/bin/python3
import json, os, sys
STATE = "/run/mdadm-standin.json"
args = sys.argv[1:]
with open("LOG", "a") as log:
    log.write(json.dumps(args) + "\n")
opts = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--") and "=" in a}
if args[:1] == ["--create"]:
    array, members = args[1], [a for a in args[2:] if not a.startswith("--")]
    for m in members:
        if not os.path.exists(m):
            sys.exit("mdadm: cannot open %s: No such file or directory" % m)
    if len(members) != int(opts["--raid-devices"]):
        sys.exit("mdadm: %d devices given, --raid-devices=%s" % (len(members), opts["--raid-devices"]))
    json.dump({"array": array, "level": opts["--level"], "chunk": opts["--chunk"], "members": members},
              open(STATE, "w"))
    os.symlink(open("/etc/mdadm-standin-spare").read().strip(), array)
    sys.stderr.write("mdadm: array %s started.\n" % array)
elif args[:1] == ["--detail"]:
    st = json.load(open(STATE))
    print("%s:\n           Version : 1.2\n        Raid Level : raid%s\n      Raid Devices : %d\n"
          "     Total Devices : %d\n             State : clean \n            Layout : near=2\n"
          "        Chunk Size : %sK\n\n    Number   Major   Minor   RaidDevice State"
          % (st["array"], st["level"], len(st["members"]), len(st["members"]), st["chunk"]))
    for i, m in enumerate(st["members"]):
        print("       %d       7        %d        %d      active sync set-%s   %s" % (i, i, i, "AB"[i % 2], m))
elif args[:1] == ["--stop"]:
    os.unlink(args[1])
    os.unlink(STATE)
else:
    sys.exit("mdadm stand-in: %s is not what the agent runs" % " ".join(args))
'''

TIMINGS: dict[str, float] = {}


def record(name: str, seconds: float) -> None:
    TIMINGS[name] = max(TIMINGS.get(name, 0.0), seconds)


class Disks:
    """Loop-backed sparse files standing in for one host's block devices: a device per EBS volume id,
    presented under /dev/disk/by-id/ by that id once the host is up (udev does not run in the
    container: the links are what Nitro's rules would make), and, for an array, a spare the mdadm
    stand-in hands out as /dev/md0. Members of an array are small (only wipefs and the stand-in see
    them); a device that gets a file system has room for MariaDB's data directory, cpu-bound.cnf's
    4 GiB redo log included (sparse: only what is written takes space here)."""

    def __init__(self, volume_ids: list[str], *, array: bool) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bf-disks-", dir="/var/tmp"))
        self.files: list[Path] = []
        self.loops: list[str] = []
        self.volumes = {vid: self._attach(16 if array else 6144) for vid in volume_ids}
        self.spare = self._attach(6144) if array else None

    def _attach(self, size_mb: int) -> str:
        path = self.dir / f"disk{len(self.files)}.img"
        subprocess.run(["truncate", "-s", f"{size_mb}M", str(path)], check=True)
        self.files.append(path)
        loop = subprocess.run(["losetup", "--find", "--show", str(path)], check=True, capture_output=True,
                              text=True).stdout.strip()
        self.loops.append(loop)
        return loop

    def present(self, machine: Machine) -> None:
        """The volumes under their by-id names, and the mdadm stand-in with this host's spare."""
        links = " && ".join(f"ln -sfn ../../{Path(loop).name} /dev/disk/by-id/{EBS_BY_ID.format(vid.replace('-', ''))}"
                            for vid, loop in self.volumes.items())
        out = machine.run(f"mkdir -p /dev/disk/by-id && {links}")
        assert out.returncode == 0, out.stderr
        standin = machine.path("/usr/local/sbin/mdadm")
        standin.parent.mkdir(parents=True, exist_ok=True)
        standin.write_text(MDADM_STANDIN.replace("LOG", STANDIN_LOG))
        standin.chmod(0o755)
        machine.path("/etc/mdadm-standin-spare").write_text(f"{self.spare or '/dev/null'}\n")

    def mdadm_calls(self, machine: Machine) -> list[list[str]]:
        log = machine.path(STANDIN_LOG)
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def close(self) -> None:
        for loop in self.loops:
            subprocess.run(["losetup", "-d", loop], check=False, capture_output=True)
        for path in self.files:
            path.unlink(missing_ok=True)
        self.dir.rmdir()


class Fleet:
    """Boots hosts on demand; every host, namespace and disk is removed at the end of the session."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.machines: list[Machine] = []
        self.namespaces: list[Netns] = []
        self.disks: dict[str, Disks] = {}  # by machine name

    def netns(self) -> Netns:
        ns = Netns(f"bf-{uuid.uuid4().hex[:8]}")
        self.namespaces.append(ns)
        return ns

    def boot(self, name: str, netns: Netns | None = None, masked: tuple[str, ...] = (),
             disks: Disks | None = None) -> Machine:
        devices = tuple(disks.loops) if disks else ()
        machine = Machine(self.tree, f"bf-{name}-{uuid.uuid4().hex[:6]}", netns or self.netns(), masked, devices)
        self.machines.append(machine)
        if disks is not None:
            self.disks[machine.name] = disks
        record("boot_s", machine.wait_booted())
        if disks is not None:
            disks.present(machine)
        return machine

    def boot_together(self, names: list[str], netns: Netns | dict[str, Netns], masked: dict[str, tuple[str, ...]],
                      disks: dict[str, Disks] | None = None) -> list[Machine]:
        """Hosts booted at once (a cluster's: its boots overlap as EC2's do), in one namespace or each
        in its own (``netns`` by name: a ``Lan``'s), each with its ``disks`` (by name) when it has volumes."""
        disks = disks or {}
        machines = [Machine(self.tree, f"bf-{name}-{uuid.uuid4().hex[:6]}",
                            netns[name] if isinstance(netns, dict) else netns, masked.get(name, ()),
                            tuple(disks[name].loops) if name in disks else ()) for name in names]
        self.machines.extend(machines)
        for name, machine in zip(names, machines, strict=True):
            if name in disks:
                self.disks[machine.name] = disks[name]
        for name, machine in zip(names, machines, strict=True):
            record("boot_s", machine.wait_booted())
            if name in disks:
                disks[name].present(machine)
        return machines

    def release(self, machine: Machine) -> None:
        """Power a host off now (its instance is gone) rather than at the end of the session."""
        started = time.monotonic()
        machine.close()
        record("poweroff_s", time.monotonic() - started)
        self.machines.remove(machine)
        disks = self.disks.pop(machine.name, None)
        if disks is not None:
            disks.close()

    def close(self) -> None:
        for machine in list(self.machines):
            self.release(machine)
        for ns in self.namespaces:
            ns.close()


class Lan:
    """Hosts on one Ethernet segment, as instances in one VPC are: each host in a network namespace
    of its own with ``eth0`` carrying its private address (``addresses``: name -> address, in the
    network ``cidr``), the other end of each veth pair on a bridge in a namespace of its own (the
    switch: nothing is added to this machine's own network). ``service``: an address of the segment
    that is no host's, in the switch namespace, where a stand-in for a regional endpoint listens."""

    def __init__(self, fleet: Fleet, cidr: str, addresses: dict[str, str]) -> None:
        network = ipaddress.ip_network(cidr)
        self.prefix = network.prefixlen
        self.switch = fleet.netns()
        # The VPC's base + 2 (its DNS resolver on AWS): never an instance's address.
        self.service = str(network.network_address + 2)
        assert self.service not in addresses.values()
        self._ip(self.switch, "link add br0 type bridge")
        self._ip(self.switch, f"addr add {self.service}/{self.prefix} dev br0")
        self._ip(self.switch, "link set br0 up")
        self.hosts: dict[str, Netns] = {}
        for k, (name, address) in enumerate(addresses.items()):
            assert ipaddress.ip_address(address) in network, (address, cidr)
            ns = self.hosts[name] = fleet.netns()
            self._ip(self.switch, f"link add v{k} type veth peer name eth0 netns {ns.name}")
            self._ip(self.switch, f"link set v{k} master br0 up")
            self._ip(ns, f"addr add {address}/{self.prefix} dev eth0")
            self._ip(ns, "link set eth0 up")

    def close(self) -> None:
        """The namespaces (each veth pair goes with its host's)."""
        for ns in [*self.hosts.values(), self.switch]:
            ns.close()

    @staticmethod
    def _ip(ns: Netns, command: str) -> None:
        out = subprocess.run(["ip", "-n", ns.name, *command.split()], capture_output=True, text=True, check=False)
        assert out.returncode == 0, f"ip -n {ns.name} {command}: {out.stderr}"


# Ubuntu's package names the install asks for that Debian does not have (benchfleet_install.
# CLIENT_PACKAGES: a client host's "mysql-client", Ubuntu's metapackage of the MySQL command-line
# client) -> the Debian package the userland has in its place. On a host that needs them, each is a
# metapackage of that name depending on its Debian counterpart, registered with dpkg, so the install
# finds it present as it would on Ubuntu.
UBUNTU_NAMES = {"mysql-client": "mariadb-client"}


def provide_ubuntu_names(machine: Machine) -> None:
    for name, debian in UBUNTU_NAMES.items():
        control = (f"Package: {name}\nVersion: 0+benchfleet\nArchitecture: all\nDepends: {debian}\n"
                   f"Maintainer: benchfleet host tier\nDescription: Ubuntu's {name}, as {debian}\n")
        out = machine.run("d=$(mktemp -d) && mkdir $d/DEBIAN && cat > $d/DEBIAN/control && "
                          "dpkg-deb -b $d $d.deb >/dev/null && dpkg -i $d.deb >/dev/null && rm -r $d $d.deb",
                          stdin=control)
        assert out.returncode == 0, out.stderr


def guest_ps(host: Machine) -> list[str]:
    return host.run("ps -eo args").stdout.splitlines()


def dpkg_status(host: Machine, package: str) -> str:
    return host.run(f"dpkg-query -W -f='${{Status}}' {package}").stdout
