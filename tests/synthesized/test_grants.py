"""Grants checked against the Service Authorization Reference on the synthesized template: each
deployed role is asked whether it may do what its component does, on the ARN AWS authorizes.
Conditions are not evaluated here (jest checks them); actions and resources are, with IAM's
wildcard semantics ("*" and "?" match across ":" and "/")."""

from __future__ import annotations

from fnmatch import fnmatchcase

from synth import ACCOUNT, REGION, Template


def statements_of(template: Template, role_prefix: str) -> list[dict]:
    roles = [k for k in template.of_type("AWS::IAM::Role") if k.startswith(role_prefix)]
    assert len(roles) == 1, (role_prefix, roles)
    out = []
    for policy in template.of_type("AWS::IAM::Policy").values():
        props = policy["Properties"]
        if {"Ref": roles[0]} in props["Roles"]:
            out += template.resolve(props["PolicyDocument"])["Statement"]
    return out


def allows(statements: list[dict], action: str, resource: str) -> bool:
    def listed(value) -> list[str]:
        return value if isinstance(value, list) else [value]

    return any(s["Effect"] == "Allow"
               and any(fnmatchcase(action.lower(), a.lower()) for a in listed(s["Action"]))
               and any(fnmatchcase(resource, r) for r in listed(s["Resource"])) for s in statements)


def state_machine_name(template: Template) -> str:
    (machine,) = template.of_type("AWS::StepFunctions::StateMachine")
    return template.arn(machine).rsplit(":", 1)[1]


def test_the_state_machine_may_describe_and_stop_its_distributed_map_children(synthesized: Template):
    statements = statements_of(synthesized, "OrchestrationBenchmarkRunStateMachineRole")
    name = state_machine_name(synthesized)
    base = f"arn:aws:states:{REGION}:{ACCOUNT}"
    # A child execution of a Distributed Map: execution:<state machine>/<map run label>:<id>.
    child = f"{base}:execution:{name}/Runtargetsinchildexecutions-1a2b3c4d:0f1e2d3c-aaaa-bbbb-cccc-123456789abc"
    for action in ("states:DescribeExecution", "states:StopExecution"):
        assert allows(statements, action, child), action
        assert not allows(statements, action, f"{base}:execution:SomeoneElses/label:id"), action
    assert allows(statements, "states:StartExecution", f"{base}:stateMachine:{name}")


