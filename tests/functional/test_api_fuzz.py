"""Property-based abuse of the API handler: thousands of malformed specs and hostile requests.

Every one must get a 4xx whose JSON body has a message naming a field, never a 5xx, and none may
reach StartExecution (a spy on the client counts calls). The inputs tried and the distribution of
outcomes are printed (``pytest -s``) and written to test-artifacts/api_fuzz_stats.json.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from benchfleet.aws import api_service

REGION = "us-east-1"
BUCKET = "bf-fuzz"
EXAMPLES = 1000  # per property; five properties
STATS: Counter[str] = Counter()
FIELDS: Counter[str] = Counter()
TRIED = Counter[str]()

WORKLOAD = {"name": "ro", "test": "oltp_read_only", "threads": [1, 4], "duration_s": 30, "warmup_s": 0}
VALID = {"name": "fuzz", "workload": WORKLOAD, "repetitions": 1,
         "targets": [{"id": "m6i", "kind": "ec2", "instance_type": "m6i.large"},
                     {"id": "aur", "kind": "aurora", "instance_class": "db.r6g.large"}]}

# What attackers and accidents put into names and ids.
SHELL = [*list(";|&$`<>(){}[]'\"\\*?!#~\n\r\t "), "$(id)", "`id`", "&&", "||", "${IFS}", ">/dev/null"]
TRAVERSAL = ["../", "..\\", "/..", "%2e%2e%2f", "..%2f", "%2F", "/etc/passwd", "..", "./", "~/"]
UNICODE = ["\u0430", "\u0435", "\u03bf", "\u0456",          # Cyrillic a/e, Greek o, Cyrillic i
           "\u202e", "\u202d", "\u2066",                     # bidi overrides / isolates
           "\u200b", "\u200d", "\ufeff", "\u2060",           # zero-width
           "\x00", "\x07", "\x1b[31m",                       # NUL, BEL, ANSI escape
           "\uff41", "\u1d00", "\u0131", "\u212a",           # fullwidth a, small-cap a, dotless i, Kelvin K
           "\ud83d\udca9"[:1], "\U0001f4a9", "\u0301"]       # lone surrogate, emoji, combining accent
HOSTILE_PIECES = SHELL + TRAVERSAL + UNICODE


@st.composite
def hostile(draw: Any, base: str = "abc", over: int = 81, pieces: list[str] = HOSTILE_PIECES,
            random_text: bool = True, allowed: tuple[str, ...] = ("Ll", "Nd")) -> str:
    """A valid-looking slug with at least one thing no name or id may contain (or far too long:
    at least ``over`` characters more than the field allows)."""
    if draw(st.integers(0, 9)) == 0:
        return base + "a" * draw(st.integers(over, over + 5000))  # oversized
    strategy = st.sampled_from(pieces)
    if random_text:  # anything but what a slug may hold
        strategy = strategy | st.text(alphabet=st.characters(blacklist_categories=allowed,
                                                             blacklist_characters="-_"), min_size=1, max_size=5)
    piece = draw(strategy)
    # whitespace around a value is stripped (str_strip_whitespace), a legitimate normalisation:
    # put it inside, where it is hostile
    if piece.strip() == "":
        base = base if len(base) > 1 else base + "x"
        at = draw(st.integers(1, len(base) - 1))
    else:
        at = draw(st.integers(0, len(base)))
    return base[:at] + piece + base[at:]


def _set(doc: dict, path: list[Any], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


SLUG_FIELDS = [["name"], ["targets", 0, "id"], ["targets", 1, "id"], ["workload", "name"],
               ["targets", 0, "mysql_config"], ["baseline"]]
PATTERN_FIELDS = [["targets", 0, "instance_type"], ["targets", 1, "instance_class"],
                  ["targets", 0, "engine"], ["targets", 0, "region"], ["workload", "test"]]
NUMBER_FIELDS = [(["repetitions"], (1, 20)), (["budget_usd"], (0, 1_000_000)),
                 (["workload", "duration_s"], (1, 48 * 3600)), (["workload", "tables"], (1, 1000)),
                 (["workload", "percentile"], (1, 99)), (["targets", 0, "storage", "size_gb"], (8, 65536))]


@st.composite
def malformed_spec(draw: Any) -> tuple[str, Any]:
    """(what was broken, body) — each mutation alone makes the spec unacceptable."""
    spec = copy.deepcopy(VALID)
    kind = draw(st.sampled_from(["slug", "pattern", "number", "type", "missing", "extra", "local",
                                 "named-workload", "option", "duplicate", "kind", "random", "threads"]))
    if kind == "slug":
        path = draw(st.sampled_from(SLUG_FIELDS))
        _set(spec, path, draw(hostile("m6i")))
    elif kind == "pattern":
        path = draw(st.sampled_from(PATTERN_FIELDS))
        _set(spec, path, draw(hostile("m6i.large")))
    elif kind == "number":
        path, (lo, hi) = draw(st.sampled_from(NUMBER_FIELDS))
        if path[-1] == "size_gb":
            spec["targets"][0]["storage"] = {"type": "gp3", "size_gb": 100}
        _set(spec, path, draw(st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1),
                                        st.just(float("nan")), st.just(float("inf")))))
    elif kind == "type":
        path = draw(st.sampled_from([*SLUG_FIELDS[:4], ["targets"], ["workload", "threads"], ["repetitions"]]))
        _set(spec, path, draw(st.sampled_from([None, [], {}, [[]], {"$ne": 1}, True, 1e308])))
    elif kind == "missing":
        path = draw(st.sampled_from([["name"], ["workload"], ["targets"], ["targets", 0, "kind"],
                                     ["targets", 0, "id"], ["workload", "test"]]))
        doc = spec
        for p in path[:-1]:
            doc = doc[p]
        del doc[path[-1]]
    elif kind == "extra":
        where = draw(st.sampled_from([[], ["workload"], ["targets", 0]]))
        doc = spec
        for p in where:
            doc = doc[p]
        doc[draw(st.sampled_from(["__proto__", "constructor", "user_data", "$where", "ImageId"]))] = "x"
    elif kind == "local":
        spec["targets"].append({"id": "lap", "kind": "local"})
    elif kind == "named-workload":
        spec["workload"] = draw(st.sampled_from(["oltp-read-only", "../../etc/passwd", "w"]))
    elif kind == "option":
        spec["workload"]["options"] = {draw(st.sampled_from(["mysql-host", "db-driver", "x"])): draw(
            # option values may hold paths (sysbench takes file options): no traversal pieces here
            hostile("v", over=257, pieces=SHELL + UNICODE, random_text=False))}
        if spec["workload"]["options"].get("db-driver") == "v":
            spec["workload"]["options"]["db-driver"] = "v;id"
    elif kind == "duplicate":
        spec["targets"][1]["id"] = spec["targets"][0]["id"]
    elif kind == "kind":
        spec["targets"][0]["kind"] = draw(hostile("ec2") | st.sampled_from(["EC2", "lambda", ""]))
    elif kind == "threads":
        spec["workload"]["threads"] = draw(st.sampled_from([[], [0], [1, 1], [5000], list(range(1, 80))]))
    else:  # any JSON value that is not a spec at all
        spec = draw(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                                 lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                      max_size=4),
                                 max_leaves=12))
    return kind, spec


def event(method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None,
          query: dict[str, str] | None = None, b64: bool = False) -> dict[str, Any]:
    headers = headers if headers is not None else {"Content-Type": "application/json"}
    return {"resource": path, "path": path, "httpMethod": method, "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
            "pathParameters": None, "isBase64Encoded": b64, "body": body,
            "requestContext": {"stage": "prod", "requestId": "r", "identity": {"sourceIp": "1.2.3.4"}}}


class Spy:
    """Wraps the Step Functions client; counts StartExecution calls."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.starts = 0

    def start_execution(self, **kwargs: Any) -> Any:
        self.starts += 1
        return self.real.start_execution(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture(scope="module")
def api():
    from handlers import api as module

    env = {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    saved = {k: __import__("os").environ.get(k) for k in env}
    __import__("os").environ.update(env)
    with mock_aws():
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = boto3.client("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        arn = sfn.create_state_machine(name="Benchfleet", roleArn=role, definition=json.dumps(
            {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}))["stateMachineArn"]
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        spy = Spy(sfn)
        service = api_service.RunService(sfn=spy, s3=s3, state_machine_arn=arn, bucket=BUCKET,
                                         price_lookup=api_service.default_price_lookup(),
                                         teardown=lambda run_id, regions: {"removed": []}, home_region=REGION)
        module.configure(service)
        started = time.monotonic()
        yield module, spy
        elapsed = time.monotonic() - started
        module.configure(None)
    for k, v in saved.items():
        if v is None:
            __import__("os").environ.pop(k, None)
        else:
            __import__("os").environ[k] = v
    stats = {"inputs": sum(TRIED.values()), "by_property": dict(TRIED),
             "outcomes": dict(sorted(STATS.items())), "fields": dict(FIELDS.most_common(30)),
             "start_execution_calls": spy.starts, "seconds": round(elapsed, 1)}
    print("\napi fuzz:", json.dumps(stats, indent=1))
    out = Path(__file__).resolve().parents[2] / "test-artifacts" / "api_fuzz_stats.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(stats, indent=2) + "\n")


def check(api: Any, prop: str, evt: dict[str, Any]) -> dict[str, Any]:
    module, spy = api
    before = spy.starts
    resp = module.handler(evt, None)
    TRIED[prop] += 1
    status = resp["statusCode"]
    STATS[str(status)] += 1
    assert 400 <= status < 500, (status, resp.get("body"), evt)
    body = json.loads(resp["body"])
    assert isinstance(body.get("message"), str) and body["message"], body
    assert isinstance(body.get("field"), str) and body["field"], body
    FIELDS[body["field"].split("[")[0].split(".")[0]] += 1
    assert spy.starts == before, ("reached StartExecution", evt)
    return body


COMMON = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large])


