"""workloads/agent/benchfleet_storage.py against a simulated host: a temporary root holding
/dev/disk/by-id links, /proc/mounts, /etc/fstab and /var/lib/mysql, and a Python stand-in for the
commands (mdadm, mkfs, blkid, mount, ...) that records every argv and keeps the state a kernel would.
What the commands really do on a booted host with loop devices: tests/host (test_agent_on_host.py,
test_run_end_to_end.py; its README lists what stays unproven)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.agent_modules import load

storage: Any = load("benchfleet_storage")

VOLUMES = [f"vol-0{i}aa{i}bb{i}cc{i}dd{i}ee" for i in range(8)]
DEVICES = [f"/dev/sd{c}" for c in "fghijklm"]


class FakeHost:
    """The commands, as a kernel and util-linux would answer them, on files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[list[str]] = []
        self.uuids: dict[str, tuple[str, str]] = {}   # device -> (uuid, fs type)
        self.array: dict[str, Any] | None = None
        self.faulty: str | None = None
        self.fail: dict[str, str] = {}                 # command name -> stderr, exit 1
        for d in ("dev/disk/by-id", "proc", "etc", "var/lib/mysql/mysql", "sys/block"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "proc/mounts").write_text("/dev/nvme0n1p1 / ext4 rw,relatime 0 0\n")
        (root / "etc/fstab").write_text("LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n")
        (root / "var/lib/mysql/ibdata1").write_text("innodb")

    def dev(self, name: str) -> str:
        return str(self.root / "dev" / name)

    def attach(self, link: str, name: str) -> None:
        (self.root / "dev" / name).write_text("")
        (self.root / "dev/disk/by-id" / link).symlink_to(f"../../{name}")

    def attach_ebs(self, volumes: list[str], order: list[int]) -> None:
        """Nitro names the volumes nvme1n1.. in an order of its own (``order``)."""
        for nvme, i in enumerate(order, start=1):
            self.attach(storage.EBS_PREFIX + volumes[i].replace("-", ""), f"nvme{nvme}n1")

    def mounts(self) -> list[list[str]]:
        return [line.split() for line in (self.root / "proc/mounts").read_text().splitlines()]

    def _fstab_entry(self, point: str) -> list[str]:
        for line in (self.root / "etc/fstab").read_text().splitlines():
            parts = line.split()
            if len(parts) > 3 and parts[1] == point:
                return parts
        raise AssertionError(f"mount {point}: not in fstab")

    def __call__(self, argv: list[str], stdin: str | None = None, timeout: float = 0) -> Any:
        self.calls.append(list(argv))
        name, args = argv[0], argv[1:]
        if name in self.fail:
            return subprocess.CompletedProcess(argv, 1, "", self.fail[name])
        out = ""
        if name == "mdadm" and args[0] == "--create":
            members = [a for a in args[2:] if not a.startswith("--")]
            level = next(a.split("=")[1] for a in args if a.startswith("--level="))
            chunk = next(a.split("=")[1] for a in args if a.startswith("--chunk="))
            self.array = {"level": level, "members": members, "chunk": chunk}
            Path(args[1]).write_text("")
        elif name == "mdadm" and args[0] == "--detail":
            assert self.array
            rows = "\n".join(f"       {i}     259        {i}        {i}      "
                             f"{'faulty' if m == self.faulty else 'active sync set-' + 'AB'[i % 2]}   {m}"
                             for i, m in enumerate(self.array["members"]))
            out = (f"{args[1]}:\n           Version : 1.2\n        Raid Level : raid{self.array['level']}\n"
                   f"      Raid Devices : {len(self.array['members'])}\n"
                   f"             State : {'clean, degraded' if self.faulty else 'clean'} \n"
                   f"            Layout : near=2\n        Chunk Size : {self.array['chunk']}K\n\n"
                   f"    Number   Major   Minor   RaidDevice State\n{rows}\n")
        elif name == "mdadm" and args[0] == "--stop":
            Path(args[1]).unlink()
            self.array = None
        elif name.startswith("mkfs."):
            self.uuids[args[-1]] = (f"uuid-{len(self.uuids)}", name.split(".")[1])
        elif name == "blkid":
            out = self.uuids[args[-1]][0] + "\n"
        elif name == "mount":
            point = args[0]
            entry = self._fstab_entry(point)
            if entry[2] == "none":  # a bind mount: the same device as its source
                source = next(m for m in self.mounts() if entry[0].startswith(m[1] + "/"))
                line = f"{source[0]} {point} {source[2]} {source[3]} 0 0"
            else:
                device = next(d for d, (u, _) in self.uuids.items() if entry[0] == f"UUID={u}")
                opts = ",".join(o for o in entry[3].split(",") if o != "nofail")
                line = f"{device} {point} {entry[2]} rw,{opts} 0 0"
            with (self.root / "proc/mounts").open("a") as f:
                f.write(line + "\n")
        elif name == "umount":
            kept = [m for m in self.mounts() if m[1] != args[0]]
            (self.root / "proc/mounts").write_text("".join(" ".join(m) + "\n" for m in kept))
        elif name == "cp":
            shutil.copytree(self.root / args[1].lstrip("/"), self.root / args[2].lstrip("/"), symlinks=True)
        elif name == "xfs_info":
            out = ("meta-data=/dev/md0 isize=512 agcount=16, agsize=1 blks\n"
                   "data     =                       bsize=4096   blocks=52428800, imaxpct=25\n"
                   "         =                       sunit=128    swidth=512 blks\n")
        elif name == "dumpe2fs":
            out = "Filesystem volume name:   benchfleet\nRAID stride:              128\nRAID stripe width:        512\n"
        return subprocess.CompletedProcess(argv, 0, out, "")

    def names(self) -> list[str]:
        return [" ".join(c[:2]) if c[0] in ("mdadm", "systemctl") else c[0] for c in self.calls]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, s: float) -> None:
        self.now += s

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path / "root")


