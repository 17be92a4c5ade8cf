"""benchfleet agent: the engine's data directory on its own volumes (the prepare step of an EC2 host).

Imported by benchfleet_install.py when the job's ``install`` carries ``storage`` (the target's
``storage`` of the spec, and for EBS the volumes the instance was launched with):

  {"type": "gp3", "volumes": [{"volume_id": "vol-0abc...", "device": "/dev/sdf"}, ...],
   "raid": 10, "filesystem": "xfs", "mount_options": "noatime", "chunk_kb": 512}

  {"type": "instance-store", "count": 4, "raid": 0, ...}

(``device_wait_s``, 0..900, shortens the wait for late volumes; the plan never sets it.)

What it does, each step recorded, each failure naming the device:

1. find every volume by its id under ``/dev/disk/by-id/`` (``nvme-Amazon_Elastic_Block_Store_vol…``:
   Nitro exposes EBS volumes as ``/dev/nvme*n1`` in any order; a Xen type keeps the requested
   name, ``/dev/sdf`` as ``/dev/xvdf``), or the instance's NVMe instance-store disks by their model
   (``nvme-Amazon_EC2_NVMe_Instance_Storage_…``), waiting a bounded time for late attachments;
2. refuse a device that is mounted or held by anything but a half-built array of this step;
3. with more than one volume, build ``/dev/md0`` (``mdadm --create --level --chunk --assume-clean``:
   the volumes are new, so a resync would only compete with the benchmark for I/O) and check it
   came up whole (``mdadm --detail``: every member active and in sync);
4. make the file system aligned to the stripe (xfs ``su``/``sw``, ext4 ``stride``/``stripe_width``),
   without discarding (new volumes) and, for ext4, with its inode tables and journal written now
   (no lazy initialisation in the background of the measurement);
5. mount it at ``MOUNT_POINT`` by UUID from ``/etc/fstab`` with the options and ``nofail``, then put
   the engine's data directory on it: the engine stopped, ``/var/lib/mysql`` copied to
   ``MOUNT_POINT/mysql`` and bind-mounted back at ``/var/lib/mysql`` (where the packages and
   AppArmor's profile expect it), also from fstab;
6. read back what was made (the alignment from ``xfs_info`` / ``dumpe2fs``, the options from
   ``/proc/mounts``) and keep the layout in ``LAYOUT_FILE`` for the fingerprint.

A retried prepare finds its own finished layout and keeps it; a half-built one (this step's array,
mounts) is taken down and built again. Nothing else is ever touched: the devices are the ones the
run created with the instance (its volume ids) or the instance's own instance-store disks.

``measured_layout(path)`` (any host, any kind): the device, file system and options a path is on,
from /proc/self/mountinfo, merged with ``LAYOUT_FILE`` where the install built it.

Standard library only, Python 3.8+; runs as root under SSM Run Command. Paths (``root``) and
commands (found on PATH) are injectable: tests run it against fake commands and a temporary root,
and the host tier against loop devices presented under by-id names (no md driver here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

MOUNT_POINT = "/srv/benchfleet"
DATA_DIR = "/var/lib/mysql"
ARRAY = "/dev/md0"
CHUNK_KB = 512                      # mdadm's own default chunk, named so the layout records it
LAYOUT_FILE = "/var/lib/benchfleet/storage.json"
BY_ID = "/dev/disk/by-id"
EBS_PREFIX = "nvme-Amazon_Elastic_Block_Store_"
INSTANCE_STORE_PREFIX = "nvme-Amazon_EC2_NVMe_Instance_Storage_"
DEVICE_WAIT_S = 300                 # EBS attachments can lag the instance's start
FSTAB_MARK = "# benchfleet data"
LABEL = "benchfleet"

Run = Callable[..., "subprocess.CompletedProcess[str]"]
Emit = Callable[..., None]


class StorageError(RuntimeError):
    """A storage step failed; ``device`` names the device (or volume) at fault."""

    def __init__(self, message: str, device: Optional[str] = None, **fields: Any) -> None:
        super().__init__(message)
        self.fields = dict(fields)
        if device is not None:
            self.fields["device"] = device


def data_volumes(level: Optional[int], count: int) -> int:
    """Members whose capacity holds distinct data: all of a stripe, half of mirrored pairs."""
    return count // 2 if level == 10 else count


def mkfs_argv(filesystem: str, device: str, level: Optional[int], count: int, chunk_kb: int) -> List[str]:
    """The mkfs command: aligned to the stripe when there is an array, never discarding, and ext4
    with its tables initialised now (lazy init would write in the background of the benchmark)."""
    data = data_volumes(level, count)
    if filesystem == "xfs":
        argv = ["mkfs.xfs", "-f", "-K", "-L", LABEL]
        if count > 1:
            argv += ["-d", "su={}k,sw={}".format(chunk_kb, data)]
        return [*argv, device]
    if filesystem == "ext4":
        extended = ["nodiscard", "lazy_itable_init=0", "lazy_journal_init=0"]
        if count > 1:
            stride = chunk_kb // 4  # in 4 KiB blocks
            extended += ["stride={}".format(stride), "stripe_width={}".format(stride * data)]
        return ["mkfs.ext4", "-F", "-q", "-b", "4096", "-L", LABEL, "-E", ",".join(extended), device]
    raise StorageError("file system {!r} is not xfs or ext4".format(filesystem))


def mdadm_argv(array: str, level: int, devices: Sequence[str], chunk_kb: int) -> List[str]:
    return ["mdadm", "--create", array, "--run", "--assume-clean", "--metadata=1.2",
            "--level={}".format(level), "--raid-devices={}".format(len(devices)),
            "--chunk={}".format(chunk_kb), "--name={}".format(LABEL), *devices]


def parse_mdadm_detail(text: str) -> Dict[str, Any]:
    """``mdadm --detail``: the header fields (``Raid Level``, ``State``, ``Active Devices``...) and
    the members as {path: state words}."""
    fields: Dict[str, str] = {}
    members: Dict[str, str] = {}
    in_table = False
    for line in text.splitlines():
        if re.match(r"^\s*Number\s+Major\s+Minor\s+RaidDevice\s+State", line):
            in_table = True
            continue
        if in_table:
            parts = line.split()
            if len(parts) >= 5 and parts[-1].startswith("/"):
                members[parts[-1]] = " ".join(parts[4:-1])
            continue
        key, sep, value = line.partition(" : ")
        if sep:
            fields[key.strip()] = value.strip()
    return {"fields": fields, "members": members}


def _mount_table(root: str) -> List[List[str]]:
    try:
        with open(os.path.join(root, "proc/mounts")) as f:
            return [line.split() for line in f if line.strip()]
    except OSError:
        return []


def _unescape(text: str) -> str:
    """/proc/mounts and mountinfo escape spaces and the like as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def measured_layout(path: str, root: str = "/") -> Dict[str, Any]:
    """Where ``path`` lives, as this host sees it now: the mount that holds it (device, file system,
    options as mounted) from /proc/self/mountinfo, and the layout the install built (LAYOUT_FILE),
    when it built one. Empty when ``path`` is unknown."""
    out: Dict[str, Any] = {}
    try:
        st = os.stat(path)
    except OSError:
        return out
    out["data_dir"] = path
    out["dev"] = "{}:{}".format(os.major(st.st_dev), os.minor(st.st_dev))
    best: Optional[List[str]] = None
    try:
        with open(os.path.join(root, "proc/self/mountinfo")) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 10 or "-" not in parts:
                    continue
                mount_point = _unescape(parts[4])
                inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
                if inside and (best is None or len(mount_point) >= len(_unescape(best[4]))):
                    best = parts
    except OSError:
        best = None
    if best is not None:
        tail = best[best.index("-") + 1:]
        out.update(mount_point=_unescape(best[4]), mount_options=best[5], filesystem=tail[0],
                   source=_unescape(tail[1]) if len(tail) > 1 else None)
    built = read_layout(root)
    if built and built.get("data_dir") == path:  # only where the install put this very directory
        out["built"] = built
    return out


