"""``benchfleet doctor --remote`` against moto, with a deployed-stack stand-in built from the synthesized
template (issue 30 item 3): the stack with the outputs the template resolves to, and the resources they
name (results bucket, state machine with its deployed definition, Glue database, Athena workgroup, agent
document), made in moto; the API answered by the real api Lambda with the template's environment
behind a local HTTP server that, like API Gateway with IAM auth, refuses an unsigned request.

What moto lacks is answered here and said so: Canonical's public AMI parameters (sm_moto.MotoGaps),
the EC2 vCPU quota (moto's Service Quotas knows VPC quotas only), the account's default EBS key
(moto has no GetEbsDefaultKmsKeyId) and the AWS managed aws/ebs key (moto's DescribeKey calls every
key customer managed)."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_harness import for_moto
from sm_moto import MotoGaps
from sm_world import ENV

from benchfleet.aws import clients
from benchfleet.cli import doctor
from benchfleet.cli.main import main
from benchfleet.spec.loading import parse_spec

REGION = "us-east-1"
QUOTA = {"value": 128.0}  # the account's On-Demand Standard vCPUs (ServiceQuotas, below)


class Quotas:
    """GetServiceQuota of the EC2 vCPU quota (moto has only VPC's)."""

    def get_service_quota(self, ServiceCode: str, QuotaCode: str) -> dict[str, Any]:
        assert (ServiceCode, QuotaCode) == doctor.EC2_STANDARD_VCPU_QUOTA
        return {"Quota": {"ServiceCode": ServiceCode, "QuotaCode": QuotaCode, "Value": QUOTA["value"]}}


EBS_KEY = {"id": "alias/aws/ebs"}  # the account's default EBS key (GetEbsDefaultKmsKeyId, below)


class Ec2Gaps:
    """moto's EC2, with GetEbsDefaultKmsKeyId answered from EBS_KEY."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def get_ebs_default_kms_key_id(self) -> dict[str, Any]:
        return {"KmsKeyId": EBS_KEY["id"]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class KmsGaps:
    """moto's KMS, with the AWS managed aws/ebs key described as AWS's (what a fresh account has)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def describe_key(self, KeyId: str) -> dict[str, Any]:
        if KeyId == "alias/aws/ebs":
            return {"KeyMetadata": {"Arn": f"arn:aws:kms:{REGION}:123456789012:key/aws-ebs", "KeyManager": "AWS"}}
        return dict(self.real.describe_key(KeyId=KeyId))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


PARAMETER_GROUPS = {"DBParameterGroups": 3, "DBClusterParameterGroups": 2}  # used, of 50 each


class RdsGaps:
    """moto's RDS, with DescribeAccountAttributes (moto lacks it) answering the parameter group quotas."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def describe_account_attributes(self) -> dict[str, Any]:
        return {"AccountQuotas": [{"AccountQuotaName": k, "Used": v, "Max": 50} for k, v in PARAMETER_GROUPS.items()]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def factory(service: str, region: str | None) -> Any:
    real = boto3.client(service, region_name=region or REGION)
    if service == "service-quotas":
        return Quotas()
    if service == "ec2":
        return Ec2Gaps(real)
    if service == "kms":
        return KmsGaps(real)
    if service == "rds":
        return RdsGaps(real)
    if service == "ssm":
        return MotoGaps(region or REGION).ssm(real)
    return real


class SignedApi(BaseHTTPRequestHandler):
    """API Gateway with IAM auth in front of the real api Lambda: unsigned requests get 403."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if not self.headers.get("Authorization", "").startswith("AWS4-HMAC-SHA256 "):
            self._send(403, {"message": "Missing Authentication Token"})
            return
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()} or None
        path = url.path.removeprefix("/prod")
        response = importlib.import_module("handlers.api").handler({
            "resource": path, "path": path, "httpMethod": "GET", "headers": {}, "multiValueHeaders": {},
            "queryStringParameters": query, "multiValueQueryStringParameters": None, "pathParameters": None,
            "stageVariables": None, "isBase64Encoded": False, "body": None,
            "requestContext": {"resourcePath": path, "httpMethod": "GET", "stage": "prod", "requestId": "r",
                               "identity": {"sourceIp": "127.0.0.1"}}}, None)
        self._send(response["statusCode"], json.loads(response["body"] or "{}"))

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def deployed(synthesized: Any) -> Iterator[dict[str, str]]:
    """The stack as `cdk deploy` of the synthesized template would leave it, in moto; its outputs."""
    t = synthesized
    outputs = {k: str(t.resolve(v["Value"])) for k, v in t.template["Outputs"].items()}
    (api_fn,) = [f for f in t.of_type("AWS::Lambda::Function").values()
                 if f["Properties"].get("Handler") == "handlers.api.handler"]
    # The template's environment, but the asset's data where this checkout has it (/var/task is Lambda's).
    api_env = {k: str(v) for k, v in t.resolve(api_fn["Properties"]["Environment"]["Variables"]).items()
               if not str(v).startswith("/var/task")}
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        for k, v in {**ENV, **api_env}.items():
            mp.setenv(k, v)
        clients.reset()
        cfn = boto3.client("cloudformation", region_name=REGION)
        cfn.create_stack(StackName="Benchfleet", TemplateBody=json.dumps({
            # moto cannot create the template's resources: one stands in, the outputs are the template's.
            "Resources": {"Deployed": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
            "Outputs": {k: {"Value": v} for k, v in outputs.items()}}))
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=outputs["ResultsBucketName"])
        (definition,) = t.state_machine_definitions().values()
        role = boto3.client("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name=outputs["StateMachineArn"].rsplit(":", 1)[1], definition=for_moto(json.dumps(definition)),
            roleArn=role)
        boto3.client("glue", region_name=REGION).create_database(DatabaseInput={"Name": outputs["GlueDatabase"]})
        boto3.client("athena", region_name=REGION).create_work_group(Name=outputs["AthenaWorkGroup"])
        (document,) = t.of_type("AWS::SSM::Document").values()
        boto3.client("ssm", region_name=REGION).create_document(
            Name=outputs["AgentDocumentName"], DocumentType="Command", DocumentFormat="JSON",
            Content=json.dumps(t.resolve(document["Properties"]["Content"])))
        server = ThreadingHTTPServer(("127.0.0.1", 0), SignedApi)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        mp.setenv("BENCHFLEET_API_URL", f"http://127.0.0.1:{server.server_port}/prod/")
        mp.setenv("BENCHFLEET_STACK", "Benchfleet")
        try:
            yield outputs
        finally:
            server.shutdown()
            clients.reset()


