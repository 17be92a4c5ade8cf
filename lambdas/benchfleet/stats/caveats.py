"""Caveats of a verdict: what differed between the two sides of a comparison besides what the spec
asked to compare, with the figures. Standard library only (Lambdas import benchfleet.stats).

A verdict says how sure the difference is; it cannot say whether the difference is the one the spec
asked about. When the compared sides ran under different CPU steal or iowait, lost different shares of
their per-second data, or ran on a different kernel, engine version, sysbench version or CPU model,
part of the difference may be that. Each caveat is computed from the stored figures and carries them,
so the terminal and the report say "steal 3.2% vs 0.04%", never a generic excuse.

Thresholds (beyond them a caveat is raised):

- ``steal``: the mean per-second CPU steal of the two sides differs by at least STEAL_PP percentage
  points (1 point of steal takes about 1% of the CPU the database had);
- ``iowait``: the mean per-second iowait differs by at least IOWAIT_PP points (a configuration that
  flushes more waits more: then the caveat names the mechanism rather than a confound, and says so
  only by its figures);
- ``gaps``: the share of seconds sysbench reported late (known only inside longer intervals) differs by
  at least GAP_PP points;
- ``workload`` (two runs compared): the spec workloads differ in anything but their name and
  description (``workload_caveat``);
- ``settings`` (two runs compared): a target's server variables as its servers reported running them
  (``server_settings`` of the run documents) differ, each with both values, or its configuration's hash
  does (``settings_caveat``);
- ``machine`` (two runs compared, local runs): a run overlapped another benchmark on its machine, or the
  runs' mean 1-minute load averages are LOAD_PER_CPU per CPU or more apart (``machine_caveats``);
- fingerprint (``kernel``, ``engine_version``, ``sysbench_version``, ``cpu_model``): the sets of values
  recorded over the two sides' repetitions differ. ``cpu_model`` only when the sides were given the
  same instance type (different types are expected to differ in CPU: that is the question), and
  ``engine_version`` only when they were given the same engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

STEAL_PP = 1.0
IOWAIT_PP = 5.0
GAP_PP = 2.0
LOAD_PER_CPU = 0.5
FINGERPRINT_FIELDS = (("kernel", "kernel"), ("engine_version", "engine version"),
                      ("sysbench_version", "sysbench"), ("cpu_model", "CPU model"))


def _values(target: Mapping[str, Any] | None, key: str) -> list[str]:
    """Distinct values of one fingerprint field over a target's repetitions, in order."""
    out: list[str] = []
    for f in (target or {}).get("fingerprints") or []:
        v = f.get(key)
        if v not in (None, "") and str(v) not in out:
            out.append(str(v))
    return out


def _missing_share(row: Mapping[str, Any]) -> tuple[float, int, int] | None:
    """(% of the expected per-second samples known only inside longer intervals, steps with a gap, steps)
    of a row's steps: ``reported_late`` where the step says it (sysbench's silenced final report is
    normal and not counted), else expected less present."""
    steps = [s for s in row.get("steps") or [] if s.get("samples_expected")]
    if not steps:
        return None
    expected = sum(int(s["samples_expected"]) for s in steps)
    late = sum(int(s["reported_late"]) if s.get("reported_late") is not None
               else max(0, int(s["samples_expected"]) - int(s.get("samples") or 0)) for s in steps)
    return 100 * late / expected, sum(1 for s in steps if s.get("gap")), len(steps)


def _given(target: Mapping[str, Any] | None, key: str) -> Any:
    return (target or {}).get(key)


