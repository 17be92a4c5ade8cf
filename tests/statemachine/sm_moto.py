"""moto as the offline executor uses it: stricter than moto where AWS is (``StrictRds``: RDS's parameter
group rules), faults injected per call (``FaultProxy``, ``client_error``), moto's gaps answered from its
own state (``MotoGaps``), and the patches that keep a 200-target run's cost linear (S3 listings by
prefix, URL tables and method lists built once, a Timestream body parsed once, Run Command's commands
found by an index and run on the instances they name, instances found by id without copying every
reservation, no S3 storage metrics summed per GetMetricData, a state's data copied by pickle instead of
copy.deepcopy)."""

from __future__ import annotations

import copy
import functools
import json
import pickle
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core import utils as moto_utils
from moto.core.base_backend import BaseBackend
from moto.ec2.models import ec2_backends
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.models.instances import InstanceBackend
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, filter_reservations, get_prefix
from moto.rds.models import rds_backends
from moto.s3.models import S3Backend
from moto.ssm.models import Command, SimpleSystemManagerBackend, ssm_backends
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.state.exec import execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_map import state_map
from moto.stepfunctions.parser.asl.eval import states as asl_states
from moto.timestreamwrite.models import TimestreamTable
from moto.timestreamwrite.responses import TimestreamWriteResponse
from sm_world import REGION

from benchfleet.aws import clients
from benchfleet.workload import serverparams


@dataclass
class Call:
    module: str
    event: dict[str, Any]
    result: Any = None
    error: str | None = None


class FaultProxy:
    """A boto3 client whose named operations fail (``faults[op]``: a list of exceptions, consumed in
    order, or a callable(kwargs) -> exception | None) and which counts calls; the rest is moto."""

    def __init__(self, real: Any, faults: dict[str, Any] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self._real = real
        self.faults = faults or {}
        self.extra = extra or {}
        self.calls: Counter[str] = Counter()
        self.records_per_call: list[int] = []
        self.tables_per_call: list[str] = []

    def __getattr__(self, name: str) -> Any:
        # What moto lacks or is lenient about (``extra``) is faulted and counted like the rest.
        attr = self.extra[name] if name in self.extra else getattr(self._real, name)
        if not callable(attr) or name.startswith(("get_paginator", "exceptions", "meta", "can_paginate")):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            fault = self.faults.get(name)
            if callable(fault):
                exc = fault(kwargs)
                if exc is not None:
                    raise exc
            elif fault:
                raise fault.pop(0)
            if name == "write_records":
                assert len(kwargs["Records"]) <= 100, "WriteRecords takes at most 100 records"
                self.records_per_call.append(len(kwargs["Records"]))
                self.tables_per_call.append(kwargs["TableName"])
            return attr(*args, **kwargs)

        return call


def client_error(code: str, op: str, message: str = "injected") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, op)


