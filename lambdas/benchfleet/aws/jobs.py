"""The agent's job for one step on AWS: ``agentjob.agent_job`` plus where the database is.

- ec2: the engine runs on the target itself; ``db.local_engine`` asks the agent document to install
  and configure it (engine, workloads/mysql/<mysql_config>.cnf), the password reaches the agent
  through the environment variable named by ``password_env``;
- rds / aurora: the endpoint found by readiness; the managed master password is read from Secrets
  Manager here;
- existing: the host the user named, the password from its secret when given.
"""

from __future__ import annotations

import json
from typing import Any

from benchfleet.agentjob import agent_job
from benchfleet.aws.errors import aws_errors
from benchfleet.aws.events import StepState
from benchfleet.plan import PlanStep
from benchfleet.spec import Workload

LOCAL_PASSWORD_ENV = "BENCHFLEET_DB_PASSWORD"  # noqa: S105 - a variable name, not a password


def _secret_password(secrets: Any, arn: str) -> str:
    with aws_errors():
        value = secrets.get_secret_value(SecretId=arn)["SecretString"]
    return str(json.loads(value)["password"])


def db_of(state: StepState, secrets: Any) -> dict[str, Any]:
    target = state.target
    if state.kind == "ec2":
        return {"host": "127.0.0.1", "port": 3306, "user": "sbtest", "database": "sbtest",
                "password_env": LOCAL_PASSWORD_ENV,
                "local_engine": {"engine": target.get("engine", "mysql-8.0"),
                                 "mysql_config": target.get("mysql_config", "default")}}
    if state.kind == "existing":
        db: dict[str, Any] = {"host": target["host"], "port": target.get("port", 3306), "user": "sbtest",
                              "database": "sbtest"}
        if target.get("password_secret_arn"):
            db["password"] = _secret_password(secrets, target["password_secret_arn"])
        return db
    if not state.db:
        raise ValueError(f"no database endpoint for {state.kind} target {target['id']}")
    db = {k: v for k, v in state.db.items() if k != "password_secret_arn"}
    if state.db.get("password_secret_arn"):
        db["password"] = _secret_password(secrets, state.db["password_secret_arn"])
    return db


def job_for(state: StepState, secrets: Any) -> dict[str, Any]:
    step = PlanStep.model_validate(state.step.model_dump())
    return agent_job(run_id=state.run_id, target_id=state.target["id"], repetition=state.repetition,
                     workload=Workload.model_validate(state.workload), step=step, db=db_of(state, secrets))
