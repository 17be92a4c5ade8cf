"""Which regions targets may run in, and which region each target runs in.

The CDK app deploys what a target needs (network, security groups, launch template, agent document)
in the stack's home region and in every region of the context key ``targetRegions``; it passes that
list to every Lambda as ``TARGET_REGIONS`` (``AWS_REGION`` is the home region). A target without a
``region`` runs in the home region. A target whose region has nothing deployed is refused before
anything starts: running it elsewhere and labelling it with its region would be a wrong number with
the right label.

Only ``ec2``, ``rds`` and ``aurora`` targets name a region; an ``existing`` target is reached in the
home region (its ``instance_id`` is looked up there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchfleet.spec.loading import LoadedSpec

CONTEXT_KEY = "targetRegions"
REGIONAL_KINDS = ("ec2", "rds", "aurora")


@dataclass(frozen=True)
class TargetRegions:
    """The home region and every region targets may run in (the home region first)."""

    home: str
    enabled: tuple[str, ...]

    @classmethod
    def of(cls, home: str, target_regions: tuple[str, ...] | list[str] = ()) -> TargetRegions:
        return cls(home=home, enabled=tuple(dict.fromkeys([home, *target_regions])))

    def region_of(self, target: object) -> str:
        """Where ``target`` runs: its own region, else the home region."""
        region = getattr(target, "region", None) if not isinstance(target, Mapping) else target.get("region")
        return str(region) if region else self.home

    def problems(self, targets: list[object]) -> list[tuple[str, str]]:
        """(field, message) for every target in a region with nothing deployed."""
        out = []
        for i, target in enumerate(targets):
            region = getattr(target, "region", None)
            if getattr(target, "kind", None) in REGIONAL_KINDS and region and region not in self.enabled:
                out.append((f"targets[{i}].region",
                            f"{region} is not a deployed target region (deployed: {', '.join(self.enabled)}); "
                            f"add it to the CDK context key {CONTEXT_KEY} and run `cdk deploy --all`"))
        return out

    def resolve(self, loaded: LoadedSpec) -> LoadedSpec:
        """The spec with the home region written into every cloud target that names none, so prices,
        plans and labels all use the region the target really runs in."""
        targets = [t.model_copy(update={"region": self.home})
                   if t.kind in REGIONAL_KINDS and not getattr(t, "region", None) else t
                   for t in loaded.spec.targets]
        return loaded.model_copy(update={"spec": loaded.spec.model_copy(update={"targets": targets})})
