"""A TPC-C workload (tool: go-tpc) end to end through the CLI: a real MariaDB server, the go-tpc that
`make go-tpc` built from workloads/gotpc/go.mod, the agent, the store, results and the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.conftest import REPO

from benchfleet.cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.long(5)]
GOTPC = REPO / "workloads" / "gotpc" / "bin" / "go-tpc-amd64"


@pytest.mark.skipif(not GOTPC.exists(), reason="make go-tpc builds workloads/gotpc/bin/go-tpc-amd64")
# One warehouse is TPC-C's smallest data set: its load alone took 10 to 19 minutes on a shared 2-core
# machine (plan.GOTPC_PREPARE_S_PER_WAREHOUSE), past the suite's 600 s per test.
@pytest.mark.timeout(2400)
def test_a_tpcc_run_stores_tpmc_and_new_orders_latency_distribution(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"name": "tpcc-it", "repetitions": 1,
            "workload": {"name": "tpcc-it", "tool": "go-tpc", "test": "tpcc", "warehouses": 1, "prepare_threads": 2,
                         "warmup_s": 0, "threads": [2], "duration_s": 6, "percentile": 99},
            # relaxed: go-tpc commits every batch it loads, so a flush at each commit makes prepare ten times slower
            "targets": [{"id": "solo", "kind": "local", "memory_mb": 512, "mysql_config": "relaxed"}]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["run", str(path)]) == 0
    printed = capsys.readouterr().out
    table = printed.split("comparison:")[-1]
    assert "tpmC" in table and "tps" not in table.split("baseline")[0], printed  # the figure is named tpmC
    assert main(["results", "tpcc-it", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (step,) = [s for s in doc["steps"] if s["phase"] == "measure"]
    # tps is New-Order per second: tpmC / 60, go-tpc's own figure over the step
    assert step["tpmc"] > 0 and step["summary_tps"] == pytest.approx(step["tpmc"] / 60, abs=1e-3)
    dist = step["latency_percentiles_ms"]
    assert list(dist) == ["50", "90", "95", "99", "99.9", "max"] and 0 < dist["50"] <= dist["99"] <= dist["max"]
    assert step["latency_pct"] == 99 and step["latency_pct_ms"] == dist["99"]
    assert step["qps"] is None  # go-tpc does not count queries: never a 0 that reads as measured
    (measured,) = [p for p in (bf_home / "raw").rglob("t*.jsonl")]  # the one measure step
    raw = measured.read_text().splitlines()
    samples = [json.loads(line) for line in raw if '"type":"sample"' in line]
    assert samples and all(s["tx_per_s"].get("NEW_ORDER", 0.0) == pytest.approx(s["tps"]) for s in samples)
    assert all(s["cpu_user_pct"] is not None for s in samples)
    (fingerprint,) = [json.loads(line) for line in sorted((bf_home / "raw").rglob("prepare.jsonl"))[0]
                      .read_text().splitlines() if '"type":"fingerprint"' in line]
    assert fingerprint["gotpc_version"] == "go-tpc v1.0.7"
