"""The report of two runs (``benchfleet report RUN --against BASE``, ``benchfleet compare BASE RUN
--report``): the second run's targets against the first's, with the verdicts of ``compare``
(benchfleet.stats.compare: Welch, the second run's margin, caveats), and beside them what the two runs
measured: throughput and latency percentiles per thread count, throughput over time, and, where a run
has them, its CloudWatch metrics (RDS WriteLatency, Aurora commit latency, CPU steal, burst credits)
and its server status counters per second (SHOW GLOBAL STATUS, table status_samples).

Both runs' series share one palette: a series is named "<run>: <target>", the run by its name, or by
its id when both runs have the same name (the same spec run twice).
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

from benchfleet import stats
from benchfleet.local.store import DuckDBStore
from benchfleet.report import charts, html, summary, timecharts
from benchfleet.report.data import blocks, label_series, status_timeline, timeline
from benchfleet.stats.caveats import words as caveat_words
from benchfleet.stats.compare import compare_runs, compared_label
from benchfleet.stats.figures import percentile_of
from benchfleet.stats.history import noise_from_store


class NothingInCommon(ValueError):
    """The two runs have no target x threads to compare."""


def write_pair_report(store: DuckDBStore, baseline_run: str, run: str, path: Path | str) -> Path:
    """Write the report of ``run`` against ``baseline_run`` (ids or unique prefixes) to ``path``."""
    return html.write_html(render_pair_report(store, baseline_run, run), path)


def _slug(text: str) -> str:
    """An element id's part: letters, digits and dashes."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def _run_labels(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    if a["name"] != b["name"]:
        return a["name"], b["name"]
    return a["run_id"], b["run_id"]


def _labelled(doc: dict[str, Any], run_label: str) -> dict[str, Any]:
    """A run's comparison whose rows are named "<run>: <series>" (charts draw both runs' rows at once)."""
    return {**doc, "rows": [{**r, "label": f"{run_label}: {charts.label_of(r)}", "relative": None}
                            for r in doc["rows"]]}


