"""One source of truth for names and tags of everything a run creates."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

TAG_RUN_ID = "benchfleet:run-id"
TAG_TARGET_ID = "benchfleet:target-id"
TAG_EXPIRES_AT = "benchfleet:expires-at"
RUN_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,78}[a-z0-9]$")


def new_run_id(name: str, now: datetime | None = None) -> str:
    """``<name>-<UTC time>-<4 hex>``: sortable, unique, valid as an execution name, tag and S3 key."""
    now = now or datetime.now(UTC)
    return f"{name[:40].rstrip('-')}-{now:%Y%m%dt%H%M%S}-{secrets.token_hex(2)}"


def raw_key(run_id: str, target_id: str, repetition: int, step: str) -> str:
    """Where the agent's raw JSON lines of one step live, in S3 and under the local data dir."""
    return f"runs/{run_id}/{target_id}/rep-{repetition}/{step}.jsonl"


def tags(run_id: str, target_id: str, expires_at: datetime) -> dict[str, str]:
    return {TAG_RUN_ID: run_id, TAG_TARGET_ID: target_id,
            TAG_EXPIRES_AT: expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
