"""The run's end: summary.json under runs/<run_id>/ with the terminal status.

The only writer of a run's status. SUCCEEDED when every repetition of every target ran all its
steps and was torn down; FAILED otherwise (the reason of each failure is kept).

Nothing of the targets' results comes through the state (it would pass Step Functions' 256 KiB
limit from a few dozen targets): the planned targets are read from the plan's S3 object
(``naming.plan_targets_key``) and each repetition's outcome from the object the state machine's
"Record the outcome" state wrote (``naming.outcome_key``); a repetition without one is FAILED.

Beside summary.json it writes the run's metadata to S3 for every store -- ``spec.json`` (the
execution's input spec) and ``targets.json`` (the repetitions' target rows collect wrote) -- and
gives the store the run's row (``write_run``: Athena's ``runs`` table; nothing in Timestream)."""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import aws_errors, error_code
from benchfleet.aws.store.results_store import ResultsStore
from benchfleet.plan import naming

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
NO_OUTCOME = {"Error": "NoOutcome", "Cause": "the repetition recorded no outcome: the run ended before it "
              "finished, or the state machine could not write it"}
# Outcomes are read concurrently: 200 targets x 20 repetitions are 4,000 GETs.
READERS = 16


def _cause(error: dict[str, Any] | None) -> dict[str, str] | None:
    if not error:
        return None
    cause = str(error.get("Cause", ""))
    with contextlib.suppress(ValueError, AttributeError):  # a Lambda's error: JSON with errorMessage
        cause = str(json.loads(cause).get("errorMessage", cause))
    return {"error": str(error.get("Error", "Error")), "cause": cause[:2000]}


def repetition_status(outcome: dict[str, Any]) -> str:
    ok = not outcome.get("error") and (outcome.get("teardown") or {}).get("left", []) == []
    return SUCCEEDED if ok and not outcome.get("teardown_error") else FAILED


def _put_json(s3: Any, bucket: str, key: str, value: Any) -> None:
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(value, indent=2, default=str).encode(),
                      ContentType="application/json")


def target_rows(s3: Any, bucket: str, run_id: str, planned: list[tuple[str, list[int]]]) -> list[dict[str, Any]]:
    """The rows collect wrote (``naming.target_row_key``) of the planned repetitions, by target and
    repetition; a repetition that never collected its prepare step has none. Read by key: listing the
    run's prefix read every step's raw output key too (tens of thousands at 200 targets)."""
    keys = [naming.target_row_key(run_id, t, r) for t, reps in planned for r in reps]
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        rows = [row for row in pool.map(lambda key: read_json(s3, bucket, key), keys) if row is not None]
    return sorted(rows, key=lambda r: (str(r.get("target_id")), int(r.get("repetition") or 0)))


def write_metadata(s3: Any, store: ResultsStore | None, bucket: str, *, summary: dict[str, Any],
                   spec: dict[str, Any] | None, planned: list[tuple[str, list[int]]]) -> dict[str, Any]:
    run_id = summary["run_id"]
    if spec is not None:
        _put_json(s3, bucket, f"runs/{run_id}/spec.json", spec)
    rows = target_rows(s3, bucket, run_id, planned)
    _put_json(s3, bucket, f"runs/{run_id}/targets.json", rows)
    run = {"run_id": run_id, "name": summary["name"], "spec": spec, "status": summary["status"].lower(),
           "mode": "aws", "started_at": _time(summary["started_at"]), "ended_at": _time(summary["finished_at"]),
           "message": (summary["error"] or {}).get("cause"),
           "estimated_cost_usd": summary["estimated_cost_usd"], "actual_cost_usd": None}
    key = None
    if store is not None:
        with aws_errors():
            key = store.write_run(run)
    return {"targets": len(rows), "run_key": key}


def _time(value: str | None) -> datetime | None:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) if value else None


def planned_repetitions(s3: Any, bucket: str, plan: dict[str, Any] | None) -> list[tuple[str, list[int]]]:
    """(target id, repetitions) of every planned target, in the plan's order, from its S3 object."""
    if not plan or not plan.get("targets_key"):
        return []
    with aws_errors():
        body = s3.get_object(Bucket=bucket, Key=plan["targets_key"])["Body"].read()
    return [(str(t["target_id"]), [int(r) for r in t["repetitions"]]) for t in json.loads(body)]


def read_json(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    """The JSON object at ``key``, None when there is none."""
    try:
        with aws_errors():
            return dict(json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()))
    except ClientError as e:
        if error_code(e) in ("NoSuchKey", "404"):
            return None
        raise


def outcomes(s3: Any, bucket: str, run_id: str,
             planned: list[tuple[str, list[int]]]) -> dict[tuple[str, int], dict[str, Any]]:
    """Every planned repetition's outcome (``NO_OUTCOME`` as its error where none was recorded)."""
    keys = [(t, r) for t, reps in planned for r in reps]
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        found = list(pool.map(lambda k: read_json(s3, bucket, naming.outcome_key(run_id, *k)), keys))
    return {k: o if o is not None else {"target_id": k[0], "repetition": k[1], "error": NO_OUTCOME}
            for k, o in zip(keys, found, strict=True)}


def summarize(s3: Any, bucket: str, *, run_id: str, plan: dict[str, Any] | None,
              error: dict[str, Any] | None, now: datetime | None = None, store: ResultsStore | None = None,
              spec: dict[str, Any] | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    planned = planned_repetitions(s3, bucket, plan)
    recorded = outcomes(s3, bucket, run_id, planned)
    targets = []
    for target_id, repetitions in planned:
        reps = []
        for n in repetitions:
            rep = recorded[(target_id, n)]
            reps.append({"repetition": n, "status": repetition_status(rep),
                         "error": _cause(rep.get("error")) or _cause(rep.get("teardown_error")),
                         "steps": rep.get("steps") or [], "teardown": rep.get("teardown")})
        targets.append({"target_id": target_id,
                        "status": SUCCEEDED if reps and all(r["status"] == SUCCEEDED for r in reps) else FAILED,
                        "repetitions": reps})
    status = SUCCEEDED if not error and targets and all(t["status"] == SUCCEEDED for t in targets) else FAILED
    summary = {
        "run_id": run_id, "status": status, "name": (plan or {}).get("name"),
        "started_at": (plan or {}).get("started_at"), "finished_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "estimated_cost_usd": (plan or {}).get("estimated_cost_usd"), "error": _cause(error),
        # The verdicts' margin, as the spec gave it: what "equivalent within ±m%" means for this run.
        "margin_pct": (spec or {}).get("margin_pct"),
        "targets": targets,
    }
    key = naming.summary_key(run_id)
    # Metadata first: summary.json is the run's terminal mark, written last, and always: a store
    # that refuses the run's row must not leave the run without a status. Nor is its error
    # swallowed: the run fails, naming the store (dashboards would lose the run's name and baseline).
    try:
        summary["metadata"] = write_metadata(s3, store, bucket, summary=summary, spec=spec, planned=planned)
    except Exception as e:
        cause = f"{type(e).__name__}: {e}"[:1000]
        summary["metadata"] = {"error": cause}
        status = summary["status"] = FAILED
        summary["error"] = summary["error"] or {
            "error": "StoreFailed", "cause": f"the results store refused the run's metadata: {cause}"}
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(summary, indent=2).encode(),
                      ContentType="application/json")
    failed = [t["target_id"] for t in targets if t["status"] != SUCCEEDED]
    return {"run_id": run_id, "status": status, "summary_key": key, "failed_targets": failed,
            "error": summary["error"]}
