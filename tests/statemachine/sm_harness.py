"""Offline executions of statemachines/benchmark-run.asl.json with moto's Step Functions executor.

The seam: moto's executor invokes every Lambda Task (direct function ARN or lambda:invoke alike)
through ``moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils.
_invoke_lambda_function(parameters, region, state_credentials)``, which would call moto's Lambda
backend and so Docker. We replace that one function: it maps the function ARN to
``handlers.<module>.handler`` and calls it in-process, returning what Lambda's Invoke returns
(``FunctionError: Unhandled`` and ``{"errorType", "errorMessage"}`` when the handler raises, so the
ASL's Retry/Catch see the exception's class name, as on AWS). Calls are serialised: a Lambda
process runs one invocation at a time, and Powertools' Metrics is process-global.

Everything else is real moto (EC2, RDS, SSM, S3, Secrets Manager, Timestream, CloudWatch) through
the handlers, except what moto lacks, faked in ``MotoGaps``: the public SSM parameter of Ubuntu
AMIs, DescribeInstanceInformation (PingStatus), ListCommandInvocations and DescribeDBEngineVersions. Run Command runs
nothing in moto, so ``Agent`` plays the agent: after each SendCommand it writes the captured real
agent output (tests/fixtures/agent; a TPC-C job's, tests/fixtures/agent-gotpc) where Run Command
would, sets the invocation's status and, as EventBridge would on the invocation's status change,
invokes the real step_callback handler with the event SSM sends (``ssm_invocation_event``;
tests/synthesized checks it matches the deployed rule's pattern), which completes the task "Start the
step" waits on. A hanging host sends none.

Stricter than moto where AWS is (``sfn_limits``): a state whose input or output passes 256 KiB
fails the execution with ``States.DataLimitExceeded`` (the peak is in ``Harness.payloads``), and
``States.ALL`` catches neither that nor ``States.Runtime``.

Retry back-off: moto's retrier calls ``time.sleep(interval)``; ``retrier_decl.time`` is replaced
by an object whose ``sleep`` records the interval, so back-off is asserted, not waited for. Wait
states get 0 s from the input (the plan's timing overrides), never by editing the definition; an
input without overrides (a schedule's, as deployed) has its Wait states' seconds recorded in
``waits`` instead of slept.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import pickle
import re
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import jsonpath_ng
import jsonpath_ng.ext
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core import responses as moto_responses
from moto.core import utils as moto_utils
from moto.core.base_backend import BaseBackend
from moto.ec2.exceptions import InvalidInstanceIdError
from moto.ec2.models import ec2_backends
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.rds.models import rds_backends
from moto.s3.models import S3Backend
from moto.ssm.models import SimpleSystemManagerBackend, ssm_backends
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.state.exec import execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_map import state_map
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.asl.eval import states as asl_states
from moto.stepfunctions.parser.asl.utils import json_path
from moto.timestreamwrite.models import TimestreamTable
from moto.timestreamwrite.responses import TimestreamWriteResponse
from sfn_limits import Payloads, as_strict_as_aws, size_of

from benchfleet import naming, serverparams
from benchfleet.aws import clients
from benchfleet.aws.steps import commands

REGION = "us-east-1"
ASL = Path(__file__).resolve().parents[2] / "statemachines" / "benchmark-run.asl.json"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
# go-tpc's (a TPC-C job's) steps, captured on the host tier: tests/fixtures/agent-gotpc/README.md.
FIXTURES_GOTPC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-gotpc"
HANDLERS = {"Plan": "plan", "Provision": "provision", "Readiness": "readiness", "StartStep": "start_step",
            "Collect": "collect", "Teardown": "teardown", "Summarize": "summarize", "StepCallback": "step_callback"}
BUCKET = "bf-results"
DATABASE = "benchfleet"
DOCUMENT = "bf-agent"


def function_arn(module: str) -> str:
    return f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:benchfleet-{module.replace('_', '-')}"


def definition() -> str:
    text = ASL.read_text()
    for key, module in HANDLERS.items():
        text = text.replace("${" + key + "FunctionArn}", function_arn(module))
    text = text.replace("${ResultsBucket}", BUCKET)
    assert "${" not in text
    return for_moto(text)


def for_moto(definition: str) -> str:
    """A definition moto's ASL parser takes: its grammar reads ToleratedFailurePercentage as a decimal
    only (an integer, as AWS documents it, is a syntax error there; moto then ignores the field)."""
    return re.sub(r'("ToleratedFailurePercentage"\s*:\s*)([0-9]+)(?=\s*[,}])', r"\g<1>\g<2>.0", definition)


@dataclass
class Context:
    """The parts of a LambdaContext Powertools reads."""

    function_name: str
    function_version: str = "$LATEST"
    invoked_function_arn: str = ""
    memory_limit_in_mb: int = 256
    aws_request_id: str = "req"
    log_group_name: str = "/aws/lambda/x"
    log_stream_name: str = "x"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@dataclass
class Call:
    module: str
    event: dict[str, Any]
    result: Any = None
    error: str | None = None


class FaultProxy:
    """A boto3 client whose named operations fail (``faults[op]``: a list of exceptions, consumed in
    order, or a callable(kwargs) -> exception | None) and which counts calls; the rest is moto."""

    def __init__(self, real: Any, faults: dict[str, Any] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self._real = real
        self.faults = faults or {}
        self.extra = extra or {}
        self.calls: Counter[str] = Counter()
        self.records_per_call: list[int] = []
        self.tables_per_call: list[str] = []

    def __getattr__(self, name: str) -> Any:
        # What moto lacks or is lenient about (``extra``) is faulted and counted like the rest.
        attr = self.extra[name] if name in self.extra else getattr(self._real, name)
        if not callable(attr) or name.startswith(("get_paginator", "exceptions", "meta", "can_paginate")):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            fault = self.faults.get(name)
            if callable(fault):
                exc = fault(kwargs)
                if exc is not None:
                    raise exc
            elif fault:
                raise fault.pop(0)
            if name == "write_records":
                assert len(kwargs["Records"]) <= 100, "WriteRecords takes at most 100 records"
                self.records_per_call.append(len(kwargs["Records"]))
                self.tables_per_call.append(kwargs["TableName"])
            return attr(*args, **kwargs)

        return call


def client_error(code: str, op: str, message: str = "injected") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, op)


class MotoGaps:
    """What moto does not implement, answered from moto's own state."""

    def __init__(self, region: str = REGION) -> None:
        self.ec2 = boto3.client("ec2", region_name=region)
        # Read from moto's state: DescribeImages of every bundled AMI takes seconds to serialise.
        self.ami = next(iter(ec2_backends[DEFAULT_ACCOUNT_ID][region].amis))
        self.ami_requests: list[str] = []

    def get_parameter(self, real: Any) -> Any:
        def get(Name: str, **kw: Any) -> Any:
            if Name.startswith("/aws/service/canonical/ubuntu/"):
                self.ami_requests.append(Name)
                return {"Parameter": {"Name": Name, "Value": self.ami, "Type": "String"}}
            return real.get_parameter(Name=Name, **kw)
        return get

    def ssm(self, real: Any) -> FaultProxy:
        """An SSM client of this region with what moto lacks answered here."""
        return FaultProxy(real, extra={"get_parameter": self.get_parameter(real),
                                       "describe_instance_information": self.describe_instance_information,
                                       "list_command_invocations": self.list_command_invocations})

    def rds(self, real: Any) -> FaultProxy:
        strict = StrictRds(real, self.ec2.meta.region_name)
        return FaultProxy(real, extra={"describe_db_engine_versions": self.describe_db_engine_versions,
                                       **strict.operations()})

    def describe_instance_information(self, Filters: list[dict[str, Any]], **_: Any) -> Any:
        ids = [v for f in Filters if f["Key"] == "InstanceIds" for v in f["Values"]]
        found = self.ec2.describe_instances(InstanceIds=ids)["Reservations"]
        online = [i["InstanceId"] for r in found for i in r["Instances"] if i["State"]["Name"] == "running"]
        return {"InstanceInformationList": [{"InstanceId": i, "PingStatus": "Online"} for i in online]}

    def list_command_invocations(self, CommandId: str, InstanceId: str, **_: Any) -> Any:
        """An invocation's own status (moto has no ListCommandInvocations), from moto's command."""
        region = self.ec2.meta.region_name
        command = ssm_backends[DEFAULT_ACCOUNT_ID][region].get_command_by_id(CommandId)
        return {"CommandInvocations": [
            {"CommandId": CommandId, "InstanceId": inv["InstanceId"], "Status": inv["Status"],
             "StatusDetails": inv["StatusDetails"], "DocumentName": command.document_name}
            for inv in command.invocations if inv["InstanceId"] == InstanceId]}

    @staticmethod
    def describe_db_engine_versions(Engine: str, **_: Any) -> Any:
        versions = {"mysql": ["5.7.44", "8.0.36", "8.0.40", "8.4.3"], "mariadb": ["10.11.9", "11.4.4"],
                    "aurora-mysql": ["5.7.mysql_aurora.2.12.4", "8.0.mysql_aurora.3.05.2",
                                     "8.0.mysql_aurora.3.08.0"]}[Engine]

        def family(version: str) -> str:  # as RDS names them: mysql8.0, mariadb10.11, aurora-mysql8.0
            return Engine + ".".join(version.split(".")[:2])
        return {"DBEngineVersions": [{"Engine": Engine, "EngineVersion": v, "DBParameterGroupFamily": family(v)}
                                     for v in versions]}


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