def row_caveats(row: Mapping[str, Any], base: Mapping[str, Any], target: Mapping[str, Any] | None,
                base_target: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The caveats of ``row``'s verdict against ``base`` (comparison rows of one thread count, with
    ``steal_mean_pct``, ``iowait_mean_pct`` and ``steps``), ``target``/``base_target`` their comparison
    targets (fingerprints, given instance type and engine). Each caveat: ``kind``, ``candidate``,
    ``baseline`` (the figures), ``threshold`` (None for fingerprint fields) and ``words``."""
    out: list[dict[str, Any]] = []

    def level(kind: str, mine: float | None, theirs: float | None, threshold: float, what: str) -> None:
        if mine is None or theirs is None or abs(mine - theirs) < threshold:
            return
        out.append({"kind": kind, "candidate": round(mine, 3), "baseline": round(theirs, 3), "threshold": threshold,
                    "words": f"{what} {_pct(mine)} vs {_pct(theirs)}"})

    level("steal", row.get("steal_mean_pct"), base.get("steal_mean_pct"), STEAL_PP, "steal")
    level("iowait", row.get("iowait_mean_pct"), base.get("iowait_mean_pct"), IOWAIT_PP, "iowait")
    mine, theirs = _missing_share(row), _missing_share(base)
    if mine and theirs and abs(mine[0] - theirs[0]) >= GAP_PP:
        out.append({"kind": "gaps", "candidate": round(mine[0], 2), "baseline": round(theirs[0], 2),
                    "threshold": GAP_PP,
                    "words": f"seconds reported late {mine[0]:.1f}% ({mine[1]} of {mine[2]} steps) vs "
                             f"{theirs[0]:.1f}% ({theirs[1]} of {theirs[2]})"})
    same_type = (_given(target, "instance_type") or _given(target, "instance_class")) == (
        _given(base_target, "instance_type") or _given(base_target, "instance_class"))
    same_engine = _given(target, "engine") == _given(base_target, "engine")
    for key, what in FINGERPRINT_FIELDS:
        if (key == "cpu_model" and not same_type) or (key == "engine_version" and not same_engine):
            continue
        a, b = _values(target, key), _values(base_target, key)
        if a and b and set(a) != set(b):
            out.append({"kind": key, "candidate": " | ".join(a), "baseline": " | ".join(b), "threshold": None,
                        "words": f"{what} {' | '.join(a)} vs {' | '.join(b)}"})
    return out


# A workload's keys that only name or describe it: two runs of one workload under other names measure
# the same thing.
_WORKLOAD_LABELS = ("name", "description")


def workload_caveat(workload: Any, base_workload: Any) -> dict[str, Any] | None:
    """Two runs compared (``compare``, ``report --against``) whose spec workloads differ in what they
    measure (test, table size, step length, options...): the caveat naming each differing key with both
    values, or None when they measure alike (or a side does not say). A verdict across such runs is
    about the workloads as much as the runs."""
    if not isinstance(workload, Mapping) or not isinstance(base_workload, Mapping):
        return None
    keys = [k for k in dict.fromkeys([*base_workload, *workload]) if k not in _WORKLOAD_LABELS
            and workload.get(k) != base_workload.get(k)]
    if not keys:
        return None
    shown = ", ".join(f"{k} {workload.get(k)!s} vs {base_workload.get(k)!s}" for k in keys[:4])
    more = f" and {len(keys) - 4} more" if len(keys) > 4 else ""
    return {"kind": "workload", "candidate": {k: workload.get(k) for k in keys},
            "baseline": {k: base_workload.get(k) for k in keys}, "threshold": None,
            "words": f"workload {shown}{more}"}


def settings_caveat(settings: Mapping[str, Any] | None, base_settings: Mapping[str, Any] | None,
                    target: Mapping[str, Any] | None = None,
                    base_target: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Two runs' servers of one target ran with other settings: the variables recorded on either side
    whose values differ (a variable one side did not record reads "not recorded": it ran with the
    server's default), and a different configuration hash. None when they agree (or nothing is known)."""
    mine, theirs = dict(settings or {}), dict(base_settings or {})
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    hashes = _values(target, "config_hash"), _values(base_target, "config_hash")
    if not keys and not (hashes[0] and hashes[1] and set(hashes[0]) != set(hashes[1])):
        return None
    shown = [f"{k} {mine.get(k, 'not recorded')} vs {theirs.get(k, 'not recorded')}" for k in keys[:5]]
    if len(keys) > 5:
        shown.append(f"{len(keys) - 5} more")
    if not keys:
        shown.append("configuration " + " vs ".join(" | ".join(h[:12] for h in side) for side in hashes))
    return {"kind": "settings", "candidate": {k: mine.get(k) for k in keys},
            "baseline": {k: theirs.get(k) for k in keys}, "threshold": None,
            "words": "server settings as run: " + ", ".join(shown)}