class MotoGaps:
    """What moto does not implement, answered from moto's own state."""

    def __init__(self, region: str = REGION) -> None:
        self.ec2 = boto3.client("ec2", region_name=region)
        # Read from moto's state: DescribeImages of every bundled AMI takes seconds to serialise.
        self.ami = next(iter(ec2_backends[DEFAULT_ACCOUNT_ID][region].amis))
        self.ami_requests: list[str] = []

    def get_parameter(self, real: Any) -> Any:
        def get(Name: str, **kw: Any) -> Any:
            if Name.startswith("/aws/service/canonical/ubuntu/"):
                self.ami_requests.append(Name)
                return {"Parameter": {"Name": Name, "Value": self.ami, "Type": "String"}}
            return real.get_parameter(Name=Name, **kw)
        return get

    def ssm(self, real: Any) -> FaultProxy:
        """An SSM client of this region with what moto lacks answered here."""
        return FaultProxy(real, extra={"get_parameter": self.get_parameter(real),
                                       "describe_instance_information": self.describe_instance_information,
                                       "list_command_invocations": self.list_command_invocations})

    def rds(self, real: Any) -> FaultProxy:
        strict = StrictRds(real, self.ec2.meta.region_name)
        return FaultProxy(real, extra={"describe_db_engine_versions": self.describe_db_engine_versions,
                                       **strict.operations()})

    def describe_instance_information(self, Filters: list[dict[str, Any]], **_: Any) -> Any:
        ids = [v for f in Filters if f["Key"] == "InstanceIds" for v in f["Values"]]
        found = self.ec2.describe_instances(InstanceIds=ids)["Reservations"]
        online = [i["InstanceId"] for r in found for i in r["Instances"] if i["State"]["Name"] == "running"]
        return {"InstanceInformationList": [{"InstanceId": i, "PingStatus": "Online"} for i in online]}

    def list_command_invocations(self, CommandId: str, InstanceId: str, **_: Any) -> Any:
        """An invocation's own status (moto has no ListCommandInvocations), from moto's command."""
        region = self.ec2.meta.region_name
        command = ssm_backends[DEFAULT_ACCOUNT_ID][region].get_command_by_id(CommandId)
        return {"CommandInvocations": [
            {"CommandId": CommandId, "InstanceId": inv["InstanceId"], "Status": inv["Status"],
             "StatusDetails": inv["StatusDetails"], "DocumentName": command.document_name}
            for inv in command.invocations if inv["InstanceId"] == InstanceId]}

    @staticmethod
    def describe_db_engine_versions(Engine: str, **_: Any) -> Any:
        versions = {"mysql": ["5.7.44", "8.0.36", "8.0.40", "8.4.3"], "mariadb": ["10.11.9", "11.4.4"],
                    "aurora-mysql": ["5.7.mysql_aurora.2.12.4", "8.0.mysql_aurora.3.05.2",
                                     "8.0.mysql_aurora.3.08.0"]}[Engine]

        def family(version: str) -> str:  # as RDS names them: mysql8.0, mariadb10.11, aurora-mysql8.0
            return Engine + ".".join(version.split(".")[:2])
        return {"DBEngineVersions": [{"Engine": Engine, "EngineVersion": v, "DBParameterGroupFamily": family(v)}
                                     for v in versions]}


class StrictRds:
    """Parameter groups as AWS treats them where moto is lenient: a group a database uses cannot be
    deleted (InvalidDBParameterGroupState), a cluster cannot name a cluster parameter group that does
    not exist, a group's family must be the database's, and ApplyMethod immediate is refused for a
    static parameter (by benchfleet's catalogue: what RDS lists as static)."""

    def __init__(self, real: Any, region: str) -> None:
        self.real = real
        self.region = region

    def operations(self) -> dict[str, Any]:
        return {"delete_db_parameter_group": self.delete_db_parameter_group,
                "delete_db_cluster_parameter_group": self.delete_db_cluster_parameter_group,
                "create_db_cluster": self.create_db_cluster,
                "modify_db_parameter_group": self.modify("modify_db_parameter_group"),
                "modify_db_cluster_parameter_group": self.modify("modify_db_cluster_parameter_group")}

    @property
    def backend(self) -> Any:
        return rds_backends[DEFAULT_ACCOUNT_ID][self.region]

    def delete_db_parameter_group(self, DBParameterGroupName: str) -> Any:
        users = [d for d in self.backend.databases.values() if d.db_parameter_group_name == DBParameterGroupName]
        if users:
            raise client_error("InvalidDBParameterGroupState", "DeleteDBParameterGroup",
                               "One or more database instances are still members of this parameter group")
        return self.real.delete_db_parameter_group(DBParameterGroupName=DBParameterGroupName)

    def delete_db_cluster_parameter_group(self, DBClusterParameterGroupName: str) -> Any:
        if any(c.parameter_group == DBClusterParameterGroupName for c in self.backend.clusters.values()):
            raise client_error("InvalidDBParameterGroupState", "DeleteDBClusterParameterGroup",
                               "One or more DB clusters are still members of this parameter group")
        return self.real.delete_db_cluster_parameter_group(DBClusterParameterGroupName=DBClusterParameterGroupName)

    def create_db_cluster(self, **kwargs: Any) -> Any:
        name = kwargs.get("DBClusterParameterGroupName")
        if name and name not in self.backend.db_cluster_parameter_groups:
            raise client_error("DBClusterParameterGroupNotFound", "CreateDBCluster", f"{name} not found")
        return self.real.create_db_cluster(**kwargs)

    def modify(self, operation: str) -> Callable[..., Any]:
        catalogue = serverparams.load_catalogue()

        def call(**kwargs: Any) -> Any:
            name = kwargs.get("DBParameterGroupName") or kwargs.get("DBClusterParameterGroupName")
            groups = self.backend.db_parameter_groups if "DBParameterGroupName" in kwargs \
                else self.backend.db_cluster_parameter_groups
            # A cluster parameter group is Aurora's; a DB parameter group says by its family.
            aurora = name in groups and str(getattr(groups[name], "family", "aurora")).startswith("aurora")
            for p in kwargs["Parameters"]:
                rule = catalogue.rules.get(p["ParameterName"])
                static = rule is not None and (rule.aurora[1] if aurora and rule.aurora else rule.rds) == "static"
                if static and p["ApplyMethod"] == "immediate":
                    raise client_error("InvalidParameterCombination", operation,
                                       f"cannot use immediate apply method for static parameter {p['ParameterName']}")
            assert len(kwargs["Parameters"]) <= 20, "ModifyDB*ParameterGroup takes at most 20 parameters"
            return getattr(self.real, operation)(**kwargs)
        return call