class StrictRds:
    """Parameter groups as AWS treats them where moto is lenient: a group a database uses cannot be
    deleted (InvalidDBParameterGroupState), a cluster cannot name a cluster parameter group that does
    not exist, a group's family must be the database's, and ApplyMethod immediate is refused for a
    static parameter (by benchfleet's catalogue: what RDS lists as static)."""

    def __init__(self, real: Any, region: str) -> None:
        self.real = real
        self.region = region

    def operations(self) -> dict[str, Any]:
        return {"delete_db_parameter_group": self.delete_db_parameter_group,
                "delete_db_cluster_parameter_group": self.delete_db_cluster_parameter_group,
                "create_db_cluster": self.create_db_cluster,
                "modify_db_parameter_group": self.modify("modify_db_parameter_group"),
                "modify_db_cluster_parameter_group": self.modify("modify_db_cluster_parameter_group")}

    @property
    def backend(self) -> Any:
        return rds_backends[DEFAULT_ACCOUNT_ID][self.region]

    def delete_db_parameter_group(self, DBParameterGroupName: str) -> Any:
        users = [d for d in self.backend.databases.values() if d.db_parameter_group_name == DBParameterGroupName]
        if users:
            raise client_error("InvalidDBParameterGroupState", "DeleteDBParameterGroup",
                               "One or more database instances are still members of this parameter group")
        return self.real.delete_db_parameter_group(DBParameterGroupName=DBParameterGroupName)

    def delete_db_cluster_parameter_group(self, DBClusterParameterGroupName: str) -> Any:
        if any(c.parameter_group == DBClusterParameterGroupName for c in self.backend.clusters.values()):
            raise client_error("InvalidDBParameterGroupState", "DeleteDBClusterParameterGroup",
                               "One or more DB clusters are still members of this parameter group")
        return self.real.delete_db_cluster_parameter_group(DBClusterParameterGroupName=DBClusterParameterGroupName)

    def create_db_cluster(self, **kwargs: Any) -> Any:
        name = kwargs.get("DBClusterParameterGroupName")
        if name and name not in self.backend.db_cluster_parameter_groups:
            raise client_error("DBClusterParameterGroupNotFound", "CreateDBCluster", f"{name} not found")
        return self.real.create_db_cluster(**kwargs)

    def modify(self, operation: str) -> Callable[..., Any]:
        catalogue = serverparams.load_catalogue()

        def call(**kwargs: Any) -> Any:
            name = kwargs.get("DBParameterGroupName") or kwargs.get("DBClusterParameterGroupName")
            groups = self.backend.db_parameter_groups if "DBParameterGroupName" in kwargs \
                else self.backend.db_cluster_parameter_groups
            # A cluster parameter group is Aurora's; a DB parameter group says by its family.
            aurora = name in groups and str(getattr(groups[name], "family", "aurora")).startswith("aurora")
            for p in kwargs["Parameters"]:
                rule = catalogue.rules.get(p["ParameterName"])
                static = rule is not None and (rule.aurora[1] if aurora and rule.aurora else rule.rds) == "static"
                if static and p["ApplyMethod"] == "immediate":
                    raise client_error("InvalidParameterCombination", operation,
                                       f"cannot use immediate apply method for static parameter {p['ParameterName']}")
            assert len(kwargs["Parameters"]) <= 20, "ModifyDB*ParameterGroup takes at most 20 parameters"
            return getattr(self.real, operation)(**kwargs)
        return call


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
        if event["step"].get("kind") == "setup":  # a cluster's node or proxy set-up (benchfleet.clusterjob)
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


