"""Run Command on booted hosts for an offline execution (tests/statemachine/sm_harness.py): stands
where ``sm_agent.Agent`` plays the agent. After each SendCommand the command moto recorded (its
parameters, output bucket and prefix, as start_step sent them) runs on the booted host of its
instance through the synthesized document and bundle (runcommand.RunCommand), the invocation of the
runAgent step gets that step's status, and the status change SSM would send is returned for the
harness to deliver to step_callback.

Which host an instance is: ``host_of`` (a fresh host per instance, with the data volumes it was
launched with); a cluster's hosts are booted together (test_cluster_on_hosts.ClusterAgent)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import boto3
from hostfleet import Disks, Fleet
from machine import Machine
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ssm.models import ssm_backends
from runcommand import Invocation, RunCommand
from sm_agent import ssm_invocation_event
from sm_world import REGION

from benchfleet.aws.fleet import targets
from benchfleet.aws.steps import commands


@dataclass
class Sent:
    """One SendCommand as it ran: the step, the instance and its host, the document's invocation."""

    target: str
    step: str
    instance_id: str
    host: str
    invocation: Invocation
    seconds: float

    @property
    def status(self) -> str:
        return self.invocation.step(commands.AGENT_PLUGIN).status


class HostAgent:
    def __init__(self, fleet: Fleet, runner: RunCommand, env: dict[str, str] | None = None) -> None:
        self.fleet = fleet
        self.runner = runner
        self.env = env or {}  # added to the agent's environment (a stand-in's endpoint, credentials)
        self.hosts: dict[str, Machine] = {}
        self.where: dict[str, tuple[str, int]] = {}  # instance -> (target, repetition)
        self.commands: list[tuple[str, str, str, float]] = []  # (target, step, runAgent status, seconds)
        self.sent: list[Sent] = []

    def host_of(self, event: dict[str, Any], instance_id: str) -> Machine:
        """The instance's booted host: a new one, with its data volumes, for an instance not seen before."""
        if instance_id not in self.hosts:
            volumes = data_volumes(instance_id)
            self.where[instance_id] = (event["target"]["id"], event["repetition"])
            self.hosts[instance_id] = self.fleet.boot(event["target"]["id"],
                                                      disks=Disks(volumes, array=len(volumes) > 1))
        return self.hosts[instance_id]

    def ran(self, event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        instance_id = result["instance_id"]
        machine = self.host_of(event, instance_id)
        command = ssm_backends[DEFAULT_ACCOUNT_ID][REGION].get_command_by_id(result["command_id"])
        started = time.monotonic()
        inv = self.runner.send(machine, instance_id=instance_id, command_id=command.command_id,
                               parameters=command.parameters, bucket=command.output_s3_bucket_name,
                               prefix=command.output_s3_key_prefix, env=self.env)
        agent = inv.step(commands.AGENT_PLUGIN)
        seconds = time.monotonic() - started
        self.commands.append((event["target"]["id"], event["step"]["name"], agent.status, seconds))
        self.sent.append(Sent(event["target"]["id"], event["step"]["name"], instance_id, machine.name, inv, seconds))
        for invocation in command.invocations:
            invocation["Status"] = invocation["StatusDetails"] = agent.status
            invocation["ResponseCode"] = agent.code
            invocation["PluginName"] = commands.AGENT_PLUGIN
        # The invocation's own status is Failed when any of its steps failed (the CloudWatch agent's
        # install here): the event says so, and step_callback reads the runAgent step's.
        overall = "Failed" if any(s.status == "Failed" for s in inv.steps) else agent.status
        return ssm_invocation_event(command.command_id, instance_id, overall, command.document_name)


def data_volumes(instance_id: str) -> list[str]:
    """The ids of the data volumes RunInstances attached to the instance (moto), in stripe order."""
    (reservation,) = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[instance_id])[
        "Reservations"]
    mapped = {m["DeviceName"]: m["Ebs"]["VolumeId"] for m in reservation["Instances"][0]["BlockDeviceMappings"]}
    return [mapped[name] for name in targets.DATA_DEVICES if name in mapped]
