"""Typed shapes of what the state machine passes between states (the handlers' inputs)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Timing(_In):
    ready_poll_s: int = Field(ge=0)
    ready_max_polls: int = Field(ge=1)
    provision_s: int = Field(0, ge=0)


class Step(_In):
    index: int
    name: str
    kind: str
    threads: int
    duration_s: int
    cooldown_s: int = 0
    # sysbench's report interval: collect expects about duration_s / report_interval_s samples.
    report_interval_s: int = 1
    setup_s: int = 300
    # How long "Start the step" waits for the step's callback (TimeoutSecondsPath).
    timeout_s: int = 3600
    # Prepare step only: what the agent sets up on the fresh host (runplan._install).
    install: dict[str, Any] | None = None
    # First step only, rds / aurora: the values the run's parameter groups set, which the agent
    # compares with what the server reports (its fingerprint records both).
    requested: dict[str, str] | None = None
    # First step only: how the agent holds the server to what was requested before anything is
    # measured (variantplan.verify: the variants' own settings apart, a parameter group's settle time).
    verify: dict[str, Any] | None = None
    # Variants (benchfleet.plan.model.PlanStep, benchfleet.aws.planning.variantplan): whose workload and data
    # set, which block, whose settings and how to switch to them, the variant's workload where it is not
    # the spec's, and its settings in the form the target's kind applies them.
    variant: str | None = None
    block: int | None = None
    database: str | None = None
    settings: str | None = None
    switch: dict[str, str] = {}
    workload: dict[str, Any] | None = None
    variant_settings: dict[str, Any] | None = None
    # Warm-up and measure steps: the server status the agent reads every second (runplan.status_of).
    status: dict[str, Any] | None = None
    # A cluster's steps (runplan.cluster_setup): the host a set-up step runs on (n1.. | client | proxy)
    # and the static part of its job; a benchmark step's connection route (direct | proxy).
    host: str | None = None
    setup: dict[str, Any] | None = None
    route: str | None = None
    # Measure steps: the spec's equivalence margin, which collect writes beside the step's summary
    # (a store without a run row, Timestream, judges the verdicts by it).
    margin_pct: float | None = None


class TargetItem(_In):
    """One element of the plan's ``targets``."""

    run_id: str
    target_id: str
    kind: str
    # Where the target runs (benchfleet.aws.regions): its own region or the home region.
    region: str | None = None
    target: dict[str, Any]
    expires_at: str
    deadline: str
    # The repetitions Map's MaxConcurrencyPath (0: all at once).
    repetitions_at_once: int = 0
    steps: list[Step]
    # Per repetition, indices into steps in the order they run (runplan).
    sequence: list[list[int]] = []
    # rds / aurora: the entries of the run's parameter groups ({name, value, level, apply}).
    parameters: list[dict[str, Any]] = []
    timing: Timing


class Zone(_In):
    index: int = Field(0, ge=0)
    last: int = Field(0, ge=0)


class Resources(_In):
    """What provision created (empty when it failed before creating anything)."""

    kind: str | None = None
    managed: bool = True
    instance_id: str | None = None
    instance_type: str | None = None
    db_instance_id: str | None = None
    db_cluster_id: str | None = None
    # The run's parameter groups of an rds / aurora target (benchfleet.aws.fleet.paramgroups).
    parameter_group: str | None = None
    cluster_parameter_group: str | None = None
    zone: str | None = None
    region: str | None = None
    zone_index: int = 0
    provisioned_at: str | None = None
    # A cluster (benchfleet.aws.fleet.cluster): role (n1.. | client | proxy) -> {instance_id, zone,
    # subnet_id, instance_type}, and role -> the ARN of the password secret that host reads.
    hosts: dict[str, dict[str, Any]] = {}
    secrets: dict[str, str] = {}


class StepState(_In):
    """The state of one iteration of "Run each step"."""

    run_id: str
    target: dict[str, Any]
    kind: str
    deadline: str
    timing: Timing
    repetition: int
    workload: dict[str, Any]
    resources: Resources
    db: dict[str, Any] | None = None
    step: Step
    # "Start the step" waits for this token (benchfleet.aws.steps.callbacks); None outside the machine.
    task_token: str | None = None
