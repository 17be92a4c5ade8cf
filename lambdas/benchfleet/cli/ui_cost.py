"""The cost and scaling tables the CLI prints after a comparison (``results``, ``run``, ``import``,
``compare``): cost per 1,000 tps by pricing model with intervals, each target's price breakdown, and
the speedup by size per thread count with efficiency per doubling of vCPUs. The figures are the
comparison document's (``benchfleet.stats``); this module only lays them out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from benchfleet.cost.pricing import HEADLINE_MODELS, MODEL_LABELS, MODELS, line_words
from benchfleet.report.summary import speedup_title


def _money(value: Any, digits: int = 4) -> str:
    return "-" if value is None else f"${float(value):,.{digits}f}"


def _interval(low: Any, high: Any, digits: int = 4) -> str:
    return "n<2" if low is None or high is None else f"{float(low):.{digits}f}–{float(high):.{digits}f}"


def _times(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}x"


def _table(title: str, caption: str, columns: list[tuple[str, bool]]) -> Table:
    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for name, words in columns:
        table.add_column(name, justify="left" if words else "right", no_wrap=True)
    return table


def _fits(console: Console, table: Table) -> bool:
    """The table at its natural width fits the terminal: rich would otherwise cut its columns to
    'on-de…' and '$0.10…'."""
    # Measured unbounded: a measure within the terminal's width is clamped to it.
    return console.measure(table, options=console.options.update(width=1_000_000)).maximum <= console.width


def print_by_models(console: Console, models: tuple[str, ...], build: Callable[[tuple[str, ...]], Table],
                    note: str) -> None:
    """A table of figures by pricing model, ``build(models)``, as few tables as fit the terminal: all models
    in one where it fits, else the models split over several, each naming every row (target, threads) in
    full; at worst one table per model. ``note`` printed once after them, at the terminal's width."""
    groups: list[tuple[str, ...]] = []
    for m in models:
        if groups and _fits(console, build((*groups[-1], m))):
            groups[-1] = (*groups[-1], m)
        else:
            groups.append((m,))
    for group in groups:
        console.print(build(group))
    if note:
        console.print(note, style="dim italic")


def models_from(option: str | None) -> tuple[str, ...]:
    """The pricing models a ``--pricing`` option names (``all``, or a comma-separated list)."""
    if not option:
        return HEADLINE_MODELS
    if option == "all":
        return MODELS
    names = tuple(m.strip() for m in option.split(",") if m.strip())
    unknown = [m for m in names if m not in MODELS]
    if unknown or not names:
        raise ValueError(f"--pricing {option}: {', '.join(unknown) or 'nothing'} is not a pricing model "
                         f"(one of {', '.join(MODELS)}, or all)")
    return names


def approximate_models(targets: list[dict[str, Any]]) -> list[str]:
    """Sections of the tables the figures came from that are approximate (``ec2 reserved`` ...)."""
    found: set[str] = set()
    for t in targets:
        for table, sections in ((t.get("prices") or {}).get("sources") or {}).items():
            for section, info in sections.items():
                if isinstance(info, dict) and info.get("approximate"):
                    found.add(f"{table} {section}")
    return sorted(found)


def _priced(target: dict[str, Any], models: tuple[str, ...]) -> bool:
    return any((target.get("prices") or {}).get("serving", {}).get(m) for m in models)


def unpriced_words(targets: list[dict[str, Any]], models: tuple[str, ...]) -> str:
    """Why no target has a price under ``models``: none has any price (a local server, an import without
    --instance-type), or they are priced, but not under these models (spot: no snapshot ships)."""
    elsewhere = [t["target_id"] for t in targets if _priced(t, MODELS)]
    if not elsewhere:
        return ("no target is priced (a local server is free unless its spec gives price_per_hour; "
                "`import --instance-type` prices an imported target)")
    labels = ", ".join(MODEL_LABELS[m] for m in models)
    why = ("the price tables ship no spot snapshot (spot prices move by the hour: add one to "
           "workloads/pricing/ec2.json's spot section, workloads/pricing/README.md)" if "spot" in models and
           not spot_snapshot() else f"the price tables have no {labels} figure for their type and region")
    return f"no {labels} price: {', '.join(elsewhere)} {'is' if len(elsewhere) == 1 else 'are'} priced, but {why}"


def spot_snapshot() -> bool:
    """The price tables hold a spot snapshot for some region."""
    from benchfleet.cost.pricing import load_prices

    try:
        return bool(load_prices().ec2.spot.regions)
    except (OSError, ValueError):
        return False