def render_pair_report(store: DuckDBStore, baseline_run: str, run: str) -> str:
    """The HTML of the report of ``run`` against ``baseline_run``."""
    docs = [stats.run_comparison(store, r) for r in (baseline_run, run)]
    pair = compare_runs(docs[0], docs[1], noise=noise_from_store(store, docs[1]))
    if not pair["rows"]:
        raise NothingInCommon(f"runs {pair['baseline_run']} and {pair['run']} have no target x threads in common "
                              "(same target ids, or one target each; the same variants)")
    runs = [store.run(d["run"]["run_id"]) for d in docs]
    labels = _run_labels(*runs)
    both = [_labelled(d, label) for d, label in zip(docs, labels, strict=True)]
    # The second run's rows carry their verdict against the first, so that its bars are drawn as the
    # verdict says (hatched where inconclusive, charts.bar_look).
    verdicts = {(r["target_id"], r.get("variant") or "", r["threads"]): r["relative"] for r in pair["rows"]}
    both[1]["rows"] = [{**r, "relative": verdicts.get((r["target_id"], r.get("variant") or "", r["threads"]))}
                       for r in both[1]["rows"]]
    merged = {**both[1], "rows": both[0]["rows"] + both[1]["rows"]}
    series_names = list(dict.fromkeys(charts.label_of(r) for r in merged["rows"]))
    palette = charts.colors(series_names)
    # Verdict rows named "<target> vs <baseline target>", each in the colour of the second run's series it
    # compares (a variant's series is named by the variant alone, its verdict row by target/variant).
    series_of = {(r["target_id"], r.get("variant") or ""): r["label"] for r in both[1]["rows"]}
    verdict_rows = [{**r, "label": f"{labels[1]}: {compared_label(r)}"} for r in pair["rows"]]
    verdict_palette = {r["label"]: palette.get(series_of.get((r["target_id"], r.get("variant") or ""), ""),
                                               charts.FALLBACK_COLOR) for r in verdict_rows}

    def versus(row: dict[str, Any]) -> str:
        return f"{compared_label(row)} vs {row['vs_target_id']}" if row["target_id"] != row["vs_target_id"] \
            else compared_label(row)

    single = charts.one_thread_count(merged["rows"])
    # One thread count: bars, and the sections say so.
    per = f"at {charts.threads_words(single)}" if single is not None else "vs threads"
    # One latency axis holds one percentile: runs that report different ones (workloads with another
    # `percentile`) had both drawn under the first run's "p95".
    percentiles = sorted({percentile_of(d["rows"]) for d in docs}, key=float)
    mixed = len(percentiles) > 1
    sections = [
        ("relative", f"{labels[1]} relative to {labels[0]}", charts.relative_bars(
            verdict_rows, verdict_palette,
            f"Throughput of {labels[1]} relative to {labels[0]} (%; whiskers: 95% interval)",
            float(pair["margin_pct"]), name_of=versus), html.RELATIVE_NOTE.format(margin=pair["margin_pct"])),
        ("throughput", f"Throughput {per}, both runs", charts.throughput(merged, palette),
         "Each run's mean tps over its repetitions, 95% interval as whiskers, repetitions as rings."),
        ("latency", f"Latency percentiles {per}, both runs", None if mixed else charts.latency(merged, palette),
         "sysbench's latency percentile over each whole step, every repetition of both runs (percentiles are "
         "never averaged, so they get no verdict: compare the points)."),
        ("latency-series", f"p99 of per-second latency {per}, both runs",
         None if mixed else _series_latency(merged, palette), "The 99th percentile over each step's seconds of "
         "sysbench's per-second latency percentile (the worst seconds), per repetition."),
    ]
    statuses: list[tuple[str, str, charts.Figure | None, str]] = []
    timelines = []
    for i, (doc, label) in enumerate(zip(docs, labels, strict=True)):
        series = timeline(store, doc["run"]["run_id"])
        label_series(series["series"], doc["rows"])
        timelines.append(series)
        # The run report's palette: each variant (or route) in its colour, then the targets.
        run_palette = charts.colors(list(dict.fromkeys([*(charts.label_of(r) for r in doc["rows"]),
                                                        *(t["target_id"] for t in doc["targets"])])))
        found_blocks = blocks(store, doc["run"]["run_id"], series["spans"]) if doc.get("variants") else []
        if found_blocks:
            sections.append((f"blocks-{i}", f"How the variants alternated, block by block: {label}",
                             timecharts.blocks(series, found_blocks, run_palette), html.BLOCKS_NOTE))
        sections.append((f"timeline-{i}", f"Throughput over time, CPU steal and iowait: {label}",
                         timecharts.timeline(series, run_palette) if series["series"] else None,
                         "Warm-up and every measure step of each repetition (one dash style per repetition; "
                         "a variant in its colour, its line broken between its blocks)."))
        # The run report's status chart (report.data.status_timeline, timecharts.status): the counters under
        # the run's own throughput, on its time axis, one counter at a time.
        found = status_timeline(store, doc["run"]["run_id"], series["spans"])
        label_series(found["series"], doc["rows"])
        if found["series"]:
            statuses.append((f"status-{i}", f"Server status per second: {label}",
                             timecharts.status(series, found, run_palette), html.STATUS_NOTE))
    counted = [label for series, label in zip(timelines, labels, strict=True) if _has_rows(series)]
    if counted:  # one run alone: said in place of the chart, since the curves cannot be compared
        sections.append(("rows", "Insert rate vs rows in the table, both runs",
                         _insert_rates(timelines, labels, palette, pair["rows"], versus)
                         if len(counted) == 2 else None, INSERT_NOTE))
    cloud = [_cloud_series(store, d["run"]["run_id"], label) for d, label in zip(docs, labels, strict=True)]
    metrics = sorted({s["metric"] for found in cloud for s in found})
    for metric in metrics:
        sections.append((f"cloud-{_slug(metric)}", f"CloudWatch {metric}, both runs", _over_time(
            [s for found in cloud for s in found if s["metric"] == metric], palette, f"CloudWatch {metric}"),
            "The metric as CloudWatch reports it for each target (RDS WriteLatency converted to ms), by "
            "seconds since the run's first sample."))
    sections += statuses

    named = labels if runs[0]["name"] != runs[1]["name"] else summary.RUN_ORDINALS  # not two run ids per clause
    banners = [f"{label}: {text}" for run_row, doc, label in zip(runs, docs, labels, strict=True)
               if (text := summary.run_banner(run_row, doc.get("trial")))]
    body = [html.summary_section(
        f"<h1>{escape(labels[1])} against {escape(labels[0])}</h1>",
        f"benchfleet report of two runs - {len(pair['rows'])} target x threads compared",
        " ".join(banners) or None, summary.pair_sentences(pair, named),
        summary.caveat_lines(pair["rows"], versus, caveat_words, pair.get("multiplicity"))),
        _header(runs, labels, pair), _verdict_table(pair, labels)]
    missing = {"timeline-0": html._MISSING["timeline"], "timeline-1": html._MISSING["timeline"],
               "latency": f"The runs report different latency percentiles ({', '.join('p' + p for p in percentiles)}: "
                          "their workloads' percentile), which one axis cannot compare; each run's own report "
                          "has its own.",
               "rows": f"Only {counted[0] if counted else ''} counts the rows in its table (an insert workload "
                       "whose agent reads the table's size); the other run has no rows to draw its rate against.",
               "latency-series": "Neither run has per-second latency: their logs were imported from sysbench "
                                 "summaries only (no --report-interval lines). The latency percentiles above "
                                 "come from sysbench's own summary of each step."}
    if mixed:
        missing["latency-series"] = missing["latency"]
    for key, title, fig, note in sections:
        body.append(html.figure_section(key, title, fig, note, missing.get(key, "")))
    if not metrics:
        body.append("<h2>CloudWatch metrics</h2><p class='muted' id='missing-cloud'>Neither run has CloudWatch "
                    "metrics (local runs and imported logs have none).</p>")
    if not statuses:
        body.append("<h2>Server status per second</h2><p class='muted' id='missing-status'>Neither run has server "
                    "status counters.</p>")
    return html.page(f"benchfleet - {labels[1]} vs {labels[0]}", body,
                     sum(1 for s in sections if s[2] is not None))


