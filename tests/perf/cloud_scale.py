#!/usr/bin/env python3
"""Cloud runs at scale, measured offline on the real definition and handlers (benchmark, not a test).

statemachines/benchmark-run.asl.json runs in moto's Step Functions executor with every Lambda
handler called in-process (tests/statemachine/sm_harness.py: real moto EC2/RDS/SSM/S3/Timestream,
Run Command played with captured agent output). Prints one ``name=value`` per line, the last five:

  wall_ratio=            graviton spec: planned wall time / one repetition of its slowest target
                         (the plan follows the deployed definition's repetition concurrency)
  transitions_per_step=  state transitions (StateEntered events, what Step Functions bills) per
                         measure step, measured in moto: one graviton target, one repetition (a
                         step waits for its Run Command status change: no polls)
  control_plane_share=   control-plane estimate / hosts estimate (EC2 + storage), graviton spec
  peak_payload_kib=      largest state input or output in a comparison of --targets targets x 3
                         repetitions (graviton's workload steps), measured in moto's history
  targets_torn_down=     hosts terminated / hosts created in that comparison, the worse of a
                         successful run and a run aborted midway (torn down by teardown_by_tag,
                         called with the event the EventBridge rule sends)

    .venv/bin/python tests/perf/cloud_scale.py [--targets 200] [--repetitions 3] [--breakdown]

--breakdown also prints, for the large comparison, each handler's CPU per call and each AWS call's
CPU per call by the handler that made it (``handler_cpu_ms[collect]=``, ``call_cpu_ms[collect
timestream-write.WriteRecords]=``, each with its ``_calls[...]=``; calls under 1 s in all are left
out): run it at two sizes to see what grows with the targets (how issue 41's item 17 found moto's
SendCommand running each command on every host).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import logging
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
for path in (REPO / "lambdas", REPO / "tests" / "statemachine"):
    sys.path.insert(0, str(path))

import yaml  # noqa: E402

from benchfleet.aws.planning import controlplane, runplan  # noqa: E402
from benchfleet.cost.pricing import price_per_hour  # noqa: E402
from benchfleet.spec.loading import load_spec, resolve  # noqa: E402

GRAVITON = REPO / "workloads" / "comparisons" / "graviton-vs-intel-vs-amd.yaml"


def graviton_spec() -> dict[str, Any]:
    """The graviton comparison as the API receives it: the workload inline."""
    loaded = load_spec(GRAVITON)
    data = yaml.safe_load(GRAVITON.read_text())
    data["workload"] = loaded.workload.model_dump(mode="json")
    return dict(data)


def planned() -> tuple[float, float, controlplane.ControlPlane]:
    loaded = load_spec(GRAVITON)
    plan, _, cp = runplan.aws_plan(resolve(loaded.spec, "graviton"), price_per_hour)
    slowest = max(t.repetition_s for t in plan.targets)
    return plan.wall_s / slowest, plan.control_plane_usd / plan.hosts_usd, cp


def entered_name(event: dict[str, Any]) -> str | None:
    return (event.get("stateEnteredEventDetails") or {}).get("name")


def per_measure_step(events: list[dict[str, Any]]) -> tuple[float, float]:
    """Mean (state transitions, history events) per measure step: from a measure step's
    "Start the step" to the next step's start or the teardown."""
    bounds = []
    for i, e in enumerate(events):
        if entered_name(e) == "Start the step":
            step = json.loads(e["stateEnteredEventDetails"]["input"])["step"]
            bounds.append((i, step["kind"]))
        elif entered_name(e) == "Tear down the target":
            bounds.append((i, "end"))
    transitions, total, steps = 0, 0, 0
    for (start, kind), (end, _) in itertools.pairwise(bounds):
        if kind != "measure":
            continue
        steps += 1
        total += end - start
        transitions += sum(1 for e in events[start:end] if e["type"].endswith("StateEntered"))
    return transitions / steps, total / steps


def payload_kib(events: list[dict[str, Any]]) -> float:
    largest = 0
    for e in events:
        for key, details in e.items():
            if key.endswith("EventDetails") and isinstance(details, dict):
                for field in ("input", "output"):
                    if isinstance(details.get(field), str):
                        largest = max(largest, len(details[field].encode()))
    return largest / 1024


def hosts(run_id: str) -> tuple[int, int]:
    """(created, terminated) EC2 instances of a run (every target here is EC2), from moto."""
    from sm_harness import run_instances

    states = [i["State"]["Name"] for i in run_instances(run_id)]
    return len(states), sum(1 for s in states if s in ("shutting-down", "terminated"))


FIGURES = sys.stdout