def machine_caveats(machine: Mapping[str, Any] | None, base_machine: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """What the machine did during two local runs (``runs.machine``, benchfleet.local.machine): a run
    that overlapped another benchmark, and load averages LOAD_PER_CPU per CPU or more apart."""
    out: list[dict[str, Any]] = []
    for side, m in (("candidate", machine), ("baseline", base_machine)):
        others = (m or {}).get("overlapped") or []
        if others:
            out.append({"kind": "overlap", side: others, "threshold": None,
                        "words": f"the {'run' if side == 'candidate' else 'baseline run'} overlapped another "
                                 f"benchmark: {overlap_words(others)}"})
    a, b = (machine or {}).get("load_mean"), (base_machine or {}).get("load_mean")
    cpus = (machine or {}).get("cpus") or (base_machine or {}).get("cpus") or 1
    if a is not None and b is not None and abs(a - b) >= LOAD_PER_CPU * cpus:
        out.append({"kind": "load", "candidate": a, "baseline": b, "threshold": LOAD_PER_CPU * cpus,
                    "words": f"load average {a:.2f} vs {b:.2f} ({cpus} CPUs)"})
    return out


def overlap_words(others: Sequence[Mapping[str, Any]]) -> str:
    """Foreign benchmark processes in a few words: one is named by pid and command; more (sysbench
    starts anew for every step) are counted by command and test, e.g. "5 processes: sysbench
    oltp_read_write x4, sysbench oltp_read_only x1" (each pid and command line stays in the JSON)."""
    if len(others) == 1:
        return f"pid {others[0].get('pid')} {others[0].get('command')}"
    counts: dict[str, int] = {}
    for o in others:
        head = " ".join(str(o.get("command") or "").split()[:2]) or "?"
        counts[head] = counts.get(head, 0) + 1
    return f"{len(others)} processes: " + ", ".join(f"{k} x{n}" for k, n in counts.items())


def machine_note(machine: Mapping[str, Any] | None) -> str | None:
    """What a run's own results say of its machine: that it overlapped another benchmark, or that the
    machine was busier than its CPUs (mean load average above their count), with the figures."""
    if not machine:
        return None
    said = []
    others = machine.get("overlapped") or []
    if others:
        said.append(f"overlapped another benchmark on this machine: {overlap_words(others)}")
    load, cpus = machine.get("load_mean"), machine.get("cpus")
    if load is not None and cpus and load > cpus:
        said.append(f"load average {load:.2f} (max {machine.get('load_max')}) on {cpus} CPUs")
    return "this run " + "; ".join(said) if said else None


def between_runs(doc: Mapping[str, Any], base_doc: Mapping[str, Any], target_id: str,
                 base_target_id: str) -> list[dict[str, Any]]:
    """The caveats every verdict between two runs carries besides its row's (``row_caveats``): what
    the workload, the servers' settings as they ran and the machine did differently. ``doc`` and
    ``base_doc`` are run comparison documents."""
    targets = {t["target_id"]: t for t in doc.get("targets") or []}
    base_targets = {t["target_id"]: t for t in base_doc.get("targets") or []}
    out = [c for c in (
        workload_caveat(doc.get("workload"), base_doc.get("workload")),
        settings_caveat((doc.get("server_settings") or {}).get(target_id),
                        (base_doc.get("server_settings") or {}).get(base_target_id),
                        targets.get(target_id), base_targets.get(base_target_id)),
    ) if c]
    return out + machine_caveats((doc.get("run") or {}).get("machine"), (base_doc.get("run") or {}).get("machine"))


SETTINGS_SQL = """
SELECT target_id, repetition, server_variables FROM targets
WHERE run_id = ? AND server_variables IS NOT NULL ORDER BY target_id, repetition
"""


def settings_by_target(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """The result of SETTINGS_SQL: per target, each variable as its servers reported running it (the
    values of its repetitions joined with " | " where they differ)."""
    seen: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        raw = r.get("server_variables")
        found = json.loads(raw) if isinstance(raw, str) else raw
        for k, v in (found or {}).items():
            values = seen.setdefault(str(r["target_id"]), {}).setdefault(str(k), [])
            if str(v) not in values:
                values.append(str(v))
    return {t: {k: " | ".join(v) for k, v in found.items()} for t, found in seen.items()}


def _pct(value: float) -> str:
    """A share in % with as many decimals as a small one needs to be told from 0."""
    return f"{value:.2f}%" if abs(value) < 1 else f"{value:.1f}%"


def attach(comparison: dict[str, Any], iowait: Mapping[tuple[str, str, int], float] | None = None) -> None:
    """Add ``iowait_mean_pct`` to every row of a comparison document (``iowait`` maps (target, variant,
    threads) to mean per-second iowait %), ``caveats`` (a list, empty when none) to every row, against
    the row its verdict was taken against (``relative.vs`` and ``relative.vs_variant``), and
    ``caveats_count`` (rows with a caveat) to the document."""
    rows = comparison.get("rows") or []
    for row in rows:
        row["iowait_mean_pct"] = (iowait or {}).get((row["target_id"], row.get("variant") or "", row["threads"]))
    targets = {t["target_id"]: t for t in comparison.get("targets") or []}
    index = {(r["target_id"], r.get("variant") or "", r["threads"]): r for r in rows}
    found = 0
    for row in rows:
        rel = row.get("relative")
        row["caveats"] = []
        if not rel:
            continue
        key = (row["target_id"], row.get("variant") or "", row["threads"])
        base_key = (rel.get("vs") or "", rel.get("vs_variant") or "", row["threads"])
        base = index.get(base_key)
        if base is None:
            continue
        row["caveats"] = row_caveats(row, base, targets.get(key[0]), targets.get(base_key[0]))
        found += bool(row["caveats"])
    comparison["caveats_count"] = found


def words(caveats: Iterable[Mapping[str, Any]] | None) -> str:
    """One line of a row's caveats: 'differs: steal 3.2% vs 0.04%; kernel a vs b'."""
    items = [str(c["words"]) for c in caveats or []]
    return ("differs: " + "; ".join(items)) if items else ""


IOWAIT_SQL = """
SELECT target_id, {variant} AS variant, threads, avg(cpu_iowait_pct) AS iowait
FROM samples WHERE run_id = ? AND phase = 'measure' AND cpu_iowait_pct IS NOT NULL
GROUP BY ALL
"""


def iowait_by_row(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], float]:
    """The result of IOWAIT_SQL as the map :func:`attach` takes."""
    return {(str(r["target_id"]), str(r.get("variant") or ""), int(r["threads"])): float(r["iowait"])
            for r in rows if r.get("iowait") is not None}
