"""Galera clusters through the deployed state machine, executed offline (issue 25): every node, the
client and the proxy (on the client, or a host of its own) launched at once, the nodes in distinct zones;
the first node bootstraps, the others join one at a time, the proxy is set up on its host, then the
benchmark's steps run on the client by their variant's route, reading status from every node (and the
proxy). A node that never joins, a proxy that cannot be installed, a node that stops mid-step and an
abort during state transfer each fail the target naming the node or stage, and nothing of the run is left
in moto."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import boto3
import pytest
from sm_harness import leftovers, recording
from sm_moto import FaultProxy
from sm_world import BUCKET, REGION
from timestream_requests import dimensions, stored_records

from agent_modules import load
from benchfleet.aws import clients
from benchfleet.aws.planning import asl_walk, runplan
from benchfleet.aws.planning.controlplane import CALLBACK_HANDLER, expected_scope
from benchfleet.plan import naming
from benchfleet.plan.scale import apply_scale
from benchfleet.spec.loading import load_spec, parse_spec, resolve

JOBCHECK = load("benchfleet_job")
SEED = Path(__file__).resolve().parents[2] / "workloads" / "comparisons" / "pxc-on-aws.yaml"
FAST = {"ready_poll_s": 0, "cooldown_s": 0}


PROXY_HOST = {"software": "haproxy", "instance_type": "c6i.large"}


def pxc_spec(targets: int = 1, proxy: dict | None = None) -> dict:
    """workloads/comparisons/pxc-on-aws.yaml at smoke scale, its first ``targets`` clusters, inline
    (``proxy``: the clusters' proxy instead of ProxySQL on the client host)."""
    body = apply_scale(load_spec(SEED), "smoke").inline()
    body["targets"] = [{**t, "proxy": proxy} if proxy else t for t in body["targets"][:targets]]
    return body


def summary_of(run_id: str) -> dict:
    return json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())


@pytest.fixture
def failures():
    """The SendTaskFailure requests of the test's steps (their error and cause, as Step Functions gets
    them: moto's history and Map errors leave the cause out)."""
    sent: list[dict] = []
    proxy = FaultProxy(boto3.client("stepfunctions", region_name=REGION),
                       faults={"send_task_failure": lambda kw: sent.append(kw)})
    clients.override("stepfunctions", lambda: proxy)
    yield sent
    clients.override("stepfunctions", None)


def failed_run(harness, result) -> tuple[str, str]:
    """(run id, the target's recorded error) of a run whose one cluster failed, checked torn down."""
    assert result["status"] == "FAILED", harness.explain(result)
    run_id = next(c.result for c in harness.calls_of("plan"))["run_id"]
    assert harness.calls_of("teardown"), "teardown ran"
    assert leftovers(run_id) == []
    (target,) = summary_of(run_id)["targets"]
    error = target["repetitions"][0]["error"]
    return run_id, json.dumps(error)


