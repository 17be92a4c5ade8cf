"""The workload part of a spec: the data set, the warm-up, the thread sweep and the tool that runs them.

A workload is a file under workloads/ named by a spec (or inline in it, or a variant's own): sysbench
(a built-in test or a Lua script) or go-tpc's TPC-C. Its limits are what the tools accept, refused here
with the field named before anything starts. The tools themselves are benchfleet.workload.
"""

from __future__ import annotations

import difflib
import json
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from benchfleet.spec.fields import SLUG, TEST_NAME, FieldProblem, OptionValue, StrictModel, check_workload_options
from benchfleet.workload.gotpc import MAX_WAREHOUSES
from benchfleet.workload.gotpc import WORKLOAD_PERCENTILES as GOTPC_PERCENTILES
from benchfleet.workload.sysbench import BUILTIN_TESTS

MAX_STEP_SECONDS = 48 * 3600
# Tests whose every sysbench event inserts exactly one row (workloads/lua/benchfleet_common.lua): the
# agent counts the rows in the table for them (workloads/agent/benchfleet_rows.py), the x axis of
# iiBench's insert rate against table size.
ONE_ROW_PER_EVENT = ("lua/iibench.lua", "lua/insert_pk_seq.lua", "lua/insert_pk_random.lua")
MAX_THREADS = 4096


# The keys that describe sysbench's data set and options: a go-tpc workload (TPC-C's data set is its
# warehouses) refuses them rather than ignoring them.
SYSBENCH_ONLY_KEYS = ("tables", "table_size", "rand_type", "options")


class Workload(StrictModel):
    """A sysbench (or go-tpc TPC-C) workload: the data set, the warm-up and the thread sweep. Documented
    key by key in workloads/README.md."""

    name: Annotated[str, Field(pattern=SLUG, description="Workload name, [a-z0-9-]")]
    description: str = Field("", max_length=2000, description="Intent: what this workload shows")
    tool: Literal["sysbench", "go-tpc"] = Field("sysbench", description="The benchmark that runs the steps: "
                                                "sysbench, or go-tpc (test: tpcc, with warehouses)")
    test: str = Field(description="sysbench built-in test (oltp_read_only, ...) or lua/<file>.lua; go-tpc: tpcc")
    warehouses: int | None = Field(None, ge=1, le=MAX_WAREHOUSES,
                                   description="go-tpc: TPC-C warehouses (the data set, ~100 MB each)")
    tables: int = Field(4, ge=1, le=1000, description="Number of tables (--tables)")
    table_size: int = Field(10_000, ge=1, le=10_000_000_000, description="Rows per table (--table-size)")
    prepare_threads: int = Field(2, ge=1, le=256, description="Threads for loading the data set")
    warmup_s: int = Field(30, ge=0, le=MAX_STEP_SECONDS, description="Warm-up before the sweep, s")
    threads: list[Annotated[int, Field(ge=1, le=MAX_THREADS)]] = Field(
        [1, 2, 4], min_length=1, max_length=64, description="Thread counts of the sweep, one step each")
    duration_s: int = Field(60, ge=1, le=MAX_STEP_SECONDS, description="Measured seconds per step")
    cooldown_s: int = Field(0, ge=0, le=3600, description="Idle seconds after each step")
    report_interval_s: int = Field(1, ge=1, le=60, description="sysbench --report-interval, s")
    percentile: int = Field(95, ge=1, le=99, description="Latency percentile (--percentile); 1..99")
    # sysbench 1.0.20 knows these four; "zipfian" arrived later and 1.0.x refuses it.
    rand_type: Literal["uniform", "gaussian", "special", "pareto"] = "uniform"
    options: dict[str, OptionValue] = Field(default_factory=dict,
                                            description="More sysbench / driver options, name: value")

    @field_validator("test")
    @classmethod
    def _test(cls, v: str, info: ValidationInfo) -> str:
        if info.data.get("tool") == "go-tpc":
            if v != "tpcc":
                raise ValueError(f"go-tpc runs test tpcc (TPC-C), not {v!r}")
            return v
        if not TEST_NAME.match(v):
            raise ValueError("must be a sysbench built-in test name or lua/<name>.lua")
        if not v.startswith("lua/") and v not in BUILTIN_TESTS:
            close = difflib.get_close_matches(v, BUILTIN_TESTS, n=1)
            raise ValueError(f"{v} is not a sysbench database test" + (f" (did you mean {close[0]}?)" if close
                             else f"; sysbench 1.0 has {', '.join(BUILTIN_TESTS)}, or give lua/<name>.lua"))
        return v

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("thread counts must be unique")
        return sorted(v)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, OptionValue], info: ValidationInfo) -> dict[str, OptionValue]:
        return check_workload_options(v, info.data.get("test"))  # no test: its own error is named

    @model_validator(mode="after")
    def _tool(self) -> Workload:
        if self.tool == "sysbench":
            if self.warehouses is not None:
                raise FieldProblem("warehouses", "warehouses is go-tpc's (tool: go-tpc); sysbench's data set is "
                                   "tables x table_size")
            return self
        if self.warehouses is None:
            raise FieldProblem("warehouses", "go-tpc needs warehouses: the TPC-C data set (1 loads ~100 MB)")
        given = [k for k in SYSBENCH_ONLY_KEYS if k in self.model_fields_set]
        if given:
            raise FieldProblem(given[0], f"{given[0]} is a sysbench key; go-tpc's data set is its warehouses "
                               "and it takes no sysbench options")
        if self.percentile not in GOTPC_PERCENTILES:
            raise FieldProblem("percentile", f"go-tpc prints the {', '.join(map(str, GOTPC_PERCENTILES))}th "
                               f"percentiles (and 99.9th), not the {self.percentile}th")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A go-tpc workload's dump leaves sysbench's keys out: they hold only their defaults, and the
        # dump is read back by the validator above (Plan's state for StartStep, a stored or inline spec),
        # which refuses them on a go-tpc workload.
        data: dict[str, Any] = handler(self)
        if self.tool == "go-tpc":
            for key in SYSBENCH_ONLY_KEYS:
                data.pop(key, None)
        return data


def data_set_key(workload: Workload) -> str:
    """What a workload's prepare step creates (test, tables, rows, options): variants with the same
    key share one data set, others each get their own schema."""
    options = {k.replace("_", "-"): v for k, v in workload.options.items()}
    key: list[Any] = [workload.test, workload.tables, workload.table_size, options]
    return json.dumps([*key, workload.warehouses] if workload.tool == "go-tpc" else key, sort_keys=True)


# A string names a workload file, a mapping is an inline workload; the discriminator keeps the
# errors of the branch the user meant instead of both.
WorkloadRef = Annotated[
    Annotated[Annotated[str, Field(pattern=SLUG)], Tag("by-name")] | Annotated[Workload, Tag("inline")],
    Discriminator(lambda v: "by-name" if isinstance(v, str) else "inline"),
]
