"""``benchfleet doctor``: what would fail, found before anything is spent.

Here (no ``--remote``): what a local run needs (sysbench, a MariaDB server, a writable data dir), what
deploying needs (Node.js 20.19 or later), and whether the Debian packages measured with (MariaDB,
sysbench, Galera, HAProxy) are the versions the test suite was last green with (.ci/system-versions.txt).
With ``--remote``: the deployed stack and the account it is in, as the user's own credentials see them:

- the stack (complete), its outputs, the state machine, the results bucket, the record store (Glue and
  the Athena workgroup, or the Timestream database, which accounts new since 2025-06-20 cannot have),
  the API answering a signed request;
- per region a target may run in (the home region and ``TargetRegions``): the agent document, the
  account's EC2 On-Demand vCPU quota against the deployment's cap (MaxVcpusPerRegion: waves are planned
  within the cap, so a quota below it makes RunInstances refuse hosts mid-run), Ubuntu's AMI for both
  architectures, the instance types a spec (or the canary) uses being offered, and the price tables
  covering the region (a target there is refused otherwise);
- the QuickSight principal, when the stack has dashboards.

Each check says what to fix; ``run`` returns them, the CLI exits 1 when any failed. AWS clients come
from ``client(service, region)``, so tests run every check against moto.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from benchfleet.spec.documents import repo_root

Status = Literal["ok", "warn", "fail"]
ClientFactory = Callable[[str, str | None], Any]

# The quota "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", in vCPUs.
EC2_STANDARD_VCPU_QUOTA = ("ec2", "L-1216C47A")
NODE_MINIMUM = (20, 19)
# What a working deployment's stack outputs (benchfleet-stack.ts).
REQUIRED_OUTPUTS = ("ApiUrl", "ResultsBucketName", "StateMachineArn", "AgentDocumentName", "MaxVcpusPerRegion",
                    "MaxHostsPerRegion", "TargetRegions")
STABLE_STACK = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")
# The canary's host (workloads/comparisons/canary.yaml): checked in every region when no spec is given.
CANARY_INSTANCE_TYPE = "t4g.small"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def failed(checks: Iterable[Check]) -> list[Check]:
    return [c for c in checks if c.status == "fail"]


# ---- here ------------------------------------------------------------------------------------------

def _version(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if done.returncode == 0 and text else None


def local_checks(home: Path, which: Callable[[str], str | None] = shutil.which) -> list[Check]:
    """What a local run, and deploying, need on this machine."""
    checks = []
    sysbench = which("sysbench")
    checks.append(Check("sysbench", "ok", _version([sysbench, "--version"]) or sysbench) if sysbench else
                  Check("sysbench", "fail", "not on PATH", "install it: apt-get install sysbench (make demo does)"))
    server = which("mariadbd") or which("mysqld")
    installer = which("mariadb-install-db") or which("mysql_install_db")
    checks.append(Check("database server", "ok", f"{server}, {installer}") if server and installer else
                  Check("database server", "fail", "no mariadbd / mariadb-install-db on PATH",
                        "install it: apt-get install mariadb-server (make demo does)"))
    probe = home if home.exists() else home.parent
    checks.append(Check("data dir", "ok", str(home)) if os.access(probe, os.W_OK) else
                  Check("data dir", "fail", f"{home} is not writable", "set BENCHFLEET_HOME to a writable directory"))
    node = which("node")
    version = _version([node, "--version"]) if node else None
    numbers = tuple(int(p) for p in (version or "v0.0").lstrip("v").split(".")[:2] if p.isdigit())
    checks.append(
        Check("node (to deploy)", "ok", version or "") if version and numbers >= NODE_MINIMUM else
        Check("node (to deploy)", "warn", version or "not on PATH",
              f"only to deploy (npx cdk deploy): install Node.js {'.'.join(map(str, NODE_MINIMUM))} or later"))
    checks.append(Check("python", "ok", sys.version.split()[0]))
    checks.append(system_packages_check(repo_root() / ".ci" / "system-versions.txt"))
    return checks


def dpkg_versions(packages: Iterable[str]) -> dict[str, str]:
    """Installed Debian package versions (absent packages are left out)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Status}\\n", *packages],
                             capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    rows = (line.split() for line in out.splitlines())
    return {r[0]: r[1] for r in rows if len(r) == 3 and r[2] == "installed"}


