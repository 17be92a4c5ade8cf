"""The report's charts over time: every second of a run, per repetition, block and node.

The timeline (throughput, latency, CPU steal and I/O wait, disk), the interleaved blocks of variants
within a repetition, per-node status panels of a cluster, the insert rate against table size and the
server status counters. The figures per thread count (throughput, latency, the relative bars, cost)
are report.charts, whose colours, layout and Figure type these share.
"""

from __future__ import annotations

import itertools
import math
from html import escape
from typing import Any

from benchfleet.report.charts import FALLBACK_COLOR, VISIBLE_SERIES, Figure, base_layout, rgba_of

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
    """Vertical lines where the thread count changes (the steps of the first target x repetition: every
    one of a run has the same steps; its variants' series together, since they take turns) and a label
    with the threads of each step."""
    if not series:
        return [], []
    first = [s for s in series if (s["target_id"], s["repetition"]) == (series[0]["target_id"],
                                                                         series[0]["repetition"])]
    shapes, labels = [], []
    previous = None
    for t, threads in sorted((t, th) for s in first for t, th in zip(s["t"], s["threads"], strict=True)):
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
    CPU steal % and iowait % in panels below on their own axes (and, where the run measured it, the
    data directory's disk: IO/s, MiB/s, await), and the step boundaries drawn. When seconds are
    aggregated, the line is the mean of each bucket and the band its min-max."""
    width = series["width_s"]
    data: list[dict[str, Any]] = []
    seen: list[str] = []
    order = {t: i for i, t in enumerate(palette)}
    ordered = sorted(series["series"], key=lambda s: (order.get(s["target_id"], len(order)), s["repetition"]))
    disk = any(v is not None for s in ordered for v in s.get("disk_iops") or [])
    for s in ordered:
        target_id = s["target_id"]
        if target_id not in seen:
            seen.append(target_id)
        # A variant (or a cluster's route) in its own colour, as the other charts draw it; its blocks
        # alternate with the other variants', so its line is broken between them, not drawn across.
        key = s.get("label") or target_id
        color = palette.get(key, palette.get(target_id, "#333"))
        if s.get("variant"):
            s = _break_gaps(s, width)
        dash = _DASHES[(s["repetition"] - 1) % len(_DASHES)]
        visible: bool | str = True if seen.index(target_id) < VISIBLE_SERIES else "legendonly"
        name = f"{key} rep {s['repetition']}"
        group = f"{key}-{s['repetition']}"
        if width > 1 and not s.get("variant"):  # a band around a broken line would join its pieces
            data.append({"type": "scatter", "mode": "lines", "x": s["t"] + s["t"][::-1],
                         "y": s["tps_max"] + s["tps_min"][::-1], "fill": "toself",
                         "fillcolor": rgba_of(color, 0.15), "line": {"width": 0}, "hoverinfo": "skip",
                         "showlegend": False, "legendgroup": group, "name": f"{name} min-max",
                         "visible": visible})
        x = _x_of(s["t"], width)
        # Always "scatter": the report's Plotly bundle has no WebGL traces, and a series has at most
        # MAX_POINTS_PER_SERIES + 1 points (report.data), where SVG is quick enough.
        data.append({"type": "scatter", "mode": "lines",
                     "name": name, "legendgroup": group, **x, "y": s["tps"],
                     "customdata": s["threads"], "line": {"color": color, "width": 1.3, "dash": dash},
                     "hovertemplate": "%{fullData.name}<br>t=%{x}s, %{customdata} threads: %{y:,.1f} tps"
                                      "<extra></extra>", "visible": visible})
        for key, axis, what, unit in _panels(disk):
            if any(v is not None for v in s.get(key) or []):
                data.append({"type": "scatter", "mode": "lines", "name": f"{name} {what}", "legendgroup": group,
                             **x, "y": s[key], "yaxis": axis, "showlegend": False,
                             "line": {"color": color, "width": 1, "dash": dash},
                             "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:,.2f} " + unit + "<extra></extra>",
                             "visible": visible})
    what = "per second" if width == 1 else f"mean of {width} s buckets, band: min-max second"
    shapes, labels = _step_boundaries(ordered)
    axes = {"yaxis2": _pct_axis([v for s in ordered for v in s.get("steal") or []], "steal %", [0.22, 0.38]),
            "yaxis3": _pct_axis([v for s in ordered for v in s.get("iowait") or []], "iowait %", [0, 0.18])}
    top, height, below = [0.42, 1], 640, "CPU steal and iowait below"
    if disk:  # the data directory's disk in three more panels, each on its own axis
        top, height, below = [0.62, 1], 980, "CPU steal, iowait and the data directory's disk below"
        domains = [[0.50, 0.58], [0.38, 0.46], [0.25, 0.34], [0.12, 0.21], [0, 0.09]]
        for (key, axis, title, _), domain in zip(_panels(disk), domains, strict=True):
            values = [v for s in ordered for v in s.get(key) or []]
            axes["yaxis" + axis[1:]] = (_pct_axis(values, title, domain) if key in ("steal", "iowait") else
                                        {"title": {"text": title}, "domain": domain, "anchor": "x",
                                         "rangemode": "tozero", "gridcolor": "#e5e5e5", "zeroline": False})
    return {"data": data, "layout": base_layout(
        f"Throughput over time ({what}); {below}", "seconds since warm-up start",
        "transactions / s", height=height, shapes=shapes, annotations=labels,
        legend={"orientation": "h", "y": -0.12 * 640 / height, "x": 0},
        xaxis={"anchor": "y6" if disk else "y3"},  # the time axis under the lowest panel, not between the panels
        yaxis={"domain": top}, **axes, margin={"r": 30, "b": 40, "t": 60})}


_GAP_KEYS = ("tps", "tps_min", "tps_max", "steal", "iowait", "qps", "threads", "rows", "disk_iops", "disk_mib_s",
             "disk_await_ms")


def _break_gaps(s: dict[str, Any], width: int, keys: tuple[str, ...] = _GAP_KEYS) -> dict[str, Any]:
    """A series with a null point in each of ``keys`` wherever its times jump by more than ``width``
    (another variant's block ran there), so that Plotly breaks its line instead of joining the blocks."""
    t = s["t"]
    cuts = {i for i in range(1, len(t)) if t[i] - t[i - 1] > width}
    if not cuts:
        return s
    out = dict(s)
    for key in ("t", *keys):
        values = s.get(key)
        if values is None:
            continue
        broken: list[Any] = []
        for i, v in enumerate(values):
            if i in cuts:
                broken.append(t[i - 1] + width if key == "t" else None)
            broken.append(v)
        out[key] = broken
    return out


# At most this many panels (target x repetition) in the chart of blocks; its title says when there are more.
MAX_BLOCK_PANELS = 12
_PANEL_PX = 190


def blocks(series: dict[str, Any], found: list[dict[str, Any]], palette: dict[str, str]) -> Figure:
    """How the variants (or a cluster's routes) alternated: one panel per target x repetition, each
    variant's tps per second in its colour, each block shaded in that colour from its first second to its
    last and named above ("b1", "b2": its block), the thread counts' steps marked. Shows the design that
    makes the verdict paired: both variants in turns on one server, the order turning."""
    width = series["width_s"]
    order = {t: i for i, t in enumerate(palette)}
    ordered = sorted([s for s in series["series"] if s.get("variant")],
                     key=lambda s: (s["target_id"], s["repetition"], order.get(s.get("label") or "", len(order))))
    panels = list(dict.fromkeys((s["target_id"], s["repetition"]) for s in ordered))
    shown, more = panels[:MAX_BLOCK_PANELS], len(panels) - MAX_BLOCK_PANELS
    n = len(shown)
    gap = 0.35 / max(n, 1) if n > 1 else 0.0
    step = (1 - gap * (n - 1)) / max(n, 1)
    domains = {p: [round(1 - (i + 1) * step - i * gap, 4), round(1 - i * (step + gap), 4)]
               for i, p in enumerate(shown)}
    data: list[dict[str, Any]] = []
    layout_axes: dict[str, Any] = {}
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    legend_seen: set[str] = set()
    for i, panel in enumerate(shown):
        axis = "y" if i == 0 else f"y{i + 1}"
        layout_axes["yaxis" if i == 0 else f"yaxis{i + 1}"] = {
            "domain": domains[panel], "anchor": "x", "rangemode": "tozero", "gridcolor": "#e5e5e5",
            "title": {"text": "tps", "font": {"size": 11}}}
        notes.append({"xref": "paper", "yref": f"{axis} domain", "x": 0, "y": 1, "xanchor": "left",
                      "yanchor": "bottom", "showarrow": False, "font": {"size": 12, "color": "#222"},
                      "text": f"<b>{escape(panel[0])} rep {panel[1]}</b>"})
        for s in (s for s in ordered if (s["target_id"], s["repetition"]) == panel):
            key = s.get("label") or s["variant"]
            color = palette.get(key, FALLBACK_COLOR)
            broken = _break_gaps(s, width)
            data.append({"type": "scatter", "mode": "lines+markers", "name": key, "legendgroup": key,
                         "showlegend": key not in legend_seen, "x": broken["t"], "y": broken["tps"], "yaxis": axis,
                         "customdata": broken["threads"], "line": {"color": color, "width": 1.6},
                         "marker": {"size": 4, "color": color},
                         "hovertemplate": "%{fullData.name}<br>t=%{x}s, %{customdata} threads: %{y:,.1f} tps"
                                          "<extra></extra>"})
            legend_seen.add(key)
        previous = None
        for b in (b for b in found if (b["target_id"], b["repetition"]) == panel):
            color = palette.get(_label_of_block(b, series), FALLBACK_COLOR)
            x0 = math.floor(b["start"] / width) * width - width / 2
            x1 = math.floor(b["end"] / width) * width + width / 2
            shapes.append({"type": "rect", "xref": "x", "yref": f"{axis} domain", "x0": x0, "x1": x1, "y0": 0, "y1": 1,
                           "fillcolor": rgba_of(color, 0.13), "line": {"color": rgba_of(color, 0.7), "width": 1},
                           "layer": "below"})
            notes.append({"xref": "x", "yref": f"{axis} domain", "x": (x0 + x1) / 2, "y": 1, "yanchor": "top",
                          "showarrow": False, "font": {"size": 9, "color": color},
                          "text": f"b{b['block']}" if b.get("block") else escape(str(b["variant"]))})
            if b["threads"] != previous:
                notes.append({"xref": "x", "yref": f"{axis} domain", "x": x0, "y": 1, "yanchor": "bottom",
                              "xanchor": "left", "showarrow": False, "font": {"size": 10, "color": "#666"},
                              "text": f"{b['threads']} thr"})
                previous = b["threads"]
    what = "per second" if width == 1 else f"mean of {width} s buckets"
    title = (f"Blocks as they ran: each variant's tps ({what}), its blocks shaded in its colour"
             + (f" - first {n} of {len(panels)} target x repetition panels" if more > 0 else ""))
    return {"data": data, "layout": base_layout(
        title, "seconds since warm-up start", "", height=110 + _PANEL_PX * n, shapes=shapes, annotations=notes,
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
        xaxis={"anchor": f"y{n}" if n > 1 else "y"}, margin={"r": 30, "b": 45, "t": 70}, **layout_axes)}


# A cluster's nodes, told apart by colour in the node panels (a variant's colour is the blocks' shade).
_NODE_COLORS = ["#111111", "#e6550d", "#3182bd", "#31a354", "#756bb1", "#d6616b", "#8c6d31"]
_NODE_PANEL_PX = 150


def node_panels(status_series: dict[str, Any], found_blocks: list[dict[str, Any]],
                palette: dict[str, str]) -> Figure | None:
    """PMM's Galera view: one panel per figure (benchfleet.stats.status.NODE_FIGURES: flow control
    paused, replicated and received bytes, send and receive queues, certification failures, brute-force
    aborts; then the proxy's sessions per backend), one line per node per second in the node's colour
    (repetitions by dash), on the throughput timeline's axis. With one target x repetition, its blocks
    shaded in their variant's colour, so a route's seconds are told from the other's. None without nodes."""
    from benchfleet.stats.status import NODE_FIGURES, PROXY_PREFIX, PROXY_SESSIONS

    width = status_series["width_s"]
    merged: dict[tuple[str, int, str, str], dict[str, float | None]] = {}
    for s in status_series["series"]:  # a node's variants' pieces back into one line per repetition
        points = merged.setdefault((s["target_id"], s["repetition"], s["source"], s["counter"]), {})
        points.update(zip(s["t"], s["y"], strict=True))
    nodes = sorted({k[2] for k in merged if not k[2].startswith(PROXY_PREFIX)})
    # status_timeline gives flow-control pause as % of the time already; the others are rates or levels.
    panels = [(counter, 1.0 if counter == "wsrep_flow_control_paused_ns" else scale, words)
              for counter, scale, _, words in NODE_FIGURES.values() if any(k[3] == counter for k in merged)]
    sessions = next((c for c in PROXY_SESSIONS if any(k[3] == c and k[2].startswith(PROXY_PREFIX) for k in merged)),
                    None)
    if sessions:
        panels.append((sessions, 1.0, "the proxy's sessions per backend node"))
    if not nodes or not panels:
        return None
    targets = sorted({(k[0], k[1]) for k in merged})
    several = len({t for t, _ in targets}) > 1
    colors = {node: _NODE_COLORS[i % len(_NODE_COLORS)] for i, node in enumerate(nodes)}
    n = len(panels)
    gap = 0.25 / n
    step = (1 - gap * (n - 1)) / n
    data: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    shown: set[str] = set()
    for i, (counter, scale, words) in enumerate(panels):
        axis = "y" if i == 0 else f"y{i + 1}"
        axes["yaxis" if i == 0 else f"yaxis{i + 1}"] = {
            "domain": [round(1 - (i + 1) * step - i * gap, 4), round(1 - i * (step + gap), 4)], "anchor": "x",
            "rangemode": "tozero", "gridcolor": "#e5e5e5", "zeroline": False}
        notes.append({"xref": "paper", "yref": f"{axis} domain", "x": 0, "y": 1, "xanchor": "left",
                      "yanchor": "bottom", "showarrow": False, "font": {"size": 12, "color": "#222"},
                      "text": f"<b>{escape(words, quote=False)}</b>"})
        for (target, rep, source, found), points in sorted(merged.items()):
            if found != counter or (counter == sessions) != source.startswith(PROXY_PREFIX):
                continue
            node = source.removeprefix(PROXY_PREFIX)
            t = sorted(points)
            ys = [points[x] for x in t]
            line = _break_gaps({"t": t, "y": [None if y is None else round(y * scale, 3) for y in ys]}, width, ("y",))
            name = f"{target} {node}" if several else node
            name += f" rep {rep}" if len({r for _, r in targets}) > 1 else ""
            data.append({"type": "scatter", "mode": "lines", "name": name, "legendgroup": name, "yaxis": axis,
                         "showlegend": name not in shown, "x": line["t"], "y": line["y"],
                         "line": {"color": colors.get(node, FALLBACK_COLOR), "width": 1.5,
                                  "dash": _DASHES[(rep - 1) % len(_DASHES)]},
                         "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:,.2f}<extra></extra>"})
            shown.add(name)
        if len(targets) == 1:
            for b in found_blocks:
                color = palette.get(_label_of_block(b, {"series": status_series["series"]}), FALLBACK_COLOR)
                shapes.append({"type": "rect", "xref": "x", "yref": f"{axis} domain", "layer": "below",
                               "x0": math.floor(b["start"] / width) * width - width / 2,
                               "x1": math.floor(b["end"] / width) * width + width / 2, "y0": 0, "y1": 1,
                               "fillcolor": rgba_of(color, 0.10), "line": {"width": 0}})
    shade = ""
    if len(targets) == 1 and found_blocks:
        names = list(dict.fromkeys(_label_of_block(b, {"series": status_series["series"]}) for b in found_blocks))
        shade = "; shaded: the blocks of " + ", ".join(
            f"<span style='color:{palette.get(name, FALLBACK_COLOR)}'>{escape(name)}</span>" for name in names)
    what = "per second" if width == 1 else f"mean of {width} s buckets"
    return {"data": data, "layout": base_layout(
        f"Cluster nodes ({what}; one colour per node{shade})", "seconds since warm-up start", "",
        height=90 + _NODE_PANEL_PX * n, shapes=shapes, annotations=notes,
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
        xaxis={"anchor": f"y{n}" if n > 1 else "y"}, margin={"r": 30, "b": 45, "t": 70}, **axes)}


def _label_of_block(block: dict[str, Any], series: dict[str, Any]) -> str:
    """The label of the series a block belongs to (its target's variant)."""
    for s in series["series"]:
        if (s["target_id"], s["repetition"], s.get("variant")) == (block["target_id"], block["repetition"],
                                                                    block["variant"]):
            return str(s.get("label") or s["variant"])
    return str(block["variant"])


def _panels(disk: bool) -> list[tuple[str, str, str, str]]:
    """(series key, axis, title, unit) of the panels under the throughput."""
    panels = [("steal", "y2", "steal %", "% steal"), ("iowait", "y3", "iowait %", "% iowait")]
    if disk:
        panels += [("disk_iops", "y4", "disk IO/s", "reads+writes / s"),
                   ("disk_mib_s", "y5", "disk MiB/s", "MiB/s read+written"),
                   ("disk_await_ms", "y6", "await ms", "ms await")]
    return panels


def insert_rate(series: dict[str, Any], palette: dict[str, str]) -> Figure:
    """iiBench's view (seed 001): insert rate against the rows already in the table, per target x
    repetition, from the agent's count of rows (prepared rows + every insert so far)."""
    data: list[dict[str, Any]] = []
    order = {t: i for i, t in enumerate(palette)}
    for s in sorted(series["series"], key=lambda s: (order.get(s["target_id"], len(order)), s["repetition"])):
        points = [(r, t) for r, t in zip(s.get("rows") or [], s["tps"], strict=False)
                  if r is not None and t is not None]
        if not points:
            continue
        color = palette.get(s["target_id"], "#333")
        data.append({"type": "scatter", "mode": "lines",
                     "name": f"{s['target_id']} rep {s['repetition']}", "legendgroup": s["target_id"],
                     "x": [r for r, _ in points], "y": [t for _, t in points],
                     "line": {"color": color, "width": 1.3, "dash": _DASHES[(s["repetition"] - 1) % len(_DASHES)]},
                     "hovertemplate": "%{fullData.name}<br>%{x:,.0f} rows: %{y:,.1f} inserts/s<extra></extra>"})
    width = series["width_s"]
    what = "per second" if width == 1 else f"mean of {width} s buckets"
    return {"data": data, "layout": base_layout(f"Insert rate vs rows in the table ({what})", "rows in the table",
                                            "inserts / s", xaxis={"rangemode": "tozero"})}


def _series_color(s: dict[str, Any], palette: dict[str, str]) -> str:
    """A per-second series' colour: its label's (a target's variant), else its target's."""
    return palette.get(s.get("label") or "", palette.get(s["target_id"], FALLBACK_COLOR))


def _status_label(counter: str, per_s: bool) -> str:
    if counter == "wsrep_flow_control_paused_ns":
        return "flow control paused (% of the time)"
    return f"{counter} per second" if per_s else counter


def status(series: dict[str, Any], status_series: dict[str, Any], palette: dict[str, str]) -> Figure:
    """Throughput over time on top and, below on the same time axis, one server status counter at a
    time (a menu picks it; flow-control pause first when there is one): one line per target x
    repetition x source (a cluster's nodes, a proxy's backends)."""
    data: list[dict[str, Any]] = []
    order = {t: i for i, t in enumerate(palette)}
    for s in sorted(series["series"], key=lambda s: (order.get(s["target_id"], len(order)), s["repetition"])):
        # A variant (a cluster's route) in its own colour, its line broken between its blocks.
        broken = _break_gaps(s, series["width_s"]) if s.get("variant") else s
        data.append({"type": "scatter", "mode": "lines",
                     "name": f"{s.get('label') or s['target_id']} rep {s['repetition']} tps",
                     **_x_of(broken["t"], series["width_s"]), "y": broken["tps"], "showlegend": False,
                     "line": {"color": _series_color(s, palette), "width": 1.2,
                              "dash": _DASHES[(s["repetition"] - 1) % len(_DASHES)]},
                     "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:,.1f}<extra></extra>"})
    throughput = len(data)
    counters = sorted({(s["counter"], bool(s["per_s"])) for s in status_series["series"]},
                      key=lambda c: (c[0] != "wsrep_flow_control_paused_ns", c[0].lower()))
    # Sources told apart by line width (the first, the writer node, widest), repetitions by dash.
    sources = sorted({s["source"] for s in status_series["series"]})
    widths = {source: 2.2 - 0.5 * min(i, 3) for i, source in enumerate(sources)}
    labels: list[tuple[str, range]] = []
    for n, (counter, per_s) in enumerate(counters):
        mine = [s for s in status_series["series"] if s["counter"] == counter]
        labels.append((_status_label(counter, per_s), range(len(data), len(data) + len(mine))))
        for s in mine:
            if s.get("variant"):
                s = _break_gaps(s, status_series["width_s"], ("y",))
            data.append({"type": "scatter", "mode": "lines", "yaxis": "y2", "visible": n == 0,
                         "name": f"{s.get('label') or s['target_id']} rep {s['repetition']} {s['source']}",
                         **_x_of(s["t"], status_series["width_s"]), "y": s["y"],
                         "line": {"color": _series_color(s, palette), "width": widths[s["source"]],
                                  "dash": _DASHES[(s["repetition"] - 1) % len(_DASHES)]},
                         "hovertemplate": "%{fullData.name}<br>t=%{x}s: %{y:,.3f}<extra></extra>"})
    # Each button shows the throughput and its own counter's lines.
    buttons = [{"label": label, "method": "update",
                "args": [{"visible": [i < throughput or i in shown for i in range(len(data))]},
                         {"yaxis2.title.text": label}]} for label, shown in labels]
    return {"data": data, "layout": base_layout(
        "Server status per second, under throughput (pick the counter)", "seconds since warm-up start",
        "transactions / s", height=560, yaxis={"domain": [0.55, 1]},
        yaxis2={"domain": [0, 0.45], "anchor": "x", "rangemode": "tozero", "gridcolor": "#e5e5e5",
                "title": {"text": _status_label(*counters[0]) if counters else ""}},
        xaxis={"anchor": "y2"}, legend={"orientation": "h", "y": -0.15, "x": 0},
        updatemenus=[{"buttons": buttons, "direction": "down", "x": 1, "xanchor": "right", "y": 1.12,
                      "yanchor": "top", "showactive": True}] if len(buttons) > 1 else [],
        margin={"r": 30, "b": 40, "t": 70})}