def test_a_cluster_runs_with_every_node_in_its_own_zone_and_status_from_each(harness):
    sent, written = recording(harness)
    result = harness.run(pxc_spec(), timing=FAST, name="pxc-green")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    plan = next(c.result for c in harness.calls_of("plan"))
    run_id = plan["run_id"]
    (target,) = plan["targets"]
    hosts = next(c.result for c in harness.calls_of("provision"))["hosts"]
    # Three nodes in three zones, the client (and ProxySQL on it) in the first node's.
    assert set(hosts) == {"n1", "n2", "n3", "client"}
    assert len({hosts[n]["zone"] for n in ("n1", "n2", "n3")}) == 3
    assert hosts["client"]["zone"] == hosts["n1"]["zone"]
    # The nodes in the cluster's security group (Galera between them), the client in the template's.
    reservations = boto3.client("ec2", region_name=REGION).describe_instances(
        InstanceIds=[h["instance_id"] for h in hosts.values()])["Reservations"]
    described = {i["InstanceId"]: {g["GroupId"] for g in i["SecurityGroups"]}
                 for r in reservations for i in r["Instances"]}
    assert {h: described.get(hosts[h]["instance_id"]) for h in ("n1", "n2", "n3")} == {
        h: {os.environ["CLUSTER_SECURITY_GROUP_ID"]} for h in ("n1", "n2", "n3")}
    jobs = [json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in sent]
    # Every job start_step sent passes the agent's own check (workloads/agent: the contract's consumer).
    assert [JOBCHECK.check_job(j) for j in jobs] == [j["step"]["kind"] for j in jobs]
    instance_of = [kw["InstanceIds"][0] for kw in sent]
    names = [j["step"]["name"] for j in jobs]
    assert names[:4] == ["setup-n1", "setup-n2", "setup-n3", "setup-proxy"]
    assert names[4:] == [target["steps"][i]["name"] for i in target["sequence"][0][4:]]
    # Each node's job on that node; the first bootstraps; each joiner waits for its own size.
    for k, node in enumerate(("n1", "n2", "n3")):
        assert instance_of[k] == hosts[node]["instance_id"]
        assert jobs[k]["setup"]["bootstrap"] == (node == "n1")
        assert jobs[k]["setup"]["expected_size"] == k + 1
        assert jobs[k]["setup"]["storage"]["type"] == "gp3"
        assert "password" not in jobs[k]["setup"]
    addresses = [n["host"] for n in jobs[0]["setup"]["nodes"]]
    assert len(set(addresses)) == 3
    # The proxy and every benchmark step on the client; the route chooses where sysbench connects.
    assert set(instance_of[3:]) == {hosts["client"]["instance_id"]}
    assert jobs[3]["setup"]["software"] == "proxysql"
    routes = {j["variant"]: (j["db"]["host"], j["db"]["port"]) for j in jobs[4:] if j.get("variant")}
    assert routes["direct"] == (addresses[0], 3306) and routes["proxy"] == ("127.0.0.1", 6033)
    # Status per second from every node (and the proxy), stored with the node's name.
    measured = [j for j in jobs if j["step"]["kind"] == "measure"]
    assert measured and all([s["name"] for s in j["status"]["sources"]] == ["n1", "n2", "n3", "proxy"]
                            for j in measured)
    status_rows = [r for w in written if w["TableName"] == "status_samples" for r in stored_records(w)]
    sources = {dimensions(r)["source"] for r in status_rows}
    assert {"n1", "n2", "n3"} <= sources
    # Every node, the client and their volumes and secrets gone.
    assert leftovers(run_id) == []
    (summary,) = summary_of(run_id)["targets"]
    setups = [s["setup"] for s in summary["repetitions"][0]["steps"] if s.get("setup")]
    assert [s.get("node") for s in setups] == ["n1", "n2", "n3", None]
    assert [s.get("cluster_size") for s in setups[:3]] == [1, 2, 3]


def security_groups() -> list[dict]:
    return sorted(boto3.client("ec2", region_name=REGION).describe_security_groups()["SecurityGroups"],
                  key=lambda g: g["GroupId"])