def system_packages_check(recorded: Path,
                          installed: Callable[[Iterable[str]], dict[str, str]] = dpkg_versions) -> Check:
    """A warning (never a failure) when an installed package differs from the version the suite was last
    green with: its figures may differ from earlier runs' for that reason alone, and the fingerprint
    records the server and sysbench version of every run so such runs can be told apart."""
    name = "debian packages"
    try:
        lines = recorded.read_text().splitlines()
    except OSError:
        return Check(name, "warn", f"{recorded} not found: the versions the suite was green with are unknown")
    want = dict(line.split(None, 1) for line in lines if line.strip() and not line.startswith("#"))
    have = installed(want)
    differ = [f"{p} {have[p]} (suite green with {v})" for p, v in want.items() if p in have and have[p] != v.strip()]
    if differ:
        return Check(name, "warn", "; ".join(differ),
                     "figures may differ from runs made with the earlier versions; after a green `make test` "
                     "here, `make system-versions` records these")
    missing = [p for p in want if p not in have]
    detail = "as the suite was last green with" + (f" ({', '.join(missing)} not installed)" if missing else "")
    return Check(name, "ok", detail)


# ---- the deployment ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Deployment:
    """What the stack's outputs say about it."""

    stack: str
    region: str
    outputs: dict[str, str]

    @property
    def target_regions(self) -> list[str]:
        listed = [r for r in self.outputs.get("TargetRegions", "").split(",") if r]
        return list(dict.fromkeys([self.region, *listed]))

    def cap(self, key: str) -> int | None:
        value = self.outputs.get(key, "")
        return int(value) if value.isdigit() else None


def _error(e: Exception) -> str:
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        return f"{err.get('Code', type(e).__name__)}: {err.get('Message', '')}".strip()
    return f"{type(e).__name__}: {e}"


def _stack(client: ClientFactory, stack: str, region: str) -> tuple[Check, Deployment | None]:
    try:
        found = client("cloudformation", region).describe_stacks(StackName=stack)["Stacks"]
    except Exception as e:  # botocore errors: no credentials, no such stack, no network
        return Check("stack", "fail", f"{stack} in {region}: {_error(e)}",
                     "deploy it (npx cdk deploy), or name it: --stack NAME / $BENCHFLEET_STACK"), None
    status = found[0].get("StackStatus", "")
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in found[0].get("Outputs") or []}
    deployment = Deployment(stack, region, outputs)
    if status not in STABLE_STACK:
        return Check("stack", "fail", f"{stack} is {status}", "wait for the deployment to finish, or redeploy"), \
            deployment
    return Check("stack", "ok", f"{stack} in {region}: {status}"), deployment


def _outputs(d: Deployment) -> Check:
    missing = [k for k in REQUIRED_OUTPUTS if k not in d.outputs]
    store = ("GlueDatabase", "AthenaWorkGroup") if "TimestreamDatabase" not in d.outputs else ("TimestreamDatabase",)
    missing += [k for k in store if k not in d.outputs]
    if missing:
        return Check("outputs", "fail", f"missing {', '.join(missing)}",
                     "redeploy with this checkout (npx cdk deploy): the stack predates them")
    return Check("outputs", "ok", ", ".join(sorted(d.outputs)))


def _state_machine(client: ClientFactory, d: Deployment) -> Check:
    arn = d.outputs.get("StateMachineArn", "")
    try:
        status = client("stepfunctions", d.region).describe_state_machine(stateMachineArn=arn).get("status")
    except Exception as e:
        return Check("state machine", "fail", f"{arn}: {_error(e)}", "redeploy the stack")
    return Check("state machine", "ok" if status == "ACTIVE" else "fail", f"{arn.rsplit(':', 1)[-1]}: {status}",
                 "" if status == "ACTIVE" else "redeploy the stack")


def _bucket(client: ClientFactory, d: Deployment) -> Check:
    bucket = d.outputs.get("ResultsBucketName", "")
    try:
        client("s3", d.region).head_bucket(Bucket=bucket)
    except Exception as e:
        return Check("results bucket", "fail", f"{bucket}: {_error(e)}", "redeploy the stack")
    return Check("results bucket", "ok", bucket)


