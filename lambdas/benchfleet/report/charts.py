"""Plotly figures of the report, built as plain dicts (``{"data": [...], "layout": {...}}``).

Plain dicts rather than ``plotly.graph_objects``: the figures are simple, validation of hundreds of
traces costs seconds at the largest runs, and the browser test checks that every chart renders.
"""

from __future__ import annotations

import colorsys
import math
from html import escape
from typing import Any

from plotly.colors import hex_to_rgb

from benchfleet.stats.caveats import words as caveat_words
from benchfleet.stats.figures import percentile_of
from benchfleet.stats.verdict import design_words

Figure = dict[str, Any]

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
            "#bcbd22", "#7f7f7f"]
# With many targets, only this many are drawn at first in the busy charts (the legend shows the rest).
VISIBLE_SERIES = 6


def colors(target_ids: list[str]) -> dict[str, str]:
    """A stable colour per target (the palette, then evenly spaced hues)."""
    out = {}
    for i, t in enumerate(target_ids):
        if i < len(_PALETTE):
            out[t] = _PALETTE[i]
        else:
            r, g, b = colorsys.hls_to_rgb((i * 0.618034) % 1, 0.45, 0.6)
            out[t] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
    return out


# The colour of a series the palette does not name.
FALLBACK_COLOR = "#555555"


def rgba_of(color: str, alpha: float) -> str:
    """``color`` (#rgb or #rrggbb) at opacity ``alpha``: Plotly's parser, since a shorthand '#555' read as
    six digits once crashed the report of two runs."""
    r, g, b = hex_to_rgb(color)
    return f"rgba({r},{g},{b},{alpha})"


def base_layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "font": {"size": 15}},
        "xaxis": {"title": {"text": x_title}, "zeroline": False},
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
        "margin": {"l": 70, "r": 30, "t": 45, "b": 55},
        "height": 420, "hovermode": "closest", "template": None,
        "legend": {"orientation": "v", "font": {"size": 11}},
        "plot_bgcolor": "#fff", "paper_bgcolor": "#fff",
    }
    layout["xaxis"].update(gridcolor="#e5e5e5")
    layout["yaxis"].update(gridcolor="#e5e5e5")
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def label_of(row: dict[str, Any]) -> str:
    """How a result row is named in charts: its label (a target's variant) or its target."""
    return str(row.get("label") or row["target_id"])


