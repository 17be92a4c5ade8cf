"""Collect one step: raw agent output (S3) -> the results store; CloudWatch window -> cloud_metrics.

Run Command writes the invocation's stdout under the step's output prefix
(``.../<step>/ssm/<command-id>/<instance-id>/<plugin>/stdout``, in full: S3 output has no 24,000
character cap). The agent's JSON lines are copied to the step's canonical raw key first, so any
store can be rebuilt from raw; then ``benchfleet.workload.records.parse_agent_lines`` -- the reader local
mode uses -- makes the rows.

The prepare step's fingerprint becomes the repetition's ``targets`` row (what it ran on, where it
really ran -- region and zone as measured, not as the spec asked -- and what it costs): written to
S3 beside the raw output for every store, and to the store's targets table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from benchfleet.aws.errors import CollectFailed, aws_errors, error_code
from benchfleet.aws.steps import cloudwatch as cw
from benchfleet.aws.store.results_store import ResultsStore
from benchfleet.cluster.jobs import SETUP
from benchfleet.cost import pricing
from benchfleet.plan import naming
from benchfleet.workload.records import AgentOutput, Fingerprint, RecordError, parse_agent_lines
from benchfleet.workload.validation import output_problem

FINGERPRINT_FIELDS = ("cpu_model", "vcpus", "cpus_usable", "memory_mb", "arch", "kernel", "os",
                      "sysbench_version", "engine_version", "config_hash")


def agent_lines(text: str) -> str:
    """The agent's records among the document's own output (setup messages are not JSON lines)."""
    return "\n".join(line for line in text.splitlines() if line.startswith('{"type"'))


def read_raw(s3: Any, bucket: str, *, run_id: str, target_id: str, repetition: int, step: str,
             output_prefix: str) -> tuple[str, bool]:
    """The step's agent lines, and whether they are its raw key's already (collected before), else read
    from the Run Command output under ``output_prefix`` (``naming.host_output_prefix``: the host's own).
    Nothing is written here: the raw key holds only output collect accepted (:func:`keep_raw`), because
    ``results --remote`` and the history load every raw key as a result."""
    key = naming.raw_key(run_id, target_id, repetition, step)
    with aws_errors():
        try:
            return str(s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()), True
        except ClientError as e:
            if error_code(e) not in ("NoSuchKey", "404"):
                raise
        prefix = output_prefix.rstrip("/") + "/"
        keys = sorted(o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                      for o in page.get("Contents", []) if o["Key"].endswith("/stdout"))
        if not keys:
            raise CollectFailed(f"no agent output for {target_id} rep {repetition} step {step} "
                                f"under s3://{bucket}/{prefix} (the agent keeps a copy on the host under "
                                f"/var/lib/benchfleet/output/)")
        # <prefix>/<command-id>/<instance-id>/<step>/stdout: one command per step. Two (a retried
        # SendCommand) would be two runs of the same step, whose rows must never be merged.
        commands = sorted({k[len(prefix):].split("/", 1)[0] for k in keys})
        if len(commands) > 1:
            raise CollectFailed(f"{target_id} rep {repetition} step {step}: output of {len(commands)} commands "
                                f"({', '.join(commands)}) under s3://{bucket}/{prefix}; a step runs once")
        text = "\n".join(agent_lines(s3.get_object(Bucket=bucket, Key=k)["Body"].read().decode()) for k in keys)
    return text, False


def keep_raw(s3: Any, bucket: str, key: str, text: str) -> None:
    """The accepted step's agent lines under its raw key (what the run's readers load)."""
    with aws_errors():
        s3.put_object(Bucket=bucket, Key=key, Body=text.encode(), ContentType="application/x-ndjson")


def storage_problem(step: dict[str, Any], fingerprints: list[Any]) -> str | None:
    """Why a prepare that installs the target's storage did not put the data directory on it (None:
    it did): the fingerprint's layout must be the one the install built, of as many devices as the plan
    asked. A plan whose install left storage out launched and billed the volumes, and the target row
    said gp3 x2 RAID 0 while the server ran on the root volume (issue 41 item 1)."""
    storage = (step.get("install") or {}).get("storage")
    if step.get("kind") != "prepare" or not storage or not fingerprints:
        return None
    layout = fingerprints[0].model_dump().get("storage_layout") or {}
    built = layout.get("built") or {}
    devices = built.get("devices") or []
    wanted = int(storage.get("count") or 1)
    if len(devices) != wanted or built.get("type") != storage.get("type"):
        where = layout.get("source") or layout.get("mount_point") or "an unknown device"
        made = f"{len(devices)} {built.get('type')}" if devices else "nothing"
        return (f"the data directory is on {where}, not on the {wanted} {storage.get('type')} device(s) the plan "
                f"gives it (the install built {made})")
    return None


def status_sources(target: dict[str, Any], kind: str) -> tuple[int, str]:
    """(cluster nodes, proxy) whose status rows a step of ``target`` holds: one server's (0, none)."""
    if kind != "cluster":
        return 0, "none"
    return int(target["nodes"]), str((target.get("proxy") or {}).get("software") or "none")


