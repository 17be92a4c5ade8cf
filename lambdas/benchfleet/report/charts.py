"""Plotly figures of the report, built as plain dicts (``{"data": [...], "layout": {...}}``).

Plain dicts rather than ``plotly.graph_objects``: the figures are simple, validation of hundreds of
traces costs seconds at the largest runs, and the browser test checks that every chart renders.
"""

from __future__ import annotations

import colorsys
import itertools
from typing import Any

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


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
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


def _by_target(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per series: a target, or a target's variant (its label)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row.get("label") or row["target_id"], []).append(row)
    return out


def _threads_axis(rows: list[dict[str, Any]]) -> dict[str, Any]:
    threads = sorted({r["threads"] for r in rows})
    axis: dict[str, Any] = {"tickvals": threads, "ticktext": [str(t) for t in threads]}
    if threads and threads[-1] / max(threads[0], 1) >= 8:
        axis["type"] = "log"
    return axis


def throughput(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Mean tps across repetitions vs threads per target, with the min-max band of the repetitions;
    the confidence interval of the mean is in the hover text."""
    data: list[dict[str, Any]] = []
    for i, (target_id, rows) in enumerate(_by_target(comparison["rows"]).items()):
        rows = [r for r in rows if r["tps"]["mean"] is not None]
        if not rows:
            continue
        color = palette[target_id]
        visible: bool | str = True if i < 2 * VISIBLE_SERIES else "legendonly"
        x = [r["threads"] for r in rows]
        if any(r["tps"]["n"] > 1 for r in rows):
            # mode "lines": a scatter without a mode draws markers in the default colourway, i.e. in
            # another target's colour.
            data.append({"type": "scatter", "mode": "lines", "x": x + x[::-1],
                         "y": [r["tps"]["max"] for r in rows] + [r["tps"]["min"] for r in rows][::-1],
                         "fill": "toself", "fillcolor": _rgba(color, 0.18), "line": {"width": 0},
                         "hoverinfo": "skip", "showlegend": False, "legendgroup": target_id,
                         "name": f"{target_id} min-max", "visible": visible})
        text = [_ci_text(r) for r in rows]
        data.append({"type": "scatter", "mode": "lines+markers", "name": target_id, "legendgroup": target_id,
                     "x": x, "y": [r["tps"]["mean"] for r in rows], "text": text,
                     "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:,.1f} tps<br>%{text}<extra></extra>",
                     "line": {"color": color, "width": 2}, "marker": {"size": 6, "color": color},
                     "visible": visible})
    return {"data": data, "layout": _layout("Throughput vs threads (mean of repetitions, band: min-max)",
                                            "threads", "transactions / s",
                                            xaxis=_threads_axis(comparison["rows"]))}


def _ci_text(row: dict[str, Any]) -> str:
    tps = row["tps"]
    parts = [f"n={tps['n']}"]
    if tps["ci_low"] is not None:
        parts.append(f"95% CI {tps['ci_low']:,.1f} - {tps['ci_high']:,.1f}")
    parts.append(f"min-max {tps['min']:,.1f} - {tps['max']:,.1f}")
    return ", ".join(parts)


def latency(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """sysbench's step latency percentile vs threads: each repetition's own figure (small markers)
    and, for an odd number of repetitions, the line through their median (percentiles are never
    averaged, and the median of an even number would be an average of two)."""
    data = []
    pct = next((r["latency_pct"] for r in comparison["rows"] if r.get("latency_pct")), 95)
    hover = "%{fullData.name}<br>%{x} threads: p" + str(pct) + " %{y:,.2f} ms<extra></extra>"
    for i, (target_id, rows) in enumerate(_by_target(comparison["rows"]).items()):
        color = palette[target_id]
        visible = True if i < 2 * VISIBLE_SERIES else "legendonly"
        reps = [(r["threads"], v) for r in rows for v in r["latency_step_pct_ms"]["values"]]
        median_rows = [r for r in rows if r["latency_step_pct_ms"]["median"] is not None]
        if median_rows:
            data.append({"type": "scatter", "mode": "lines+markers", "name": target_id, "legendgroup": target_id,
                         "x": [r["threads"] for r in median_rows],
                         "y": [r["latency_step_pct_ms"]["median"] for r in median_rows], "hovertemplate": hover,
                         "line": {"color": color, "width": 2}, "marker": {"size": 7, "color": color},
                         "visible": visible})
        if reps:
            data.append({"type": "scatter", "mode": "markers", "name": f"{target_id} repetitions",
                         "legendgroup": target_id, "showlegend": not median_rows,
                         "x": [x for x, _ in reps], "y": [y for _, y in reps], "hovertemplate": hover,
                         "marker": {"size": 5, "color": _rgba(color, 0.55), "line": {"width": 0}},
                         "visible": visible})
    return {"data": data, "layout": _layout(
        f"p{pct} latency vs threads (points: repetitions; line: their median, odd counts only)", "threads",
        "ms", xaxis=_threads_axis(comparison["rows"]))}


def relative(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Relative throughput vs the baseline at each thread count, in %, with the confidence interval
    of the relative difference as error bars."""
    data = []
    for i, (target_id, rows) in enumerate(_by_target(comparison["rows"]).items()):
        rows = [r for r in rows if r.get("relative") and r["relative"]["pct"] is not None]
        if not rows:
            continue
        pct = [r["relative"]["pct"] for r in rows]
        has_ci = [r["relative"]["ci_low_pct"] is not None for r in rows]
        data.append({
            "type": "bar", "name": target_id, "x": [str(r["threads"]) for r in rows], "y": pct,
            "marker": {"color": palette[target_id]},
            "text": [r["relative"]["verdict"] for r in rows], "textposition": "none",
            "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:+.1f}%<br>%{text}<extra></extra>",
            "visible": True if i <= 2 * VISIBLE_SERIES else "legendonly",
            "error_y": {"type": "data", "symmetric": False, "thickness": 1.2, "width": 4, "visible": any(has_ci),
                        "array": [r["relative"]["ci_high_pct"] - p if ok else 0
                                  for r, p, ok in zip(rows, pct, has_ci, strict=True)],
                        "arrayminus": [p - r["relative"]["ci_low_pct"] if ok else 0
                                       for r, p, ok in zip(rows, pct, has_ci, strict=True)]}})
    conf = round(100 * comparison.get("confidence", 0.95))
    return {"data": data, "layout": _layout(
        f"Throughput relative to {comparison.get('baseline')} (%, bars: {conf}% CI)", "threads",
        "% vs baseline", barmode="group", yaxis={"rangemode": "normal", "zeroline": True,
                                                 "zerolinecolor": "#444"},
        xaxis={"type": "category"})}


# Repetitions of one target share its colour and differ by dash, so that both are recognisable.
_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
# CPU shares below this are noise: the axis shows at least 0..5 %, so that its ticks are distinct
# whole numbers instead of "1 1 0 0 0 0" from rounding a 0..0.5 range.
_MIN_PCT_RANGE = 5.0


def _pct_axis(values: list[float | None], title: str, domain: list[float]) -> dict[str, Any]:
    top = max([v for v in values if v is not None] or [0.0])
    return {"title": {"text": title}, "domain": domain, "anchor": "x", "range": [0, max(_MIN_PCT_RANGE, top * 1.1)],
            "tickformat": ".0f", "gridcolor": "#e5e5e5", "zeroline": False}


def _step_boundaries(series: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Vertical lines where the thread count changes (the steps of the first series: every series of
    a run has the same steps) and a label with the threads of each step."""
    if not series:
        return [], []
    first = series[0]
    shapes, labels = [], []
    previous = None
    for t, threads in zip(first["t"], first["threads"], strict=True):
        if threads != previous:
            if previous is not None:
                shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": t, "x1": t, "y0": 0, "y1": 1,
                               "line": {"color": "#999", "width": 1, "dash": "dot"}})
            labels.append({"x": t, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom", "xanchor": "left",
                           "text": f"{threads} thr", "showarrow": False, "font": {"size": 10, "color": "#666"}})
            previous = threads
    return shapes, labels


def _x_of(t: list[int], width: int) -> dict[str, Any]:
    """A trace's x: ``x0`` and ``dx`` when the points are every ``width`` seconds without a gap (the
    usual case; a 200-target soak's report is 1 MB smaller for it), else the times themselves."""
    if t and all(b - a == width for a, b in itertools.pairwise(t)):
        return {"x0": t[0], "dx": width}
    return {"x": t}


def timeline(series: dict[str, Any], palette: dict[str, str]) -> Figure:
    """tps over time per target x repetition (warm-up and measure steps; repetitions by dash), with
    CPU steal % and iowait % in panels below on their own axes, and the step boundaries drawn. When
    seconds are aggregated, the line is the mean of each bucket and the band its min-max."""
    width = series["width_s"]
    data: list[dict[str, Any]] = []
    seen: list[str] = []
    order = {t: i for i, t in enumerate(palette)}
    ordered = sorted(series["series"], key=lambda s: (order.get(s["target_id"], len(order)), s["repetition"]))
    for s in ordered:
        target_id = s["target_id"]
        if target_id not in seen:
            seen.append(target_id)
        color = palette.get(target_id, "#333")
        dash = _DASHES[(s["repetition"] - 1) % len(_DASHES)]
        visible: bool | str = True if seen.index(target_id) < VISIBLE_SERIES else "legendonly"
        name = f"{target_id} rep {s['repetition']}"
        group = f"{target_id}-{s['repetition']}"
        if width > 1:
            data.append({"type": "scatter", "mode": "lines", "x": s["t"] + s["t"][::-1],
                         "y": s["tps_max"] + s["tps_min"][::-1], "fill": "toself",
                         "fillcolor": _rgba(color, 0.15), "line": {"width": 0}, "hoverinfo": "skip",
                         "showlegend": False, "legendgroup": group, "name": f"{name} min-max",
                         "visible": visible})
        x = _x_of(s["t"], width)
        data.append({"type": "scattergl" if len(s["t"]) > 2000 else "scatter", "mode": "lines",
                     "name": name, "legendgroup": group, **x, "y": s["tps"],
                     "customdata": s["threads"], "line": {"color": color, "width": 1.3, "dash": dash},
                     "hovertemplate": "%{fullData.name}<br>t=%{x}s, %{customdata} threads: %{y:,.1f} tps"
                                      "<extra></extra>", "visible": visible})
        for key, axis, what in (("steal", "y2", "steal"), ("iowait", "y3", "iowait")):
            if any(v is not None for v in s.get(key) or []):
                data.append({"type": "scatter", "mode": "lines", "name": f"{name} {what} %", "legendgroup": group,
                             **x, "y": s[key], "yaxis": axis, "showlegend": False,
                             "line": {"color": color, "width": 1, "dash": dash},
                             "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:.2f}% " + what + "<extra></extra>",
                             "visible": visible})
    what = "per second" if width == 1 else f"mean of {width} s buckets, band: min-max second"
    shapes, labels = _step_boundaries(ordered)
    return {"data": data, "layout": _layout(
        f"Throughput over time ({what}); CPU steal and iowait below", "seconds since warm-up start",
        "transactions / s", height=640, shapes=shapes, annotations=labels,
        legend={"orientation": "h", "y": -0.12, "x": 0},
        xaxis={"anchor": "y3"},  # the time axis under the lowest panel, not between the panels
        yaxis={"domain": [0.42, 1]},
        yaxis2=_pct_axis([v for s in ordered for v in s.get("steal") or []], "steal %", [0.22, 0.38]),
        yaxis3=_pct_axis([v for s in ordered for v in s.get("iowait") or []], "iowait %", [0, 0.18]),
        margin={"r": 30, "b": 40, "t": 60})}


def qps(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Mean qps across repetitions vs threads per target (sysbench's own qps of each step)."""
    data = []
    for i, (target_id, rows) in enumerate(_by_target(comparison["rows"]).items()):
        rows = [r for r in rows if (r.get("qps") or {}).get("mean") is not None]
        if not rows:
            continue
        data.append({"type": "scatter", "mode": "lines+markers", "name": target_id, "legendgroup": target_id,
                     "x": [r["threads"] for r in rows], "y": [r["qps"]["mean"] for r in rows],
                     "text": [f"min-max {r['qps']['min']:,.0f} - {r['qps']['max']:,.0f}" for r in rows],
                     "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:,.0f} qps<br>%{text}<extra></extra>",
                     "line": {"color": palette[target_id], "width": 2},
                     "marker": {"size": 6, "color": palette[target_id]},
                     "visible": True if i < 2 * VISIBLE_SERIES else "legendonly"})
    return {"data": data, "layout": _layout("Queries per second vs threads (mean of repetitions)", "threads",
                                            "queries / s", xaxis=_threads_axis(comparison["rows"]))}


def cost(comparison: dict[str, Any], palette: dict[str, str],
         models: tuple[str, ...] = ("on_demand", "reserved_1y_all_upfront")) -> Figure:
    """Cost per 1,000 tps vs threads per target, one line per pricing model (on-demand solid, the
    others dashed), with the interval carried from tps as error bars (lower is better)."""
    from benchfleet.pricing import MODEL_LABELS

    data = []
    for target_id, rows in _by_target(comparison["rows"]).items():
        for k, model in enumerate(models):
            points: list[tuple[dict[str, Any], dict[str, Any]]] = [
                (r, c) for r in rows if (c := (r.get("cost") or {}).get(model))]
            if not points:
                continue
            has_ci = [c["ci_low"] is not None and c["ci_high"] is not None for _, c in points]
            data.append({
                "type": "scatter", "mode": "lines+markers", "name": f"{target_id} · {MODEL_LABELS[model]}",
                "legendgroup": target_id, "x": [r["threads"] for r, _ in points],
                "y": [c["per_1000_tps"] for _, c in points],
                "line": {"color": palette.get(target_id, "#333"), "width": 2, "dash": "solid" if k == 0 else "dash"},
                "marker": {"size": 6, "color": palette.get(target_id, "#333")},
                "error_y": {"type": "data", "symmetric": False, "thickness": 1.2, "width": 4, "visible": any(has_ci),
                            "array": [c["ci_high"] - c["per_1000_tps"] if ok else 0
                                      for (_, c), ok in zip(points, has_ci, strict=True)],
                            "arrayminus": [c["per_1000_tps"] - c["ci_low"] if ok else 0
                                           for (_, c), ok in zip(points, has_ci, strict=True)]},
                "hovertemplate": "%{fullData.name}<br>%{x} threads: $%{y:.4f}/h per 1000 TPS<extra></extra>"})
    return {"data": data, "layout": _layout(
        "Cost per 1000 TPS vs threads (USD per hour of the database; lower is better)", "threads",
        "USD per hour per 1000 TPS", xaxis=_threads_axis(comparison["rows"]))}
