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
from synthetic import TARGETS, fill_store
from tests.sysbench_logs import run_log

from benchfleet.importer import import_logs
from benchfleet.local.store import DuckDBStore
from benchfleet.report import write_report
from benchfleet.report.charts import _PALETTE

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
        # Per-second gaps in every step of repetition 1 (sysbench reporting late, beside the final report
        # it silences as every run ends): their notes are the longest cells of the results table.
        store.execute("UPDATE step_summaries SET samples_expected = samples + 3, missing_final = true "
                      "WHERE repetition = 1")
        return write_report(store, run_id[:12], tmp / "reports" / f"{run_id}.html")
    finally:
        store.close()


def test_every_chart_renders_without_console_errors(report: Path, tmp_path: Path) -> None:
    html = report.read_text()
    # Plotly's bundle mentions its CDN (for geo maps, unused); what matters is that nothing is loaded.
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", html), "the report must need no network"
    expected = int(re.search(r"data-charts='(\d+)'", html).group(1))
    assert expected == 6  # throughput, latency, relative, qps, timeline, cost

    result = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    plots = re.findall(r'class="[^"]*\bjs-plotly-plot\b', dom)
    assert len(plots) == expected, f"{len(plots)} of {expected} charts rendered"
    # Each chart draws at least one <svg class="main-svg">; an empty or failed one draws none.
    for key in ("throughput", "latency", "relative", "qps", "timeline", "cost"):
        chart = dom.split(f'id="chart-{key}"', 1)[1].split('class="card"', 1)[0]
        assert "main-svg" in chart, f"chart {key} has no SVG"
        assert re.search(r'class="(trace|bars|points|scatterlayer)', chart), f"chart {key} drew no trace"
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    errors = [line for line in console if "Uncaught" in line or "ERROR:CONSOLE" in line or "Error" in line]
    assert not errors, "\n".join(errors)


def _dom(report: Path, tmp_path: Path, width: int = 1280) -> str:
    result = chromium(tmp_path, f"--window-size={width},3000", "--dump-dom", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _chart(dom: str, key: str) -> str:
    return dom.split(f'id="chart-{key}"', 1)[1].split('class="card"', 1)[0]


def _rgb(color: str) -> str:
    return "rgb({}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))


def test_what_a_reader_sees_is_readable(report: Path, tmp_path: Path) -> None:
    """The defects a reader met: steal ticks '1 1 0 0 0 0', no step boundaries, repetitions of a target
    in one style, band markers in another target's colour, two columns titled '95% CI', tables cut."""
    # Measure the tables after layout, at the width the report is read at.
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", (
        "<script>window.addEventListener('load',function(){var cut=[].filter.call("
        "document.querySelectorAll('.scroll'),function(e){return e.scrollWidth>e.clientWidth+1;}).length;"
        "document.body.setAttribute('data-cut-tables',String(cut));});</script></body>")))
    dom = _dom(probe, tmp_path)
    assert 'data-cut-tables="0"' in dom
    timeline = _chart(dom, "timeline")
    for axis in ("y2tick", "y3tick"):  # steal and iowait panels
        ticks = re.findall(rf'class="{axis}"><text[^>]*>([^<]*)</text>', timeline)
        assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), (axis, ticks)
    # Five measure steps after the warm-up: five boundaries.
    assert timeline.count('class="shape-group"') == 5
    # Each target's three repetitions: one colour, three line styles.
    lines = re.findall(r'class="js-line"[^>]*style="([^"]*)"', timeline)
    for color in _PALETTE[:3]:
        styles = {re.search(r"stroke-dasharray: ([^;]*)", st).group(1) if "dasharray" in st else "solid"
                  for st in lines if f"stroke: {_rgb(color)};" in st}
        assert len(styles) >= 3, (color, styles)
    # Every marker in a target's colour.
    palette = {_rgb(c) for c in _PALETTE}
    fills = re.findall(r'class="point"[^>]*style="[^"]*fill: (rgba?\([^)]*\))', dom)
    assert fills
    off = {f for f in fills if "rgb(" + f.split("(", 1)[1].rsplit(",", 1)[0] + ")" not in palette
           and f not in palette}
    assert not off, off
    results_table = dom.split("Results by target and threads", 1)[1].split("</table>")[0]
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", results_table)
    assert "2 s reported late" in results_table and "missing" not in results_table
    assert len(headers) == len(set(headers)), headers


def test_an_imported_run_says_it_has_no_per_second_data(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make browser-deps installs Debian's chromium)")
    logs = tmp_path / "logs"
    logs.mkdir()
    for threads in (1, 4):
        (logs / f"t{threads}.log").write_text(run_log([], [], threads=threads, transactions=9000 * threads))
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id = import_logs(store, [logs], "summary-only", None)
        report = write_report(store, run_id, tmp_path / "imported.html")
    finally:
        store.close()
    dom = _dom(report, tmp_path)
    assert 'id="chart-timeline"' not in dom and 'id="missing-timeline"' in dom
    assert "no per-second data" in dom.split('id="missing-timeline"', 1)[1][:200]
    assert "main-svg" in _chart(dom, "throughput")


def test_a_soak_without_gaps_draws_its_lines_from_x0_and_dx(tmp_path: Path) -> None:
    """Two hours in 7 s buckets, none empty (the pause after warm-up falls inside one): the lines are
    given as x0 + dx (the report's size at 200 targets x 24 h), and Chromium draws them over the whole
    run, not as one point at 0."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make browser-deps installs Debian's chromium)")
    store = DuckDBStore(tmp_path / "benchfleet.duckdb")
    try:
        run_id = fill_store(store, "soak-20261122t100000-abcd", targets=TARGETS[:1], reps=1, threads=(8,),
                            seconds=7200, warmup_s=30)
        report = write_report(store, run_id, tmp_path / "soak.html")
    finally:
        store.close()
    assert '"x0":0,"dx":7' in report.read_text()
    timeline = _chart(_dom(report, tmp_path), "timeline")
    paths = re.findall(r'class="js-line"[^>]*d="M([^"]*)"', timeline)
    # The min-max band (explicit times), then tps and steal point by point (Plotly drops points on a
    # straight run, a constant iowait is one segment): each line ends where the band does.
    band, tps, steal = [p for p in paths if p.count("L") >= 500]
    right = max(float(xy.split(",")[0]) for xy in band.split("L"))
    assert all(float(p.rsplit("L", 1)[1].split(",")[0]) == right for p in (tps, steal)), right
    xticks = [float(t.replace(",", "")) for t in re.findall(r'class="xtick"><text[^>]*>([^<]*)</text>', timeline)]
    assert max(xticks) >= 6000, xticks  # the axis reaches the end of the run


def test_screenshot(report: Path, tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    result = chromium(tmp_path, "--window-size=1400,5400", f"--screenshot={shot}", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 50_000