def setup_result(text: str, *, source: str, step: str) -> dict[str, Any]:
    """A cluster's set-up step (benchfleet.cluster.jobs: the agent's ``setup`` record, or its error):
    nothing to store but its raw output (kept above); the outcome says what was set up and how long
    it took. No sample, no summary: not a measured step."""
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            raise CollectFailed(f"{source}: not an agent record: {line[:200]!r}") from None
    errors = [r for r in records if r.get("type") == "error"]
    if errors:
        raise CollectFailed(f"{step}: the agent reported an error in {errors[0].get('stage')}: "
                            f"{errors[0].get('message')}")
    setups = [r for r in records if r.get("type") == SETUP]
    if not setups:
        raise CollectFailed(f"{source}: no set-up record (the agent did not finish {step})")
    done = {k: setups[-1].get(k) for k in ("role", "node", "state", "cluster_size", "seconds", "software",
                                           "proxy_version") if setups[-1].get(k) is not None}
    return {"step": step, "variant": "", "block": None, "samples": 0, "status": 0, "summaries": 0,
            "cloud_metrics": 0, "fingerprints": 0, "targets": 0, "notices": [], "tps": None, "setup": done}


def parse(text: str, *, source: str) -> AgentOutput:
    try:
        return parse_agent_lines(text, source)
    except RecordError as e:
        raise CollectFailed(str(e)) from None


def where_measured(rds: Any, resources: dict[str, Any], fingerprint: Fingerprint) -> tuple[str | None, str | None]:
    """(region, availability zone) the target really ran in, never the spec's word: for RDS / Aurora
    the DB instance's (DescribeDBInstances: the region of its ARN, its AvailabilityZone); for a host,
    its instance metadata as the agent read it; failing that, where provision created it."""
    region, zone = fingerprint.region, fingerprint.availability_zone
    if rds is not None and resources.get("db_instance_id"):
        with aws_errors():
            db = rds.describe_db_instances(DBInstanceIdentifier=resources["db_instance_id"])["DBInstances"][0]
        arn = str(db.get("DBInstanceArn") or "").split(":")
        region, zone = (arn[3] if len(arn) > 3 and arn[3] else None), db.get("AvailabilityZone")
    return region or resources.get("region"), zone or resources.get("zone")


def target_row(*, run_id: str, target: dict[str, Any], kind: str, repetition: int,
               resources: dict[str, Any], fingerprint: Fingerprint,
               measured: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """One row of the data model's ``targets``: the plan's side (kind, type, engine, config, price)
    and the host's (the agent's fingerprint). On RDS / Aurora the fingerprint is the client's;
    ``measured`` is where the target really ran (``where_measured``)."""
    fp = fingerprint.model_dump()
    storage = target.get("storage")
    return {
        "run_id": run_id, "target_id": target["id"], "repetition": repetition, "kind": kind,
        "instance_type": target.get("instance_type") or target.get("instance_class")
        or resources.get("instance_type"),
        "engine": target.get("engine"), "mysql_config": target.get("mysql_config"),
        "region": measured[0], "availability_zone": measured[1],
        "storage": json.dumps(storage, sort_keys=True) if storage else None,
        "cpus": fp.get("cpus_usable") or fp.get("vcpus"), "price_per_hour": target.get("price_per_hour"),
        # Every line by pricing model, where the target ran: what the dashboards' cost per 1,000 tps reads.
        "prices": pricing.recorded_prices({**target, "region": measured[0] or target.get("region")},
                                          plan_price=True),
        **{k: fp.get(k) for k in FINGERPRINT_FIELDS},
        "recorded_at": fingerprint.time,
        # The devices, array, file system and mount options the data directory was on (the agent's).
        "storage_layout": json.dumps(fp["storage_layout"], sort_keys=True) if fp.get("storage_layout") else None,
    }


def write_target_rows(s3: Any, store: ResultsStore, bucket: str, rows: list[dict[str, Any]]) -> int:
    for row in rows:
        key = naming.target_row_key(row["run_id"], row["target_id"], row["repetition"])
        with aws_errors():
            s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(row, default=str, sort_keys=True).encode(),
                          ContentType="application/json")
    if rows:
        with aws_errors():
            store.write_targets(rows)
    return len(rows)


