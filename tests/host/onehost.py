"""One booted target host that receives start_step's jobs through the synthesized document: what the
host tests of a single ec2 target share (the agent's phases, variants, a go-tpc workload)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from deployed import send_parameters, step_state
from hostfleet import Disks, Fleet
from machine import Machine
from moto import mock_aws
from runcommand import Invocation, RunCommand

BUCKET = "bf-results"  # the stack's output bucket, in moto


class Host:
    """A booted target with the document's runner: ``send`` posts a step of ``planned`` as start_step
    sends it (the step's output lands in moto S3), ``parameters`` what start_step would send."""

    def __init__(self, machine: Machine, runner: RunCommand, monkeypatch: pytest.MonkeyPatch,
                 planned: dict[str, Any], volume: str, instance_id: str, s3: Any, fleet: Fleet) -> None:
        self.machine, self.runner, self.monkeypatch, self.planned = machine, runner, monkeypatch, planned
        self.volume, self.instance_id, self.s3 = volume, instance_id, s3
        self.disks = fleet.disks[machine.name]
        self.sent = 0

    def parameters(self, step: str, target_id: str = "m6g") -> dict[str, Any]:
        state = step_state(self.planned, target_id, step, instance_id=self.instance_id)
        return send_parameters(state, self.monkeypatch, [self.volume])

    def send(self, step: str | None = None, parameters: dict[str, Any] | None = None) -> Invocation:
        """Run one step (or parameters made by ``parameters`` and edited) as Run Command would."""
        params = parameters if parameters is not None else self.parameters(step or "")
        self.sent += 1
        return self.runner.send(self.machine, instance_id=self.instance_id, command_id=f"cmd-{self.sent}",
                                parameters=params["Parameters"], bucket=params["OutputS3BucketName"],
                                prefix=params["OutputS3KeyPrefix"])


@contextlib.contextmanager
def booted_host(fleet: Fleet, run_command: RunCommand, name: str, planned: dict[str, Any], volume: str,
                instance_id: str = "i-0123456789abcdef0") -> Iterator[Host]:
    """A fresh host with one data volume, released afterwards (whatever the test did to it)."""
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        runner = RunCommand(run_command.document, run_command.bundle_zip, s3)
        machine = fleet.boot(name, disks=Disks([volume], array=False))
        try:
            yield Host(machine, runner, mp, planned, volume, instance_id, s3, fleet)
        finally:
            fleet.release(machine)
