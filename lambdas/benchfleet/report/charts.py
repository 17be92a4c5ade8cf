"""Plotly figures of the report, built as plain dicts (``{"data": [...], "layout": {...}}``).

Plain dicts rather than ``plotly.graph_objects``: the figures are simple, validation of hundreds of
traces costs seconds at the largest runs, and the browser test checks that every chart renders.
"""

from __future__ import annotations

import colorsys
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
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["target_id"], []).append(row)
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
            data.append({"type": "scatter", "x": x + x[::-1],
                         "y": [r["tps"]["max"] for r in rows] + [r["tps"]["min"] for r in rows][::-1],
                         "fill": "toself", "fillcolor": _rgba(color, 0.18), "line": {"width": 0},
                         "hoverinfo": "skip", "showlegend": False, "legendgroup": target_id,
                         "name": f"{target_id} min-max", "visible": visible})
        text = [_ci_text(r) for r in rows]
        data.append({"type": "scatter", "mode": "lines+markers", "name": target_id, "legendgroup": target_id,
                     "x": x, "y": [r["tps"]["mean"] for r in rows], "text": text,
                     "hovertemplate": "%{fullData.name}<br>%{x} threads: %{y:,.1f} tps<br>%{text}<extra></extra>",
                     "line": {"color": color, "width": 2}, "marker": {"size": 6}, "visible": visible})
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
    """sysbench's step latency percentile vs threads: the median over repetitions, bars to the
    lowest and highest repetition (percentiles are never averaged)."""
    data = []
    pct = next((r["latency_pct"] for r in comparison["rows"] if r.get("latency_pct")), 95)
    for i, (target_id, rows) in enumerate(_by_target(comparison["rows"]).items()):
        rows = [r for r in rows if r["latency_step_pct_ms"]["median"] is not None]
        if not rows:
            continue
        med = [r["latency_step_pct_ms"]["median"] for r in rows]
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": target_id, "legendgroup": target_id,
            "x": [r["threads"] for r in rows], "y": med,
            "error_y": {"type": "data", "symmetric": False,
                        "array": [r["latency_step_pct_ms"]["max"] - m for r, m in zip(rows, med, strict=True)],
                        "arrayminus": [m - r["latency_step_pct_ms"]["min"] for r, m in zip(rows, med, strict=True)],
                        "thickness": 1, "width": 3},
            "hovertemplate": "%{fullData.name}<br>%{x} threads: p" + str(pct) + " %{y:,.2f} ms<extra></extra>",
            "line": {"color": palette[target_id], "width": 2}, "marker": {"size": 6},
            "visible": True if i < 2 * VISIBLE_SERIES else "legendonly"})
    return {"data": data, "layout": _layout(
        f"p{pct} latency vs threads (median of repetitions, bars: min-max)", "threads", "ms",
        xaxis=_threads_axis(comparison["rows"]))}


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


def timeline(series: dict[str, Any], palette: dict[str, str]) -> Figure:
    """tps over time per target x repetition (warm-up and measure steps), CPU steal % on the right
    axis (dotted). When seconds are aggregated, the line is the mean of each bucket and the band
    its min-max."""
    width = series["width_s"]
    data: list[dict[str, Any]] = []
    seen: list[str] = []
    order = {t: i for i, t in enumerate(palette)}
    for s in sorted(series["series"], key=lambda s: (order.get(s["target_id"], len(order)), s["repetition"])):
        target_id = s["target_id"]
        if target_id not in seen:
            seen.append(target_id)
        color = palette.get(target_id, "#333")
        visible: bool | str = True if seen.index(target_id) < VISIBLE_SERIES else "legendonly"
        name = f"{target_id} #{s['repetition']}"
        group = f"{target_id}-{s['repetition']}"
        if width > 1:
            data.append({"type": "scatter", "mode": "lines", "x": s["t"] + s["t"][::-1],
                         "y": s["tps_max"] + s["tps_min"][::-1], "fill": "toself",
                         "fillcolor": _rgba(color, 0.15), "line": {"width": 0}, "hoverinfo": "skip",
                         "showlegend": False, "legendgroup": group, "name": f"{name} min-max",
                         "visible": visible})
        data.append({"type": "scattergl" if len(s["t"]) > 2000 else "scatter", "mode": "lines",
                     "name": name, "legendgroup": group, "x": s["t"], "y": s["tps"],
                     "customdata": s["threads"], "line": {"color": color, "width": 1.3},
                     "hovertemplate": "%{fullData.name}<br>t=%{x}s, %{customdata} threads: %{y:,.1f} tps"
                                      "<extra></extra>", "visible": visible})
        if any(v is not None for v in s["steal"]):
            data.append({"type": "scatter", "mode": "lines", "name": f"{name} steal %", "legendgroup": group,
                         "x": s["t"], "y": s["steal"], "yaxis": "y2", "showlegend": False,
                         "line": {"color": color, "width": 1, "dash": "dot"},
                         "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:.1f}% steal<extra></extra>",
                         "visible": visible})
    what = "per second" if width == 1 else f"mean of {width} s buckets, band: min-max second"
    return {"data": data, "layout": _layout(
        f"Throughput over time ({what}) and CPU steal (dotted, right axis)", "seconds since warm-up start",
        "transactions / s", height=500,
        legend={"orientation": "h", "y": -0.18, "x": 0},
        yaxis2={"title": {"text": "CPU steal %"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                "tickformat": ".0f",
                "showgrid": False},
        margin={"r": 70, "b": 40})}


def cost(comparison: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Cost per 1000 TPS at each target's peak throughput (lower is better)."""
    targets = [t for t in comparison["targets"]  # free (local) targets have nothing to compare
               if t.get("peak") and t["peak"].get("cost_per_1000_tps")]
    targets.sort(key=lambda t: t["peak"]["cost_per_1000_tps"])
    data = [{
        "type": "bar", "orientation": "h", "name": "cost per 1000 TPS",
        "y": [t["target_id"] for t in targets], "x": [t["peak"]["cost_per_1000_tps"] for t in targets],
        "marker": {"color": [palette.get(t["target_id"], "#333") for t in targets]},
        "text": [f"{t['peak']['threads']} threads" for t in targets],
        "hovertemplate": "%{y}: $%{x:.4f}/h per 1000 TPS at %{text}<extra></extra>"}]
    return {"data": data, "layout": _layout(
        "Cost per 1000 TPS at peak throughput (USD per hour, on-demand list prices; lower is better)",
        "USD per hour per 1000 TPS", "", height=max(260, 60 + 26 * len(targets)),
        yaxis={"autorange": "reversed", "type": "category", "rangemode": "normal"},
        margin={"l": 140})}
