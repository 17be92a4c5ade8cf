"""The soak report's render time, before and after a change, side by side in one run (not part of the
unit suite).

The 200-target 24 h soak of report_scaling.py (17.3M per-second samples; generated once, or ``--store``
an existing one) is rendered by two code trees in alternation, each in a fresh subprocess: those of
``--before REF`` and of ``--after REF`` (this clone's ``lambdas`` when not given), taken with ``git
archive`` so that nothing in the clone changes and a rebase during the run changes nothing measured. Alternating
(before, after, before, after...) puts both under the same machine load; the medians and their ratio are
what to read on a shared machine. Each render reports its wall time, CPU time (user + system, the
process and DuckDB's threads) and peak resident memory; the two HTML files are compared byte for byte
(the change must not drop or alter anything the report shows).

Prints ``name=value`` lines: ``before_s``, ``after_s``, ``after_over_before_s`` (below 1 is faster),
the same for ``cpu_s`` and ``peak_mb``, ``html_mb`` and ``same_html`` (1 when identical).

    .venv/bin/python tests/perf/report_before_after.py --before REF [--after REF] [--rounds 3] [--store PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_scaling import RUN_ID, SIZES  # noqa: E402


def build(tree: Path, db: Path, out: Path) -> None:
    """Render the report with the code of ``tree`` (its ``lambdas`` first on the path)."""
    sys.path.insert(0, str(tree / "lambdas"))
    start = time.perf_counter()
    from benchfleet.local.store import DuckDBStore
    from benchfleet.report.html import write_report

    assert Path(sys.modules["benchfleet"].__file__ or "").is_relative_to(tree), "imported another tree"
    store = DuckDBStore(db)
    try:
        write_report(store, RUN_ID, out)
    finally:
        store.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                      "peak_mb": usage.ru_maxrss / 1024}))


def _tree(ref: str, where: Path) -> Path:
    """The ``lambdas`` of ``ref`` under ``where`` (git archive: the clone is not touched)."""
    where.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "lambdas"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    return where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="git ref of the code to compare with (e.g. the commit before the change)")
    parser.add_argument("--after", help="git ref of the changed code (default: this clone's working tree)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", type=Path, help="an existing soak store (report_scaling.py --keep DIR: DIR/17m/"
                        "benchfleet.duckdb); generated in a temporary directory otherwise")
    parser.add_argument("--_build", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._build:
        build(*map(Path, args._build))
        return 0
    if not args.before:
        parser.error("--before REF is required")

    with tempfile.TemporaryDirectory(prefix="report-before-after-") as tmp:
        work = Path(tmp)
        before = _tree(args.before, work / "before")
        after = _tree(args.after, work / "after") if args.after else REPO
        db = args.store
        if db is None:
            db = work / "benchfleet.duckdb"
            subprocess.run([sys.executable, str(REPO / "tests/perf/report_scaling.py"), "--_generate", str(db),
                            *map(str, SIZES["17m"])], check=True)
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            for name, tree in (("before", before), ("after", after)):
                done = subprocess.run([sys.executable, __file__, "--_build", str(tree), str(db),
                                       str(work / f"{name}.html")], check=True, capture_output=True, text=True)
                runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"{name}: {runs[name][-1]}", file=sys.stderr, flush=True)
        same = (work / "before.html").read_bytes() == (work / "after.html").read_bytes()
        html_mb = (work / "after.html").stat().st_size / 1e6
    for key in ("s", "cpu_s", "peak_mb"):
        b, a = (statistics.median(r[key] for r in runs[n]) for n in ("before", "after"))
        print(f"before_{key}={b:.2f}\nafter_{key}={a:.2f}\nafter_over_before_{key}={a / b:.2f}")
    print(f"html_mb={html_mb:.2f}\nsame_html={int(same)}\nrounds={args.rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
