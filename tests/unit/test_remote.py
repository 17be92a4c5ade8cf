"""remote: the CLI's SigV4-signed client, against a fake API on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.credentials import Credentials

from benchfleet.cli import remote

REPO = Path(__file__).resolve().parents[2]
CREDS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "session-token")
AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/([a-z0-9-]+)/execute-api/aws4_request, "
                  r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")
SPEC = {"name": "nightly", "workload": {"name": "ro", "test": "oltp_read_only"},
        "targets": [{"id": "a", "kind": "ec2", "instance_type": "m6i.large"}]}


class FakeApi(BaseHTTPRequestHandler):
    state: dict  # set per server

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body, ctype: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        st = self.state
        auth = self.headers.get("Authorization", "")
        match = AUTH.match(auth)
        st["auth"].append(auth)
        signed = match.group(3).split(";") if match else []
        ok = (match is not None and match.group(2) == st["region"] and "host" in signed
              and "x-amz-date" in signed and re.match(r"^\d{8}T\d{6}Z$", self.headers.get("X-Amz-Date", ""))
              and self.headers.get("X-Amz-Security-Token") == "session-token"
              and match.group(1) == self.headers["X-Amz-Date"][:8])
        if not ok:
            self._send(403, {"message": "Missing Authentication Token"})
        return bool(ok)

    def _route(self, method: str) -> None:
        st = self.state
        if not self._authorised():
            return
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")[1:]  # drop the stage
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        st["requests"].append((method, url.path, query, body, dict(self.headers)))
        if st["fail_next"]:
            st["fail_next"] -= 1
            return self._send(503, {"message": "try again"})
        if method == "POST" and parts == ["runs"]:
            key = self.headers["Idempotency-Key"]
            if not isinstance(body.get("workload"), dict):
                return self._send(400, {"message": "workload: must be inline", "field": "workload"})
            st["runs"].setdefault(key, {"polls": 0, "spec": body})
            return self._send(202, {"run_id": key, "status": "RUNNING"})
        if method == "GET" and parts == ["runs"]:
            ids = sorted(st["runs"])
            if query.get("name"):
                ids = [i for i in ids if st["runs"][i]["spec"]["name"] == query["name"]]
            start = int(query.get("next", 0))
            page = ids[start:start + 2]
            doc = {"runs": [{"run_id": i, "status": "SUCCEEDED", "started_at": f"2026-11-0{n + 1}T00:00:00Z"}
                            for n, i in enumerate(page, start)]}
            if start + 2 < len(ids):
                doc["next"] = str(start + 2)
            return self._send(200, doc)
        if len(parts) >= 2 and parts[0] == "runs" and parts[1] not in st["runs"]:
            return self._send(404, {"message": f"id: no run {parts[1]}", "field": "id"})
        run = st["runs"].get(parts[1]) if len(parts) >= 2 else None
        if method == "GET" and len(parts) == 2:
            run["polls"] += 1
            status = "SUCCEEDED" if run["polls"] >= 3 else "RUNNING"
            steps = [{"step": "t0001", "status": "done" if run["polls"] >= 2 else "pending"}]
            return self._send(200, {"run_id": parts[1], "status": status,
                                    "targets": [{"target_id": "a", "repetitions": [{"steps": steps}]}]})
        if method == "GET" and parts[2:] == ["results"]:
            tps = st["tps"].get(parts[1], 100.0)
            if query.get("format") == "csv":
                return self._send(200, f"target_id,threads,tps_mean\na,1,{tps}\n", "text/csv")
            return self._send(200, {"run": {"run_id": parts[1]}, "rows": [
                {"target_id": "a", "threads": 1, "tps": {"mean": tps, "ci_low": tps - 1, "ci_high": tps + 1,
                                                         "n": 3, "values": [tps - 1, tps, tps + 1]}}]})
        if method == "DELETE" and len(parts) == 2:
            return self._send(202, {"run_id": parts[1], "status": "ABORTED", "cancelled": True})
        return self._send(404, {"message": "path: no such resource", "field": "path"})

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_DELETE(self):
        self._route("DELETE")


@pytest.fixture
def api(monkeypatch):
    state = {"runs": {}, "requests": [], "auth": [], "fail_next": 0, "region": "eu-west-1", "tps": {}}
    handler = type("Handler", (FakeApi,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setattr(remote, "_session", lambda region=None: type("S", (), {
        "get_credentials": lambda self: CREDS, "region_name": "eu-west-1"})())
    monkeypatch.setattr(remote.time, "sleep", lambda s: None)
    url = f"http://127.0.0.1:{server.server_address[1]}/prod/"
    yield url, state
    server.shutdown()
    server.server_close()


def test_submit_signs_inlines_and_sends_an_idempotency_key(api):
    url, state = api
    run_id = remote.submit(SPEC, url)
    method, path, _, body, headers = state["requests"][-1]
    assert (method, path) == ("POST", "/prod/runs") and body == SPEC
    assert headers["Idempotency-Key"] == run_id and run_id.startswith("nightly-")
    assert headers["Content-Type"] == "application/json"
    assert all(AUTH.match(a) for a in state["auth"])


def test_retries_reuse_the_key(api):
    url, state = api
    state["fail_next"] = 2
    run_id = remote.submit(SPEC, url, idempotency_key="nightly-1")
    keys = [r[4]["Idempotency-Key"] for r in state["requests"]]
    assert run_id == "nightly-1" and keys == ["nightly-1"] * 3 and len(state["runs"]) == 1
    # each retry is signed afresh
    assert len(state["auth"]) == 3 and all(AUTH.match(a) for a in state["auth"])


def test_refusal_raises_with_the_field(api):
    url, _ = api
    with pytest.raises(remote.RemoteError) as e:
        remote.submit({**SPEC, "workload": "oltp-read-only"}, url)
    assert e.value.status == 400 and e.value.field == "workload"
    with pytest.raises(remote.RemoteError) as e:
        remote.cancel("never-was", url)
    assert e.value.status == 404
    with pytest.raises(remote.RemoteError):
        remote.get_run("../etc", url)  # refused before any request


def test_unsigned_requests_are_refused_by_the_fake(api):
    import urllib.error
    import urllib.request

    url, _ = api
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "runs")
    assert e.value.code == 403


def test_wait_polls_until_done_and_reports_changes(api):
    url, _ = api
    run_id = remote.submit(SPEC, url)
    seen = []
    final = remote.wait(run_id, url, on_update=lambda run: seen.append(
        (run["status"], run["targets"][0]["repetitions"][0]["steps"][0]["status"])), poll_s=0)
    assert final["status"] == "SUCCEEDED"
    assert seen == [("RUNNING", "pending"), ("RUNNING", "done"), ("SUCCEEDED", "done")]


def test_list_runs_follows_pages_and_results_and_cancel(api):
    url, _ = api
    ids = [remote.submit(SPEC, url, idempotency_key=f"nightly-{i}") for i in range(5)]
    runs = remote.list_runs(url)
    assert [r["run_id"] for r in runs] == sorted(ids)
    assert len(remote.list_runs(url, limit=3)) == 3
    doc = remote.results(ids[0], url)
    assert doc["rows"][0]["tps"]["mean"] == 100.0
    assert remote.results(ids[0], url, fmt="csv").splitlines()[0] == "target_id,threads,tps_mean"
    assert remote.cancel(ids[0], url)["status"] == "ABORTED"


def test_api_url_from_the_stack_outputs(monkeypatch):
    monkeypatch.delenv("BENCHFLEET_API_URL", raising=False)

    class Cfn:
        def describe_stacks(self, StackName):
            assert StackName == "Benchfleet"
            return {"Stacks": [{"Outputs": [{"OutputKey": "Other", "OutputValue": "x"},
                                            {"OutputKey": "ApiUrl",
                                             "OutputValue": "https://abc.execute-api.eu-west-1.amazonaws.com/prod/"}]}]}

    url = remote.resolve_api_url(None, cfn=Cfn())
    assert url == "https://abc.execute-api.eu-west-1.amazonaws.com/prod"
    assert remote.region_of(url) == "eu-west-1"
    assert remote.resolve_api_url("https://x.example/api/") == "https://x.example/api"
    with pytest.raises(remote.RemoteError):
        remote.resolve_api_url("file:///etc/passwd")

    class NoOutput:
        def describe_stacks(self, StackName):
            return {"Stacks": [{"Outputs": []}]}

    with pytest.raises(remote.RemoteError, match="ApiUrl"):
        remote.resolve_api_url(None, cfn=NoOutput())


def test_inline_spec_resolves_a_named_workload_file():
    path = REPO / "workloads" / "comparisons" / "demo-durability.yaml"
    if not path.exists():
        pytest.skip("demo spec not present")
    body = remote.inline_spec(path)
    assert isinstance(body["workload"], dict) and body["workload"]["name"]
    json.dumps(body)
