"""benchfleet agent: rows in the table, second by second, for workloads whose every event inserts one row.

iiBench (seed 001) reports the insert rate against the rows already in the table. benchfleet's insert
scripts (workloads/lua/benchfleet_common.lua) make one sysbench event one single-row INSERT, so the
rows in the table are the prepared rows plus every event since; the job says so with ``rows``:
``{"prepared": tables x table_size, "state_dir": ...}``. The count lives in a small file per run,
target, repetition, database and workload on the host that holds the table (``state_dir``):

- the prepare step writes the prepared rows once sysbench has loaded them;
- each run step starts from the file, adds each interval's events (tps x its length) to give every
  sample its ``rows_in_table`` at the end of that second, and at the end writes back the exact figure:
  the count at its start plus the step's transactions from sysbench's final summary.

A step whose file is missing (no prepare on this host) has no ``rows_in_table``; nothing is guessed.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Optional

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class RowCounter:
    def __init__(self, job: Dict[str, Any]) -> None:
        spec = job.get("rows") if isinstance(job.get("rows"), dict) else None
        if spec is not None and not spec.get("state_dir"):
            spec = None  # nowhere to keep the count between steps: not counted
        self.enabled = spec is not None
        self.prepared = int(spec.get("prepared") or 0) if spec else 0
        self.path: Optional[str] = None
        if spec:
            # The table's own identity: with variants each has its data set (db.database) on one host.
            database = (job.get("db") or {}).get("database") or "default"
            parts = [str(job.get("run_id")), str(job.get("target_id")), "rep-{}".format(job.get("repetition")),
                     str(database), str(job.get("workload"))]
            if all(_SAFE.match(p) and ".." not in p for p in parts):
                self.path = os.path.join(str(spec["state_dir"]), *parts[:4], parts[4] + ".rows.json")
        self.rows: Optional[float] = None
        self.last_second = 0.0

    def prepared_now(self) -> None:
        """The prepare step loaded the tables: the count starts at the prepared rows."""
        if self.enabled:
            self._write(self.prepared)

    def start(self) -> None:
        if not self.enabled or self.path is None:
            return
        try:
            with open(self.path) as f:
                self.rows = float(json.load(f)["rows"])
        except (OSError, ValueError, KeyError, TypeError):
            self.rows = None

    def sample(self, second: float, tps: float) -> Optional[int]:
        """Rows in the table at the end of this interval (sysbench's ``second``)."""
        if self.rows is None:
            return None
        self.rows += tps * max(0.0, second - self.last_second)
        self.last_second = second
        return round(self.rows)

    def finish(self, transactions: int, started_with: Optional[float]) -> None:
        """The exact count after the step: its start plus sysbench's own transaction count."""
        if started_with is not None:
            self._write(started_with + transactions)

    def _write(self, rows: float) -> None:
        if self.path is None:
            return
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        with open(self.path + ".tmp", "w") as f:
            json.dump({"rows": int(rows)}, f)
        os.replace(self.path + ".tmp", self.path)
