"""Run Command on a booted host: a Command document (schema 2.2) run the way the SSM agent runs it.

From the document as synthesized: every parameter checked against its ``allowedPattern`` (SSM
refuses the command otherwise) and defaulted; ``{{ name }}`` replaced in every input by its value;
parameters with ``interpolationType: ENV_VAR`` also exported as ``SSM_<name>`` (SSM agent 3.3.2746+);
each step's ``precondition`` evaluated for Linux; the steps run in order, a failed step followed by
the next unless it says ``onFailure: exit``; an ``aws:runShellScript`` step written to
``_script.sh`` in the agent's orchestration directory on the host and run there by ``sh`` as root
(``timeoutSeconds`` enforced), its stdout and stderr uploaded to
``<OutputS3KeyPrefix>/<command-id>/<instance-id>/awsrunShellScript/<step>/{stdout,stderr}``.

Replaced, because they need AWS (tests/host/README.md):
- ``aws:configurePackage`` (AmazonCloudWatchAgent from AWS's package store): reported Failed, as
  when the distributor cannot install it, so every host-tier run goes through the missing-metric path;
- ``aws:downloadContent`` of the bundle from S3: the synthesized bundle asset (cdk.out) zipped the
  way the CDK CLI publishes a directory asset, copied into ``destinationPath``;
- the upload to S3: a put to the S3 client given (moto in the tests).
"""

from __future__ import annotations

import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine import Machine

PARAM = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
ORCHESTRATION = "/var/lib/amazon/ssm/{instance}/document/orchestration/{command}/{step}"


class ParameterRejected(ValueError):
    """What SendCommand answers with InvalidParameters."""


@dataclass
class StepResult:
    name: str
    action: str
    status: str  # Success | Failed | TimedOut | Skipped
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


@dataclass
class Invocation:
    command_id: str
    steps: list[StepResult] = field(default_factory=list)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


def zip_asset(asset_dir: Path, out: Path) -> Path:
    """A directory asset as the CDK CLI uploads it: its contents, zipped, paths relative to it."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(asset_dir.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(asset_dir).as_posix())
    return out


def parameters_of(document: dict[str, Any], given: dict[str, list[str]]) -> dict[str, str]:
    declared = document.get("parameters", {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterRejected(f"parameters not in the document: {unknown}")
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in given:
            (value,) = given[name]
        elif "default" in spec:
            value = str(spec["default"])
        else:
            raise ParameterRejected(f"parameter {name} is required")
        pattern = spec.get("allowedPattern")
        if pattern and not re.search(pattern, value):
            raise ParameterRejected(f"parameter {name} does not match its allowedPattern {pattern}")
        values[name] = value
    return values


def substitute(value: Any, params: dict[str, str]) -> Any:
    if isinstance(value, str):
        return PARAM.sub(lambda m: params[m[1]] if m[1] in params else m[0], value)
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, params) for k, v in value.items()}
    return value


def _precondition_holds(step: dict[str, Any]) -> bool:
    condition = step.get("precondition")
    if not condition:
        return True
    (operator, (variable, expected)), = condition.items()
    return operator == "StringEquals" and variable == "platformType" and expected == "Linux"


class RunCommand:
    def __init__(self, document: dict[str, Any], bundle_zip: Path, s3: Any) -> None:
        self.document = document
        self.bundle_zip = bundle_zip
        self.s3 = s3

    def send(self, host: Machine, *, instance_id: str, command_id: str, parameters: dict[str, list[str]],
             bucket: str | None = None, prefix: str | None = None, env: dict[str, str] | None = None) -> Invocation:
        """Runs the document to its end on ``host``; ``env`` adds to the agent's environment what the
        instance would have (a stand-in endpoint, credentials instead of the instance role)."""
        params = parameters_of(self.document, parameters)
        exported = {f"SSM_{k}": v for k, v in params.items()
                    if self.document["parameters"][k].get("interpolationType") == "ENV_VAR"}
        invocation = Invocation(command_id)
        for raw in self.document["mainSteps"]:
            step = substitute(raw, params)
            if not _precondition_holds(step):
                invocation.steps.append(StepResult(step["name"], step["action"], "Skipped"))
                continue
            started = time.monotonic()
            result = self._run_step(host, step, instance_id, command_id, {**exported, **(env or {})})
            result.seconds = round(time.monotonic() - started, 3)
            invocation.steps.append(result)
            if bucket is not None and step["action"] == "aws:runShellScript":
                for stream in ("stdout", "stderr"):
                    text = getattr(result, stream)
                    if text:
                        key = f"{prefix}/{command_id}/{instance_id}/awsrunShellScript/{step['name']}/{stream}"
                        self.s3.put_object(Bucket=bucket, Key=key, Body=text.encode())
            if result.status != "Success" and step.get("inputs", {}).get("onFailure") == "exit":
                break
        return invocation

    def _run_step(self, host: Machine, step: dict[str, Any], instance_id: str, command_id: str,
                  env: dict[str, str]) -> StepResult:
        action, inputs = step["action"], step.get("inputs", {})
        if action == "aws:configurePackage":
            return StepResult(step["name"], action, "Failed", 1,
                              stderr=f"host tier: {inputs.get('name')} is not installable without AWS")
        if action == "aws:downloadContent":
            destination = host.path(inputs["destinationPath"])
            destination.mkdir(parents=True, exist_ok=True)
            (destination / self.bundle_zip.name).write_bytes(self.bundle_zip.read_bytes())
            return StepResult(step["name"], action, "Success")
        if action != "aws:runShellScript":
            raise NotImplementedError(f"the host tier does not run {action}")
        directory = ORCHESTRATION.format(instance=instance_id, command=command_id, step=step["name"])
        host.path(directory).mkdir(parents=True, exist_ok=True)
        host.path(directory + "/_script.sh").write_text("\n".join(inputs["runCommand"]) + "\n")
        timeout_s = int(inputs.get("timeoutSeconds") or 3600)
        # `timeout` inside the host: it kills the script's process group as the SSM agent would.
        out = host.run(f"exec timeout -s KILL {timeout_s} sh {directory}/_script.sh", env=env, cwd=directory,
                       timeout_s=timeout_s + 60)
        status = "Success" if out.returncode == 0 else "TimedOut" if out.returncode == 137 else "Failed"
        return StepResult(step["name"], action, status, out.returncode, out.stdout, out.stderr)
