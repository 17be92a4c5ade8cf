"""The answer first: one plain sentence per comparison, as the report's summary and the terminal's
last lines say it (issue 38).

Every sentence is built from the verdict objects' fields (``benchfleet.stats.verdict.Relative`` as the
rows carry it: ``verdict``, ``pct``, ``ci_low_pct``/``ci_high_pct``, ``design``, ``unit``, ``pairs``,
``repetitions``, ``within_margin``, ``margin_pct``, ``repetitions_needed``, ``words``), never by
reading the words back: a new verdict category or new words flow through as the verdict says them.
Also the words of one table row (``verdict_text``) and of a speedup group (``speedup_title``), which
the terminal and the report print alike. No library beyond stats.verdict: the command imports this
for its sentences without loading the report's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

# A table's short name of a design ("paired (3 reps, 6 blocks)"), not this module's sentence form.
from benchfleet.stats.verdict import design_words as design_label

Row = Mapping[str, Any]

# Verdicts whose interval decides: the sentence names the direction and its size.
_DIRECTIONS = ("faster", "slower")


def threads_words(threads: int) -> str:
    """'1 thread', '8 threads'."""
    return f"{threads} thread{'' if threads == 1 else 's'}"


def signed(value: float) -> str:
    """+34%, -6%, +1.5%: whole percents from 10 up."""
    return f"{value:+,.0f}%" if abs(value) >= 10 else f"{value:+.1f}%"


def _size(value: float) -> str:
    return f"{abs(value):,.0f}%" if abs(value) >= 10 else f"{abs(value):.1f}%"


def design_words(rel: Row) -> str:
    """How the verdict was reached: 'paired over 3 repetitions', 'measured apart, 3 repetitions each'."""
    if rel.get("design") == "paired":
        unit = str(rel.get("unit") or "unit")
        n = rel.get("pairs") or 0
        return f"paired over {n} {unit}{'' if n == 1 else 's'}"
    reps = list(rel.get("repetitions") or [])
    if len(reps) == 2 and reps[0] == reps[1]:
        return f"measured apart, {reps[0]} repetition{'' if reps[0] == 1 else 's'} each"
    return "measured apart, " + " and ".join(str(r) for r in reps) + " repetitions"


def _interval(rel: Row) -> str:
    conf = round(100 * float(rel.get("confidence") or 0.95))
    if rel.get("ci_low_pct") is None or rel.get("ci_high_pct") is None:
        return f"no interval, {design_words(rel)}"
    return f"{conf}% interval {signed(rel['ci_low_pct'])} to {signed(rel['ci_high_pct'])}, {design_words(rel)}"


def _needed(rel: Row) -> str:
    """The repetitions (measured apart: per side) or pairs (their unit) that would decide."""
    n = int(rel["repetitions_needed"])
    if rel.get("design") == "paired":
        return f"{n} {rel.get('unit') or 'pair'}{'' if n == 1 else 's'}"
    return f"{n} repetitions each"


def clause(rel: Row, candidate: str, baseline: str, threads: int, named: bool) -> str:
    """One verdict at one thread count. ``named``: the clause names both sides (the sentence's first);
    otherwise it continues a sentence that did."""
    verdict = str(rel.get("verdict"))
    at = f"at {threads_words(threads)}"
    pct = rel.get("pct")
    if verdict in _DIRECTIONS and pct is not None:
        within = f", within ±{float(rel.get('margin_pct') or 5):g}%" if rel.get("within_margin") else ""
        if not named:
            return f"{_size(pct)} {verdict} {at} ({_interval(rel)}{within})"
        return f"{candidate} is {_size(pct)} {verdict} than {baseline} {at} ({_interval(rel)}{within})"
    who = f"{candidate} and {baseline}" if named else "they"
    diff = f"the difference between {candidate} and {baseline}" if named else "the difference"
    if verdict == "equivalent":
        return f"{at} {who} are equivalent within ±{float(rel.get('margin_pct') or 5):g}% ({_interval(rel)})"
    if verdict == "inconclusive":
        more = f"; about {_needed(rel)} would decide" if rel.get("repetitions_needed") else ""
        return f"{at} {diff} is inconclusive ({_interval(rel)}{more})"
    if verdict == "too few repetitions":
        reps = list(rel.get("repetitions") or [])
        seen = f"{signed(pct)} seen, " if pct is not None else ""
        apart = f" {candidate} from {baseline}" if named else ""
        return (f"{at} there are too few repetitions to tell{apart} ({seen}{min(reps) if reps else '?'} on the smaller "
                f"side; {_interval(rel)})")
    if verdict == "insufficient data":
        return f"{at} {diff} cannot be measured (a side has no throughput)"
    # A verdict this module does not know (a new category): said in its own words, with its interval.
    return f"{at} {diff}: {rel.get('words') or verdict} ({_interval(rel)})"


def _bare(rel: Row) -> bool:
    """Too few repetitions for any interval."""
    return str(rel.get("verdict")) == "too few repetitions" and rel.get("ci_low_pct") is None


def _bare_clause(rels: list[Row], candidate: str, baseline: str, threads: list[int], named: bool) -> str:
    """Several thread counts with too few repetitions for an interval, in one clause."""
    counts = ", ".join(str(t) for t in threads[:-1]) + f" and {threads[-1]}"
    seen = ", ".join(signed(r["pct"]) if r.get("pct") is not None else "?" for r in rels)
    apart = f" {candidate} from {baseline}" if named else ""
    designs = list(dict.fromkeys(design_words(r) for r in rels))
    return (f"at {counts} threads there are too few repetitions to tell{apart} ({seen} seen; no interval, "
            f"{'; '.join(designs)})")


def sentences(rows: Iterable[Row], name_of: Callable[[Any], str], baseline_of: Callable[[Any], str]) -> list[str]:
    """One sentence per compared series (a candidate against its baseline), its thread counts as
    clauses: the decisive ones first, then the rest, each in thread order. Rows without a verdict
    (the baseline's own) say nothing."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.get("relative"):
            groups.setdefault((name_of(row), baseline_of(row)), []).append(row)
    out = []
    for (candidate, baseline), mine in groups.items():
        ordered = sorted(mine, key=lambda r: (str(r["relative"].get("verdict")) not in _DIRECTIONS, r["threads"]))
        # Thread counts with too few repetitions and no interval say the same: one clause for them all.
        bare = [r for r in ordered if _bare(r["relative"])]
        merged = {id(r) for r in bare} if len(bare) > 1 else set()
        parts: list[str] = []
        for r in ordered:
            if id(r) in merged:
                if r is bare[0]:
                    parts.append(_bare_clause([x["relative"] for x in bare], candidate, baseline,
                                              [int(x["threads"]) for x in bare], named=not parts))
                continue
            parts.append(clause(r["relative"], candidate, baseline, int(r["threads"]), named=not parts))
        out.append("; ".join(parts) + ".")  # never capitalised: a series' name is spelled as the spec does
    return out


def run_sentences(stats: Mapping[str, Any]) -> list[str]:
    """The sentences of one run's comparison (``statistics`` of ``results``: its rows' verdicts against
    the baseline target or variant)."""
    rows: Sequence[Row] = stats.get("rows") or []
    names = {(r["target_id"], r.get("variant") or ""): str(r.get("label") or r["target_id"]) for r in rows}

    def baseline_of(row: Row) -> str:
        rel = row["relative"]
        key = (rel.get("vs") or row["target_id"], rel.get("vs_variant") or "")
        return names.get(key) or " · ".join(k for k in key if k)

    return sentences(rows, lambda r: str(r.get("label") or r["target_id"]), baseline_of)


# How the sentences of two runs name them where their names do not tell them apart (the same spec run
# twice: the labels would be two long run ids in every clause); the page's title and the table name them.
RUN_ORDINALS = ("the first run", "the second run")


def pair_sentences(pair: Mapping[str, Any], labels: tuple[str, str] = RUN_ORDINALS) -> list[str]:
    """The sentences of ``compare``: each series of the second run against the same series of the first,
    the runs called by ``labels`` (baseline, compared)."""
    def series(row: Row, target: str) -> str:
        return f"{target}/{row['variant']}" if row.get("variant") else target

    return sentences(pair.get("rows") or [], lambda r: f"{series(r, r['target_id'])} in {labels[1]}",
                     lambda r: f"in {labels[0]}" if r["target_id"] == r["vs_target_id"]
                     else f"{series(r, r['vs_target_id'])} in {labels[0]}")


def caveat_lines(rows: Iterable[Row], name_of: Callable[[Any], str], words: Callable[[Any], str],
                 multiplicity: Mapping[str, Any] | None = None) -> list[str]:
    """What qualifies the sentences: each verdict whose sides differed in more than the spec asked
    (its caveats, in ``words``' wording), and how many claims chance alone would make."""
    rows = list(rows)
    out = [f"{name_of(r)} at {threads_words(int(r['threads']))}: {words(r['caveats'])}"
           for r in rows if r.get("relative") and r.get("caveats")]
    # Blocks of one repetition share its server and its moment: their spread is not a run's noise.
    single = [r for r in rows if (r.get("relative") or {}).get("design") == "paired"
              and (r.get("relative") or {}).get("unit") == "block" and r.get("repetitions") == 1]
    if single:
        out.append(f"{', '.join(dict.fromkeys(name_of(r) for r in single))}: paired over the blocks of one "
                   "repetition, whose interval is their spread on one server at one time, not what another "
                   "run would measure; more repetitions tell that")
    if multiplicity and multiplicity.get("comparisons"):
        out.append(str(multiplicity["words"]))
    return out


def run_banner(run: Mapping[str, Any], trial: Mapping[str, Any] | None) -> str | None:
    """What a reader must know before any figure: the run did not finish (aborted, failed, interrupted,
    still running), or it is not the spec's result (a smoke run)."""
    parts = []
    status = str(run.get("status") or "")
    if status and status != "succeeded":
        message = f": {run['message']}" if run.get("message") else ""
        parts.append(f"This run {'is still running' if status == 'running' else f'ended {status}'}{message}; "
                     "its figures are of the steps it finished.")
    if trial:
        parts.append(f"Not the spec's result: {trial.get('label')}. It shows that the comparison runs, not how "
                     "the targets compare.")
    return " ".join(parts) or None


def verdict_text(relative: dict[str, Any] | None, short: bool = False) -> str:
    """What a comparison row says about its target against the baseline, in words (the verdict's own
    ``words``, benchfleet.stats.verdict), marked ``paired:`` when the design was paired and followed by
    the repetitions that would decide an inconclusive one."""
    if not relative:
        return "baseline"
    if relative.get("refused"):  # benchfleet.stats.settings_refusal: the words, never the verdict
        # ``short``: a terminal table's cell; print_refusals says why under the table.
        return "no verdict (see below)" if short else str(relative["refused"]["words"])
    words = str(relative.get("words") or relative.get("verdict"))
    needed = relative.get("repetitions_needed")
    if relative.get("verdict") == "inconclusive" and needed:
        words += f" ~{needed} reps"
    return f"{design_label(relative)}: {words}" if relative.get("design") == "paired" else words


def speedup_title(group: dict[str, Any]) -> str:
    """A speedup group named by its targets, each with its size: 'c6g-2xlarge (8 vCPUs) against
    c6g-large (2)' (the group's key, 'existing:c6g', names no target a reader gave)."""
    sizes = {r["target_id"]: r["size"] for r in group["rows"]}
    others = [t for t in sizes if t != group["baseline_target"]]
    unit = "CPUs" if str(group["group"]).startswith("local:") else "vCPUs"
    return (", ".join(f"{t} ({sizes[t]:g} {unit})" for t in others)
            + f" against {group['baseline_target']} ({sizes[group['baseline_target']]:g})")