@COMMON
@given(case=malformed_spec(), key=st.none() | st.sampled_from(["k-1", "Key_2"]))
def test_malformed_specs(api, case, key):
    _, spec = case
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    body = json.dumps(spec, allow_nan=True)
    check(api, "malformed_spec", event("POST", "/runs", body, headers))


@COMMON
@given(key=hostile("retry-key", allowed=("Ll", "Lu", "Nd")))
def test_hostile_idempotency_keys_on_a_valid_spec(api, key):
    body = check(api, "idempotency_key", event("POST", "/runs", json.dumps(VALID),
                                               {"Content-Type": "application/json", "Idempotency-Key": key}))
    assert body["field"] == "Idempotency-Key"


@COMMON
@given(run_id=hostile("run-1"), route=st.sampled_from(["", "/results"]),
       method=st.sampled_from(["GET", "DELETE", "GET"]))
def test_hostile_run_ids_in_paths(api, run_id, route, method):
    if method == "DELETE" and route:
        method = "GET"
    check(api, "run_id", event(method, f"/runs/{run_id}{route}"))


@COMMON
@given(param=st.sampled_from(["limit", "next", "name", "status", "format"]),
       value=hostile("20", allowed=("Ll", "Lu", "Nd")))
def test_hostile_query_parameters(api, param, value):
    path = "/runs/run-1/results" if param == "format" else "/runs"
    if param == "next":
        value = value + " "  # tokens never hold spaces; keep it hostile even when short
    check(api, "query", event("GET", path, query={param: value}))