def builder(host: FakeHost, records: list[dict[str, Any]], clock: Clock | None = None, wait_s: float = 300) -> Any:
    clock = clock or Clock()
    return storage.Storage(host, lambda kind, **f: records.append({"type": kind, **f}), root=str(host.root),
                           sleep=clock.sleep, clock=clock, device_wait_s=wait_s)


def ebs_spec(n: int, **more: Any) -> dict[str, Any]:
    return {"type": "gp3", "volumes": [{"volume_id": VOLUMES[i], "device": DEVICES[i]} for i in range(n)],
            "count": n, "raid": 10 if n > 1 else None, "filesystem": "xfs", "mount_options": "noatime", **more}


def test_eight_volumes_in_raid10_found_by_id_in_any_order(host: FakeHost) -> None:
    # Nitro's order is not the launch order: nvme1n1 is the sixth volume, and so on.
    host.attach_ebs(VOLUMES, [5, 2, 7, 0, 3, 6, 1, 4])
    host.attach("nvme-Amazon_Elastic_Block_Store_vol0rootrootroot", "nvme0n1")  # the root volume: never touched
    records: list[dict[str, Any]] = []
    layout = builder(host, records).build(ebs_spec(8), "mariadb")
    members = [d["device"] for d in layout["devices"]]
    # The stripe follows the launch order (sdf, sdg, ...), whatever Nitro named them.
    assert members == [host.dev(f"nvme{n}n1") for n in (4, 7, 2, 5, 8, 1, 6, 3)]
    assert [d["volume_id"] for d in layout["devices"]] == VOLUMES
    array = host.dev("md0")
    assert [" ".join(c) for c in host.calls if c[:2] == ["mdadm", "--create"]] == [
        f"mdadm --create {array} --run --assume-clean --metadata=1.2 --level=10 --raid-devices=8 --chunk=512 "
        f"--name=benchfleet {' '.join(members)}"]
    assert ["mkfs.xfs", "-f", "-K", "-L", "benchfleet", "-d", "su=512k,sw=4", array] in host.calls
    assert host.names() == ["wipefs"] * 8 + ["mdadm --create", "mdadm --detail", "mkfs.xfs", "blkid",
                                             "systemctl daemon-reload", "mount", "systemctl stop", "cp",
                                             "systemctl daemon-reload", "mount", "xfs_info"]
    fstab = (host.root / "etc/fstab").read_text().splitlines()
    assert fstab[0].startswith("LABEL=cloudimg-rootfs")  # the image's own lines stay
    assert fstab[1:] == ["UUID=uuid-0 /srv/benchfleet xfs noatime,nofail 0 2 # benchfleet data",
                         "/srv/benchfleet/mysql /var/lib/mysql none bind,nofail,x-systemd.requires-mounts-for="
                         "/srv/benchfleet 0 0 # benchfleet data"]
    assert (host.root / "srv/benchfleet/mysql/ibdata1").read_text() == "innodb"  # the data directory moved
    assert layout["level"] == 10 and layout["chunk_kb"] == 512 and layout["filesystem"] == "xfs"
    assert layout["alignment"] == {"sunit_bytes": 512 * 1024, "swidth_bytes": 4 * 512 * 1024}
    assert layout["mount_options"] == "rw,noatime" and layout["device"] == array
    assert json.loads((host.root / "var/lib/benchfleet/storage.json").read_text()) == layout
    assert [r["action"] for r in records] == ["storage-array", "storage"] and records[1]["status"] == "built"


