"""The agent as the offline executor plays it: for moto's SendCommand, each step ends as a test says
(succeeded, failed, timed out, hung, garbage, lost) and writes the captured real agent output
(tests/fixtures/agent, agent-gotpc) fitted to the plan step's length, as the real agent would to S3;
with the SSM status-change event EventBridge would deliver (``ssm_invocation_event``)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.exceptions import InvalidInstanceIdError
from moto.ec2.models import ec2_backends
from moto.ssm.models import ssm_backends
from sm_world import BUCKET, FIXTURES, FIXTURES_GOTPC, REGION

from benchfleet.aws.steps import commands


def built_layout(storage: dict[str, Any]) -> dict[str, Any]:
    """The storage_layout an ec2 host's fingerprint reports once its install built ``storage`` (the
    job's install.storage): the data directory bind-mounted from the array, every device in it."""
    devices = storage.get("volumes") or [{"serial": f"AWS{i:017d}", "device": f"/dev/nvme{i + 1}n1"}
                                         for i in range(int(storage.get("count") or 1))]
    return {"data_dir": "/var/lib/mysql", "mount_point": "/var/lib/mysql", "filesystem": storage["filesystem"],
            "source": "/dev/md0" if len(devices) > 1 else devices[0]["device"],
            "built": {"type": storage["type"], "devices": devices, "level": storage.get("raid"),
                      "filesystem": storage["filesystem"], "mount_point": "/mnt/benchfleet-data",
                      "data_dir": "/var/lib/mysql"}}


def ssm_invocation_event(command_id: str, instance_id: str, status: str, document: str,
                         region: str = REGION) -> dict[str, Any]:
    """SSM's "EC2 Command Invocation Status-change Notification", as EventBridge delivers it."""
    return {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
            "detail-type": "EC2 Command Invocation Status-change Notification", "source": "aws.ssm",
            "account": DEFAULT_ACCOUNT_ID, "time": "2026-11-23T06:00:00Z", "region": region,
            "resources": [f"arn:aws:ec2:{region}:{DEFAULT_ACCOUNT_ID}:instance/{instance_id}"],
            "detail": {"command-id": command_id, "document-name": document, "instance-id": instance_id,
                       "requested-date-time": "2026-11-23T05:59:58.123Z", "status": status}}


FIXTURE_STEP_S = 240  # the captured measure step (tests/fixtures/agent/t0001.jsonl)


def fitted(records: list[dict[str, Any]], step: dict[str, Any]) -> list[dict[str, Any]]:
    """The captured step's records as a step of the plan's length and report interval would be (collect
    checks sysbench's run time and sample count against the plan): its samples cut or repeated,
    every ``report_interval_s``-th kept (their arrival times with them), its summary's total time the step's."""
    duration, every = step.get("duration_s"), step.get("report_interval_s") or 1
    if step.get("kind") == "prepare" or not duration or (duration == FIXTURE_STEP_S and every == 1):
        return records
    samples = [r for r in records if r["type"] == "sample"]
    out = []
    for second in range(every, duration + 1, every):
        base = samples[(second - 1) % len(samples)]
        # The agent's arrival times move with the second (its jitter kept): a repeated sample keeping
        # its first lap's arrived_s would measure a negative interval, which collect rightly refuses.
        moved = {"arrived_s": base["arrived_s"] - base["second"] + second} if "arrived_s" in base else {}
        out.append({**base, "second": float(second), "time": samples[0]["time"] + second - 1, **moved})
    summary = next(r for r in records if r["type"] == "summary")
    return [*out, {**summary, "total_time_s": duration + 0.0069, "time": samples[0]["time"] + duration}]


def fixture_of(job: dict[str, Any], step: str) -> Path:
    """The captured agent output a step of ``job`` replays: sysbench's, or go-tpc's for a TPC-C job."""
    folder, measured = (FIXTURES_GOTPC, "t0002") if job.get("gotpc") else (FIXTURES, "t0001")
    return folder / f"{'prepare' if step == 'prepare' else measured}.jsonl"


