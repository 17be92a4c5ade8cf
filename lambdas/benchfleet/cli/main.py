"""The ``benchfleet`` command (contract in DESIGN.md; tests and docs rely on it).

Exit codes: 0 success, 1 a run or command failed, 2 bad input (spec, arguments, files), 130 interrupted,
141 the reader of the output went away (``| head``), quietly, as for a tool SIGPIPE ended.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import select
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchfleet.cli.remote import RemoteError
from benchfleet.cost.pricing import plan_breakdowns, price_per_hour
from benchfleet.local.store import StoreError
from benchfleet.plan.model import Plan, make_plan
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import LoadedSpec, json_schema, load_spec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def home() -> Path:
    """The data dir: ``.benchfleet/`` under the current directory unless BENCHFLEET_HOME is set.
    Absolute: the server is started with its data directory under it, from another directory, and
    the agent takes only absolute paths (a relative BENCHFLEET_HOME failed every local run)."""
    return Path(os.environ.get("BENCHFLEET_HOME") or Path.cwd() / ".benchfleet").absolute()


def _load(path: str, scale: str = "full", local: bool = False) -> tuple[LoadedSpec, Plan]:
    from benchfleet.plan.scale import apply_scale, as_local

    loaded = apply_scale(load_spec(path), scale)
    if local and not loaded.spec.is_local:
        loaded = as_local(loaded)
    if loaded.spec.is_local:
        return loaded, make_plan(loaded, price_per_hour)
    # A cloud run: planned as the deployed state machine runs it, control plane included, every target
    # where it will run (one without a region: in the stack's home region, priced there).
    from benchfleet.aws.errors import PlanRejected
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.regions import TargetRegions
    from benchfleet.cost.catalogue import spec_problems

    # What exists on AWS (types, regions, engines, storage a type can hold), refused here as the API
    # and Plan refuse it, rather than after the spec has been sent.
    home = home_region()[0]
    problems = spec_problems(list(loaded.spec.targets), home_region=home)
    if problems:
        raise CliError(f"{path}: " + "; ".join(f"{field}: {message}" for field, message in problems), EXIT_USAGE)
    loaded = TargetRegions.of(home).resolve(loaded)
    try:
        plan, _, _ = runplan.aws_plan(loaded, price_per_hour, within=_caps())
    except PlanRejected as e:
        raise CliError(f"{path}: {e}", EXIT_USAGE) from None
    return loaded, plan


def home_region() -> tuple[str, str]:
    """The region the stack is deployed in, as this machine knows it, and where that came from:
    AWS_REGION, AWS_DEFAULT_REGION, the AWS configuration's region, else us-east-1 (said so)."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(name):
            return os.environ[name], name
    try:
        import boto3

        configured = boto3.session.Session().region_name
    except Exception:  # an unreadable AWS configuration: as if there were none
        configured = None
    if configured:
        return str(configured), "the AWS configuration's region"
    from benchfleet.cost.pricing import DEFAULT_REGION

    return DEFAULT_REGION, "no AWS region is configured here (set AWS_REGION to the stack's region)"


def _home_targets(path: str, plan: Plan) -> dict[str, Any] | None:
    """Which cloud targets of the spec as written name no region (they run in the home region)."""
    if plan.mode == "local":
        return None
    written = load_spec(path).spec.targets
    ids = [t.id for t in written if t.kind in ("ec2", "rds", "aurora", "cluster") and not getattr(t, "region", None)]
    if not ids:
        return None
    region, source = home_region()
    return {"region": region, "source": source, "targets": ids}


def _unpriced_problem(plan: Plan, loaded: LoadedSpec) -> str | None:
    """A cloud target the price tables cannot price is refused here as the deployed stack refuses it
    (benchfleet.cost.ceiling), naming the field and the region."""
    if plan.mode == "local":
        return None
    from benchfleet.cost.ceiling import unpriced_problems

    problems = unpriced_problems(plan, list(loaded.spec.targets))
    return f"{problems[0][0]}: {problems[0][1]}" if problems else None


