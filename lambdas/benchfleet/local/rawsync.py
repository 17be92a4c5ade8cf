"""Rebuild a local store from a cloud run's raw agent output in S3.

Raw JSON lines are the source of truth (DESIGN: any store can be rebuilt from raw), so
``benchfleet report RUN --remote`` and ``results RUN --remote --format json`` download
``runs/<run_id>/**.jsonl`` into ``<home>/raw/<run_id>/`` and load them with the same reader as a
local run into the local DuckDB store. The run's spec comes with it (the API's run, else the
``spec.json`` Summarize wrote): its ``margin_pct`` and ``baseline`` judge the verdicts as they did locally.

A copy loaded after the run ended is final (its raw output never changes): later ``--remote`` commands,
``results --history NAME --remote`` included, use it as it is instead of downloading it again. A copy
loaded while the run was running says so in the store (status ``running``) and is loaded again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.run_status import TERMINAL
from benchfleet.local.store import CloudCopy, DuckDBStore
from benchfleet.plan.naming import RUN_ID
from benchfleet.workload.records import AgentOutput, parse_agent_lines

BUCKET_OUTPUT = "ResultsBucketName"


def bucket_from_stack(cfn: Any, stack: str) -> str:
    stacks = cfn.describe_stacks(StackName=stack)["Stacks"]
    for output in (stacks[0].get("Outputs") or []) if stacks else []:
        if output.get("OutputKey") == BUCKET_OUTPUT:
            return str(output["OutputValue"])
    raise LookupError(f"stack {stack} has no {BUCKET_OUTPUT} output")


def stored_spec(s3: Any, bucket: str, run_id: str) -> dict[str, Any]:
    """The run's spec as Summarize stored it (runs/<id>/spec.json, for every results store): what the
    verdicts are judged by (margin_pct, baseline, variants); {} for a run that ended before it."""
    try:
        body = s3.get_object(Bucket=bucket, Key=f"runs/{run_id}/spec.json")["Body"].read()
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return {}
        raise
    try:
        spec = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return spec if isinstance(spec, dict) else {}


def source_of(bucket: str, run_id: str) -> str:
    """Where a cloud run's raw output is: what a copy in the store records it came from."""
    return f"s3://{bucket}/runs/{run_id}/"


def final_copy(store: DuckDBStore, bucket: str, run_id: str) -> dict[str, Any] | None:
    """The store's copy of the run when it is final: loaded whole from this bucket after the run had
    ended (a finished run's raw output never changes), so nothing needs downloading again. None for no
    copy, a copy loaded while the run was running, or one of another bucket of the same run id."""
    copy = store.cloud_copy(run_id)
    if copy and copy["source"] == source_of(bucket, run_id) and copy["cloud_status"] in TERMINAL:
        return copy
    return None


def load_run(s3: Any, bucket: str, run_id: str, describe: Callable[[str], dict[str, Any]], store: DuckDBStore,
             home: Path) -> str:
    """``results``/``report RUN --remote``: the store's final copy of the run as it is (no request at all),
    else the run as the API describes it (``describe``), loaded from its raw output. Returns its id."""
    if final_copy(store, bucket, run_id) is not None:
        return run_id
    run = describe(run_id)
    sync_run(s3, bucket, run, store, home)
    return str(run["run_id"])


@dataclass
class History:
    """The runs of one name a remote history judges: id -> when it started in the cloud (the order), and
    the runs left out, each with why."""

    started: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def load_history(s3: Any, bucket: str, runs: Iterable[dict[str, Any]], store: DuckDBStore, home: Path,
                 most: int) -> History:
    """``results --history NAME --remote``: the newest ``most`` succeeded runs among ``runs`` (the API's
    list of the name, newest first) loaded into the store, a final copy already there as it is. A run
    that cannot be judged is skipped, saying why, and the others are judged without it: one still
    running, or one whose raw output is missing. Runs that failed are left out, as locally."""
    out = History()
    for run in runs:
        if len(out.started) >= most:
            break
        run_id, status = str(run.get("run_id")), str(run.get("status"))
        if status == "RUNNING":
            out.skipped.append((run_id, "still running: its results are not final yet"))
            continue
        if status != "SUCCEEDED":
            continue
        try:
            copy = final_copy(store, bucket, run_id)
            files = copy["raw_files"] if copy else sync_run(s3, bucket, run, store, home)
        except RawOutputMissing as e:
            out.skipped.append((run_id, str(e)))
            continue
        if not files:
            out.skipped.append((run_id, f"no raw output in {source_of(bucket, run_id)}"))
            continue
        out.started[run_id] = run.get("started_at")
    return out


class RawOutputMissing(FileNotFoundError):
    """A raw file listed under the run's prefix was gone when it was read (removed meanwhile)."""


def sync_run(s3: Any, bucket: str, run: dict[str, Any], store: DuckDBStore, home: Path) -> int:
    """Download and load one run; returns the number of raw files. Replaces an earlier copy, in one
    transaction once every file is read (a failure leaves the earlier copy, or none)."""
    run_id = str(run["run_id"])
    if not RUN_ID.match(run_id):
        raise ValueError(f"{run_id!r} is not a run id")
    prefix = f"runs/{run_id}/"
    keys = [obj["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", []) if obj["Key"].endswith(".jsonl")]
    spec = run.get("spec") or stored_spec(s3, bucket, run_id)
    merged = AgentOutput()
    for key in sorted(keys):
        local = home / "raw" / key.removeprefix("runs/")
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            s3.download_file(bucket, key, str(local))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise RawOutputMissing(f"its raw output s3://{bucket}/{key} is gone (removed while it was "
                                       "being read)") from None
            raise
        output = parse_agent_lines(local.read_text(), f"s3://{bucket}/{key}")
        merged.samples += output.samples
        merged.summaries += output.summaries
        merged.status += output.status  # every source's SHOW GLOBAL STATUS per second (a cluster's nodes)
        merged.fingerprints += output.fingerprints
    status = str(run.get("status") or "unknown")
    store.replace_cloud_copy(CloudCopy(
        run_id=run_id, name=str(run.get("name") or run_id.rsplit("-", 2)[0]), spec=spec, cloud_status=status,
        source=source_of(bucket, run_id), raw_files=len(keys), output=merged,
        started_at=_time(run.get("started_at")), ended_at=_time(run.get("stopped_at")),
        estimated_cost_usd=run.get("estimated_cost_usd"), actual_cost_usd=run.get("actual_cost_usd")))
    return len(keys)


def _time(value: Any) -> datetime | None:
    """A time the API gives (ISO 8601), None when it gives none or no time."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None