def _by_target(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per series: a target, or a target's variant (its label)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(label_of(row), []).append(row)
    return out


# An axis whose values span this factor or more is drawn on a log scale: on a linear one the low thread
# counts (or the fast latencies) are squashed against the axis.
LOG_RATIO = 8.0


def _threads_axis(rows: list[dict[str, Any]]) -> dict[str, Any]:
    threads = sorted({r["threads"] for r in rows})
    axis: dict[str, Any] = {"tickvals": threads, "ticktext": [str(t) for t in threads]}
    if threads and threads[-1] / max(threads[0], 1) >= LOG_RATIO:
        axis["type"] = "log"
    return axis


def _value_axis(values: list[float | None], title: str) -> dict[str, Any]:
    """A y axis that is logarithmic when the values span LOG_RATIO or more (and are all positive)."""
    found = [v for v in values if v is not None]
    if found and min(found) > 0 and max(found) / min(found) >= LOG_RATIO:
        # Ticks at 1, 2, 5 of every decade, written out (Plotly's own log ticks label 20 as "2").
        low, high = math.floor(math.log10(min(found))), math.ceil(math.log10(max(found)))
        ticks = [m * 10.0 ** d for d in range(low, high + 1) for m in (1, 2, 5)]
        return {"type": "log", "title": {"text": f"{title} (log scale)"}, "rangemode": "normal",
                "tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]}
    return {"title": {"text": title}}


def _error(ups: list[float | None], downs: list[float | None], **extra: Any) -> dict[str, Any]:
    """Asymmetric error bars (0 where there is no interval)."""
    return {"type": "data", "symmetric": False, "thickness": 1.4, "width": 5,
            "visible": any(u is not None for u in ups), "array": [u or 0 for u in ups],
            "arrayminus": [d or 0 for d in downs], **extra}


def _ci_bars(rows: list[dict[str, Any]], key: str = "tps") -> dict[str, Any]:
    figures = [r[key] for r in rows]
    return _error([None if f["ci_high"] is None else f["ci_high"] - f["mean"] for f in figures],
                  [None if f["ci_low"] is None else f["mean"] - f["ci_low"] for f in figures])


HOLLOW = "rgba(255,255,255,0)"


def bar_look(row: dict[str, Any], has_interval: bool, color: str, alpha: float) -> tuple[dict[str, Any], str]:
    """How a bar of a compared figure is drawn, as the relative chart draws verdicts: solid (with its
    whiskers) where it has an interval and its verdict, if any, decides; hatched where its verdict is
    inconclusive; hollow where it has no interval (one repetition) or too few repetitions for a verdict.
    Returns the marker and the words written over the bar ('' for a plain solid one), so a screenshot of
    a bar is never read as more certain than the figure."""
    rel = row.get("relative") or None
    style = verdict_style(rel) if rel else "finding"
    words = []
    if not has_interval:
        words.append(f"no interval (n={_n_of(row)})")
    if style == "inconclusive":
        words.append("inconclusive")
    elif style == "too few" and has_interval:
        words.append("too few reps")
    hollow = not has_interval or style == "too few"
    marker: dict[str, Any] = {"color": HOLLOW if hollow else rgba_of(color, alpha),
                              "line": {"color": color, "width": 2 if hollow or style == "inconclusive" else 1.5}}
    if style == "inconclusive":
        marker["pattern"] = {"shape": "/", "fgcolor": color, "size": 8, "solidity": 0.4}
        if not hollow:
            marker["color"] = rgba_of(color, 0.12)
    return marker, ", ".join(words)


def _worded_axis(axis: dict[str, Any], data: list[dict[str, Any]]) -> dict[str, Any]:
    """A category axis of bars whose ticks carry, under each series' name, the words its bar says
    (bar_look: 'no interval (n=1)', 'inconclusive'): under the axis they stay readable, which over a
    hatched bar they are not."""
    words: dict[str, str] = {}
    for trace in data:
        if trace.get("type") == "bar" and trace.get("text") and trace["text"][0]:
            words.setdefault(str(trace["x"][0]), str(trace["text"][0]))
    if not words:
        return axis
    names = list(dict.fromkeys(str(t["x"][0]) for t in data if t.get("type") == "bar"))
    return {**axis, "tickvals": names, "ticktext": [
        f"{escape(n)}<br><i>{escape(words[n])}</i>" if n in words else escape(n) for n in names]}


def _n_of(row: dict[str, Any]) -> Any:
    return (row.get("tps") or {}).get("n", row.get("repetitions"))


def throughput(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Mean tps across repetitions vs threads per series, with the 95% interval of the mean as error bars,
    the min-max band of the repetitions, and each repetition as a dot. At a single thread count, one bar
    per series (a line through one point is two bare dots)."""
    rows_all = [r for r in comparison["rows"] if r["tps"]["mean"] is not None]
    threads = sorted({r["threads"] for r in rows_all})
    conf = round(100 * comparison.get("confidence", 0.95))
    data: list[dict[str, Any]] = []
    for i, (label, rows) in enumerate(_by_target(rows_all).items()):
        color = palette.get(label, "#333")
        visible: bool | str = True if i < 2 * VISIBLE_SERIES else "legendonly"
        text = [_ci_text(r) for r in rows]
        reps = [(r["threads"] if len(threads) > 1 else label, v) for r in rows for v in r["tps"].get("values") or []]
        if len(threads) == 1:
            marker, words = bar_look(rows[0], rows[0]["tps"]["ci_low"] is not None, color, 0.75)
            data.append({"type": "bar", "name": label, "legendgroup": label, "x": [label],
                         "y": [r["tps"]["mean"] for r in rows], "customdata": text, "text": [words],
                         "textposition": "none",
                         "error_y": _ci_bars(rows), "marker": marker,
                         "hovertemplate": "%{x}: %{y:,.1f} tps<br>%{customdata}<extra></extra>", "visible": visible})
        else:
            x = [r["threads"] for r in rows]
            if any(r["tps"]["n"] > 1 for r in rows):
                # mode "lines": a scatter without a mode draws markers in the default colourway, i.e. in
                # another target's colour.
                data.append({"type": "scatter", "mode": "lines", "x": x + x[::-1],
                             "y": [r["tps"]["max"] for r in rows] + [r["tps"]["min"] for r in rows][::-1],
                             "fill": "toself", "fillcolor": rgba_of(color, 0.12), "line": {"width": 0},
                             "hoverinfo": "skip", "showlegend": False, "legendgroup": label,
                             "name": f"{label} min-max", "visible": visible})
            data.append({"type": "scatter", "mode": "lines+markers", "name": label, "legendgroup": label,
                         "x": x, "y": [r["tps"]["mean"] for r in rows], "text": text, "error_y": _ci_bars(rows),
                         "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:,.1f} tps<br>%{text}<extra></extra>",
                         "line": {"color": color, "width": 2}, "marker": _points(rows, "tps", color),
                         "visible": visible})
        if reps:
            data.append({"type": "scatter", "mode": "markers", "name": f"{label} repetitions", "legendgroup": label,
                         "showlegend": False, "x": [x for x, _ in reps], "y": [y for _, y in reps],
                         "hovertemplate": "%{fullData.name}: %{y:,.1f} tps<extra></extra>",
                         "marker": {"size": 5, "color": rgba_of(color, 0.6), "symbol": "circle-open"},
                         "visible": visible})
    if len(threads) == 1:
        title = (f"Throughput at {threads_words(threads[0])} (bar: mean of repetitions; whiskers: {conf}% CI; "
                 "rings: repetitions)")
        return {"data": data, "layout": base_layout(title, "", "transactions / s",
                                                xaxis=_worded_axis(_series_axis(threads[0]), data), bargap=0.45)}
    return {"data": data, "layout": base_layout(
        f"Throughput vs threads (mean of repetitions; whiskers: {conf}% CI; band: min-max; rings: repetitions)",
        "threads", "transactions / s", xaxis=_threads_axis(rows_all))}


def _points(rows: list[dict[str, Any]], key: str, color: str) -> dict[str, Any]:
    """The markers of a line of means: filled where the point has an interval (its whiskers), open where it
    has none (one repetition), as the bars are hollow."""
    return {"size": 7, "color": color, "line": {"color": color, "width": 1.5},
            "symbol": ["circle" if (r.get(key) or {}).get("ci_low") is not None else "circle-open" for r in rows]}


def _ci_text(row: dict[str, Any]) -> str:
    tps = row["tps"]
    parts = [f"n={tps['n']}"]
    if tps["ci_low"] is not None:
        parts.append(f"95% CI {tps['ci_low']:,.1f} - {tps['ci_high']:,.1f}")
    else:
        parts.append("no interval (fewer than 2 repetitions)")
    parts.append(f"min-max {tps['min']:,.1f} - {tps['max']:,.1f}")
    return ", ".join(parts)


def latency(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """sysbench's step latency percentile vs threads: each repetition's own figure (small markers)
    and, for an odd number of repetitions, the line through their median (percentiles are never
    averaged, and the median of an even number would be an average of two). The axis is logarithmic
    where the figures span LOG_RATIO or more; at a single thread count the x axis names the series."""
    data = []
    rows_all = comparison["rows"]
    threads = sorted({r["threads"] for r in rows_all})
    single = len(threads) == 1
    pct = percentile_of(rows_all)
    hover = "%{fullData.name}<br>%{x}" + ("" if single else " threads") + ": p" + str(pct) + \
        " %{y:,.2f} ms<extra></extra>"
    values: list[float | None] = []
    for i, (label, rows) in enumerate(_by_target(rows_all).items()):
        color = palette.get(label, "#333")
        visible = True if i < 2 * VISIBLE_SERIES else "legendonly"
        at = (lambda r: label) if single else (lambda r: r["threads"])  # noqa: B023 - used at once
        reps = [(at(r), v) for r in rows for v in r["latency_step_pct_ms"]["values"]]
        values += [v for _, v in reps]
        median_rows = [r for r in rows if r["latency_step_pct_ms"]["median"] is not None]
        if median_rows:
            data.append({"type": "scatter", "mode": "markers" if single else "lines+markers", "name": label,
                         "legendgroup": label, "x": [at(r) for r in median_rows],
                         "y": [r["latency_step_pct_ms"]["median"] for r in median_rows], "hovertemplate": hover,
                         "line": {"color": color, "width": 2},
                         "marker": {"size": 12 if single else 7, "color": color,
                                    "symbol": "line-ew-open" if single else "circle",
                                    "line": {"width": 3, "color": color}},
                         "visible": visible})
        if reps:
            data.append({"type": "scatter", "mode": "markers", "name": f"{label} repetitions",
                         "legendgroup": label, "showlegend": not median_rows,
                         "x": [x for x, _ in reps], "y": [y for _, y in reps], "hovertemplate": hover,
                         "marker": {"size": 6, "color": rgba_of(color, 0.6), "line": {"width": 0}},
                         "visible": visible})
    xaxis = _series_axis(threads[0]) if single else _threads_axis(rows_all)
    title = (f"p{pct} latency at {threads_words(threads[0])}" if single and threads else f"p{pct} latency vs threads")
    return {"data": data, "layout": base_layout(
        f"{title} (points: repetitions; line: their median, odd counts only)", "" if single else "threads",
        "ms", xaxis=xaxis, yaxis=_value_axis(values, "ms"))}


DISTRIBUTION_KEYS = ("50", "90", "95", "99", "99.9", "max")


def latency_distribution(comparison: dict[str, Any], palette: dict[str, str]) -> Figure | None:
    """Each step's latency distribution (p50, p90, p95, p99, p99.9, max: latency_percentiles_ms) per
    series (a target, or a target's variant) and thread count: one line across the percentiles at the
    median of each over the repetitions (odd counts only, as every percentile here), on a log axis
    where the tail spans decades. None when no step has a distribution (a run from before it)."""
    data = []
    values: list[float | None] = []
    for label, rows in _by_target(comparison["rows"]).items():
        color = palette.get(label, "#333")
        for i, row in enumerate(sorted(rows, key=lambda r: r["threads"])):
            spread = row.get("latency_distribution_ms") or {}
            y = [(spread.get(k) or {}).get("median") for k in DISTRIBUTION_KEYS]
            if all(v is None for v in y):
                continue
            values += y
            dash = ("solid", "dot", "dash", "longdash", "dashdot")[i % 5]
            data.append({"type": "scatter", "mode": "lines+markers", "name": f"{label}, {row['threads']} thr",
                         "legendgroup": label, "x": [f"p{k}" if k != "max" else "max" for k in DISTRIBUTION_KEYS],
                         "y": y, "line": {"color": color, "width": 2, "dash": dash},
                         "marker": {"size": 6, "color": color},
                         "hovertemplate": "%{fullData.name}<br>%{x}: %{y:,.2f} ms<extra></extra>"})
    if not data:
        return None
    return {"data": data, "layout": base_layout(
        "Latency distribution per step (median over repetitions, odd counts only)", "percentile", "ms",
        yaxis=_value_axis(values, "ms"))}


# How a verdict is drawn. A finding (the interval decides: faster, slower, or equivalent within the margin)
# is a solid bar; an inconclusive one is hatched; too few repetitions (or nothing to compare) is hollow.
# The words sit beside every bar, so a screenshot of a hatched or hollow bar still says what it is.
STYLES = {
    "finding": "interval decides",
    "inconclusive": "inconclusive: interval reaches beyond the margin (hatched)",
    "too few": "too few repetitions: no verdict (hollow)",
}
# At most this many bars in the relative chart (the results table has every row); the title says so.
MAX_RELATIVE_BARS = 40


def verdict_style(relative: dict[str, Any]) -> str:
    """``finding``, ``inconclusive`` or ``too few`` (also for 'insufficient data')."""
    verdict = relative.get("verdict")
    if verdict in ("faster", "slower", "equivalent"):
        return "finding"
    return "inconclusive" if verdict == "inconclusive" else "too few"


def verdict_words(relative: dict[str, Any]) -> str:
    """The words beside a bar: the verdict's own words, paired marked, the difference and its interval."""
    if relative.get("refused"):
        return str(relative["refused"]["words"])
    words = str(relative.get("words") or relative.get("verdict"))
    needed = relative.get("repetitions_needed")
    if relative.get("verdict") == "inconclusive" and needed:
        words += f" ~{needed} reps"
    pct = relative.get("pct")
    figure = "" if pct is None else f"{pct:+.1f}%"
    if relative.get("ci_low_pct") is not None:
        figure += f" [{relative['ci_low_pct']:+.1f}, {relative['ci_high_pct']:+.1f}]"
    else:
        reps = relative.get("repetitions") or []
        figure += f", no interval (n={min(reps) if reps else '?'})"
    return f"{design_words(relative)}: {words} · {figure}"


_VERDICT_COLORS = {"faster": "#17803d", "slower": "#b42318", "equivalent": "#1d4ed8"}


def relative_bars(rows: list[dict[str, Any]], palette: dict[str, str], title: str, margin_pct: float,
                  name_of: Any = None) -> Figure:
    """Horizontal bars of the difference to a baseline, one per result row that has a verdict
    (``relative``), each named on the axis by its series and thread count, with the interval as
    whiskers, the margin as a grey band, and the verdict's words beside it. Solid, hatched or hollow by
    :func:`verdict_style`; one trace per style so the legend says what the marks mean."""
    name_of = name_of or label_of
    # A refused verdict (benchfleet.stats.settings_refusal) draws no bar: the table says why.
    found = [r for r in rows if r.get("relative") and r["relative"].get("pct") is not None
             and not r["relative"].get("refused")]
    shown = found[:MAX_RELATIVE_BARS]
    several = len({r["threads"] for r in found}) > 1
    names = [f"{name_of(r)} · {r['threads']} thr" if several else f"{name_of(r)} ({r['threads']} thr)"
             for r in shown]
    data: list[dict[str, Any]] = []
    for style, legend in STYLES.items():
        mine = [(n, r) for n, r in zip(names, shown, strict=True) if verdict_style(r["relative"]) == style]
        if not mine:
            continue
        colors = [palette.get(name_of(r), palette.get(label_of(r), FALLBACK_COLOR)) for _, r in mine]
        rels = [r["relative"] for _, r in mine]
        marker: dict[str, Any] = {"line": {"color": colors, "width": 2 if style != "finding" else 1}}
        if style == "finding":
            marker["color"] = colors
        elif style == "inconclusive":
            marker["color"] = [rgba_of(c, 0.12) for c in colors]
            marker["pattern"] = {"shape": "/", "fgcolor": colors, "size": 8, "solidity": 0.4}
        else:
            marker["color"] = "rgba(255,255,255,0)"
        data.append({
            "type": "bar", "orientation": "h", "name": legend, "y": [n for n, _ in mine],
            "x": [rel["pct"] for rel in rels], "marker": marker,
            "text": [verdict_words(rel) for rel in rels], "textposition": "none",
            "hovertemplate": "%{y}: %{x:+.1f}%<br>%{text}<extra></extra>",
            "error_x": _error([None if rel["ci_high_pct"] is None else rel["ci_high_pct"] - rel["pct"] for rel in rels],
                              [None if rel["ci_low_pct"] is None else rel["pct"] - rel["ci_low_pct"] for rel in rels],
                              color="#222")})
    # The words beside each bar, in a column right of the plot (never on the bar, where whiskers cross).
    # A caveat (benchfleet.stats.caveats) goes under the words, in the colour of the table's caveats.
    annotations = [{"xref": "paper", "yref": "y", "x": 0.6, "y": n, "xanchor": "left", "showarrow": False,
                    "align": "left", "text": verdict_words(r["relative"]) + (
                        f"<br><span style='color:#9a3412'>⚠ {escape(caveat_words(r['caveats']))}</span>"
                        if r.get("caveats") else ""),
                    "font": {"size": 11, "color": _VERDICT_COLORS.get(str(r["relative"].get("verdict")), "#8a5a00")}}
                   for n, r in zip(names, shown, strict=True)]
    shapes = [{"type": "rect", "xref": "x", "yref": "paper", "x0": -margin_pct, "x1": margin_pct, "y0": 0, "y1": 1,
               "fillcolor": "rgba(0,0,0,0.06)", "line": {"width": 0}, "layer": "below"},
              {"type": "line", "xref": "x", "yref": "paper", "x0": 0, "x1": 0, "y0": 0, "y1": 1,
               "line": {"color": "#444", "width": 1.2}}]
    if len(found) > len(shown):
        title += f" - first {len(shown)} of {len(found)} (all in the table)"
    return {"data": data, "layout": base_layout(
        title, f"% vs baseline (grey band: ±{margin_pct:g}% margin)", "", barmode="overlay", showlegend=True,
        height=max(260, 130 + 34 * len(shown)), annotations=annotations, shapes=shapes, bargap=0.35,
        # The legend (what solid, hatched and hollow mean) above the words, clear of the axis title.
        xaxis={"domain": [0, 0.58], "zeroline": False},
        legend={"orientation": "h", "x": 0.6, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": names, "autorange": "reversed",
               "rangemode": "normal", "automargin": True, "title": {"text": ""}},
        margin={"l": 20, "r": 20, "t": 60, "b": 55})}


def relative(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Relative throughput vs the baseline at each thread count (:func:`relative_bars`)."""
    conf = round(100 * comparison.get("confidence", 0.95))
    base = comparison.get("baseline_variant") or comparison.get("baseline")
    return relative_bars(comparison["rows"], palette,
                         f"Throughput relative to {base} (%; whiskers: {conf}% interval)",
                         float(comparison.get("margin_pct") or 5))


def one_thread_count(rows: list[dict[str, Any]]) -> int | None:
    """The thread count when every row has the same one (its charts are bars per series, since a line
    through one point per series is a bare dot), else None."""
    threads = {r["threads"] for r in rows}
    return next(iter(threads)) if len(threads) == 1 else None


def threads_words(threads: int) -> str:
    """'1 thread', '8 threads'."""
    return f"{threads} thread{'' if threads == 1 else 's'}"


def _series_axis(threads: int) -> dict[str, Any]:
    """The x axis of a chart at one thread count: the series, named, and the thread count in its title."""
    return {"type": "category", "title": {"text": f"series (all at {threads_words(threads)})"}}


def qps(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Mean qps across repetitions vs threads per series (sysbench's own qps of each step), its 95%
    interval as whiskers; at a single thread count, one bar per series with its repetitions as rings."""
    data: list[dict[str, Any]] = []
    single = one_thread_count(comparison["rows"])
    for i, (label, rows) in enumerate(_by_target(comparison["rows"]).items()):
        rows = [r for r in rows if (r.get("qps") or {}).get("mean") is not None]
        if not rows:
            continue
        color = palette.get(label, "#333")
        visible: bool | str = True if i < 2 * VISIBLE_SERIES else "legendonly"
        text = [f"min-max {r['qps']['min']:,.0f} - {r['qps']['max']:,.0f}" for r in rows]
        if single is not None:
            marker, words = bar_look(rows[0], rows[0]["qps"].get("ci_low") is not None, color, 0.75)
            data.append({"type": "bar", "name": label, "legendgroup": label, "x": [label],
                         "y": [r["qps"]["mean"] for r in rows], "customdata": text, "text": [words],
                         "textposition": "none",
                         "error_y": _ci_bars(rows, "qps"), "marker": marker,
                         "hovertemplate": "%{x}: %{y:,.0f} qps<br>%{customdata}<extra></extra>", "visible": visible})
            reps = [v for r in rows for v in r["qps"].get("values") or []]
            if reps:
                data.append({"type": "scatter", "mode": "markers", "name": f"{label} repetitions",
                             "legendgroup": label, "showlegend": False, "x": [label] * len(reps), "y": reps,
                             "hovertemplate": "%{fullData.name}: %{y:,.0f} qps<extra></extra>",
                             "marker": {"size": 5, "color": rgba_of(color, 0.6), "symbol": "circle-open"},
                             "visible": visible})
            continue
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "legendgroup": label,
                     "x": [r["threads"] for r in rows], "y": [r["qps"]["mean"] for r in rows], "text": text,
                     "error_y": _ci_bars(rows, "qps"),
                     "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:,.0f} qps<br>%{text}<extra></extra>",
                     "line": {"color": color, "width": 2}, "marker": _points(rows, "qps", color),
                     "visible": visible})
    if single is not None:
        return {"data": data, "layout": base_layout(
            f"Queries per second at {threads_words(single)} (bar: mean of repetitions; whiskers: 95% CI; rings: "
            "repetitions)", "", "queries / s", xaxis=_worded_axis(_series_axis(single), data), bargap=0.45)}
    return {"data": data, "layout": base_layout("Queries per second vs threads (mean of repetitions; whiskers: 95% CI)",
                                            "threads", "queries / s", xaxis=_threads_axis(comparison["rows"]))}


def cost(comparison: dict[str, Any], palette: dict[str, str],
         models: tuple[str, ...] = ("on_demand", "reserved_1y_all_upfront")) -> Figure:
    """Cost per 1,000 tps vs threads per target, one line per pricing model (on-demand solid, the
    others dashed), with the interval carried from tps as error bars (lower is better). At a single
    thread count, bars per target side by side by model (on-demand filled, the others lighter)."""
    from benchfleet.cost.pricing import MODEL_LABELS

    data = []
    single = one_thread_count(comparison["rows"])
    for target_id, rows in _by_target(comparison["rows"]).items():
        for k, model in enumerate(models):
            points: list[tuple[dict[str, Any], dict[str, Any]]] = [
                (r, c) for r in rows if (c := (r.get("cost") or {}).get(model))]
            if not points:
                continue
            has_ci = [c["ci_low"] is not None and c["ci_high"] is not None for _, c in points]
            color = palette.get(target_id, "#333")
            error = {"type": "data", "symmetric": False, "thickness": 1.2, "width": 4, "visible": any(has_ci),
                     "array": [c["ci_high"] - c["per_1000_tps"] if ok else 0
                               for (_, c), ok in zip(points, has_ci, strict=True)],
                     "arrayminus": [c["per_1000_tps"] - c["ci_low"] if ok else 0
                                    for (_, c), ok in zip(points, has_ci, strict=True)]}
            name, y = f"{target_id} · {MODEL_LABELS[model]}", [c["per_1000_tps"] for _, c in points]
            if single is not None:
                marker, words = bar_look(points[0][0], has_ci[0], color, 0.8 if k == 0 else 0.3)
                data.append({"type": "bar", "name": name, "legendgroup": target_id, "x": [target_id], "y": y,
                             "offsetgroup": model, "error_y": error, "marker": marker, "text": [words],
                             "textposition": "none",
                             "hovertemplate": "%{fullData.name}: $%{y:.4f}/h per 1000 TPS<extra></extra>"})
                continue
            data.append({
                "type": "scatter", "mode": "lines+markers", "name": name,
                "legendgroup": target_id, "x": [r["threads"] for r, _ in points], "y": y,
                "line": {"color": color, "width": 2, "dash": "solid" if k == 0 else "dash"},
                "marker": {"size": 6, "color": color, "symbol": ["circle" if ok else "circle-open" for ok in has_ci]},
                "error_y": error,
                "hovertemplate": "%{fullData.name}<br>%{x} threads: $%{y:.4f}/h per 1000 TPS<extra></extra>"})
    if single is not None:
        return {"data": data, "layout": base_layout(
            f"Cost per 1000 TPS at {threads_words(single)} (USD per hour of the database; lower is better; filled: "
            f"{MODEL_LABELS[models[0]]}, light: {', '.join(MODEL_LABELS[m] for m in models[1:])})", "",
            "USD per hour per 1000 TPS", xaxis=_worded_axis(_series_axis(single), data), barmode="group",
            bargap=0.35)}
    return {"data": data, "layout": base_layout(
        "Cost per 1000 TPS vs threads (USD per hour of the database; lower is better)", "threads",
        "USD per hour per 1000 TPS", xaxis=_threads_axis(comparison["rows"]))}


