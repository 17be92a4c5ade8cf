"""The offline harness answers as moto does without moto's per-request waste (tests/perf/cloud_scale.py
measures 200 targets x 3 repetitions through it: what moto redoes per request, or per key of the
bucket per listing, is multiplied by every step of every target)."""

from __future__ import annotations

import copy
import datetime
import inspect
import json
import sys
from unittest import mock

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ec2.models.instances import InstanceBackend
from moto.s3.models import S3Backend
from moto.s3.utils import _VersionedKeyStore
from moto.ssm.models import ssm_backends
from sm_harness import spec
from sm_moto import (
    GET_COMMAND_UNINDEXED,
    LIST_OBJECTS_UNCACHED,
    RESERVATIONS_BY_SCAN,
    STATE_DATA_COPIERS,
    copy_state_data,
    timestream_writer,
)
from sm_world import BUCKET, DATABASE, REGION


def listed(s3, prefix: str, page: int) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix,
                                                         PaginationConfig={"PageSize": page})
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def test_a_prefix_listing_reads_the_keys_under_the_prefix_only_and_answers_as_moto(harness):
    s3 = boto3.client("s3", region_name=REGION)
    for i in range(300):  # every earlier step's objects
        s3.put_object(Bucket=BUCKET, Key=f"costs/earlier/{i:03d}/stdout", Body=b"x")
    wanted = [f"costs/step/cmd-{i}/i-1/awsrunShellScript/0.runAgent/stdout" for i in (2, 0, 1)]
    for key in [*wanted, "costs/step-b/stdout"]:  # a name the prefix starts, not under it
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    read: list[str] = []
    real_items = _VersionedKeyStore.items

    def counted(store):
        for name, key in real_items(store):
            read.append(name)
            yield name, key

    with mock.patch.object(_VersionedKeyStore, "items", counted):
        got = listed(s3, "costs/step/", page=2)  # two pages: moto's marker path too
    assert got == sorted(wanted)
    assert len(read) <= 2 * len(wanted), f"{len(read)} keys read to list {len(wanted)}"
    # moto's own listing of the same prefix answers the same
    with mock.patch("moto.s3.models.S3Backend.list_objects", LIST_OBJECTS_UNCACHED):
        assert listed(s3, "costs/step/", page=2) == got
        assert listed(s3, "costs/", page=1000) == listed(s3, "costs/", page=7)


def test_requests_do_not_rebuild_what_moto_answers_them_with(harness):
    # moto rebuilds a backend's URL table per request (S3's after reloading its urls module) and lists
    # a response class's methods with inspect.getmembers per request: once each is enough.
    s3, ec2 = boto3.client("s3", region_name=REGION), boto3.client("ec2", region_name=REGION)
    s3.put_object(Bucket=BUCKET, Key="costs/warm", Body=b"x")
    ec2.describe_instances()
    url_module = mock.Mock(wraps=S3Backend._url_module.fget)
    getmembers = mock.Mock(wraps=inspect.getmembers)
    with mock.patch.object(S3Backend, "_url_module", property(url_module)), \
            mock.patch.object(inspect, "getmembers", getmembers):
        for _ in range(5):
            s3.get_object(Bucket=BUCKET, Key="costs/warm")
            ec2.describe_instances()
    assert url_module.call_count == 0
    assert getmembers.call_count == 0


def test_a_command_is_found_without_reading_every_command_and_as_moto_finds_it(harness):
    ssm = boto3.client("ssm", region_name=REGION)
    sent = [ssm.send_command(InstanceIds=["i-0123456789abcdef0"], DocumentName="AWS-RunShellScript",
                             Parameters={"commands": [f"echo {i}"]})["Command"]["CommandId"] for i in range(200)]
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]

    class Counted(list):  # the commands moto keeps, counting each one read by a scan
        read = 0

        def __iter__(self):
            for command in list.__iter__(self):
                Counted.read += 1
                yield command

    wanted = [sent[0], sent[100], sent[-1]]
    with mock.patch.object(backend, "_commands", Counted(backend._commands)):
        answers = [ssm.get_command_invocation(CommandId=c, InstanceId="i-0123456789abcdef0") for c in wanted]
    assert [a["CommandId"] for a in answers] == wanted
    assert Counted.read == 0, f"{Counted.read} commands read to find 3"
    for command_id in wanted:  # what moto's scan finds
        assert backend.get_command_by_id(command_id) is GET_COMMAND_UNINDEXED(backend, command_id)
    with pytest.raises(ClientError, match="InvalidCommandId"):  # and moto's answer to an unknown id
        ssm.get_command_invocation(CommandId="00000000-0000-0000-0000-000000000000", InstanceId="i-0123456789abcdef0")


def launched(count: int, tag: str) -> list[str]:
    ec2 = boto3.client("ec2", region_name=REGION)
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    return [i["InstanceId"] for _ in range(count) for i in ec2.run_instances(
        ImageId=image, MinCount=2, MaxCount=2, TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "cost-test", "Value": tag}]}])["Instances"]]


def test_a_command_sent_to_instances_runs_on_those_only_and_targets_still_select(harness):
    # moto filtered the region's instances on a command's empty Targets, which matched every one:
    # a step's command had an invocation on every host of the comparison.
    hosts, tagged = launched(10, "others"), launched(1, "chosen")
    ssm = boto3.client("ssm", region_name=REGION)
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    by_id = ssm.send_command(InstanceIds=[hosts[3]], DocumentName="AWS-RunShellScript",
                             Parameters={"commands": ["true"]})["Command"]
    assert by_id["InstanceIds"] == [hosts[3]]  # before: 22 instances
    assert [i["InstanceId"] for i in backend.get_command_by_id(by_id["CommandId"]).invocations] == [hosts[3]]
    by_tag = ssm.send_command(Targets=[{"Key": "tag:cost-test", "Values": ["chosen"]}],
                              DocumentName="AWS-RunShellScript", Parameters={"commands": ["true"]})["Command"]
    assert sorted(by_tag["InstanceIds"]) == sorted(tagged)  # moto's own selection by Targets