def _caps() -> Any:
    """The deployment's per-region caps (its context keys maxVcpusPerRegion / maxHostsPerRegion), here
    from $BENCHFLEET_MAX_VCPUS_PER_REGION / $BENCHFLEET_MAX_HOSTS_PER_REGION, else the defaults."""
    from benchfleet.aws.planning import runplan

    def cap(name: str) -> int | None:
        value = os.environ.get(name, "")
        return int(value) if value.isdigit() and int(value) > 0 else None

    return runplan.caps(cap("BENCHFLEET_MAX_VCPUS_PER_REGION"), cap("BENCHFLEET_MAX_HOSTS_PER_REGION"))


def _fit_problem(plan: Plan) -> str | None:
    """Why the deployed state machine would refuse a cloud plan (its caps: ``_caps``), or the local
    runner a local one (a spacing it would not keep: it went by silently, repetitions back to back)."""
    if plan.mode == "local":
        from benchfleet.plan.model import spacing_problem

        return spacing_problem(plan, "the local runner")
    from benchfleet.aws.planning import runplan

    within = _caps()
    return runplan.fit_problem(plan, max_vcpus=within.max_vcpus, max_hosts=within.max_hosts)


# ---- commands -------------------------------------------------------------------------------------

def cmd_validate(args: argparse.Namespace) -> int:
    if args.schema and args.spec:  # the spec went unread and exit 0 read as "valid"
        raise CliError(f"validate takes SPEC or --schema, not both ({args.spec} was given with --schema)", EXIT_USAGE)
    if args.schema:
        print(json.dumps(json_schema(), indent=2))
        return EXIT_OK
    if not args.spec:
        raise CliError("validate needs a SPEC file (or --schema)", EXIT_USAGE)
    loaded, _ = _load(args.spec)
    # A local target's server options as doctor and run check them (the server here parses them).
    from benchfleet.local.preflight import server_option_problems

    problems, _ = server_option_problems(loaded)
    if problems:
        raise SpecError(loaded.source, problems)
    print(f"{args.spec}: valid: {len(loaded.spec.targets)} target(s) x workload {loaded.workload.name} "
          f"({len(loaded.workload.threads)} step(s)) x {loaded.spec.repetitions} repetition(s)")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    loaded, plan = _load(args.spec, args.scale, args.local)
    summary = plan.summary()
    problem = _unpriced_problem(plan, loaded) or _fit_problem(plan)
    summary["refused"] = problem
    summary["home_region"] = _home_targets(args.spec, plan)
    if plan.mode != "local":
        summary["prices"] = plan_breakdowns(loaded.spec.targets, home_region=home_region()[0])
    summary["resolution"] = _resolution(loaded, plan)
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        from benchfleet.cli.ui import print_plan

        print_plan(summary)
    if problem:
        raise CliError(f"{args.spec}: {problem}", EXIT_USAGE)
    return EXIT_OK