def test_a_proxy_on_a_host_of_its_own_listens_on_its_private_address_and_the_client_reaches_it(harness):
    """proxy.instance_type: the proxy's set-up job goes to the proxy host's instance and binds the
    private address readiness found for it; the client's proxy-route steps connect there and read the
    proxy's per-backend statistics from it; direct-route steps go to the writer node; the proxy host
    is in the clients' group (it reaches the nodes' MySQL port) and the proxy's (its ports from the
    clients only); teardown removes it with everything else, and no group or rule is made per run."""
    sent, _ = recording(harness)
    groups = security_groups()
    body = pxc_spec(proxy=PROXY_HOST)
    result = harness.run(body, timing=FAST, name="pxc-proxy-host")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    run_id = next(c.result for c in harness.calls_of("plan"))["run_id"]
    hosts = next(c.result for c in harness.calls_of("provision"))["hosts"]
    assert set(hosts) == {"n1", "n2", "n3", "client", "proxy"}
    assert (hosts["proxy"]["instance_type"], hosts["proxy"]["zone"]) == ("c6i.large", hosts["n1"]["zone"])
    (described,) = boto3.client("ec2", region_name=REGION).describe_instances(
        InstanceIds=[hosts["proxy"]["instance_id"]])["Reservations"][0]["Instances"]
    assert {g["GroupId"] for g in described["SecurityGroups"]} == {
        os.environ["CLIENT_SECURITY_GROUP_ID"], os.environ["PROXY_SECURITY_GROUP_ID"]}
    address = described["PrivateIpAddress"]
    jobs = [json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in sent]
    assert [JOBCHECK.check_job(j) for j in jobs] == [j["step"]["kind"] for j in jobs]
    instance_of = {j["step"]["name"]: kw["InstanceIds"][0] for j, kw in zip(jobs, sent, strict=True)}
    (proxy_job,) = [j for j in jobs if j["step"]["name"] == "setup-proxy"]
    assert instance_of["setup-proxy"] == hosts["proxy"]["instance_id"]
    assert (proxy_job["setup"]["software"], proxy_job["setup"]["listen_host"]) == ("haproxy", address)
    assert proxy_job["setup"]["stats_password"] == "secret"
    assert proxy_job["setup"]["password_secret_arn"].split(":secret:")[1].startswith(
        f"benchfleet/{run_id}/gp3/rep-1/proxy")  # the secret bound to the proxy host
    writer = next(b["host"] for b in proxy_job["setup"]["backends"] if b["name"] == "n1")
    steps = [j for j in jobs if j["step"]["kind"] != "setup"]
    assert steps and {instance_of[j["step"]["name"]] for j in steps} == {hosts["client"]["instance_id"]}
    routes = {(j["variant"], j["db"]["host"], j["db"]["port"]) for j in steps}
    assert routes == {("direct", writer, 3306), ("proxy", address, 3307)}
    measured = [j for j in steps if j["step"]["kind"] == "measure"]
    assert measured and all(j["status"]["sources"][-1] == {
        "name": "proxy", "kind": "haproxy", "host": address, "port": 3308,
        "backends": {b["name"]: f"{b['host']}:3306" for b in proxy_job["setup"]["backends"]}} for j in measured)
    assert leftovers(run_id) == []
    assert security_groups() == groups
    # The control-plane estimate counts what this execution did, set-up steps included (it once walked
    # the benchmark's steps only: 5 set-up steps' transitions, start_step, collect and callbacks missed).
    plan = runplan.aws_plan(resolve(parse_spec(body), "pxc"))[0]
    scope = expected_scope(plan, runplan.READY_POLL_S)
    (repetition,) = scope.targets[0].repetitions
    repetition.ready_checks = len(harness.calls_of("readiness"))  # what this run's readiness made
    definition = asl_walk.load_definition()
    counts = asl_walk.walk(definition["States"], definition["StartAt"], scope)
    assert counts.transitions == sum(1 for e in result["history"] if e["type"].endswith("StateEntered"))
    called = Counter(c.module for c in harness.calls)
    assert called.pop(CALLBACK_HANDLER) == len(sent) == plan.targets[0].setup_steps + len(plan.targets[0].steps)
    assert dict(counts.invocations) == dict(called)


@pytest.mark.parametrize(("fault", "proxy", "said"), [
    ({"gp3:setup-n2": "failed"}, None, ["setup-n2 on n2", "node n2: did not reach Synced"]),
    ({"gp3:setup-proxy": "failed"}, None, ["setup-proxy on client", "proxy-install", "apt-get install proxysql"]),
    ({"gp3:setup-proxy": "failed"}, PROXY_HOST, ["setup-proxy on proxy (", "proxy-install", "proxy haproxy"]),
])
def test_a_node_that_never_joins_or_a_proxy_that_cannot_install_fails_the_target_naming_it(harness, failures,
                                                                                          fault, proxy, said):
    sent, _ = recording(harness)
    harness.agent.outcome.update(fault)
    result = harness.run(pxc_spec(proxy=proxy), timing=FAST,
                         name=f"pxc-{next(iter(fault)).split(':')[1]}{'-own' if proxy else ''}")
    _, error = failed_run(harness, result)
    assert "AgentFailed" in error
    (failure,) = failures
    assert failure["error"] == "AgentFailed"
    for words in said:
        assert words in failure["cause"]
    if proxy:  # the host named is the proxy's own instance
        hosts = next(c.result for c in harness.calls_of("provision"))["hosts"]
        assert f" on {hosts['proxy']['instance_id']})" in failure["cause"]
    step = next(iter(fault)).split(":")[1]
    names = [json.loads(kw["Parameters"]["JobJson"][0])["step"]["name"] for kw in sent]
    assert names[-1] == step, "nothing runs after the failed set-up"


