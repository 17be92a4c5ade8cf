"""The CLI's client for a deployed benchfleet API (``benchfleet run --remote``, ``runs``, ``results``,
``cancel`` against AWS).

- The API URL is ``--api-url``, else ``$BENCHFLEET_API_URL``, else the ``ApiUrl`` output of the
  deployed CloudFormation stack (``Benchfleet`` unless ``$BENCHFLEET_STACK`` says otherwise).
- Every request is signed with SigV4 (service ``execute-api``) from the user's usual AWS
  credentials (environment, profile, SSO...): the API uses IAM authorisation.
- ``submit`` inlines the named workload (the API takes it inline) and sends an ``Idempotency-Key``
  that is also the run id, so a retried POST (timeouts, 5xx) never starts a second fleet.
- Standard library HTTP (urllib) plus botocore's signer; no ``requests``.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from benchfleet.aws.run_status import TERMINAL
from benchfleet.plan import naming

DEFAULT_STACK = "Benchfleet"
OUTPUT_NAME = "ApiUrl"
SERVICE = "execute-api"
_REGION_IN_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
RETRY_STATUSES = (429, 500, 502, 503, 504)


class RemoteError(RuntimeError):
    """The API refused or failed: HTTP ``status``, its ``message`` and the ``field`` it names."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{message} (HTTP {status})" if status else message)
        self.status = status
        self.message = message
        self.field = field
        self.body = dict(body or {})


# ---- where and as whom --------------------------------------------------------------------------

def _session(region: str | None = None) -> Any:
    import boto3

    return boto3.session.Session(region_name=region) if region else boto3.session.Session()


def api_url_from_stack(stack: str | None = None, region: str | None = None, cfn: Any = None) -> str:
    """The ``ApiUrl`` output of the deployed stack."""
    stack = stack or os.environ.get("BENCHFLEET_STACK") or DEFAULT_STACK
    try:
        cfn = cfn or _session(region).client("cloudformation")
        stacks = cfn.describe_stacks(StackName=stack)["Stacks"]
    except Exception as e:  # botocore's errors: no credentials, no such stack, no network
        raise RemoteError(0, f"cannot read the outputs of stack {stack}: {e}; deploy it or pass "
                             "--api-url") from None
    for output in (stacks[0].get("Outputs") or []) if stacks else []:
        if output.get("OutputKey") == OUTPUT_NAME:
            return str(output["OutputValue"])
    raise RemoteError(0, f"stack {stack} has no {OUTPUT_NAME} output; pass --api-url")


def resolve_api_url(api_url: str | None = None, region: str | None = None, cfn: Any = None) -> str:
    url = api_url or os.environ.get("BENCHFLEET_API_URL") or api_url_from_stack(region=region, cfn=cfn)
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("https", "http") or not parsed.netloc:
        raise RemoteError(0, f"api url {url!r} is not an http(s) URL")
    return url.rstrip("/")


def region_of(api_url: str, region: str | None = None) -> str:
    """The region to sign for: the API's own (from its host name), else the configured one."""
    host = urllib.parse.urlsplit(api_url).hostname or ""
    match = _REGION_IN_HOST.search(host)
    if match:
        return match.group(1)
    return (region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            or _session().region_name or "us-east-1")


# ---- one signed request -------------------------------------------------------------------------