def _store(client: ClientFactory, d: Deployment) -> Check:
    if "TimestreamDatabase" in d.outputs:
        name = d.outputs["TimestreamDatabase"]
        try:
            client("timestream-write", d.region).describe_database(DatabaseName=name)
        except Exception as e:
            return Check("record store", "fail", f"Timestream database {name}: {_error(e)}",
                         "Timestream for LiveAnalytics is closed to accounts new since 2025-06-20: redeploy with "
                         "the default record store (-c resultsStore=athena)")
        return Check("record store", "ok", f"Timestream database {name}")
    database, workgroup = d.outputs.get("GlueDatabase", ""), d.outputs.get("AthenaWorkGroup", "")
    try:
        client("glue", d.region).get_database(Name=database)
        state = client("athena", d.region).get_work_group(WorkGroup=workgroup)["WorkGroup"].get("State")
    except Exception as e:
        return Check("record store", "fail", f"Glue {database} / Athena {workgroup}: {_error(e)}", "redeploy the stack")
    if state != "ENABLED":
        return Check("record store", "fail", f"Athena workgroup {workgroup} is {state}", "enable the workgroup")
    return Check("record store", "ok", f"Glue database {database}, Athena workgroup {workgroup}")


def _api(d: Deployment, api_url: str | None, credentials: Any) -> Check:
    from benchfleet.cli import remote

    try:
        url = remote.resolve_api_url(api_url or d.outputs.get("ApiUrl"))
        status, _, body = remote.request("GET", url, "runs", query={"limit": 1}, credentials=credentials,
                                         region=d.region, timeout_s=15, retries=1)
    except remote.RemoteError as e:
        return Check("api", "fail", str(e), "check the network and your AWS credentials")
    except OSError as e:
        return Check("api", "fail", f"{api_url or d.outputs.get('ApiUrl')}: {e}", "check the network")
    if status in (401, 403):
        return Check("api", "fail", f"GET /runs answered {status}",
                     "your credentials need execute-api:Invoke on the API (it uses IAM authorisation)")
    if status != 200:
        return Check("api", "fail", f"GET /runs answered {status}: {body[:200]!r}", "see the api Lambda's log")
    return Check("api", "ok", f"{url}: a signed GET /runs answered 200")


def _document(client: ClientFactory, d: Deployment, region: str) -> Check:
    name = d.outputs.get("AgentDocumentName", "")
    try:
        status = client("ssm", region).describe_document(Name=name)["Document"].get("Status")
    except Exception as e:
        return Check(f"agent document ({region})", "fail", f"{name}: {_error(e)}",
                     f"deploy the region's stack: npx cdk deploy --all -c targetRegions=...{region}")
    return Check(f"agent document ({region})", "ok" if status == "Active" else "fail", f"{name}: {status}")


def _quota(client: ClientFactory, d: Deployment, region: str) -> Check:
    cap = d.cap("MaxVcpusPerRegion")
    service, code = EC2_STANDARD_VCPU_QUOTA
    try:
        quota = client("service-quotas", region).get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    except Exception as e:
        return Check(f"vCPU quota ({region})", "warn", f"could not read it: {_error(e)}",
                     "allow servicequotas:GetServiceQuota, or compare the quota by hand (Service Quotas console)")
    value = int(float(quota.get("Value", 0)))
    if cap is not None and value < cap:
        return Check(f"vCPU quota ({region})", "fail",
                     f"On-Demand Standard vCPUs {value}, below the deployment's cap of {cap} (maxVcpusPerRegion): "
                     "a wave at the cap would be refused hosts",
                     f"request a quota of at least {cap}, or redeploy with -c maxVcpusPerRegion={value}")
    return Check(f"vCPU quota ({region})", "ok", f"{value} On-Demand Standard vCPUs, cap {cap}")


# What a principal launching encrypted volumes needs on their KMS key (EBS User Guide, "Requirements for
# Amazon EBS encryption"); AWS managed keys (aws/ebs) grant it to every principal of the account.
EBS_KEY_ACTIONS = ("kms:CreateGrant", "kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKeyWithoutPlaintext",
                   "kms:ReEncrypt*")


