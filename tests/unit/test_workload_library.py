"""The workload library (workloads/): every file is usable, documented and smoke-runnable.

- every comparison spec validates, resolves its workload and cnfs, and plans (full and smoke-local);
- every workload file validates, is named like its file and starts with an intent header;
- every cnf renders for MySQL and MariaDB with options those engines know;
- workloads/README.md documents every key of the models with the model's own default;
- the smoke scale and as_local keep a spec's shape.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from tests.conftest import REPO

from benchfleet.plan.model import make_plan
from benchfleet.plan.scale import (
    LOCAL_STAND_IN_MEMORY_MB,
    SMOKE_DURATION_S,
    apply_scale,
    as_local,
    smoke_threads,
)
from benchfleet.spec import loading as spec_module
from benchfleet.spec import targets, variants
from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.loading import load_spec, load_workload
from benchfleet.spec.storage import Storage
from benchfleet.spec.targets import AuroraTarget, Client, Ec2Target, ExistingTarget, LocalTarget, RdsTarget
from benchfleet.spec.workload import Workload
from benchfleet.workload import mysqlcnf

WORKLOADS = REPO / "workloads"
SPECS = sorted((WORKLOADS / "comparisons").glob("*.yaml"))
WORKLOAD_FILES = sorted(WORKLOADS.glob("*.yaml"))
CNFS = sorted((WORKLOADS / "mysql").glob("*.cnf"))
LUA_SCRIPTS = sorted(p for p in (WORKLOADS / "lua").glob("*.lua") if p.name != "benchfleet_common.lua")
README = WORKLOADS / "README.md"

# Options of MySQL 8.0 (server options and system variables, MySQL 8.0 Reference Manual) that cnfs
# here use. A cnf option outside this list fails the test: check the manual, then add it, or move
# the option to [mysqld:mariadb].
MYSQL80_OPTIONS = {
    "back_log", "binlog_format", "default_storage_engine", "innodb_adaptive_flushing",
    "innodb_buffer_pool_instances", "innodb_buffer_pool_size", "innodb_doublewrite",
    "innodb_file_per_table", "innodb_flush_log_at_trx_commit", "innodb_flush_method",
    "innodb_flush_neighbors", "innodb_io_capacity", "innodb_io_capacity_max", "innodb_log_buffer_size",
    "innodb_log_file_size", "innodb_log_files_in_group", "innodb_max_dirty_pages_pct",
    "innodb_open_files", "innodb_page_cleaners", "innodb_read_io_threads", "innodb_redo_log_capacity",
    "innodb_write_io_threads", "join_buffer_size", "log_bin", "max_connections",
    "max_prepared_stmt_count", "performance_schema", "server_id", "skip_log_bin", "sort_buffer_size",
    "ssl", "sync_binlog", "table_open_cache", "table_open_cache_instances", "transaction_isolation",
}


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def _price_lookup() -> Any:
    try:
        from benchfleet.cost.pricing import price_per_hour
    except ImportError:  # another engineer's module; plans are still checked without prices
        return None
    return price_per_hour


# ---- comparison specs -----------------------------------------------------------------------------

def test_the_library_has_every_seed_experiment() -> None:
    names = {p.stem for p in SPECS}
    for expected in ("graviton-vs-intel-vs-amd", "storage", "aurora-pk-order",
                     "steal-regions", "durability", "iibench-pk-only", "iibench-3-indexes"):
        assert expected in names
    workloads = {p.stem for p in WORKLOAD_FILES}
    for expected in ("oltp-read-only-sweep", "oltp-read-write", "write-durability", "insert-pk-order-seq",
                     "insert-pk-order-random", "iibench-pk-only", "iibench-3-indexes", "steal-soak"):
        assert expected in workloads


@pytest.mark.parametrize("path", SPECS, ids=_ids(SPECS))
def test_every_spec_validates_and_plans(path: Path) -> None:
    loaded = load_spec(path)
    assert loaded.spec.name == path.stem
    plan = make_plan(loaded, _price_lookup())
    assert plan.wall_s > 0
    for target in plan.targets:
        assert target.steps[0].kind == "prepare"
        assert any(s.kind == "measure" for s in target.steps)
    if _price_lookup() is not None and not plan.unpriced_targets:
        assert not plan.over_budget, f"estimate ${plan.estimated_cost_usd} is over the spec's own budget"


@pytest.mark.parametrize("path", SPECS, ids=_ids(SPECS))
def test_every_spec_runs_locally_at_smoke_scale_in_under_a_minute_per_target(path: Path) -> None:
    loaded = as_local(apply_scale(load_spec(path), "smoke"))
    assert loaded.spec.is_local
    plan = make_plan(loaded)
    assert plan.mode == "local"
    assert plan.estimated_cost_usd == 0
    for target in plan.targets:
        assert target.repetitions == 1
        # go-tpc's smallest data set is one TPC-C warehouse (~100 MB): its load is the one part smoke
        # cannot shrink, so it is left out of the minute (plan.GOTPC_PREPARE_S_PER_WAREHOUSE)
        load = sum(s.duration_s for s in target.steps if s.kind == "prepare") if loaded.workload.tool == "go-tpc" else 0
        assert target.repetition_s - load < 60, f"{target.target_id}: {target.repetition_s} s at smoke scale"


@pytest.mark.parametrize("path", SPECS, ids=_ids(SPECS))
def test_every_spec_starts_with_an_intent_header(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    assert first.startswith(f"# {path.stem}: "), "the first line names the file and says what it shows"


@pytest.mark.parametrize("pair", [("iibench-pk-only", "iibench-3-indexes")])
def test_paired_specs_differ_only_by_workload(pair: tuple[str, str]) -> None:
    docs = [yaml.safe_load((WORKLOADS / "comparisons" / f"{name}.yaml").read_text()) for name in pair]
    for doc in docs:
        doc.pop("name"), doc.pop("description"), doc.pop("workload")
    assert docs[0] == docs[1]


# ---- workload files -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", WORKLOAD_FILES, ids=_ids(WORKLOAD_FILES))
def test_every_workload_file_validates_and_has_an_intent_header(path: Path) -> None:
    workload = load_workload(path.stem, WORKLOADS)
    assert workload.name == path.stem
    assert workload.description
    assert path.read_text().startswith(f"# {path.stem}: ")
    if workload.test.startswith("lua/"):
        assert (WORKLOADS / workload.test).is_file()
    # sysbench 1.0.20 has no zipfian distribution; a workload with it would fail at prepare.
    assert workload.rand_type != "zipfian"


@pytest.mark.parametrize("path", LUA_SCRIPTS, ids=_ids(LUA_SCRIPTS))
def test_every_lua_script_uses_the_common_module_and_a_workload_uses_it(path: Path) -> None:
    text = path.read_text()
    assert 'require("benchfleet_common")' in text
    assert "package.path = dir" in text, "the script directory must be on package.path for require"
    used = {load_workload(p.stem, WORKLOADS).test for p in WORKLOAD_FILES}
    assert f"lua/{path.name}" in used


def test_the_read_only_sweep_is_seed_003s() -> None:
    w = load_workload("oltp-read-only-sweep", WORKLOADS)
    assert w.threads == [1, 2, 4, 8, 16, 32, 64, 128]
    assert (w.duration_s, w.cooldown_s, w.warmup_s) == (300, 90, 120)


def test_the_iibench_twins_differ_only_by_their_secondary_indexes() -> None:
    a, b = (load_workload(n, WORKLOADS) for n in ("iibench-pk-only", "iibench-3-indexes"))
    assert (a.options["secondary_indexes"], b.options["secondary_indexes"]) == (0, 3)
    keep = {"name", "description", "options"}
    assert a.model_dump(exclude=keep) == b.model_dump(exclude=keep)


def test_the_pk_order_twins_differ_only_by_their_script() -> None:
    a, b = (load_workload(n, WORKLOADS) for n in ("insert-pk-order-seq", "insert-pk-order-random"))
    keep = {"name", "description", "test"}
    assert a.model_dump(exclude=keep) == b.model_dump(exclude=keep)
    assert (a.test, b.test) == ("lua/insert_pk_seq.lua", "lua/insert_pk_random.lua")


# ---- MySQL configurations -------------------------------------------------------------------------

@functools.cache
def _mariadb_option_names() -> frozenset[str] | None:
    binary = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
    if binary is None:
        return None
    out = subprocess.run([binary, "--no-defaults", "--verbose", "--help"], capture_output=True, text=True,
                         timeout=60, check=False).stdout
    return frozenset(m.group(1).replace("-", "_") for m in re.finditer(r"^\s+--([a-z][a-z0-9_-]*)", out, re.M))


@pytest.mark.parametrize("path", CNFS, ids=_ids(CNFS))
@pytest.mark.parametrize("engine", ["mysql-8.0", "mariadb-10.11"])
def test_every_cnf_renders_for_both_engines(path: Path, engine: str) -> None:
    rendered = mysqlcnf.render(path.read_text(), engine, 8 * 1024**3, path.name)
    keys = [k for k, _ in rendered.options]
    assert len(keys) == len(set(keys)), f"an option is set twice for {engine}: {keys}"
    assert rendered.text.startswith("[mysqld]\n")
    for key, value in rendered.options:
        assert not value.endswith("%"), f"{key} = {value} was not resolved"
    if engine.startswith("mysql"):
        unknown = sorted(set(keys) - MYSQL80_OPTIONS)
        assert not unknown, f"not MySQL 8.0 options (move them to [mysqld:mariadb]?): {unknown}"
    else:
        known = _mariadb_option_names()
        if known is None:
            pytest.skip("mariadbd is not installed")
        unknown = sorted(k for k in keys if k not in known and k.removeprefix("skip_") not in known)
        assert not unknown, f"MariaDB 10.11 refuses these (move them to [mysqld:mysql]?): {unknown}"


def test_the_cpu_bound_cnf_sizes_the_pool_at_80_percent_of_memory() -> None:
    rendered = mysqlcnf.render((WORKLOADS / "mysql" / "cpu-bound.cnf").read_text(), "mysql-8.0", 10 * 1024**3)
    assert dict(rendered.options)["innodb_buffer_pool_size"] == "8192M"
    # MariaDB 10.11 lacks these; the render must say so rather than drop them quietly.
    maria = mysqlcnf.render((WORKLOADS / "mysql" / "cpu-bound.cnf").read_text(), "mariadb", 10 * 1024**3)
    assert any(s.startswith("innodb_buffer_pool_instances") for s in maria.skipped)
    assert "# not applied on mariadb:" in maria.text


def test_durable_and_relaxed_differ_in_durability() -> None:
    def options(name: str) -> dict[str, str]:
        text = (WORKLOADS / "mysql" / f"{name}.cnf").read_text()
        return dict(mysqlcnf.render(text, "mysql-8.0", 1024**3).options)

    durable, relaxed = options("durable"), options("relaxed")
    assert durable["innodb_flush_log_at_trx_commit"] == "1" and durable["sync_binlog"] == "1"
    assert relaxed["innodb_flush_log_at_trx_commit"] in ("0", "2") and relaxed["sync_binlog"] == "0"
    assert "log_bin" in durable


# ---- README: every key, with the model's default ----------------------------------------------------

_README_MODELS: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {
    "Workload": (Workload, None),
    "ComparisonSpec": (ComparisonSpec, None),
    "TargetBase": (targets.TargetBase, None),
    "Ec2Target": (Ec2Target, targets.TargetBase),
    "RdsTarget": (RdsTarget, targets.TargetBase),
    "AuroraTarget": (AuroraTarget, targets.TargetBase),
    "LocalTarget": (LocalTarget, targets.TargetBase),
    "LocalCluster": (targets.LocalCluster, None),
    "ClusterTarget": (targets.ClusterTarget, targets.TargetBase),
    "Proxy": (targets.Proxy, None),
    "ExistingTarget": (ExistingTarget, targets.TargetBase),
    "Storage": (Storage, None),
    "Client": (Client, None),
    "Variant": (variants.Variant, None),
}


def _fmt(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_none=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if value == "":
        return '""'
    return str(value)


def documented_default(model: type[BaseModel], key: str) -> str:
    """How the README writes a key's default: required, none, or the value in backticks."""
    info = model.model_fields[key]
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    return "none" if value is None else f"`{_fmt(value)}`"