def test_a_node_stopped_mid_step_fails_the_target_naming_it(harness, failures):
    """n3 stops while the client measures: the agent's health check (every node Synced at full size)
    fails the step naming n3, the target fails with that reason, and the stopped node is removed too."""
    ec2 = boto3.client("ec2", region_name=REGION)

    def stop_n3(kw: dict) -> None:
        if json.loads(kw["Parameters"]["JobJson"][0])["step"]["name"] == "t0001.direct":
            hosts = next(c.result for c in harness.calls_of("provision"))["hosts"]
            ec2.stop_instances(InstanceIds=[hosts["n3"]["instance_id"]])
    harness.proxies["ssm"].faults["send_command"] = stop_n3
    harness.agent.outcome["gp3:t0001.direct"] = "failed"
    harness.agent.reasons["t0001.direct"] = "n3 is not Synced (wsrep_cluster_size 2 of 3): the cluster lost a node"
    result = harness.run(pxc_spec(), timing=FAST, name="pxc-node-stopped")
    failed_run(harness, result)
    (failure,) = failures
    assert failure["cause"].startswith("t0001.direct on client (")
    assert "health: n3 is not Synced" in failure["cause"]


@pytest.mark.parametrize("sweeper", ["teardown_by_tag", "janitor"])
def test_an_abort_during_state_transfer_is_torn_down_by_tag(harness, sweeper):
    """A cluster with a proxy host of its own stopped while n2 joins: the rule's teardown by tag, or
    else the hourly janitor (the run is no longer running), removes every node, the client, the proxy
    host and the secrets."""
    from handlers import janitor, teardown_by_tag

    harness.agent.outcome["gp3:setup-n2"] = "hang"  # n2 transferring state when the run is stopped
    run_id = f"pxc-abort-{sweeper.replace('_', '-')}"
    execution: dict[str, str] = {}

    def stop_during_n2s_join(kw: dict) -> None:
        # StopExecution while n2's join is being sent: before "Start the step" waits for its token
        # (moto's executor notices a stop between states, not inside a callback wait).
        if json.loads(kw["Parameters"]["JobJson"][0])["step"]["name"] == "setup-n2":
            harness.sf.stop_execution(executionArn=execution["arn"])
    harness.proxies["ssm"].faults["send_command"] = stop_during_n2s_join
    payload = {"spec": pxc_spec(proxy=PROXY_HOST), "timing": FAST}
    execution["arn"] = harness.sf.start_execution(stateMachineArn=harness.arn, name=run_id,
                                                  input=json.dumps(payload))["executionArn"]
    arn = execution["arn"]
    deadline = time.monotonic() + 180  # each wait its own bound: a loaded machine is slow, not wrong
    while (described := harness.sf.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not stop"
        time.sleep(0.05)
    calls = -1
    while calls != len(harness.calls):
        calls = len(harness.calls)
        time.sleep(0.5)
    assert [c.event["step"]["name"] for c in harness.calls_of("start_step")] == ["setup-n1", "setup-n2"]
    assert not harness.calls_of("teardown"), "StopExecution skips every Catch: the rule's teardown by tag is next"
    left = leftovers(run_id)
    hosts = next(c.result for c in harness.calls_of("provision"))["hosts"]
    assert sorted(x for x in left if x.startswith("i-")) == sorted(h["instance_id"] for h in hosts.values())
    assert "proxy" in hosts and len([x for x in left if x.startswith("benchfleet/")]) == 3  # n1, client, proxy
    event = {"detail": {"executionArn": arn, "stateMachineArn": harness.arn, "name": run_id,
                        "status": "ABORTED", "input": described["input"]}}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STATE_MACHINE_ARN", harness.arn)
        env.setenv("SWEEP_REGIONS", REGION)
        out = teardown_by_tag.handler(event, None) if sweeper == "teardown_by_tag" else janitor.sweep().summary()
    assert out["failed"] == [] and {r["kind"] for r in out["removed"]} >= {"ec2-instance", "secret"}
    assert hosts["proxy"]["instance_id"] in {r["id"] for r in out["removed"]}
    assert leftovers(run_id) == []
