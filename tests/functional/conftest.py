"""Fixtures shared by the functional tests of the state machine's handlers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statemachine"))
from sm_harness import setup_account
from sm_moto import FaultProxy, MotoGaps
from sm_world import ENV, REGION

from benchfleet.aws import clients


@pytest.fixture
def handlers_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[dict[str, Any], MotoGaps]]:
    """One moto account set up as the stack deploys it, the handlers' environment, and their SSM, RDS
    and Timestream clients behind FaultProxy (moto's gaps answered from its own state): ``(proxies,
    gaps)``. EC2 is moto's own client unless a test overrides it."""
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        clients.reset()
        setup_account(monkeypatch)
        gaps = MotoGaps()
        ssm = boto3.client("ssm", region_name=REGION)
        rds = boto3.client("rds", region_name=REGION)
        proxies = {
            "ssm": gaps.ssm(ssm),
            "rds": gaps.rds(rds),
            "timestream-write": FaultProxy(boto3.client("timestream-write", region_name=REGION)),
        }
        for service, proxy in proxies.items():
            clients.override(service, lambda p=proxy: p)
        yield proxies, gaps
        clients.reset()
