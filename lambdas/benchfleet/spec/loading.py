"""A spec or workload, loaded: parsed into its models, resolved against workloads/ and checked whole.

``load_spec`` (a file), ``parse_spec`` / ``inline_loaded`` (a JSON body: the API, Plan) and
``resolve`` give a ``LoadedSpec``: the spec, its workload and its variants resolved, or one
SpecError naming the file, each field and its problem. ``json_schema`` is the published schema
(workloads/spec.schema.json, ``benchfleet validate --schema``).
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.documents import SpecError, read_document, workloads_dir
from benchfleet.spec.fields import FieldProblem
from benchfleet.spec.rules import config_problems, test_problems, tool_problems, variant_problems
from benchfleet.spec.targets import TARGET_KINDS
from benchfleet.spec.variants import ResolvedVariant, resolve_variant
from benchfleet.spec.workload import Workload

# ---- loading ------------------------------------------------------------------------------------


def _loc(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif ((item in TARGET_KINDS and i and isinstance(loc[i - 1], int)) or item in ("by-name", "inline")
              or item.startswith(("function-", "json-"))):
            continue  # the discriminator's own branch name (after a list index) adds nothing for a reader
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts)


@functools.lru_cache(maxsize=1)
def _known_keys() -> tuple[str, ...]:
    """Every key a spec or a workload file may hold, at any depth (their JSON Schemas' properties): what
    an unknown key is matched against for "did you mean" (a misspelt sysbench test got one; a misspelt
    key did not)."""
    keys: set[str] = set()
    for schema in (ComparisonSpec.model_json_schema(), Workload.model_json_schema()):
        for part in (schema, *schema.get("$defs", {}).values()):
            keys.update(part.get("properties", {}))
    return tuple(sorted(keys))


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in error.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "union_tag_invalid":
            msg = f"kind must be one of {', '.join(TARGET_KINDS)}"
        elif e["type"] == "union_tag_not_found":
            msg = "kind is required (one of " + ", ".join(TARGET_KINDS) + ")"
        elif e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(e["loc"][-1]), _known_keys(), n=1, cutoff=0.75)
            msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "") + \
                " (see workloads/README.md for the keys)"
        where = _loc(tuple(e["loc"]))
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            where = f"{where}.{cause.path}" if where else cause.path
        out.append((where, msg))
    return out


_M = TypeVar("_M", bound=BaseModel)


def _parse(model: type[_M], data: Any, source: str, keys: str) -> _M:
    if not isinstance(data, dict):
        raise SpecError(source, [("", f"a {keys.split()[0]} must be a mapping of keys ({keys.split(' ', 1)[1]})")])
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise SpecError(source, problems_of(e)) from None


def parse_spec(data: Any, source: str = "spec") -> ComparisonSpec:
    if isinstance(data, dict) and "test" in data and not {"targets", "workload"} & set(data):
        # A workload file given where a spec goes (validate workloads/oltp-read-write.yaml) listed every
        # workload key as "unknown", the keys README documents, and targets as missing.
        raise SpecError(source, [("", "is a workload (test, threads, ...), not a comparison spec: a spec names it "
                                      "as its workload and gives the targets (workloads/comparisons/*.yaml; "
                                      "workloads/README.md, 'Comparison spec')")])
    return _parse(ComparisonSpec, data, source, "spec name, workload, targets, ...")


def parse_workload(data: Any, source: str = "workload") -> Workload:
    return _parse(Workload, data, source, "workload name, test, threads, ...")


def load_workload(name: str, root: Path | None = None) -> Workload:
    root = root or workloads_dir()
    for suffix in (".yaml", ".yml", ".json"):
        path = root / f"{name}{suffix}"
        if path.exists():
            workload = parse_workload(read_document(path), str(path))
            if workload.name != name:
                raise SpecError(str(path), [("name", f"is {workload.name!r} but the file is named {name!r}")])
            return workload
    raise SpecError("spec", [("workload", f"no workload named {name!r} in {root}")])


class LoadedSpec(BaseModel):
    """A spec with its workload(s) resolved and its files checked."""

    model_config = ConfigDict(frozen=True)

    spec: ComparisonSpec
    workload: Workload
    source: str
    variants: list[ResolvedVariant] = []

    def variant(self, variant_id: str | None) -> ResolvedVariant | None:
        return next((v for v in self.variants if v.id == variant_id), None)

    def inline(self) -> dict[str, Any]:
        """The spec as JSON with every workload inline (the stored spec of a run, an API body): the
        workload files may change after the run, and Lambdas ship no workload library. A variant's
        inline workload already holds its options (merging them again changes nothing)."""
        doc = self.spec.model_dump(mode="json")
        doc["workload"] = self.workload.model_dump(mode="json")
        for item, variant in zip(doc.get("variants") or [], self.variants, strict=True):
            if item.get("workload") is not None:
                item["workload"] = variant.workload.model_dump(mode="json")
        return doc

    def workload_of(self, variant_id: str | None) -> Workload:
        """The workload a step of ``variant_id`` runs (the spec's when there are no variants)."""
        found = self.variant(variant_id)
        return found.workload if found else self.workload


def load_spec(path: Path | str, root: Path | None = None) -> LoadedSpec:
    """Read, validate and resolve a spec file: its workload and every target's mysql_config."""
    path = Path(path)
    spec = parse_spec(read_document(path), str(path))
    return resolve(spec, str(path), root)


def _workload(ref: str | Workload, field: str, source: str, root: Path) -> Workload:
    try:
        return ref if isinstance(ref, Workload) else load_workload(ref, root)
    except SpecError as e:
        if e.source == "spec":
            raise SpecError(source, [(field, message) for _, message in e.problems]) from None
        raise


def resolve(spec: ComparisonSpec, source: str, root: Path | None = None) -> LoadedSpec:
    root = root or workloads_dir()
    workload = _workload(spec.workload, "workload", source, root)
    variants = [resolve_variant(v, _workload(v.workload, f"variants[{i}].workload", source, root)
                                if v.workload is not None else workload)
                for i, v in enumerate(spec.variants)]
    problems = test_problems([("workload", workload), *((f"variants[{i}].workload", v.workload)
                                                        for i, v in enumerate(variants) if spec.variants[i].workload)],
                             root)
    problems += config_problems(spec, root)
    problems += variant_problems(spec, workload, variants, root)
    problems += tool_problems(spec, [("workload", workload), *((f"variants[{i}].workload", v.workload)
                                                             for i, v in enumerate(variants))])
    if problems:
        raise SpecError(source, problems)
    return LoadedSpec(spec=spec, workload=workload, source=source, variants=variants)


def inline_loaded(spec: ComparisonSpec, source: str) -> LoadedSpec:
    """A spec whose workloads are all inline (an API body, an execution's input), resolved without
    the workload library; SpecError naming a variant workload given by name or one that does not fit."""
    assert isinstance(spec.workload, Workload)
    problems = [(f"variants[{i}].workload", f"{v.workload!r} is a name; here workloads are inline "
                                            "(benchfleet run --remote inlines named workloads)")
                for i, v in enumerate(spec.variants) if isinstance(v.workload, str)]
    if problems:
        raise SpecError(source, problems)
    variants = [resolve_variant(v, v.workload if isinstance(v.workload, Workload) else spec.workload)
                for v in spec.variants]
    # The Lua scripts are the ones the agent bundle ships (the Lambdas carry a copy of workloads/lua).
    problems = test_problems([("workload", spec.workload), *((f"variants[{i}].workload", v.workload)
                                                             for i, v in enumerate(spec.variants)
                                                             if isinstance(v.workload, Workload))], workloads_dir())
    problems += config_problems(spec)
    problems += variant_problems(spec, spec.workload, variants)
    problems += tool_problems(spec, [("workload", spec.workload), *((f"variants[{i}].workload", v.workload)
                                                                  for i, v in enumerate(variants))])
    if problems:
        raise SpecError(source, problems)
    return LoadedSpec(spec=spec, workload=spec.workload, source=source, variants=variants)


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of a comparison spec (workloads/spec.schema.json)."""
    schema = ComparisonSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "benchfleet comparison spec"
    return schema