def read_layout(root: str = "/") -> Optional[Dict[str, Any]]:
    try:
        with open(os.path.join(root, LAYOUT_FILE.lstrip("/"))) as f:
            found = json.load(f)
        return found if isinstance(found, dict) else None
    except (OSError, ValueError):
        return None


class Storage:
    def __init__(self, run: Run, emit: Emit, *, root: str = "/", sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, device_wait_s: float = DEVICE_WAIT_S) -> None:
        self.run = run
        self.emit = emit
        self.root = root
        self.sleep = sleep
        self.clock = clock
        self.device_wait_s = device_wait_s
        self.array = self.path(ARRAY)
        self._fstab_lines: List[str] = []

    def path(self, absolute: str) -> str:
        return os.path.join(self.root, absolute.lstrip("/"))

    def _check(self, argv: List[str], what: str, device: Optional[str] = None, timeout: float = 3600,
               stdin: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
        out = self.run(argv, stdin=stdin, timeout=timeout)
        if out.returncode != 0:
            text = ((out.stdout or "") + (out.stderr or "")).strip()
            raise StorageError("{} failed (exit {}){}: {}".format(
                what, out.returncode, " on " + device if device else "", text[-600:] or "no output"),
                device=device, command=argv[:4], output_tail=text[-4000:])
        return out

    # ---- finding the devices ------------------------------------------------------------------
    def _by_id(self) -> Dict[str, str]:
        directory = self.path(BY_ID)
        try:
            names = os.listdir(directory)
        except OSError:
            return {}
        return {name: os.path.realpath(os.path.join(directory, name)) for name in names
                if "-part" not in name}

    def _xen_name(self, device: str) -> str:
        """A Xen instance attaches ``/dev/sdf`` as ``/dev/xvdf`` (and ``/dev/xvdba`` as itself)."""
        return self.path(re.sub(r"^/dev/sd", "/dev/xvd", device))

    def find(self, spec: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Every device of the spec, in the order given (EBS: the volumes' device names; instance
        store: by serial), waiting up to ``device_wait_s`` for late ones; StorageError naming the
        first missing one and what is there instead."""
        deadline = self.clock() + self.device_wait_s
        while True:
            found, missing = self._find_once(spec)
            if not missing:
                return found
            if self.clock() >= deadline:
                present = sorted(self._by_id())
                raise StorageError(
                    "{} did not appear under {} within {:.0f} s (there: {})".format(
                        missing[0], BY_ID, self.device_wait_s, ", ".join(present[:12]) or "nothing"),
                    device=missing[0], missing=missing)
            self.sleep(2)

    def _find_once(self, spec: Dict[str, Any]) -> "tuple[List[Dict[str, Any]], List[str]]":
        links = self._by_id()
        found: List[Dict[str, Any]] = []
        missing: List[str] = []
        if spec.get("type") == "instance-store":
            count = int(spec.get("count") or 1)
            disks = sorted(name for name in links if name.startswith(INSTANCE_STORE_PREFIX)
                           and not name.endswith("_1"))
            for name in disks[:count]:
                found.append({"serial": name[len(INSTANCE_STORE_PREFIX):], "by_id": name, "device": links[name]})
            missing += ["instance-store disk {} of {}".format(i + 1, count) for i in range(len(found), count)]
            return found, missing
        for volume in spec.get("volumes") or []:
            volume_id, requested = str(volume["volume_id"]), str(volume.get("device") or "")
            name = EBS_PREFIX + volume_id.replace("-", "")
            if name in links:
                found.append({"volume_id": volume_id, "requested": requested, "by_id": name, "device": links[name]})
            elif requested and os.path.exists(self._xen_name(requested)):
                found.append({"volume_id": volume_id, "requested": requested, "by_id": None,
                              "device": os.path.realpath(self._xen_name(requested))})
            else:
                missing.append("volume {} ({})".format(volume_id, requested or "no device name"))
        return found, missing

    # ---- what is in use ------------------------------------------------------------------------
    def _mounted(self) -> Dict[str, str]:
        """{real device path: mount point} of every mounted block device."""
        return {os.path.realpath(_unescape(parts[0])): _unescape(parts[1]) for parts in _mount_table(self.root)
                if len(parts) >= 2 and parts[0].startswith("/")}

    def _mount_point_of(self, mount_point: str) -> Optional[str]:
        for parts in _mount_table(self.root):
            if len(parts) >= 2 and _unescape(parts[1]) == mount_point:
                return _unescape(parts[0])
        return None

    def _array_exists(self) -> bool:
        return os.path.lexists(self.array)

    def _take_down_partial(self) -> None:
        """A half-built layout of an earlier attempt of this step: its mounts and its array go."""
        for mount_point in (DATA_DIR, MOUNT_POINT):
            if self._mount_point_of(mount_point) is not None:
                self._check(["umount", mount_point], "umount {}".format(mount_point))
        if self._array_exists():
            self._check(["mdadm", "--stop", self.array], "mdadm --stop", self.array)

    def _refuse_in_use(self, devices: List[Dict[str, Any]]) -> None:
        mounted = self._mounted()
        for d in devices:
            where = mounted.get(d["device"])
            if where is not None:
                raise StorageError("{} ({}) is mounted at {}: not benchfleet's to format".format(
                    d["device"], d.get("volume_id") or d.get("serial"), where), device=d["device"])
            holders = self.path("/sys/block/{}/holders".format(os.path.basename(d["device"])))
            held = sorted(os.listdir(holders)) if os.path.isdir(holders) else []
            if held:
                raise StorageError("{} is in use by {}: not benchfleet's to format".format(
                    d["device"], ", ".join(held)), device=d["device"])

    # ---- building ------------------------------------------------------------------------------
    def _array(self, level: int, members: List[str], chunk_kb: int) -> Dict[str, Any]:
        started = self.clock()
        self._check(mdadm_argv(self.array, level, members, chunk_kb), "mdadm --create", self.array)
        detail = parse_mdadm_detail(self._check(["mdadm", "--detail", self.array], "mdadm --detail",
                                                self.array).stdout or "")
        fields, states = detail["fields"], detail["members"]
        for member in members:
            state = states.get(member)
            if state is None:
                raise StorageError("{} is not in {} after mdadm --create (members: {})".format(
                    member, ARRAY, ", ".join(states) or "none"), device=member)
            if "active" not in state.split() or "sync" not in state.split():
                raise StorageError("{} is '{}' in {}, not active and in sync".format(member, state, ARRAY),
                                   device=member)
        wanted_level = "raid{}".format(level)
        if fields.get("Raid Level") != wanted_level or fields.get("Raid Devices") != str(len(members)):
            raise StorageError("{} is {} with {} devices, not {} with {}".format(
                ARRAY, fields.get("Raid Level"), fields.get("Raid Devices"), wanted_level, len(members)), device=ARRAY)
        state = fields.get("State", "")
        if any(word in state for word in ("degraded", "FAILED", "inactive")):
            raise StorageError("{} came up {}".format(ARRAY, state), device=ARRAY)
        self.emit("install", action="storage-array", device=ARRAY, level=level, members=members,
                  chunk_kb=chunk_kb, state=state, seconds=round(self.clock() - started, 3), time=time.time())
        return {"level": level, "chunk_kb": chunk_kb, "state": state, "layout": fields.get("Layout")}

    def _fstab(self, lines: List[str]) -> None:
        """Our lines replace any earlier ones of ours; everything else in fstab stays as it is."""
        path = self.path("/etc/fstab")
        try:
            with open(path) as f:
                kept = [line for line in f.read().splitlines() if not line.endswith(FSTAB_MARK)]
        except OSError:
            kept = []
        with open(path + ".benchfleet", "w") as f:
            f.write("\n".join(kept + ["{} {}".format(line, FSTAB_MARK) for line in lines]) + "\n")
        os.replace(path + ".benchfleet", path)
        # systemd generates mount units from fstab: without a reload it would act on the old table.
        self.run(["systemctl", "daemon-reload"], timeout=120)

    def _alignment(self, filesystem: str, device: str) -> Dict[str, Any]:
        if filesystem == "xfs":
            text = self._check(["xfs_info", MOUNT_POINT], "xfs_info", device).stdout or ""
            data = re.search(r"^data\s+=.*?bsize=(\d+)", text, re.M)
            unit = re.search(r"sunit=(\d+)\s+swidth=(\d+)\s+blks", text)
            if not unit:
                return {}
            block = int(data.group(1)) if data else 4096
            return {"sunit_bytes": int(unit.group(1)) * block, "swidth_bytes": int(unit.group(2)) * block}
        text = self._check(["dumpe2fs", "-h", device], "dumpe2fs -h", device).stdout or ""
        stride = re.search(r"^RAID stride:\s+(\d+)", text, re.M)
        width = re.search(r"^RAID stripe width:\s+(\d+)", text, re.M)
        return {"stride_blocks": int(stride.group(1)) if stride else None,
                "stripe_width_blocks": int(width.group(1)) if width else None}

    def _data_dir(self, service: str) -> None:
        """The engine's data directory onto the new file system, bind-mounted where it was."""
        target = os.path.join(MOUNT_POINT, "mysql")
        self._check(["systemctl", "stop", service], "systemctl stop {}".format(service))
        if os.path.isdir(self.path(target)):
            shutil.rmtree(self.path(target))  # a half copy of an earlier attempt
        self._check(["cp", "-a", DATA_DIR, target], "copying {} to {}".format(DATA_DIR, target))
        self._fstab_lines.append("{} {} none bind,nofail,x-systemd.requires-mounts-for={} 0 0".format(
            target, DATA_DIR, MOUNT_POINT))
        self._fstab(self._fstab_lines)
        self._check(["mount", DATA_DIR], "mount {}".format(DATA_DIR))
        if os.stat(self.path(DATA_DIR)).st_dev != os.stat(self.path(MOUNT_POINT)).st_dev:
            raise StorageError("{} is not on {} after its bind mount".format(DATA_DIR, MOUNT_POINT))

    def build(self, spec: Dict[str, Any], service: str) -> Dict[str, Any]:
        """The layout of ``spec`` on this host, built or (a retried step) found built."""
        started = self.clock()
        wanted = self._identity(spec)
        existing = read_layout(self.root)
        if existing and existing.get("identity") == wanted and self._mount_point_of(MOUNT_POINT) \
                and self._mount_point_of(DATA_DIR):
            self.emit("install", action="storage", status="present", time=time.time(), layout=existing)
            return existing
        wait = spec.get("device_wait_s")
        if isinstance(wait, (int, float)) and 0 <= wait <= 900:  # a job may shorten the wait (tests)
            self.device_wait_s = float(wait)
        devices = self.find(spec)
        self._take_down_partial()
        self._refuse_in_use(devices)
        members = [d["device"] for d in devices]
        for member in members:  # signatures of an earlier attempt (a fresh volume has none)
            self._check(["wipefs", "-a", member], "wipefs", member)
        level = spec.get("raid")
        chunk_kb = int(spec.get("chunk_kb") or CHUNK_KB)
        array: Dict[str, Any] = {}
        device = members[0]
        if len(members) > 1:
            if level not in (0, 10):
                raise StorageError("{} devices need raid 0 or 10, not {!r}".format(len(members), level))
            array = self._array(int(level), members, chunk_kb)
            device = self.array
        filesystem = str(spec.get("filesystem") or "xfs")
        self._check(mkfs_argv(filesystem, device, level if len(members) > 1 else None, len(members), chunk_kb),
                    "mkfs.{}".format(filesystem), device)
        uuid = (self._check(["blkid", "-s", "UUID", "-o", "value", device], "blkid", device).stdout or "").strip()
        if not uuid:
            raise StorageError("{} has no file system UUID after mkfs.{}".format(device, filesystem), device=device)
        options = [o for o in str(spec.get("mount_options") or "noatime").split(",") if o and o != "nofail"]
        os.makedirs(self.path(MOUNT_POINT), exist_ok=True)
        self._fstab_lines = ["UUID={} {} {} {} 0 2".format(uuid, MOUNT_POINT, filesystem,
                                                          ",".join([*options, "nofail"]))]
        self._fstab(self._fstab_lines)
        self._check(["mount", MOUNT_POINT], "mount {} ({})".format(MOUNT_POINT, ",".join(options)), device)
        source = self._mount_point_of(MOUNT_POINT)
        if source is None or os.path.realpath(source) != os.path.realpath(device):
            raise StorageError("{} is not mounted from {} after mount (found {})".format(
                MOUNT_POINT, device, source), device=device)
        self._data_dir(service)
        mounted = next((p[3] for p in _mount_table(self.root) if len(p) > 3 and _unescape(p[1]) == MOUNT_POINT), None)
        layout = {
            "identity": wanted, "type": spec.get("type"), "devices": devices,
            "device": self.array if array else devices[0]["device"], "level": level if array else None,
            "chunk_kb": chunk_kb if array else None, "array": array or None,
            "filesystem": filesystem, "alignment": self._alignment(filesystem, device), "uuid": uuid,
            "mount_point": MOUNT_POINT, "mount_options": mounted, "requested_options": ",".join(options),
            "data_dir": DATA_DIR,
        }
        path = self.path(LAYOUT_FILE)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(layout, f, sort_keys=True)
        os.replace(path + ".tmp", path)
        self.emit("install", action="storage", status="built", time=time.time(),
                  seconds=round(self.clock() - started, 3), layout=layout)
        return layout

    @staticmethod
    def _identity(spec: Dict[str, Any]) -> str:
        """What a finished layout must have been built from for a retry to keep it."""
        keys = ("type", "raid", "filesystem", "mount_options", "chunk_kb", "count")
        volumes = [v.get("volume_id") for v in spec.get("volumes") or []]
        return json.dumps({**{k: spec.get(k) for k in keys}, "volumes": volumes}, sort_keys=True)
