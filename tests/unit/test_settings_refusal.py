"""benchfleet.stats.settings_refusal: a verdict between two variants whose servers ran a setting the spec
varies with the same value is refused (issue 41 item 3; the real run is in
tests/integration/test_local_variants.py)."""

from __future__ import annotations

import json
from typing import Any

from benchfleet.stats.settings_refusal import refusal


def step(requested: dict[str, str], effective: dict[str, Any], *, as_text: bool = False) -> dict[str, Any]:
    settings = {"variant": "v", "method": "set-global", "requested": requested, "effective": effective}
    return {"settings": json.dumps(settings) if as_text else settings}


def test_a_setting_both_servers_ran_alike_refuses_the_verdict_also_from_a_cloud_store() -> None:
    io50 = [step({"innodb_io_capacity": "50"}, {"innodb_io_capacity": "100"}, as_text=True)]
    io100 = [step({"innodb_io_capacity": "100"}, {"innodb_io_capacity": "100"}, as_text=True)]
    found = refusal(io50, io100, ("io50", "io100"))
    assert found is not None and found["kind"] == "settings"
    assert [s["option"] for s in found["settings"]] == ["innodb_io_capacity"]


def test_settings_that_ran_as_asked_or_cannot_be_read_back_leave_the_verdict() -> None:
    base = [step({"innodb_max_dirty_pages_pct": "90"}, {"innodb_max_dirty_pages_pct": "90.000000"})]
    took = [step({"innodb_max_dirty_pages_pct": "50"}, {"innodb_max_dirty_pages_pct": "50.000000"})]
    assert refusal(took, base, ("low", "high")) is None
    unread = [step({"skip_log_bin": ""}, {"skip_log_bin": None})]
    assert refusal(unread, [step({"skip_log_bin": "x"}, {"skip_log_bin": None})], ("a", "b")) is None
    # The same value asked on both sides is not what the variants compare (a memory share, say).
    same = [step({"table_open_cache": "4000"}, {"table_open_cache": "2000"})]
    assert refusal(same, same, ("a", "b")) is None
    # One repetition where the server ran the two alike is enough: that pair compared like with like.
    mixed = [step({"x": "1"}, {"x": "2"}), step({"x": "1"}, {"x": "1"})]
    assert refusal(mixed, [step({"x": "2"}, {"x": "2"})], ("a", "b")) is not None
