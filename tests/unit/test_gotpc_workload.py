"""The go-tpc workload kind (tool: go-tpc): validation naming the field, its agent job, its plan and the
smoke scale, and the agent's own check of such a job."""

from __future__ import annotations

import pytest
from tests.agent_modules import load
from tests.conftest import FIXTURES, REPO

from benchfleet.plan.agentjob import agent_job
from benchfleet.plan.estimates import GOTPC_PREPARE_S_PER_WAREHOUSE, prepare_seconds
from benchfleet.plan.model import make_plan
from benchfleet.plan.scale import apply_scale
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import inline_loaded, load_spec, parse_spec, resolve
from benchfleet.spec.workload import Workload, data_set_key
from benchfleet.workload.records import parse_agent_lines
from benchfleet.workload.validation import plan_problem

TPCC = {"name": "t", "tool": "go-tpc", "test": "tpcc", "warehouses": 2, "threads": [1, 4]}
SPEC = REPO / "workloads" / "comparisons" / "local-tpcc-durability.yaml"

jobcheck = load("benchfleet_job")


def problems(workload: dict[str, object]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as e:
        parse_spec({"name": "s", "workload": workload, "targets": [{"id": "a", "kind": "local"}]}, "f.yaml")
    return e.value.problems


@pytest.mark.parametrize(("change", "path", "fragment"), [
    ({"test": "oltp_read_only"}, "workload.test", "go-tpc runs test tpcc"),
    ({"warehouses": None}, "workload.warehouses", "go-tpc needs warehouses"),
    ({"warehouses": 0}, "workload.warehouses", "greater than or equal to 1"),
    ({"warehouses": 10_001}, "workload.warehouses", "less than or equal to 10000"),
    ({"tables": 4}, "workload.tables", "sysbench key"),
    ({"options": {"rate": 10}}, "workload.options", "sysbench key"),
    ({"percentile": 97}, "workload.percentile", "50, 90, 95, 99"),
    ({"tool": "hammerdb"}, "workload.tool", "'sysbench' or 'go-tpc'"),
])
def test_what_go_tpc_would_not_take_is_refused_naming_the_field(change: dict[str, object], path: str,
                                                                fragment: str) -> None:
    workload = {k: v for k, v in {**TPCC, **change}.items() if v is not None}
    found = problems(workload)
    assert any(p == path and fragment in m for p, m in found), found


def test_warehouses_belong_to_go_tpc() -> None:
    found = problems({"name": "w", "test": "oltp_read_only", "warehouses": 2})
    assert any(p == "workload.warehouses" and "go-tpc" in m for p, m in found), found


def test_the_job_names_go_tpc_and_its_data_set_not_sysbench() -> None:
    loaded = load_spec(SPEC)
    assert loaded.workload.tool == "go-tpc" and loaded.workload.warehouses == 1
    plan = make_plan(loaded)
    step = next(s for s in plan.targets[0].steps if s.kind == "measure")
    job = agent_job(run_id="r", target_id="local-512mb", repetition=1, workload=loaded.workload, step=step, db={})
    assert job["gotpc"] == {"test": "tpcc", "warehouses": 1, "percentile": 95} and "sysbench" not in job
    jobcheck.check_job(job)  # the agent takes it
    for bad, fragment in (({"warehouses": 0}, "gotpc.warehouses"), ({"percentile": 97}, "gotpc.percentile"),
                          ({"test": "tpch"}, "gotpc.test")):
        with pytest.raises(jobcheck.JobError, match=fragment):
            jobcheck.check_job({**job, "gotpc": {**job["gotpc"], **bad}})
    with pytest.raises(jobcheck.JobError, match="TLS"):
        jobcheck.check_job({**job, "db": {"tls": "required"}})


def test_warehouses_are_the_data_set() -> None:
    one, two = Workload(**{**TPCC, "warehouses": 1}), Workload(**TPCC)  # type: ignore[arg-type]
    assert data_set_key(one) != data_set_key(two)
    assert prepare_seconds(two) == GOTPC_PREPARE_S_PER_WAREHOUSE  # two warehouses, two loading threads
    assert prepare_seconds(Workload(**{**TPCC, "prepare_threads": 1})) == 2 * GOTPC_PREPARE_S_PER_WAREHOUSE  # type: ignore[arg-type]


def test_smoke_scale_keeps_a_go_tpc_workload_valid() -> None:
    loaded = apply_scale(load_spec(SPEC), "smoke")
    w = loaded.workload
    assert w.warehouses == 1 and w.tool == "go-tpc" and w.duration_s == 6  # two blocks of 3 s
    Workload.model_validate(w.model_dump(exclude_unset=True))  # still a valid go-tpc workload


@pytest.mark.parametrize("mode", ["python", "json"])
def test_a_go_tpc_workload_reads_back_as_itself_from_its_dump(mode: str) -> None:
    """Every producer hands the workload on as its dump (Plan's state for StartStep and Collect, a run's
    stored spec, the API body of `run --remote`) and every consumer validates it again: a go-tpc dump
    carrying sysbench's defaults (tables, table_size, rand_type, options) was refused as if the user had
    written them, so start_step failed every go-tpc step ("tables is a sysbench key")."""
    w = Workload(**TPCC)  # type: ignore[arg-type]
    dumped = w.model_dump(mode=mode)  # type: ignore[arg-type]
    assert not set(dumped) & {"tables", "table_size", "rand_type", "options"}
    assert Workload.model_validate(dumped) == w
    assert Workload.model_validate_json(w.model_dump_json()) == w
    # ... and the spec that holds it inline, as the API receives it.
    loaded = load_spec(SPEC)
    assert parse_spec(loaded.inline(), "api").workload == loaded.workload
    # A sysbench workload's dump keeps its data set.
    sysbench = Workload(name="s", test="oltp_read_only", tables=2)
    assert sysbench.model_dump()["tables"] == 2 and Workload.model_validate(sysbench.model_dump()) == sysbench


@pytest.mark.parametrize(("target", "path"), [
    ({"id": "r", "kind": "rds", "instance_class": "db.m6g.large", "client": {"instance_type": "c6i.large"}},
     "targets[1].kind"),
    ({"id": "r", "kind": "aurora", "instance_class": "db.r6g.large", "client": {"instance_type": "c6i.large"}},
     "targets[1].kind"),
    ({"id": "r", "kind": "existing", "host": "db.example.com", "tls": "required"}, "targets[1].tls"),
])
def test_a_go_tpc_workload_on_a_target_reached_only_over_tls_is_refused_naming_it(
        target: dict[str, object], path: str) -> None:
    """go-tpc 1.0.7 has no TLS option and benchfleet reaches RDS and Aurora over TLS only (and an existing
    server that says tls: required): the agent refused such a job on the host, once the database had been
    provisioned and paid for. Refused at validate, a spec file and an API body alike, naming the target."""
    doc = {"name": "s", "workload": TPCC, "targets": [{"id": "e", "kind": "ec2", "instance_type": "m6i.large"},
                                                     target]}
    for check in (lambda: resolve(parse_spec(doc, "f.yaml"), "f.yaml"),
                  lambda: inline_loaded(parse_spec(doc, "api"), "api")):
        with pytest.raises(SpecError) as e:
            check()
        ((field, message),) = e.value.problems
        assert field == path and "go-tpc" in message and "TLS" in message, message
    # The same targets with sysbench, and go-tpc on an existing server that does not require TLS: accepted.
    resolve(parse_spec({**doc, "workload": {"name": "s", "test": "oltp_read_only"}}, "f.yaml"), "f.yaml")
    resolve(parse_spec({**doc, "targets": [{"id": "r", "kind": "existing", "host": "db.example.com"}]}, "f.yaml"),
            "f.yaml")


def test_a_go_tpc_step_matches_its_plan_though_its_clock_starts_at_its_first_new_order() -> None:
    """go-tpc's summary covers a step from its first completed New-Order, not from the step's start: a
    3 s block of `run local-tpcc-durability.yaml --scale smoke` (4 threads, load average 7 on 2 cores;
    its raw output, unedited) totalled 2.775 s, and the plan check local runs and collect share refused
    it as a stall ("sysbench ran 2.77 s for a 3 s step"), failing the run. A go-tpc run much shorter than
    its step is still refused, naming go-tpc; sysbench's clock starts with the step, so the same
    shortfall stays a stall there."""
    name = "t0004.b1.relaxed"
    output = parse_agent_lines((FIXTURES / "agent-gotpc" / f"{name}.jsonl").read_text())
    (summary,) = output.summaries
    assert summary.tpmc and summary.total_time_s == 2.775 and len(output.samples) == 2

    def check(total: float, tpmc: float | None) -> str | None:
        changed = summary.model_copy(update={"total_time_s": total, "tpmc": tpmc})
        return plan_problem(output.model_copy(update={"summaries": [changed]}), kind="measure", duration_s=3,
                            report_interval_s=1, step=name)

    assert check(2.775, summary.tpmc) is None
    assert check(1.5, summary.tpmc) == "go-tpc ran 1.5 s for a 3 s step"
    assert check(2.775, None) == "sysbench ran 2.77 s for a 3 s step"


def test_cost_of_a_tpcc_row_is_per_1000_new_orders_per_minute() -> None:
    from rich.console import Console

    from benchfleet.cli import ui_cost

    stats = {"targets": [{"target_id": "m6i", "prices": {"serving": {"on_demand": 1.2}}}],
             "rows": [{"target_id": "m6i", "threads": 4, "tps": {"mean": 150.0},
                       "cost": {"on_demand": {"usd_per_hour": 1.2, "per_1000_tps": 8.0, "ci_low": 7.5,
                                              "ci_high": 8.5}}}]}
    console = Console(record=True, width=200)
    ui_cost.print_costs(console, stats, ("on_demand",), per_minute=True)
    text = console.export_text()
    # 150 New-Order/s is 9,000 tpmC; $8 per 1,000 New-Order/s is $8/60 per 1,000 New-Order/min
    assert "cost per 1,000 New-Order/min" in text and "9,000" in text and f"{8 / 60:.4f}" in text, text
    assert f"{7.5 / 60:.4f}" in text and " tps" not in text


def test_a_step_in_blocks_has_the_highest_of_its_blocks_percentiles() -> None:
    # The local TPC-C smoke run's durable 1-thread blocks: p95 16.3 and 19.9 ms. The table's p95 is the
    # higher (latency_pct_ms); the distribution was block 1's alone, 16.3, beside it.
    from benchfleet.stats.steps import merge_blocks

    def block(n: int, p95: float) -> dict[str, object]:
        return {"repetition": 1, "threads": 1, "block": n, "latency_pct_ms": p95,
                "latency_percentiles_ms": {"50": 12.1, "90": 16.3, "95": p95, "99": 21.0 + n, "99.9": 22.0 + n,
                                           "max": 22.0 + n}}

    (merged,) = merge_blocks([block(1, 16.3), block(2, 19.9)])
    assert merged["latency_pct_ms"] == 19.9
    assert merged["latency_percentiles_ms"] == {"50": 12.1, "90": 16.3, "95": 19.9, "99": 23.0, "99.9": 24.0,
                                                "max": 24.0}
    (partial,) = merge_blocks([block(1, 16.3), {**block(2, 19.9), "latency_percentiles_ms": None}])
    assert partial["latency_percentiles_ms"] is None
