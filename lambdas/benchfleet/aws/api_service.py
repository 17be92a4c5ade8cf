"""What the REST API does, over injected clients: start, list, describe, cancel runs, serve results.

``handlers/api.py`` routes requests here and turns :class:`ApiError` into responses; nothing in this
module knows about HTTP events. Every refusal names the field it is about.

- A run is one Step Functions execution; its **name is the run id** (``benchfleet.plan.naming.RUN_ID``),
  and its input is ``{"spec": <canonical spec, workload inline>, "run_id": <id>}`` (the Plan state's
  ``RunRequest``). Scheduled executions carry ``"schedule": <name>`` and may have any name; their
  run id is the input's ``run_id`` when present, else the execution name.
- ``Idempotency-Key`` (``[A-Za-z0-9_-]{1,80}``) becomes the execution name. A key that is already a
  valid run id is used as it is; any other key (capitals, underscores, one character) is mapped to
  ``k-<sha256 of the key>``, a stable valid run id, because run ids end up in tags, S3 keys and RDS
  identifiers. A retry with the same key and the same spec returns the existing run; the same key
  with another spec is a 409.
- Workloads must be inline: the Lambda ships only ``lambdas/``, not the workload library
  (``benchfleet run --remote`` inlines a named workload before posting).

Why one module: each route's refusals and its answer are one method of RunService over the same
injected clients; the routes share the idempotency, ownership and paging rules above.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from benchfleet.aws.errors import PlanRejected, error_code
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import TargetRegions
from benchfleet.aws.settings import DEFAULT_RESULTS_STORE
from benchfleet.cost import catalogue
from benchfleet.cost.ceiling import DEFAULT_MAX_RUN_COST_USD, request_price_problems
from benchfleet.plan import naming
from benchfleet.plan.model import Plan, PriceLookup
from benchfleet.spec.comparison import ComparisonSpec
from benchfleet.spec.documents import (
    MAX_DEPTH,
    DuplicateKey,
    SpecError,
    bounded_int,
    document_problems,
    join_path,
    unique_keys,
)
from benchfleet.spec.fields import REGION
from benchfleet.spec.loading import LoadedSpec, inline_loaded, problems_of
from benchfleet.spec.workload import Workload
from benchfleet.stats.resolution import plan_resolution

IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
MAX_BODY_BYTES = 128 * 1024
MAX_PAGE = 100
DEFAULT_PAGE = 20
MAX_NEXT_TOKEN = 4096
_NEXT_TOKEN = re.compile(r"^[A-Za-z0-9+/=_.:-]{1,4096}$")
MAX_RESULT_KEYS = 10_000
# The Plan state accepts these target kinds; local targets run on a laptop.
CANCEL_ERROR = "benchfleet.Cancelled"


class ApiError(Exception):
    """A refusal: HTTP status, a message naming the field, and every (field, message) problem."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 problems: list[tuple[str, str]] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.problems = problems if problems is not None else (
            [(field, message.removeprefix(f"{field}: "))] if field else [])
        self.extra = extra

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.field:
            out["field"] = self.field
        if self.problems:
            out["problems"] = [{"field": f, "message": m} for f, m in self.problems]
        out.update(self.extra)
        return out


def bad_request(field: str, message: str, status: int = 400) -> ApiError:
    return ApiError(status, f"{field}: {message}", field, [(field, message)])


# ---- pure helpers -------------------------------------------------------------------------------

def canonical_spec(spec: ComparisonSpec) -> dict[str, Any]:
    """The spec with defaults filled in, as JSON: two bodies that mean the same give the same dict."""
    data: dict[str, Any] = spec.model_dump(mode="json")
    return data