def test_instances_are_found_by_id_without_copying_every_reservation_and_as_moto_finds_them(harness):
    ids = launched(30, "many")  # 30 reservations of 2
    ec2 = boto3.client("ec2", region_name=REGION)
    backend = ec2_backends[DEFAULT_ACCOUNT_ID][REGION]
    asked = [ids[5], ids[40], ids[41]]
    with mock.patch.object(InstanceBackend, "all_reservations", side_effect=AssertionError("every reservation")):
        answer = ec2.describe_instances(InstanceIds=asked)["Reservations"]
        running = ec2.describe_instances(InstanceIds=asked, Filters=[
            {"Name": "instance-state-name", "Values": ["running"]}])["Reservations"]
    assert sorted(i["InstanceId"] for r in answer for i in r["Instances"]) == sorted(asked)
    assert running == answer
    expected = RESERVATIONS_BY_SCAN(backend, asked)  # what moto's scan answers
    assert [(r.id, [i.id for i in r.instances]) for r in backend.get_reservations_by_instance_ids(asked)] == \
        [(r.id, [i.id for i in r.instances]) for r in expected]
    assert len(backend.reservations[expected[-1].id].instances) == 2  # the region's reservation is untouched
    with pytest.raises(ClientError, match=r"InvalidInstanceID\.NotFound"):
        ec2.describe_instances(InstanceIds=[ids[0], "i-0123456789abcdef0"])


def test_get_metric_data_does_not_sum_every_object_s_size(harness):
    # moto's CloudWatch computed S3's storage metrics over every object of every bucket per call.
    s3, cw = boto3.client("s3", region_name=REGION), boto3.client("cloudwatch", region_name=REGION)
    for i in range(20):
        s3.put_object(Bucket=BUCKET, Key=f"costs/metrics/{i}", Body=b"x" * 10)
    cw.put_metric_data(Namespace="CWAgent", MetricData=[{"MetricName": "cpu_usage_steal", "Value": 2.5}])
    query = [{"Id": "steal", "MetricStat": {"Metric": {"Namespace": "CWAgent", "MetricName": "cpu_usage_steal"},
                                            "Period": 60, "Stat": "Average"}}]
    now = datetime.datetime.now(datetime.UTC)
    sizes = mock.Mock(side_effect=AssertionError("every object's size"))
    with mock.patch.object(_VersionedKeyStore, "item_size", sizes):
        answer = cw.get_metric_data(MetricDataQueries=query, StartTime=now - datetime.timedelta(hours=1),
                                    EndTime=now + datetime.timedelta(hours=1))
    assert answer["MetricDataResults"][0]["Values"] == [2.5]  # CloudWatch still answers what was put


def test_a_timestream_write_s_body_is_parsed_once(harness):
    ts = timestream_writer()
    request = {"DatabaseName": DATABASE, "TableName": "samples",
               "CommonAttributes": {"Dimensions": [{"Name": "run_id", "Value": "r"}], "MeasureName": "sample",
                                    "MeasureValueType": "MULTI", "TimeUnit": "MILLISECONDS"},
               "Records": [{"Time": str(1_764_000_000_000 + i), "MeasureValues": [
                   {"Name": "tps", "Value": "1.5", "Type": "DOUBLE"}]} for i in range(100)]}
    ts.write_records(**request)  # endpoint discovery first
    loads = mock.Mock(wraps=json.loads)
    with mock.patch.object(json, "loads", loads):
        answer = ts.write_records(**request)
    assert answer["RecordsIngested"]["Total"] == 100
    bodies = [c for c in loads.call_args_list if "DatabaseName" in str(c.args[0])[:100]]  # not the answer
    assert len(bodies) == 1


def test_the_executor_copies_a_state_s_data_without_deepcopy_and_as_deepcopy_does(harness):
    # moto's executor deep-copies a state's input at every extraction, path and reset (sm_moto's
    # copy_state_data says what that cost, measured with and without a profiler).
    data = {"spec": {"targets": [{"id": "a", "price": 0.077, "spot": None, "ok": True}]}, "tuple": (1, "x")}
    data["same"] = data["spec"]
    copied = copy_state_data(data)
    assert copied == copy.deepcopy(data)
    assert copied["spec"] is not data["spec"] and copied["spec"]["targets"][0] is not data["spec"]["targets"][0]
    assert copied["same"] is copied["spec"]  # shared as deepcopy shares it
    unpicklable = {"f": lambda: 0}  # what pickle cannot copy, deepcopy does (a function: by reference)
    assert copy_state_data(unpicklable)["f"] is unpicklable["f"]
    copiers = {module.__name__ for module in STATE_DATA_COPIERS}
    deep: list[str] = []
    real = copy.deepcopy

    def counted(value, memo=None):
        caller = sys._getframe(1)
        if caller.f_globals["__name__"] in copiers:
            deep.append(caller.f_code.co_name)
        return real(value, memo)

    with mock.patch.object(copy, "deepcopy", counted):
        result = harness.run(spec(targets=spec()["targets"][:1]), name="copies")
    assert result["status"] == "SUCCEEDED", harness.explain(result)
    assert deep == []  # before: 392 deep copies of a state's data in this run