def _ebs_key(client: ClientFactory, stack: str, region: str) -> Check:
    """The account's default EBS key in ``region``: targets' volumes are encrypted with it (provision gives
    no KmsKeyId). A customer managed key needs grants the provision role lacks: launches fail, minutes
    into a run, unless its key policy allows them."""
    name = f"default EBS key ({region})"
    try:
        key_id = client("ec2", region).get_ebs_default_kms_key_id()["KmsKeyId"]
        meta = client("kms", region).describe_key(KeyId=key_id)["KeyMetadata"]
    except Exception as e:
        return Check(name, "warn", f"could not read it: {_error(e)}",
                     "allow ec2:GetEbsDefaultKmsKeyId and kms:DescribeKey, or check the key by hand (EC2 console, "
                     "EBS encryption)")
    arn = meta.get("Arn", key_id)
    if meta.get("KeyManager") != "CUSTOMER":
        return Check(name, "ok", f"{arn} (AWS managed)")
    role = f"{stack}-provision"  # cdk/lib/naming.ts lambdaRoleName
    return Check(name, "fail", f"{arn} is customer managed: encrypted volumes launched with it need grants the "
                               f"provision role {role} does not have, so every EC2 target would fail to launch",
                 f"allow {role} {', '.join(EBS_KEY_ACTIONS)} on {arn} in its key policy (kms:CreateGrant with "
                 "kms:GrantIsForAWSResource true), or reset the default: aws ec2 reset-ebs-default-kms-key-id "
                 f"--region {region}")


# RDS quotas (DescribeAccountAttributes) a run's RDS/Aurora repetition takes one of each: its DB parameter
# group, and an Aurora one's DB cluster parameter group (50 each by default; the cluster one not adjustable).
PARAMETER_GROUP_QUOTAS = (("DBParameterGroups", "DB parameter groups"),
                          ("DBClusterParameterGroups", "DB cluster parameter groups"))


def _parameter_groups(client: ClientFactory, region: str) -> Check:
    name = f"parameter groups ({region})"
    try:
        quotas = {q["AccountQuotaName"]: q
                  for q in client("rds", region).describe_account_attributes().get("AccountQuotas", [])}
    except Exception as e:
        return Check(name, "warn", f"could not read the RDS quotas: {_error(e)}",
                     "allow rds:DescribeAccountAttributes, or compare the groups with the quotas by hand")
    counts, full = [], []
    for key, label in PARAMETER_GROUP_QUOTAS:
        if key in quotas:
            used, most = int(quotas[key].get("Used", 0)), int(quotas[key].get("Max", 0))
            counts.append(f"{label} {used} of {most}")
            if used >= most:
                full.append(label)
    if full:
        return Check(name, "fail", f"{'; '.join(counts)}: no room for the {' and '.join(full)} each RDS or "
                                   "Aurora repetition creates (provision would wait, then fail)",
                     "delete groups nothing uses, or request a higher DB parameter group quota (the DB cluster "
                     "parameter group quota is not adjustable)")
    return Check(name, "ok", "; ".join(counts) or "no parameter group quota listed")


def _amis(client: ClientFactory, region: str) -> Check:
    from benchfleet.aws.fleet.targets import UBUNTU_AMI_PARAMETER

    found, missing = [], []
    for arch in ("amd64", "arm64"):
        name = UBUNTU_AMI_PARAMETER.format(arch=arch)
        try:
            found.append(f"{arch} {client('ssm', region).get_parameter(Name=name)['Parameter']['Value']}")
        except Exception as e:
            missing.append(f"{arch}: {_error(e)}")
    if missing:
        return Check(f"Ubuntu AMIs ({region})", "fail", "; ".join(missing),
                     "targets boot Canonical's Ubuntu 24.04 AMIs from their public SSM parameters")
    return Check(f"Ubuntu AMIs ({region})", "ok", ", ".join(found))