INSERT_NOTE = ("iiBench's view (seed 001), both runs on one chart: each second's inserts against the rows already in "
               "the table (prepared rows plus every insert so far), one line per run x target x repetition. The "
               "words are the throughput verdicts above (the mean insert rate of each step, run against run) "
               "where the two runs have a target x threads in common.")


def _has_rows(series: dict[str, Any]) -> bool:
    return any(r is not None for s in series["series"] for r in s.get("rows") or [])


def _insert_rates(timelines: list[dict[str, Any]], labels: tuple[str, str], palette: dict[str, str],
                  rows: list[dict[str, Any]], versus: Any) -> charts.Figure:
    """Both runs' insert rate against rows in the table (timecharts.insert_rate over the series of both, each
    named "<run>: <target>"), with the verdict of every compared target x threads written above."""
    both = [{**s, "target_id": f"{label}: {s['target_id']}"}
            for series, label in zip(timelines, labels, strict=True) for s in series["series"]]
    widths = {series["width_s"] for series in timelines}
    fig = timecharts.insert_rate({"width_s": max(widths), "series": both}, palette)
    if len(widths) > 1:  # the title names one bucket width: say that each run has its own
        fig["layout"]["title"]["text"] = fig["layout"]["title"]["text"].split(" (")[0] + (
            " (" + " and ".join(f"{label}: " + ("per second" if w == 1 else f"mean of {w} s buckets")
                                for label, w in zip(labels, (t["width_s"] for t in timelines), strict=True)) + ")")
    words = [f"{escape(versus(r))} · {r['threads']} thr: {escape(charts.verdict_words(r['relative']))}" for r in rows]
    fig["layout"]["annotations"] = [
        {"xref": "paper", "yref": "paper", "x": 0, "y": 1, "yanchor": "bottom", "xanchor": "left",
         "showarrow": False, "align": "left", "font": {"size": 11, "color": "#333"},
         "text": f"{escape(labels[1])} vs {escape(labels[0])}: " + "<br>".join(words)}]
    fig["layout"]["margin"] = {**fig["layout"]["margin"], "t": 60 + 16 * len(words)}
    fig["layout"]["height"] = 420 + 16 * len(words)
    return fig


def _header(runs: list[dict[str, Any]], labels: tuple[str, str], pair: dict[str, Any]) -> str:
    rows = []
    for role, run, label in zip(("baseline", "compared"), runs, labels, strict=True):
        spec = run.get("spec") or {}
        workload = spec.get("workload")
        rows.append([escape(role), escape(label), escape(run["run_id"]), html._e(run.get("status")),
                     html._when(run.get("started_at")),
                     html._e(workload.get("name") if isinstance(workload, dict) else workload),
                     html._e(spec.get("repetitions"))])
    unmatched = (f"<p class='note'>Not in both runs: {escape(', '.join(pair['unmatched']))}</p>"
                 if pair["unmatched"] else "")
    return ("<h2>Runs</h2>" + html._table(
                ["run", "name", "id", "status", "started", "workload", "repetitions"], rows, left=6) + unmatched)


