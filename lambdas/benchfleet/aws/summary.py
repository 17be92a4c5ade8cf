"""The run's end: summary.json under runs/<run_id>/ with the terminal status.

The only writer of a run's status. SUCCEEDED when every repetition of every target ran all its
steps and was torn down; FAILED otherwise (the reason of each failure is kept)."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

from benchfleet import naming
from benchfleet.aws.errors import aws_errors

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"


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


def summarize(s3: Any, bucket: str, *, run_id: str, plan: dict[str, Any] | None,
              results: list[Any] | None, error: dict[str, Any] | None,
              now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    targets = []
    for target_outcomes in results or []:
        reps = []
        for rep in target_outcomes or []:
            reps.append({"repetition": rep.get("repetition"), "status": repetition_status(rep),
                         "error": _cause(rep.get("error")) or _cause(rep.get("teardown_error")),
                         "steps": rep.get("steps") or [], "teardown": rep.get("teardown")})
        target_id = (target_outcomes or [{}])[0].get("target_id")
        targets.append({"target_id": target_id,
                        "status": SUCCEEDED if reps and all(r["status"] == SUCCEEDED for r in reps) else FAILED,
                        "repetitions": reps})
    status = SUCCEEDED if not error and targets and all(t["status"] == SUCCEEDED for t in targets) else FAILED
    summary = {
        "run_id": run_id, "status": status, "name": (plan or {}).get("name"),
        "started_at": (plan or {}).get("started_at"), "finished_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "estimated_cost_usd": (plan or {}).get("estimated_cost_usd"), "error": _cause(error),
        "targets": targets,
    }
    key = naming.summary_key(run_id)
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(summary, indent=2).encode(),
                      ContentType="application/json")
    failed = [t["target_id"] for t in targets if t["status"] != SUCCEEDED]
    return {"run_id": run_id, "status": status, "summary_key": key, "failed_targets": failed,
            "error": summary["error"]}