@COMMON
@given(data=st.one_of(
    st.tuples(st.just("raw"), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))),
    st.tuples(st.just("b64"), st.binary(max_size=300).map(lambda b: base64.b64encode(b).decode())),
    st.tuples(st.just("badb64"), st.text(alphabet="!@#%^&*~", min_size=1, max_size=30)),
    st.tuples(st.just("ctype"), st.sampled_from(["text/plain", "application/xml", "multipart/form-data",
                                                  "application/x-www-form-urlencoded", "text/csv"])),
    st.tuples(st.just("huge"), st.integers(api_service.MAX_BODY_BYTES + 1, 3 * api_service.MAX_BODY_BYTES)),
    st.tuples(st.just("method"), st.sampled_from(["PUT", "PATCH", "TRACE", "OPTIONS", "CONNECT"])),
))
def test_hostile_bodies_and_methods(api, data):
    kind, value = data
    if kind == "raw":
        evt = event("POST", "/runs", value)
    elif kind == "b64" or kind == "badb64":
        evt = event("POST", "/runs", value, b64=True)
    elif kind == "ctype":
        evt = event("POST", "/runs", json.dumps(VALID), {"Content-Type": value})
    elif kind == "huge":
        evt = event("POST", "/runs", json.dumps({**VALID, "description": "x" * value}))
    else:
        evt = event(value, "/runs", json.dumps(VALID))
    check(api, "body_or_method", evt)


