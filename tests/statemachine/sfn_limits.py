"""Where moto's Step Functions executor is more lenient than AWS, made as strict (used by sm_harness).

* **Payload size.** AWS fails an execution with ``States.DataLimitExceeded`` when any state's input
  or output, or a task's parameters or result, exceeds 256 KiB (262,144 bytes of UTF-8 JSON). moto
  checks a state's output only (and the limit minus one byte): here every state's input (what it
  entered with: the execution input, a Map iteration's ItemSelector result) and output is measured,
  the peak recorded (``Payloads``), and a state over the limit fails as on AWS.
* **Uncatchable errors.** On AWS a ``States.ALL`` Retry or Catch matches neither
  ``States.DataLimitExceeded`` nor ``States.Runtime``: the execution fails, no Catch runs (so no
  teardown, no summary). moto's ``States.ALL`` matches them; here it does not.
* **Errors out of a Map iteration keep their name.** moto re-raises an iteration's error as a custom
  error name, which refuses ``States.*`` names and so turns every one (``States.Timeout``,
  ``States.DataLimitExceeded``) into ``States.Runtime``; on AWS the Map fails with the iteration's
  error. Here it does too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker
from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

MAX_PAYLOAD_BYTES = 256 * 1024
UNCATCHABLE = (StatesErrorNameType.StatesStatesDataLimitExceeded, StatesErrorNameType.StatesRuntime)


def size_of(value: Any) -> int:
    """Bytes of ``value`` as Step Functions counts them: its JSON text in UTF-8."""
    return len((value if isinstance(value, str) else to_json_str(value)).encode("utf-8"))


@dataclass
class Payloads:
    """The largest state input or output seen (bytes, which state, "input" | "output"), and each
    state that went over the limit."""

    peak: tuple[int, str, str] = (0, "", "")
    exceeded: list[tuple[int, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def measure(self, size: int, state: str, where: str) -> None:
        with self.lock:
            if size > self.peak[0]:
                self.peak = (size, state, where)
            if size > MAX_PAYLOAD_BYTES:
                self.exceeded.append((size, state, where))

    def clear(self) -> None:
        with self.lock:
            self.peak, self.exceeded = (0, "", ""), []

    @property
    def peak_kib(self) -> float:
        return self.peak[0] / 1024


def _data_limit_exceeded(env: Any, state: str, where: str, size: int) -> FailureEventException:
    error = StatesErrorNameType.StatesStatesDataLimitExceeded
    return FailureEventException(failure_event=FailureEvent(
        env=env, error_name=StatesErrorName(typ=error), event_type=HistoryEventType.ExecutionFailed,
        event_details=EventDetails(executionFailedEventDetails=ExecutionFailedEventDetails(
            error=error.to_name(),
            cause=f"The state '{state}' {where} has {size} bytes, above the {MAX_PAYLOAD_BYTES}-byte limit"))))


@contextmanager
def as_strict_as_aws(payloads: Payloads) -> Iterator[Payloads]:
    real_body = CommonStateField._eval_body
    real_equals = ErrorEqualsDecl._eval_body

    def check(state: CommonStateField, env: Any, value: Any, where: str) -> None:
        size = size_of(value)
        payloads.measure(size, state.name, where)
        if size > MAX_PAYLOAD_BYTES:
            raise _data_limit_exceeded(env, state.name, where, size)

    def eval_body(self: CommonStateField, env: Any) -> None:
        check(self, env, env.states.get_input(), "input")
        real_body(self, env)

    def verify_output(self: CommonStateField, env: Any, value: Any) -> None:
        # moto calls this with the state's output, once its OutputPath is applied.
        check(self, env, value, "output")

    def error_equals(self: ErrorEqualsDecl, env: Any) -> None:
        error = env.stack[-1]
        real_equals(self, env)
        if isinstance(error, StatesErrorName) and error.typ in UNCATCHABLE:
            # Only an ErrorEquals naming the error itself matches it (States.ALL does not).
            env.stack[-1] = error in self.error_names

    def iteration_error_name(error_name: str) -> Any:
        if str(error_name).startswith("States."):
            return StatesErrorName.from_name(str(error_name))
        return CustomErrorName(error_name=error_name)

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(iteration_worker, "CustomErrorName", iteration_error_name))
        stack.enter_context(mock.patch.object(CommonStateField, "_eval_body", eval_body))
        stack.enter_context(mock.patch.object(CommonStateField, "_verify_size_quota", verify_output))
        stack.enter_context(mock.patch.object(ErrorEqualsDecl, "_eval_body", error_equals))
        yield payloads
