"""Variants on one local server: the settings each variant runs with, and the switch between them.

A repetition's server starts with the first variant's settings (its cnf); before each step that
needs another variant's settings (``PlanStep.settings``), the server takes them the way the plan
says (``PlanStep.switch``): ``SET GLOBAL`` of every setting that differs, as root over the server's
socket, or a restart with the variant's cnf on the same data. Each such step's job carries the
variant's requested values of the settings that differ between variants; the agent reads them back
from the server and records both with the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchfleet.local.mariadb import LocalServer, LocalServerError
from benchfleet.plan.model import PlanStep
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import cnf_source
from benchfleet.spec.targets import LocalTarget
from benchfleet.workload.mysqlcnf import normalised, render, set_global_value


class VariantFailed(RuntimeError):
    """A variant's settings could not be brought into effect (the server's own words)."""


@dataclass
class VariantSettings:
    """The variants' cnfs on one local target, rendered for its memory, and which is in effect."""

    sources: dict[str, tuple[str, str]]            # variant -> (cnf name, cnf source)
    options: dict[str, dict[str, str]]             # variant -> option -> value (rendered)
    varying: list[str]                             # options whose values differ between variants
    current: str | None = None
    methods: dict[str, str] = field(default_factory=dict)  # variant -> how it last came into effect

    @classmethod
    def of(cls, loaded: LoadedSpec, target: LocalTarget) -> VariantSettings | None:
        if not loaded.variants:
            return None
        sources: dict[str, tuple[str, str]] = {}
        options: dict[str, dict[str, str]] = {}
        for v in loaded.variants:
            config, source = cnf_source(target, v)
            sources[v.id] = (f"{config}.cnf", source)
            options[v.id] = dict(render(source, "mariadb", target.memory_mb * 1024 * 1024, f"{config}.cnf").options)
        names = sorted({n for opts in options.values() for n in opts})
        varying = [n for n in names if len({normalised(o.get(n, "\0")) for o in options.values()}) > 1]
        return cls(sources=sources, options=options, varying=varying)

    @property
    def first(self) -> str:
        return next(iter(self.sources))

    def requested(self, variant: str) -> dict[str, str]:
        """The values of the varying settings ``variant`` gives (one it leaves to the server's
        default has no value to ask for)."""
        return {n: self.options[variant][n] for n in self.varying if n in self.options[variant]}

    def job_settings(self, step: PlanStep) -> dict[str, Any] | None:
        if step.settings is None:
            return None
        return {"variant": step.settings, "method": self.methods.get(step.settings, "start"),
                "requested": self.requested(step.settings)}

    def switch(self, server: LocalServer, step: PlanStep) -> str | None:
        """Bring ``step.settings`` into effect on ``server``; the method used (None: nothing to do)."""
        wanted = step.settings
        if wanted is None or wanted == self.current:
            return None
        method = step.switch.get(self.current or "", "none")
        try:
            if method == "set-global":
                values = {}
                for name in self.varying:
                    if self.options[wanted].get(name) == self.options[self.current or wanted].get(name):
                        continue
                    value = set_global_value(self.options[wanted][name])
                    if value is None:
                        raise LocalServerError(f"{name} = {self.options[wanted][name]!r} cannot be given to SET GLOBAL")
                    values[name] = value
                server.set_global(values)
            elif method == "restart":
                name, source = self.sources[wanted]
                server.restart(source, name)
        except LocalServerError as e:
            raise VariantFailed(f"variant {wanted}: its settings could not be applied ({method}): "
                                f"{str(e).splitlines()[0]}") from e
        self.current = wanted
        self.methods[wanted] = method
        return method
