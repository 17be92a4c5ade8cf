"""The options each sysbench test reads (benchfleet.workload.sysbench.TEST_OPTIONS), proved against the installed
scripts, and the spec's one option rule refusing an option the chosen test does not read, for a
workload's ``options`` and a variant's (sysbench takes --range-size on oltp_insert, every script that
requires oltp_common defines it, and ignores it: the run would not measure what the spec says)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchfleet.aws import api_service
from benchfleet.aws.api_service import ApiError
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import inline_loaded, parse_spec
from benchfleet.workload.sysbench import BUILTIN_TESTS, OPTION_VALUES, SCRIPT_OPTIONS, TEST_OPTIONS

SYSBENCH = Path("/usr/share/sysbench")  # Debian's sysbench package (make system-deps)
OURS = Path(__file__).resolve().parents[2] / "workloads" / "lua"
_READ = re.compile(r"\bsysbench\.opt\.([a-z_]+)")
_FUNCTION = re.compile(r"^(?:local\s+)?function\s+([\w.]+)\s*\(", re.M)
# What sysbench runs of oltp_common besides the test's own code: its commands and hooks.
_ENTRIES = ("cmd_prepare", "cmd_prewarm", "init", "thread_init", "thread_done", "cleanup",
            "sysbench.hooks.before_restart_event")


def _code(path: Path) -> str:
    return "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())


def _functions(code: str) -> dict[str, str]:
    """name -> text of each top-level function (its body ends at the first unindented ``end``)."""
    out = {}
    for m in _FUNCTION.finditer(code):
        end = re.search(r"^end\b", code[m.end():], re.M)
        out[m.group(1)] = code[m.start():m.end() + (end.end() if end else len(code))]
    return out


def _defined(code: str) -> set[str]:
    table = re.search(r"sysbench\.cmdline\.options\s*=\s*\{(.*?)\n\}", code, re.S)
    names = set(re.findall(r"^\s*([a-z_]+)\s*=", table.group(1), re.M)) if table else set()
    return names | set(re.findall(r"sysbench\.cmdline\.options\.([a-z_]+)\s*=", code))


def _reads(code: str, library: dict[str, str]) -> set[str]:
    """Options ``code`` reads, following its calls into ``library`` (and the library's entry points it
    does not replace); ``sysbench.opt[key]`` counts the literal names passed as ``key``."""
    own = set(_functions(code))
    todo = [code, *(library[n] for n in _ENTRIES if n in library and n not in own)]
    seen: set[str] = set()
    reads: set[str] = set()
    while todo:
        body = todo.pop()
        reads |= set(_READ.findall(body))
        reads |= {literal for name, literal in re.findall(r"([\w.]+)\s*\(\s*\"([a-z_]+)\"", body)
                  if "sysbench.opt[" in library.get(name, "")}
        for name in re.findall(r"([\w.]+)\s*\(", body):
            if name in library and name not in own and name not in seen:
                seen.add(name)
                todo.append(library[name])
    return reads


def derived() -> dict[str, frozenset[str]]:
    """TEST_OPTIONS as the installed scripts and workloads/lua say it, dash-spelled."""
    assert (SYSBENCH / "oltp_common.lua").is_file(), f"sysbench's scripts are not in {SYSBENCH}"
    common = _code(SYSBENCH / "oltp_common.lua")
    library = _functions(common)
    defined = _defined(common)
    out = {}
    for test in BUILTIN_TESTS:
        code = _code(SYSBENCH / f"{test}.lua")
        defined |= _defined(code)
        uses = library if 'require("oltp_common")' in code else {}
        out[test] = _reads(code, uses)
    for test in out:
        out[test] = frozenset(o.replace("_", "-") for o in out[test] & defined)
    ours = _code(OURS / "benchfleet_common.lua")
    for script in sorted(OURS.glob("*.lua")):
        if script.name == "benchfleet_common.lua":
            continue
        code = _code(script)
        options = set(re.findall(r"^\s*([a-z_]+)\s*=\s*\{\"", ours + "\n" + code, re.M))
        out[f"lua/{script.name}"] = frozenset(o.replace("_", "-") for o in _reads(ours + code, {}) & options)
    return out


def test_the_table_is_what_the_installed_scripts_read() -> None:
    table = derived()
    assert table == TEST_OPTIONS
    # The derivation sees what matters: the ranges through sysbench.opt[key], --range-size nowhere in
    # oltp_insert, every script option one benchfleet knows the values of.
    assert {"simple-ranges", "range-size"} <= table["oltp_read_only"] and "range-size" not in table["oltp_insert"]
    assert SCRIPT_OPTIONS - {"pgsql-variant"} <= set(OPTION_VALUES)


SPEC = {"name": "opts", "workload": {"name": "w", "test": "oltp_insert", "threads": [1], "duration_s": 10},
        "targets": [{"id": "a", "kind": "local"}]}


def spec(options: dict[str, object] | None = None, test: str = "oltp_insert", **top: object) -> dict[str, object]:
    return {**SPEC, "workload": {**SPEC["workload"], "test": test, "options": options or {}}, **top}  # type: ignore[dict-item]


def test_a_workload_option_its_test_does_not_read_is_refused_naming_the_field_and_the_test() -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(spec({"range_size": 5, "rate": 10}))
    assert e.value.problems == [("workload.options.range_size", "range_size is not an option of oltp_insert "
                                 "(sysbench would take it and ignore it, or refuse it); oltp_insert reads "
                                 "auto-inc, create-secondary, mysql-storage-engine, secondary")]
    with pytest.raises(SpecError, match=r"workload\.options\.point-selects: point-selects is not an option of "
                                        r"lua/iibench\.lua"):
        parse_spec(spec({"point-selects": 1}, test="lua/iibench.lua"))
    # What the test reads, and sysbench's own options, pass.
    assert parse_spec(spec({"range_size": 5, "rate": 10}, test="oltp_read_only")).workload.options["range_size"] == 5


def test_a_variant_option_its_test_does_not_read_is_refused_by_validate_and_the_api() -> None:
    variants = [{"id": "a"}, {"id": "b", "options": {"skip_trx": True}},
                {"id": "c", "options": {"skip_trx": True}, "workload": spec(test="oltp_read_write")["workload"]}]
    body = spec(variants=variants)
    with pytest.raises(SpecError) as e:
        inline_loaded(parse_spec(body), "spec")
    assert [field for field, _ in e.value.problems] == ["variants[1].options.skip_trx"]  # c's test reads it
    assert "not an option of oltp_insert" in e.value.problems[0][1]
    with pytest.raises(ApiError) as api:
        api_service.validate_submission({**body, "targets": [{"id": "a", "kind": "ec2", "instance_type": "m6i.large"}]},
                                        home_region="us-east-1")
    assert api.value.status == 400 and api.value.problems[0][0] == "variants[1].options.skip_trx"
