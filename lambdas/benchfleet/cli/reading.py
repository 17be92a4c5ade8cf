"""The commands that read stored runs: ``runs``, ``results`` (tables, CSV/JSON, per second, history),
``compare``, ``report`` and ``import``.

Everything is read from the local DuckDB store; a ``--remote`` run is first synced from its raw
output in S3 (``sync_remote``) so the same figures are read the same way.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from benchfleet.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, home


def sync_remote(run_id: str, api_url: str | None, store: Any) -> str:
    """Load a cloud run's raw output from S3 into the local store (unless a final copy is there
    already); results and report then work as for a local run."""
    import boto3

    from benchfleet.cli import remote
    from benchfleet.local import rawsync

    return rawsync.load_run(boto3.client("s3"), _results_bucket(), run_id,
                            lambda run: remote.get_run(run, api_url), store, home())


def _results_bucket() -> str:
    """The deployment's results bucket: $BENCHFLEET_BUCKET, else the stack's output."""
    import boto3

    from benchfleet.cli import remote
    from benchfleet.local import rawsync

    stack = os.environ.get("BENCHFLEET_STACK") or remote.DEFAULT_STACK
    return os.environ.get("BENCHFLEET_BUCKET") or rawsync.bucket_from_stack(boto3.client("cloudformation"), stack)


def write_run_report(store: Any, run_id: str, path: Path | None) -> Path:
    from benchfleet.report.html import ReportPathError, write_report

    target = path or home() / "reports" / f"{run_id}.html"
    try:
        return Path(write_report(store, run_id, target))
    except ReportPathError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    except OSError as e:
        raise CliError(f"{target}: cannot write the report: {e.strerror or e}", EXIT_FAILED) from None


def run_results(store: Any, run_id: str) -> dict[str, Any]:
    from benchfleet.stats import comparison_table, run_comparison, status
    from benchfleet.stats.step_sql import step_stats_in_store
    from benchfleet.stats.steps import step_tps

    run = store.run(run_id)
    summaries = store.summaries(run["run_id"])
    # A measured step's tps is the figure every table and verdict uses (its ramp left out); sysbench's
    # whole-step figure is summary_tps. This export called sysbench's figure "tps": the CSV said 1879.77
    # where the table said 1,815 for the same step.
    measured = {(s["target_id"], int(s["repetition"]), s["step"]): s for s in step_stats_in_store(store, run["run_id"])}

    def tps_of(summary: dict[str, Any]) -> Any:
        found = measured.get((summary["target_id"], int(summary["repetition"]), summary["step"]))
        figure = step_tps(summary, found) if found is not None else None
        return round(figure, 2) if figure is not None else summary.get("tps")

    doc: dict[str, Any] = {
        "run": {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in run.items() if k != "spec"},
        "steps": [{**{k: s.get(k) for k in ("target_id", "variant", "repetition", "block", "step", "threads",
                                            "phase")},
                   "tps": tps_of(s), "summary_tps": s.get("tps"),
                   **{k: s.get(k) for k in ("qps", "latency_pct", "latency_pct_ms", "samples", "samples_expected",
                                            "covered_s", "missing_final", "tps_cv", "steal_mean_pct",
                                            "errors_per_s", "reconnects_per_s", "total_time_s",
                                            "latency_percentiles_ms", "tpmc")}}
                  for s in summaries],
        "targets": [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in t.items()}
                    for t in store.targets(run["run_id"])],
    }
    doc["statistics"] = run_comparison(store, run["run_id"])
    doc["comparison"] = comparison_table(doc["statistics"]["rows"])
    steps = status.per_step(store, run["run_id"])
    counters = status.counter_table(steps)
    doc["status"] = {"counters": counters, "cluster": status.cluster_table(steps), "nodes": status.node_table(counters)}
    # A smoke or --local run says so on every row (the CSV has no other place for it).
    label = (doc["statistics"].get("trial") or {}).get("label")
    doc["run"]["trial"] = label
    for step in doc["steps"]:
        step["trial"] = label
    return doc


def cmd_runs(args: argparse.Namespace) -> int:
    from benchfleet.local.store import open_store

    if args.remote:
        from benchfleet.cli import remote

        runs = remote.list_runs(args.api_url, limit=args.limit)
        if args.format == "json":
            print(json.dumps(runs, indent=2, default=str))
        else:
            from benchfleet.cli.ui import print_remote_runs

            print_remote_runs(runs)
        return EXIT_OK
    with open_store(home(), write=False) as store:
        runs = store.runs()
    if args.format == "json":
        print(json.dumps(runs, indent=2, default=str))
        return EXIT_OK
    from benchfleet.cli.ui import print_runs

    print_runs(runs)
    return EXIT_OK


def cmd_results(args: argparse.Namespace) -> int:
    from benchfleet.local.store import RunNotFound, open_store

    if args.history:
        return _history(args)
    if not args.run:
        raise CliError("results needs a RUN (or --history NAME)", EXIT_USAGE)
    if args.per_second and args.status:
        raise CliError("--per-second and --status are two exports: give one", EXIT_USAGE)
    if (args.per_second or args.status) and args.format not in ("csv", "json"):
        flag = "--per-second prints every sample" if args.per_second else "--status prints every status reading"
        raise CliError(f"{flag}: use --format csv or json", EXIT_USAGE)
    models = _models(args)
    with open_store(home(), write=args.remote) as store:
        try:
            run_id = sync_remote(args.run, args.api_url, store) if args.remote else store.run(args.run)["run_id"]
            if args.per_second or args.status:
                _per_second(store, run_id, args.format, status=args.status)
                return EXIT_OK
            doc = run_results(store, run_id)
        except RunNotFound as e:
            raise CliError(str(e), EXIT_USAGE) from None
    if args.format == "json":
        print(json.dumps(doc, indent=2, default=str))
    elif args.format == "csv":
        print(_csv(doc["steps"]), end="")
    else:
        from benchfleet.cli.ui import print_comparison

        print_comparison(doc["run"]["run_id"], {**doc, "pricing_models": models}, percentiles=args.percentiles)
    return EXIT_OK


def _per_second(store: Any, run_id: str, fmt: str, *, status: bool = False) -> None:
    """Every sample (or, with ``status``, every status reading) of a run, warm-up and measure, one row
    each: the data behind the charts. Written as it is read, batch by batch, so the export of a long soak needs no more
    memory than one batch (the JSON is still one array)."""
    out = sys.stdout
    first = True
    if not status and not store.query("SELECT 1 FROM samples WHERE run_id = ? LIMIT 1", [run_id]):
        run = store.run(run_id)
        if run.get("mode") == "import":
            raise CliError(f"run {run_id} has no per-second samples (imported logs without --report-interval "
                           "lines have none): its step summaries are in `results`", EXIT_FAILED)
        # A run that ended before its first measured second: say how it ended, not that it was imported.
        raise CliError(f"run {run_id} has no per-second samples: it is {run.get('status')}"
                       + (f" ({run['message']})" if run.get("message") else ""), EXIT_FAILED)
    for batch in store.status_batches(run_id) if status else store.sample_batches(run_id):
        rows = [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()} for r in batch]
        if fmt == "csv":
            writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
            if first:
                writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                out.write(("[\n" if first else ",\n") + json.dumps(row, default=str))
                first = False
        first = False
    if fmt == "json":
        out.write("[]\n" if first else "\n]\n")


def cmd_compare(args: argparse.Namespace) -> int:
    from benchfleet.local.store import RunNotFound, open_store

    models = _models(args)
    from benchfleet.stats import run_comparison
    from benchfleet.stats.compare import compare_runs
    from benchfleet.stats.history import noise_from_store

    with open_store(home(), write=False) as store:  # reads only: a read-only home is fine
        try:
            docs = [run_comparison(store, run) for run in (args.baseline_run, args.run)]
        except RunNotFound as e:
            raise CliError(str(e), EXIT_USAGE) from None
        _two_runs(docs[0]["run"]["run_id"], docs[1]["run"]["run_id"])
        doc = compare_runs(docs[0], docs[1], noise=noise_from_store(store, docs[1]))
    if not doc["rows"]:
        raise CliError(f"runs {doc['baseline_run']} and {doc['run']} have no target x threads in common "
                       "(same target ids, or one target each; the same variants)", EXIT_USAGE)
    if args.format == "json":
        print(json.dumps(doc, indent=2, default=str))
    else:
        from benchfleet.cli.ui import print_run_comparison

        print_run_comparison({**doc, "pricing_models": models})
    if args.report:
        with open_store(home(), write=False) as store:
            path = _write_pair_report(store, doc["baseline_run"], doc["run"], args.output)
        print(path, file=sys.stderr if args.format == "json" else sys.stdout)
    return EXIT_OK


def _two_runs(baseline_run: str, run: str) -> None:
    """A run against itself would show every difference as 0 with an interval, as if measured: refused."""
    if baseline_run == run:
        raise CliError(f"both runs are {run}: compare a run with another one", EXIT_USAGE)


def _write_pair_report(store: Any, baseline_run: str, run: str, output: str | None) -> Path:
    from benchfleet.report.html import ReportPathError
    from benchfleet.report.pair import NothingInCommon, write_pair_report

    target = Path(output) if output else home() / "reports" / f"{run}-vs-{baseline_run}.html"
    try:
        return write_pair_report(store, baseline_run, run, target)
    except (NothingInCommon, ReportPathError) as e:
        raise CliError(str(e), EXIT_USAGE) from None
    except OSError as e:
        raise CliError(f"{target}: cannot write the report: {e.strerror or e}", EXIT_FAILED) from None


HISTORY_REMOTE_RUNS = 30  # the newest succeeded runs a remote history loads


def _history(args: argparse.Namespace) -> int:
    """The trend of consecutive runs of one comparison (or schedule) name, regressions flagged. With
    --remote, the last HISTORY_REMOTE_RUNS succeeded runs of that name are first loaded from what the
    cloud stores (the agents' raw output and spec.json, as ``results RUN --remote`` loads one run):
    summary.json holds per-step outcomes, not the comparison. A run still running or without raw
    output is skipped, one line each on stderr. Either way every run's points are its
    ``run_comparison`` from the local store: one definition of a run's figures for both."""
    from benchfleet.local.store import open_store
    from benchfleet.stats import history as hist
    from benchfleet.stats import run_comparison

    points, trials = [], 0
    skipped: list[tuple[str, str]] = []
    with open_store(home(), write=args.remote) as store:
        if args.remote:
            import boto3

            from benchfleet.cli import remote
            from benchfleet.local import rawsync

            # When the run started in the cloud (the API's), not when it was loaded here: the order.
            loaded = rawsync.load_history(boto3.client("s3"), _results_bucket(),
                                          remote.iter_runs(args.api_url, name=args.history), store, home(),
                                          HISTORY_REMOTE_RUNS)
            started, skipped = loaded.started, loaded.skipped
            for run_id, reason in skipped:
                print(f"skipped {run_id}: {reason}", file=sys.stderr)
        else:
            started = {run["run_id"]: run["started_at"] for run in store.runs()
                       if run["name"] == args.history and run["status"] == "succeeded"}
        for run_id, started_at in started.items():
            doc = run_comparison(store, run_id)
            if doc.get("trial"):
                trials += 1
                continue  # a smoke or stand-in run says nothing about the spec's trend
            points += hist.points_from_comparison(doc, run_id=run_id, started_at=started_at)
    where = "in the cloud" if args.remote else "here"
    few = hist.too_few_runs(args.history, len({p.run_id for p in points}), where)
    if not points:
        if trials:  # not "no runs": there are, and the user should learn why none counts
            raise CliError(f"the {trials} succeeded run(s) named {args.history!r} {where} are all trials (smoke scale "
                           "or --local stand-ins), which say nothing about the spec's trend: run it at full scale",
                           EXIT_USAGE)
        raise CliError(str(few), EXIT_USAGE)
    if few:
        print(f"note: {few}", file=sys.stderr)
    doc = hist.history(args.history, points, skipped=skipped)
    if args.format == "json":
        print(json.dumps(doc, indent=2, default=str))
    else:
        print(hist.render_text(doc), end="")
    return EXIT_FAILED if doc["latest_regressions"] else EXIT_OK


def _csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        # A cell holding an object (a step's latency distribution) as JSON, not Python's repr.
        writer.writerows({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def cmd_report(args: argparse.Namespace) -> int:
    from benchfleet.local.store import RunNotFound, open_store

    with open_store(home(), write=args.remote) as store:
        try:
            run_id = sync_remote(args.run, args.api_url, store) if args.remote else store.run(args.run)["run_id"]
            base_id = None
            if args.against:
                base_id = sync_remote(args.against, args.api_url, store) if args.remote else \
                    store.run(args.against)["run_id"]
        except RunNotFound as e:
            raise CliError(str(e), EXIT_USAGE) from None
        if base_id:
            _two_runs(base_id, run_id)
            path = _write_pair_report(store, base_id, run_id, args.output)
        else:
            path = write_run_report(store, run_id, Path(args.output) if args.output else None)
    print(path)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from benchfleet.cli.ui import print_comparison
    from benchfleet.local.importer import ImportRefused, import_logs
    from benchfleet.local.store import open_store

    with open_store(home()) as store:
        try:
            run_id = import_logs(store, [Path(p) for p in args.paths], args.target, args.run, args.into,
                                 args.threads, args.instance_type, args.region,
                                 notice=lambda text: print(f"warning: {text}", file=sys.stderr))
        except ImportRefused as e:
            raise CliError(str(e), EXIT_USAGE) from None
        print_comparison(run_id, run_results(store, run_id))
    return EXIT_OK


def _models(args: argparse.Namespace) -> tuple[str, ...]:
    from benchfleet.cli.ui_cost import models_from

    try:
        return models_from(getattr(args, "pricing", None))
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