def records_not_kept(table: TimestreamTable, records: list[dict[str, Any]]) -> None:
    """moto's Timestream table keeps every record written, about 8 KB each as moto holds them (11 GB
    for a 200-target comparison), and nothing offline reads them back: FaultProxy counts each
    write's records and table, tests/unit checks the records themselves. So a write still goes
    through botocore's validation and moto's parsing and answer, and its records are let go."""


def timestream_writer() -> Any:
    """The handlers' Timestream client as benchfleet.aws.clients makes it (its configuration: botocore
    does not check each value; FaultProxy still counts and bounds every request)."""
    return boto3.client("timestream-write", region_name=REGION, config=clients.config("timestream-write"))


def tags_by_lookup(resource: TaggedEC2Resource) -> list[dict[str, str]]:
    """moto's own answer to a resource's tags (DescribeTags filtered on its id, an exact match), by
    a lookup instead of a scan of every tag in the region: moto filters DescribeInstances on a tag
    with this call per instance, so each teardown by tag in a 600-host comparison scanned 600 hosts'
    tags 600 times (cubic in the targets over a run)."""
    if not resource.id:  # type: ignore[attr-defined]
        return []
    resource_id: str = resource.id  # type: ignore[attr-defined]
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [{"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
            for key, value in resource.ec2_backend.tags.get(resource_id, {}).items()]  # type: ignore[attr-defined]


# moto's answer to each request redoes work whose result cannot change within a process, at a cost
# measured with cProfile over the handlers of tests/perf/cloud_scale.py (20 targets x 3): a backend's
# URL table is rebuilt per request (S3's after reloading its urls module: the module reads the
# environment, which a harness does not change), a response class's methods are listed with
# inspect.getmembers per request, and a Timestream write's JSON body is parsed again for each of its
# three parameters. Each is done once here; moto answers the same.
@functools.cache
def method_names_from_class(clazz: object) -> list[str]:
    return moto_utils.method_names_from_class(clazz)


def backend_urls(backend: BaseBackend) -> Any:
    """moto's URL table of ``backend``, built once (kept in the backend's own state, which moto's reset
    clears)."""
    if "_harness_urls" not in backend.__dict__:
        backend.__dict__["_harness_urls"] = URLS_UNCACHED.fget(backend)
    return backend.__dict__["_harness_urls"]


URLS_UNCACHED = BaseBackend.urls
LIST_OBJECTS_UNCACHED = S3Backend.list_objects


def timestream_param(self: TimestreamWriteResponse, param_name: str, if_none: Any = None) -> Any:
    """moto's _get_param of a JSON request, its body parsed once per request."""
    if getattr(self, "_parsed_for", None) is not self.body:
        self._parsed_for, self._parsed = self.body, json.loads(self.body) if self.body else {}
    return self._parsed.get(param_name, if_none)


def list_objects_by_prefix(self: S3Backend, bucket: Any, prefix: str | None, *args: Any, **kwargs: Any) -> Any:
    """moto's list_objects over the keys under ``prefix`` only: moto reads every key of the bucket
    per listing (a Python loop over each key's versions), and collect lists a step's output prefix
    once per step while the bucket holds every earlier step's objects: quadratic in the steps of a
    run (1.0 M keys read for 660 listings in a 20-target comparison, 100 times that at 200). The
    names are filtered as moto filters them, at C speed, and moto lists those."""
    if not prefix or not isinstance(getattr(bucket, "keys", None), dict):
        return LIST_OBJECTS_UNCACHED(self, bucket, prefix, *args, **kwargs)
    store = bucket.keys
    under = type(store)()
    # tuple(): the names copied in one step, as moto copies the store before reading it (an executor
    # thread may put an object meanwhile).
    for name in [k for k in tuple(dict.keys(store)) if k.startswith(prefix)]:
        versions = dict.get(store, name)
        if versions is not None:
            dict.__setitem__(under, name, versions)
    view = copy.copy(bucket)
    view.keys = under
    return LIST_OBJECTS_UNCACHED(self, view, prefix, *args, **kwargs)


GET_COMMAND_UNINDEXED = SimpleSystemManagerBackend.get_command_by_id


def command_by_id(self: SimpleSystemManagerBackend, command_id: str) -> Any:
    """moto's get_command_by_id by an index: moto scans every command of the region per lookup, and
    each step's command is looked up several times (the played agent, ListCommandInvocations,
    GetCommandInvocation): quadratic in the steps of a run (7,200 commands at 200 targets x 3). moto
    only appends commands; the index takes the new ones (the first of an id, as moto's scan finds it)
    and is kept in the backend's own state, which moto's reset clears. An unknown id: moto's error."""
    state, commands = self.__dict__, self._commands
    index = state.setdefault("_harness_commands", {})
    indexed = state.get("_harness_indexed", 0)
    if indexed > len(commands):  # not the list indexed: start again
        index.clear()
        indexed = 0
    for command in commands[indexed:]:
        index.setdefault(command.command_id, command)
    state["_harness_indexed"] = len(commands)
    found = index.get(command_id)
    return found if found is not None else GET_COMMAND_UNINDEXED(self, command_id)


COMMAND_INSTANCES_FROM_TARGETS = Command._get_instance_ids_from_targets


def instances_of_targets(self: Command) -> list[str]:
    """The instances a command's ``Targets`` select, none when it has none: SendCommand takes
    InstanceIds or Targets, and a command sent to InstanceIds runs on those. moto filters the region's
    instances on the (empty) targets, which matches them all: each of a 600-host comparison's 5,400
    commands had 600 invocations (quadratic, and a step's command "ran" on every host)."""
    return COMMAND_INSTANCES_FROM_TARGETS(self) if self.targets else []


RESERVATIONS_BY_SCAN = InstanceBackend.get_reservations_by_instance_ids


def reservations_of(self: InstanceBackend, instance_ids: list[str], filters: Any = None) -> Any:
    """moto's DescribeInstances by InstanceIds, copying only the reservations that hold them: moto
    copies every reservation of the region per call (each host's readiness, start and teardown ask
    for it by id: quadratic in the hosts). Same answer: a copy of each matching reservation with
    only the named instances, moto's error for an unknown id, the filters applied after."""
    wanted = set(instance_ids)
    held = [r for r in list(self.reservations.values()) if any(i.id in wanted for i in r.instances)]
    found = {i.id for r in held for i in r.instances} & wanted
    if found != wanted:  # moto's own error, worded as moto words it
        return RESERVATIONS_BY_SCAN(self, instance_ids, filters)
    reservations = []
    for reservation in held:
        view = copy.copy(reservation)
        view.instances = [i for i in reservation.instances if i.id in wanted]
        reservations.append(view)
    return filter_reservations(reservations, filters) if filters is not None else reservations


def no_storage_metrics(account_id: str, region: str) -> list[Any]:
    """S3's daily storage metrics (AWS/S3 BucketSizeBytes, NumberOfObjects) as moto's CloudWatch
    reads them for every GetMetricData: by summing the size of every object in every bucket, at each
    step's collect (quadratic in the steps of a run). No handler asks for AWS/S3 (collect reads
    AWS/EC2, CWAgent and AWS/RDS): the offline world has none."""
    return []


def copy_state_data(value: Any) -> Any:
    """moto's copy.deepcopy of a state's data, at C speed: the executor deep-copies a state's input at
    every extraction, path and reset (several times per state; cProfile's per-thread timer put
    copy.deepcopy's Python loop at 16% of a 10-target comparison, an overstatement of call-heavy code:
    without a profiler the three harness changes together moved 41 targets from 3.88 to 3.77 CPU s per
    target). The data are JSON values (the
    execution's input, what a handler or the executor returned); a pickle round trip copies them as
    deepcopy does (shared references too); anything pickle cannot copy goes to deepcopy."""
    if type(value) in (dict, list):
        try:
            return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError):
            pass
    return copy.deepcopy(value)


# The modules of moto's executor that copy a state's data (not its components' declarations).
STATE_DATA_COPIERS = (asl_states, string_expression, result_path, execute_state, state_map)
STATE_DATA_COPY = types.SimpleNamespace(deepcopy=copy_state_data, copy=copy.copy)
