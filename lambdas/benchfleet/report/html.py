"""One self-contained HTML file per run: Plotly's JS inlined, data embedded, no network needed.

The Plotly bundle is plotly.js's "basic" distribution (bar, pie and scatter traces, with every layout
component the charts use: error bars, patterns, shapes, annotations, menus, log axes), vendored from
npm's plotly.js-basic-dist-min at the version plotly.py validates against (tests/unit/test_report_charts.py
checks both): about 1.2 MB instead of the full bundle's 4.8 MB, so a report grows with its data.

Why one module: it lays out every section of the one file in the order a reader meets them (the
summary, the run, the results with their charts, jitter, speedup, fingerprints, what the figures
are); the figures themselves are report.charts and report.timecharts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import tempfile
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from benchfleet import stats
from benchfleet.local.store import DuckDBStore
from benchfleet.report import charts, summary, timecharts
from benchfleet.report.data import (
    blocks,
    fingerprint_values,
    given,
    host_of,
    label_series,
    layout_text,
    status_timeline,
    timeline,
)
from benchfleet.stats.caveats import words as caveat_words
from benchfleet.stats.figures import percentile_of

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#f6f7f9}
main{max-width:1280px;margin:0 auto;padding:18px 24px 48px}
h1{font-size:22px;margin:8px 0 2px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;
padding-bottom:4px} .sub{color:#666;font-size:13px;margin-bottom:12px}
.card{background:#fff;border:1px solid #e1e4e8;border-radius:6px;padding:10px 12px;margin:10px 0}
table{border-collapse:collapse;font-size:12.5px;width:100%;background:#fff}
th,td{border-bottom:1px solid #eee;padding:4px 5px;text-align:right;white-space:nowrap}
th{white-space:normal;vertical-align:bottom;min-width:3.5em}
td.l{white-space:normal;max-width:16em;overflow-wrap:normal;word-break:normal;hyphens:manual}
td.l:first-child{white-space:nowrap} td.tok{white-space:nowrap;max-width:none}
th{background:#fafbfc;position:sticky;top:0;font-weight:600} td.l,th.l{text-align:left}
.scroll{max-height:480px;overflow:auto;border:1px solid #e1e4e8;border-radius:6px}
.trial{background:#fff4d6;border:1px solid #e0b84c;border-radius:6px;padding:8px 12px;font-weight:600}
.gap{color:#b45309;display:inline-block;white-space:normal;min-width:10em;max-width:16em;text-align:left}
.kv{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px}
.kv div:nth-child(odd){color:#666} .faster{color:#17803d;font-weight:600} .slower{color:#b42318;font-weight:600}
.equiv{color:#1d4ed8;font-weight:600} .ci{color:#666;font-size:11.5px}
.unsure{color:#8a5a00;font-style:italic;border:1px dashed #c99a2e;border-radius:3px;padding:0 3px;
display:inline-block;white-space:normal;min-width:7em;max-width:11em;text-align:left;
background:repeating-linear-gradient(135deg,#fff,#fff 4px,#fbf1dc 4px,#fbf1dc 8px)}
.caveat{color:#9a3412;font-weight:600;display:inline-block;white-space:normal;min-width:10em;max-width:16em;
text-align:left}
.muted{color:#888} .note{font-size:12px;color:#555;margin:4px 0} details pre{font-size:12px;overflow:auto}
.chart{min-height:260px}
.answer ul{margin:4px 0;padding-left:20px;font-size:15px;line-height:1.45} .answer li{margin:3px 0}
.answer ul.caveats{font-size:13px;color:#9a3412}
"""


RELATIVE_NOTE = (
    "Each bar is one result row's difference to the baseline at the same thread count, named on the left; "
    "whiskers: its 95% interval; grey band: the ±{margin:g}% margin. Solid: the interval decides "
    "(faster/slower when it excludes 0, equivalent when it lies inside the margin). Hatched: inconclusive, the "
    "interval contains 0 and reaches beyond the margin. Hollow: too few repetitions for an interval that can "
    "decide. The words beside each bar are the verdict's: 'paired' when both sides were measured together (per "
    "repetition, block or round: what they shared cancels), 'Welch' when they ran apart.")

