"""The ``benchfleet`` command (contract in DESIGN.md; tests and docs rely on it).

Exit codes: 0 success, 1 a run or command failed, 2 bad input (spec, arguments, files), 130 interrupted,
141 the reader of the output went away (``| head``), quietly, as for a tool SIGPIPE ended.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import select
import sys
from collections.abc import Sequence
from typing import Any

from benchfleet.cli.base import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PIPE, EXIT_USAGE, CliError, home
from benchfleet.cli.reading import cmd_compare, cmd_import, cmd_report, cmd_results, cmd_runs
from benchfleet.cli.remote import RemoteError
from benchfleet.cli.running import cmd_cancel, cmd_run
from benchfleet.cli.specs import fit_problem, home_region, home_targets, load_plan, unpriced_problem
from benchfleet.cost.pricing import plan_breakdowns, price_per_hour
from benchfleet.local.store import StoreError
from benchfleet.plan.model import Plan, make_plan
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import LoadedSpec, json_schema, load_spec

# ---- commands -------------------------------------------------------------------------------------

def cmd_validate(args: argparse.Namespace) -> int:
    if args.schema and args.spec:  # the spec went unread and exit 0 read as "valid"
        raise CliError(f"validate takes SPEC or --schema, not both ({args.spec} was given with --schema)", EXIT_USAGE)
    if args.schema:
        print(json.dumps(json_schema(), indent=2))
        return EXIT_OK
    if not args.spec:
        raise CliError("validate needs a SPEC file (or --schema)", EXIT_USAGE)
    loaded, _ = load_plan(args.spec)
    # A local target's server options as doctor and run check them (the server here parses them).
    from benchfleet.local.preflight import server_option_problems

    problems, _ = server_option_problems(loaded)
    if problems:
        raise SpecError(loaded.source, problems)
    print(f"{args.spec}: valid: {len(loaded.spec.targets)} target(s) x workload {loaded.workload.name} "
          f"({len(loaded.workload.threads)} step(s)) x {loaded.spec.repetitions} repetition(s)")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    loaded, plan = load_plan(args.spec, args.scale, args.local)
    summary = plan.summary()
    problem = unpriced_problem(plan, loaded) or fit_problem(plan)
    summary["refused"] = problem
    summary["home_region"] = home_targets(args.spec, plan)
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
    problem = fit_problem(plan)
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
            loaded, _ = load_plan(args.spec)
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

    loaded, _ = load_plan(path)
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
