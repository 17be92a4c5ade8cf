"""Agent jobs exactly as the deployed pipeline builds them: Plan's own code expands the spec (the
prepare step's install, the cnf text), each step state is what the state machine hands StartStep,
the start_step handler makes the job (``jobs.job_for``) and the SendCommand parameters (JobJson
with its quote escaping, executionTimeout), captured instead of sent."""

from __future__ import annotations

import json
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID as ACCOUNT
from sm_harness import Context, function_arn

from benchfleet.aws import clients
from benchfleet.aws.events import StepState
from benchfleet.aws.fleet import targets
from benchfleet.aws.planning import runplan
from benchfleet.aws.regions import TargetRegions
from handlers import start_step


def plan(spec: dict[str, Any], run_id: str) -> dict[str, Any]:
    request = runplan.parse_request({"spec": spec, "run_id": run_id})
    return runplan.plan_run(request, regions=TargetRegions.of("us-east-1", ()))


def step_state(planned: dict[str, Any], target_id: str, step_name: str, *, repetition: int = 1,
               instance_id: str = "i-0123456789abcdef0", db: dict[str, Any] | None = None) -> StepState:
    target = next(t for t in planned["targets"] if t["target_id"] == target_id)
    step = next(s for s in target["steps"] if s["name"] == step_name)
    return StepState.model_validate({
        "run_id": planned["run_id"], "target": target["target"], "kind": target["kind"],
        "deadline": target["deadline"], "timing": target["timing"], "repetition": repetition,
        "workload": planned["workload"], "resources": {"kind": target["kind"], "instance_id": instance_id},
        "db": db, "step": step})


class _Instances:
    """An EC2 client whose DescribeInstances answers with the data volumes an instance was launched
    with (``volume_ids`` at targets.DATA_DEVICES, in order): what start_step reads for a prepare step."""

    def __init__(self, volume_ids: list[str]) -> None:
        self.volume_ids = volume_ids

    def describe_instances(self, InstanceIds: list[str]) -> dict[str, Any]:
        mappings = [{"DeviceName": name, "Ebs": {"VolumeId": vid, "DeleteOnTermination": True}}
                    for name, vid in zip(targets.DATA_DEVICES, self.volume_ids, strict=False)]
        return {"Reservations": [{"Instances": [{"InstanceId": InstanceIds[0], "BlockDeviceMappings": mappings}]}]}


class Capture:
    """An SSM client that keeps what SendCommand was given."""

    def __init__(self) -> None:
        self.sent: dict[str, Any] = {}

    def send_command(self, **kwargs: Any) -> dict[str, Any]:
        self.sent = kwargs
        return {"Command": {"CommandId": "captured"}}


def send_parameters(state: StepState, monkeypatch: Any, volume_ids: list[str] | None = None) -> dict[str, Any]:
    """SendCommand's keyword arguments for this step: the start_step handler itself, with the
    environment the stack gives it, sending through a capturing client. ``volume_ids``: the data
    volumes the instance has, as EC2 would describe them."""
    capture = Capture()
    for key, value in {"AGENT_DOCUMENT_NAME": "bf-agent", "RESULTS_BUCKET": "bf-results",
                       "POWERTOOLS_TRACE_DISABLED": "1", "POWERTOOLS_SERVICE_NAME": "benchfleet",
                       "POWERTOOLS_METRICS_NAMESPACE": "benchfleet", "POWERTOOLS_LOG_LEVEL": "WARNING",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
                       "TARGET_INSTANCE_PROFILE_ARN": f"arn:aws:iam::{ACCOUNT}:instance-profile/targets"}.items():
        monkeypatch.setenv(key, value)
    clients.override("ssm", lambda: capture)
    clients.override("ec2", lambda: _Instances(volume_ids or []))
    try:
        start_step.handler(json.loads(state.model_dump_json()),
                           Context("benchfleet-start-step", invoked_function_arn=function_arn("start_step"),
                                   aws_request_id="host-tier"))
    finally:
        clients.reset()
    return capture.sent


def job_of(sent: dict[str, Any]) -> dict[str, Any]:
    return json.loads(sent["Parameters"]["JobJson"][0])  # type: ignore[no-any-return]