class Breakdown:
    """Thread CPU per handler call and per AWS call (the outermost botocore call of a thread, named by
    the handler making it; ``-`` for the harness's own)."""

    def __init__(self) -> None:
        self.cpu: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.local = threading.local()

    def add(self, name: str, started: float) -> None:
        self.cpu[name] += time.thread_time() - started
        self.calls[name] += 1

    @contextlib.contextmanager
    def measuring(self, harness: Any) -> Iterator[None]:
        from botocore.client import BaseClient

        handler_call, api_call = harness._call, BaseClient._make_api_call

        def timed_handler(call: Any, event: dict[str, Any]) -> Any:
            started, self.local.module = time.thread_time(), call.module
            try:
                return handler_call(call, event)
            finally:
                self.local.module = None
                self.add(f"handler {call.module}", started)

        def timed_api(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if getattr(self.local, "inside", False):
                return api_call(client, operation, params)
            started, self.local.inside = time.thread_time(), True
            try:
                return api_call(client, operation, params)
            finally:
                self.local.inside = False
                by = getattr(self.local, "module", None) or "-"
                self.add(f"call {by} {client.meta.service_model.service_name}.{operation}", started)

        harness._call = timed_handler
        BaseClient._make_api_call = timed_api
        try:
            yield
        finally:
            BaseClient._make_api_call = api_call
            del harness._call

    def say(self) -> None:
        for name, cpu in self.cpu.most_common():
            kind, _, what = name.partition(" ")
            if kind == "call" and cpu < 1.0:  # the calls that matter at this size
                continue
            say(f"{kind}_cpu_ms[{what}]={1000 * cpu / self.calls[name]:.2f}")
            say(f"{kind}_calls[{what}]={self.calls[name]}")


def say(line: str) -> None:
    """One figure, on the real stdout: the handlers' Powertools metrics (an EMF line per
    invocation, thousands in a large comparison) go to stdout too, and are dropped here."""
    print(line, file=FIGURES, flush=True)


def main() -> int:
    # The cyclic collector at its default pace (a young collection every 700 allocations, an older one
    # every tenth) re-examines the offline world's millions of long-lived objects over and over: moto's
    # state of hundreds of hosts and thousands of steps, in one process where AWS runs each Lambda in a
    # small one of its own. Collected every 50,000 allocations, 30 targets took 120.7 CPU s instead of
    # 137.7 (the collector's own time 11.6 s -> 1.9 s); 200 targets peaked at 3.5 GB instead of 3.3.
    gc.set_threshold(50_000, 20, 10)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        return measure()


def measure() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true",
                        help="print each handler's and each AWS call's CPU per call in the large comparison")
    parser.add_argument("--abort-after-steps", type=int, default=None,
                        help="abort the second run after this many steps started (default: half of them)")
    args = parser.parse_args()

    from sm_harness import offline_world

    # A deployment whose per-region caps were raised for this many targets (context keys
    # maxVcpusPerRegion / maxHostsPerRegion): the default caps refuse it, as they should.
    os.environ["MAX_VCPUS_PER_REGION"] = str(8 * args.targets * args.repetitions)
    os.environ["MAX_HOSTS_PER_REGION"] = str(2 * args.targets * args.repetitions)
    wall_ratio, share, cp = planned()
    say(f"graviton_planned_transitions={cp.counts.transitions}")
    say(f"graviton_planned_lambda_invocations={cp.counts.invocation_total}")
    say(f"graviton_planned_transitions_per_measure_step_all_in={cp.counts.transitions / cp.measure_steps:.1f}")
    for charge in cp.charges:
        say(f"graviton_control_plane_usd[{charge.item}]={charge.cost_usd:.4f}")
    # The part the issue first measured (0.04-0.05): Step Functions and Lambda alone.
    orchestration = sum(c.cost_usd for c in cp.charges if c.item.startswith(("Step Functions", "Lambda")))
    say(f"graviton_orchestration_share={share * orchestration / cp.usd:.4f}")
    spec = graviton_spec()
    with offline_world() as harness:
        # One graviton target, one repetition: each step ends with its Run Command's status change.
        one = dict(spec, targets=spec["targets"][:1], repetitions=1)
        started = time.monotonic()
        result = harness.run(one, name="scale-one-target", timeout_s=600)
        if result["status"] != "SUCCEEDED":
            raise SystemExit(f"one-target run {result['status']}: {harness.explain(result)}")
        transitions, events = per_measure_step(result["history"])
        say(f"history_events_per_measure_step={events:.1f}")
        say(f"one_target_run_s={time.monotonic() - started:.1f}")

        # The large comparison: graviton's steps on --targets targets x --repetitions, polled once each.
        many = [{"id": f"t{i:03d}", "kind": "ec2", "instance_type": "m6g.large", "region": "us-east-1"}
                for i in range(args.targets)]
        big = dict(spec, targets=many, repetitions=args.repetitions, budget_usd=None, baseline=None)
        breakdown = Breakdown()
        started, handler_s, cpu = time.monotonic(), harness.handler_s, time.process_time()
        with breakdown.measuring(harness) if args.breakdown else contextlib.nullcontext():
            result = harness.run(big, name="scale-many", timeout_s=7200)
        say(f"many_targets={args.targets}")
        say(f"many_status={result['status']}")
        say(f"many_run_s={time.monotonic() - started:.1f}")
        # CPU seconds of the whole process (executor, handlers, harness): what a busy machine's other
        # work does not inflate, unlike the wall time above.
        cpu = time.process_time() - cpu
        say(f"many_cpu_s={cpu:.1f}")
        # Per target (x --repetitions): what extrapolates to another --targets, the busy machine aside.
        say(f"many_cpu_s_per_target={cpu / args.targets:.2f}")
        say(f"many_handler_s={harness.handler_s - handler_s:.1f}")
        say(f"many_history_events={len(result['history'])}")
        breakdown.say()
        # Every state's input and output (and every Lambda payload and result) is measured by the
        # harness (sfn_limits, as strict as AWS: over 256 KiB fails the execution); the history's
        # events too, as a cross-check.
        too_large = harness.payloads.exceeded
        peak = max(payload_kib(result["history"]), harness.payloads.peak_kib)
        say(f"many_data_limit_exceeded={len(too_large)}")
        say(f"many_peak_payload_state={harness.payloads.peak[1]} {harness.payloads.peak[2]}")
        if result["status"] != "SUCCEEDED" and not too_large:
            raise SystemExit(f"the {args.targets}-target run {result['status']}: {harness.explain(result)[:1500]}")
        created, torn = hosts("scale-many")
        # A run stopped before it created anything has nothing to tear down: no ratio from it.
        ratios = [torn / created] if created else []
        say(f"many_hosts_created={created}")
        say(f"many_hosts_torn_down={torn}")

        # Aborted midway: StopExecution skips every Catch; the EventBridge rule calls teardown_by_tag.
        ratios.append(abort_midway(harness, big, args.abort_after_steps))
    say(f"wall_ratio={wall_ratio:.2f}")
    say(f"transitions_per_step={transitions:.1f}")
    say(f"control_plane_share={share:.4f}")
    say(f"peak_payload_kib={peak:.1f}")
    say(f"targets_torn_down={min(ratios):.3f}")
    return 0