def _offered(client: ClientFactory, region: str, types: Iterable[str]) -> Check:
    wanted = sorted(set(types))
    try:
        pages = client("ec2", region).get_paginator("describe_instance_type_offerings").paginate(
            LocationType="region", Filters=[{"Name": "instance-type", "Values": wanted}])
        offered = {o["InstanceType"] for page in pages for o in page.get("InstanceTypeOfferings", [])}
    except Exception as e:
        return Check(f"instance types ({region})", "warn", f"could not list the offerings: {_error(e)}")
    absent = [t for t in wanted if t not in offered]
    if absent:
        return Check(f"instance types ({region})", "fail", f"not offered in {region}: {', '.join(absent)}",
                     "choose another instance type or region")
    return Check(f"instance types ({region})", "ok", ", ".join(wanted))


def _priced(region: str, types: Iterable[str]) -> Check:
    from benchfleet.cost.pricing import unpriced_reason

    reasons = [r for t in sorted(set(types))
               if (r := unpriced_reason({"id": "probe", "kind": "ec2", "instance_type": t, "region": region}))]
    if reasons:
        return Check(f"prices ({region})", "fail", "; ".join(reasons),
                     "refresh the price tables (catalogue_refresh --live), or run targets where they are priced")
    return Check(f"prices ({region})", "ok", f"{', '.join(sorted(set(types)))} priced")


def _quicksight(client: ClientFactory, d: Deployment) -> Check | None:
    principal = d.outputs.get("QuickSightPrincipalArn")
    if not principal:
        return None
    parts = principal.split(":")
    account, kind_name = parts[4], parts[5]
    kind, _, rest = kind_name.partition("/")
    namespace, _, name = rest.partition("/")
    try:
        qs = client("quicksight", parts[3])
        if kind == "user":
            qs.describe_user(AwsAccountId=account, Namespace=namespace, UserName=name)
        else:
            qs.describe_group(AwsAccountId=account, Namespace=namespace, GroupName=name)
    except Exception as e:
        return Check("QuickSight principal", "fail", f"{principal}: {_error(e)}",
                     "subscribe to QuickSight and pass an existing user or group (quicksightPrincipalArn)")
    return Check("QuickSight principal", "ok", principal)


def session_clients(region: str) -> tuple[ClientFactory, Any]:
    """Clients of the user's own AWS session (default region: the stack's), and its credentials."""
    import boto3

    session = boto3.session.Session(region_name=region)
    return (lambda service, where: session.client(service, region_name=where or region)), session.get_credentials()


def remote_checks(client: ClientFactory, *, stack: str, region: str, api_url: str | None = None,
                  credentials: Any = None, instance_types: dict[str, set[str]] | None = None) -> list[Check]:
    """Every check of the deployed stack and its account. ``instance_types``: per region, the types a
    spec uses (default: the canary's, in every region the stack can run targets in)."""
    try:
        identity = client("sts", region).get_caller_identity()
    except Exception as e:
        return [Check("credentials", "fail", _error(e), "configure AWS credentials (environment, profile or SSO)")]
    checks = [Check("credentials", "ok", f"{identity.get('Arn')} (account {identity.get('Account')})")]
    stack_check, d = _stack(client, stack, region)
    checks.append(stack_check)
    if d is None:
        return checks
    checks += [_outputs(d), _state_machine(client, d), _bucket(client, d), _store(client, d),
               _api(d, api_url, credentials)]
    for target_region in d.target_regions:
        types = (instance_types or {}).get(target_region) or {CANARY_INSTANCE_TYPE}
        checks += [_document(client, d, target_region), _quota(client, d, target_region), _amis(client, target_region),
                   _ebs_key(client, stack, target_region), _parameter_groups(client, target_region),
                   _offered(client, target_region, types),
                   _priced(target_region, types)]
    qs = _quicksight(client, d)
    if qs is not None:
        checks.append(qs)
    return checks


def spec_instance_types(targets: Iterable[Any], home_region: str) -> dict[str, set[str]]:
    """Per region, the EC2 instance types a spec's targets launch (hosts and clients)."""
    out: dict[str, set[str]] = {}
    for t in targets:
        region = getattr(t, "region", None) or home_region
        if t.kind == "ec2":
            out.setdefault(region, set()).add(t.instance_type)
        elif t.kind in ("rds", "aurora"):
            out.setdefault(region, set()).add(t.client.instance_type)
    return out
