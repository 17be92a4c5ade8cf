"""An independent IAM linter (parliament, with its community auditors) over every statement of every
policy `cdk synth` deploys. A finding fails the test unless it is suppressed below, on its statement
(Sid, or its sorted actions when it has none), with the reason it is not a real problem; a
suppression that no longer matches anything fails too, so the list stays current.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from parliament import analyze_policy_string
from synth import Template
from tests.conftest import TARGET_REGIONS

# parliament reads a statement against each action's resource types one statement at a time, so a
# statement scoped to one of the several resource types an action authorizes reads as a mismatch.
SPLIT_BY_RESOURCE = ("The action authorizes several resource types (Service Authorization Reference); this "
                     "statement grants it on one of them with that type's own conditions, the others are in "
                     "sibling statements. parliament checks each statement alone.")
DESCRIBES = ("Describe/List calls that list everything: the sweepers and readiness must list every instance "
             "and DB to read their tags (RDS cannot filter on tags); nothing is changed through them.")

SUPPRESSED: dict[tuple[str, str], str] = {
    ("RESOURCE_MISMATCH", "RunTaggedInstances"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "RunTaggedEncryptedVolumes"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "RunInOurVpc"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "RunWithOurSecurityGroupsAndTemplate"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "RunUbuntuImages"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "CreateOwnedDatabasesAndGroups"): SPLIT_BY_RESOURCE + " CreateDBInstance also "
        "authorizes the cluster of an Aurora member and the run's parameter group it names (in this statement).",
    ("RESOURCE_MISMATCH", "CreateWithDefaultOptionsInOurSubnets"): SPLIT_BY_RESOURCE,
    ("RESOURCE_MISMATCH", "DeleteOwnedDatabases"): "DeleteDBCluster also authorizes a final snapshot; "
                                                   "benchfleet never takes one (SkipFinalSnapshot).",
    ("RESOURCE_MISMATCH", "SendToOwnedInstances"): SPLIT_BY_RESOURCE + " SendCommand's document is in "
                                                   "SendAgentDocument.",
    ("RESOURCE_MISMATCH", "SendToOptedInHosts"): SPLIT_BY_RESOURCE + " SendCommand's document is in "
                                                 "SendAgentDocument.",
    ("RESOURCE_MISMATCH", "SendOutputToResultsBucket"): SPLIT_BY_RESOURCE + " With OutputS3BucketName, "
        "SendCommand is authorized against the bucket too (resource type bucket); its document and "
        "instances are in SendAgentDocument and SendToOwnedInstances.",
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "WriteOwnRunCommandOutput"): "Run Command uploads the agent's "
        "output under hosts/<the host's ARN>/ with the bucket-owner-full-control ACL, which needs s3:PutObjectAcl; "
        "the bucket enforces bucket ownership (ACLs disabled), so the ACL grants nobody anything.",
    ("RESOURCE_MISMATCH", "WriteOwnRunCommandOutput"): "An object ARN whose key holds the policy variable "
        "${ec2:SourceInstanceARN} (IAM fills it from the instance profile's credentials, IAM User Guide, "
        "\"Request information that you can use for policy variables\"); parliament 1.6.4 does not expand "
        "variables and reads the key's ARN colons as the ARN's own.",
    ("RESOURCE_STAR", "SsmAgentRunCommand"): "The SSM agent's registration (ssm:UpdateInstanceInformation), its "
        "Run Command message channels (ec2messages:*, ssmmessages:*, no resource types) and the reads "
        "aws:configurePackage makes of AWS-owned Distributor documents; no Parameter Store read and no write "
        "of the account's data (AmazonSSMManagedInstanceCore, which it replaces, had both).",
    ("RESOURCE_MISMATCH", "ReadUbuntuAmiParameters"): "Canonical's public parameters have no account in "
                                                      "their ARN (arn:aws:ssm:<region>::parameter/aws/...).",
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "PassTargetRoleToEc2"): "iam:PassRole of the target role only, only "
                                                               "to ec2.amazonaws.com (iam:PassedToService).",
    ("RESOURCE_STAR", "describe"): DESCRIBES,
    ("RESOURCE_MISMATCH", "CompleteStepTasks"): "SendTaskSuccess/Failure/Heartbeat of a callback task are "
        "authorized on the state machine (Service Authorization Reference: resource type stateMachine; CDK's "
        "grantTaskResponse grants the same); parliament 1.6.4's action data lists activity only.",
    ("UNKNOWN_CONDITION_FOR_ACTION", "DescribeAwsManagedKeysForRds"): "kms:ResourceAliases applies to "
        "kms:DescribeKey (Service Authorization Reference, AWS KMS condition keys); parliament 1.6.4's "
        "action data predates the key.",
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "RdsServiceLinkedRole"): "RDS's own service-linked role, created once "
        "per account by the first database; only that role, only for rds.amazonaws.com (iam:AWSServiceName).",
    ("RESOURCE_MISMATCH", "timestream:DescribeTable,timestream:WriteRecords"): "Granted on the database and "
        "its tables/*: WriteRecords and DescribeTable name a table; the database ARN serves DescribeDatabase.",
    ("RESOURCE_MISMATCH", "timestream:DescribeTable,timestream:Select,timestream:WriteRecords"): "Granted on "
        "the database and its tables/*, as for WriteRecords (summarize reads and writes the store).",
    ("RESOURCE_MISMATCH", "timestream:DescribeTable,timestream:Select"): "Granted on the database and its "
        "tables/*, as for WriteRecords.",
    ("RESOURCE_MISMATCH", "states:ListExecutions,states:StartExecution"): "The state machine's ARN; "
        "ListExecutions also accepts a Map Run ARN, which benchfleet does not list by.",
    ("RESOURCE_MISMATCH", "states:DescribeExecution,states:StopExecution"): "Standard executions' ARNs; "
        "DescribeExecution also takes Express ones, which benchfleet does not run.",
    ("RESOURCE_MISMATCH", "states:DescribeExecution"): "Standard executions' ARNs; Express ones, which "
        "DescribeExecution also takes, are never run.",
    ("RESOURCE_MISMATCH", "states:ListExecutions"): "The state machine's ARN; a Map Run ARN, which "
        "ListExecutions also takes, is never listed by.",
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "logs:delivery"): "CloudWatch Logs delivery for the state machine's "
        "log group (and X-Ray): Step Functions requires these on '*' (no resource-level permissions).",
}


def _key(issue: str, statement: dict[str, Any]) -> tuple[str, str]:
    actions = statement.get("Action", [])
    actions = sorted(actions if isinstance(actions, list) else [actions])
    verbs = [a.split(":", 1)[1] for a in actions]
    if issue == "RESOURCE_STAR" and all(v.startswith(("Describe", "List", "Get")) or a.startswith("xray:")
                                        for a, v in zip(actions, verbs, strict=True)):
        return issue, "describe"
    if issue == "PERMISSIONS_MANAGEMENT_ACTIONS" and all(
            "LogDeliver" in a or "ResourcePolic" in a or a.startswith(("logs:Describe", "xray:")) for a in actions):
        return issue, "logs:delivery"
    return issue, statement.get("Sid") or ",".join(actions)


def findings(template: Template) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    policies = {**template.of_type("AWS::IAM::Policy"), **template.of_type("AWS::IAM::ManagedPolicy")}
    for logical_id, policy in policies.items():
        document = template.resolve(policy["Properties"]["PolicyDocument"])
        for statement in document["Statement"]:
            analyzed = analyze_policy_string(json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
                                             include_community_auditors=True)
            for finding in analyzed.findings:
                out.setdefault(_key(finding.issue, statement), []).append(logical_id)
    return out


def test_no_unsuppressed_iam_linter_finding(synthesized: Template):
    found = findings(synthesized)
    assert {k: v for k, v in found.items() if k not in SUPPRESSED} == {}


def test_every_suppression_is_current(synthesized: Template, with_regions: dict[str, Template]):
    found = {**findings(with_regions["Benchfleet"]), **findings(synthesized)}
    assert [k for k in SUPPRESSED if k not in found] == []
    assert all(len(reason) > 40 for reason in SUPPRESSED.values())


@pytest.fixture(scope="module")
def with_regions(synthesized_regions: dict[str, Template]) -> dict[str, Template]:
    """What `cdk deploy --all` deploys with target regions (home: us-east-1) and the other record
    store, Timestream (the session's synth has the default, Athena): every stack by name. The
    regional stacks (issue 15) attach their region's grants to the home stack's roles as managed
    policies: the same statements, linted the same way."""
    assert sorted(synthesized_regions) == sorted(["Benchfleet", *(f"Benchfleet-{r}" for r in TARGET_REGIONS)])
    return synthesized_regions


def test_no_unsuppressed_iam_linter_finding_with_timestream(with_regions: dict[str, Template]):
    found = findings(with_regions["Benchfleet"])
    assert any(k[1].startswith("timestream:") for k in found)  # the Timestream grants were linted
    assert {k: v for k, v in found.items() if k not in SUPPRESSED} == {}


def test_no_unsuppressed_iam_linter_finding_in_regional_stacks(with_regions: dict[str, Template]):
    for template in (t for name, t in with_regions.items() if name != "Benchfleet"):
        assert template.of_type("AWS::IAM::ManagedPolicy")
        found = findings(template)
        assert {k: v for k, v in found.items() if k not in SUPPRESSED} == {}