class Harness:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        # Seconds spent in handler calls (and the agent's and EventBridge's parts of a step):
        # the rest of a run's wall time is the executor's.
        self.handler_s = 0.0
        self.sleeps: list[float] = []
        self.waits: list[int] = []
        # Called with each Wait state's seconds as it passes (what happens meanwhile elsewhere).
        self.on_wait: list[Callable[[int], None]] = []
        self.payloads = Payloads()
        self.sf = boto3.client("stepfunctions", region_name=REGION)
        self.s3 = boto3.client("s3", region_name=REGION)
        self.agent = Agent(self.s3)
        self.gaps = MotoGaps()
        ssm = boto3.client("ssm", region_name=REGION)
        rds = boto3.client("rds", region_name=REGION)
        self.proxies: dict[str, FaultProxy] = {
            "ssm": self.gaps.ssm(ssm),
            "rds": self.gaps.rds(rds),
            "ec2": FaultProxy(boto3.client("ec2", region_name=REGION)),
            "timestream-write": FaultProxy(timestream_writer()),
            "s3": FaultProxy(self.s3),
        }
        for service, proxy in self.proxies.items():
            clients.override(service, lambda p=proxy: p)
        # Function ARN -> handler module, for definitions whose ARNs do not name the module.
        self.functions: dict[str, str] = {}
        self.arn = self.create(definition(), "benchfleet-run")

    def create(self, definition: str, name: str) -> str:
        return str(self.sf.create_state_machine(name=name, definition=definition,
                                                roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/sfn")["stateMachineArn"])

    def deploy(self, template: Any) -> str:
        """The state machine exactly as synthesized (``synth.Template``: DefinitionString with the
        substitutions CloudFormation applies, the deployed TimeoutSeconds); each Lambda ARN in it
        invokes the handler module its function's ``Handler`` names."""
        for logical_id, function in template.of_type("AWS::Lambda::Function").items():
            handler = function["Properties"].get("Handler", "")
            if handler.startswith("handlers."):
                self.functions[template.arn(logical_id)] = handler.split(".")[1]
        (deployed,) = template.state_machine_definitions().values()
        # The deployed results bucket (the Distributed Map's ResultWriter names it statically).
        bucket = deployed["States"]["Run targets in child executions"]["ResultWriter"]["Parameters"]["Bucket"]
        if bucket != BUCKET:
            self.s3.create_bucket(Bucket=bucket)
        return self.create(for_moto(json.dumps(deployed)), "benchfleet-deployed")

    # -- the seam -------------------------------------------------------------------------------
    def invoke(self, parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
        module = self.functions.get(parameters["FunctionName"]) or \
            parameters["FunctionName"].rsplit(":function:benchfleet-", 1)[1].replace("-", "_")
        event = json.loads(parameters["Payload"])
        self.payloads.measure(size_of(parameters["Payload"]), module, "lambda payload")
        call = Call(module, event)
        with self.lock:
            started = time.perf_counter()
            try:
                return self._call(call, event)
            finally:
                self.handler_s += time.perf_counter() - started

    def _call(self, call: Call, event: dict[str, Any]) -> dict[str, Any]:
        module = call.module
        self.calls.append(call)
        handler = importlib.import_module(f"handlers.{module}").handler
        try:
            result = handler(event, Context(function_name=f"benchfleet-{module}"))
        except Exception as e:  # what Lambda returns for an unhandled exception
            call.error = type(e).__name__
            call.result = str(e)[:500]
            return {"StatusCode": 200, "FunctionError": "Unhandled",
                    "Payload": {"errorType": type(e).__name__, "errorMessage": str(e)[:1000]}}
        result = json.loads(json.dumps(result, default=str))
        self.payloads.measure(size_of(result), module, "lambda result")
        call.result = result
        if module == "start_step":
            ended = self.agent.ran(event, result)
            if ended is not None:
                self.deliver(ended)
        return {"StatusCode": 200, "Payload": result}

    def deliver(self, event: dict[str, Any]) -> None:
        """EventBridge's invocation of step_callback with ``event`` (asynchronous on AWS: a failure
        is retried there, not the state machine's)."""
        call = Call("step_callback", event)
        self.calls.append(call)
        handler = importlib.import_module("handlers.step_callback").handler
        try:
            call.result = handler(event, Context(function_name="benchfleet-step-callback"))
        except Exception as e:
            call.error, call.result = type(e).__name__, str(e)[:500]

    # -- running --------------------------------------------------------------------------------
    def run(self, spec: dict[str, Any], *, timing: dict[str, Any] | None = None, name: str = "run",
            timeout_s: float = 90, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """One execution named ``name`` (the run id); ``extra`` adds input keys (``schedule``...)."""
        payload = {"spec": spec, "timing": {"ready_poll_s": 0, "cooldown_s": 0, **(timing or {})}, **(extra or {})}
        return self.execute(payload, name=name, timeout_s=timeout_s)

    def execute(self, payload: dict[str, Any], *, name: str, timeout_s: float = 90,
                state_machine_arn: str | None = None) -> dict[str, Any]:
        """One execution of exactly ``payload`` (nothing added: what a deployed producer sends)."""
        execution = self.sf.start_execution(stateMachineArn=state_machine_arn or self.arn, name=name,
                                            input=json.dumps(payload))["executionArn"]
        deadline = time.monotonic() + timeout_s
        # Polled every 50 ms at first, then less often (at most 0.5 s): a long run's every poll took
        # the interpreter from the executor's threads (a fifth of the CPU of a 10-target comparison).
        pause = 0.05
        while True:
            described = self.sf.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING":
                break
            assert time.monotonic() < deadline, "execution did not finish"
            time.sleep(pause)
            pause = min(0.5, pause * 1.25)
        described["history"] = self.history(execution)
        return described

    def history(self, execution: str) -> list[dict[str, Any]]:
        events, token = [], None
        while True:
            page = self.sf.get_execution_history(executionArn=execution, maxResults=1000,
                                                 **({"nextToken": token} if token else {}))
            events += page["events"]
            token = page.get("nextToken")
            if not token:
                return events

    def explain(self, result: dict[str, Any]) -> str:
        """For assertion messages: the execution's error and every handler that raised."""
        failed = [f"{c.module}: {c.error}: {c.result}" for c in self.calls if c.error]
        errors = [e for e in result["history"] if e["type"].endswith("Failed")]
        return json.dumps({"cause": result.get("cause"), "handler_errors": failed,
                           "failed_events": errors[:5]}, default=str, indent=1)[:6000]

    def calls_of(self, module: str) -> list[Call]:
        return [c for c in self.calls if c.module == module]


def setup_account(monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    subnets = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["AvailabilityZone"])[:3]
    vpc = subnets[0]["VpcId"]
    sg = ec2.create_security_group(GroupName="bf-targets", Description="targets", VpcId=vpc)["GroupId"]
    nodes_sg = ec2.create_security_group(GroupName="bf-cluster", Description="cluster nodes", VpcId=vpc)["GroupId"]
    proxy_sg = ec2.create_security_group(GroupName="bf-proxy", Description="cluster proxies", VpcId=vpc)["GroupId"]
    template = ec2.create_launch_template(LaunchTemplateName="bf-targets", LaunchTemplateData={
        "SecurityGroupIds": [sg], "MetadataOptions": {"HttpTokens": "required"}})["LaunchTemplate"]
    rds = boto3.client("rds", region_name=REGION)
    rds.create_db_subnet_group(DBSubnetGroupName="bf-db", DBSubnetGroupDescription="db",
                               SubnetIds=[s["SubnetId"] for s in subnets])
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    ts = boto3.client("timestream-write", region_name=REGION)
    ts.create_database(DatabaseName=DATABASE)
    for table in ("samples", "status_samples", "step_summaries", "cloud_metrics"):
        ts.create_table(DatabaseName=DATABASE, TableName=table)
    env = {"RESULTS_BUCKET": BUCKET, "RESULTS_STORE": "timestream", "TIMESTREAM_DATABASE": DATABASE,
           "SUBNET_IDS": ",".join(s["SubnetId"] for s in subnets), "CLIENT_SECURITY_GROUP_ID": sg,
           "SUBNET_ZONES": ",".join(s["AvailabilityZone"] for s in subnets),
           "CLUSTER_SECURITY_GROUP_ID": nodes_sg, "PROXY_SECURITY_GROUP_ID": proxy_sg,
           "DB_SECURITY_GROUP_ID": sg, "DB_SUBNET_GROUP_NAME": "bf-db", "AGENT_DOCUMENT_NAME": DOCUMENT,
           "LAUNCH_TEMPLATE_ID": template["LaunchTemplateId"],
           # ownership (cdk/lib/ownership.ts): the stack's identity and DB identifier prefix
           "BENCHFLEET_STACK": OWNER, "DB_IDENTIFIER_PREFIX": DB_PREFIX,
           "TARGET_INSTANCE_PROFILE_ARN": f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:instance-profile/bf"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)


OWNER = "Benchfleet@us-east-1"
DB_PREFIX = "bf2b97c5"

ENV = {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
       "AWS_SECRET_ACCESS_KEY": "testing", "POWERTOOLS_TRACE_DISABLED": "1",
       "POWERTOOLS_SERVICE_NAME": "benchfleet", "POWERTOOLS_METRICS_NAMESPACE": "benchfleet",
       "POWERTOOLS_LOG_LEVEL": "WARNING"}


@contextmanager
def offline_world() -> Iterator[Harness]:
    """A moto account with the state machine and the seam in place (tests/perf uses it too)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for k, v in ENV.items():
            monkeypatch.setenv(k, v)
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            clients.reset()
            setup_account(monkeypatch)
            with executing(Harness()) as h:
                yield h
            clients.reset()


def records_not_kept(table: TimestreamTable, records: list[dict[str, Any]]) -> None:
    """moto's Timestream table keeps every record written, about 8 KB each as moto holds them (11 GB
    for a 200-target comparison), and nothing offline reads them back: FaultProxy counts each
    write's records and table, tests/unit checks the records themselves. So a write still goes
    through botocore's validation and moto's parsing and answer, and its records are let go."""


def timestream_writer() -> Any:
    """The handlers' Timestream client as benchfleet.aws.clients makes it (its configuration: botocore
    does not check each value; FaultProxy still counts and bounds every request)."""
    return boto3.client("timestream-write", region_name=REGION, config=clients.config("timestream-write"))


def tags_by_lookup(resource: TaggedEC2Resource) -> list[dict[str, str]]:
    """moto's own answer to a resource's tags (DescribeTags filtered on its id, an exact match), by
    a lookup instead of a scan of every tag in the region: moto filters DescribeInstances on a tag
    with this call per instance, so each teardown by tag in a 600-host comparison scanned 600 hosts'
    tags 600 times (cubic in the targets over a run)."""
    if not resource.id:  # type: ignore[attr-defined]
        return []
    resource_id: str = resource.id  # type: ignore[attr-defined]
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [{"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
            for key, value in resource.ec2_backend.tags.get(resource_id, {}).items()]  # type: ignore[attr-defined]


# moto's executor parses every JSONPath at every use, building a new parser each time (a third of
# the ASL's evaluation in a large run): the definition's few hundred paths are parsed once each. A
# parsed path is only read when applied (``find``, ``update_or_create`` change the data, not the
# path), so sharing it between iterations changes nothing.
parse_path_ext = functools.lru_cache(maxsize=None)(jsonpath_ng.ext.parse)
parse_path = functools.lru_cache(maxsize=None)(jsonpath_ng.parse)


# moto's answer to each request redoes work whose result cannot change within a process, at a cost
# measured with cProfile over the handlers of tests/perf/cloud_scale.py (20 targets x 3): a backend's
# URL table is rebuilt per request (S3's after reloading its urls module: the module reads the
# environment, which a harness does not change), a response class's methods are listed with
# inspect.getmembers per request, and a Timestream write's JSON body is parsed again for each of its
# three parameters. Each is done once here; moto answers the same.
@functools.cache
def method_names_from_class(clazz: object) -> list[str]:
    return moto_utils.method_names_from_class(clazz)


def backend_urls(backend: BaseBackend) -> Any:
    """moto's URL table of ``backend``, built once (kept in the backend's own state, which moto's reset
    clears)."""
    if "_harness_urls" not in backend.__dict__:
        backend.__dict__["_harness_urls"] = URLS_UNCACHED.fget(backend)
    return backend.__dict__["_harness_urls"]


URLS_UNCACHED = BaseBackend.urls
LIST_OBJECTS_UNCACHED = S3Backend.list_objects


def timestream_param(self: TimestreamWriteResponse, param_name: str, if_none: Any = None) -> Any:
    """moto's _get_param of a JSON request, its body parsed once per request."""
    if getattr(self, "_parsed_for", None) is not self.body:
        self._parsed_for, self._parsed = self.body, json.loads(self.body) if self.body else {}
    return self._parsed.get(param_name, if_none)


GET_COMMAND_UNINDEXED = SimpleSystemManagerBackend.get_command_by_id


def command_by_id(self: SimpleSystemManagerBackend, command_id: str) -> Any:
    """moto's get_command_by_id by an index: moto scans every command of the region per lookup, and
    each step's command is looked up several times (the played agent, ListCommandInvocations,
    GetCommandInvocation): quadratic in the steps of a run (7,200 commands at 200 targets x 3). moto
    only appends commands; the index takes the new ones (the first of an id, as moto's scan finds it)
    and is kept in the backend's own state, which moto's reset clears. An unknown id: moto's error."""
    state, commands = self.__dict__, self._commands
    index = state.setdefault("_harness_commands", {})
    indexed = state.get("_harness_indexed", 0)
    if indexed > len(commands):  # not the list indexed: start again
        index.clear()
        indexed = 0
    for command in commands[indexed:]:
        index.setdefault(command.command_id, command)
    state["_harness_indexed"] = len(commands)
    found = index.get(command_id)
    return found if found is not None else GET_COMMAND_UNINDEXED(self, command_id)


def list_objects_by_prefix(self: S3Backend, bucket: Any, prefix: str | None, *args: Any, **kwargs: Any) -> Any:
    """moto's list_objects over the keys under ``prefix`` only: moto reads every key of the bucket
    per listing (a Python loop over each key's versions), and collect lists a step's output prefix
    once per step while the bucket holds every earlier step's objects: quadratic in the steps of a
    run (1.0 M keys read for 660 listings in a 20-target comparison, 100 times that at 200). The
    names are filtered as moto filters them, at C speed, and moto lists those."""
    if not prefix or not isinstance(getattr(bucket, "keys", None), dict):
        return LIST_OBJECTS_UNCACHED(self, bucket, prefix, *args, **kwargs)
    store = bucket.keys
    under = type(store)()
    # tuple(): the names copied in one step, as moto copies the store before reading it (an executor
    # thread may put an object meanwhile).
    for name in [k for k in tuple(dict.keys(store)) if k.startswith(prefix)]:
        versions = dict.get(store, name)
        if versions is not None:
            dict.__setitem__(under, name, versions)
    view = copy.copy(bucket)
    view.keys = under
    return LIST_OBJECTS_UNCACHED(self, view, prefix, *args, **kwargs)


def copy_state_data(value: Any) -> Any:
    """moto's copy.deepcopy of a state's data, at C speed: the executor deep-copies a state's input at
    every extraction, path and reset (several times per state, 16% of the CPU of a 10-target
    comparison in cProfile, copy.deepcopy's Python loop over every key). The data are JSON values (the
    execution's input, what a handler or the executor returned); a pickle round trip copies them as
    deepcopy does (shared references too); anything pickle cannot copy goes to deepcopy."""
    if type(value) in (dict, list):
        try:
            return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError):
            pass
    return copy.deepcopy(value)


# The modules of moto's executor that copy a state's data (not its components' declarations).
STATE_DATA_COPIERS = (asl_states, string_expression, result_path, execute_state, state_map)
STATE_DATA_COPY = types.SimpleNamespace(deepcopy=copy_state_data, copy=copy.copy)


@contextmanager
def executing(h: Harness) -> Iterator[Harness]:
    """moto's executor calls the handlers through ``h``; Retry back-off is recorded, not slept."""
    fake_time = types.SimpleNamespace(sleep=lambda s: h.sleeps.append(s))

    def wait(_self: Any, env: Any, wait_seconds: int) -> None:
        h.waits.append(wait_seconds)
        for during in h.on_wait:
            during(wait_seconds)

    with mock.patch.object(lambda_eval_utils, "_invoke_lambda_function", h.invoke), \
            mock.patch.object(json_path, "parse", parse_path_ext), \
            mock.patch.object(result_path, "parse", parse_path), \
            mock.patch.object(TimestreamTable, "write_records", records_not_kept), \
            mock.patch.object(TaggedEC2Resource, "get_tags", tags_by_lookup), \
            mock.patch.object(moto_responses, "method_names_from_class", method_names_from_class), \
            mock.patch.object(BaseBackend, "urls", property(backend_urls)), \
            mock.patch.object(TimestreamWriteResponse, "_get_param", timestream_param), \
            mock.patch.object(S3Backend, "list_objects", list_objects_by_prefix), \
            mock.patch.object(SimpleSystemManagerBackend, "get_command_by_id", command_by_id), \
            mock.patch.object(retrier_decl, "time", fake_time), \
            mock.patch.object(WaitFunction, "_wait_interval", wait), \
            as_strict_as_aws(h.payloads), ExitStack() as copiers:
        for module in STATE_DATA_COPIERS:
            copiers.enter_context(mock.patch.object(module, "copy", STATE_DATA_COPY))
        yield h


def cleared(h: Harness, *more_proxies: dict[str, FaultProxy]) -> Harness:
    """``h`` with the last test's faults, calls and recorded sleeps forgotten."""
    h.calls.clear()
    h.sleeps.clear()
    h.on_wait.clear()
    h.waits.clear()
    h.payloads.clear()
    h.agent.outcome.clear()
    h.agent.steal = False
    h.gaps.ami_requests.clear()
    for proxies in (h.proxies, *more_proxies):
        for proxy in proxies.values():
            proxy.faults.clear()
            proxy.calls.clear()
            proxy.records_per_call.clear()
            proxy.tables_per_call.clear()
    return h


@pytest.fixture(scope="module")
def _world():
    """One moto account and one state machine per test module (parsing the definition takes
    seconds); runs are told apart by their run id, which tags everything they create."""
    with offline_world() as h:
        yield h


@pytest.fixture
def harness(_world: Harness) -> Harness:
    """The module's harness with this test's faults, calls and recorded sleeps cleared."""
    return cleared(_world)


def spec(*, captured_step: bool = False, **overrides: Any) -> dict[str, Any]:
    """A three-target comparison. Its measured steps are 60 s cut from the captured one (samples and
    summary: ``fitted``), which is all a test of the control flow reads; ``captured_step``: as long
    as the captured step (FIXTURE_STEP_S), collected as captured, the server's status every second
    included, for the tests of what collect writes. A captured step cost collect ~1,700 Timestream
    records (19 WriteRecords) and 0.5-1.5 s; a 60 s one 60 records."""
    base: dict[str, Any] = {
        "name": "sm-test",
        "workload": {"name": "fixture-oltp", "test": "oltp_read_write", "tables": 2, "table_size": 2000,
                     "prepare_threads": 1, "warmup_s": 0, "threads": [1],
                     "duration_s": FIXTURE_STEP_S if captured_step else 60},
        "targets": [
            {"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large"},
            {"id": "rds-m6g", "kind": "rds", "instance_class": "db.m6g.large",
             "client": {"instance_type": "c6i.large"}},
            {"id": "aurora-r6g", "kind": "aurora", "instance_class": "db.r6g.large",
             "client": {"instance_type": "c7g.large"}},
        ],
    }
    base.update(overrides)
    return base


def run_instances(run_id: str, region: str = REGION, states: list[str] | None = None) -> list[dict[str, Any]]:
    """The run's EC2 instances in moto (every page: DescribeInstances answers 100 reservations at
    a time, fewer than a large comparison's hosts), optionally only those in ``states``."""
    filters = [{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]}]
    if states:
        filters.append({"Name": "instance-state-name", "Values": states})
    pages = boto3.client("ec2", region_name=region).get_paginator("describe_instances").paginate(Filters=filters)
    return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