def run(**kw: Any) -> dict[str, doctor.Check]:
    """The checks by name; the API at the stand-in ($BENCHFLEET_API_URL), signed with the env's credentials."""
    import os

    args = {"api_url": os.environ["BENCHFLEET_API_URL"], "credentials": boto3.session.Session().get_credentials(),
            **kw}
    return {c.name: c for c in doctor.remote_checks(factory, stack="Benchfleet", region=REGION, **args)}


def test_a_healthy_deployment_passes_every_check(deployed: dict[str, str], capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    checks = run()
    assert {name: c.status for name, c in checks.items()} == {
        "credentials": "ok", "stack": "ok", "outputs": "ok", "state machine": "ok", "results bucket": "ok",
        "record store": "ok", "api": "ok", f"agent document ({REGION})": "ok", f"vCPU quota ({REGION})": "ok",
        f"Ubuntu AMIs ({REGION})": "ok", f"default EBS key ({REGION})": "ok", f"instance types ({REGION})": "ok",
        f"parameter groups ({REGION})": "ok", f"prices ({REGION})": "ok"}
    assert checks[f"parameter groups ({REGION})"].detail == \
        "DB parameter groups 3 of 50; DB cluster parameter groups 2 of 50"
    assert "a signed GET /runs answered 200" in checks["api"].detail
    cap = deployed["MaxVcpusPerRegion"]
    assert f"128 On-Demand Standard vCPUs, cap {cap}" in checks[f"vCPU quota ({REGION})"].detail
    # The CLI says the same and exits 0; the canary's instance type was the one checked.
    monkeypatch.setattr(doctor, "local_checks", lambda home: [])
    monkeypatch.setattr(doctor, "session_clients", lambda region: (factory, boto3.session.Session().get_credentials()))
    assert main(["doctor", "--remote", "--format", "json"]) == 0
    assert {c["status"] for c in json.loads(capsys.readouterr().out)} == {"ok"}


def test_what_would_fail_is_named_with_its_fix_and_exits_1(deployed: dict[str, str],
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "local_checks", lambda home: [])
    monkeypatch.setattr(doctor, "session_clients", lambda region: (factory, boto3.session.Session().get_credentials()))
    monkeypatch.setitem(QUOTA, "value", 16.0)  # a fresh account's quota below the deployment's cap
    checks = run()
    quota = checks[f"vCPU quota ({REGION})"]
    assert quota.status == "fail"
    assert f"below the deployment's cap of {deployed['MaxVcpusPerRegion']} (maxVcpusPerRegion)" in quota.detail
    assert "-c maxVcpusPerRegion=16" in quota.fix
    monkeypatch.setitem(QUOTA, "value", 128.0)
    # A spec whose instance type this region does not offer, or that the price tables do not cover.
    targets = parse_spec({"name": "s", "workload": "oltp-read-only-sweep", "targets": [
        {"id": "a", "kind": "ec2", "instance_type": "m6i.large"},
        {"id": "b", "kind": "ec2", "instance_type": "m6i.large", "region": "eu-west-1"}]}, "s").targets
    assert doctor.spec_instance_types(targets, REGION) == {REGION: {"m6i.large"}, "eu-west-1": {"m6i.large"}}
    checks = run(instance_types={REGION: {"m6i.large", "x9z.huge"}})
    offered = checks[f"instance types ({REGION})"]
    assert offered.status == "fail" and "x9z.huge" in offered.detail
    assert checks[f"prices ({REGION})"].status == "fail"
    # The stand-in refuses what API Gateway with IAM auth refuses: an unsigned request.
    import os
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(os.environ["BENCHFLEET_API_URL"] + "runs")
    assert refused.value.code == 403
    # The record store gone, then the stack itself.
    glue = boto3.client("glue", region_name=REGION)
    glue.delete_database(Name=deployed["GlueDatabase"])
    try:
        assert run()["record store"].status == "fail"
        assert main(["doctor", "--remote"]) == 1
        assert "would fail: record store" in capsys.readouterr().out
    finally:
        glue.create_database(DatabaseInput={"Name": deployed["GlueDatabase"]})
    # Issue 41 item 15: the account's default EBS key customer managed: every encrypted launch needs grants on
    # it that provision's role lacks. Named, with what to grant, and doctor fails.
    key = boto3.client("kms", region_name=REGION).create_key(Description="the account's EBS key")["KeyMetadata"]
    monkeypatch.setitem(EBS_KEY, "id", key["KeyId"])
    ebs = run()[f"default EBS key ({REGION})"]
    assert ebs.status == "fail" and key["Arn"] in ebs.detail and "customer managed" in ebs.detail
    assert "Benchfleet-provision" in ebs.fix and "kms:CreateGrant" in ebs.fix and "kms:ReEncrypt*" in ebs.fix
    assert main(["doctor", "--remote"]) == 1
    assert "would fail: default EBS key" in capsys.readouterr().out
    monkeypatch.setitem(EBS_KEY, "id", "alias/aws/ebs")
    # Issue 41 item 12: 50 DB cluster parameter groups (not adjustable) all used: every Aurora repetition's
    # provision would wait on the quota, then fail.
    monkeypatch.setitem(PARAMETER_GROUPS, "DBClusterParameterGroups", 50)
    groups = run()[f"parameter groups ({REGION})"]
    assert groups.status == "fail" and "DB cluster parameter groups 50 of 50" in groups.detail
    assert "not adjustable" in groups.fix
    monkeypatch.setitem(PARAMETER_GROUPS, "DBClusterParameterGroups", 2)
    missing = doctor.remote_checks(factory, stack="NoSuchStack", region=REGION)
    assert [(c.name, c.status) for c in missing] == [("credentials", "ok"), ("stack", "fail")]
    assert "npx cdk deploy" in missing[-1].fix