# What the chart of blocks (timecharts.blocks) shows, in the run report and the report of two runs.
BLOCKS_NOTE = ("The design that makes a variant's verdict paired: on one server, the variants (settings, or a "
               "cluster's routes) measured in turns, block by block, the order turning from one block and "
               "repetition to the next. One panel per target and repetition; each variant's tps per second in its "
               "colour, each block shaded in that colour from its first report to its last, named above (b1, b2: "
               "its block of the step), the thread count above where it changes. Each block's first report is its "
               "ramp, left out of the figures.")

# What the cluster's node panels (timecharts.node_panels) show.
NODES_NOTE = ("Every node's wsrep counters, read every second, one panel per figure and one line per node: the "
              "share of the time flow control paused its replication (the whole cluster waits for the slowest "
              "node), the bytes it replicated (write-sets it originated) and received (from the others), its "
              "send and receive queues, certification failures and brute-force aborts (conflicting writes), and "
              "the sessions the proxy held open to it. Means per node: benchfleet results RUN (the table 'cluster "
              "status per node'); every reading: benchfleet results RUN --status --format csv.")

# What the status chart (timecharts.status) shows, in the run report and the report of two runs.
STATUS_NOTE = ("SHOW GLOBAL STATUS counters read every second from every server (a cluster's nodes; a proxy's "
               "backends as proxy/<node>), under the throughput on the same time axis: running totals as a rate "
               "per second, levels as they are, flow-control pause as % of the time.")

# What a chart that cannot be drawn says instead.
_MISSING = {
    "cost": "No priced target: set price_per_hour on local targets or use instance types the price tables know.",
    "status": "No server status was read in this run (status_counters: [], or imported logs).",
    "timeline": "This run has no per-second data: its logs were imported from sysbench summaries only "
                "(no --report-interval lines), so there is nothing to draw over time. The figures above "
                "come from sysbench's own summary of each step.",
}


class ReportPathError(ValueError):
    """The report cannot be written there (names the path and why)."""


def write_report(store: DuckDBStore, run_id: str, path: Path | str) -> Path:
    """Write the HTML report of ``run_id`` (a unique prefix is enough) to ``path``; returns the path."""
    _check_target(Path(path))  # before the work of rendering it
    return write_html(render_report(store, run_id), path)


def write_html(html: str, path: Path | str) -> Path:
    """Write a report's HTML to ``path``, so that a reader never sees half of it and nothing but the
    report is ever written: only a regular file is replaced (a device, a directory, a FIFO or a link at
    ``path`` is refused: run as root, ``-o /dev/full`` once replaced the device node), through a
    temporary file created exclusively beside it under a name of its own (a link planted at
    ``PATH.tmp`` once redirected the write), removed on every failure."""
    path = Path(path)
    _check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(html)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a file the user created: readable where theirs are
        _check_target(path)  # still nothing but a regular file (or nothing) there
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def page(title: str, body: list[str], charts_count: int) -> str:
    """A whole report page: the style, the Plotly bundle once, ``body`` in <main>."""
    return "".join([
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{escape(title)}</title>"
        f"<style>{_CSS}</style><script>{plotly_js()}</script></head><body data-charts='{charts_count}'><main>",
        *body, "</main></body></html>"])


def figure_section(key: str, title: str, fig: charts.Figure | None, note: str, missing: str = "") -> str:
    """A chart under its title and note, or what stands in its place."""
    head = f"<h2>{escape(title)}</h2><p class='note'>{escape(note)}</p>"
    if fig is None:
        return head + f"<p class='muted' id='missing-{key}'>{escape(missing or _MISSING[key])}</p>"
    return head + f"<div class='card'><div id='chart-{key}' class='chart'></div></div>" + _figure_script(
        f"chart-{key}", fig)


BUNDLE = Path(__file__).with_name("vendor") / "plotly-basic.min.js"
# The trace types the bundle draws: a chart of any other type would be an empty box.
BUNDLE_TRACES = frozenset({"bar", "pie", "scatter"})


@functools.cache
def plotly_js() -> str:
    """The vendored Plotly bundle, once per process."""
    return BUNDLE.read_text(encoding="utf-8")


def _check_target(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a symbolic link" if stat.S_ISLNK(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file")
        raise ReportPathError(f"{path}: is {kind}; the report replaces only a regular file (give a file path)")