def print_costs(console: Console, stats: dict[str, Any], models: tuple[str, ...] = HEADLINE_MODELS,
                per_minute: bool = False) -> None:
    """Cost per 1,000 tps per target x threads under ``models``, each with its 95% interval; as many
    tables as the terminal's width needs (print_by_models). ``per_minute`` (go-tpc: tps is New-Order per
    second): cost per 1,000 New-Order per minute (tpmC), the same figure / 60."""
    unit, scale = ("New-Order/min", 60.0) if per_minute else ("tps", 1.0)
    figure = "tpmC" if per_minute else "tps"
    targets = stats.get("targets") or []
    priced = {t["target_id"] for t in targets if _priced(t, models)}
    if not priced:
        console.print(f"cost per 1,000 {unit}: {unpriced_words(targets, models)}")
        return
    approx = approximate_models(targets)
    clusters = any(r.get("cross_zone") for r in stats.get("rows") or [])
    caption = ("USD per hour of the database (instance, storage, IOPS, throughput; no client host for any "
               "kind" + ("; a cluster: every node, its storage, its own proxy host and the cross-zone traffic "
                         "measured at that thread count" if clusters else "")
               + f") / (mean {figure} / 1000); interval carried from {figure}"
               + (f"; approximate prices: {', '.join(approx)} (workloads/pricing/README.md)" if approx else ""))

    def build(shown: tuple[str, ...]) -> Table:
        columns: list[tuple[str, bool]] = [("target", True), ("thr", False), (figure, False)]
        for m in shown:
            label = MODEL_LABELS[m] + " " if len(shown) > 1 else ""  # one model: named in the title
            columns += [(f"{label}$/h", False), (f"{label}per 1k {unit}", False), ("95% CI", False)]
        table = _table(f"cost per 1,000 {unit}" + (f": {', '.join(MODEL_LABELS[m] for m in shown)}"
                                                   if len(shown) == 1 else ""), "", columns)
        for r in stats.get("rows") or []:
            if r["target_id"] not in priced:
                continue
            cells = [r["target_id"], str(r["threads"]),
                     f"{r['tps']['mean'] * scale:,.0f}" if r["tps"]["mean"] else "-"]
            for m in shown:
                c = (r.get("cost") or {}).get(m)
                cells += (["-", "-", "-"] if c is None else
                          [_money(c["usd_per_hour"]), _money(_per(c["per_1000_tps"], scale)),
                           _interval(_per(c["ci_low"], scale), _per(c["ci_high"], scale))])
            table.add_row(*cells)
        return table

    # A model no target has a price under (spot, with no snapshot shipped) is said, not drawn as dashes.
    missing = tuple(m for m in models if not any(_priced(t, (m,)) for t in targets))
    print_by_models(console, tuple(m for m in models if m not in missing), build, caption)
    unpriced = [t["target_id"] for t in targets if t["target_id"] not in priced]
    if unpriced:
        console.print(f"not priced: {', '.join(unpriced)}")
    if missing:
        console.print(f"cost per 1,000 {unit}: {unpriced_words(targets, missing)}")


def _per(value: Any, scale: float) -> Any:
    return value / scale if isinstance(value, int | float) else value


def print_breakdown(console: Console, stats: dict[str, Any], models: tuple[str, ...] = HEADLINE_MODELS) -> None:
    """What each priced target's money buys: its lines, serving or not, by model."""
    targets = [t for t in stats.get("targets") or [] if (t.get("prices") or {}).get("lines")]
    if not targets:
        return
    def build(shown: tuple[str, ...]) -> Table:
        columns: list[tuple[str, bool]] = [("target", True), ("item", True), ("what", True),
                                           ("in cost/1k tps", True)]
        columns += [(f"{MODEL_LABELS[m]} $/h" if len(shown) > 1 else "$/h", False) for m in shown]
        table = _table("price breakdown (USD per hour)" + (f": {', '.join(MODEL_LABELS[m] for m in shown)}"
                                                           if len(shown) == 1 else ""), "", columns)
        for t in targets:
            prices = t["prices"]
            for i, line in enumerate(prices["lines"]):
                instead, counted = line_words(line)
                table.add_row(t["target_id"] if i == 0 else "", line["item"], line["what"], counted,
                              *[instead or _money(line["usd_per_hour"].get(m), 5) for m in shown])
            where = prices.get("region")
            table.add_row("", "total", f"in {where}" if where and where != "local" else "", "database",
                          *[_money(prices["serving"].get(m), 5) for m in shown])
        return table

    print_by_models(console, tuple(m for m in models if any(_priced(t, (m,)) for t in targets)), build,
                    "in cost/1k tps: a line of the database's price; the client host is in what a run costs, not "
                    "in cost per 1,000 tps")
    # Notes under the table, each once with the targets it is about (long words would widen the table).
    notes: dict[str, list[str]] = {}
    for t in targets:
        for note in t["prices"].get("notes") or []:
            notes.setdefault(note, []).append(t["target_id"])
    for note, ids in notes.items():
        console.print(f"{', '.join(ids)}: {note}")