def readme_tables() -> dict[str, dict[str, str]]:
    """{model name: {key: default cell}} from the tables that follow ``<!-- keys: Model -->``."""
    tables: dict[str, dict[str, str]] = {}
    current: str | None = None
    for line in README.read_text().splitlines():
        marker = re.match(r"^<!-- keys: (\w+) -->$", line.strip())
        if marker:
            current = marker.group(1)
            tables[current] = {}
            continue
        if current is None:
            continue
        if not line.startswith("|"):
            if tables[current]:
                current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        key = re.fullmatch(r"`([a-z_]+)`", cells[0])
        if key:
            tables[current][key.group(1)] = cells[2]
    return tables


@pytest.mark.parametrize("name", list(_README_MODELS))
def test_the_readme_documents_every_key_with_its_default(name: str) -> None:
    model, base = _README_MODELS[name]
    tables = readme_tables()
    assert name in tables, f"workloads/README.md has no '<!-- keys: {name} -->' table"
    keys = set(model.model_fields) - (set(base.model_fields) if base else set())
    documented = tables[name]
    assert sorted(keys - set(documented)) == [], "keys of the model missing from the README"
    assert sorted(set(documented) - keys) == [], "keys in the README the model does not have"
    for key in keys:
        assert documented[key] == documented_default(model, key), f"{name}.{key}: README default"


