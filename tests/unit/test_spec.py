"""Spec and workload validation: errors name the file, the field path and the problem (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import REPO

from benchfleet.cli.main import main
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import json_schema, load_spec, parse_spec

DEMO = REPO / "workloads" / "comparisons" / "demo-durability.yaml"
INLINE = {"name": "w", "test": "oltp_read_only", "threads": [1]}


def spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"name": "s", "workload": dict(INLINE), "targets": [{"id": "a", "kind": "local"}]}
    base.update(over)
    return base


def problems(data: object) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as e:
        parse_spec(data, "f.yaml")
    return e.value.problems


def test_demo_spec_loads_with_defaults_and_its_workload() -> None:
    loaded = load_spec(DEMO)
    # One server, two variants of its settings, measured in turn (issue 24 item 7).
    assert [t.id for t in loaded.spec.targets] == ["local-512mb"] and loaded.spec.variant_ids == ["durable", "relaxed"]
    assert loaded.spec.order == "interleaved" and loaded.spec.blocks == 2
    assert loaded.workload.threads == [1, 4] and loaded.workload.report_interval_s == 1
    # Three repetitions: the fewest at which a verdict can be reached (stats.MIN_REPETITIONS).
    assert loaded.spec.is_local and loaded.spec.repetitions == 3


@pytest.mark.parametrize(("data", "path", "fragment"), [
    (spec(targets=[{"id": "a", "kind": "local"}, {"id": "a", "kind": "local"}]), "targets[1].id", "used twice"),
    (spec(targets=[{"id": "m", "kind": "ec2"}]), "targets[0].instance_type", "required"),
    (spec(targets=[{"id": "m", "kind": "rds", "instance_type": "m5.large"}]), "targets[0].instance_class", "required"),
    (spec(targets=[{"id": "m", "kind": "existing"}]), "targets[0].host", "required"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "password": "x"}]), "targets[0]",
     "never put a password in a spec"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "password_env": "A", "password_file": "/f"}]),
     "targets[0]", "give one password source"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "password_env": "A B"}]),
     "targets[0].password_env", "pattern"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "database": "Shop;drop"}]),
     "targets[0].database", "pattern"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "server_options": {"sync_binlog": 0}}]),
     "targets[0]", "never changes its settings"),
    (spec(targets=[{"id": "m", "kind": "existing", "host": "h", "mysql_config": "durable"}]),
     "targets[0]", "never changes its settings"),
    (spec(targets=[{"id": "a", "kind": "local", "server_options": {"Bad Name": 1}}]),
     "targets[0].server_options", "not a server option name"),
    (spec(targets=[{"id": "a", "kind": "local", "server_options": {"init_file": "/x;y"}}]),
     "targets[0].server_options", "not a value"),
    (spec(targets=[{"id": "a", "kind": "local", "server_options": {"sync-binlog": 0, "sync_binlog": 1}}]),
     "targets[0].server_options", "given twice"),
    (spec(targets=[{"id": "m", "kind": "gcp"}]), "targets[0]", "kind must be one of"),
    (spec(targets=[{"id": "m"}]), "targets[0]", "kind is required"),
    (spec(targets=[{"id": "Bad_Id", "kind": "local"}]), "targets[0].id", "pattern"),
    (spec(targets=[{"id": "a;rm -rf /", "kind": "local"}]), "targets[0].id", "pattern"),
    (spec(workload=dict(INLINE, threads=[0, 2])), "workload.threads[0]", "greater than or equal to 1"),
    (spec(workload=dict(INLINE, threads=[2, 2])), "workload.threads", "unique"),
    (spec(workload=dict(INLINE, duration_s=3 * 86400)), "workload.duration_s", "less than or equal"),
    (spec(workload=dict(INLINE, percentile=100)), "workload.percentile", "less than or equal to 99"),
    (spec(workload=dict(INLINE, test="../../etc/passwd")), "workload.test", "built-in test name"),
    (spec(workload=dict(INLINE, options={"mysql-host": "evil"})), "workload.options.mysql-host", "set by benchfleet"),
    (spec(workload=dict(INLINE, options={"x": "a;b"})), "workload.options.x", "characters"),
    (spec(colour="red"), "colour", "unknown key"),
    # issue 41 item 8: a misspelt key is named with the key it most likely is
    (spec(repetitons=3), "repetitons", "unknown key (did you mean repetitions?)"),
    (spec(targets=[{"id": "a", "kind": "ec2", "instance_type": "m6i.large", "storgae": {"type": "gp3"}}]),
     "targets[0].storgae", "did you mean storage?"),
    (spec(workload=dict(INLINE, warmup=5)), "workload.warmup", "did you mean warmup_s?"),
    (spec(repetitions=0), "repetitions", "greater than or equal to 1"),
    (spec(repetitions=True), "repetitions", "valid integer"),
    (spec(workload=dict(INLINE, threads=["4"])), "workload.threads[0]", "valid integer"),
    (spec(description="price \u202eevil"), "description", "invisible character (U+202E)"),
    (spec(targets=[{"id": "m", "kind": "ec2", "instance_type": "m" * 40 + ".large"}]), "targets[0].instance_type",
     "at most 32"),
    (spec(baseline="nope"), "baseline", "not one of the target ids"),
    (spec(targets=[]), "targets", "at least 1"),
    (spec(targets=[{"id": "a", "kind": "local", "cpus": [0, 1000]}]), "targets[0].cpus", "does not exist"),
])
def test_bad_specs_name_the_field(data: dict[str, object], path: str, fragment: str) -> None:
    found = problems(data)
    assert any(p == path and fragment in msg for p, msg in found), found


def test_a_spec_must_be_a_mapping() -> None:
    assert "mapping" in problems(["not", "a", "spec"])[0][1]


def test_files_are_checked(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("name: s\nworkload: no-such-workload\ntargets: [{id: a, kind: local, mysql_config: nope}]\n")
    with pytest.raises(SpecError) as e:
        load_spec(f)
    assert str(f) in str(e.value) and "no workload named 'no-such-workload'" in str(e.value)
    f.write_text(json.dumps(spec(targets=[{"id": "a", "kind": "local", "mysql_config": "nope"}])))
    with pytest.raises(SpecError) as e:
        load_spec(f)
    # The folder searched, absolute: a user standing anywhere can see where the file was expected.
    folder = (REPO / "workloads" / "mysql").resolve()
    assert e.value.problems == [("targets[0].mysql_config", f"no file nope.cnf in {folder}")]


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("name: s\ntargets: [\n  - {id: a\n")
    with pytest.raises(SpecError) as e:
        load_spec(f)
    assert "invalid YAML at line" in str(e.value)


def test_validate_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(DEMO)]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec(targets=[{"id": "m", "kind": "ec2"}])))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: targets[0].instance_type: Field required" in err and "Traceback" not in err
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2


def test_json_schema_is_exported() -> None:
    schema = json_schema()
    assert schema["title"] == "benchfleet comparison spec"
    assert {"name", "workload", "targets"} <= set(schema["required"])
    assert "LocalTarget" in schema["$defs"] and "Ec2Target" in schema["$defs"]


def test_published_schema_is_current() -> None:
    published = json.loads((REPO / "workloads" / "spec.schema.json").read_text())
    assert published == json_schema(), "regenerate: benchfleet validate --schema > workloads/spec.schema.json"


def test_one_existing_model_serves_both_backends() -> None:
    here = parse_spec(spec(targets=[{"id": "m", "kind": "existing", "host": "127.0.0.1", "port": 3307,
                                     "user": "bench", "password_env": "PW"}]))
    (target,) = here.targets
    assert here.is_local and target.database == "benchfleet" and not target.keep_tables
    cloud = parse_spec(spec(targets=[{"id": "m", "kind": "existing", "host": "db.internal",
                                      "instance_id": "i-0123456789abcdef0",
                                      "password_secret_arn": "arn:aws:secretsmanager:us-east-1:1:secret:x"}]))
    assert not cloud.is_local


def test_server_options_are_one_spelling_and_reach_the_plan() -> None:
    from benchfleet.plan.model import make_plan
    from benchfleet.spec.loading import resolve

    parsed = parse_spec(spec(targets=[{"id": "a", "kind": "local",
                                       "server_options": {"innodb-buffer-pool-size": "64M", "sync_binlog": 0}}]))
    assert parsed.targets[0].server_options == {"innodb_buffer_pool_size": "64M", "sync_binlog": 0}
    summary = make_plan(resolve(parsed, "s.yaml")).summary()
    assert summary["targets"][0]["server_options"] == {"innodb_buffer_pool_size": "64M", "sync_binlog": 0}


def test_no_pattern_takes_unicode_digits() -> None:
    # pydantic-core's \d matches any Unicode digit ("us-east-\u0661", "mysql-\uff18.0"): [0-9] only.
    patterns: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            patterns.extend(v for k, v in node.items() if k == "pattern" and isinstance(v, str))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json_schema())
    assert patterns and not [p for p in patterns if "\\d" in p]
    for field, value in (("region", "us-east-\u0661"), ("engine", "mysql-\uff18.0")):
        target = {"id": "m", "kind": "ec2", "instance_type": "m6i.large", field: value}
        assert any(p == f"targets[0].{field}" for p, _ in problems(spec(targets=[target]))), field