def _resolution(loaded: LoadedSpec, plan: Plan) -> dict[str, Any]:
    """How many repetitions resolve the spec's margin (benchfleet.stats.resolution): from the spec's
    calibration on this machine (local), or the published study's spread (cloud kinds)."""
    from benchfleet.stats.resolution import plan_resolution

    spec = loaded.spec
    calibration = None
    if plan.mode == "local" and (home() / "benchfleet.duckdb").exists():
        from benchfleet.local import calibration as cal
        from benchfleet.local.store import open_store

        try:
            with open_store(home(), write=False) as store:
                calibration = cal.worst(store.calibration(spec.name, cal.fingerprint(cal.machine())))
        except StoreError:  # a store plan cannot read is said by the commands that need it; plan needs none
            calibration = None
    return plan_resolution(spec, plan, calibration)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """The spec's baseline as an A/A experiment, ``--runs`` times (benchfleet.local.calibration); the
    variance components are stored for the spec and this machine, and ``plan`` uses them."""
    from benchfleet.cli.ui import RichObserver, console, print_calibration
    from benchfleet.local import calibration as cal
    from benchfleet.local.mariadb import reap_leftovers
    from benchfleet.local.preflight import preflight
    from benchfleet.local.runner import run_local
    from benchfleet.local.store import open_store
    from benchfleet.stats.resolution import components

    loaded = load_spec(args.spec)
    if not loaded.spec.is_local:
        kinds = sorted({t.kind for t in loaded.spec.targets})
        raise CliError(f"{args.spec}: calibrate measures this machine, and the spec's targets are {', '.join(kinds)}: "
                       "`plan` uses the published study's spread for cloud kinds", EXIT_USAGE)
    repetitions = args.repetitions or max(cal.MIN_CALIBRATION_REPETITIONS, loaded.spec.repetitions)
    aa = cal.aa_spec(loaded, repetitions)
    plan = make_plan(aa, price_per_hour)
    problem = _fit_problem(plan)
    if problem:
        raise CliError(f"{args.spec}: {problem}", EXIT_USAGE)
    console.print(f"calibration of {loaded.spec.name}: {args.runs} A/A runs of {aa.spec.targets[0].id} "
                  f"({repetitions} repetitions x {aa.spec.blocks} blocks of two identical variants), "
                  f"about {args.runs * plan.wall_s // 60} min")
    checked = preflight(aa)
    data = home()
    reap_leftovers(data)
    run_ids: list[str] = []
    with open_store(data) as store:
        for k in range(args.runs):
            observer = RichObserver(plan)
            with observer:
                for text in checked.notices:
                    observer.message(text)
                result = run_local(aa, plan, store, data, observer)
            if result.status != "succeeded":
                raise CliError(f"calibration run {k + 1} of {args.runs} ({result.run_id}) {result.status}: "
                               f"{result.message or ''}; nothing stored", EXIT_FAILED)
            run_ids.append(result.run_id)
        found = [u for run_id in run_ids for u in cal.units(store, run_id)]
        rows = [{"threads": threads, **components(units)} for threads, units in cal.by_threads(found).items()]
        here = cal.machine()
        store.replace_calibration(loaded.spec.name, cal.fingerprint(here), here, run_ids, rows)
    doc = {"spec": loaded.spec.name, "fingerprint": cal.fingerprint(here), "machine": here, "runs": run_ids,
           "components": rows}
    if args.format == "json":
        print(json.dumps(doc, indent=2, default=str))
    else:
        print_calibration(doc)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    if args.remote:
        return _run_remote(args)
    loaded, plan = _load(args.spec, args.scale, args.local)
    if not loaded.spec.is_local:
        raise CliError(f"{args.spec} has cloud targets: run it with --remote, or try it here with "
                       "--local --scale smoke (an existing server is then benchmarked from here)", EXIT_USAGE)
    if plan.over_budget:
        raise CliError(f"estimated cost ${plan.estimated_cost_usd:.2f} is over the budget "
                       f"${plan.budget_usd:.2f}", EXIT_USAGE)
    problem = _fit_problem(plan)
    if problem:
        raise CliError(f"{args.spec}: {problem}", EXIT_USAGE)
    from benchfleet.cli.ui import console
    from benchfleet.local.machine import EXIT_BUSY, MachineBusy, machine_lock
    from benchfleet.local.preflight import preflight

    checked = preflight(loaded)
    data = home()
    try:
        # Held from before the leftovers are reaped: another run's servers are not leftovers.
        with machine_lock(loaded.spec.name, wait=not args.no_wait,
                          say=lambda text: console.print(f"[yellow]{text}")):
            return _run_here(args, loaded, plan, checked, data)
    except MachineBusy as e:
        raise CliError(f"{e}; run again when it is done (without --no-wait, run waits for it)", EXIT_BUSY) from None


