"""benchfleet agent: per-second figures of the disk the engine's data directory is on.

``/proc/diskstats`` of that block device (a partition, a whole disk, an md array), read beside the
CPU times at every sysbench interval line, so each sample's disk figures cover the same second as
its rates and its CPU steal: completed reads and writes per second, MiB read and written per second
(1 MiB = 1,048,576 bytes, as iostat -m and EBS volume throughput count), and ``await``, the mean time
a completed request took (queue and service, ms) as iostat computes it. A second without a completed
request has no await (None), not 0.

The device is the one ``stat(data_dir)`` names (major:minor); where that is not a block device
(btrfs subvolumes, overlay) the mount's source device in /proc/self/mountinfo. Where there is none
(tmpfs, overlay, a data directory on another host), the figures are None and ``why_not`` says why.
md arrays account their I/O in the kernels of current distributions (5.x and later, bio-based
accounting); the figures are the array's, not its members'.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Tuple

SECTOR_BYTES = 512      # /proc/diskstats counts 512-byte sectors whatever the device's own size
MIB = 1024 * 1024
EMPTY = {"disk_reads_per_s": None, "disk_writes_per_s": None, "disk_read_mib_per_s": None,
         "disk_write_mib_per_s": None, "disk_await_ms": None}

Reading = Tuple[float, List[int]]


def _table(path: str) -> Dict[str, Tuple[int, int, List[int]]]:
    """{name: (major, minor, counters)} of /proc/diskstats."""
    out: Dict[str, Tuple[int, int, List[int]]] = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 14:
                    out[parts[2]] = (int(parts[0]), int(parts[1]), [int(v) for v in parts[3:14]])
    except (OSError, ValueError):
        pass
    return out


def _mount_source(path: str, mountinfo: str) -> Tuple[Optional[str], Optional[str]]:
    """(file system, source) of the mount that holds ``path``."""
    best: Optional[List[str]] = None
    try:
        with open(mountinfo) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 10 or "-" not in parts:
                    continue
                point = parts[4]
                if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                        (best is None or len(point) >= len(best[4])):
                    best = parts
    except OSError:
        return None, None
    if best is None:
        return None, None
    tail = best[best.index("-") + 1:]
    return tail[0], (tail[1] if len(tail) > 1 else None)


def device_of(path: str, diskstats: str = "/proc/diskstats",
              mountinfo: str = "/proc/self/mountinfo") -> Tuple[Optional[str], Optional[str]]:
    """(device name in /proc/diskstats, None) for the disk ``path`` lives on, or (None, why not)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return None, "cannot stat {}: {}".format(path, e.strerror or e)
    table = _table(diskstats)
    wanted = (os.major(st.st_dev), os.minor(st.st_dev))
    for name, (major, minor, _) in table.items():
        if (major, minor) == wanted:
            return name, None
    fs, source = _mount_source(os.path.realpath(path), mountinfo)
    if source and source.startswith("/dev/"):
        name = os.path.basename(os.path.realpath(source))
        if name in table:
            return name, None
    return None, "{} is on {} ({}), not a block device in /proc/diskstats".format(path, fs or "an unknown file system",
                                                                                  source or "no source")


class DiskStats:
    """The counters of one device, read with one pread of /proc/diskstats per sample."""

    def __init__(self, data_dir: Optional[str], path: str = "/proc/diskstats",
                 mountinfo: str = "/proc/self/mountinfo", clock=time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.device: Optional[str] = None
        self.why_not: Optional[str] = None
        if data_dir:
            self.device, self.why_not = device_of(data_dir, path, mountinfo)
        else:
            self.why_not = "no data directory on this host"

    def read(self) -> Optional[Reading]:
        if self.device is None:
            return None
        found = _table(self.path).get(self.device)
        return (self.clock(), found[2]) if found else None


def disk_rates(before: Optional[Reading], after: Optional[Reading]) -> Dict[str, Optional[float]]:
    """Per-second figures between two readings (EMPTY when either is missing or no time passed)."""
    if before is None or after is None or after[0] <= before[0]:
        return dict(EMPTY)
    seconds = after[0] - before[0]
    d = [a - b for a, b in zip(after[1], before[1])]
    if any(v < 0 for v in (d[0], d[2], d[3], d[4], d[6], d[7])):  # counters wrapped or the device was reset
        return dict(EMPTY)
    ops = d[0] + d[4]
    return {"disk_reads_per_s": round(d[0] / seconds, 3), "disk_writes_per_s": round(d[4] / seconds, 3),
            "disk_read_mib_per_s": round(d[2] * SECTOR_BYTES / MIB / seconds, 4),
            "disk_write_mib_per_s": round(d[6] * SECTOR_BYTES / MIB / seconds, 4),
            "disk_await_ms": round((d[3] + d[7]) / ops, 3) if ops else None}
