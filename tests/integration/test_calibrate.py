"""`benchfleet calibrate SPEC` on real local MariaDB servers (issue 37, item 5): the spec's baseline as an
A/A experiment, K runs; the variance components are stored for the spec and this machine, and `plan`
then says how many repetitions resolve the spec's margin, from that calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchfleet.cli.main import main
from benchfleet.local import calibration as cal
from benchfleet.local.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.long(2)]

WORKLOAD = {"name": "c", "test": "oltp_read_only", "tables": 1, "table_size": 500, "prepare_threads": 1,
            "warmup_s": 1, "threads": [1], "duration_s": 4}


def test_calibrate_runs_the_baseline_as_an_a_a_and_plan_uses_what_it_stored(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "cal", "repetitions": 3, "workload": WORKLOAD, "blocks": 2, "baseline": "slow",
        "targets": [{"id": "box", "kind": "local", "memory_mb": 256}],
        "variants": [{"id": "fast", "server_options": {"innodb_flush_log_at_trx_commit": 2}},
                     {"id": "slow", "server_options": {"innodb_flush_log_at_trx_commit": 1}}]}))
    assert main(["plan", str(spec), "--format", "json"]) == 0
    before = json.loads(capsys.readouterr().out)["resolution"]
    assert before["checks"][0]["status"] == "spread unknown"

    assert main(["calibrate", str(spec), "--runs", "2", "--format", "json"]) == 0
    out = capsys.readouterr().out  # the runs' progress, then the document
    doc = json.loads(out[out.index("\n{\n") + 1:])
    with open_store(bf_home, write=False) as store:
        runs = [r for r in store.runs() if r["name"] == "cal-calibration"]
        rows = store.calibration("cal", cal.fingerprint(cal.machine()))
        measured = {(s["variant"], s["block"]) for s in store.summaries(runs[0]["run_id"]) if s["phase"] == "measure"}
        ran = store.run(runs[0]["run_id"])["spec"]
    assert doc["spec"] == "cal" and set(doc["runs"]) == {r["run_id"] for r in runs}
    # Two A/A runs of the baseline variant, both variants at its settings, each step in 2 blocks.
    assert len(runs) == 2 and all(r["status"] == "succeeded" for r in runs)
    assert measured == {(v, b) for v in cal.AA_VARIANTS for b in (1, 2)}
    assert [(v["id"], v["server_options"]) for v in ran["variants"]] == [
        (i, {"innodb_flush_log_at_trx_commit": 1}) for i in cal.AA_VARIANTS]
    (row,) = rows
    assert (row["threads"], row["runs"], row["repetitions"], row["blocks"]) == (1, 2, 3, 2)
    assert row["sd_paired"] is not None and row["sd_paired"] > 0 and row["sd_block"] is not None

    assert main(["plan", str(spec), "--format", "json"]) == 0
    after = json.loads(capsys.readouterr().out)["resolution"]
    (check,) = after["checks"]
    assert check["source"].startswith("calibration of") and check["spread_pct"] == pytest.approx(
        100 * row["sd_paired"], abs=1e-3)
    assert check["status"] in ("resolves", "cannot reach a verdict")
