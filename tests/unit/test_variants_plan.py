"""Variants (issue 24): the spec keys, their refusals naming the field, and the plan's expansion --
every repetition measures every variant, interleaved in a balanced order, with the switches,
warm-ups and data sets a run needs, and wall time and cost that count them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchfleet.plan.model import make_plan
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import parse_spec, resolve
from benchfleet.workload import serverparams

W = {"name": "w", "test": "oltp_write_only", "threads": [1, 4], "duration_s": 8, "warmup_s": 3, "cooldown_s": 1,
     "tables": 1, "table_size": 100}
RELAXED = {"id": "relaxed", "server_options": {"innodb_flush_log_at_trx_commit": 2, "sync_binlog": 0}}


def spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "s", "workload": dict(W), "repetitions": 3,
                            "targets": [{"id": "box", "kind": "local", "mysql_config": "durable"}],
                            "variants": [{"id": "durable"}, dict(RELAXED)]}
    base.update(over)
    return base


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as e:
        resolve(parse_spec(data, "f.yaml"), "f.yaml")
    return e.value.problems


@pytest.mark.parametrize(("data", "field", "fragment"), [
    (spec(variants=[{"id": "a"}]), "variants", "one variant compares nothing"),
    (spec(variants=[{"id": "a"}, {"id": "a"}]), "variants[1].id", "used twice"),
    (spec(variants=[{"id": "a", "route": "proxy"}, {"id": "b"}]), "variants[0].route", "cluster targets"),
    (spec(variants=[{"id": "a"}, {"id": "b", "route": "sideways"}]), "variants[1].route", "direct"),
    (spec(variants=[], blocks=2), "blocks", "give variants"),
    # Blocks that would not alternate (every block of one variant, then the other's) are refused.
    (spec(blocks=2, order="sequential"), "blocks", "order: sequential measures one variant's whole sweep"),
    (spec(blocks=3), "blocks", "do not divide"),
    (spec(blocks=8), "blocks", "fewer than two report intervals"),
    (spec(blocks=0), "blocks", "greater than or equal to 1"),
    (spec(margin_pct=0), "margin_pct", "greater than 0"),
    (spec(order="random"), "order", "interleaved"),
    (spec(variants=[{"id": "a"}, {"id": "b", "workload": dict(W, threads=[1, 8])}]), "variants[1].workload",
     "threads"),
    (spec(variants=[{"id": "a"}, {"id": "b", "workload": dict(W, duration_s=9)}]), "variants[1].workload",
     "duration_s"),
    # One latency column, one percentile: a variant's p99 was shown as p95 beside the others'.
    (spec(variants=[{"id": "a"}, {"id": "b", "workload": dict(W, percentile=99)}]), "variants[1].workload",
     "its percentile (99) differs from the spec workload's (95)"),
    (spec(variants=[{"id": "a"}, {"id": "b", "workload": "no-such-workload"}]), "variants[1].workload",
     "no workload named"),
    (spec(variants=[{"id": "a"}, {"id": "b", "mysql_config": "nope"}]), "variants[1].mysql_config", "no file"),
    (spec(variants=[{"id": "a"}, {"id": "b", "options": {"mysql-host": "elsewhere"}}]),
     "variants[1].options.mysql-host", "set by benchfleet"),
    (spec(variants=[{"id": "a"}, {"id": "b", "server_options": {"Bad Name": 1}}]), "variants[1].server_options",
     "not a server option name"),
    (spec(targets=[{"id": "mine", "kind": "existing", "host": "h", "password_env": "P"}]),
     "variants[1].server_options", "never changes its settings"),
    (spec(targets=[{"id": "mine", "kind": "existing", "host": "h", "password_env": "P"}],
          variants=[{"id": "a"}, {"id": "b", "options": {"auto_inc": "off"}}]), "variants", "its one schema"),
    (spec(baseline="nobody"), "baseline", "variant ids: durable, relaxed"),
    (spec(baseline="box", variants=[{"id": "box"}, {"id": "b"}]), "baseline", "both a target id and a variant id"),
])
def test_a_spec_that_cannot_run_its_variants_is_refused_naming_the_field(data: dict[str, Any], field: str,
                                                                          fragment: str) -> None:
    found = problems(data)
    assert any(path == field and fragment in message for path, message in found), found


def test_a_variant_baseline_and_a_target_baseline_are_both_accepted() -> None:
    assert resolve(parse_spec(spec(baseline="relaxed"), "f"), "f").spec.baseline == "relaxed"
    assert resolve(parse_spec(spec(baseline="box"), "f"), "f").spec.baseline == "box"


def test_a_variant_takes_the_workload_with_its_own_options_over_the_workloads() -> None:
    loaded = resolve(parse_spec(spec(workload=dict(W, options={"skip_trx": "on", "auto_inc": "on"}), variants=[
        {"id": "a"}, {"id": "b", "options": {"auto-inc": "off"}}]), "f"), "f")
    assert loaded.workload_of("a").options == {"skip_trx": "on", "auto_inc": "on"}
    assert loaded.workload_of("b").options == {"skip-trx": "on", "auto-inc": "off"}


def names(data: dict[str, Any]) -> list[list[str]]:
    plan = make_plan(resolve(parse_spec(data, "f"), "f"))
    target = plan.targets[0]
    return [[s.name for s in target.steps_of(r)] for r in range(1, plan.repetitions + 1)]


def test_every_repetition_measures_every_variant_in_a_balanced_interleaved_order() -> None:
    reps = names(spec())
    assert reps[0] == ["prepare", "warmup", "t0001.durable", "t0001.relaxed", "t0004.relaxed", "t0004.durable"]
    assert reps[1] == ["prepare", "warmup", "t0001.relaxed", "t0001.durable", "t0004.durable", "t0004.relaxed"]
    assert reps[2] == reps[0]
    # Over an even number of repetitions each variant goes first equally often at every thread count.
    firsts: Counter[tuple[str, str]] = Counter()
    for rep in names(spec(repetitions=4)):
        measured = [step.split(".") for step in rep if step.startswith("t")]
        firsts.update((cell, variant) for i, (cell, variant) in enumerate(measured)
                      if i == 0 or measured[i - 1][0] != cell)
    assert firsts == {("t0001", "durable"): 2, ("t0001", "relaxed"): 2, ("t0004", "durable"): 2,
                      ("t0004", "relaxed"): 2}


def test_blocks_split_each_step_and_alternate_within_it() -> None:
    plan = make_plan(resolve(parse_spec(spec(blocks=2, repetitions=1), "f"), "f"))
    target = plan.targets[0]
    measured = [s for s in target.steps_of(1) if s.kind == "measure"]
    assert [s.name for s in measured] == ["t0001.b1.durable", "t0001.b1.relaxed", "t0001.b2.relaxed",
                                          "t0001.b2.durable", "t0004.b1.relaxed", "t0004.b1.durable",
                                          "t0004.b2.durable", "t0004.b2.relaxed"]
    assert {s.duration_s for s in measured} == {4} and {s.block for s in measured} == {1, 2}
    # The measured time per variant and thread count is the spec's duration_s.
    assert sum(s.duration_s for s in measured if s.variant == "durable" and s.threads == 1) == 8


def test_sequential_keeps_one_variant_after_another() -> None:
    reps = names(spec(order="sequential", repetitions=2))
    assert reps[0] == reps[1] == ["prepare", "warmup", "t0001.durable", "t0004.durable", "t0001.relaxed",
                                  "t0004.relaxed"]


def test_dynamic_settings_switch_with_set_global_and_static_ones_restart_and_warm_up_again() -> None:
    plan = make_plan(resolve(parse_spec(spec(repetitions=2), "f"), "f"))
    measured = [s for s in plan.targets[0].steps if s.kind == "measure"]
    assert {s.variant: s.switch for s in measured} == {"durable": {"relaxed": "set-global"},
                                                        "relaxed": {"durable": "set-global"}}
    static = dict(RELAXED, server_options={"innodb_flush_method": "fsync"})
    reps = names(spec(variants=[{"id": "durable"}, static], repetitions=2))
    # Every switch is a restart; each is followed by a warm-up of the variant switched to.
    assert reps[0] == ["prepare", "warmup", "t0001.durable", "warmup.t0001.relaxed", "t0001.relaxed",
                       "t0004.relaxed", "warmup.t0004.durable", "t0004.durable"]
    assert reps[1][2:] == ["warmup.t0001.relaxed", "t0001.relaxed", "warmup.t0001.durable", "t0001.durable",
                           "t0004.durable", "warmup.t0004.relaxed", "t0004.relaxed"]
    # A setting only one variant gives restarts too: its other value is the server's startup default.
    assert serverparams.switch_method("mariadb", {}, {"sync_binlog": "0"}) == ("restart", ["sync_binlog"])
    assert serverparams.switch_method("mariadb", {"a": "1"}, {"a": "1"}) == ("none", [])


def test_variants_with_other_data_sets_prepare_their_own_schema_before_the_sweep() -> None:
    other = dict(W, name="w2", test="oltp_read_only", warmup_s=0)
    plan = make_plan(resolve(parse_spec(spec(variants=[{"id": "durable"}, {"id": "reads", "workload": other},
                                                       {"id": "same"}]), "f"), "f"))
    steps = plan.targets[0].steps_of(1)
    head = [(s.name, s.database) for s in steps[:3]]
    assert head == [("prepare", None), ("prepare.reads", "sbtest_reads"), ("warmup", None)]
    assert {s.variant: s.database for s in steps if s.kind == "measure"} == {
        "durable": None, "same": None, "reads": "sbtest_reads"}
    # Three variants: the order turns by one at every thread count.
    assert [s.variant for s in steps if s.kind == "measure"] == ["durable", "reads", "same", "reads", "same", "durable"]


def test_wall_time_and_cost_count_every_variant_and_every_warm_up() -> None:
    static = dict(RELAXED, server_options={"innodb_flush_method": "fsync"})
    data = spec(variants=[{"id": "durable"}, static], repetitions=2,
                targets=[{"id": "box", "kind": "local", "mysql_config": "durable", "price_per_hour": 3.6}])
    plan = make_plan(resolve(parse_spec(data, "f"), "f"))
    target = plan.targets[0]
    per_rep = [target.provision_s + target.teardown_s + sum(s.duration_s + s.cooldown_s + target.step_overhead_s
                                                            for s in target.steps_of(r)) for r in (1, 2)]
    assert per_rep[0] != per_rep[1]  # repetition 2 restarts one more time
    assert plan.wall_s == sum(per_rep) and target.host_s == sum(per_rep)
    assert target.estimated_cost_usd == round(3.6 * sum(per_rep) / 3600, 4)
    summary = plan.summary()
    assert summary["variants"] == ["durable", "relaxed"] and summary["order"] == "interleaved"
    assert summary["targets"][0]["sequence"][0][:3] == ["prepare", "warmup", "t0001.durable"]


def test_local_targets_run_in_rounds_unless_sequential() -> None:
    two = [{"id": "a", "kind": "local"}, {"id": "b", "kind": "local"}]
    plan = make_plan(resolve(parse_spec(spec(variants=[], targets=two), "f"), "f"))
    assert plan.local_order() == [("a", 1), ("b", 1), ("b", 2), ("a", 2), ("a", 3), ("b", 3)]
    plan = make_plan(resolve(parse_spec(spec(variants=[], targets=two, order="sequential"), "f"), "f"))
    assert plan.local_order() == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]


def test_rds_values_and_settings_rds_does_not_allow() -> None:
    params, refused = serverparams.db_parameters("rds", [("innodb_buffer_pool_size", "70%"), ("sync_binlog", "0"),
                                                         ("innodb_log_file_size", "1G"), ("skip_log_bin", ""),
                                                         ("made_up_option", "1")])
    assert [(p.name, p.value, p.apply) for p in params] == [
        ("innodb_buffer_pool_size", "{DBInstanceClassMemory*7000/10000}", "dynamic"), ("sync_binlog", "0", "dynamic"),
        ("innodb_log_file_size", "1073741824", "static")]
    assert [name for name, _ in refused] == ["skip_log_bin", "made_up_option"]
    _, refused = serverparams.db_parameters("aurora", [("innodb_flush_log_at_trx_commit", "2")])
    assert refused and "does not let a parameter group set it" in refused[0][1]


RDS = {"id": "m", "kind": "rds", "instance_class": "db.m6g.large", "region": "us-east-1"}
AURORA = {"id": "a", "kind": "aurora", "instance_class": "db.r6g.large", "region": "us-east-1"}


@pytest.mark.parametrize(("targets", "variants", "field", "fragment"), [
    # issue 28 item 1: a setting a parameter group cannot hold refuses the spec, naming where it came from
    ([{**RDS, "mysql_config": "durable"}], [], "targets[0].mysql_config",
     "log_bin (in workloads/mysql/durable.cnf): RDS does not let a parameter group set it"),
    ([{**RDS, "server_options": {"skip-name-resolve": ""}}], [], "targets[0].server_options.skip_name_resolve",
     "RDS does not let"),
    ([{**AURORA, "server_options": {"innodb_flush_log_at_trx_commit": 2}}], [],
     "targets[0].server_options.innodb_flush_log_at_trx_commit", "Aurora MySQL does not let"),
    ([RDS], [{"id": "a", "server_options": {"made_up": 1}}, {"id": "b"}], "variants[0].server_options.made_up",
     "not in benchfleet's catalogue"),
    # issue 24 item 1: variants switch only dynamic parameters there, each variant giving a value
    ([{**RDS, "server_options": {"innodb_open_files": 2000}}], [{"id": "a"}, {"id": "b", "server_options": {
        "innodb_open_files": 4000}}], "variants[1].server_options.innodb_open_files",
     "innodb_open_files is a static rds parameter"),
    ([RDS], [{"id": "a"}, {"id": "b", "server_options": {"innodb_lock_wait_timeout": 10}}],
     "variants[1].server_options.innodb_lock_wait_timeout", "is set by variant b only"),
])
def test_plan_refuses_what_rds_and_aurora_cannot_run_naming_the_field(targets, variants, field, fragment) -> None:
    from benchfleet.aws.errors import PlanRejected
    from benchfleet.aws.planning import runplan
    from benchfleet.aws.regions import TargetRegions

    data = spec(targets=targets, variants=variants)
    with pytest.raises(PlanRejected) as e:
        runplan._loaded(data, TargetRegions.of("us-east-1"))
    assert f"{field}: " in str(e.value) and fragment in str(e.value), str(e.value)


def test_rds_and_aurora_measure_variants_that_switch_dynamic_parameters_or_only_the_workload() -> None:
    from benchfleet.aws.planning import dbparams, runplan
    from benchfleet.aws.regions import TargetRegions

    switching = [{"id": "a", "server_options": {"max_connections": 500}},
                 {"id": "b", "server_options": {"max_connections": 900}}]
    loaded = runplan._loaded(spec(targets=[RDS, AURORA], variants=switching), TargetRegions.of("us-east-1"))
    entries, refused = dbparams.target_parameters(loaded, 1)
    assert refused == [] and {e["name"]: e["value"] for e in entries}["max_connections"] == "500"  # the first's
    workloads = [{"id": "seq"}, {"id": "random", "workload": {**W, "name": "w2", "tables": 2}}]
    runplan._loaded(spec(targets=[AURORA], variants=workloads), TargetRegions.of("us-east-1"))


def test_smoke_scale_shrinks_every_variants_workload_alike_and_keeps_the_blocks() -> None:
    from pathlib import Path

    from benchfleet.plan.scale import apply_scale
    from benchfleet.spec.loading import load_spec

    comparisons = Path(__file__).resolve().parents[2] / "workloads" / "comparisons"
    smoke = apply_scale(load_spec(comparisons / "local-pk-order.yaml"), "smoke")
    assert {v.id: v.workload.table_size for v in smoke.variants} == {"seq": 2000, "random": 2000}
    assert smoke.workload_of("random").test == "lua/insert_pk_random.lua"
    demo = apply_scale(load_spec(comparisons / "demo-durability.yaml"), "smoke")
    plan = make_plan(demo)
    measured = [s for s in plan.targets[0].steps_of(1) if s.kind == "measure"]
    assert demo.spec.blocks == 2 and {s.block for s in measured} == {1, 2}
    assert all(s.duration_s * 2 == demo.workload.duration_s for s in measured)