def render_report(store: DuckDBStore, run_id: str) -> str:
    """The report's HTML as a string."""
    comparison = stats.run_comparison(store, run_id)
    run = store.run(comparison["run"]["run_id"])
    series = timeline(store, run["run_id"])
    label_series(series["series"], comparison["rows"])
    order = [t["target_id"] for t in comparison["targets"]]
    labels = list(dict.fromkeys(charts.label_of(r) for r in comparison["rows"]))
    palette = charts.colors(list(dict.fromkeys([*labels, *order])))

    single = charts.one_thread_count(comparison["rows"])
    # One thread count: bars, and the sections say so.
    per = f"at {charts.threads_words(single)}" if single is not None else "vs threads"
    figures: list[tuple[str, str, charts.Figure | None, str]] = [
        ("throughput", f"Throughput {per}", charts.throughput(comparison, palette),
         "Mean over repetitions of sysbench's tps for each step, its 95% confidence interval as whiskers "
         "(none below 2 repetitions), each repetition as a ring and, across thread counts, the band from the "
         "lowest to the highest repetition."),
        ("latency", f"Latency {per}", charts.latency(comparison, palette),
         "sysbench's latency percentile over each whole step: every repetition's own figure, and the "
         "median repetition (odd counts only). Percentiles are never averaged. The axis is logarithmic when "
         "the figures span a factor of 8 or more."),
    ]
    distribution = charts.latency_distribution(comparison, palette)
    if distribution is not None:
        figures.append(("distribution", "Latency distribution", distribution,
                        "Each step's latency from its 50th percentile to its maximum (sysbench: from its "
                        "histogram of the whole step; go-tpc: New-Order's), one line per series and thread "
                        "count at the median over repetitions (odd counts only: percentiles are never "
                        "averaged). Every figure: results --format json, latency_percentiles_ms."))
    if any(r.get("relative") for r in comparison["rows"]):
        base = comparison.get("baseline_variant") or comparison["baseline"]
        figures.append(("relative", f"Relative to the baseline ({base})", charts.relative(comparison, palette),
                        RELATIVE_NOTE.format(margin=comparison.get("margin_pct") or 5)))
    figures.append(("qps", f"Queries per second {per}", charts.qps(comparison, palette),
                    "Mean over repetitions of sysbench's qps for each step: the figure the workload files "
                    "name for mixes whose transactions differ in size."))
    # Only a run with variants has blocks to find (a soak's 17M samples are not scanned for none).
    found_blocks = blocks(store, run["run_id"], series["spans"]) if comparison.get("variants") else []
    if found_blocks:
        figures.append(("blocks", "How the variants alternated, block by block", timecharts.blocks(
            series, found_blocks, palette), BLOCKS_NOTE))
    figures.append(("timeline", "Throughput over time, CPU steal, iowait and the disk",
                    timecharts.timeline(series, palette) if series["series"] else None,
                    "Warm-up and every measure step of each repetition (one dash style per repetition), "
                    "step boundaries dotted. Steal is the share of CPU time the hypervisor gave to someone "
                    "else: when it rises, throughput falls for reasons that are not the database's. iowait "
                    "is time the CPU waited on storage (flushes of a durable configuration). Where the data "
                    "directory is on the agent's host, its disk's completed reads and writes per second, MiB "
                    "per second and await (mean time per request, ms) from /proc/diskstats, in the same "
                    "seconds. Every sample: "
                    f"benchfleet results {run['run_id']} --per-second --format csv"))
    if any(r is not None for s in series["series"] for r in s.get("rows") or []):
        figures.append(("rows", "Insert rate vs rows in the table", timecharts.insert_rate(series, palette),
                        "iiBench's view (seed 001): each second's inserts against the rows already in the "
                        "table, the prepared rows plus every insert so far (one sysbench event inserts one "
                        "row). Where the curve bends, the indexes have outgrown the buffer pool."))
    status_series = status_timeline(store, run["run_id"], series["spans"])
    label_series(status_series["series"], comparison["rows"])
    found_nodes = timecharts.node_panels(status_series, found_blocks, palette) if status_series["series"] else None
    if found_nodes is not None:
        figures.append(("nodes", "Cluster nodes per second", found_nodes, NODES_NOTE))
    figures.append(("status", "Server status per second",
                    timecharts.status(series, status_series, palette) if status_series["series"] else None,
                    f"{STATUS_NOTE} Every reading: benchfleet results {run['run_id']} --status --format csv"))
    cost_fig = charts.cost(comparison, palette)
    figures.append(("cost", "Cost per 1000 TPS", cost_fig if cost_fig["data"] else None,
                    "The database's price per hour (instance, storage, provisioned IOPS and throughput; no "
                    "client host for any kind; a cluster: every node and its storage, its proxy's own host and "
                    "the cross-zone traffic measured at that thread count) divided by mean throughput in "
                    "thousands of transactions per second, at every thread count, on-demand (solid) and 1-year "
                    "reserved, all upfront (dashed). Error bars: the 95% interval of the mean tps carried through."))

    parts = [summary_section(f"<h1>{escape(run['name'])}</h1>", _subtitle(comparison),
                             summary.run_banner(run, comparison.get("trial")), summary.run_sentences(comparison),
                             summary.caveat_lines(comparison["rows"], charts.label_of, caveat_words,
                                                  comparison.get("multiplicity"))),
             _header(run, comparison), _targets_table(comparison, run.get("spec") or {}),
             _storage_table(comparison), _summary_table(comparison)]
    for key, title, fig, note in figures:
        parts.append(figure_section(key, title, fig, note))
        if key == "cost" and fig is not None:
            parts.append(_cost_table(comparison))
            parts.append(_breakdown_table(comparison))
        if key == "cost":
            parts.append(_cross_zone_table(comparison))
    parts.append(_jitter_table(comparison))
    parts.append(_speedup_tables(comparison))
    parts.append(_notes(comparison, run))
    return page(f"benchfleet - {run['name']} - {run['run_id']}", parts, sum(1 for f in figures if f[2] is not None))


