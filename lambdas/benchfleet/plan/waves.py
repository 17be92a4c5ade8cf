"""Waves: a cloud run's repetitions scheduled so that at no moment do its hosts exceed a region's caps.

An account's quota (EC2 On-Demand vCPUs, DB instances) caps what one run may have running at once in a
region (``Caps``: the deployment's maxVcpusPerRegion / maxHostsPerRegion). Rather than refuse a run that
does not fit at once, each repetition of each target (an ``Item``: its hosts, every host of the target,
a cluster's nodes as they come, and how long it takes) starts at the earliest moment it fits beside what
is already placed, in the order the comparison wants them measured: every target's first repetition,
then every second one (so that each wave holds a repetition of as many targets as fit, measured at the
same time of day), each target's repetitions in order. A repetition that waits for another's hosts
starts ``GAP_S`` after they are planned gone, for a provisioning or teardown that runs late.

Only a repetition larger than a cap on its own is refused (``TooLarge``). The state machine runs the
schedule as each repetition's start offset (``Wait for its start``); provision retries a quota refusal
for a while should a previous wave still hold its hosts (``QuotaExceeded``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Seconds between a repetition's planned end and a waiting repetition's start: terminating an EC2
# host takes about a minute, and estimates of provisioning and steps can run late.
GAP_S = 300


class HostLike(Protocol):
    @property
    def service(self) -> str: ...  # "ec2" (counts vCPUs and a host) or "rds" (a DB instance: a host)

    @property
    def instance_type(self) -> str: ...

    @property
    def vcpus(self) -> int | None: ...

    @property
    def region(self) -> str: ...


@dataclass(frozen=True)
class Caps:
    """What one run may have running at once in each region, and the settings that set it."""

    max_vcpus: int
    max_hosts: int
    vcpus_key: str = "maxVcpusPerRegion"
    hosts_key: str = "maxHostsPerRegion"


@dataclass(frozen=True)
class Item:
    """One repetition of one target: every host it runs at once, and its planned seconds."""

    target_id: str
    repetition: int
    hosts: tuple[HostLike, ...]
    duration_s: int
    # Not before this offset from the run's start (a spec's repetition_spacing_s).
    earliest_s: int = 0
    # Not before this item ends: the backend runs this target's repetitions so many at a time.
    after: tuple[str, int] | None = None


@dataclass(frozen=True)
class Slot:
    item: Item
    start_s: int
    # Why it starts then: "start", "spacing" (repetition_spacing_s), "capacity" (waits for another's
    # hosts to go) or "sequence" (after the target's previous repetition).
    reason: str = "start"
    # The slot whose end it waited for (capacity, sequence).
    waited_for: Slot | None = field(default=None, compare=False, repr=False)

    @property
    def end_s(self) -> int:
        return self.start_s + self.item.duration_s


class TooLarge(ValueError):
    """One repetition alone needs more than a region's cap: no schedule can run it."""

    def __init__(self, message: str, target_id: str) -> None:
        super().__init__(message)
        self.target_id = target_id


@dataclass
class Usage:
    ec2_vcpus: int = 0
    ec2_hosts: int = 0
    db_instances: int = 0
    unknown_vcpus: list[str] = field(default_factory=list)

    def add(self, host: HostLike) -> None:
        if host.service == "rds":
            self.db_instances += 1
        elif host.vcpus is None:
            self.ec2_hosts += 1
            self.unknown_vcpus.append(host.instance_type)
        else:
            self.ec2_hosts += 1
            self.ec2_vcpus += host.vcpus

    @property
    def hosts(self) -> int:
        return self.ec2_hosts + self.db_instances

    def fits(self, caps: Caps) -> bool:
        return self.ec2_vcpus <= caps.max_vcpus and self.hosts <= caps.max_hosts


def usage(items: Sequence[Item]) -> dict[str, Usage]:
    """Per region, what these items run together."""
    out: dict[str, Usage] = {}
    for item in items:
        for host in item.hosts:
            out.setdefault(host.region, Usage()).add(host)
    return out