def print_plan_breakdown(console: Console, summary: dict[str, Any]) -> None:
    """``plan``: the lines of each cluster target's $/hour on-demand (every node, its storage, the
    proxy's own host, the client; cross-zone traffic priced after the run)."""
    clusters = [{"target_id": t["target_id"], "prices": (summary.get("prices") or {}).get(t["target_id"])}
                for t in summary.get("targets") or [] if t.get("kind") == "cluster"]
    print_breakdown(console, {"targets": [c for c in clusters if c["prices"]]}, ("on_demand",))


def print_cross_zone(console: Console, stats: dict[str, Any]) -> None:
    """A cluster's traffic across availability zones per target x threads: GB per hour replicated
    between nodes and sent between the client (or proxy) and the nodes in other zones, and what it
    costs per hour ($0.01 per GB each way); a local cluster's as what it would cost."""
    rows = [r for r in stats.get("rows") or [] if r.get("cross_zone")]
    if not rows:
        return
    table = _table("cross-zone traffic", "model: every node in its own zone, the client host (and proxy) in "
                   "the first node's; replication = replicated bytes x (nodes - 1), client = bytes sent + "
                   "received by the nodes outside the client's zone; GB of 2^30 bytes, billed each way "
                   "(workloads/README.md, \"Cost of a cluster\")",
                   [("target", True), ("thr", False), ("replication GB/h", False), ("client GB/h", False),
                    ("total GB/h", False), ("$/h", False), ("", True)])
    for r in rows:
        c = r["cross_zone"]
        table.add_row(r.get("label") or r["target_id"], str(r["threads"]), f"{c['replication_gb_per_hour']:,.3f}",
                      f"{c['client_gb_per_hour']:,.3f}", f"{c['gb_per_hour']:,.3f}", _money(c["usd_per_hour"], 5),
                      "would cost across zones (local: in no total)" if c["basis"] == "would"
                      else "in cost per 1,000 tps")
    console.print(table)


def print_speedup(console: Console, stats: dict[str, Any]) -> None:
    """Speedup relative to the smallest size of each family, per thread count, with its 95% interval,
    and efficiency: speedup per doubling of vCPUs (2.00x is linear)."""
    for group in stats.get("speedup") or []:
        others = [r for r in group["rows"] if r["target_id"] != group["baseline_target"]]
        columns: list[tuple[str, bool]] = [("thr", False)]
        for r in others:
            columns += [(f"{r['target_id']} ({r['size']:g})", False), ("95% CI", False), ("per doubling", False)]
        base = next(r for r in group["rows"] if r["target_id"] == group["baseline_target"])
        # Named above the table, which is narrower than its name (a title would wrap inside it).
        console.print(f"speedup by size: {speedup_title(group)}", style="italic")
        table = _table("", "", columns)
        for th in group["threads"]:
            cells = [str(th)]
            for r in others:
                c = r["by_threads"].get(str(th))
                cells += (["-", "-", "-"] if c is None else
                          [_times(c["speedup"]), _speedup_interval(c), _times(c["per_doubling"])])
            table.add_row(*cells)
        console.print(table)
        console.print(f"tps / {group['baseline_target']}'s ({base['size']:g} vCPUs) at the same threads (sizes of one "
                      f"family and settings: {group['group']}); 95% CI: Welch unless marked paired (local servers "
                      "run in rounds); per doubling = speedup ** (1 / doublings of vCPUs), 2.00x is linear",
                      style="dim italic")


def _speedup_interval(cell: dict[str, Any]) -> str:
    """A speedup cell's interval, marked ``paired:`` when its design was (as the verdict column marks it)."""
    text = _interval(cell["ci_low"], cell["ci_high"], 2)
    return f"paired: {text}" if cell.get("design") == "paired" and cell["ci_low"] is not None else text


def print_cost_comparison(console: Console, doc: dict[str, Any], models: tuple[str, ...] = HEADLINE_MODELS) -> None:
    """``compare``: each matched row's cost per 1,000 tps in both runs, by model, with intervals."""
    from benchfleet.stats.compare import compared_label

    rows = [r for r in doc.get("rows") or [] if any((r.get("cost") or {}).get(m) for m in models)]
    if not rows:
        return
    columns: list[tuple[str, bool]] = [("target", True), ("thr", False)]
    for m in models:
        label = MODEL_LABELS[m]
        columns += [(f"{label} per 1k tps", False), ("95% CI", False), ("baseline run", False), ("95% CI", False)]
    table = _table("cost per 1,000 tps in both runs", "USD per hour of the database per 1,000 tps; each run "
                   "priced from today's tables", columns)
    for r in rows:
        cells = [compared_label(r), str(r["threads"])]
        for m in models:
            this, base = (r.get("cost") or {}).get(m), (r.get("baseline_cost") or {}).get(m)
            for c in (this, base):
                cells += ["-", "-"] if c is None else [_money(c["per_1000_tps"]), _interval(c["ci_low"], c["ci_high"])]
        table.add_row(*cells)
    console.print(table)