def _run_here(args: argparse.Namespace, loaded: LoadedSpec, plan: Plan, checked: Any, data: Path) -> int:
    from benchfleet.cli.ui import RichObserver, console, print_comparison
    from benchfleet.local.mariadb import reap_leftovers
    from benchfleet.local.runner import run_local
    from benchfleet.local.store import open_store

    removed = reap_leftovers(data)
    if removed:
        console.print(f"[yellow]removed {len(removed)} server(s) left by an earlier crash: {', '.join(removed)}")
    trial = _trial(args)
    with open_store(data) as store:
        observer = RichObserver(plan)
        with observer:
            for text in checked.notices:
                observer.message(text)
            result = run_local(loaded, plan, store, data, observer)
        if trial:
            store.set_spec(result.run_id, {**store.run(result.run_id)["spec"], "trial": trial})
        report = _write_report(store, result.run_id, None)
        print_comparison(result.run_id, _results(store, result.run_id))
        console.print(f"report: {report}")
        if result.status != "succeeded":
            from rich.markup import escape

            # The message quotes what failed (a log line like "[/path/haproxy.cfg:20] ..."): text, not markup.
            console.print(f"[red]run {result.run_id} {result.status}: {escape(result.message or '')}")
            return EXIT_FAILED
        console.print(f"run {result.run_id} succeeded")
    return EXIT_OK


def _trial(args: argparse.Namespace) -> dict[str, Any] | None:
    """The mark of a smoke or --local run (benchfleet.plan.scale.trial), from the spec as written."""
    if args.scale == "full" and not args.local:
        return None
    from benchfleet.plan.scale import trial

    return trial(load_spec(args.spec).spec, args.scale, args.local)


def _run_remote(args: argparse.Namespace) -> int:
    from benchfleet.cli import remote
    from benchfleet.cli.ui import console, print_remote_run

    loaded, plan = _load(args.spec, args.scale)
    if loaded.spec.is_local or any(t.kind == "local" for t in loaded.spec.targets):
        raise CliError("local targets run on this machine, not through the API: drop --remote", EXIT_USAGE)
    if plan.over_budget:
        raise CliError(f"estimated cost ${plan.estimated_cost_usd:.2f} is over the budget "
                       f"${plan.budget_usd:.2f}", EXIT_USAGE)
    problem = _unpriced_problem(plan, loaded) or _fit_problem(plan)
    if problem:
        raise CliError(f"{args.spec}: {problem}", EXIT_USAGE)
    for warning in plan.warnings:
        console.print(f"[yellow]warning: {warning}")
    run_id = remote.submit(loaded, args.api_url)
    console.print(f"submitted {run_id} (estimated ${plan.estimated_cost_usd:.2f}, about "
                  f"{plan.wall_s // 60} min); Ctrl-C stops watching, `benchfleet cancel {run_id}` stops the run")
    if args.no_wait:
        print(run_id)
        return EXIT_OK
    final = remote.wait(run_id, args.api_url, print_remote_run, poll_s=args.poll)
    # What the run measured, read back from S3 as `results --remote` reads it, and what it left: the
    # run's tags listed in every region it rented hosts in (a canary proves both).
    regions = sorted({h.region for t in plan.targets for h in t.hosts}) or [home_region()[0]]
    read_back = _read_back(run_id, args.api_url)
    left = _left_behind(run_id, regions)
    return EXIT_OK if final.get("status") == "SUCCEEDED" and read_back and not left else EXIT_FAILED


def _read_back(run_id: str, api_url: str | None) -> bool:
    """Load the ended run's raw output from S3 into the local store and print its results; False
    (said why) when they cannot be read back, so the leftovers are still listed after it."""
    from botocore.exceptions import BotoCoreError, ClientError

    from benchfleet.cli.ui import console, print_comparison
    from benchfleet.local.store import open_store

    try:
        with open_store(home()) as store:
            _sync_remote(run_id, api_url, store)
            print_comparison(run_id, _results(store, run_id))
        return True
    except (BotoCoreError, ClientError, RemoteError, StoreError, OSError) as e:
        from rich.markup import escape

        console.print(f"[red]run {run_id}'s results could not be read back: {escape(str(e))}")
        return False