def _too_large(item: Item, caps: Caps) -> None:
    for region, use in usage([item]).items():
        if use.ec2_vcpus > caps.max_vcpus:
            raise TooLarge(f"target {item.target_id} alone needs {use.ec2_vcpus} EC2 vCPUs at once in {region} "
                           f"(one repetition: every host of it), above the cap of {caps.max_vcpus} "
                           f"({caps.vcpus_key}): use a smaller instance type, or raise the region's On-Demand "
                           "vCPU quota and the cap with it", item.target_id)
        if use.hosts > caps.max_hosts:
            raise TooLarge(f"target {item.target_id} alone needs {use.hosts} hosts at once in {region}, above "
                           f"the cap of {caps.max_hosts} ({caps.hosts_key}): raise the cap", item.target_id)


def _running(slots: Sequence[Slot], at: int) -> list[Item]:
    """What holds hosts at ``at``: started, and not yet GAP_S past its planned end."""
    return [s.item for s in slots if s.start_s <= at < s.end_s + GAP_S]


def _fits(slots: Sequence[Slot], item: Item, start: int, caps: Caps) -> bool:
    end = start + item.duration_s + GAP_S
    moments = [start, *(s.start_s for s in slots if start < s.start_s < end)]
    regions = usage([item])
    for moment in moments:
        together = usage([*_running(slots, moment), item])
        if any(not together[region].fits(caps) for region in regions):
            return False
    return True


def schedule(items: Sequence[Item], caps: Caps | None) -> list[Slot]:
    """Each item's start, in the order given (priority first); ``caps`` None: no cap."""
    slots: list[Slot] = []
    by_key: dict[tuple[str, int], Slot] = {}
    for item in items:
        if caps is not None:
            _too_large(item, caps)
        earliest, reason, waited = item.earliest_s, ("spacing" if item.earliest_s else "start"), None
        if item.after is not None and by_key[item.after].end_s > earliest:
            waited = by_key[item.after]
            earliest, reason = waited.end_s, "sequence"
        start = earliest
        if caps is not None and not _fits(slots, item, earliest, caps):
            # The first moment another repetition's hosts are gone (its end plus the gap) where it fits.
            releases = sorted(((s.end_s + GAP_S, s) for s in slots if s.end_s + GAP_S > earliest),
                              key=lambda pair: pair[0])
            start, waited = next((t, s) for t, s in releases if _fits(slots, item, t, caps))
            reason = "capacity"
        slot = Slot(item, start, reason, waited)
        slots.append(slot)
        by_key[(item.target_id, item.repetition)] = slot
    return slots


def peaks(slots: Sequence[Slot]) -> list[dict[str, Any]]:
    """Per region: the most EC2 hosts, their vCPUs and DB instances running at one moment."""
    best: dict[str, Usage] = {}
    for moment in sorted({s.start_s for s in slots}):
        for region, use in usage([s.item for s in slots if s.start_s <= moment < s.end_s]).items():
            top = best.setdefault(region, Usage())
            if (use.ec2_vcpus, use.hosts) > (top.ec2_vcpus, top.hosts):
                best[region] = use
    return [{"region": region, "ec2_hosts": use.ec2_hosts, "ec2_vcpus": use.ec2_vcpus,
             "db_instances": use.db_instances, "unknown_vcpus": use.unknown_vcpus}
            for region, use in sorted(best.items())]


def waves(slots: Sequence[Slot]) -> list[dict[str, Any]]:
    """The repetitions that start together, in order: when, what, until when, and why then."""
    starts = sorted({s.start_s for s in slots})
    out = []
    for n, start in enumerate(starts, 1):
        members = [s for s in slots if s.start_s == start]
        out.append({"wave": n, "start_s": start, "end_s": max(s.end_s for s in members),
                    "repetitions": [f"{s.item.target_id}#{s.item.repetition}" for s in members],
                    "waits_for": sorted({s.reason for s in members}),
                    "regions": [{"region": r, "ec2_hosts": u.ec2_hosts, "ec2_vcpus": u.ec2_vcpus,
                                 "db_instances": u.db_instances}
                                for r, u in sorted(usage([s.item for s in members]).items())]})
    return out


def critical_path(slots: Sequence[Slot]) -> list[Slot]:
    """The slots that decide when the run ends: the last to end, and what each waited for, first first."""
    if not slots:
        return []
    path = [max(slots, key=lambda s: (s.end_s, s.start_s))]
    while path[-1].waited_for is not None:
        path.append(path[-1].waited_for)
    return path[::-1]