def test_the_readme_lists_every_workload_spec_and_cnf() -> None:
    text = README.read_text()
    for path in [*WORKLOAD_FILES, *SPECS]:
        assert f"`{path.stem}`" in text, f"{path.name} is not in the README's library tables"
    for path in CNFS:
        assert f"`{path.name}`" in text
    for path in LUA_SCRIPTS:
        assert f"`{path.name}`" in text


# ---- scale ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("threads", "expected"), [
    ([1, 2, 4, 8, 16, 32, 64, 128], [1, 8]), ([3], [3]), ([15], [8]), ([64, 256], [8]), ([1, 8], [1, 8]),
    ([2, 4, 6], [2, 6]),
])
def test_smoke_keeps_the_ends_of_the_sweep(threads: list[int], expected: list[int]) -> None:
    assert smoke_threads(threads) == expected


@pytest.mark.parametrize("path", WORKLOAD_FILES, ids=_ids(WORKLOAD_FILES))
def test_smoke_keeps_the_workloads_shape(path: Path) -> None:
    full = load_workload(path.stem, WORKLOADS)
    spec = ComparisonSpec(name="s", workload=full, targets=[LocalTarget(id="a", kind="local")])
    smoke = apply_scale(spec_module.resolve(spec, "test"), "smoke")
    w = smoke.workload
    assert (w.test, w.options, w.rand_type, w.percentile) == (full.test, full.options, full.rand_type,
                                                              full.percentile)
    assert w.duration_s <= SMOKE_DURATION_S and w.cooldown_s == 0
    assert w.warehouses == 1 if w.tool == "go-tpc" else w.tables * w.table_size <= 4000
    assert smoke.spec.workload == w, "an inline workload is scaled in the spec too"


