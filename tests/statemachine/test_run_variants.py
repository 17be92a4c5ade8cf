"""Variants through the deployed state machine, executed offline (issue 24): every variant of a
repetition on that repetition's host, in the plan's interleaved order, one Run Command per step, each
job carrying what the agent needs to switch the host's server (SET GLOBAL from one variant, a restart
from another); a variant whose settings cannot be applied fails its repetition, which is still torn
down, and nothing of the run is left."""

from __future__ import annotations

import json

import boto3
from sm_harness import BUCKET, REGION, leftovers, spec
from timestream_requests import dimensions, stored_records

from benchfleet import naming

EC2 = {"id": "ec2-m6g", "kind": "ec2", "instance_type": "m6g.large", "engine": "mariadb", "mysql_config": "durable"}
VARIANTS = [{"id": "durable"},
            {"id": "relaxed", "server_options": {"innodb_flush_log_at_trx_commit": 2, "sync_binlog": 0}},
            {"id": "fsync", "server_options": {"innodb_flush_method": "fsync"}}]


def recording(harness) -> tuple[list[dict], list[dict]]:
    """(SendCommand requests, WriteRecords requests) of the next run, as sent."""
    sent: list[dict] = []
    written: list[dict] = []
    harness.proxies["ssm"].faults["send_command"] = lambda kw: sent.append(kw)
    harness.proxies["timestream-write"].faults["write_records"] = lambda kw: written.append(kw)
    return sent, written


def jobs(sent: list[dict]) -> list[dict]:
    """Every job start_step sent, in order (what the agent on the host received)."""
    return [json.loads(kw["Parameters"]["JobJson"][0].replace("\\u0027", "'")) for kw in sent]


def test_every_variant_runs_on_its_repetitions_host_in_the_planned_order(harness):
    requests, writes = recording(harness)
    result = harness.run(spec(targets=[EC2], variants=VARIANTS, repetitions=2), name="variants-ec2")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    plan = next(c.result for c in harness.calls_of("plan"))
    (target,) = plan["targets"]
    run_id = plan["run_id"]
    sent = jobs(requests)
    for rep in (1, 2):
        ran = [j["step"]["name"] for j in sent if j["repetition"] == rep]
        assert ran == [target["steps"][i]["name"] for i in target["sequence"][rep - 1]], rep
    rep1 = [j["step"]["name"] for j in sent if j["repetition"] == 1]
    rep2 = [j["step"]["name"] for j in sent if j["repetition"] == 2]
    # (The fixture workload has no warm-up, so a restart is followed by none.)
    assert rep1[1:] == ["t0001.durable", "t0001.relaxed", "t0001.fsync"]
    assert rep2[1:] == ["t0001.relaxed", "t0001.fsync", "t0001.durable"]
    # One host per repetition, every variant on it; one Run Command per step.
    by_rep = {rep: {c.event["resources"]["instance_id"] for c in harness.calls_of("start_step")
                    if c.event["repetition"] == rep} for rep in (1, 2)}
    assert all(len(hosts) == 1 for hosts in by_rep.values()) and by_rep[1] != by_rep[2]
    assert len(sent) == sum(len(seq) for seq in target["sequence"])
    # The host starts with the first variant's settings; each variant's step tells the agent how to switch.
    install = sent[0]["install"]
    assert install["variant"] == "durable" and "innodb_flush_log_at_trx_commit" in install["cnf"]
    relaxed = next(j for j in sent if j["step"]["name"] == "t0001.relaxed")
    assert relaxed["variant"] == "relaxed" and relaxed["settings"]["apply"]["switch"] == {
        "durable": "set-global", "fsync": "restart"}
    assert "innodb_flush_log_at_trx_commit = 2" in relaxed["settings"]["apply"]["cnf"]
    assert relaxed["settings"]["apply"]["varying"] == ["innodb_flush_log_at_trx_commit", "innodb_flush_method",
                                                       "sync_binlog"]
    fsync = next(j for j in sent if j["step"]["name"] == "t0001.fsync")
    assert fsync["settings"]["apply"]["switch"] == {"durable": "restart", "relaxed": "restart"}
    # What was collected carries the variant: every summary the store was given.
    summaries = [dimensions(r) for call in writes if call["TableName"] == "step_summaries"
                 for r in stored_records(call)]
    measured = {(d["repetition"], d["step"], d["variant"]) for d in summaries if d["phase"] == "measure"}
    assert ("1", "t0001.relaxed", "relaxed") in measured and ("2", "t0001.fsync", "fsync") in measured
    assert leftovers(run_id) == []


def test_a_variant_that_cannot_be_applied_fails_its_repetition_and_still_tears_down(harness):
    harness.agent.outcome["ec2-m6g:fsync"] = "failed"
    requests, _ = recording(harness)
    result = harness.run(spec(targets=[EC2], variants=VARIANTS, repetitions=1), name="variants-fault")
    assert result["status"] == "FAILED", harness.explain(result)
    run_id = next(c.result for c in harness.calls_of("plan"))["run_id"]
    summary = json.loads(boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=naming.summary_key(run_id))["Body"].read())
    (target,) = summary["targets"]
    (rep,) = target["repetitions"]
    assert rep["error"]["error"] == "AgentFailed" and rep["teardown"]["deleted"]
    # The steps before the variant were collected; the failed variant's first step was the last sent.
    assert [c.event["step"]["name"] for c in harness.calls_of("collect")] == ["prepare", "t0001.durable",
                                                                              "t0001.relaxed"]
    assert jobs(requests)[-1]["step"]["name"] == "t0001.fsync"
    assert leftovers(run_id) == []