def test_start_step_may_send_the_agent_document_with_output_to_the_results_bucket(synthesized: Template):
    statements = statements_of(synthesized, "OrchestrationFunctionsStartStepRole")
    (bucket,) = [k for k, r in synthesized.of_type("AWS::S3::Bucket").items() if k.startswith("Results")
                 and "AccessLogs" not in k]
    (document,) = synthesized.of_type("AWS::SSM::Document")
    assert allows(statements, "ssm:SendCommand", synthesized.arn(bucket))
    assert allows(statements, "ssm:SendCommand",
                  f"arn:aws:ssm:{REGION}:{ACCOUNT}:document/{synthesized.resolve({'Ref': document})}")
    assert allows(statements, "ssm:SendCommand", f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/i-0123456789abcdef0")


def test_the_target_role_may_upload_run_command_output_with_its_acl(synthesized: Template):
    statements = statements_of(synthesized, "TargetsInstanceRole")
    (bucket,) = [k for k in synthesized.of_type("AWS::S3::Bucket") if k.startswith("Results")
                 and "AccessLogs" not in k]
    # Under the host's own prefix only (issue 30, finding 13): IAM puts the caller's instance ARN in the
    # variable (tests/cdk/ownership.test.ts evaluates it); runs/ is collect's to write.
    own = synthesized.arn(bucket) + "/hosts/${ec2:SourceInstanceARN}/run-1/m7g/rep-1/t0001/cmd/i-1/stdout"
    for action in ("s3:PutObject", "s3:PutObjectAcl"):
        assert allows(statements, action, own), action
        assert not allows(statements, action, synthesized.arn(bucket) + "/runs/run-1/m7g/rep-1/t0001.jsonl")
    assert allows(statements, "s3:GetEncryptionConfiguration", synthesized.arn(bucket))


def test_the_secret_binding_readiness_writes_is_the_one_the_deployed_policies_require(synthesized: Template):
    """Readiness tags a database's secret with its host's ARN (benchfleet.aws.fleet.secret_binding); the
    host role reads a secret only when that tag equals the caller's ec2:SourceInstanceARN, and the
    readiness role may set only that key, to an instance ARN. Moto checks none of it: the tag key,
    the ARN's form and the conditions are compared here with the template's own statements."""
    from benchfleet.aws.fleet.secret_binding import host_arn
    from benchfleet.plan import naming

    secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:rds!db-3f1c0c8e-0000-4000-8000-00000000000a-AbCdEf"
    host = host_arn(secret, "i-0123456789abcdef0")
    assert host == f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/i-0123456789abcdef0"  # ec2:SourceInstanceARN's form

    reads = [s for s in statements_of(synthesized, "TargetsInstanceRole")
             if s["Action"] == "secretsmanager:GetSecretValue" and ":secret:rds!" in s["Resource"]]
    assert sorted(s["Resource"].split(":secret:")[1] for s in reads) == ["rds!cluster-*", "rds!db-*"]
    assert any(fnmatchcase(secret, s["Resource"]) for s in reads)
    for s in reads:
        assert s["Condition"]["StringEquals"] == {
            f"secretsmanager:ResourceTag/{naming.TAG_SECRET_READER}": "${ec2:SourceInstanceARN}"}

    binds = [s for s in statements_of(synthesized, "OrchestrationFunctionsReadinessRole")
             if s["Action"] == "secretsmanager:TagResource" and ":secret:rds!" in s["Resource"]]
    assert len(binds) == 2
    for s in binds:
        assert s["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": [naming.TAG_SECRET_READER]}
        assert fnmatchcase(host, s["Condition"]["StringLike"][f"aws:RequestTag/{naming.TAG_SECRET_READER}"])
    # Nothing else in the stack may tag, untag or read a secret.
    for role in synthesized.of_type("AWS::IAM::Role"):
        if role.startswith(("TargetsInstanceRole", "OrchestrationFunctionsReadinessRole",
                            "OrchestrationFunctionsProvisionRole")):
            continue
        statements = statements_of(synthesized, role)
        for action in ("secretsmanager:GetSecretValue", "secretsmanager:TagResource", "secretsmanager:UntagResource"):
            assert not allows(statements, action, secret), (role, action)


def test_the_state_machine_may_read_the_plan_and_write_outcomes_and_map_results(synthesized: Template):
    """What the definition itself does in S3 (no Lambda between): the Distributed Map's ItemReader
    (GetObject of the plan's targets) and ResultWriter (PutObject, multipart), and "Record the
    outcome" (aws-sdk PutObject); on the results bucket's runs/ only."""
    statements = statements_of(synthesized, "OrchestrationBenchmarkRunStateMachineRole")
    (bucket,) = [k for k in synthesized.of_type("AWS::S3::Bucket") if k.startswith("Results")
                 and "AccessLogs" not in k]
    runs = synthesized.arn(bucket) + "/runs"
    assert allows(statements, "s3:GetObject", f"{runs}/run-1/plan-targets.json")
    assert allows(statements, "s3:PutObject", f"{runs}/run-1/m7g/rep-1/outcome.json")
    for action in ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"):
        assert allows(statements, action, f"{runs}/map-results/0f1e2d3c/SUCCEEDED_0.json"), action
    assert not allows(statements, "s3:PutObject", synthesized.arn(bucket) + "/tables/runs/x.json")


# Issue 30, finding 14: the state machine role's unscoped statement is CDK's for the two things its
# properties turn on: logs (CloudWatch Logs vended delivery to its log group) and tracing (X-Ray).
# Step Functions' developer guide ("IAM policies for logging to CloudWatch Logs") puts the delivery
# actions on the execution role with "Resource": "*", because CloudWatch Logs' delivery APIs have no
# resource types to scope them to; none of them writes log events, metrics or data anywhere.
STATE_MACHINE_UNSCOPED = {
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
    "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
}


def test_the_state_machine_role_holds_only_the_logging_and_tracing_it_must_have_unscoped(synthesized: Template):
    statements = statements_of(synthesized, "OrchestrationBenchmarkRunStateMachineRole")
    unscoped = {a for s in statements if s["Resource"] == "*"
                for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert unscoped == STATE_MACHINE_UNSCOPED
    for action in ("logs:PutLogEvents", "logs:CreateLogStream", "cloudwatch:PutMetricData"):
        assert not allows(statements, action, "*"), action


def test_data_volumes_root_and_grants_match_the_deployed_template(synthesized: Template):
    """Provision restates the launch template's root volume in every RunInstances that adds data
    volumes (EC2 may replace the template's mappings with the request's): the two must be the same
    volume. start_step reads the volumes' ids; teardown and the sweepers may delete a run's volumes."""
    from benchfleet.aws.fleet import targets

    (template,) = synthesized.of_type("AWS::EC2::LaunchTemplate").values()
    (root,) = template["Properties"]["LaunchTemplateData"]["BlockDeviceMappings"]
    assert root["DeviceName"] == targets.ROOT_DEVICE
    assert root["Ebs"] == {k: targets.ROOT_VOLUME[k] for k in ("VolumeSize", "VolumeType", "Encrypted",
                                                              "DeleteOnTermination")}
    volume = f"arn:aws:ec2:{REGION}:{ACCOUNT}:volume/vol-0123456789abcdef0"
    for role in ("OrchestrationFunctionsTeardownRole", "OrchestrationFunctionsTeardownByTagRole",
                 "OrchestrationFunctionsJanitorRole", "OrchestrationFunctionsApiRole"):
        assert allows(statements_of(synthesized, role), "ec2:DeleteVolume", volume), role
    for role in ("OrchestrationFunctionsProvisionRole", "OrchestrationFunctionsStartStepRole"):
        assert not allows(statements_of(synthesized, role), "ec2:DeleteVolume", volume), role
    assert allows(statements_of(synthesized, "OrchestrationFunctionsStartStepRole"), "ec2:DescribeInstances", "*")
    assert allows(statements_of(synthesized, "OrchestrationFunctionsProvisionRole"), "ec2:RunInstances", volume)


def test_a_clusters_secrets_are_made_bound_read_and_deleted_only_as_the_fleet_does_it(synthesized: Template):
    """A cluster's password secrets (benchfleet.aws.fleet.cluster): provision creates them (tagged with the
    run and this stack), readiness binds each to its host, the host whose ARN the tag names reads it,
    teardown and the sweepers list and delete them; no other role may do any of it."""
    from benchfleet.plan import naming

    name = naming.cluster_secret_name("run-20261127t000000-abcd", "gp3", 1, "client")
    secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-AbCdEf"
    may = {
        "OrchestrationFunctionsProvisionRole": ("secretsmanager:CreateSecret", "secretsmanager:TagResource",
                                                "secretsmanager:DescribeSecret"),
        "OrchestrationFunctionsReadinessRole": ("secretsmanager:TagResource",),
        "TargetsInstanceRole": ("secretsmanager:GetSecretValue",),
        "OrchestrationFunctionsTeardownRole": ("secretsmanager:DeleteSecret",),
        "OrchestrationFunctionsTeardownByTagRole": ("secretsmanager:DeleteSecret",),
        "OrchestrationFunctionsJanitorRole": ("secretsmanager:DeleteSecret",),
        # DELETE /runs/{id} stops a run and removes what it left (the API holds the sweepers' grant).
        "OrchestrationFunctionsApiRole": ("secretsmanager:DeleteSecret",),
    }
    for role, actions in may.items():
        statements = statements_of(synthesized, role)
        for action in actions:
            assert allows(statements, action, secret), (role, action)
        if action == "secretsmanager:DeleteSecret":
            assert allows(statements, "secretsmanager:ListSecrets", "*"), role
    # The host role reads it only where the reader tag names the caller and the stack tag is this stack's.
    (read,) = [s for s in statements_of(synthesized, "TargetsInstanceRole")
               if s["Action"] == "secretsmanager:GetSecretValue" and "benchfleet/" in s["Resource"]]
    condition = read["Condition"]["StringEquals"]
    assert condition[f"secretsmanager:ResourceTag/{naming.TAG_SECRET_READER}"] == "${ec2:SourceInstanceARN}"
    assert f"secretsmanager:ResourceTag/{naming.TAG_STACK}" in condition
    for role in synthesized.of_type("AWS::IAM::Role"):
        if role.startswith(tuple(may)):
            continue
        statements = statements_of(synthesized, role)
        for action in ("secretsmanager:GetSecretValue", "secretsmanager:CreateSecret", "secretsmanager:DeleteSecret",
                       "secretsmanager:TagResource"):
            assert not allows(statements, action, secret), (role, action)


def test_cluster_nodes_talk_galera_to_each_other_and_clients_reach_mysql_only(synthesized: Template):
    """The deployed groups (cdk/lib/target-fleet.ts) as benchfleet.cluster.galera's ports need them: a node
    reaches the others on MySQL, replication, IST and SST; a client (and a proxy host) reaches a node
    on MySQL only; a proxy host of its own is reached from the clients only, on the proxy's listen and
    statistics ports (benchfleet.cluster.proxyconf); the Lambdas get the groups and the subnets' zones."""
    from benchfleet.cluster import galera, proxyconf

    groups = synthesized.of_type("AWS::EC2::SecurityGroup")
    (nodes,) = [k for k in groups if k.startswith("TargetsClusterSecurityGroup")]
    (clients,) = [k for k in groups if k.startswith("TargetsClientSecurityGroup")]
    (proxies,) = [k for k in groups if k.startswith("TargetsProxySecurityGroup")]
    ingress = [r["Properties"] for r in synthesized.of_type("AWS::EC2::SecurityGroupIngress").values()]
    ingress += [{**rule, "GroupId": {"Fn::GetAtt": [k, "GroupId"]}}
                for k, g in groups.items() for rule in g["Properties"].get("SecurityGroupIngress", [])]

    def ports(to: str, source: str) -> set[int]:
        return {r["FromPort"] for r in ingress if r["GroupId"] == {"Fn::GetAtt": [to, "GroupId"]}
                and r.get("SourceSecurityGroupId") == {"Fn::GetAtt": [source, "GroupId"]}
                and r["IpProtocol"] == "tcp" and r["FromPort"] == r["ToPort"]}

    assert ports(nodes, nodes) == set(galera.DEFAULT_PORTS.values())
    assert ports(nodes, clients) == {galera.DEFAULT_PORTS["port"]}
    assert not [r for r in ingress if r["GroupId"] == {"Fn::GetAtt": [nodes, "GroupId"]} and "CidrIp" in r]
    assert ports(proxies, clients) == {*proxyconf.LISTEN_PORT.values(), *proxyconf.ADMIN_PORT.values()}
    assert [r.get("SourceSecurityGroupId") for r in ingress if r["GroupId"] == {"Fn::GetAtt": [proxies, "GroupId"]}] \
        == [{"Fn::GetAtt": [clients, "GroupId"]}] * 4  # from the clients only, nothing else
    functions = synthesized.of_type("AWS::Lambda::Function")
    env = next(f["Properties"]["Environment"]["Variables"] for k, f in functions.items()
               if k.startswith("OrchestrationFunctionsProvision"))
    assert env["CLUSTER_SECURITY_GROUP_ID"] == {"Fn::GetAtt": [nodes, "GroupId"]}
    assert env["PROXY_SECURITY_GROUP_ID"] == {"Fn::GetAtt": [proxies, "GroupId"]}
    assert "SUBNET_ZONES" in env