def abort_midway(harness: Any, spec: dict[str, Any], after_steps: int | None) -> float:
    import importlib

    small = dict(spec, targets=spec["targets"][:10], repetitions=1)
    steps_total = len(small["targets"]) * (2 + len(spec["workload"]["threads"]))
    after = after_steps or steps_total // 2
    payload = {"spec": small, "timing": {"ready_poll_s": 0, "cooldown_s": 0}}
    harness.calls.clear()
    arn = harness.sf.start_execution(stateMachineArn=harness.arn, name="scale-abort",
                                     input=json.dumps(payload))["executionArn"]
    deadline = time.monotonic() + 600
    while len(harness.calls_of("start_step")) < after:
        if harness.sf.describe_execution(executionArn=arn)["status"] != "RUNNING" or time.monotonic() > deadline:
            raise SystemExit("the run to abort ended before it was aborted")
        time.sleep(0.05)
    # moto's executor logs the stopped workers' ends as errors; an abort is the point here.
    logging.getLogger("moto.stepfunctions").setLevel(logging.CRITICAL)
    harness.sf.stop_execution(executionArn=arn, error="Aborted", cause="cloud_scale.py: abort midway")
    with harness.lock:  # the in-flight Lambda call finishes first, as on AWS
        pass
    time.sleep(1)
    detail = {"executionArn": arn, "stateMachineArn": harness.arn, "name": "scale-abort", "status": "ABORTED",
              "input": json.dumps(payload), "startDate": 1, "stopDate": 2}
    event = {"version": "0", "id": "e", "detail-type": "Step Functions Execution Status Change",
             "source": "aws.states", "account": "123456789012", "time": "2026-11-22T00:00:00Z",
             "region": "us-east-1", "resources": [arn], "detail": detail}
    from sm_harness import Context

    os.environ["STATE_MACHINE_ARN"] = harness.arn  # teardown_by_tag acts on its own machine's runs only
    importlib.import_module("handlers.teardown_by_tag").handler(event, Context(function_name="teardown_by_tag"))
    created, torn = hosts("scale-abort")
    say(f"abort_after_steps_started={after}")
    say(f"abort_hosts_created={created}")
    say(f"abort_hosts_torn_down={torn}")
    return torn / created if created else 0.0


if __name__ == "__main__":
    sys.exit(main())
