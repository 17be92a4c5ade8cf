"""Rebuild a local store from a cloud run's raw agent output in S3.

Raw JSON lines are the source of truth (DESIGN: any store can be rebuilt from raw), so
``benchfleet report RUN --remote`` and ``results RUN --remote --format json`` download
``runs/<run_id>/**.jsonl`` into ``<home>/raw/<run_id>/`` and load them with the same reader as a
local run into the local DuckDB store. The run's spec comes with it (the API's run, else the
``spec.json`` Summarize wrote): its ``margin_pct`` and ``baseline`` judge the verdicts as they did locally.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.local.store import DuckDBStore, RunNotFound
from benchfleet.naming import RUN_ID
from benchfleet.records import AgentOutput, parse_agent_lines

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


def sync_run(s3: Any, bucket: str, run: dict[str, Any], store: DuckDBStore, home: Path) -> int:
    """Download and load one run; returns the number of raw files. Replaces an earlier copy."""
    run_id = str(run["run_id"])
    if not RUN_ID.match(run_id):
        raise ValueError(f"{run_id!r} is not a run id")
    prefix = f"runs/{run_id}/"
    keys = [obj["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", []) if obj["Key"].endswith(".jsonl")]
    try:
        store.run(run_id)
        store.delete_run(run_id)
    except RunNotFound:
        pass
    spec = run.get("spec") or stored_spec(s3, bucket, run_id)
    store.create_run(run_id, str(run.get("name") or run_id.rsplit("-", 2)[0]), spec, "aws",
                     run.get("estimated_cost_usd"))
    merged = AgentOutput()
    for key in sorted(keys):
        local = home / "raw" / key.removeprefix("runs/")
        local.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, key, str(local))
        output = parse_agent_lines(local.read_text(), f"s3://{bucket}/{key}")
        merged.samples += output.samples
        merged.summaries += output.summaries
        merged.status += output.status  # every source's SHOW GLOBAL STATUS per second (a cluster's nodes)
        for fp in output.fingerprints:
            store.add_target(run_id, fp.target_id, fp.repetition, {"kind": "aws"}, fp)
    store.add_output(merged)
    store.finish_run(run_id, str(run.get("status") or "unknown").lower(), None, run.get("actual_cost_usd"))
    return len(keys)
