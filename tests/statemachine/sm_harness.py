"""Offline executions of statemachines/benchmark-run.asl.json with moto's Step Functions executor.

The seam: moto's executor invokes every Lambda Task (direct function ARN or lambda:invoke alike)
through ``moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils.
_invoke_lambda_function(parameters, region, state_credentials)``, which would call moto's Lambda
backend and so Docker. We replace that one function: it maps the function ARN to
``handlers.<module>.handler`` and calls it in-process, returning what Lambda's Invoke returns
(``FunctionError: Unhandled`` and ``{"errorType", "errorMessage"}`` when the handler raises, so the
ASL's Retry/Catch see the exception's class name, as on AWS). Calls are serialised: a Lambda
process runs one invocation at a time, and Powertools' Metrics is process-global.

Everything else is real moto (EC2, RDS, SSM, S3, Secrets Manager, Timestream, CloudWatch) through the
handlers, except what moto lacks, faked in ``MotoGaps`` (sm_moto.py, with the stricter RDS and the fault
proxy): the public SSM parameter of Ubuntu AMIs, DescribeInstanceInformation (PingStatus),
ListCommandInvocations and DescribeDBEngineVersions. Run Command runs nothing in moto, so ``Agent``
(sm_agent.py) plays the agent: after each SendCommand it writes the captured real agent output
(tests/fixtures/agent; a TPC-C job's, tests/fixtures/agent-gotpc) where Run Command would, sets the
invocation's status and, as EventBridge would on the invocation's status change, invokes the real
step_callback handler with the event SSM sends (``ssm_invocation_event``; tests/synthesized checks it
matches the deployed rule's pattern), which completes the task "Start the step" waits on.
A hanging host sends none.

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

import functools
import importlib
import json
import re
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import boto3
import jsonpath_ng
import jsonpath_ng.ext
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core import responses as moto_responses
from moto.core.base_backend import BaseBackend
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.models.instances import InstanceBackend
from moto.s3.models import S3Backend
from moto.ssm.models import Command, SimpleSystemManagerBackend
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.asl.utils import json_path
from moto.timestreamwrite.models import TimestreamTable
from moto.timestreamwrite.responses import TimestreamWriteResponse
from sfn_limits import Payloads, as_strict_as_aws, size_of
from sm_agent import FIXTURE_STEP_S, Agent
from sm_moto import (
    STATE_DATA_COPIERS,
    STATE_DATA_COPY,
    Call,
    FaultProxy,
    MotoGaps,
    backend_urls,
    command_by_id,
    instances_of_targets,
    list_objects_by_prefix,
    method_names_from_class,
    no_storage_metrics,
    records_not_kept,
    reservations_of,
    tags_by_lookup,
    timestream_param,
    timestream_writer,
)
from sm_world import ASL, BUCKET, DATABASE, DB_PREFIX, DOCUMENT, ENV, HANDLERS, OWNER, REGION

from benchfleet.aws import clients
from benchfleet.plan import naming


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


# moto's executor parses every JSONPath at every use, building a new parser each time (a third of
# the ASL's evaluation in a large run): the definition's few hundred paths are parsed once each. A
# parsed path is only read when applied (``find``, ``update_or_create`` change the data, not the
# path), so sharing it between iterations changes nothing.
parse_path_ext = functools.lru_cache(maxsize=None)(jsonpath_ng.ext.parse)
parse_path = functools.lru_cache(maxsize=None)(jsonpath_ng.parse)


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
            mock.patch.object(Command, "_get_instance_ids_from_targets", instances_of_targets), \
            mock.patch.object(InstanceBackend, "get_reservations_by_instance_ids", reservations_of), \
            mock.patch.object(S3Backend, "get_cloudwatch_metrics", no_storage_metrics), \
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
