"""The HTML report in headless Chromium: every chart renders, no console error, a screenshot.

Tier: browser (needs Debian's ``chromium``; ``make browser-deps`` installs it). The report is built
from a DuckDB store filled with a realistic synthetic run through DuckDBStore's own methods.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from synthetic import fill_store

from benchfleet.local.store import DuckDBStore
from benchfleet.report import write_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *args],
                           capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make browser-deps installs Debian's chromium)")
    tmp = tmp_path_factory.mktemp("report")
    store = DuckDBStore(tmp / "benchfleet.duckdb")
    try:
        run_id = fill_store(store)
        return write_report(store, run_id[:12], tmp / "reports" / f"{run_id}.html")
    finally:
        store.close()


def test_every_chart_renders_without_console_errors(report: Path, tmp_path: Path) -> None:
    html = report.read_text()
    # Plotly's bundle mentions its CDN (for geo maps, unused); what matters is that nothing is loaded.
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", html), "the report must need no network"
    expected = int(re.search(r"data-charts='(\d+)'", html).group(1))
    assert expected == 5  # throughput, latency, relative, timeline, cost

    result = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    plots = re.findall(r'class="[^"]*\bjs-plotly-plot\b', dom)
    assert len(plots) == expected, f"{len(plots)} of {expected} charts rendered"
    # Each chart draws at least one <svg class="main-svg">; an empty or failed one draws none.
    for key in ("throughput", "latency", "relative", "timeline", "cost"):
        chart = dom.split(f'id="chart-{key}"', 1)[1].split('class="card"', 1)[0]
        assert "main-svg" in chart, f"chart {key} has no SVG"
        assert re.search(r'class="(trace|bars|points|scatterlayer)', chart), f"chart {key} drew no trace"
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    errors = [line for line in console if "Uncaught" in line or "ERROR:CONSOLE" in line or "Error" in line]
    assert not errors, "\n".join(errors)


def test_screenshot(report: Path, tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    result = chromium(tmp_path, "--window-size=1400,5400", f"--screenshot={shot}", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 50_000
