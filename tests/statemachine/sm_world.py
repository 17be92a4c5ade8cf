"""The offline world's names: the region, the bucket, the database, the agent document, the stack's owner
tag and the handlers' environment, as the deployed stack gives them to the Lambdas (sm_harness)."""

from __future__ import annotations

from pathlib import Path

REGION = "us-east-1"
ASL = Path(__file__).resolve().parents[2] / "statemachines" / "benchmark-run.asl.json"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent"
# go-tpc's (a TPC-C job's) steps, captured on the host tier: tests/fixtures/agent-gotpc/README.md.
FIXTURES_GOTPC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-gotpc"
HANDLERS = {"Plan": "plan", "Provision": "provision", "Readiness": "readiness", "StartStep": "start_step",
            "Collect": "collect", "Teardown": "teardown", "Summarize": "summarize", "StepCallback": "step_callback"}
BUCKET = "bf-results"
DATABASE = "benchfleet"
DOCUMENT = "bf-agent"


OWNER = "Benchfleet@us-east-1"
DB_PREFIX = "bf2b97c5"

ENV = {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
       "AWS_SECRET_ACCESS_KEY": "testing", "POWERTOOLS_TRACE_DISABLED": "1",
       "POWERTOOLS_SERVICE_NAME": "benchfleet", "POWERTOOLS_METRICS_NAMESPACE": "benchfleet",
       "POWERTOOLS_LOG_LEVEL": "WARNING"}
