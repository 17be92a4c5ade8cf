"""The variants of a spec: what is compared on the same target, and each one resolved to its workload.

A variant overrides the target's settings (a cnf, server options), the spec's workload or sysbench
options, or a cluster's connection route; every repetition host measures every variant, interleaved
in blocks. How the server goes from one variant's settings to the next is spec.switching; the rules
between variants and targets are spec.rules.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from benchfleet.spec.fields import SLUG, OptionValue, StrictModel, check_server_options, check_workload_options
from benchfleet.spec.workload import Workload, WorkloadRef

MAX_VARIANTS = 16
MAX_BLOCKS = 20
Route = Literal["direct", "proxy"]


class Variant(StrictModel):
    """One side of what a spec compares on the same target: every repetition host measures every
    variant, interleaved. Each key overrides the target's (``server_options`` are layered over the
    target's) or the spec's workload; what a variant does not name is the target's."""

    id: str = Field(pattern=SLUG, max_length=32, description="Unique variant id, [a-z0-9-]")
    workload: WorkloadRef | None = Field(
        None, description="This variant's workload (a file in workloads/ by name, or inline) instead of "
                          "the spec's; its thread sweep, step duration and report interval must be the same")
    mysql_config: str | None = Field(None, pattern=SLUG,
                                     description="workloads/mysql/<name>.cnf instead of the target's")
    server_options: dict[str, OptionValue] = Field(
        default_factory=dict, max_length=64,
        description="Server options layered over the target's (and its mysql_config's), name: value")
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="sysbench options overriding the workload's, name: value")
    route: Route | None = Field(None, description="direct | proxy: how sysbench reaches a cluster target")

    @field_validator("server_options")
    @classmethod
    def _server_options(cls, v: dict[str, OptionValue]) -> dict[str, OptionValue]:
        return check_server_options(v)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, OptionValue]) -> dict[str, OptionValue]:
        return check_workload_options(v)

    @property
    def changes_server(self) -> bool:
        return self.mysql_config is not None or bool(self.server_options)


class ResolvedVariant(BaseModel):
    """A variant with its workload resolved: the spec's (or its own), its ``options`` merged in."""

    model_config = ConfigDict(frozen=True)

    id: str
    workload: Workload
    mysql_config: str | None = None
    server_options: dict[str, OptionValue] = {}
    route: str | None = None


def resolve_variant(variant: Variant, workload: Workload) -> ResolvedVariant:
    """``variant`` with its workload: ``workload`` with the variant's sysbench options over its own."""
    if variant.options:
        merged = {**{k.replace("_", "-"): v for k, v in workload.options.items()},
                  **{k.replace("_", "-"): v for k, v in variant.options.items()}}
        workload = workload.model_copy(update={"options": check_workload_options(merged)})
    return ResolvedVariant(id=variant.id, workload=workload, mysql_config=variant.mysql_config,
                           server_options=variant.server_options, route=variant.route)
