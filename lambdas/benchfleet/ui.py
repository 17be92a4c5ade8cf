"""What the CLI draws: live progress of a local run and the tables it prints (rich)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchfleet.plan import Plan, PlanStep
from benchfleet.pricing import DEFAULT_REGION
from benchfleet.records import AgentOutput

# Off a terminal (CI logs, pipes) rich would assume 80 columns and fold the tables.
console = Console(width=None if sys.stdout.isatty() else 160)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


class RichObserver:
    """Progress: one bar for the whole run, one for the current step with its live tps."""

    def __init__(self, plan: Plan) -> None:
        self.total = sum(t.total_s for t in plan.targets)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                                 TimeElapsedColumn(), console=console, transient=False)
        self.run_task: TaskID | None = None
        self.step_task: TaskID | None = None
        self.done_s = 0

    def __enter__(self) -> RichObserver:
        self.progress.start()
        self.run_task = self.progress.add_task("run", total=self.total, info="")
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def target_started(self, target_id: str, repetition: int, steps: list[PlanStep]) -> None:
        self.progress.console.print(f"[bold]{target_id}[/] repetition {repetition}: starting MariaDB")

    def step_started(self, target_id: str, repetition: int, step: PlanStep) -> None:
        if self.step_task is not None:
            self.progress.remove_task(self.step_task)
        label = f"{target_id} rep {repetition} {step.name}"
        self.step_task = self.progress.add_task(label, total=step.duration_s, info="")

    def sample(self, target_id: str, step: PlanStep, second: float, tps: float) -> None:
        if self.step_task is not None:
            self.progress.update(self.step_task, completed=second, info=f"{tps:,.0f} tps")

    def step_finished(self, target_id: str, repetition: int, step: PlanStep, output: AgentOutput) -> None:
        assert self.run_task is not None
        self.done_s += step.estimated_s
        self.progress.update(self.run_task, completed=min(self.done_s, self.total))
        for s in output.summaries:
            pct = f"p{s.latency_pct}" if s.latency_pct else "lat"
            self.progress.console.print(
                f"  {target_id} rep {repetition} {step.name:>8}: {s.tps:,.1f} tps, {s.qps:,.0f} qps, "
                f"{pct} {_fmt(s.latency_pct_ms, 2)} ms, {s.samples} samples, steal {_fmt(s.steal_mean_pct, 2)}%")

    def message(self, text: str) -> None:
        self.progress.console.print(f"[yellow]{text}")


# A cloud target without a region runs in the region the stack is deployed in, unknown offline.
HOME_REGION_LABEL = "(home)"


def print_plan(summary: dict[str, Any]) -> None:
    table = Table(title=f"plan: {summary['name']} ({summary['mode']}, workload {summary['workload']})")
    for col in ("target", "kind", "region", "steps", "per repetition", "repetitions", "$/hour", "est. cost"):
        table.add_column(col, justify="right" if col not in ("target", "kind", "region", "steps") else "left")
    for t in summary["targets"]:
        steps = ", ".join(s["name"] for s in t["steps"])
        # Never "$0" nor a blank for a target the price tables do not know: say so.
        no_price = t["price_per_hour"] is None
        table.add_row(t["target_id"], t["kind"], t.get("region") or HOME_REGION_LABEL, steps,
                      _duration(t["repetition_s"]), str(summary["repetitions"]),
                      "unpriced" if no_price else _fmt(t["price_per_hour"], 3),
                      "unpriced" if no_price else f"${_fmt(t['estimated_cost_usd'], 2)}")
    console.print(table)
    unpriced = len(summary["unpriced_targets"])
    console.print(f"estimated wall time {_duration(summary['wall_s'])}, estimated cost "
                  f"${summary['estimated_cost_usd']:.2f}"
                  + (f" + {unpriced} target{'s' if unpriced > 1 else ''} unpriced" if unpriced else "")
                  + (f" (budget ${summary['budget_usd']:.2f})" if summary["budget_usd"] is not None else ""))
    if summary["unpriced_targets"]:
        console.print(f"[yellow]no price known for: {', '.join(summary['unpriced_targets'])}")
    if any(t.get("region") is None for t in summary["targets"]):
        console.print(f"{HOME_REGION_LABEL}: the deployed stack's region; priced here at "
                      f"{DEFAULT_REGION} list prices")
    if summary["over_budget"]:
        console.print("[red]over budget: `benchfleet run` will refuse to start")


def _duration(seconds: int) -> str:
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def print_runs(runs: list[dict[str, Any]]) -> None:
    table = Table(title="runs")
    for col in ("run id", "name", "status", "mode", "started", "est. cost", "message"):
        table.add_column(col)
    for r in runs:
        table.add_row(r["run_id"], r["name"], r["status"], r["mode"], f"{r['started_at']:%Y-%m-%d %H:%M}",
                      f"${_fmt(r['estimated_cost_usd'], 2)}", (r.get("message") or "")[:60])
    console.print(table)


def print_comparison(run_id: str, doc: dict[str, Any]) -> None:
    """Per target x threads: tps mean with min-max across repetitions, qps, latency percentile, steal."""
    rows = doc["comparison"]
    pct = next((r["latency_pct"] for r in rows if r["latency_pct"]), 95)
    table = Table(title=f"comparison: {run_id}")
    for col in ("target", "threads", "reps", "tps mean", "tps min–max", "qps mean", f"p{pct} ms (median)",
                "steal %", "samples"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for r in rows:
        table.add_row(r["target_id"], str(r["threads"]), str(r["repetitions"]), _fmt(r["tps_mean"]),
                      f"{_fmt(r['tps_min'])}–{_fmt(r['tps_max'])}", _fmt(r["qps_mean"], 0),
                      _fmt(r["latency_pct_ms_median"], 2), _fmt(r["steal_mean_pct"], 2), str(r["samples"]))
    console.print(table)


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
