"""Issue 37, item 5: variance components of an A/A calibration, the repetitions a spec needs to resolve
its margin, and what `plan` says about it (calibrated locally, the published study's spread for cloud
kinds). The calibration's real runs are in tests/integration/test_calibrate.py."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from scipy import stats as sp
from tests.conftest import REPO

from benchfleet.cli import main as cli
from benchfleet.local import calibration as cal
from benchfleet.local.store import open_store
from benchfleet.spec.loading import load_spec, parse_spec, resolve
from benchfleet.stats.resolution import components, halfwidth_pct, repetitions_to_resolve, spec_resolution

COMPARISONS = REPO / "workloads" / "comparisons"
# The shipped specs issue 37 found running 1 repetition, their budgets too small for 3.
EXPLORATORY = ("pxc-on-aws", "iibench-pk-only", "iibench-3-indexes", "aurora-pk-order")


def nested(rng: random.Random, runs: int, reps: int, blocks: int, sd_run: float, sd_rep: float,
           sd_block: float) -> list[dict[str, object]]:
    """A/A units with known components: log tps = run + repetition + block effects (two variants)."""
    out = []
    for k in range(runs):
        run = rng.gauss(0, sd_run)
        for r in range(1, reps + 1):
            rep = rng.gauss(0, sd_rep)
            for b in range(1, blocks + 1):
                for v in ("aa-1", "aa-2"):
                    out.append({"run": f"k{k}", "repetition": r, "block": b, "variant": v, "threads": 4,
                                "tps": 1000 * math.exp(run + rep + rng.gauss(0, sd_block))})
    return out


def test_components_recover_the_spread_of_each_level() -> None:
    found = components(nested(random.Random(5), 60, 6, 2, 0.03, 0.02, 0.01))
    assert (found["runs"], found["repetitions"], found["blocks"]) == (60, 6, 2)
    assert found["sd_block"] == pytest.approx(0.01, rel=0.1)
    assert found["sd_repetition"] == pytest.approx(0.02, rel=0.15)
    assert found["sd_run"] == pytest.approx(0.03, rel=0.2)
    # A repetition's A/A log ratio: the mean over 2 blocks of a difference of two block noises.
    assert found["sd_paired"] == pytest.approx(0.01, rel=0.15)
    assert found["sd_repetition_total"] == pytest.approx(math.sqrt(0.02 ** 2 + 0.01 ** 2 / 4), rel=0.15)


def test_one_run_cannot_tell_the_run_component() -> None:
    found = components(nested(random.Random(1), 1, 4, 2, 0.0, 0.02, 0.01))
    assert found["sd_run"] is None and found["sd_repetition"] is not None


@pytest.mark.parametrize(("sd", "margin", "design"), [(0.01, 5, "paired"), (0.04, 5, "paired"),
                                                      (0.018, 5, "welch"), (0.038, 5, "welch"), (0.05, 2, "welch")])
def test_repetitions_to_resolve_is_the_first_n_whose_interval_fits_the_margin(sd: float, margin: float,
                                                                            design: str) -> None:
    def half(n: int) -> float:
        df = n - 1 if design == "paired" else 2 * (n - 1)
        return sp.t.ppf(0.975, df) * sd * (1 / math.sqrt(n) if design == "paired" else math.sqrt(2 / n))

    n = repetitions_to_resolve(sd, margin, design)  # type: ignore[arg-type]
    limit = math.log1p(margin / 100)
    if n is None:
        assert half(50) > limit
        return
    assert half(n) <= limit and (n == 3 or half(n - 1) > limit)
    assert halfwidth_pct(sd, n, design) == pytest.approx(100 * math.expm1(half(n)), rel=1e-9)  # type: ignore[arg-type]


def test_the_published_spread_decides_for_cloud_kinds_and_one_repetition_never_reaches_a_verdict() -> None:
    one = spec_resolution(1, 5.0, ["ec2", "ec2"], False, True, cost_per_repetition_usd=10.0, budget_usd=25.0)
    (check,) = one["checks"]
    assert (check["design"], check["status"], check["needed"], check["needed_p90"]) == (
        "welch", "cannot reach a verdict", 3, 7)
    assert one["exploratory"] and one["warnings"][0].startswith("cannot reach a verdict: exploratory")
    assert "published study" in one["warnings"][0] and "$30.00" in one["warnings"][0]
    three = spec_resolution(3, 5.0, ["ec2", "ec2"], False, True)
    assert three["checks"][0]["status"] == "may not resolve" and not three["exploratory"]
    assert spec_resolution(7, 5.0, ["ec2", "ec2"], False, True)["checks"][0]["status"] == "resolves"


def test_a_local_spec_says_what_it_does_not_know_until_calibrated() -> None:
    unknown = spec_resolution(3, 5.0, ["local"], True, False)
    assert unknown["checks"][0]["status"] == "spread unknown" and "calibrate" in unknown["warnings"][0]
    assert spec_resolution(1, 5.0, ["local"], True, False)["exploratory"]  # 1 repetition: never a verdict
    calm = {"sd_paired": 0.01, "sd_repetition_total": 0.02, "runs": 3, "repetitions": 3, "created_at": "x"}
    assert spec_resolution(3, 5.0, ["local"], True, False, calm)["checks"][0]["status"] == "resolves"
    noisy = spec_resolution(3, 5.0, ["local"], True, False, {**calm, "sd_paired": 0.2})
    assert noisy["exploratory"] and "calibration of x" in noisy["warnings"][0]


def test_the_aa_spec_is_the_baseline_twice_with_its_settings() -> None:
    loaded = load_spec(COMPARISONS / "demo-durability.yaml")
    aa = cal.aa_spec(loaded, 4)
    spec = aa.spec
    assert spec.name == "demo-durability-calibration" and spec.repetitions == 4 and spec.blocks == 2
    assert [t.id for t in spec.targets] == ["local-512mb"] and spec.variant_ids == list(cal.AA_VARIANTS)
    # Both variants are the baseline variant (durable: the target's own cnf, no overrides).
    assert all(v.mysql_config is None and not v.server_options for v in spec.variants)
    relaxed = resolve(parse_spec({**loaded.inline(), "baseline": "relaxed"}), "x")
    assert {v.mysql_config for v in cal.aa_spec(relaxed, 3).spec.variants} == {"relaxed"}


def _plan_json(spec: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert cli.main(["plan", str(spec), "--format", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("name", EXPLORATORY)
def test_the_shipped_specs_that_cannot_reach_a_verdict_say_so(name: str, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    # Issue 37: pxc-on-aws ($16.43, 6h49m), iibench-* and aurora-pk-order run 1 repetition; plan said nothing.
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    path = COMPARISONS / f"{name}.yaml"
    found = _plan_json(path, capsys)["resolution"]
    assert isinstance(found, dict) and found["exploratory"] is True
    assert all(w.startswith("cannot reach a verdict: exploratory") for w in found["warnings"])
    header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    assert "Exploratory" in header and "cannot reach a verdict" in header


def test_plan_uses_the_calibration_stored_for_the_spec_on_this_machine(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    spec = COMPARISONS / "demo-durability.yaml"
    before = _plan_json(spec, capsys)["resolution"]
    assert isinstance(before, dict) and before["checks"][0]["status"] == "spread unknown"
    row = {"threads": 1, **components(nested(random.Random(2), 3, 3, 2, 0.01, 0.01, 0.004))}
    here = cal.machine()
    with open_store(tmp_path) as store:
        store.replace_calibration("demo-durability", cal.fingerprint(here), here, ["r1", "r2", "r3"], [row])
        store.replace_calibration("demo-durability", "another-machine", {}, ["r9"], [{**row, "sd_paired": 0.5}])
    after = _plan_json(spec, capsys)["resolution"]
    assert isinstance(after, dict)
    (check,) = after["checks"]
    assert check["source"].startswith("calibration of") and check["spread_pct"] == pytest.approx(100 * row["sd_paired"],
                                                                                                 abs=1e-3)
    assert check["status"] == "resolves" and check["needed"] == 3


def test_calibrate_refuses_cloud_specs_and_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["calibrate", str(COMPARISONS / "pxc-on-aws.yaml")]) == 2
    assert "published study" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.main(["calibrate", str(COMPARISONS / "demo-durability.yaml"), "--runs", "1"])
    assert exited.value.code == 2 and "outside 2..20" in capsys.readouterr().err


def test_plan_does_not_depend_on_a_readable_store(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # plan reads the store for a calibration only; a store it cannot read made plan exit 1 naming it.
    (tmp_path / "benchfleet.duckdb").write_text("not a store")
    monkeypatch.setenv("BENCHFLEET_HOME", str(tmp_path))
    found = _plan_json(COMPARISONS / "demo-durability.yaml", capsys)["resolution"]
    assert isinstance(found, dict) and found["checks"][0]["status"] == "spread unknown"