def test_smoke_sets_one_repetition_and_full_changes_nothing() -> None:
    loaded = load_spec(WORKLOADS / "comparisons" / "graviton-vs-intel-vs-amd.yaml")
    assert apply_scale(loaded, "full") is loaded
    assert apply_scale(loaded, "smoke").spec.repetitions == 1
    with pytest.raises(ValueError, match="unknown scale"):
        apply_scale(loaded, "huge")


def test_as_local_keeps_ids_and_configs() -> None:
    loaded = load_spec(WORKLOADS / "comparisons" / "storage.yaml")
    local = as_local(loaded)
    assert local.spec.is_local
    assert [(t.id, t.mysql_config) for t in local.spec.targets] == [
        (t.id, t.mysql_config) for t in loaded.spec.targets]
    assert all(isinstance(t, LocalTarget) and t.memory_mb == LOCAL_STAND_IN_MEMORY_MB
               for t in local.spec.targets)
    assert local.spec.baseline == loaded.spec.baseline
    assert local.spec.budget_usd is None
    assert local.workload == loaded.workload


def test_as_local_leaves_local_targets_alone() -> None:
    loaded = load_spec(WORKLOADS / "comparisons" / "durability.yaml")
    assert as_local(loaded).spec.targets == loaded.spec.targets