def collect_step(s3: Any, cloudwatch: Any, store: ResultsStore, bucket: str, *, run_id: str,
                 target: dict[str, Any], kind: str, repetition: int, step: dict[str, Any],
                 resources: dict[str, Any], started_at: str, output_prefix: str, rds: Any = None) -> dict[str, Any]:
    """``rds``: a client of the target's region, to ask RDS / Aurora where the database ran;
    ``output_prefix``: where the step's Run Command wrote (``naming.host_output_prefix``)."""
    target_id, name = target["id"], step["name"]
    text, kept = read_raw(s3, bucket, run_id=run_id, target_id=target_id, repetition=repetition, step=name,
                          output_prefix=output_prefix)
    raw = naming.raw_key(run_id, target_id, repetition, name)
    source = f"s3://{bucket}/{raw}"
    if step["kind"] == SETUP:
        done = setup_result(text, source=source, step=name)
        if not kept:
            keep_raw(s3, bucket, raw, text)
        return done
    out = parse(text, source=source)
    if out.errors:
        first = out.errors[0]
        raise CollectFailed(f"agent reported an error in {first.stage}: {first.message}")
    if step["kind"] != "prepare" and not out.summaries:
        raise CollectFailed(f"{source}: no step summary (the agent did not finish the step)")
    # What local mode refuses, refused here by the same check (benchfleet.workload.validation).
    problem = output_problem(out, run_id=run_id, target_id=target_id, repetition=repetition, step=name,
                             kind=step["kind"], duration_s=int(step.get("duration_s") or 0),
                             report_interval_s=int(step.get("report_interval_s") or 1),
                             read_at=datetime.now(UTC), variant=step.get("variant"), block=step.get("block"),
                             sources=status_sources(target, kind))
    problem = problem or storage_problem(step, out.fingerprints)
    if problem:
        raise CollectFailed(f"{source}: {problem}; not stored")
    if not kept:
        keep_raw(s3, bucket, raw, text)
    for fp in out.fingerprints:
        key = naming.raw_key(run_id, target_id, repetition, "fingerprint").replace(".jsonl", ".json")
        with aws_errors():
            s3.put_object(Bucket=bucket, Key=key, Body=fp.model_dump_json().encode(),
                          ContentType="application/json")
    rows = [target_row(run_id=run_id, target=target, kind=kind, repetition=repetition, resources=resources,
                       fingerprint=fp, measured=where_measured(rds, resources, fp)) for fp in out.fingerprints[:1]]
    targets_written = write_target_rows(s3, store, bucket, rows)
    start = datetime.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    times = [s.time for s in out.samples] or [start]
    metrics = cw.step_window(cloudwatch, qs=cw.queries(kind, resources, target), start=min(times),
                             end=max(times) + timedelta(seconds=1), run_id=run_id, target_id=target_id,
                             repetition=repetition, step=name)
    # variant and block beside the step, as every result carries them (the API's CSV rows come from here).
    return {"step": name, "variant": step.get("variant") or "", "block": step.get("block"),
            "samples": store.write_samples(out.samples),
            "status": store.write_status(out.status) if out.status else 0,
            "summaries": store.write_summaries(out.summaries, margin_pct=step.get("margin_pct")),
            "cloud_metrics": store.write_cloud_metrics(metrics),
            "fingerprints": len(out.fingerprints), "targets": targets_written,
            "notices": [n.message for n in out.notices if n.message][:10],
            "tps": out.summaries[0].tps if out.summaries else None}