@pytest.mark.parametrize(("n", "raid", "extended"), [
    (1, None, "nodiscard,lazy_itable_init=0,lazy_journal_init=0"),
    (4, 0, "nodiscard,lazy_itable_init=0,lazy_journal_init=0,stride=128,stripe_width=512"),
    (4, 10, "nodiscard,lazy_itable_init=0,lazy_journal_init=0,stride=128,stripe_width=256"),
])
def test_ext4_is_aligned_to_the_stripe_and_initialised_now(host: FakeHost, n: int, raid: int | None,
                                                           extended: str) -> None:
    host.attach_ebs(VOLUMES[:n], list(range(n)))
    layout = builder(host, []).build(ebs_spec(n, raid=raid, filesystem="ext4", mount_options="noatime,nodiratime"),
                                     "mysql")
    device = host.dev("md0") if n > 1 else host.dev("nvme1n1")
    assert ["mkfs.ext4", "-F", "-q", "-b", "4096", "-L", "benchfleet", "-E", extended, device] in host.calls
    assert any(c[0] == "mdadm" for c in host.calls) is (n > 1)
    assert ["systemctl", "stop", "mysql"] in host.calls
    assert layout["alignment"] == {"stride_blocks": 128, "stripe_width_blocks": 512}  # as dumpe2fs reads it back
    assert "UUID=uuid-0 /srv/benchfleet ext4 noatime,nodiratime,nofail 0 2 # benchfleet data" in \
        (host.root / "etc/fstab").read_text()


def test_a_volume_that_never_appears_fails_naming_it_and_formats_nothing(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:7], list(range(7)))
    clock = Clock()
    with pytest.raises(storage.StorageError) as e:
        builder(host, [], clock, wait_s=60).build(ebs_spec(8), "mariadb")
    assert str(e.value).startswith(f"volume {VOLUMES[7]} (/dev/sdm) did not appear under /dev/disk/by-id within 60 s")
    assert e.value.fields["device"] == f"volume {VOLUMES[7]} (/dev/sdm)"
    assert 60 <= clock.now <= 62 and host.calls == []  # waited its bound, touched nothing


def test_a_late_volume_is_waited_for(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:1], [0])
    clock = Clock()
    calls = {"n": 0}

    def sleep(s: float) -> None:
        clock.sleep(s)
        calls["n"] += 1
        if calls["n"] == 3:  # the second volume attaches six seconds in
            host.attach(storage.EBS_PREFIX + VOLUMES[1].replace("-", ""), "nvme2n1")

    s = storage.Storage(host, lambda *a, **k: None, root=str(host.root), sleep=sleep, clock=clock)
    layout = s.build(ebs_spec(2, raid=0), "mariadb")
    assert [d["device"] for d in layout["devices"]] == [host.dev("nvme1n1"), host.dev("nvme2n1")]
    assert clock.now == 6


def test_a_device_in_use_is_refused_by_name(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:2], [0, 1])
    with (host.root / "proc/mounts").open("a") as f:
        f.write(f"{host.dev('nvme2n1')} /home ext4 rw 0 0\n")
    with pytest.raises(storage.StorageError) as e:
        builder(host, []).build(ebs_spec(2, raid=0), "mariadb")
    assert f"{host.dev('nvme2n1')} ({VOLUMES[1]}) is mounted at /home" in str(e.value)
    assert e.value.fields["device"] == host.dev("nvme2n1")
    assert not any(c[0] in ("wipefs", "mdadm") or c[0].startswith("mkfs") for c in host.calls)


def test_an_array_that_comes_up_degraded_fails_naming_the_member(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:4], [0, 1, 2, 3])
    host.faulty = host.dev("nvme3n1")
    with pytest.raises(storage.StorageError) as e:
        builder(host, []).build(ebs_spec(4), "mariadb")
    assert str(e.value) == f"{host.dev('nvme3n1')} is 'faulty' in /dev/md0, not active and in sync"
    assert e.value.fields["device"] == host.dev("nvme3n1")
    assert not any(c[0].startswith("mkfs") for c in host.calls)


def test_a_failed_mdadm_names_the_array_and_says_why(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:2], [0, 1])
    host.fail["mdadm"] = "mdadm: cannot open /dev/nvme2n1: Device or resource busy"
    with pytest.raises(storage.StorageError) as e:
        builder(host, []).build(ebs_spec(2, raid=0), "mariadb")
    assert "mdadm --create failed (exit 1) on " in str(e.value) and "Device or resource busy" in str(e.value)


