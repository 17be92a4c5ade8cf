"""Whether two variants ran with settings that differ as the spec says: a verdict between two servers
that ran alike is refused. Standard library only (Lambdas import benchfleet.stats).

Each measured step of a variant records the settings the spec varies (``requested``) beside the values
the server reported it ran with (``effective``, read back before the step; benchfleet.workload.records
StepSummary.settings). A server may not take a value: MariaDB raises innodb_io_capacity = 50 to its
minimum of 100, so variants ``io100`` and ``io50`` ran two identical servers, and the paired verdict
("inconclusive +9.6%") compared noise with noise under the spec's labels. A caveat does not cover that:
the question the verdict answers was never measured. So the verdict carries ``refused`` (beside its
words, which stay the statistics' own) and every view shows the refusal instead of the verdict.

The rule, per setting the two variants ask different values of: when the values the server ran with on
the two sides share one (the sides' steps, normalised as benchfleet.workload.mysqlcnf compares settings), the
variants did not differ as the spec says. A setting no server variable shows (``effective`` null) is
not judged: nothing reads back what it did (the step says so as ``unverified``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from benchfleet.workload.mysqlcnf import normalised


def _ran(summaries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[set[str], set[str] | None]]:
    """setting -> (values asked, values the server ran with; None when a step could not read it back)."""
    out: dict[str, tuple[set[str], set[str] | None]] = {}
    for summary in summaries:
        settings = summary.get("settings")
        if isinstance(settings, str):  # a store that keeps it as JSON text (Athena, Timestream)
            settings = json.loads(settings)
        if not isinstance(settings, Mapping):
            continue
        effective = settings.get("effective") or {}
        for option, wanted in (settings.get("requested") or {}).items():
            name = str(option).replace("-", "_")
            asked, had = out.setdefault(name, (set(), set()))
            asked.add(normalised(wanted))
            have = effective.get(name)
            if have is None or had is None:
                out[name] = (asked, None)
            else:
                had.add(normalised(have))
    return out


def refusal(candidate: Iterable[Mapping[str, Any]], baseline: Iterable[Mapping[str, Any]],
            names: tuple[str, str]) -> dict[str, Any] | None:
    """The refusal of a verdict between two variants of one target (``candidate`` and ``baseline``: their
    measured step summaries; ``names``: the two variants' ids), or None when every setting the spec
    varies between them ran differently on the two sides. Keys: ``kind`` ("settings"), ``settings``
    (one per setting: ``option``, ``requested`` and ``effective`` per side) and ``words``."""
    mine, theirs = _ran(candidate), _ran(baseline)
    same: list[dict[str, Any]] = []
    said: list[str] = []
    for name in sorted(set(mine) & set(theirs)):
        (asked, had), (base_asked, base_had) = mine[name], theirs[name]
        if asked == base_asked or had is None or base_had is None or not had & base_had:
            continue
        same.append({"option": name, "requested": {names[0]: sorted(asked), names[1]: sorted(base_asked)},
                     "effective": {names[0]: sorted(had), names[1]: sorted(base_had)}})
        said.append(f"{name} asked {'/'.join(sorted(asked))} ({names[0]}) and {'/'.join(sorted(base_asked))} "
                    f"({names[1]}), the server ran {'/'.join(sorted(had & base_had))} for both")
    if not same:
        return None
    return {"kind": "settings", "settings": same,
            "words": f"no verdict: the variants did not differ as the spec says ({'; '.join(said)})"}