@functools.cache
def captured_records(fixture: Path) -> tuple[dict[str, Any], ...]:
    """A captured agent output's records, parsed once (every step of a large run replays one; parsing
    it per step was about 5% of the handlers' time in tests/perf/cloud_scale.py). Copy before changing."""
    return tuple(json.loads(line) for line in fixture.read_text().splitlines())


@dataclass
class Agent:
    """Plays the agent for moto's SendCommand: per target, what the step ends as."""

    s3: Any
    # target_id (or "<target_id>:<variant>") -> ok | failed | timed_out | hang | garbage | lost (ran,
    # but its status change never arrives) | undeliverable (never reached the agent's step)
    outcome: dict[str, str] = field(default_factory=dict)
    # Also play the CloudWatch agent: per-second cpu_usage_steal of the host for each measured second.
    steal: bool = False
    # Why a failed set-up step failed, by role (node | proxy), or another step, by its name: what the
    # agent's error record says.
    reasons: dict[str, str] = field(default_factory=lambda: {
        "node": "did not reach Synced within 900 s: WSREP: gcs connect failed: Connection timed out",
        "proxy": "apt-get install proxysql failed (exit 100): Unable to locate package proxysql"})

    def ran(self, event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
        """Run Command's end of the step: the status-change event it sends (None: the host hangs)."""
        target_id, rep, step = event["target"]["id"], event["repetition"], event["step"]["name"]
        variant = event["step"].get("variant")
        # "<target>:<variant>": the outcome of that variant's steps only (a variant that cannot be applied);
        # "<target>:<step>": of that step only (a cluster's node that never joins: "c1:setup-n2").
        outcome = (self.outcome.get(f"{target_id}:{step}") or self.outcome.get(f"{target_id}:{variant}")
                   or self.outcome.get(target_id, "ok"))
        # Run Command of the target's region (start_step's answer says which).
        region = result.get("region") or REGION
        command = ssm_backends[DEFAULT_ACCOUNT_ID][region].get_command_by_id(result["command_id"])
        status = {"failed": "Failed", "timed_out": "TimedOut", "hang": "InProgress",
                  "undeliverable": "Failed"}.get(outcome, "Success")
        for inv in command.invocations:
            inv["Status"] = inv["StatusDetails"] = status
            inv["ResponseCode"] = 3 if outcome == "failed" else 0
            if outcome == "undeliverable":  # the agent never received it: no step of the document ran
                inv["StatusDetails"], inv["ResponseCode"] = "Undeliverable", -1
                continue
            # AWS names a multi-step document's invocation by step; moto by plugin type.
            inv["PluginName"] = commands.AGENT_PLUGIN
        job = json.loads(command.parameters["JobJson"][0].replace("\\u0027", "'"))
        if event["step"].get("kind") == "setup":  # a cluster's node or proxy set-up (benchfleet.cluster.jobs)
            self.set_up(job, command, result, outcome)
        elif outcome == "failed" and step in self.reasons:  # the agent's error record says why
            self.write_output(command, result, {"type": "error", "stage": "health", "message": self.reasons[step]})
        elif outcome in ("ok", "garbage", "lost"):
            fixture = fixture_of(job, step)
            lines, seconds = [], []
            captured = [dict(r) for r in captured_records(fixture)]  # records are updated below
            records = fitted(captured, event["step"])
            if (job.get("status") or {}).get("sources") and not any(r["type"] == "status" for r in records):
                records += self.status_readings(captured, records)
            for record in records:
                record.update(run_id=event["run_id"], target_id=target_id, repetition=rep,
                              workload=(event["step"].get("workload") or event["workload"])["name"], step=step)
                if variant:  # the agent's records name the variant and block its job names
                    record.update(variant=variant, block=event["step"].get("block"))
                if record["type"] == "sample":
                    seconds.append(float(record["time"]))
                if record["type"] == "fingerprint":  # what the agent reads from the host's IMDS
                    record.update(self.placement(region, result["instance_id"]))
                    storage = (job.get("install") or {}).get("storage")
                    if storage:  # and the layout its install built (workloads/agent/benchfleet_storage.py)
                        record["storage_layout"] = built_layout(storage)
                if record["type"] == "status" and (job.get("status") or {}).get("sources"):
                    # A cluster's client reads every node (and the proxy): one record per source, named so.
                    lines += [json.dumps({**record, "source": source["name"]}, separators=(",", ":"))
                              for source in job["status"]["sources"]]
                    continue
                if outcome == "garbage" and record["type"] == "sample":
                    record["tps"] = "lots"  # what a broken agent might print: collect must refuse it
                lines.append(json.dumps(record, separators=(",", ":")))
            body = "Setting up the engine...\n" + "\n".join(lines) + "\n"
            # Where start_step told Run Command to write: the host's own prefix.
            prefix = command.output_s3_key_prefix
            key = f"{prefix}/{result['command_id']}/{result['instance_id']}/awsrunShellScript/0.runAgent/stdout"
            self.s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
            if self.steal and seconds:
                self.publish_steal(region, result["instance_id"], seconds)
        if outcome in ("hang", "lost"):
            return None
        return ssm_invocation_event(result["command_id"], result["instance_id"], status, command.document_name,
                                    region)

    @staticmethod
    def status_readings(captured: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The captured status readings at the fitted step's seconds (``fitted`` keeps samples only)."""
        readings = [r for r in captured if r["type"] == "status"]
        samples = [r for r in records if r["type"] == "sample"]
        return [{**readings[i % len(readings)], "second": s["second"], "time": s["time"]}
                for i, s in enumerate(samples)]

    def set_up(self, job: dict[str, Any], command: Any, result: dict[str, Any], outcome: str) -> None:
        """What the agent prints for a set-up job: its ``setup`` record, or (``failed``) the error
        record naming the node and the reason, as workloads/agent does."""
        setup = job["setup"]
        if outcome == "failed":
            who = f"node {setup['node']}" if setup["role"] == "node" else f"proxy {setup['software']}"
            stage = "node" if setup["role"] == "node" else "proxy-install"
            record = {"type": "error", "stage": stage, "node": setup.get("node"),
                      "message": f"{who}: {self.reasons.get(setup['role'], 'failed')}"}
        elif outcome in ("ok", "lost"):
            record = {"type": "setup", "role": setup["role"], "state": "Synced", "seconds": 1.5,
                      **({"node": setup["node"], "cluster_size": setup["expected_size"]} if setup["role"] == "node"
                         else {"software": setup["software"], "proxy_version": "2.7.1"})}
        else:
            return
        self.write_output(command, result, record)

    def write_output(self, command: Any, result: dict[str, Any], record: dict[str, Any]) -> None:
        """Run Command's upload of the agent's output: one record after the document's own messages."""
        body = "Setting up...\n" + json.dumps(record, separators=(",", ":")) + "\n"
        key = (f"{command.output_s3_key_prefix}/{result['command_id']}/{result['instance_id']}"
               "/awsrunShellScript/0.runAgent/stdout")
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())

    @staticmethod
    def publish_steal(region: str, instance_id: str, seconds: list[float]) -> None:
        """What the CloudWatch agent of cdk/lib/target-fleet.ts publishes: CWAgent cpu_usage_steal, per
        second, dimensions InstanceId and cpu=cpu-total."""
        dims = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "cpu", "Value": "cpu-total"}]
        data = [{"MetricName": "cpu_usage_steal", "Dimensions": dims, "Value": 1.5, "Unit": "Percent",
                 "StorageResolution": 1, "Timestamp": datetime.fromtimestamp(t, UTC)} for t in seconds]
        cloudwatch = boto3.client("cloudwatch", region_name=region)
        for i in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=data[i:i + 500])

    @staticmethod
    def placement(region: str, instance_id: str) -> dict[str, str]:
        """What the agent reads from the host's IMDS, read from moto's state (as the host would,
        without a client and a DescribeInstances per step)."""
        try:
            instance = ec2_backends[DEFAULT_ACCOUNT_ID][region].get_instance(instance_id)
        except InvalidInstanceIdError:  # an existing target's host that is not in moto: no metadata to read
            return {}
        return {"region": region, "availability_zone": str(instance.availability_zone)}