def leftovers(run_id: str, region: str = REGION) -> list[str]:
    """Anything of the run still alive in moto: running/pending instances, EBS volumes (moto deletes
    a DeleteOnTermination volume with its instance), DB instances, clusters, a cluster's secrets."""
    rds = boto3.client("rds", region_name=region)
    found = [i["InstanceId"] for i in run_instances(run_id, region, ["pending", "running"])]
    volumes = boto3.client("ec2", region_name=region).get_paginator("describe_volumes").paginate(
        Filters=[{"Name": f"tag:{naming.TAG_RUN_ID}", "Values": [run_id]}])
    found += [v["VolumeId"] for page in volumes for v in page["Volumes"]]
    for db in rds.describe_db_instances()["DBInstances"]:
        if any(t["Key"] == naming.TAG_RUN_ID and t["Value"] == run_id for t in db.get("TagList", [])):
            found.append(db["DBInstanceIdentifier"])
    for cluster in rds.describe_db_clusters()["DBClusters"]:
        if any(t["Key"] == naming.TAG_RUN_ID and t["Value"] == run_id for t in cluster.get("TagList", [])):
            found.append(cluster["DBClusterIdentifier"])
    secrets = boto3.client("secretsmanager", region_name=region).list_secrets(
        Filters=[{"Key": "tag-value", "Values": [run_id]}])["SecretList"]
    found += [s["Name"] for s in secrets
              if any(t["Key"] == naming.TAG_RUN_ID and t["Value"] == run_id for t in s.get("Tags", []))]
    return found + parameter_groups(run_id, region)


