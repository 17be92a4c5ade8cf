"""The template `cdk synth` deploys, read the way CloudFormation would read it.

``synthesize`` runs the repository's CDK CLI (the one package.json pins; no credentials needed)
into a directory and returns the stack template. ``Template.resolve`` turns the intrinsic functions
the CDK app emits (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, pseudo parameters) into the concrete values a
deployment in ACCOUNT/REGION would get, naming resources after their logical ids; an intrinsic it
does not know raises, so a check never silently reads a placeholder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CDK = REPO / "node_modules" / ".bin" / "cdk"
STACK = "Benchfleet"
ACCOUNT = "123456789012"
REGION = "us-east-1"
PSEUDO = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": "aws",
          "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": STACK, "AWS::NoValue": None}


def synthesize(out_dir: Path, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """``cdk synth`` of the app with cdk.json's context plus ``context``; the home stack's template."""
    return synthesize_all(out_dir, context)[STACK]


def synthesize_all(out_dir: Path, context: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Every stack's template by stack name: the home stack and, with ``targetRegions``, the regional
    stacks (``<STACK>-<region>``)."""
    if not CDK.exists():
        raise RuntimeError(f"{CDK} is missing: run `make node-deps` first")
    args = [str(CDK), "synth", "--quiet", "--no-notices", "--no-version-reporting", "--output", str(out_dir)]
    for key, value in (context or {}).items():
        args += ["--context", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CDK_DISABLE_VERSION_CHECK": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"cdk synth failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return templates_in(out_dir)


def templates_in(out_dir: Path) -> dict[str, dict[str, Any]]:
    """The templates a synth wrote into ``out_dir``, by stack name."""
    return {path.name.removesuffix(".template.json"): json.loads(path.read_text())
            for path in out_dir.glob("*.template.json")}


class Template:
    def __init__(self, template: dict[str, Any], out_dir: Path | None = None) -> None:
        self.template = template
        self.out_dir = out_dir  # the cdk.out it came from (its assets), when synthesized here
        self.resources: dict[str, dict[str, Any]] = template["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == resource_type}

    # -- intrinsics ---------------------------------------------------------------------------
    def _ref(self, name: str) -> Any:
        if name in PSEUDO:
            return PSEUDO[name]
        resource = self.resources.get(name)
        if resource is None:
            parameter = self.template.get("Parameters", {}).get(name)
            if parameter is None or "Default" not in parameter:
                raise KeyError(f"Ref {name}: no resource or parameter with a default")
            return parameter["Default"]
        kind = resource["Type"]
        if kind == "AWS::StepFunctions::StateMachine":
            return self.arn(name)
        if kind in ("AWS::IAM::Role", "AWS::S3::Bucket", "AWS::SSM::Document", "AWS::SSM::Parameter",
                    "AWS::Lambda::Function", "AWS::Logs::LogGroup"):
            props = resource.get("Properties", {})
            given = props.get("RoleName") or props.get("BucketName") or props.get("Name") \
                or props.get("FunctionName") or props.get("LogGroupName")
            return self.resolve(given) if given is not None else name.lower()
        return name

    def arn(self, name: str) -> str:
        """The ARN a resource of this logical id would get."""
        resource = self.resources[name]
        kind, props = resource["Type"], resource.get("Properties", {})
        base = f"arn:aws:{{}}:{REGION}:{ACCOUNT}:"
        if kind == "AWS::Lambda::Function":
            return base.format("lambda") + f"function:{self._ref(name)}"
        if kind == "AWS::StepFunctions::StateMachine":
            return base.format("states") + f"stateMachine:{self.resolve(props.get('StateMachineName', name))}"
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{ACCOUNT}:role/{self._ref(name)}"
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{self._ref(name)}"
        if kind == "AWS::Logs::LogGroup":
            return base.format("logs") + f"log-group:{self._ref(name)}:*"
        if kind == "AWS::SQS::Queue":
            return base.format("sqs") + name
        if kind == "AWS::SNS::Topic":
            return base.format("sns") + name
        if kind == "AWS::IAM::InstanceProfile":
            return f"arn:aws:iam::{ACCOUNT}:instance-profile/{name}"
        if kind == "AWS::Lambda::LayerVersion":
            return base.format("lambda") + f"layer:{name}:1"
        return base.format(kind.split("::")[1].lower()) + name

    def _get_att(self, name: str, attribute: str) -> Any:
        if attribute == "Arn":
            return self.arn(name)
        if attribute == "Name" and self.resources[name]["Type"] == "AWS::StepFunctions::StateMachine":
            return self.arn(name).rsplit(":", 1)[1]
        return f"{name}.{attribute}"

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its deployed value."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (fn, arg), = value.items()
            if fn == "Ref":
                return self._ref(arg)
            if fn == "Fn::GetAtt":
                name, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self._get_att(name, attribute)
            if fn == "Fn::Join":
                return arg[0].join(str(self.resolve(v)) for v in arg[1])
            if fn == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
                return re.sub(r"\$\{([^}!]+)\}", lambda m: str(
                    variables[m[1]] if m[1] in variables else self._sub_name(m[1])), text)
            if fn == "Fn::Select":
                return self.resolve(arg[1])[int(arg[0])]
            if fn == "Fn::GetAZs":  # the region's zones as AWS lists them (a new VPC's subnets pick the first ones)
                return [f"{REGION}{zone}" for zone in "abcdef"]
            if fn == "Fn::Split":
                return str(self.resolve(arg[1])).split(arg[0])
            if fn.startswith("Fn::"):
                raise NotImplementedError(f"intrinsic {fn} is not resolved by tests/synthesized/synth.py")
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub_name(self, name: str) -> Any:
        if "." in name:
            resource, attribute = name.split(".", 1)
            return self._get_att(resource, attribute)
        return self._ref(name)

    # -- what the checks read -------------------------------------------------------------------
    def state_machine_definitions(self) -> dict[str, dict[str, Any]]:
        """Each state machine's definition as Step Functions receives it: DefinitionString with
        DefinitionSubstitutions applied."""
        out = {}
        for name, resource in self.of_type("AWS::StepFunctions::StateMachine").items():
            props = resource["Properties"]
            text = self.resolve(props["DefinitionString"])
            subs = {k: str(self.resolve(v)) for k, v in props.get("DefinitionSubstitutions", {}).items()}
            text = re.sub(r"\$\{([A-Za-z0-9_]+)\}", lambda m, subs=subs: subs.get(m[1], m[0]), text)
            out[name] = json.loads(text)
        return out