def _left_behind(run_id: str, regions: list[str]) -> list[Any]:
    """What is still tagged with the run in ``regions`` (its teardown left it), printed."""
    import boto3

    from benchfleet.aws.fleet.leftovers import left_behind
    from benchfleet.cli.ui import console

    left = left_behind(run_id, regions, lambda service, region: boto3.client(service, region_name=region))
    for item in left:
        console.print(f"[red]left behind: {item.arn} ({item.state})")
    console.print(f"[red]run {run_id} left {len(left)} resource(s) in {', '.join(regions)}: see above, or wait for "
                  "the janitor" if left else f"nothing of run {run_id} is left (its tags listed in "
                  f"{', '.join(regions)})")
    return left


def _sync_remote(run_id: str, api_url: str | None, store: Any) -> str:
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


def cmd_cancel(args: argparse.Namespace) -> int:
    from benchfleet.cli import remote

    doc = remote.cancel(args.run, args.api_url)
    print(f"{args.run}: {doc.get('status', 'cancelled')}; its resources are being torn down")
    return EXIT_OK


def _write_report(store: Any, run_id: str, path: Path | None) -> Path:
    from benchfleet.report.html import ReportPathError, write_report

    target = path or home() / "reports" / f"{run_id}.html"
    try:
        return Path(write_report(store, run_id, target))
    except ReportPathError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    except OSError as e:
        raise CliError(f"{target}: cannot write the report: {e.strerror or e}", EXIT_FAILED) from None


def _results(store: Any, run_id: str) -> dict[str, Any]:
    from benchfleet.stats import comparison_table, run_comparison, status
    from benchfleet.stats.run import step_tps
    from benchfleet.stats.step_sql import step_stats_in_store

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
            run_id = _sync_remote(args.run, args.api_url, store) if args.remote else store.run(args.run)["run_id"]
            if args.per_second or args.status:
                _per_second(store, run_id, args.format, status=args.status)
                return EXIT_OK
            doc = _results(store, run_id)
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
            run_id = _sync_remote(args.run, args.api_url, store) if args.remote else store.run(args.run)["run_id"]
            base_id = None
            if args.against:
                base_id = _sync_remote(args.against, args.api_url, store) if args.remote else \
                    store.run(args.against)["run_id"]
        except RunNotFound as e:
            raise CliError(str(e), EXIT_USAGE) from None
        if base_id:
            _two_runs(base_id, run_id)
            path = _write_pair_report(store, base_id, run_id, args.output)
        else:
            path = _write_report(store, run_id, Path(args.output) if args.output else None)
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
        print_comparison(run_id, _results(store, run_id))
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    """What would fail, before anything is spent: here, or (--remote) the deployed stack and its account."""
    from benchfleet.cli import doctor, remote

    checks = doctor.local_checks(home())
    if args.spec and not args.remote:
        checks.append(_local_spec_check(args.spec))
    if args.remote:
        region = home_region()[0]
        types = None
        if args.spec:
            loaded, _ = _load(args.spec)
            types = doctor.spec_instance_types(loaded.spec.targets, region)
        client, credentials = doctor.session_clients(region)
        stack = args.stack or os.environ.get("BENCHFLEET_STACK") or remote.DEFAULT_STACK
        checks = doctor.remote_checks(client, stack=stack, region=region,
                                      api_url=args.api_url or os.environ.get("BENCHFLEET_API_URL"),
                                      credentials=credentials, instance_types=types)
    if args.format == "json":
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        from benchfleet.cli.ui import print_checks

        print_checks(checks)
    return EXIT_FAILED if doctor.failed(checks) else EXIT_OK


def _local_spec_check(path: str) -> Any:
    """``doctor SPEC`` here: the spec as ``run`` would load it (a spec that does not load is exit 2,
    naming the file and field, as everywhere), then what only this machine can tell about its local
    targets (``preflight``: server options the server refuses, an existing server that does not answer),
    a failed check. Without this the SPEC was read only with --remote and silently ignored here."""
    from benchfleet.cli.doctor import Check
    from benchfleet.local.preflight import preflight

    loaded, _ = _load(path)
    if not loaded.spec.is_local:
        return Check("spec", "warn", f"{path}: valid; it has cloud targets",
                     f"benchfleet doctor --remote {path} checks their instance types in their regions")
    try:
        checked = preflight(loaded)
    except SpecError as e:
        return Check("spec", "fail", str(e), "fix the fields named; `benchfleet run` refuses the spec until then")
    return Check("spec", "ok", "; ".join([f"{path}: its local targets can start here", *checked.notices]))


