"""What the CLI draws: live progress of a local run and the tables it prints (rich).

Why one module: the live progress and the tables share one console, one set of column rules and the
verdict words, so that a run's progress and its results read alike.
"""

from __future__ import annotations

import errno
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from benchfleet.plan.model import Plan, PlanStep, TargetPlan
from benchfleet.report import summary
from benchfleet.report.summary import verdict_text
from benchfleet.stats.caveats import words as caveat_words
from benchfleet.stats.figures import percentile_of
from benchfleet.stats.steps import step_tps
from benchfleet.workload.records import AgentOutput, Sample, StepSummary, sample_phase


class _Console(Console):
    """rich's Console, except when the reader of stdout goes away (``benchfleet runs | head -1``): rich
    would exit 1 itself; the CLI ends every command the same way then (benchfleet.cli.main.main)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more to draw
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


# Off a terminal (CI logs, pipes) rich would assume 80 columns and fold the tables.
console = _Console(width=None if sys.stdout.isatty() else 160)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


class RunProgress:
    """Where a local run is, in the plan's own seconds, and when it will end.

    Every phase the plan estimates counts: each repetition's server setup, every step (duration and
    cooldown) and teardown. The ETA is the plan's remaining seconds scaled by the pace so far
    (actual elapsed / planned done), so a machine slower or faster than the plan's model still gets
    an honest end time, and the bar reaches 100% when the run ends."""

    def __init__(self, plan: Plan, clock: Callable[[], float] = time.monotonic) -> None:
        self.plan = plan
        self.total = plan.wall_s
        self.clock = clock
        self.started = clock()
        self.done = 0.0           # planned seconds of finished phases
        self.current = 0.0        # planned seconds of the phase under way (so far)
        self.target_index = {t.target_id: i for i, t in enumerate(plan.targets)}

    def finish_phase(self, planned_s: float) -> None:
        self.done += planned_s
        self.current = 0.0

    @property
    def completed(self) -> float:
        return min(self.total, self.done + self.current)

    def eta_s(self) -> float | None:
        done = self.completed
        elapsed = self.clock() - self.started
        if done <= 0 or elapsed <= 0:
            return float(self.total) if self.total else None
        return max(0.0, (self.total - done) * elapsed / done)

    def position(self, target_id: str, repetition: int) -> str:
        k = self.target_index.get(target_id, 0) + 1
        return f"target {k}/{len(self.plan.targets)} {target_id} · rep {repetition}/{self.plan.repetitions}"

    def target(self, target_id: str) -> TargetPlan:
        return self.plan.targets[self.target_index[target_id]]


class RichObserver:
    """Progress: one line for the whole run (target k/N, repetition r/R, step, live tps, ETA)."""

    def __init__(self, plan: Plan) -> None:
        self.state = RunProgress(plan)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                                 TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"), console=console,
                                 transient=False)
        self.task: TaskID | None = None
        self.where = ""
        self.samples_seen = 0
        # The final report sysbench silences ends most steps: said on the first step line it ends, not on each.
        self.final_said = False

    def __enter__(self) -> RichObserver:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=max(1, self.state.total), info="", eta="-")
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _show(self, phase: str, info: str = "") -> None:
        assert self.task is not None
        eta = self.state.eta_s()
        self.progress.update(self.task, completed=self.state.completed, description=f"{self.where} · {phase}",
                             info=info, eta=_duration(int(eta)) if eta is not None else "-")

    def target_started(self, target_id: str, repetition: int, steps: list[PlanStep]) -> None:
        self.where = self.state.position(target_id, repetition)
        kind = self.state.target(target_id).kind
        self.progress.console.print(f"[bold]{target_id}[/] repetition {repetition}: "
                                    + ("checking the existing server" if kind == "existing" else "starting MariaDB"))
        self._show("setting up")

    def target_ready(self, target_id: str, repetition: int) -> None:
        self.state.finish_phase(self.state.target(target_id).provision_s)
        self._show("ready")

    def target_finished(self, target_id: str, repetition: int) -> None:
        self.state.finish_phase(self.state.target(target_id).teardown_s)
        self._show("done")

    def step_started(self, target_id: str, repetition: int, step: PlanStep) -> None:
        self.samples_seen = 0
        self._show(step.name)

    def sample(self, target_id: str, step: PlanStep, second: float, tps: float,
               tpmc: float | None = None) -> None:
        self.state.current = min(float(step.duration_s), second)
        # The ramp's reports (a measure step's first) are left out of the step's results: say so.
        ramp = sample_phase(step.kind, self.samples_seen) == "ramp"
        self.samples_seen += 1
        self._show(f"{step.name} {second:.0f}/{step.duration_s} s",
                   (f"{tpmc:,.0f} tpmC" if tpmc is not None else f"{tps:,.0f} tps")
                   + (" (ramp, left out)" if ramp else ""))

    def step_finished(self, target_id: str, repetition: int, step: PlanStep, output: AgentOutput) -> None:
        self.state.finish_phase(step.estimated_s + self.state.target(target_id).step_overhead_s)
        self._show(step.name)
        for s in output.summaries:
            mine = [x for x in output.samples
                    if (x.target_id, x.repetition, x.step) == (s.target_id, s.repetition, s.step)]
            self.progress.console.print(step_line(target_id, repetition, step.name, s, mine,
                                                  explain_final=not self.final_said))
            self.final_said = self.final_said or bool(s.missing_final)

    def message(self, text: str) -> None:
        self.progress.console.print(f"[yellow]{text}")


def step_line(target_id: str, repetition: int, step: str, s: StepSummary, samples: Sequence[Sample] = (),
              explain_final: bool = True) -> str:
    """The line a finished step prints: its tps as the results will store it (the ramp's reports left
    out, :func:`benchfleet.stats.steps.step_tps`; sysbench's whole-step figure beside it, labelled), sysbench's
    other figures, the samples present of expected (under load sysbench reports late and one line covers
    seconds) and, when it happened, the final report sysbench silences as its run ends, called what it
    is: normal. ``samples``: the step's per-second samples (none: sysbench's figure alone).
    ``explain_final``: say so (a run's first such step); after that the count alone ('3/4 samples') shows it."""
    pct = f"p{s.latency_pct}" if s.latency_pct else "lat"
    count = f"{s.samples}/{s.samples_expected}" if s.samples_expected is not None else str(s.samples)
    tool = "go-tpc" if s.tpmc is not None else "sysbench"
    last = (f", final report silenced ({tool}'s normal end, as at most steps' end: said once)"
            if s.missing_final and explain_final else "")
    ramp = [x for x in samples if x.phase == "ramp"]
    weights = [x.interval_s if x.interval_s is not None else 1.0 for x in ramp]
    ramp_tx = math.fsum(w * x.tps for w, x in zip(weights, ramp, strict=True))
    stored = step_tps(s.model_dump(), {"ramp_s": math.fsum(weights) if ramp else None,
                                       "ramp_transactions": ramp_tx if ramp else None})
    if s.tpmc is not None:  # go-tpc: tps is New-Order per second, shown as what TPC-C reports, per minute
        tps = (f"{60 * stored:,.0f} tpmC ({s.tpmc:,.0f} incl. ramp)" if ramp and stored is not None
               else f"{s.tpmc:,.0f} tpmC")
        rates = f"{s.events / s.total_time_s:,.1f} tx/s of every type" if s.total_time_s else ""
    else:
        tps = (f"{stored:,.1f} tps ({s.tps:,.1f} incl. ramp)" if ramp and stored is not None
               else f"{s.tps:,.1f} tps")
        rates = f"{s.qps or 0:,.0f} qps"
    return (f"  {target_id} rep {repetition} {step:>8}: {tps}, {rates}, "
            f"{pct} {_fmt(s.latency_pct_ms, 2)} ms, {count} samples{last}, steal {_fmt(s.steal_mean_pct, 2)}%")


# A cloud target without a region runs in the region the stack is deployed in.
HOME_REGION_LABEL = "(home)"


def print_plan(summary: dict[str, Any]) -> None:
    table = Table(title=f"plan: {summary['name']} ({summary['mode']}, workload {summary['workload']})")
    for col in ("target", "kind", "region", "steps", "per repetition", "repetitions", "$/hour", "est. cost"):
        table.add_column(col, justify="right" if col not in ("target", "kind", "region", "steps") else "left")
    for t in summary["targets"]:
        steps = ", ".join(s["name"] for s in t["steps"]) if not t.get("sequence") else \
            f"{len(t['steps'])} steps, {len(summary['variants'])} variants ({summary['order']})"
        options = t.get("server_options") or {}
        label = t["target_id"] + "".join(f"\n  {k} = {v}" for k, v in options.items())
        # Never "$0" nor a blank for a target the price tables do not know: say so.
        no_price = t["price_per_hour"] is None
        home = summary.get("home_region") or {}
        region = t.get("region") or ""
        region = f"{region} {HOME_REGION_LABEL}".strip() if t["target_id"] in home.get("targets", ()) else region
        table.add_row(label, t["kind"], region or HOME_REGION_LABEL, steps,
                      _duration(t["repetition_s"]), str(summary["repetitions"]),
                      "unpriced" if no_price else _fmt(t["price_per_hour"], 3),
                      "unpriced" if no_price else f"${_fmt(t['estimated_cost_usd'], 2)}")
    console.print(table)
    from benchfleet.cli import ui_cost

    ui_cost.print_plan_breakdown(console, summary)
    _print_order(summary)
    _print_storage(summary)
    if summary["mode"] == "aws":
        _print_cloud_plan(summary)
    unpriced = len(summary["unpriced_targets"])
    parts = {k: v for k, v in (summary.get("wall_parts") or {}).items() if v}
    if parts:
        along = "the repetitions that end last" if summary["mode"] == "aws" else "every repetition, one after another"
        console.print(f"wall time, along {along}: " + ", ".join(f"{k} {_duration(v)}" for k, v in parts.items()))
    console.print(f"estimated wall time {_duration(summary['wall_s'])}, estimated cost "
                  f"{_usd(summary['estimated_cost_usd'])}"
                  + (f" + {unpriced} target{'s' if unpriced > 1 else ''} unpriced" if unpriced else "")
                  + (f" (hosts {_usd(summary['hosts_usd'])}"
                     + (f" + Aurora I/O {_usd(summary['usage_usd'])}" if summary.get("usage") else "")
                     + (f" + control plane {_usd(summary['control_plane_usd'])}" if summary["control_plane"] else "")
                     + ")" if summary["control_plane"] or summary.get("usage") else "")
                  + (f" (budget ${summary['budget_usd']:.2f})" if summary["budget_usd"] is not None else ""))
    if summary["unpriced_targets"]:
        console.print(f"[yellow]no price known for: {', '.join(summary['unpriced_targets'])}")
    if any(t["price_per_hour"] for t in summary["targets"]):
        console.print("$/hour: on-demand list prices of every host the run rents (database, its storage and, for "
                      "RDS and Aurora, the client host); cost per 1,000 tps by pricing model is in `results`")
    if summary.get("home_region"):
        home = summary["home_region"]
        console.print(f"{HOME_REGION_LABEL}: no region in the spec: the target runs in the deployed stack's region, "
                      f"{home['region']} here ({home['source']}), and is priced there")
    if summary["over_budget"]:
        console.print("[red]over budget: `benchfleet run` will refuse to start")
    _print_resolution(summary.get("resolution") or {})


def _print_resolution(found: dict[str, Any]) -> None:
    """What the spec's repetitions resolve (benchfleet.stats.resolution): a line per kind of verdict."""
    for check in found.get("checks") or []:
        if check["status"] == "resolves":
            console.print(f"resolution: {check['verdicts']} verdicts with {check['repetitions']} repetitions resolve "
                          f"about ±{check['resolves_pct']:g}% (margin ±{found['margin_pct']:g}%; "
                          f"{check['spread_pct']:g}% spread, {check['source']})")
    for warning in found.get("warnings") or []:
        colour = "red" if warning.startswith("cannot reach a verdict") else "yellow"
        console.print(f"[{colour}]{escape(warning)}")


def print_calibration(doc: dict[str, Any]) -> None:
    """The variance components a calibration measured, per thread count, as % (sd of log tps)."""
    table = _compact_table(f"calibration: {doc['spec']} on this machine ({doc['fingerprint']})",
                           "sd of log tps in %: between blocks of a repetition, between repetitions of a run (beyond "
                           "the blocks), between runs (beyond the repetitions), a repetition's figure within a run, "
                           "and a paired A/A repetition's log ratio (what a paired verdict sees); '-': this design "
                           "cannot tell", [("thr", False), ("runs", False), ("reps", False), ("blocks", False),
                                           ("sd block%", False), ("sd rep%", False), ("sd run%", False),
                                           ("sd rep figure%", False), ("sd paired%", False)])
    for r in doc["components"]:
        table.add_row(str(r["threads"]), str(r["runs"]), str(r["repetitions"]), str(r["blocks"]),
                      *(_fmt(None if r[k] is None else 100 * r[k], 2)
                        for k in ("sd_block", "sd_repetition", "sd_run", "sd_repetition_total", "sd_paired")))
    console.print(table)
    console.print(f"runs: {', '.join(doc['runs'])}; `benchfleet plan` now says how many repetitions resolve the "
                  "spec's margin here")


def _print_order(summary: dict[str, Any]) -> None:
    """The order things run in: variants per repetition of each target, local targets' rounds."""
    if summary.get("variants"):
        blocks = f", each measured step in {summary['blocks']} blocks" if summary.get("blocks", 1) > 1 else ""
        console.print(f"variants {', '.join(summary['variants'])}: every repetition measures each of them on the "
                      f"same server, {summary['order']}{blocks}")
        for t in summary["targets"]:
            for r, names in enumerate(t.get("sequence") or [], start=1):
                console.print(f"  {t['target_id']} repetition {r}: {' '.join(names)}")
    rounds = summary.get("run_order") or []
    if len({r.split('#')[0] for r in rounds}) > 1:
        console.print("local targets run " + ("in rounds" if summary["order"] == "interleaved" else "one after another")
                      + ": " + " ".join(r.replace("#", " rep ") for r in rounds))


def _print_storage(summary: dict[str, Any]) -> None:
    """Per target with volumes of its own: the layout, what each volume and the array give, what
    every volume costs, the instance's EBS bandwidth; then the plan's warnings, with their figures."""
    rows = [t for t in summary["targets"] if t.get("storage")]
    if rows:
        table = Table(title="storage, per host")
        for col in ("target", "volumes", "array", "per volume", "array reads / writes", "instance EBS",
                    "$/hour"):
            table.add_column(col, justify="left" if col in ("target", "volumes", "array") else "right")
        for t in rows:
            s = t["storage"]
            per, array, inst = s.get("per_volume") or {}, s.get("array") or {}, s.get("instance") or {}
            price = (s.get("usd_per_hour") or {}).get("total")
            layout = "one volume" if s.get("volumes", 1) == 1 else f"RAID {s.get('raid')}"
            if s.get("filesystem"):
                layout += f", {s['filesystem']} ({s.get('mount_options')})"
            table.add_row(
                t["target_id"], f"{s['volumes']} x {s['type']} {s['size_gb']} GiB", layout,
                f"{per['iops']:,} IOPS, {per['mib_s']:,.0f} MiB/s" if per.get("iops") else "",
                (f"{array['read_iops']:,} / {array['write_iops']:,} IOPS, {array['capacity_gib']:,} GiB"
                 if array.get("read_iops") else f"{array.get('capacity_gib') or 0:,} GiB" if array else ""),
                (f"{inst['baseline_iops']:,}..{inst['max_iops']:,} IOPS, {inst['baseline_mb_s']:,g}.."
                 f"{inst['max_mb_s']:,g} MB/s" if inst else ""),
                "unpriced" if price is None else _fmt(price, 4))
        console.print(table)
    for warning in summary.get("warnings") or []:
        console.print(f"[yellow]warning: {warning}")


def _print_cloud_plan(summary: dict[str, Any]) -> None:
    """Peak hosts and vCPUs per region, repetitions at once, and the control plane's charges."""
    at_once = {t["repetitions_at_once"] for t in summary["targets"] if t["kind"] != "existing"}
    runs = "one after another" if at_once <= {1} else f"up to {max(at_once)} at once"
    spacing = {t["repetition_spacing_s"] for t in summary["targets"] if t["kind"] != "existing"} - {0}
    if spacing:
        runs += f", each started {_duration(max(spacing))} after the previous one (repetition_spacing_s)"
    console.print(f"repetitions per target: {runs} (as the deployed state machine runs them)")
    for t in summary["targets"]:
        if t["kind"] == "cluster":  # every host it provisions: its nodes each in a zone of their own
            nodes = [h for h in t["hosts"] if h.get("role") == "node"]
            others = ", ".join(f"{h['role']} {h['instance_type']}" for h in t["hosts"] if h.get("role") != "node")
            console.print(f"cluster {t['target_id']}: {len(nodes)} nodes {nodes[0]['instance_type'] if nodes else ''}, "
                          f"each in its own availability zone of {t['region']} ({len(nodes)} zones needed); {others}")
    if len(summary.get("waves") or []) > 1:
        table = Table(title="waves: repetitions that start together, within each region's caps")
        for col in ("wave", "starts", "ends", "repetitions", "EC2 vCPUs", "hosts"):
            table.add_column(col, justify="left" if col == "repetitions" else "right")
        for w in summary["waves"]:
            table.add_row(str(w["wave"]), _duration(w["start_s"]), _duration(w["end_s"]), " ".join(w["repetitions"]),
                          ", ".join(f"{r['ec2_vcpus']} {r['region']}" for r in w["regions"]),
                          ", ".join(str(r["ec2_hosts"] + r["db_instances"]) for r in w["regions"]))
        console.print(table)
    regions = Table(title="peak at one moment, per region")
    for col in ("region", "EC2 hosts", "EC2 vCPUs", "DB instances"):
        regions.add_column(col, justify="left" if col == "region" else "right")
    for r in summary["regions"]:
        vcpus = str(r["ec2_vcpus"]) + (f" + {len(r['unknown_vcpus'])} unknown" if r["unknown_vcpus"] else "")
        regions.add_row(r["region"], str(r["ec2_hosts"]), vcpus, str(r["db_instances"]))
    console.print(regions)
    if summary["control_plane"]:
        charges = Table(title="control plane (per run)")
        for col in ("item", "quantity", "$/unit", "cost"):
            charges.add_column(col, justify="left" if col == "item" else "right")
        for c in summary["control_plane"]:
            charges.add_row(c["item"], f"{c['quantity']:,.0f}", f"{c['usd_per_unit']:.8g}", f"${c['cost_usd']:.4f}")
        console.print(charges)
    if summary.get("usage"):
        used = Table(title="billed by use (estimated from the workload)")
        for col in ("target", "item", "quantity", "$/million", "cost"):
            used.add_column(col, justify="left" if col in ("target", "item") else "right")
        for u in summary["usage"]:
            rate, cost = u["usd_per_million"], u["cost_usd"]
            used.add_row(u["target_id"], u["item"], f"{u['quantity']:,}", "no rate" if rate is None else f"{rate:g}",
                         "unpriced" if cost is None else f"${cost:.4f}")
        console.print(used)
        console.print(summary["usage"][0]["assumption"])
    if summary.get("refused"):
        console.print(f"[red]{summary['refused']}")


def _usd(amount: float) -> str:
    """Dollars; under a dollar in cents too (a canary's cost is a few cents, never "$0.00")."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4f} ({amount * 100:.2f}¢)"


def _duration(seconds: int) -> str:
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def print_runs(runs: list[dict[str, Any]]) -> None:
    table = Table(title="runs")
    for col in ("run id", "name", "status", "mode", "started", "est. cost", "message"):
        # Run ids are what people copy into the next command: never shortened.
        table.add_column(col, no_wrap=col == "run id", overflow="fold")
    for r in runs:
        mode = r["mode"] + (" [not the spec: " + r["trial"] + "]" if r.get("trial") else "")
        table.add_row(r["run_id"], r["name"], r["status"], mode, f"{r['started_at']:%Y-%m-%d %H:%M}",
                      f"${_fmt(r['estimated_cost_usd'], 2)}", (r.get("message") or "")[:60])
    console.print(table)


def print_refusals(rows: list[dict[str, Any]]) -> None:
    """Why a row has no verdict, in full under the table: a sentence in a table cell wraps into the
    columns beside it."""
    for r in rows:
        refused = (r.get("relative") or {}).get("refused")
        if refused:
            label = r.get("label") or r.get("target_id") or r.get("key")
            console.print(f"{label} at {r.get('threads')} threads: {refused['words']}", markup=False,
                          highlight=False, style="yellow")


def order_lines(doc: dict[str, Any]) -> list[str]:
    """The order the run ran in, where there was one to choose: variants per repetition, local rounds."""
    found = doc.get("order_run") or {}
    lines = []
    if doc.get("variants"):
        for item in found.get("steps") or []:
            cells: list[list[str]] = []
            for s in item["steps"]:
                cell = f"{s['threads']} thr" + (f" b{s['block']}" if s.get("block") else "")
                if not cells or cells[-1][0] != cell:
                    cells.append([cell])
                cells[-1].append(s["variant"])
            lines.append(f"order run, {item['target_id']} rep {item['repetition']}: "
                         + " | ".join(f"{c[0]}: {' '.join(c[1:])}" for c in cells))
    reps = found.get("repetitions") or []
    if len({r["target_id"] for r in reps}) > 1:
        lines.append("targets ran: " + " ".join(f"{r['target_id']} rep {r['repetition']}," for r in reps).rstrip(","))
    return lines


def multiplicity_text(doc: dict[str, Any]) -> str | None:
    """The line under a table of verdicts: how many comparisons, how many false claims chance alone makes."""
    found = doc.get("multiplicity")
    return str(found["words"]) if isinstance(found, dict) and found.get("comparisons") else None


def _num(value: Any) -> str:
    """A figure in as few characters as keep it exact enough: no decimals from 100 up."""
    if value is None:
        return "-"
    v = float(value)
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def _range(low: Any, high: Any) -> str:
    return "-" if low is None or high is None else f"{_num(low)}–{_num(high)}"


def _signed(value: Any) -> str:
    if value is None:
        return "-"
    v = float(value)
    return f"{v:+,.0f}%" if abs(v) >= 100 else f"{v:+.1f}%"


def _signed_range(low: Any, high: Any) -> str:
    return "-" if low is None or high is None else f"{_signed(low)}..{_signed(high)}"


def _compact_table(title: str, caption: str, columns: list[tuple[str, bool]]) -> Table:
    """Numbers never folded (a cut "1,069…" is worse than no column); words wrap. No vertical rules:
    a table of ten figures fits 100 columns."""
    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0))
    for name, words in columns:
        table.add_column(name, justify="left" if words else "right", no_wrap=not words,
                         overflow="fold" if words else "ellipsis")
    return table


def _scaled(value: Any, scale: float) -> Any:
    return value * scale if isinstance(value, int | float) else value


# The latency distribution's columns ``results --percentiles`` adds (keys of latency_percentiles_ms).
DISTRIBUTION_COLUMNS = ("50", "99", "99.9")


def print_comparison(run_id: str, doc: dict[str, Any], percentiles: bool = False) -> None:
    """Who wins, per target x threads in spec order: mean tps and its 95% interval, the difference to
    the baseline with its interval and verdict, the latency percentile (median of an odd number of
    repetitions, else the range), with ``percentiles`` the step's p50/p99/p99.9 (each the median across
    repetitions, '-' where there is none: an even count, a run from before), steal, and the repetitions
    whose per-second data has gaps."""
    stats = doc["statistics"]
    rows = stats["rows"]
    pct = percentile_of(rows)
    # go-tpc steps: tps is New-Order per second; TPC-C's figure is per minute (tpmC), so say that.
    figure, scale = ("tpmC", 60.0) if any(s.get("tpmc") is not None for s in doc.get("steps") or []) else ("tps", 1.0)
    trial = stats.get("trial")
    banner = summary.run_banner(doc.get("run") or {}, trial)
    if banner:  # before any figure: a run that did not finish, or not the spec's result
        console.print(banner, style="bold yellow", markup=False, highlight=False)
    title = f"comparison: {run_id}" + (f"\n[bold yellow]not the spec's result: {trial['label']}" if trial else "")
    base = stats.get("baseline") if not stats.get("baseline_variant") else \
        f"{stats.get('baseline_variant')} (variants, on each target), {stats.get('baseline')} (targets)"
    table = _compact_table(title, f"baseline {base}; intervals 95%; Δ: Welch (measured apart) "
                           f"unless 'paired'; margin ±{stats.get('margin_pct', 5):g}%; gaps: repetitions that "
                           "reported late (seconds inside longer intervals) or twice in one second", [
                               ("target", True), ("thr", False), ("reps", False), (figure, False),
                               (f"{figure} 95% CI", False), ("vs base", False), ("Δ 95% CI", False),
                               ("verdict", True), (f"p{pct} ms", False),
                               *[(f"p{k} ms", False) for k in (DISTRIBUTION_COLUMNS if percentiles else ())],
                               ("steal%", False), ("gaps", True),
                               *([("caveats", True)] if any(r.get("caveats") for r in rows) else [])])
    for r in rows:
        tps, rel, lat = r["tps"], r.get("relative"), r["latency_step_pct_ms"]
        latency = (_fmt(lat["median"], 2) if lat.get("median") is not None
                   else f"{_fmt(lat.get('min'), 2)}–{_fmt(lat.get('max'), 2)}" if lat.get("min") is not None else "-")
        shown = {} if (rel or {}).get("refused") else (rel or {})  # a refused verdict shows no difference
        style = {"faster": "green", "slower": "red"}.get(str(shown.get("verdict")), "")
        table.add_row(r.get("label") or r["target_id"], str(r["threads"]), str(r["repetitions"]),
                      _num(_scaled(tps["mean"], scale)),
                      _range(_scaled(tps.get("ci_low"), scale), _scaled(tps.get("ci_high"), scale)),
                      _signed(shown.get("pct")),
                      _signed_range(shown.get("ci_low_pct"), shown.get("ci_high_pct")),
                      verdict_text(rel, short=True), latency,
                      *[_fmt(((r.get("latency_distribution_ms") or {}).get(k) or {}).get("median"), 2)
                        for k in (DISTRIBUTION_COLUMNS if percentiles else ())],
                      _fmt(r.get("steal_mean_pct"), 1), _gaps(r),
                      *([caveat_words(r.get("caveats"))] if any(x.get("caveats") for x in rows) else []),
                      style=style or None)
    console.print(table)
    print_refusals(rows)
    print_answer(summary.run_sentences(stats))
    print_cluster_status(doc)
    print_node_status(doc)
    if multiplicity_text(stats):
        console.print(multiplicity_text(stats))
    for line in order_lines(stats):
        console.print(line)
    if stats.get("caveats_count"):
        console.print(f"[yellow]caveats: {stats['caveats_count']} verdict(s) compare sides that differed in more "
                      "than the spec asked (steal, iowait, per-second gaps or fingerprint; figures above)")
    clients = sorted({t["target_id"] for t in doc.get("targets") or [] if t.get("steal_source") == "client"})
    if clients:
        console.print(f"steal % of {', '.join(clients)}: this machine's (the client's), not the server's")
    from benchfleet.stats.caveats import machine_note

    busy = machine_note((stats.get("run") or {}).get("machine"))
    if busy:
        console.print(Text(f"caveat: {busy}", style="yellow"))
    from benchfleet.cli import ui_cost
    from benchfleet.cost import pricing

    models = tuple(doc.get("pricing_models") or pricing.HEADLINE_MODELS)
    ui_cost.print_costs(console, stats, models, per_minute=figure == "tpmC")
    ui_cost.print_breakdown(console, stats, models)
    ui_cost.print_cross_zone(console, stats)
    ui_cost.print_speedup(console, stats)


def print_answer(sentences: list[str]) -> None:
    """The table's answer in plain sentences (benchfleet.report.summary, as the report's summary says them)."""
    for sentence in sentences:
        console.print(f"- {sentence}", markup=False, highlight=False)


def print_cluster_status(doc: dict[str, Any]) -> None:
    """Per cluster target (x variant) x threads, what its nodes said every second (benchfleet.stats.status)."""
    rows = (doc.get("status") or {}).get("cluster") or []
    if not rows:
        return
    table = _compact_table("cluster status per second (means over the measured seconds and repetitions)",
                           "fc paused: share of the time the most-paused node's replication was paused by "
                           "flow control; fc sent, cert fail, bf abort and MB repl.: per second, all nodes; "
                           "queues: the longest node's mean; silent: readings a node did not answer", [
                               ("target", True), ("thr", False), ("fc paused", False), ("fc sent/s", False),
                               ("recv q", False), ("send q", False), ("cert fail/s", False),
                               ("bf abort/s", False), ("MB repl./s", False), ("silent", False)])
    for r in rows:
        name = f"{r['target_id']} · {r['variant']}" if r.get("variant") else r["target_id"]
        table.add_row(name, str(r["threads"]), _pct(r.get("fc_paused_pct")), _num(r.get("fc_sent_per_s")),
                      _num(r.get("recv_queue")), _num(r.get("send_queue")), _num(r.get("cert_failures_per_s")),
                      _num(r.get("bf_aborts_per_s")), _num(r.get("replicated_mb_per_s")),
                      _fmt(int(r["unanswered"]) if r.get("unanswered") is not None else None))
    console.print(table)


def print_node_status(doc: dict[str, Any]) -> None:
    """Per cluster target (x variant) x threads x node, what each node said every second
    (benchfleet.stats.status.node_table): where the flow control, the queues and the bytes were."""
    rows = (doc.get("status") or {}).get("nodes") or []
    if not rows:
        return
    proxy = any(r.get("proxy_sessions") is not None for r in rows)
    table = _compact_table("cluster status per node (means over the measured seconds and repetitions)",
                           "fc %: share of the time the node's replication was paused by flow control; per "
                           "second: fc sent (flow-control messages the node sent), cert (certification failures), "
                           "bf (brute-force aborts), KiB replicated and received; sendq, recvq: write-sets "
                           "waiting" + ("; proxy: the proxy's open sessions to the node" if proxy else ""), [
                               ("target", True), ("thr", False), ("node", True), ("fc %", False),
                               ("fc sent", False), ("sendq", False), ("recvq", False), ("cert", False),
                               ("bf", False), ("repl KiB", False), ("recv KiB", False),
                               *([("proxy", False)] if proxy else [])])
    for r in rows:
        name = f"{r['target_id']} · {r['variant']}" if r.get("variant") else r["target_id"]
        table.add_row(name, str(r["threads"]), r["node"], _pct(r.get("fc_paused_pct")), _num(r.get("fc_sent_per_s")),
                      _num(r.get("send_queue")), _num(r.get("recv_queue")), _num(r.get("cert_failures_per_s")),
                      _num(r.get("bf_aborts_per_s")), _num(r.get("replicated_kib_per_s")),
                      _num(r.get("received_kib_per_s")), *([_num(r.get("proxy_sessions"))] if proxy else []))
    console.print(table)


def _pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}%"


def print_run_comparison(doc: dict[str, Any]) -> None:
    """``benchfleet compare``: the second run's targets against the first run's."""
    from benchfleet.stats.compare import compared_label

    table = _compact_table(f"{doc['run']} vs {doc['baseline_run']}", "intervals 95% (Welch: two runs never share "
                           f"a host's minute); margin ±{doc.get('margin_pct', 5):g}%", [
        ("target", True), ("vs", True), ("thr", False), ("reps", False), ("tps", False),
        ("baseline tps", False), ("change", False), ("Δ 95% CI", False), ("verdict", True),
        *([("caveats", True)] if any(r.get("caveats") for r in doc["rows"]) else [])])
    for r in doc["rows"]:
        rel = r["relative"]
        style = {"faster": "green", "slower": "red"}.get(str(rel.get("verdict")), "")
        table.add_row(compared_label(r), r["vs_target_id"], str(r["threads"]), str(r["repetitions"]),
                      _num(r["tps"]["mean"]), _num(r["baseline_tps"]["mean"]), _signed(rel.get("pct")),
                      _signed_range(rel.get("ci_low_pct"), rel.get("ci_high_pct")), verdict_text(rel),
                      *([caveat_words(r.get("caveats"))] if any(x.get("caveats") for x in doc["rows"]) else []),
                      style=style or None)
    console.print(table)
    print_answer(summary.pair_sentences(doc))  # the runs as the table's title names them: second vs first
    if multiplicity_text(doc):
        console.print(multiplicity_text(doc))
    if doc["unmatched"]:
        console.print(f"[yellow]not in both runs: {', '.join(doc['unmatched'])}")
    from benchfleet.cli import ui_cost
    from benchfleet.cost import pricing

    ui_cost.print_cost_comparison(console, doc, tuple(doc.get("pricing_models") or pricing.HEADLINE_MODELS))


def _gaps(row: dict[str, Any]) -> str:
    """Repetitions whose per-second data has seconds reported late or two reports in one printed second
    (never the final report sysbench silences as every run ends)."""
    return ",".join(f"r{s['repetition']}" for s in row.get("steps") or []
                    if s.get("gap") or s.get("duplicate_timestamps"))


def print_remote_run(run: dict[str, Any]) -> None:
    """One line per change of a cloud run: its status and each target's current step."""
    targets = run.get("targets") or []
    parts = []
    for t in targets if isinstance(targets, list) else []:
        if isinstance(t, dict):
            parts.append(f"{t.get('target_id')}: {t.get('status') or t.get('step') or '?'}")
    console.print(f"{run.get('run_id')}: {run.get('status')}" + (f" — {'; '.join(parts)}" if parts else ""))


def print_remote_runs(runs: list[dict[str, Any]]) -> None:
    table = Table(title="runs (deployed)")
    for col in ("run id", "name", "status", "started", "est. cost"):
        table.add_column(col)
    for r in runs:
        table.add_row(str(r.get("run_id")), str(r.get("name") or ""), str(r.get("status")),
                      str(r.get("started_at") or ""), f"${_fmt(r.get('estimated_cost_usd'), 2)}")
    console.print(table)


def print_checks(checks: list[Any]) -> None:
    """``benchfleet doctor``'s checks: what is fine, what warns and what would fail, with the fix."""
    table = Table(title="benchfleet doctor")
    for col in ("check", "", "detail", "to fix"):
        table.add_column(col)
    marks = {"ok": "[green]ok", "warn": "[yellow]warn", "fail": "[red]FAIL"}
    for c in checks:
        table.add_row(c.name, marks[c.status], c.detail, c.fix)
    console.print(table)
    failing = [c.name for c in checks if c.status == "fail"]
    console.print(f"[red]{len(failing)} would fail: {', '.join(failing)}" if failing else "[green]nothing would fail")
