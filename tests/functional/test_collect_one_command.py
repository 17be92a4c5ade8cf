"""Collect reads one command's output per step (issue 12): the same step sent twice once ran twice at
once and Collect merged both (18 samples, 2 summaries, tps split 342 + 187). Against moto S3."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from benchfleet.aws.errors import CollectFailed
from benchfleet.aws.steps.collect import keep_raw, read_raw
from benchfleet.plan import naming

BUCKET = "bf-results"
FIXTURE = naming.host_output_prefix("arn:aws:ec2:us-east-1:123456789012:instance/i-0abc", "run-1", "m6g", 1, "t0001")


def stdout(command_id: str, tps: float) -> tuple[str, bytes]:
    line = json.dumps({"type": "sample", "run_id": "run-1", "target_id": "m6g", "tps": tps})
    return f"{FIXTURE}/{command_id}/i-0abc/runAgent/stdout", f"setting up\n{line}\n".encode()


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_one_command_is_read_and_the_raw_key_is_read_back_once_kept(s3) -> None:
    key, body = stdout("cmd-1", 916.0)
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    text, kept = read_raw(s3, BUCKET, run_id="run-1", target_id="m6g", repetition=1, step="t0001",
                          output_prefix=FIXTURE)
    assert text.startswith('{"type":') and "916.0" in text and not kept
    raw = naming.raw_key("run-1", "m6g", 1, "t0001")
    # Reading writes nothing: the raw key is collect's to write once it accepted the output.
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=raw)
    keep_raw(s3, BUCKET, raw, text)
    assert read_raw(s3, BUCKET, run_id="run-1", target_id="m6g", repetition=1, step="t0001",
                    output_prefix=FIXTURE) == (text, True)


def test_output_of_two_commands_for_one_step_is_refused_not_merged(s3) -> None:
    for command_id, tps in (("cmd-1", 342.0), ("cmd-2", 187.0)):
        key, body = stdout(command_id, tps)
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    with pytest.raises(CollectFailed, match=r"output of 2 commands \(cmd-1, cmd-2\).*a step runs once"):
        read_raw(s3, BUCKET, run_id="run-1", target_id="m6g", repetition=1, step="t0001", output_prefix=FIXTURE)
    # Nothing derived from the mixture: no raw copy for a store to load later.
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=naming.raw_key("run-1", "m6g", 1, "t0001"))