def test_a_retry_keeps_a_finished_layout_and_rebuilds_a_half_built_one(host: FakeHost) -> None:
    host.attach_ebs(VOLUMES[:2], [0, 1])
    host.fail["mkfs.xfs"] = "mkfs.xfs: cannot open: interrupted"
    with pytest.raises(storage.StorageError):
        builder(host, []).build(ebs_spec(2, raid=0), "mariadb")
    assert (host.root / "dev/md0").exists()  # the array of the failed attempt
    del host.fail["mkfs.xfs"]
    host.calls.clear()
    first = builder(host, []).build(ebs_spec(2, raid=0), "mariadb")
    assert host.names()[:3] == ["mdadm --stop", "wipefs", "wipefs"]  # taken down, then built again
    host.calls.clear()
    records: list[dict[str, Any]] = []
    again = builder(host, records).build(ebs_spec(2, raid=0), "mariadb")
    assert again == first and host.calls == [] and records[0]["status"] == "present"
    # The same host asked for another layout: built again, not kept.
    host.calls.clear()
    builder(host, []).build(ebs_spec(2, raid=0, filesystem="ext4"), "mariadb")
    assert "umount" in host.names() and "mkfs.ext4" in host.names()


def test_a_xen_instance_keeps_the_requested_name(host: FakeHost) -> None:
    (host.root / "dev/xvdf").write_text("")
    layout = builder(host, []).build(ebs_spec(1), "mariadb")
    assert layout["devices"] == [{"volume_id": VOLUMES[0], "requested": "/dev/sdf", "by_id": None,
                                  "device": host.dev("xvdf")}]


def test_instance_store_disks_are_found_by_their_model(host: FakeHost) -> None:
    for i, serial in enumerate(["AWS3C1D", "AWS1A2B", "AWS4F00", "AWS2B3C"]):
        host.attach(storage.INSTANCE_STORE_PREFIX + serial, f"nvme{i + 1}n1")
        host.attach(storage.INSTANCE_STORE_PREFIX + serial + "_1", f"nvme{i + 1}n1x")  # udev's namespace alias
    spec = {"type": "instance-store", "count": 2, "raid": 0, "filesystem": "xfs", "mount_options": "noatime"}
    layout = builder(host, []).build(spec, "mariadb")
    assert [d["serial"] for d in layout["devices"]] == ["AWS1A2B", "AWS2B3C"]
    with pytest.raises(storage.StorageError) as e:
        builder(host, [], wait_s=0).build({**spec, "count": 5}, "mariadb")
    assert str(e.value).startswith("instance-store disk 5 of 5 did not appear")


def test_measured_layout_reads_the_mount_that_holds_a_path(tmp_path: Path) -> None:
    found = storage.measured_layout(str(tmp_path))
    st = os.stat(tmp_path)
    assert found["dev"] == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    assert found["mount_point"] and str(tmp_path).startswith(found["mount_point"])
    assert found["filesystem"] and found["mount_options"]
    assert "built" not in found  # no install built this directory
    assert storage.measured_layout(str(tmp_path / "missing")) == {}


def test_parse_mdadm_detail_reads_a_real_report() -> None:
    text = """/dev/md0:
           Version : 1.2
     Creation Time : Tue Nov 24 10:00:00 2026
        Raid Level : raid10
        Array Size : 838336512 (799.50 GiB 858.46 GB)
      Raid Devices : 8
     Total Devices : 8
             State : clean, resyncing
    Active Devices : 8
            Layout : near=2
        Chunk Size : 512K

    Number   Major   Minor   RaidDevice State
       0     259        1        0      active sync set-A   /dev/nvme1n1
       1     259        2        1      active sync set-B   /dev/nvme2n1
       -       0        0        2      removed
       3     259        4        3      faulty   /dev/nvme4n1
"""
    detail = storage.parse_mdadm_detail(text)
    assert detail["fields"]["Raid Level"] == "raid10" and detail["fields"]["Chunk Size"] == "512K"
    assert detail["members"] == {"/dev/nvme1n1": "active sync set-A", "/dev/nvme2n1": "active sync set-B",
                                 "/dev/nvme4n1": "faulty"}


def test_the_lambdas_and_the_agent_agree_on_the_data_directory() -> None:
    from benchfleet.aws.steps import jobs

    assert jobs.DATA_DIR == storage.DATA_DIR