def parameter_groups(run_id: str, region: str = REGION) -> list[str]:
    """The run's DB and DB cluster parameter groups still in moto."""
    rds = boto3.client("rds", region_name=region)
    groups = [(g["DBParameterGroupName"], g["DBParameterGroupArn"])
              for g in rds.describe_db_parameter_groups()["DBParameterGroups"]]
    groups += [(g["DBClusterParameterGroupName"], g["DBClusterParameterGroupArn"])
               for g in rds.describe_db_cluster_parameter_groups()["DBClusterParameterGroups"]]
    return [name for name, arn in groups
            if any(t["Key"] == naming.TAG_RUN_ID and t["Value"] == run_id
                   for t in rds.list_tags_for_resource(ResourceName=arn)["TagList"])]



def recording(harness: Harness) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(SendCommand requests, WriteRecords requests) of the next run, as sent."""
    sent: list[dict[str, Any]] = []
    written: list[dict[str, Any]] = []
    harness.proxies["ssm"].faults["send_command"] = lambda kw: sent.append(kw)
    harness.proxies["timestream-write"].faults["write_records"] = lambda kw: written.append(kw)
    return sent, written


@contextmanager
def slow_start(harness: Harness, *, not_ready: int) -> Iterator[None]:
    """Readiness answers "not yet" to the first ``not_ready`` checks of the run."""
    pings = {"n": 0}
    real = harness.proxies["ssm"].extra["describe_instance_information"]

    def slow_agent(**kw: Any) -> Any:
        pings["n"] += 1
        return {"InstanceInformationList": []} if pings["n"] <= not_ready else real(**kw)
    harness.proxies["ssm"].extra["describe_instance_information"] = slow_agent
    try:
        yield
    finally:
        harness.proxies["ssm"].extra["describe_instance_information"] = real