# ---- parser ---------------------------------------------------------------------------------------

def _runs_arg(text: str) -> int:
    """2..20 (argparse exits 2 naming the option otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 2 <= value <= 20:
        raise argparse.ArgumentTypeError(f"{value} is outside 2..20")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchfleet", description="Benchmark MySQL-compatible databases "
                                "with sysbench, on this machine or on AWS.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("validate", help="check a spec; exit 2 naming the field if it is wrong")
    s.add_argument("spec", nargs="?")
    s.add_argument("--schema", action="store_true", help="print the spec's JSON Schema")
    s.set_defaults(func=cmd_validate)

    for name, func, helptext in (("plan", cmd_plan, "steps, estimated wall time and cost"),
                                 ("run", cmd_run, "run a comparison")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("spec")
        s.add_argument("--scale", choices=("full", "smoke"), default="full",
                       help="smoke: a small version of the same comparison, under a minute locally")
        s.add_argument("--local", action="store_true", help="run here (cloud targets become local servers)")
        if name == "plan":
            s.add_argument("--format", choices=("table", "json"), default="table")
        else:
            _remote_args(s, "run through the deployed API")
            s.add_argument("--no-wait", action="store_true", help="with --remote: print the run id and return; "
                           "here: refuse (exit 75) instead of waiting while another local run holds this machine")
            s.add_argument("--poll", type=float, default=15.0, help="with --remote: seconds between status checks")
        s.set_defaults(func=func)

    s = sub.add_parser("calibrate", help="run the spec's baseline as an A/A experiment here and store its noise, "
                       "for plan")
    s.add_argument("spec")
    from benchfleet.local.calibration import DEFAULT_RUNS

    s.add_argument("--runs", type=_runs_arg, default=DEFAULT_RUNS, help=f"A/A runs, 2 to 20 (default {DEFAULT_RUNS}: "
                   "about ten minutes for the demo's spec)")
    s.add_argument("--repetitions", type=_runs_arg, default=None,
                   help="repetitions per run (default: the spec's, at least 3)")
    s.add_argument("--format", choices=("table", "json"), default="table")
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("runs", help="list runs")
    s.add_argument("--format", choices=("table", "json"), default="table")
    s.add_argument("--limit", type=int, default=100, help="with --remote: at most this many runs")
    _remote_args(s, "list the deployment's runs")
    s.set_defaults(func=cmd_runs)

    s = sub.add_parser("results", help="step summaries and comparison of a run")
    s.add_argument("run", nargs="?", help="run id (a unique prefix is enough locally)")
    s.add_argument("--format", choices=("table", "json", "csv"), default="table")
    s.add_argument("--history", metavar="NAME", help="trend and change points of runs named NAME; exit 1 when "
                   "the newest run lies after a drop that may exceed 10%%")
    s.add_argument("--per-second", action="store_true", help="every per-second sample (with --format csv or json)")
    s.add_argument("--percentiles", action="store_true",
                   help="the table adds each step's p50, p99 and p99.9 latency (median over repetitions)")
    _pricing_arg(s)
    s.add_argument("--status", action="store_true",
                   help="every server status reading: source, counter, value, rate (with --format csv or json)")
    _remote_args(s, "a cloud run: load its raw output from S3 first")
    s.set_defaults(func=cmd_results)

    s = sub.add_parser("compare", help="a second run against a first, per target x threads, with verdicts")
    s.add_argument("baseline_run", metavar="RUN", help="the run to compare against (id or unique prefix)")
    s.add_argument("run", metavar="RUN2", help="the run compared with it")
    s.add_argument("--format", choices=("table", "json"), default="table")
    s.add_argument("--report", action="store_true",
                   help="also write the HTML report of the two runs (-o FILE, default "
                        ".benchfleet/reports/<RUN2>-vs-<RUN>.html)")
    s.add_argument("-o", "--output", help="file the --report goes to")
    _pricing_arg(s)
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("report", help="write the self-contained HTML report of a run")
    s.add_argument("run")
    s.add_argument("--against", metavar="BASE", help="a report of two runs: RUN's targets against those of the "
                   "run BASE, with the verdicts of `compare BASE RUN`")
    s.add_argument("-o", "--output", help="file to write (default .benchfleet/reports/<run>.html, or "
                   "<run>-vs-<base>.html)")
    _remote_args(s, "a cloud run: load its raw output from S3 first")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("doctor", help="what would fail, before anything is spent; exit 1 if anything would")
    s.add_argument("spec", nargs="?", help="load it and check what this machine cannot run of it (server "
                   "options, existing servers); with --remote: its instance types in its regions")
    s.add_argument("--stack", help="the deployed stack's name (default: $BENCHFLEET_STACK, else Benchfleet)")
    s.add_argument("--format", choices=("table", "json"), default="table")
    _remote_args(s, "check the deployed stack and the account instead of this machine")
    s.set_defaults(func=cmd_doctor)

    s = sub.add_parser("cancel", help="stop a cloud run and tear its resources down")
    s.add_argument("run")
    _remote_args(s, None)
    s.set_defaults(func=cmd_cancel)

    s = sub.add_parser("import", help="import existing sysbench logs as a run, or as a target of one")
    s.add_argument("paths", nargs="+", metavar="PATH",
                   help="sysbench output files or folders of them; each folder is one repetition")
    s.add_argument("--target", required=True, help="target id the logs belong to")
    into = s.add_mutually_exclusive_group()
    into.add_argument("--run", help="name of a new run (default: import-<target>)")
    into.add_argument("--into", metavar="RUN", help="add the target to this existing run (id or unique prefix)")
    s.add_argument("--threads", type=int, help="thread count of logs that do not print it")
    s.add_argument("--instance-type", metavar="TYPE",
                   help="the EC2 instance type the logs ran on: prices the target and puts it in its family's "
                        "speedup table")
    s.add_argument("--region", help="with --instance-type: where it ran, for its price (default us-east-1)")
    s.set_defaults(func=cmd_import)
    return p


def _pricing_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pricing", metavar="MODELS",
                   help="pricing models of the cost table: comma-separated (on_demand, reserved_1y_no_upfront, "
                        "... reserved_3y_all_upfront, spot) or all; default on_demand,reserved_1y_all_upfront "
                        "(JSON has every model)")


def _models(args: argparse.Namespace) -> tuple[str, ...]:
    from benchfleet.cli.ui_cost import models_from

    try:
        return models_from(getattr(args, "pricing", None))
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None


def _remote_args(p: argparse.ArgumentParser, remote_help: str | None) -> None:
    if remote_help:
        p.add_argument("--remote", action="store_true", help=remote_help)
    p.add_argument("--api-url", help="the deployed API (default: $BENCHFLEET_API_URL, else the stack's ApiUrl)")


def _reader_gone() -> bool:
    """Whether stdout's reader went away (``benchfleet results ... | head -5``): not an error, so the
    command ends quietly, as a Unix tool SIGPIPE ends (Python ignores SIGPIPE: the write raised). A
    pipe whose reading end is closed polls as an error at its writing end; another broken pipe (a
    socket to a server) is an error as any other. What is still buffered goes nowhere: the interpreter
    flushes stdout at exit, which would complain on stderr."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if not any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
            return False
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
        return True
    except (OSError, ValueError, io.UnsupportedOperation):  # no file descriptor (captured), or closed
        return False


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a reader gone shows here, not in the interpreter's flush at exit
        return code
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except RemoteError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE if 400 <= e.status < 500 else EXIT_FAILED
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted: servers stopped and their data removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # the last line of defence: a message, never a stack trace
        if isinstance(e, BrokenPipeError) and _reader_gone():
            return EXIT_PIPE
        if os.environ.get("BENCHFLEET_DEBUG"):
            raise
        print(f"error: {type(e).__name__}: {e} (set BENCHFLEET_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