def spec_hash(spec_data: Mapping[str, Any]) -> str:
    text = json.dumps(spec_data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def run_id_for_key(key: str) -> str:
    """The execution name (= run id) of an Idempotency-Key (see the module doc)."""
    if not IDEMPOTENCY_KEY.match(key):
        raise bad_request("Idempotency-Key", "must be 1-80 characters of [A-Za-z0-9_-]")
    if key in naming.RESERVED_RUN_IDS:
        raise bad_request("Idempotency-Key", str(naming.run_id_problem(key)))
    if naming.RUN_ID.match(key):
        return key
    return "k-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def check_run_id(run_id: str) -> str:
    problem = naming.run_id_problem(run_id)
    if problem:
        raise bad_request("id", problem)
    return run_id


MAX_STRING = 256           # no name, id, type or option value of a spec needs more
MAX_TEXT = 2000            # descriptions
FREE_TEXT_KEYS = {"description"}
# Names, ids and AWS type names: the longest real one (u-24tb1.112xlarge, db.x2iedn.32xlarge) is
# far below this, and the slug fields stop at 63 anyway.
MAX_NAME = 64
NAME_KEYS = {"name", "id", "baseline", "kind", "instance_type", "instance_class", "engine", "region",
             "test", "mysql_config", "type", "rand_type", "workload"}


def parse_json_body(text: str) -> Any:
    """A request body as JSON, refusing (ApiError 400 naming the field) what would crash a JSON
    reader or encoder later: the limits of ``spec.document_problems`` (depth, integers beyond 64
    bits, NaN, Infinity, 1e309). Text that is not JSON at all returns None: the router's own parser
    reports it."""
    try:
        data = json.loads(text, parse_int=bounded_int, object_pairs_hook=unique_keys)
    except RecursionError:
        raise bad_request("body", f"is nested more than {MAX_DEPTH} levels deep") from None
    except DuplicateKey as e:
        raise bad_request("body", str(e)) from None
    except ValueError:
        return None
    _refuse_document_problems(data)
    return data


def _refuse_document_problems(data: Any) -> None:
    problems = document_problems(data, top="body")
    if problems:
        raise ApiError(400, f"{problems[0][0]}: {problems[0][1]}", problems[0][0], problems)


def hostile_strings(value: Any, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Defence in depth before the models: strings longer than any field needs, and control or
    invisible format characters (NUL, bidi overrides, zero-width) anywhere, keys included. The
    models' patterns catch most of these too; this guards fields whose pattern has no length bound
    and free text that people read (an RTL override in a description misleads the reader)."""
    if depth > MAX_DEPTH:
        return [(path or "body", "is nested too deeply")]
    problems: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not key or len(key) > 64 or _bad_chars(key, free_text=False):
                problems.append((path or "body", "has a key that is not a spec key"))
                continue
            problems += hostile_strings(item, join_path(path, key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value[:1000]):
            problems += hostile_strings(item, join_path(path, i), depth + 1)
    elif isinstance(value, str):
        key = path.rsplit(".", 1)[-1]
        free = key in FREE_TEXT_KEYS
        limit = MAX_TEXT if free else MAX_NAME if key in NAME_KEYS else MAX_STRING
        if len(value) > limit:
            problems.append((path or "body", f"is longer than {limit} characters"))
        elif _bad_chars(value, free_text=free):
            problems.append((path or "body", "contains control or invisible formatting characters"))
    return problems


def _bad_chars(text: str, free_text: bool) -> bool:
    allowed = "\n\t" if free_text else ""
    return any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") and c not in allowed for c in text)


def validate_submission(body: Any, home_region: str | None = None) -> LoadedSpec:
    """A POST /runs body -> a spec the state machine can run, or ApiError 400 naming each field. A
    target without a region runs in ``home_region`` (the stack's), where its type must be offered."""
    if not isinstance(body, dict):
        raise bad_request("body", "must be a JSON object: a comparison spec")
    _refuse_document_problems(body)
    hostile = hostile_strings(body)
    if hostile:
        raise ApiError(400, f"{hostile[0][0]}: {hostile[0][1]}", hostile[0][0], hostile[:20])
    try:
        # Strict: a JSON API takes numbers as numbers (no true for 1, no "3" for 3).
        spec = ComparisonSpec.model_validate(body, strict=True)
    except ValidationError as e:
        problems = [(path or "body", msg) for path, msg in problems_of(e)]
        first_field, first_msg = problems[0]
        raise ApiError(400, f"{first_field}: {first_msg}", first_field, problems) from None
    problems = []
    if not isinstance(spec.workload, Workload):
        problems.append(("workload", f"{spec.workload!r} is a workload name; the API needs the workload "
                                     "inline (benchfleet run --remote inlines named workloads)"))
    for i, target in enumerate(spec.targets):
        if target.kind not in runplan.CLOUD_KINDS:
            problems.append((f"targets[{i}].kind", f"{target.kind} targets run on your machine "
                                                   "(benchfleet run --local), not through the API"))
        elif target.kind == "aurora" and target.engine.startswith("mariadb"):
            problems.append((f"targets[{i}].engine", "Aurora is MySQL-compatible only"))
        elif target.kind == "existing" and getattr(target, "instance_id", None) is None:
            problems.append((f"targets[{i}].instance_id",
                             "an existing target needs the EC2 instance that runs the agent"))
    problems += request_price_problems(spec.targets)
    named = {field for field, _ in problems}
    problems += [p for p in catalogue.spec_problems(list(spec.targets), home_region=home_region) if p[0] not in named]
    if problems:
        raise ApiError(400, f"{problems[0][0]}: {problems[0][1]}", problems[0][0], problems)
    try:
        return inline_loaded(spec, "request")
    except SpecError as e:
        raise ApiError(400, f"{e.problems[0][0]}: {e.problems[0][1]}", e.problems[0][0], e.problems) from None


def default_price_lookup() -> PriceLookup | None:
    """``benchfleet.cost.pricing.price_per_hour`` when its tables are reachable, else None."""
    try:
        from benchfleet.cost import pricing
    except ImportError:  # pragma: no cover - the module ships with the package
        return None

    def lookup(target: object) -> float | None:
        try:
            return pricing.price_per_hour(target)
        except (OSError, ValueError, KeyError):  # tables missing or unreadable: unpriced
            return None
    return lookup


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value) if value else None


def _input(described: Mapping[str, Any]) -> dict[str, Any]:
    try:
        data = json.loads(described.get("input") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _spec_of(data: Mapping[str, Any]) -> dict[str, Any]:
    spec = data.get("spec")
    return spec if isinstance(spec, dict) else {}


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested results row as flat columns (``tps.mean`` -> ``tps_mean``); lists are left out."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}_"))
        elif not isinstance(value, list):
            out[name] = value
    return out


def to_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    flat = [flatten(r) for r in rows]
    columns: dict[str, None] = {}
    for r in flat:
        columns.update(dict.fromkeys(r))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(flat)
    return buffer.getvalue()


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def result_rows(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The rows of a summary.json: ``rows`` (or ``comparison``, ``steps``) where a summary has them,
    else what the Summarize state writes, one row per target x repetition x step (its collect
    result: samples, summaries, tps), and one per repetition that has no step, with its error."""
    for key in ("rows", "comparison", "steps"):
        value = summary.get(key)
        if isinstance(value, list):
            return [r for r in value if isinstance(r, Mapping)]
    rows: list[Mapping[str, Any]] = []
    for target in _list(summary.get("targets")):
        if not isinstance(target, Mapping):
            continue
        for rep in _list(target.get("repetitions")):
            if not isinstance(rep, Mapping):
                continue
            base = {"target_id": target.get("target_id"), "repetition": rep.get("repetition"),
                    "repetition_status": rep.get("status")}
            steps = [s for s in _list(rep.get("steps")) if isinstance(s, Mapping)]
            rows += [{**base, **{k: v for k, v in step.items() if k != "notices"}} for step in steps]
            if not steps:
                rows.append({**base, "error": rep.get("error")})
    return rows


# ---- the service --------------------------------------------------------------------------------

@dataclass
class RunService:
    sfn: Any
    s3: Any
    state_machine_arn: str
    bucket: str
    price_lookup: PriceLookup | None = None
    # run_id, regions -> what was removed (benchfleet.aws.fleet.sweep.teardown_run(...).summary())
    teardown: Callable[[str, list[str]], dict[str, Any]] | None = None
    home_region: str = "us-east-1"
    # Regions targets may run in besides the home region (TARGET_REGIONS; benchfleet.aws.regions).
    target_regions: tuple[str, ...] = ()
    # Most a run without budget_usd may cost (MAX_RUN_COST_USD, CDK context key maxRunCostUsd).
    max_run_cost_usd: float = DEFAULT_MAX_RUN_COST_USD
    # The deployment's results store (RESULTS_STORE): the estimate prices its writes, as Plan does.
    results_store: str = DEFAULT_RESULTS_STORE
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def execution_arn(self, name: str) -> str:
        return f"{self.state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{name}"

    def _describe(self, run_id: str) -> dict[str, Any]:
        try:
            described: dict[str, Any] = self.sfn.describe_execution(executionArn=self.execution_arn(run_id))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("ExecutionDoesNotExist", "InvalidArn"):
                raise ApiError(404, f"id: no run {run_id}", "id") from None
            raise
        return described

    # -- POST /runs -------------------------------------------------------------------------------
    def submit(self, body: Any, idempotency_key: str | None = None) -> tuple[int, dict[str, Any]]:
        """Start a run; (202, run) when started, (200, run) when the key names the same run already."""
        run_id = run_id_for_key(idempotency_key) if idempotency_key is not None else None
        loaded = validate_submission(body, self.home_region)
        regions = TargetRegions.of(self.home_region, self.target_regions)
        problems = regions.problems(list(loaded.spec.targets))
        if problems:
            raise ApiError(400, f"{problems[0][0]}: {problems[0][1]}", problems[0][0], problems)
        # The Plan state's own decision (prices where each target runs, control plane included,
        # budget or ceiling, capacity, duration), made before anything starts.
        plan = self._checked_plan(loaded, run_id, regions)
        spec_data = canonical_spec(loaded.spec)
        digest = spec_hash(spec_data)
        estimate = {"estimated_cost_usd": plan.estimated_cost_usd, "usage_usd": plan.usage_usd, "wall_s": plan.wall_s,
                    "unpriced_targets": plan.unpriced_targets, "budget_usd": plan.budget_usd,
                    "warnings": plan.warnings,
                    # What the spec's repetitions can resolve at the published study's spread (as `plan` says).
                    "resolution": plan_resolution(loaded.spec, plan)}
        if run_id is not None:
            # A retry: StartExecution of the same name and input answers success, as if it had started
            # the run, so the run that exists is looked for first (ExecutionAlreadyExists covers a race).
            existing = self._existing(run_id)
            if existing is not None:
                return self._retried(existing, run_id, loaded.spec.name, digest, estimate)
        run_id = run_id or naming.new_run_id(loaded.spec.name, self.now())
        # The execution input's one model (schema: statemachines/benchmark-run.input.schema.json);
        # strict JSON, since validate_submission refused NaN, Infinity and integers beyond 64 bits.
        execution_input = runplan.RunRequest(spec=spec_data, run_id=run_id).model_dump_json(exclude_defaults=True)
        try:
            started = self.sfn.start_execution(stateMachineArn=self.state_machine_arn, name=run_id,
                                               input=execution_input)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
                raise
            return self._retried(self._describe(run_id), run_id, loaded.spec.name, digest, estimate)
        return 202, {"run_id": run_id, "name": loaded.spec.name, "status": "RUNNING", "created": True,
                     "started_at": _iso(started.get("startDate")), "spec_sha256": digest, **estimate}

    def _existing(self, run_id: str) -> dict[str, Any] | None:
        try:
            return self._describe(run_id)
        except ApiError:
            return None

    @staticmethod
    def _retried(existing: Mapping[str, Any], run_id: str, name: str, digest: str,
                 estimate: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """200 for the run an Idempotency-Key already started with this spec; 409 for another spec."""
        stored = _input(existing).get("spec")
        if not isinstance(stored, dict) or spec_hash(stored) != digest:
            raise ApiError(409, "Idempotency-Key: already used for a different spec", "Idempotency-Key",
                           run_id=run_id)
        return 200, {"run_id": run_id, "name": name, "status": existing.get("status"), "created": False,
                     "started_at": _iso(existing.get("startDate")), "spec_sha256": digest, **estimate}

    def _checked_plan(self, loaded: LoadedSpec, run_id: str | None, regions: TargetRegions) -> Plan:
        """The plan the state machine's Plan state would make, or 400 for what it would refuse a
        moment after starting (cost, run too long for one execution, too many history events)."""
        try:
            _, plan, _ = runplan.checked_plan(runplan.RunRequest(spec=canonical_spec(loaded.spec), run_id=run_id),
                                              regions=regions, max_run_cost_usd=self.max_run_cost_usd,
                                              store=self.results_store)
        except PlanRejected as e:
            if e.problems:
                (field_, message), *_ = e.problems
                raise ApiError(400, f"{field_}: {message}", field_, e.problems) from None
            text = str(e).removeprefix("spec: ")
            where, _, msg = text.partition(": ")
            if e.field:  # the message is a sentence about the spec as a whole: keep all of it
                raise bad_request(e.field, text) from None
            if msg and re.match(r"^[a-z_][a-z0-9_.\[\]]*$", where):
                raise bad_request(where, msg) from None
            raise bad_request("body", text) from None
        return plan

    # -- GET /runs --------------------------------------------------------------------------------
    def list_runs(self, limit: int = DEFAULT_PAGE, next_token: str | None = None,
                  name: str | None = None, status: str | None = None) -> dict[str, Any]:
        """One page of runs, newest first: run id, name, schedule, status, times, cost estimate.
        ``name`` keeps runs of that comparison or schedule (a page may then hold fewer than
        ``limit``); follow ``next`` until it is absent."""
        if not 1 <= limit <= MAX_PAGE:
            raise bad_request("limit", f"must be 1..{MAX_PAGE}")
        if next_token is not None and not _NEXT_TOKEN.match(next_token):
            raise bad_request("next", "is not a token this API returned")
        kwargs: dict[str, Any] = {"stateMachineArn": self.state_machine_arn, "maxResults": limit}
        if next_token:
            kwargs["nextToken"] = next_token
        if status:
            kwargs["statusFilter"] = status
        try:
            page = self.sfn.list_executions(**kwargs)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("InvalidToken", "ValidationException"):
                raise bad_request("next", "is not a token this API returned (or it expired)") from None
            raise
        runs = []
        for execution in page.get("executions", []):
            item = self._run_item(execution)
            if name and name not in (item.get("name"), item.get("schedule")):
                continue
            runs.append(item)
        out: dict[str, Any] = {"runs": runs}
        if page.get("nextToken"):
            out["next"] = page["nextToken"]
        return out

    def _run_item(self, execution: Mapping[str, Any]) -> dict[str, Any]:
        """One row of the list. An execution whose input is not a run request (started by hand, or by
        an older version) is a row marked ``unreadable``, never a failure of the whole list."""
        item: dict[str, Any] = {
            "run_id": execution["name"], "execution_name": execution["name"], "name": None, "schedule": None,
            "status": execution.get("status"), "started_at": _iso(execution.get("startDate")),
            "stopped_at": _iso(execution.get("stopDate")), "targets": None, "estimated_cost_usd": None,
        }
        try:
            data = self._request_of(self.sfn.describe_execution(executionArn=execution["executionArn"]))
        except ClientError as e:  # gone between the list and the describe
            return {**item, "unreadable": f"cannot describe the execution ({error_code(e)})"}
        if data is None:
            return {**item, "unreadable": "its input is not a run request (spec, run_id, schedule)"}
        spec = data.spec
        item.update(run_id=data.run_id or execution["name"], name=spec.get("name") if isinstance(
            spec.get("name"), str) else None, schedule=data.schedule, targets=len(spec["targets"]) if isinstance(
            spec.get("targets"), list) else None)
        plan = self._plan_of(data)
        if plan is not None:
            item["estimated_cost_usd"] = plan.estimated_cost_usd
            item["unpriced_targets"] = plan.unpriced_targets
        return item

    @staticmethod
    def _request_of(described: Mapping[str, Any]) -> runplan.RunRequest | None:
        """The execution's input as the run request it was started with, None when it is not one."""
        try:
            return runplan.RunRequest.model_validate(_input(described))
        except ValidationError:
            return None

    def _plan_of(self, request: runplan.RunRequest | Mapping[str, Any]) -> Plan | None:
        """The run's plan as POST /runs (and the Plan state) made it: the same estimate everywhere.
        None for an input that cannot be planned (any more)."""
        if not isinstance(request, runplan.RunRequest):
            try:
                request = runplan.RunRequest(spec=dict(request))
            except ValidationError:
                return None
        regions = TargetRegions.of(self.home_region, self.target_regions)
        try:
            return runplan.estimate(request, regions=regions, store=self.results_store)[1]
        except (PlanRejected, SpecError, ValueError):
            return None

    # -- GET /runs/{id} ---------------------------------------------------------------------------
    def get_run(self, run_id: str) -> dict[str, Any]:
        """Status of the run and of every target x repetition x step (a step is done when its raw
        output is in S3), the failure's error and cause, and whether results exist."""
        check_run_id(run_id)
        described = self._describe(run_id)
        data = _input(described)
        spec = _spec_of(data)
        status = str(described.get("status"))
        keys = self._keys(f"runs/{run_id}/")
        done: dict[tuple[str, int], set[str]] = {}
        for key in keys:
            parts = key.split("/")
            if len(parts) == 5 and parts[3].startswith("rep-") and parts[4].endswith(".jsonl"):
                try:
                    rep = int(parts[3].removeprefix("rep-"))
                except ValueError:
                    continue
                done.setdefault((parts[2], rep), set()).add(parts[4].removesuffix(".jsonl"))
        request = self._request_of(described)
        plan = self._plan_of(request) if request is not None else None
        targets = []
        for tp in plan.targets if plan is not None else []:
            reps: list[dict[str, Any]] = []
            all_done = True
            for rep in range(1, tp.repetitions + 1):
                finished = done.get((tp.target_id, rep), set())
                steps = [{"step": s.name, "kind": s.kind, "threads": s.threads, "variant": s.variant,
                          "status": "done" if s.name in finished else self._pending(status)}
                         for s in tp.steps_of(rep)]
                reps.append({"repetition": rep, "steps": steps})
                all_done = all_done and all(s["status"] == "done" for s in steps)
            targets.append({"target_id": tp.target_id, "kind": tp.kind,
                            "status": "done" if all_done else self._pending(status), "repetitions": reps})
        out: dict[str, Any] = {
            "run_id": run_id, "name": spec.get("name"), "schedule": data.get("schedule"), "status": status,
            "started_at": _iso(described.get("startDate")), "stopped_at": _iso(described.get("stopDate")),
            "estimated_cost_usd": plan.estimated_cost_usd if plan else None,
            "targets": targets, "results": f"runs/{run_id}/summary.json" in keys,
        }
        if described.get("error") or described.get("cause"):
            out["error"] = {"error": described.get("error"), "cause": described.get("cause")}
        return out

    @staticmethod
    def _pending(status: str) -> str:
        return {"RUNNING": "pending", "SUCCEEDED": "missing", "FAILED": "failed", "TIMED_OUT": "timed out",
                "ABORTED": "cancelled"}.get(status, "pending")

    def _keys(self, prefix: str) -> set[str]:
        keys: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.update(str(o["Key"]) for o in page.get("Contents", []))
            if len(keys) >= MAX_RESULT_KEYS:
                break
        return keys

    # -- DELETE /runs/{id} ------------------------------------------------------------------------
    def cancel(self, run_id: str) -> tuple[int, dict[str, Any]]:
        """Stop a running execution and tear its resources down by tag. Idempotent: a finished or
        already cancelled run is torn down again (a no-op when nothing is left) and reported."""
        check_run_id(run_id)
        described = self._describe(run_id)
        status = str(described.get("status"))
        stopped_now = False
        if status == "RUNNING":
            try:
                self.sfn.stop_execution(executionArn=self.execution_arn(run_id), error=CANCEL_ERROR,
                                        cause="cancelled through the API (DELETE /runs/{id})")
                stopped_now = True
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
                    raise
            status = str(self._describe(run_id).get("status"))
        data = _input(described)
        tagged_run = data.get("run_id") if naming.run_id_problem(data.get("run_id")) is None else run_id
        listed = _spec_of(data).get("targets")
        # Only names that can be regions: a run started before patterns were ASCII-only may name
        # "us-east-\u0661", which every SDK call refuses; nothing of the run can exist there. An input
        # that is not a run request (targets not a list) tears down in the home region.
        regions = [self.home_region, *sorted({t["region"] for t in (listed if isinstance(listed, list) else [])
                                              if isinstance(t, dict) and isinstance(t.get("region"), str)
                                              and REGION.fullmatch(t["region"])})]
        teardown: dict[str, Any] | None = None
        if self.teardown:
            try:
                teardown = self.teardown(str(tagged_run), regions)
            except BotoCoreError as e:  # a region that cannot be reached; the run is stopped anyway
                teardown = {"error": f"{type(e).__name__}: {e}; the teardown rule on stopped runs and "
                                     "the hourly janitor remove what is left", "regions": regions}
        body = {"run_id": run_id, "status": status, "cancelled": stopped_now, "teardown": teardown}
        return (202 if stopped_now else 200), body

    # -- GET /runs/{id}/results -------------------------------------------------------------------
    def results(self, run_id: str) -> dict[str, Any]:
        """The run's summary.json (written by the Summarize state)."""
        check_run_id(run_id)
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=naming.summary_key(run_id))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404", "NotFound"):
                raise
            status = self._describe(run_id).get("status")
            raise ApiError(409, f"id: run {run_id} has no results yet (status {status})", "id",
                           run_status=status) from None
        try:
            summary = json.loads(obj["Body"].read())
        except (ValueError, RecursionError):
            raise ApiError(502, f"id: the results of run {run_id} are not readable JSON", "id") from None
        if not isinstance(summary, dict):
            raise ApiError(502, f"id: the results of run {run_id} are not a JSON object", "id")
        return summary

    def results_csv(self, run_id: str) -> str:
        return to_csv(result_rows(self.results(run_id)))