def _verdict_table(pair: dict[str, Any], labels: tuple[str, str]) -> str:

    rows = []
    for r in pair["rows"]:
        rel = r["relative"]
        css = {"faster": "faster", "slower": "slower", "equivalent": "equiv"}.get(str(rel.get("verdict")), "unsure")
        ci = (f"{html._pct(rel.get('pct'))} <span class='ci'>[{html._pct(rel['ci_low_pct'])}, "
              f"{html._pct(rel['ci_high_pct'])}]</span>" if rel.get("ci_low_pct") is not None
              else html._pct(rel.get("pct")) + " <span class='muted'>no interval</span>")
        rows.append([escape(compared_label(r)), escape(r["vs_target_id"]), html._n(r["threads"]),
                     html._n(r["repetitions"]), html._n(r["baseline_tps"]["mean"]), html._n(r["tps"]["mean"]), ci,
                     f"<span class='{css}'>{escape(summary.verdict_text(rel))}</span>",
                     f"<span class='caveat'>{escape(caveat_words(r.get('caveats')))}</span>" if r.get("caveats")
                     else ""])
    found = pair.get("multiplicity") or {}
    return ("<h2>Verdicts</h2><p class='note'>Mean tps of each run over its repetitions; the change of the second "
            "against the first with its 95% interval (Welch: two runs never share a host's minute) and its "
            f"verdict against the ±{pair['margin_pct']:g}% margin. "
            + (escape(str(found["words"])) + ". " if found.get("comparisons") else "")
            + "Caveats: what differed between the two besides the run (steal, iowait, seconds reported late, "
            "kernel, engine version, sysbench, CPU model), with the figures.</p>" + html._table(
                ["target", "vs", "threads", "reps", f"{labels[0]} tps", f"{labels[1]} tps", "change [95% CI]",
                 "verdict", "caveats"], rows, left=2))


def _series_latency(doc: dict[str, Any], palette: dict[str, str]) -> charts.Figure | None:
    """The latency chart over the per-second p99 of each repetition (None when no run has seconds)."""
    rows = [{**r, "latency_step_pct_ms": r["latency_series_p99_ms"], "latency_pct": 99} for r in doc["rows"]
            if (r.get("latency_series_p99_ms") or {}).get("values")]
    if not rows:
        return None
    fig = charts.latency({**doc, "rows": rows}, palette)
    fig["layout"]["title"]["text"] = fig["layout"]["title"]["text"].replace(
        "p99 latency", "p99 of per-second latency")
    return fig


_CLOUD_SQL = """
SELECT c.target_id, c.metric, any_value(c.unit) AS unit,
       list(epoch(c.time) - epoch(f.t0) ORDER BY c.time) AS t, list(c.value ORDER BY c.time) AS y
FROM cloud_metrics c, (SELECT min(time) AS t0 FROM samples WHERE run_id = ?) f
WHERE c.run_id = ? AND c.value IS NOT NULL AND isfinite(c.value)
GROUP BY c.target_id, c.metric ORDER BY c.target_id, c.metric
"""


def _cloud_series(store: DuckDBStore, run_id: str, label: str) -> list[dict[str, Any]]:
    """A run's CloudWatch series: ``{series, metric, t, y}``, t in seconds since its first sample."""
    return [{"series": f"{label}: {r['target_id']}", "metric": r["metric"] + (f" ({r['unit']})" if r["unit"] else ""),
             "t": [round(float(t), 1) for t in r["t"]], "y": list(r["y"])}
            for r in store.query(_CLOUD_SQL, [run_id, run_id]) if r["t"] and r["t"][0] is not None]


def _over_time(series: list[dict[str, Any]], palette: dict[str, str], title: str) -> charts.Figure:
    """One line per series over seconds, the runs' series in their palette colours."""
    data = [{"type": "scatter", "mode": "lines+markers" if len(s["t"]) < 60 else "lines", "name": s["series"],
             "x": s["t"], "y": s["y"], "line": {"color": palette.get(s["series"], "#555"), "width": 1.5},
             "marker": {"size": 4, "color": palette.get(s["series"], "#555")},
             "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:,.3f}<extra></extra>"} for s in series]
    return {"data": data, "layout": charts.base_layout(title, "seconds since the run's first sample", title)}
