"""A TPC-C workload (tool: go-tpc, issue 39 item 5) through statemachines/benchmark-run.asl.json, offline:
Plan's steps for it, the go-tpc jobs start_step sends (and the agent's own check takes), what collect
stores of go-tpc's records (tpmC, each transaction type's rate, New-Order's latency distribution) in
Timestream, and the run read back from S3 as `results --remote` reads it, the figure named tpmC. The
agent's output is go-tpc's, captured on the host tier (tests/fixtures/agent-gotpc)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sm_harness import leftovers, recording, spec
from sm_world import BUCKET
from tests.agent_modules import load
from timestream_requests import dimensions, stored_records

from benchfleet.plan.estimates import prepare_seconds
from benchfleet.spec.workload import Workload
from benchfleet.workload.records import LATENCY_DISTRIBUTION_KEYS

# Two threads, as the captured step ran (the harness replays its records as they are).
TPCC = {"name": "tpcc-cloud", "tool": "go-tpc", "test": "tpcc", "warehouses": 2, "prepare_threads": 2,
        "warmup_s": 0, "threads": [2], "duration_s": 60, "percentile": 99}
EC2 = {"id": "ec2-m6i", "kind": "ec2", "instance_type": "m6i.large", "engine": "mariadb", "mysql_config": "relaxed"}
TX_TYPES = {"DELIVERY", "NEW_ORDER", "ORDER_STATUS", "PAYMENT", "STOCK_LEVEL"}

jobcheck = load("benchfleet_job")


def measures(record: dict[str, Any]) -> dict[str, str]:
    return {m["Name"]: m["Value"] for m in record["MeasureValues"]}


def test_a_tpcc_run_sends_go_tpc_jobs_and_stores_tpmc_and_the_latency_distribution(
        harness: Any, bf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    requests, writes = recording(harness)
    result = harness.run(spec(workload=TPCC, targets=[EC2]), name="tpcc-ec2")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    plan = next(c.result for c in harness.calls_of("plan"))
    run_id = plan["run_id"]

    # The plan: the warehouses' load at go-tpc's measured pace, then the one measured step.
    (target,) = plan["targets"]
    steps = {s["name"]: s for s in target["steps"]}
    assert list(steps) == ["prepare", "t0002"]
    assert steps["prepare"]["duration_s"] == prepare_seconds(Workload.model_validate(TPCC))
    assert plan["workload"]["tool"] == "go-tpc" and "tables" not in plan["workload"]

    # The jobs: go-tpc's, each taken by the agent's own check; the prepare may run as long as its load.
    jobs = [json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in requests]
    assert [j["step"]["name"] for j in jobs] == ["prepare", "t0002"]
    for job in jobs:
        assert job["gotpc"] == {"test": "tpcc", "warehouses": 2, "percentile": 99} and "sysbench" not in job
        assert job["db"]["tls"] == "off"
        jobcheck.check_job(job)
    assert int(requests[0]["Parameters"]["executionTimeout"][0]) >= steps["prepare"]["duration_s"]

    # What collect stored: a sample per report interval with tpmC and every type's rate, the summary
    # with tpmC and New-Order's distribution; go-tpc counts no queries, so no qps is written.
    (measured,) = [c.result for c in harness.calls_of("collect") if c.event["step"]["name"] == "t0002"]
    assert measured["samples"] == 60 and measured["summaries"] == 1
    samples = [r for call in writes if call["TableName"] == "samples" for r in stored_records(call)]
    assert len(samples) == 60
    for record in samples:
        figures = measures(record)
        assert float(figures["tpmc"]) > 0 and "qps" not in figures
        rates = json.loads(figures["tx_per_s"])
        assert set(rates) <= TX_TYPES | {f"{t}_ERR" for t in TX_TYPES}
        assert rates["NEW_ORDER"] == pytest.approx(float(figures["tps"]))
        assert dimensions(record)["threads"] == "2"
    (summary,) = [r for call in writes if call["TableName"] == "step_summaries" for r in stored_records(call)
                  if dimensions(r)["phase"] == "measure"]
    figures = measures(summary)
    assert float(figures["tps"]) == pytest.approx(float(figures["tpmc"]) / 60, abs=1e-3)
    distribution = json.loads(figures["latency_percentiles_ms"])
    assert sorted(distribution) == sorted(LATENCY_DISTRIBUTION_KEYS)
    assert float(figures["latency_pct_ms"]) == distribution["99"]

    # The run read back from S3 as `results --remote` reads it: tpmC per step and the distribution.
    from benchfleet.cli import remote
    from benchfleet.cli.main import main

    monkeypatch.setenv("BENCHFLEET_BUCKET", BUCKET)
    monkeypatch.setattr(remote, "get_run", lambda run, api_url=None: {
        "run_id": run_id, "name": "sm-test", "status": result["status"]})
    api = ["--remote", "--api-url", "https://x.execute-api.us-east-1.amazonaws.com/prod"]
    capsys.readouterr()  # the handlers' metric lines
    assert main(["results", run_id, *api, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (step,) = [s for s in doc["steps"] if s["phase"] == "measure"]
    assert step["tpmc"] == pytest.approx(float(figures["tpmc"]))
    assert step["latency_percentiles_ms"] == distribution
    assert main(["results", run_id, *api]) == 0
    table = capsys.readouterr().out
    assert "tpmC" in table, table
    assert leftovers(run_id) == []