# Any JSON value at all, with what JSON readers trip on: huge integers, non-finite and overflowing
# floats, deep nesting, and valid specs with one such value put anywhere in them.
_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
            | st.integers(min_value=10**18, max_value=10**40))
_JSON = st.recursive(_SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                     max_size=4),
                     max_leaves=20)
_RAW_NUMBERS = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e309", "-1e309", "9" * 4301, "-" + "9" * 5000,
                                "1" + "0" * 40, "1.5e-400"])


@st.composite
def any_json_body(draw: Any) -> str:
    kind = draw(st.sampled_from(["value", "spec-with-value", "raw-number", "deep"]))
    if kind == "value":
        return json.dumps(draw(_JSON), allow_nan=True)
    spec = copy.deepcopy(VALID)
    if kind == "deep":
        depth = draw(st.sampled_from([30, 500, 999, 1001, 5000, 50_000]))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        nested = opener * depth + ("1" if opener != "[" else "") + closer * depth
        where = draw(st.sampled_from(["top", "description", "options"]))
        if where == "top":
            return nested
        placeholder = "PLACEHOLDER"
        if where == "options":
            spec["workload"]["options"] = {"x": placeholder}
        else:
            spec["description"] = placeholder
        return json.dumps(spec).replace(f'"{placeholder}"', nested)
    paths = [["repetitions"], ["budget_usd"], ["workload", "duration_s"], ["workload", "threads", 0],
             ["targets", 0, "price_per_hour"], ["workload", "options", "x"], ["name"], ["targets", 1, "id"]]
    path = draw(st.sampled_from(paths))
    if path[:2] == ["workload", "options"]:
        spec["workload"]["options"] = {}
    _set(spec, path, "PLACEHOLDER")
    value = draw(_RAW_NUMBERS) if kind == "raw-number" else json.dumps(draw(_JSON), allow_nan=True)
    return json.dumps(spec).replace('"PLACEHOLDER"', value)


@settings(max_examples=400, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(body=any_json_body(), ctype=st.sampled_from(["application/json", "APPLICATION/JSON",
                                                    "application/json; charset=utf-8"]))
def test_any_json_body_gets_a_status_below_500(api, body, ctype):
    module, spy = api
    resp = module.handler(event("POST", "/runs", body, {"Content-Type": ctype}), None)
    TRIED["any_json"] += 1
    STATS[str(resp["statusCode"])] += 1
    assert resp["statusCode"] < 500, (resp, body[:300])
    doc = json.loads(resp["body"])
    if resp["statusCode"] >= 400:
        assert doc["message"] and doc["field"], doc
    elif doc.get("created"):  # what went to StartExecution is strict JSON
        described = spy.describe_execution(executionArn=module.service().execution_arn(doc["run_id"]))
        json.loads(described["input"], parse_constant=lambda c: pytest.fail(f"{c} in the execution input"))