def request(method: str, api_url: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None,
            headers: Mapping[str, str] | None = None, credentials: Any = None, region: str | None = None,
            timeout_s: float = 30.0, retries: int = 3) -> tuple[int, dict[str, str], bytes]:
    """Send one SigV4-signed request; retries connection errors and 429/5xx with backoff (callers
    only use it for idempotent requests or with an Idempotency-Key). Returns status, headers, body."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    if urllib.parse.urlsplit(api_url).scheme not in ("https", "http"):
        raise RemoteError(0, f"api url {api_url!r} is not an http(s) URL")
    url = f"{api_url.rstrip('/')}/{path.lstrip('/')}"
    if query:
        url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    data = json.dumps(body).encode() if body is not None else None
    credentials = credentials or _session().get_credentials()
    if credentials is None:
        raise RemoteError(0, "no AWS credentials found (environment, profile or SSO): the API uses IAM auth")
    sign_region = region_of(api_url, region)
    attempt = 0
    while True:
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        aws_request = AWSRequest(method=method, url=url, data=data, headers=all_headers)
        SigV4Auth(credentials, SERVICE, sign_region).add_auth(aws_request)  # fresh date per attempt
        prepared = urllib.request.Request(url, data=data, method=method,  # noqa: S310 - scheme checked
                                          headers=dict(aws_request.headers.items()))
        try:
            with urllib.request.urlopen(prepared, timeout=timeout_s) as resp:  # noqa: S310 - http(s) checked
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as e:
            status, resp_headers, payload = e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()
            if status not in RETRY_STATUSES or attempt >= retries:
                return status, resp_headers, payload
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            if attempt >= retries:
                raise RemoteError(0, f"cannot reach {api_url}: {getattr(e, 'reason', e)}") from None
        attempt += 1
        time.sleep(min(2 ** attempt * 0.25, 5.0))


def _json_or_raise(status: int, payload: bytes) -> Any:
    try:
        doc = json.loads(payload) if payload else {}
    except ValueError:
        doc = {"message": payload[:200].decode("utf-8", "replace")}
    if status >= 400:
        doc = doc if isinstance(doc, dict) else {"message": str(doc)}
        raise RemoteError(status, str(doc.get("message") or f"HTTP {status}"), doc.get("field"), doc)
    return doc


def call(method: str, path: str, api_url: str | None = None, **kwargs: Any) -> Any:
    url = resolve_api_url(api_url)
    status, _, payload = request(method, url, path, **kwargs)
    return _json_or_raise(status, payload)


# ---- what the CLI calls -------------------------------------------------------------------------

def inline_spec(spec_path_or_loaded: Any) -> dict[str, Any]:
    """A spec as the API wants it: JSON with the workload inline. Takes a path (YAML or JSON; the
    workload and mysql configs are resolved and checked here), a ``LoadedSpec`` or a mapping."""
    from benchfleet.spec.comparison import ComparisonSpec
    from benchfleet.spec.loading import LoadedSpec, load_spec

    loaded = spec_path_or_loaded
    if isinstance(loaded, str | Path):
        loaded = load_spec(loaded)
    if isinstance(loaded, LoadedSpec):
        return loaded.inline()
    if isinstance(loaded, ComparisonSpec):
        return loaded.model_dump(mode="json")
    if isinstance(loaded, Mapping):
        return dict(loaded)
    raise TypeError(f"not a spec: {type(spec_path_or_loaded).__name__}")


def submit(spec_path_or_loaded: Any, api_url: str | None = None, *, idempotency_key: str | None = None,
           **kwargs: Any) -> str:
    """POST /runs; returns the run id. The Idempotency-Key (a fresh run id unless given) makes the
    automatic retries safe: the API returns the same run for the same key and spec."""
    body = inline_spec(spec_path_or_loaded)
    key = idempotency_key or naming.new_run_id(str(body.get("name") or "run"))
    doc = call("POST", "runs", api_url, body=body, headers={"Idempotency-Key": key}, **kwargs)
    return str(doc["run_id"])


def get_run(run_id: str, api_url: str | None = None, **kwargs: Any) -> dict[str, Any]:
    doc: dict[str, Any] = call("GET", f"runs/{_checked(run_id)}", api_url, **kwargs)
    return doc


def wait(run_id: str, api_url: str | None = None, on_update: Callable[[dict[str, Any]], None] | None = None,
         *, poll_s: float = 15.0, timeout_s: float | None = None, **kwargs: Any) -> dict[str, Any]:
    """Poll GET /runs/{id} until the run ends; ``on_update(run)`` on the first poll and whenever
    the status of the run or any step changes. Returns the final run document."""
    url = resolve_api_url(api_url)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    last: Any = None
    while True:
        run = get_run(run_id, url, **kwargs)
        fingerprint = (run.get("status"), json.dumps(run.get("targets"), sort_keys=True))
        if fingerprint != last and on_update is not None:
            on_update(run)
        last = fingerprint
        if run.get("status") in TERMINAL:
            return run
        if deadline is not None and time.monotonic() >= deadline:
            raise RemoteError(0, f"run {run_id} still {run.get('status')} after {timeout_s:g} s")
        time.sleep(poll_s)


def list_runs(api_url: str | None = None, *, name: str | None = None, status: str | None = None,
              limit: int | None = None, **kwargs: Any) -> list[dict[str, Any]]:
    """GET /runs, following ``next`` pages; newest first; at most ``limit`` runs."""
    return list(itertools.islice(iter_runs(api_url, name=name, status=status, **kwargs), limit))


def iter_runs(api_url: str | None = None, *, name: str | None = None, status: str | None = None,
              **kwargs: Any) -> Iterator[dict[str, Any]]:
    """GET /runs, newest first, a page at a time: the next page is only asked for when the caller
    reads on (``results --history --remote`` stops once it has its runs)."""
    url = resolve_api_url(api_url)
    token: str | None = None
    while True:
        query = {"limit": 100, "next": token, "name": name, "status": status}
        page = call("GET", "runs", url, query=query, **kwargs)
        yield from page.get("runs") or []
        token = page.get("next")
        if not token:
            return


def results(run_id: str, api_url: str | None = None, fmt: str = "json", **kwargs: Any) -> Any:
    """GET /runs/{id}/results: the summary document (``fmt="json"``) or CSV text (``fmt="csv"``)."""
    if fmt not in ("json", "csv"):
        raise ValueError("fmt must be json or csv")
    url = resolve_api_url(api_url)
    status, _, payload = request("GET", url, f"runs/{_checked(run_id)}/results", query={"format": fmt},
                                 **kwargs)
    if fmt == "csv" and status < 400:
        return payload.decode("utf-8")
    return _json_or_raise(status, payload)


def cancel(run_id: str, api_url: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """DELETE /runs/{id}: stop the run and tear its resources down. Idempotent."""
    doc: dict[str, Any] = call("DELETE", f"runs/{_checked(run_id)}", api_url, **kwargs)
    return doc


def _checked(run_id: str) -> str:
    if not naming.RUN_ID.match(run_id):
        raise RemoteError(0, f"{run_id!r} is not a run id", "id")
    return run_id
