"""``benchfleet results --history NAME --remote`` through the deployed API handler (the template's
environment, moto): the trend's points come from what a cloud run really leaves in the bucket (the
agents' raw output and the spec.json Summarize writes, as ``results --remote`` reads them), not from
summary.json, which holds per-step outcome rows and no comparison (before: no run, no point, exit 0
over a 20 % drop). One definition with the local path: each run's ``run_comparison`` from the local
store, judged by the history's threshold."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
from typing import Any

import pytest
from botocore.client import BaseClient
from moto.stepfunctions.models import stepfunctions_backends
from tests.conftest import FIXTURES
from tests.functional.test_api import event
from tests.synthesized.test_api_deployed import SPEC, deployed  # noqa: F401 - the fixture

from benchfleet.aws.planning import runplan
from benchfleet.aws.store.summary import summarize
from benchfleet.cli import remote
from benchfleet.cli.main import main
from benchfleet.local.store import DuckDBStore
from benchfleet.plan.naming import raw_key

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


def start(cloud: Any, run_id: str, factor: float, name: str = NAME, reps: int = 3) -> None:
    """A run of ``name`` started through the deployed API (``cloud``: the fixture), its first repetition's
    raw output in the bucket (it is running: moto leaves the Pass machine's execution RUNNING)."""
    call, _, s3, env = cloud
    spec = {**SPEC, "name": name, "repetitions": reps, "workload": {**SPEC["workload"], "threads": [1]}}
    assert call("POST", "/runs", spec, {"Idempotency-Key": run_id})[0] == 202
    s3.put_object(Bucket=env["RESULTS_BUCKET"], Key=raw_key(run_id, "m6i", 1, "t0001"), Body=raw(run_id, 1, factor))


def finish(cloud: Any, run_id: str, factor: float, name: str = NAME, reps: int = 3) -> None:
    """The run's other repetitions, its outcomes, Summarize's summary.json and spec.json, and the end of
    its execution (SUCCEEDED), as deployed."""
    _, _, s3, env = cloud
    bucket = env["RESULTS_BUCKET"]
    spec = {**SPEC, "name": name, "repetitions": reps, "workload": {**SPEC["workload"], "threads": [1]}}
    plan = runplan.plan_run(runplan.RunRequest(spec=spec), execution_name=run_id)
    state = runplan.state_of(plan, s3, bucket)
    for rep in range(1, reps + 1):
        s3.put_object(Bucket=bucket, Key=raw_key(run_id, "m6i", rep, "t0001"), Body=raw(run_id, rep, factor))
        steps = [{"step": "t0001", "variant": "", "block": None, "samples": 240, "summaries": 1,
                  "cloud_metrics": 0, "fingerprints": 0, "targets": 0, "notices": [], "tps": 480.0 * factor}]
        s3.put_object(Bucket=bucket, Key=f"runs/{run_id}/m6i/rep-{rep}/outcome.json", Body=json.dumps(
            {"target_id": "m6i", "repetition": rep, "steps": steps, "error": None,
             "teardown": {"left": []}, "teardown_error": None}).encode())
    summarize(s3, bucket, run_id=run_id, plan=state, error=None)  # summary.json and spec.json, as deployed
    backend = stepfunctions_backends["123456789012"]["us-east-1"]
    (execution,) = [e for m in backend.state_machines for e in m.executions if e.name == run_id]
    execution.status = "SUCCEEDED"  # the Pass machine's end, which moto leaves RUNNING


def test_history_remote_trends_what_the_cloud_stores(deployed: Any, bf_home: Any,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from handlers import api

    for run_id, factor in SCALE.items():
        start(deployed, run_id, factor)
        finish(deployed, run_id, factor)
    monkeypatch.setattr(remote, "request", through_handler(api))
    monkeypatch.setenv("BENCHFLEET_BUCKET", deployed[3]["RESULTS_BUCKET"])

    code = main(["results", "--history", NAME, "--remote", "--api-url", API_URL, "--format", "json"])
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["runs"] == list(SCALE), doc
    rows = {r["run_id"]: r for r in doc["rows"]}
    assert rows["nightly-1"]["verdict"] == "first" and rows["nightly-1"]["tps_mean"] > 0
    assert rows["nightly-2"]["relative"]["margin_pct"] == 10.0  # the history threshold, the same locally
    assert rows["nightly-2"]["verdict"] == "steady", rows["nightly-2"]  # +0.3%: its interval inside ±10%
    assert rows["nightly-3"]["verdict"] == "regression" and -22 < rows["nightly-3"]["delta_pct"] < -18
    # Three runs: no run-to-run noise measured yet and no change point possible, so the history does not
    # fail on one verdict between two runs (as locally); the row says it is the repetitions' alone.
    assert code == 0 and doc["change_points"] == [] and not rows["nightly-3"]["relative"]["run_to_run"]["measured"]
    # The table says so: each run's tps and change, the newest flagged with its caveat.
    assert main(["results", "--history", NAME, "--remote", "--api-url", API_URL]) == 0
    table = capsys.readouterr().out
    assert table.startswith(f"history of {NAME}: 3 run(s)") and table.count("REGRESSION") == 1
    assert "nightly-3" in table.splitlines()[-2]  # last: multiplicity
    assert "REGRESSION (run-to-run noise not yet measured: 3 runs)" in table.splitlines()[-2]


def test_history_remote_skips_runs_it_cannot_judge_and_loads_a_run_once(
        deployed: Any, bf_home: Any, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """A run still running and a run whose raw output is gone (a lifecycle rule, a hand) are each
    skipped with one line saying why, the others judged (before: the list held succeeded runs only and
    the one without raw output was loaded as a run with nothing, unsaid). A run loaded after it ended is
    never downloaded again: the second history makes one API request (the list) and no S3 request, and
    `results RUN --remote` of it none at all. A run loaded while running is stored as running, not as a
    run that ended (before: 'interrupted', as a local run whose process died), and loaded again."""
    from handlers import api

    _, _, s3, env = deployed
    bucket = env["RESULTS_BUCKET"]
    for run_id, factor in (("nightly-1", 1.0), ("nightly-2", 1.003), ("nightly-gone", 1.0), ("nightly-3", 0.80)):
        start(deployed, run_id, factor)
        finish(deployed, run_id, factor)
    for rep in (1, 2, 3):
        s3.delete_object(Bucket=bucket, Key=raw_key("nightly-gone", "m6i", rep, "t0001"))
    start(deployed, "nightly-4", 0.80)
    requests: list[tuple[str, str]] = []
    handler = through_handler(api)

    def request(method: str, api_url: str, path: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
        requests.append((method, path))
        return handler(method, api_url, path, **kwargs)

    s3_calls: list[tuple[str, str]] = []
    make_api_call = BaseClient._make_api_call

    def recorded(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "s3":
            s3_calls.append((operation, params.get("Prefix") or params.get("Key") or ""))
        return make_api_call(client, operation, params)

    monkeypatch.setattr(remote, "request", request)
    monkeypatch.setattr(BaseClient, "_make_api_call", recorded)
    monkeypatch.setenv("BENCHFLEET_BUCKET", bucket)
    api_args = ["--remote", "--api-url", API_URL]

    def history(name: str = NAME) -> tuple[int, dict[str, Any], list[str]]:
        requests.clear()
        s3_calls.clear()
        code = main(["results", "--history", name, *api_args, "--format", "json"])
        captured = capsys.readouterr()
        return code, json.loads(captured.out or "{}"), captured.err.splitlines()

    code, doc, err = history()
    assert doc["runs"] == ["nightly-1", "nightly-2", "nightly-3"] and code == 0, (doc, err)  # as locally
    assert doc["skipped"] == [
        {"run_id": "nightly-4", "reason": "still running: its results are not final yet"},
        {"run_id": "nightly-gone", "reason": f"no raw output in s3://{bucket}/runs/nightly-gone/"}]
    assert err == [f"skipped {s['run_id']}: {s['reason']}" for s in doc["skipped"]]
    assert {key for op, key in s3_calls if op == "ListObjectsV2"} == {
        f"runs/{run_id}/" for run_id in ("nightly-1", "nightly-2", "nightly-gone", "nightly-3")}

    # Again: what is loaded is not fetched again.
    assert history()[:2] == (code, doc)
    assert s3_calls == [] and requests == [("GET", "runs")]
    requests.clear()
    assert main(["results", "nightly-1", *api_args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["run_id"] == "nightly-1"
    assert s3_calls == [] and requests == []

    # A run loaded while running: stored as the cloud said, partial, and loaded again next time.
    for _ in range(2):
        s3_calls.clear()
        assert main(["results", "nightly-4", *api_args, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["run"]["status"] == "running"
        assert ("GetObject", raw_key("nightly-4", "m6i", 1, "t0001")) in s3_calls  # downloaded each time
        stored = DuckDBStore(bf_home / "benchfleet.duckdb", write=False)
        run = stored.run("nightly-4")
        assert (run["status"], run["ended_at"]) == ("running", None) and "partial" in run["message"]
        assert stored.cloud_copy("nightly-4")["cloud_status"] == "RUNNING"
        stored.close()
    # The next command is another process (the one that loaded it has ended): still running there.
    listed = subprocess.run([sys.executable, "-m", "benchfleet.cli", "runs", "--format", "json"],
                            capture_output=True, text=True, check=True, timeout=120).stdout
    assert {r["run_id"]: r["status"] for r in json.loads(listed)}["nightly-4"] == "running"

    # Once it ended, the history loads it (it alone) and judges it against nightly-3, with the run-to-run
    # noise its four runs show: the -20 % step among so few runs (too few for a change point) is as much
    # noise as anything can tell yet, so the same figure twice is inconclusive, not "steady".
    finish(deployed, "nightly-4", 0.80)
    code, doc, err = history()
    assert {key for op, key in s3_calls if op == "ListObjectsV2"} == {"runs/nightly-4/"}
    last = doc["rows"][-1]
    assert doc["runs"][-1] == "nightly-4" and last["verdict"] == "inconclusive" and code == 0, doc
    assert last["relative"]["run_to_run"]["measured"] and -1 < last["delta_pct"] < 1
    assert err == [f"skipped nightly-gone: no raw output in s3://{bucket}/runs/nightly-gone/"]
    assert history()[:2] == (code, doc) and s3_calls == []

    # Fewer than two runs left: said as locally (one: its table and a note; none: exit 2).
    start(deployed, "weekly-1", 1.0, "weekly", reps=1)
    finish(deployed, "weekly-1", 1.0, "weekly", reps=1)
    start(deployed, "weekly-2", 1.0, "weekly", reps=1)
    code, doc, err = history("weekly")
    assert code == 0 and doc["runs"] == ["weekly-1"] and err == [
        "skipped weekly-2: still running: its results are not final yet",
        "note: only one succeeded run named 'weekly' in the cloud: nothing to judge it against yet "
        "(a trend needs two)"]
    start(deployed, "monthly-1", 1.0, "monthly", reps=1)
    assert main(["results", "--history", "monthly", *api_args]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "skipped monthly-1: still running: its results are not final yet",
        "error: no succeeded runs named 'monthly' in the cloud"]