def _json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return (json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _figure_script(div_id: str, fig: charts.Figure) -> str:
    return (f"<script>(function(){{var f={_json(fig)};Plotly.newPlot({_json(div_id)},f.data,f.layout,"
            f"{{responsive:true,displaylogo:false}});}})();</script>")


# ---- formatting -----------------------------------------------------------------------------------

def _n(value: Any, digits: int = 1, prefix: str = "", suffix: str = "") -> str:
    if value is None:
        return "<span class='muted'>-</span>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{prefix}{value:,}{suffix}"
    return f"{prefix}{float(value):,.{digits}f}{suffix}"


def _pct(value: Any, digits: int = 1) -> str:
    return "<span class='muted'>-</span>" if value is None else f"{float(value):+.{digits}f}%"


def _money(value: Any, digits: int = 4) -> str:
    return _n(value, digits, prefix="$")


def _e(value: Any) -> str:
    return "<span class='muted'>-</span>" if value in (None, "") else escape(str(value))


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    head = "".join(f"<th class='l'>{escape(h)}</th>" if i < left else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    def cell(i: int, c: str) -> str:
        # A token (a version, a hash) never wraps inside: its cell grows instead.
        css = "l tok" if c.startswith(_TOK) else "l"
        return f"<td class='{css}'>{c}</td>" if i < left else f"<td>{c}</td>"

    body = "".join("<tr>" + "".join(cell(i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return _e(value)


# ---- sections -------------------------------------------------------------------------------------

def _header(run: dict[str, Any], comparison: dict[str, Any]) -> str:
    spec = run.get("spec") or {}
    workload = spec.get("workload")
    workload_text = workload.get("name") if isinstance(workload, dict) else workload
    duration = None
    if isinstance(run.get("started_at"), datetime) and isinstance(run.get("ended_at"), datetime):
        duration = (run["ended_at"] - run["started_at"]).total_seconds()
    kv = [
        ("Run", _e(run["run_id"])), ("Status", _e(run.get("status"))), ("Mode", _e(run.get("mode"))),
        ("Started", _when(run.get("started_at"))), ("Ended", _when(run.get("ended_at"))),
        ("Wall time", _n(duration / 60, 1, suffix=" min") if duration is not None else _e(None)),
        ("Workload", _e(workload_text)), ("Repetitions", _e(spec.get("repetitions"))),
        ("Baseline", _e(comparison.get("baseline"))),
    ]
    if any(_price_known(t) for t in comparison["targets"]):
        kv += [("Estimated cost", _money(run.get("estimated_cost_usd"), 2)),
               ("Actual cost", _money(run.get("actual_cost_usd"), 2))]
    else:  # never "$0.00" for what has no price
        kv.append(("Cost", "<span class='muted'>unpriced (no target has a price)</span>"))
    if spec.get("description"):
        kv.insert(0, ("Description", _e(spec["description"])))
    grid = "".join(f"<div>{escape(k)}</div><div>{v}</div>" for k, v in kv)
    spec_json = escape(json.dumps(spec, indent=2, default=str))
    msg = f"<p class='note'>{_e(run.get('message'))}</p>" if run.get("message") else ""
    return (f"<h2>Run</h2><div class='card'><div class='kv'>{grid}</div>{msg}"
            f"<details><summary>Spec</summary><pre>{spec_json}</pre></details></div>")


def _subtitle(comparison: dict[str, Any]) -> str:
    targets = len(comparison["targets"])
    return (f"benchfleet report - {targets} target{'' if targets == 1 else 's'}, {len(comparison['rows'])} "
            "target x threads results")


def summary_section(title: str, subtitle: str, banner: str | None, sentences: list[str], caveats: list[str]) -> str:
    """The first thing a report shows (``<section id="summary">``): its title, what a reader must know before
    any figure (a run that did not finish, a smoke run), the answer in one sentence per comparison
    (benchfleet.report.summary, as the terminal prints them) and the caveats that apply."""
    found = "".join(f"<li>{escape(s)}</li>" for s in sentences) or (
        "<li class='muted'>Nothing is compared: one series only, or no verdict could be reached.</li>")
    notes = (f"<p class='note'>Caveats:</p><ul class='caveats'>{''.join(f'<li>{escape(c)}</li>' for c in caveats)}</ul>"
             if caveats else "")
    flag = f"<p class='trial' id='trial'>{escape(banner)}</p>" if banner else ""
    return (f"<section id='summary'>{title}<div class='sub'>{escape(subtitle)}</div>{flag}"
            f"<div class='card answer'><ul>{found}</ul>{notes}</div></section>")


def _targets_table(comparison: dict[str, Any], spec: dict[str, Any]) -> str:
    """What each target was given (instance type, pinned CPUs, memory it is sized for, an existing server's
    address) beside what its host has (the fingerprint), and its price or 'unpriced'."""
    given_of = given(spec)
    rows = []
    for t in comparison["targets"]:
        tid = t["target_id"]
        config = t.get("mysql_config")
        if t.get("kind") == "existing" and fingerprint_values(comparison, tid, "config_hash"):
            config = "the server's own"  # benchfleet never changes an existing server's settings
        rows.append([
            escape(tid), _e(t.get("kind")), _e(given_of.get(tid) or t.get("instance_type") or t.get("instance_class")),
            _e(host_of(comparison, tid, t.get("kind"))), _e(t.get("region")), _tok(t.get("engine")),
            _tok(fingerprint_values(comparison, tid, "engine_version")), _e(config),
            _tok(fingerprint_values(comparison, tid, "config_hash"), 12),
            _tok(fingerprint_values(comparison, tid, "arch")), _tok(fingerprint_values(comparison, tid, "kernel")),
            _tok(fingerprint_values(comparison, tid, "sysbench_version")), _e(t.get("storage")),
            _money(t.get("price_per_hour"), 4) if _price_known(t) else "<span class='muted'>unpriced</span>"])
    return ("<h2>Targets and environment fingerprints</h2><p class='note'>Given: what the spec gave the target "
            "(instance type; for a local server the CPUs it is pinned to and the memory its buffer pool is sized "
            "for). Host: what the machine it ran on has, as the agent read it.</p>" + _table(
                ["target", "kind", "given", "host", "region", "engine", "version", "config", "config hash", "arch",
                 "kernel", "sysbench", "storage", "$/hour"], rows, left=13))


_TOK = "<span class='tok'"


def _tok(value: Any, short: int | None = None) -> str:
    """A value that must not wrap inside (a version, a hash, an architecture); ``short``: show that many
    characters of each value (a configuration hash), the whole in its tooltip."""
    if value in (None, ""):
        return "<span class='muted'>-</span>"
    text = str(value)
    shown = " | ".join(v[:short] for v in text.split(" | ")) if short else text
    return f"{_TOK} title='{escape(text)}'>{escape(shown)}</span>"


def _price_known(target: dict[str, Any]) -> bool:
    """A price was given or found: a local server's recorded 0 is 'free unless given', i.e. unpriced."""
    prices = target.get("prices") or {}
    return target.get("price_per_hour") is not None and not prices.get("free") and not (
        target.get("kind") in ("local", "existing") and not target.get("price_per_hour"))


def _unpriced(priced: dict[str, bool], row: dict[str, Any]) -> str:
    return "<span class='muted'>unpriced</span>" if not priced.get(row["target_id"]) else _e(None)


def _caveat_cell(caveats: list[dict[str, Any]] | None, gaps: list[str]) -> str:
    """What differed between the verdict's two sides (:mod:`benchfleet.stats.caveats`), then this row's
    own per-second gaps."""
    parts = []
    if caveats:
        parts.append(f"<span class='caveat'>{escape(caveat_words(caveats))}</span>")
    if gaps:
        parts.append(f"<span class='gap'>gaps: {escape('; '.join(gaps))}</span>")
    return "<br>".join(parts)


def _storage_table(comparison: dict[str, Any]) -> str:
    """What each target's data directory was on, as the agent measured it (one row per distinct
    layout): the array, file system, alignment and mount options."""
    rows = []
    for t in comparison["targets"]:
        seen: list[str] = []
        for f in t.get("fingerprints") or []:
            text = layout_text(f.get("storage_layout"))
            if text and text not in seen:
                seen.append(text)
                rows.append([escape(t["target_id"]), _e(f.get("repetition")), _e(text)])
    if not rows:
        return ""
    return "<h2>Data storage as measured</h2>" + _table(["target", "repetition", "data directory on"], rows, left=3)


def _summary_table(comparison: dict[str, Any]) -> str:

    rows = []
    pct = percentile_of(comparison["rows"])
    priced = {t["target_id"]: _price_known(t) for t in comparison["targets"]}
    for r in comparison["rows"]:
        tps = r["tps"]
        rel = r.get("relative") or {}
        verdict = rel.get("verdict")
        css = {"faster": "faster", "slower": "slower", "equivalent": "equiv", "inconclusive": "unsure"}.get(
            str(verdict), "muted" if not rel else "unsure")
        ci = (f"{_n(tps['ci_low'])} - {_n(tps['ci_high'])}" if tps["ci_low"] is not None
              else "<span class='muted'>n&lt;2</span>")
        rel_ci = (f"{_pct(rel.get('pct'))} <span class='ci'>[{_pct(rel.get('ci_low_pct'))}, "
                  f"{_pct(rel.get('ci_high_pct'))}]</span>" if rel.get("ci_low_pct") is not None
                  else _pct(rel.get("pct")) + (" <span class='muted'>no interval</span>" if rel else ""))
        if rel.get("refused"):  # benchfleet.stats.settings_refusal: no difference shown, the reason instead
            css, rel_ci = "slower", "<span class='muted'>refused</span>"
        lat = r["latency_step_pct_ms"]
        gaps = [f"rep {s['repetition']}: " + ", ".join(
                    ([f"{s['reported_late']} s reported late"] if s.get("gap") else [])
                    + ([f"{s['duplicate_timestamps']} report(s) with a repeated second"]
                       if s.get("duplicate_timestamps") else []))
                for s in r.get("steps") or [] if s.get("gap") or s.get("duplicate_timestamps")]
        rows.append([
            escape(charts.label_of(r)), _n(r["threads"]), _n(r["repetitions"]), _n(tps["mean"]), ci,
            f"{_n(tps['min'])} - {_n(tps['max'])}",
            f"{_n(lat['median'], 2)} <span class='ci'>({_n(lat['min'], 2)} - {_n(lat['max'], 2)})</span>", rel_ci,
            f"<span class='{css}'>{escape(summary.verdict_text(rel or None))}</span>",
            _n(r["steal_mean_pct"], 2), _n(r.get("iowait_mean_pct"), 2),
            *([_money(r["cost_per_1000_tps"]) if r["cost_per_1000_tps"] is not None else _unpriced(priced, r)]
              if any(priced.values()) else []),
            _caveat_cell(r.get("caveats"), gaps)])
    found = comparison.get("multiplicity") or {}
    return ("<h2>Results by target and threads</h2><p class='note'>Intervals are 95%. Verdicts: "
            "faster/slower when the whole interval of the difference is on one side of 0, 'equivalent "
            f"within ±{comparison.get('margin_pct', 5):g}%' when it contains 0 inside the margin, "
            "'inconclusive (±x%)' when it reaches beyond it; 'paired:' marks a verdict from per-repetition "
            "ratios of measurements that shared a host or round, the others are Welch (measured apart); "
            "below 3 repetitions it says how many would decide. Caveats: the compared sides differed in CPU steal "
            "(1 point or more), iowait (5 points), seconds reported late (2 points) or fingerprint (kernel, "
            "engine version, sysbench, CPU model of the same instance type), with the figures. "
            + (escape(str(found["words"])) + ". " if found.get("comparisons") else "")
            + f"p{pct} median: of an odd number of repetitions only. tps leaves out each step's ramp (its first "
            "report, low while a fresh sysbench connects). The final report sysbench silences as every run "
            "ends is normal and not flagged. Per-second gaps: seconds sysbench reported late (inside a "
            "longer interval) and two reports printed with the same rounded second.</p>" + _table(
                ["target", "threads", "reps", "tps mean", "tps 95% CI", "tps min - max",
                 f"p{pct} ms median (min - max)", "vs baseline [95% CI]", "verdict", "steal %",
                 "iowait %", *(["$/h per 1k TPS"] if any(priced.values()) else []),
                 "caveats and per-second gaps"], rows))


def _jitter_table(comparison: dict[str, Any]) -> str:
    rows = []
    pct = percentile_of(comparison["rows"])
    for r in comparison["rows"]:
        j = r["jitter"]
        rows.append([
            escape(r.get("label") or r["target_id"]), _n(r["threads"]),
            _n(None if j["tps_cv_mean"] is None else 100 * j["tps_cv_mean"], 2, suffix="%"),
            _n(None if j["tps_cv_max"] is None else 100 * j["tps_cv_max"], 2, suffix="%"),
            _n(r["tps_per_second_median"]["mean"]),
            _n(r["latency_series_p95_ms"]["median"], 2), _n(r["latency_series_p99_ms"]["median"], 2),
            f"{_n(r['latency_series_p99_ms']['min'], 2)} - {_n(r['latency_series_p99_ms']['max'], 2)}",
            _n(None if j["latency_series_cv_mean"] is None else 100 * j["latency_series_cv_mean"], 1,
               suffix="%"),
            _n(r["steal_mean_pct"], 2), _n(r["steal_max_pct"], 1), _n(r["errors_per_s_mean"], 2)])
    return ("<h2>Jitter</h2><p class='note'>Within each measure step, second by second (warm-up excluded): "
            "CV = stdev / mean of per-second tps, both weighted by the seconds each report covers, the "
            "step's ramp (first report) left out; 'p95 of per-second pNN' = the 95th percentile across the "
            "step's seconds of sysbench's per-second latency percentile: how bad the worst seconds were, not "
            "a percentile of transactions. Median (and range) over repetitions.</p>" + _table(
                ["target", "threads", "tps CV mean", "tps CV max", "median tps/s", f"p95 of per-second p{pct} ms",
                 f"p99 of per-second p{pct} ms", "its range", "latency CV", "steal mean %", "steal max %",
                 "errors/s"], rows))


_COST_MODELS = ("on_demand", "reserved_1y_all_upfront")


def _ci_money(c: dict[str, Any] | None) -> str:
    if not c:
        return _e(None)
    if c["ci_low"] is None:
        return "<span class='muted'>n&lt;2</span>"
    return f"{_money(c['ci_low'])} - {_money(c['ci_high'])}"


def _cost_table(comparison: dict[str, Any]) -> str:
    from benchfleet.cost.pricing import MODEL_LABELS

    rows = []
    for r in comparison["rows"]:
        costs = [(r.get("cost") or {}).get(m) for m in _COST_MODELS]
        if not any(costs):
            continue
        cells = [escape(r["target_id"]), _n(r["threads"]), _n(r["tps"]["mean"])]
        for c in costs:
            cells += [_money((c or {}).get("usd_per_hour")), _money((c or {}).get("per_1000_tps")), _ci_money(c)]
        rows.append(cells)
    headers = ["target", "threads", "tps mean"]
    for m in _COST_MODELS:
        headers += [f"{MODEL_LABELS[m]} $/h", f"{MODEL_LABELS[m]} $/h per 1000 TPS", "95% CI"]
    return _table(headers, rows)


def _breakdown_table(comparison: dict[str, Any]) -> str:
    from benchfleet.cost.pricing import MODEL_LABELS, line_words

    rows = []
    for t in comparison["targets"]:
        prices = t.get("prices") or {}
        for i, line in enumerate(prices.get("lines") or []):
            instead, counted = line_words(line)
            rows.append([escape(t["target_id"]) if i == 0 else "", escape(line["item"]), escape(line["what"]),
                         escape(counted),
                         *[escape(instead) if instead else _money(line["usd_per_hour"].get(m), 5)
                           for m in _COST_MODELS]])
        for note in prices.get("notes") or []:
            rows.append(["", "", escape(note), "", *["" for _ in _COST_MODELS]])
    if not rows:
        return ""
    return ("<p class='note'>What the money buys, USD per hour. In cost per 1000 TPS: the database's lines; "
            "the client host is in what the run costs only.</p>" + _table(
                ["target", "item", "what", "in cost per 1000 TPS",
                 *[f"{MODEL_LABELS[m]} $/h" for m in _COST_MODELS]], rows, left=4))


def _cross_zone_table(comparison: dict[str, Any]) -> str:
    """A cluster's traffic across availability zones per thread count (``rows[].cross_zone``), GB per
    hour and what it costs per hour; a local cluster's as what it would cost."""
    rows = [[escape(r.get("label") or r["target_id"]), _n(r["threads"]), _n(c["replication_gb_per_hour"], 3),
             _n(c["client_gb_per_hour"], 3), _n(c["gb_per_hour"], 3), _money(c["usd_per_hour"], 5),
             "would cost across zones (local nodes: in no total)" if c["basis"] == "would"
             else "in cost per 1000 TPS"]
            for r in comparison["rows"] if (c := r.get("cross_zone"))]
    if not rows:
        return ""
    return ("<h3>Cross-zone traffic</h3><p class='note'>AWS bills $0.01 per GB each way between availability "
            "zones. Model: every node in its own zone, the client host (and the proxy) in the first node's; "
            "replication = the bytes each node replicated x (nodes - 1); client = the bytes the nodes outside "
            "the client's zone sent and received; GB of 2^30 bytes (workloads/README.md, \"Cost of a "
            "cluster\").</p>" + _table(["target", "threads", "replication GB/h", "client GB/h", "total GB/h", "$/h",
                                         ""], rows))


def _speedup_tables(comparison: dict[str, Any]) -> str:

    groups = comparison.get("speedup") or []
    out = ["<h2>Speedup by size</h2>"]
    if not groups:
        out.append("<p class='muted'>No family with two or more sizes in this run (same kind, family, "
                   "engine and configuration; local targets by pinned CPU count).</p>")
        return "".join(out)
    out.append("<p class='note'>Tps divided by that of the smallest size of the same family and "
               "configuration at the same thread count, with its 95% interval as the verdicts have it: "
               "'paired' where local servers ran in rounds (geometric mean of the per-round ratios), else "
               "Welch on the log of the ratio of means; per doubling: speedup ** (1 / doublings of vCPUs), "
               "2.00x is linear scaling.</p>")
    for g in groups:
        others = [r for r in g["rows"] if r["target_id"] != g["baseline_target"]]
        rows = []
        for th in g["threads"]:
            cells = [_n(th)]
            for r in others:
                c = r["by_threads"].get(str(th)) or {}
                ci = (("paired: " if c.get("design") == "paired" else "")
                      + f"{_n(c.get('ci_low'), 2)} - {_n(c.get('ci_high'), 2)}" if c.get("ci_low") is not None
                      else "<span class='muted'>n&lt;2</span>")
                cells += [_n(c.get("speedup"), 2, suffix="x"), ci, _n(c.get("per_doubling"), 2, suffix="x")]
            rows.append(cells)
        headers = ["threads"]
        for r in others:
            headers += [f"{r['target_id']} ({r['size']:g} vCPUs)", "95% CI", "per doubling"]
        out.append(f"<div class='card'><div class='note'>{escape(summary.speedup_title(g))} (sizes of one family and "
                   f"settings: {escape(g['group'])})</div>" + _table(headers, rows) + "</div>")
    return "".join(out)


def _notes(comparison: dict[str, Any], run: dict[str, Any]) -> str:
    from benchfleet.cost import pricing

    try:
        sources = pricing.load_prices().sources()
        prices = "; ".join(f"{table} {section} as of {info['as_of']}" + (" (approximate)" if info.get("approximate")
                                                                          else "")
                           for table, sections in sources.items() for section, info in sections.items()
                           if info.get("as_of"))
    except (OSError, ValueError):
        prices = "price tables not found"
    items = "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in comparison["notes"].items())
    return (f"<h2>What the figures are</h2><div class='card note'><ul>{items}"
            f"<li><b>prices</b>: workloads/pricing ({escape(prices)}); a target's own "
            f"price_per_hour overrides them</li></ul></div>"
            f"<p class='muted note'>benchfleet - run {escape(run['run_id'])}</p>")
