"""``benchfleet run`` and ``cancel``: a comparison here (the local runner) or on a deployment (the API).

A local run prints its progress and its results, and writes its report; ``--remote`` starts the run
through the API, follows it, reads its results back into the local store and names anything it left
behind; a smoke (``--scale smoke``) or ``--local`` run of a cloud spec is marked as a trial.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchfleet.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, home
from benchfleet.cli.reading import run_results, sync_remote, write_run_report
from benchfleet.cli.remote import RemoteError
from benchfleet.cli.specs import fit_problem, home_region, load_plan, unpriced_problem
from benchfleet.local.store import StoreError
from benchfleet.plan.model import Plan
from benchfleet.spec.loading import LoadedSpec, load_spec


def cmd_run(args: argparse.Namespace) -> int:
    if args.remote:
        return _run_remote(args)
    loaded, plan = load_plan(args.spec, args.scale, args.local)
    if not loaded.spec.is_local:
        raise CliError(f"{args.spec} has cloud targets: run it with --remote, or try it here with "
                       "--local --scale smoke (an existing server is then benchmarked from here)", EXIT_USAGE)
    if plan.over_budget:
        raise CliError(f"estimated cost ${plan.estimated_cost_usd:.2f} is over the budget "
                       f"${plan.budget_usd:.2f}", EXIT_USAGE)
    problem = fit_problem(plan)
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
        report = write_run_report(store, result.run_id, None)
        print_comparison(result.run_id, run_results(store, result.run_id))
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

    loaded, plan = load_plan(args.spec, args.scale)
    if loaded.spec.is_local or any(t.kind == "local" for t in loaded.spec.targets):
        raise CliError("local targets run on this machine, not through the API: drop --remote", EXIT_USAGE)
    if plan.over_budget:
        raise CliError(f"estimated cost ${plan.estimated_cost_usd:.2f} is over the budget "
                       f"${plan.budget_usd:.2f}", EXIT_USAGE)
    problem = unpriced_problem(plan, loaded) or fit_problem(plan)
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
            sync_remote(run_id, api_url, store)
            print_comparison(run_id, run_results(store, run_id))
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


def cmd_cancel(args: argparse.Namespace) -> int:
    from benchfleet.cli import remote

    doc = remote.cancel(args.run, args.api_url)
    print(f"{args.run}: {doc.get('status', 'cancelled')}; its resources are being torn down")
    return EXIT_OK
