"""The storage part of a target: the data volume(s) of a server benchfleet installs.

EBS volumes (gp3, io2, ...) or the instance's own NVMe disks, one or striped as RAID 0, with the
filesystem and mount options. What each volume and the stripe can then do is plan.stripe; what they
cost, cost.pricing; whether the type, size and rates exist, cost.catalogue.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from benchfleet.spec.fields import FieldProblem, StrictModel

# One mount option: a word, or word=value (fstab syntax); the list is comma separated.
MOUNT_OPTION = re.compile(r"^[a-z][a-z0-9_.-]{0,47}(?:=[A-Za-z0-9_.:/+-]{1,64})?$")
# Options that would not give the benchmark a writable data directory on the array, or would put it
# somewhere else: refused, named, before anything is created. `nofail` is always added.
REFUSED_MOUNT_OPTIONS = ("ro", "remount", "bind", "rbind", "move", "loop", "noauto", "user", "users",
                          "owner", "group", "x-systemd.automount")
STORAGE_LAYOUT_KEYS = ("volumes", "raid", "filesystem", "mount_options")


class Storage(StrictModel):
    """The data volume(s) of a server benchfleet installs (ec2; the same model per node of a cluster)."""

    type: Literal["gp2", "gp3", "io1", "io2", "instance-store"] = Field(
        "gp3", description="EBS volume type, or the instance's local NVMe disks (instance-store)")
    size_gb: int = Field(100, ge=8, le=65536, description="Size of each volume, GiB")
    iops: int | None = Field(None, ge=100, le=256_000, description="Provisioned IOPS of each volume")
    throughput_mbps: int | None = Field(None, ge=125, le=4000, description="Throughput of each gp3 volume, MiB/s")
    volumes: int = Field(1, ge=1, le=24, description="Volumes striped into one array with software RAID "
                         "(1: one volume, no array); each gets type, size_gb, iops and throughput_mbps. "
                         "instance-store: how many of the instance's NVMe disks")
    raid: Literal[0, 10] | None = Field(None, description="RAID level of the array when volumes > 1: 0 (stripe) "
                                        "or 10 (striped mirrors, an even number of volumes)")
    filesystem: Literal["xfs", "ext4"] = Field("xfs", description="File system made on the volume or array, "
                                               "aligned to the stripe")
    mount_options: str = Field("noatime", min_length=1, max_length=256,
                               description="Mount options, comma separated (nofail is always added)")

    @field_validator("mount_options")
    @classmethod
    def _mount_options(cls, v: str) -> str:
        options = [o.strip() for o in v.split(",")]
        for option in options:
            if not MOUNT_OPTION.match(option):
                raise ValueError(f"{option!r} is not a mount option (word or word=value, comma separated)")
            if option.split("=", 1)[0] in REFUSED_MOUNT_OPTIONS:
                raise ValueError(f"{option}: the data directory must be mounted read-write on the array "
                                 f"itself; {', '.join(REFUSED_MOUNT_OPTIONS)} are refused")
        if len(set(options)) != len(options):
            raise ValueError("an option is given twice")
        return ",".join(options)

    @model_validator(mode="after")
    def _stripe(self) -> Storage:
        if self.volumes > 1 and self.raid is None:
            raise FieldProblem("raid", f"{self.volumes} volumes need a RAID level: 0 (stripe) or 10 (striped mirrors)")
        if self.volumes == 1 and self.raid is not None:
            raise FieldProblem("raid", f"RAID {self.raid} needs volumes > 1 (one volume is used as it is)")
        if self.raid == 10 and self.volumes % 2:
            raise FieldProblem("volumes", f"RAID 10 mirrors volumes in pairs: give an even number, not {self.volumes}")
        return self

    @property
    def data_volumes(self) -> int:
        """Volumes whose capacity holds distinct data: all of a stripe, half of striped mirrors."""
        return self.volumes // 2 if self.raid == 10 else self.volumes
