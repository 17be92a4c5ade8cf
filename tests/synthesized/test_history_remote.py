"""``benchfleet results --history NAME --remote`` through the deployed API handler (the template's
environment, moto): the trend's points come from what a cloud run really leaves in the bucket (the
agents' raw output and the spec.json Summarize writes, as ``results --remote`` reads them), not from
summary.json, which holds per-step outcome rows and no comparison (before: no run, no point, exit 0
over a 20 % drop). One definition with the local path: each run's ``run_comparison`` from the local
store, judged by the history's threshold."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from moto.stepfunctions.models import stepfunctions_backends
from tests.conftest import FIXTURES
from tests.functional.test_api import event
from tests.synthesized.test_api_deployed import SPEC, deployed  # noqa: F401 - the fixture

from benchfleet import remote
from benchfleet.aws.planning import runplan
from benchfleet.aws.store.summary import summarize
from benchfleet.cli import main
from benchfleet.naming import raw_key

API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/prod"
NAME = "nightly-ro"
SCALE = {"nightly-1": 1.0, "nightly-2": 1.003, "nightly-3": 0.80}  # the third run is 20 % slower


def raw(run_id: str, rep: int, factor: float) -> bytes:
    """The fixture's step as the agent of ``run_id``'s repetition ``rep`` reports it, tps scaled; its
    summary and first 20 seconds (the store inserts row by row: the whole step is 1 s a file)."""
    lines = []
    records = [json.loads(line) for line in (FIXTURES / "agent" / "t0001.jsonl").read_text().splitlines()]
    for record in [r for r in records if r["type"] == "sample"][:20] + [r for r in records if r["type"] == "summary"]:
        record.update(run_id=run_id, target_id="m6i", repetition=rep)
        for key in ("tps", "qps", "transactions", "events", "queries", "total_queries", "reads", "writes", "other"):
            if isinstance(record.get(key), int | float):
                scaled = record[key] * factor * (1 + 0.004 * rep)
                record[key] = round(scaled, 3) if isinstance(record[key], float) else round(scaled)
        lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode()


def through_handler(api: Any):
    """remote.request answered by the deployed handler (API Gateway's event), not over a socket."""
    def request(method: str, api_url: str, path: str, *, body: Any = None, query: Any = None,
                headers: Any = None, **_: Any) -> tuple[int, dict[str, str], bytes]:
        assert api_url == API_URL
        clean = {k: str(v) for k, v in (query or {}).items() if v is not None} or None
        response = api.handler(event(method, "/" + urllib.parse.urlsplit(path).path.lstrip("/"), body,
                                     headers, clean), None)
        out = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        return response["statusCode"], out, (response["body"] or "").encode()
    return request


def test_history_remote_trends_what_the_cloud_stores(deployed: Any, bf_home: Any,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from handlers import api

    call, _, s3, env = deployed
    bucket = env["RESULTS_BUCKET"]
    spec = {**SPEC, "name": NAME, "repetitions": 3,
            "workload": {**SPEC["workload"], "threads": [1]}}
    backend = stepfunctions_backends["123456789012"]["us-east-1"]
    for run_id, factor in SCALE.items():
        assert call("POST", "/runs", spec, {"Idempotency-Key": run_id})[0] == 202
        plan = runplan.plan_run(runplan.RunRequest(spec=spec), execution_name=run_id)
        state = runplan.state_of(plan, s3, bucket)
        for rep in (1, 2, 3):
            s3.put_object(Bucket=bucket, Key=raw_key(run_id, "m6i", rep, "t0001"), Body=raw(run_id, rep, factor))
            steps = [{"step": "t0001", "variant": "", "block": None, "samples": 240, "summaries": 1,
                      "cloud_metrics": 0, "fingerprints": 0, "targets": 0, "notices": [], "tps": 480.0 * factor}]
            s3.put_object(Bucket=bucket, Key=f"runs/{run_id}/m6i/rep-{rep}/outcome.json", Body=json.dumps(
                {"target_id": "m6i", "repetition": rep, "steps": steps, "error": None,
                 "teardown": {"left": []}, "teardown_error": None}).encode())
        summarize(s3, bucket, run_id=run_id, plan=state, error=None)  # summary.json and spec.json, as deployed
        (execution,) = [e for m in backend.state_machines for e in m.executions if e.name == run_id]
        execution.status = "SUCCEEDED"  # the Pass machine's end, which moto leaves RUNNING
    monkeypatch.setattr(remote, "request", through_handler(api))
    monkeypatch.setenv("BENCHFLEET_BUCKET", bucket)

    code = main(["results", "--history", NAME, "--remote", "--api-url", API_URL, "--format", "json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["runs"] == list(SCALE), doc
    rows = {r["run_id"]: r for r in doc["rows"]}
    assert rows["nightly-1"]["verdict"] == "first" and rows["nightly-1"]["tps_mean"] > 0
    assert rows["nightly-2"]["relative"]["margin_pct"] == 10.0  # the history threshold, the same locally
    assert rows["nightly-2"]["verdict"] == "steady", rows["nightly-2"]  # +0.3%: its interval inside ±10%
    assert rows["nightly-3"]["verdict"] == "regression" and -22 < rows["nightly-3"]["delta_pct"] < -18
    assert code == 1  # the newest run regressed
    # The table says so: each run's tps and change, the newest flagged.
    assert main(["results", "--history", NAME, "--remote", "--api-url", API_URL]) == 1
    table = capsys.readouterr().out
    assert table.startswith(f"history of {NAME}: 3 run(s)") and table.count("REGRESSION") == 1
    assert "nightly-3" in table.splitlines()[-2] and "REGRESSION" in table.splitlines()[-2]  # last: multiplicity
