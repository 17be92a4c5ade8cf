"""The CLI and its files under hostile or mistaken use (issue 28 item 8): `report -o` replaces only a
regular file, through a temporary file of its own beside it; `compare` only reads the store (a
read-only home works); a closed terminal (SIGHUP) stops a run as Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest
from tests.sysbench_logs import LOADED_SECONDS, run_log

from benchfleet.cli.main import main
from benchfleet.local import store as store_module


@pytest.fixture
def imported(bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A home with two imported runs, ``first`` and ``second``, of target ``db``."""
    for name, tps in (("first", 900.0), ("second", 950.0)):
        log = tmp_path / f"{name}.log"
        log.write_text(run_log(LOADED_SECONDS, [tps] * len(LOADED_SECONDS)))
        assert main(["import", str(log), "--target", "db", "--run", name]) == 0
    capsys.readouterr()
    return bf_home


def report_to(target: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["report", "first", "-o", str(target)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.err


def test_report_replaces_only_a_regular_file(imported: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    folder = out / "a-folder"
    folder.mkdir()
    fifo = out / "a-fifo"
    os.mkfifo(fifo)
    elsewhere = tmp_path / "someone-elses.txt"
    elsewhere.write_text("theirs")
    link = out / "a-link.html"
    link.symlink_to(elsewhere)
    cases = {folder: "is a directory", fifo: "is a FIFO", link: "is a symbolic link"}
    if os.geteuid() == 0:  # a device node, as /dev/full is (its copy: never the real one in a test)
        device = out / "full"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        cases[device] = "is a device"
    before = sorted(p.name for p in out.iterdir())
    for target, fragment in cases.items():
        code, err = report_to(target, capsys)
        assert code == 2 and f"{target}: {fragment}" in err
    assert sorted(p.name for p in out.iterdir()) == before  # no DIR.tmp, nothing else left
    assert folder.is_dir() and stat.S_ISFIFO(fifo.lstat().st_mode) and elsewhere.read_text() == "theirs"
    if os.geteuid() == 0:
        assert stat.S_ISCHR((out / "full").lstat().st_mode)


def test_the_report_of_two_runs_refuses_a_directory_and_one_run_twice(imported: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for argv in (["report", "second", "--against", "first"], ["compare", "first", "second", "--report"]):
        assert main([*argv, "-o", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"{folder}: is a directory" in err and "Traceback" not in err
    assert list(folder.iterdir()) == []
    for argv in (["report", "second", "--against", "sec"], ["compare", "first", "fir"]):  # one run, twice
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"both runs are {argv[1]}" in err and "compare a run with another one" in err, err


def test_the_report_of_two_runs_without_seconds_says_so(bf_home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Imported summaries only (no --report-interval lines): the per-second charts say why they are
    missing (a KeyError ended the command before)."""
    for name, events in (("first", 10_800), ("second", 11_400)):
        log = tmp_path / f"{name}.log"
        log.write_text(run_log((), (), transactions=events))
        assert main(["import", str(log), "--target", "db", "--run", name]) == 0
    capsys.readouterr()
    out = tmp_path / "pair.html"
    assert main(["report", "second", "--against", "first", "-o", str(out)]) == 0, capsys.readouterr().err
    page = out.read_text()
    assert "id='missing-latency-series'" in page and "per-second" in page
    assert page.count("id='missing-timeline-") == 2


def test_report_writes_through_a_temporary_file_of_its_own(imported: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "report.html"
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    (out / "report.html.tmp").symlink_to(victim)  # the name the report once wrote through
    code, _ = report_to(target, capsys)
    assert code == 0 and victim.read_text() == "not yours"
    assert target.is_file() and not target.is_symlink() and "<html" in target.read_text()[:2000].lower()
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.html.tmp"]


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_compare_only_reads_the_store(imported: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    opened: list[bool] = []
    real = store_module.DuckDBStore.__init__

    def spy(self: store_module.DuckDBStore, path: Path, write: bool = True) -> None:
        opened.append(write)
        real(self, path, write)

    monkeypatch.setattr(store_module.DuckDBStore, "__init__", spy)
    assert main(["compare", "first", "second", "--format", "json"]) == 0
    assert "second" in capsys.readouterr().out
    assert opened == [False]  # never opened for writing: a read-only home works


def test_a_closed_terminal_stops_a_run_as_ctrl_c_does() -> None:
    """SIGHUP's default would kill benchfleet before it stops its servers and removes their data."""
    from benchfleet.local.runner import _sigterm_as_interrupt

    before = signal.getsignal(signal.SIGHUP)
    with _sigterm_as_interrupt():
        handler = signal.getsignal(signal.SIGHUP)
        assert callable(handler)
        with pytest.raises(KeyboardInterrupt, match=f"signal {int(signal.SIGHUP)}"):
            handler(signal.SIGHUP, None)
    assert signal.getsignal(signal.SIGHUP) == before


def test_a_relative_home_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative BENCHFLEET_HOME failed every local run: mariadb-install-db resolved the data directory
    from elsewhere, and the agent takes only absolute paths (data_dir, rows.state_dir)."""
    from benchfleet.cli.base import home

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCHFLEET_HOME", "relhome")
    assert home() == tmp_path / "relhome"


def test_doctor_checks_the_spec_it_is_given_here(bf_home: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`doctor SPEC` without --remote read no SPEC at all: a missing file or a server option MariaDB
    refuses said "nothing would fail", exit 0. Now the spec is loaded as `run` loads it (exit 2 naming
    the file and field) and its local targets' options shown to the server (a failed check, exit 1)."""
    workload = "{name: w, test: oltp_read_only, tables: 1, table_size: 100, threads: [1], duration_s: 2, warmup_s: 0}"
    cases = {"missing.yaml": None,
             "bad-field.yaml": "{id: a, kind: local, memory_mb: lots}",
             "refused.yaml": "{id: a, kind: local, server_options: {no_such_server_option: 1}}",
             "good.yaml": "{id: a, kind: local}"}
    for name, target in cases.items():
        if target:
            (tmp_path / name).write_text(f"name: d\nworkload: {workload}\ntargets:\n  - {target}\n")
    codes = {}
    for name in cases:
        codes[name] = main(["doctor", str(tmp_path / name), "--format", "json"])
        out = capsys.readouterr()
        assert "Traceback" not in out.err
        if name == "missing.yaml":
            assert f"{tmp_path / name}: cannot read" in out.err
        elif name == "bad-field.yaml":
            assert "targets[0].memory_mb" in out.err
        else:
            spec = [c for c in json.loads(out.out) if c["name"] == "spec"]
            assert spec and spec[0]["status"] == ("fail" if name == "refused.yaml" else "ok")
            if name == "refused.yaml":
                assert "targets[0].server_options" in spec[0]["detail"]
                assert "no_such_server_option" in spec[0]["detail"]
    assert codes["missing.yaml"] == 2 and codes["bad-field.yaml"] == 2
    assert codes["refused.yaml"] == 1
    assert codes["good.yaml"] in (0, 1)  # 1 only when this machine lacks what every local run needs


def test_history_of_trial_runs_only_says_so(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`results --history NAME` when every succeeded run of NAME is a trial (smoke scale, --local
    stand-ins) said "no succeeded runs named NAME here" beside `runs` listing them succeeded."""
    with store_module.open_store(imported) as store:
        run = next(r for r in store.runs() if r["name"] == "first")
        trial = {"scale": "smoke", "substituted": [], "label": "smoke scale"}  # as benchfleet.plan.scale.trial
        store.set_spec(run["run_id"], {**store.run(run["run_id"])["spec"], "trial": trial})
    assert main(["results", "--history", "first"]) == 2
    err = capsys.readouterr().err
    assert "the 1 succeeded run(s) named 'first' here are all trials" in err and "Traceback" not in err
    assert main(["results", "--history", "nothing-so-named"]) == 2
    assert "no succeeded runs named 'nothing-so-named' here" in capsys.readouterr().err


def test_an_abbreviated_server_option_is_refused_before_anything_starts(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MariaDB takes a unique prefix of an option's name silently (innodb_flush_log_at_trx = 0 sets
    innodb_flush_log_at_trx_commit): the run then recorded the variant's setting as effective null with
    no difference, and skip_grant_table slipped past the refusal of skip_grant_tables. Refused by
    `run` before any server starts, naming the field and the full name (both passed before)."""
    workload = "{name: w, test: oltp_write_only, tables: 1, table_size: 100, threads: [1], duration_s: 2, warmup_s: 0}"
    cases = {"variants[1].server_options": ("  - {id: a, kind: local}\nvariants:\n  - {id: durable}\n"
                                            "  - {id: relaxed, server_options: {innodb_flush_log_at_trx: 0}}\n",
                                            "write innodb_flush_log_at_trx_commit"),
             "targets[0].server_options": ("  - {id: a, kind: local, server_options: {skip-grant-table: 1}}\n",
                                           "write skip_grant_tables")}
    for field, (targets, words) in cases.items():
        spec = tmp_path / "abbreviated.yaml"
        spec.write_text(f"name: ab\nworkload: {workload}\ntargets:\n{targets}")
        assert main(["run", str(spec)]) == 2
        err = capsys.readouterr().err
        assert f"{spec}: {field}: " in err and words in err and "Traceback" not in err
    assert not (bf_home / "servers").exists() or not any((bf_home / "servers").iterdir())


def test_a_spacing_the_local_runner_would_not_keep_is_refused(bf_home: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """repetition_spacing_s on a local spec was dropped silently: `run` measured the repetitions back to
    back (the time-of-day spread the key asks for never happened) and `plan` said nothing. Refused by
    both, naming the key, as the deployed machine refuses a spacing it cannot keep; a spacing no longer
    than a repetition is kept anyway (a spacing is the least time between two starts)."""
    workload = "{name: w, test: oltp_read_only, tables: 1, table_size: 100, threads: [1], duration_s: 2, warmup_s: 0}"
    spec = tmp_path / "spaced.yaml"
    for spacing, code in ((3600, 2), (1, 0)):
        spec.write_text(f"name: sp\nworkload: {workload}\nrepetitions: 2\nrepetition_spacing_s: {spacing}\n"
                        "targets:\n  - {id: a, kind: local}\n")
        assert main(["plan", str(spec)]) == code
        err = capsys.readouterr().err
        assert ("repetition_spacing_s: 3600 s is longer than one repetition of a" in err) == (code == 2)
        assert "the local runner runs repetitions one after another" in err or code == 0
    spec.write_text(spec.read_text().replace("repetition_spacing_s: 1", "repetition_spacing_s: 3600"))
    assert main(["run", str(spec)]) == 2
    assert f"{spec}: spec: repetition_spacing_s: 3600 s" in capsys.readouterr().err
    assert not (bf_home / "servers").exists() or not any((bf_home / "servers").iterdir())


def test_a_local_engine_version_other_than_the_installed_one_is_refused(
        bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`engine: mariadb-10.6` on a local target ran on the installed MariaDB (10.11 here) and recorded
    that, the spec saying 10.6: refused before anything starts, naming the field and the installed
    version; the installed version, in any precision, is accepted."""
    import re
    import subprocess

    from benchfleet.local.mariadb import find_binary

    version = subprocess.run([find_binary("mariadbd", "mysqld"), "--version"], capture_output=True, text=True,
                             check=True).stdout
    installed = re.search(r"Ver\s+([0-9.]+[0-9])", version).group(1)  # type: ignore[union-attr]
    workload = "{name: w, test: oltp_read_only, tables: 1, table_size: 100, threads: [1], duration_s: 2, warmup_s: 0}"
    spec = tmp_path / "engine.yaml"
    for engine, code in (("mariadb-5.5", 2), (f"mariadb-{installed.split('.')[0]}", None),
                         (f"mariadb-{installed}", None)):
        spec.write_text(f"name: en\nworkload: {workload}\ntargets:\n  - {{id: a, kind: local, engine: {engine}}}\n")
        if code == 2:
            assert main(["run", str(spec)]) == 2
            err = capsys.readouterr().err
            assert f"{spec}: targets[0].engine: mariadb-5.5: this machine's MariaDB is {installed}" in err
        else:
            assert main(["doctor", str(spec), "--format", "json"]) in (0, 1)
            checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
            assert checks["spec"]["status"] == "ok"
    assert not (bf_home / "servers").exists() or not any((bf_home / "servers").iterdir())


def test_an_empty_run_id_names_no_run(bf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"" is a prefix of every run id: with one run in the store `report ""` wrote its report and
    `compare "" OTHER` compared it, as if it had been named."""
    log = tmp_path / "only.log"
    log.write_text(run_log(LOADED_SECONDS, [900.0] * len(LOADED_SECONDS)))
    assert main(["import", str(log), "--target", "db", "--run", "only"]) == 0
    capsys.readouterr()
    for argv in (["report", ""], ["report", " "], ["results", "--format", "json", " "], ["import", str(log),
                 "--target", "db2", "--into", ""]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "no run" in err and "Traceback" not in err, (argv, err)


def test_the_step_export_calls_the_tps_every_table_uses_tps(bf_home: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`results --format csv|json` listed each step's tps as sysbench's whole-step figure (ramp
    included) under "tps", beside a table and verdicts that use the step's tps with its ramp left out:
    two different numbers for one step under one name. Now "tps" is the table's and sysbench's figure
    is "summary_tps"."""
    log = tmp_path / "ramped.log"  # a fast first report (the ramp), then a steady rate
    log.write_text(run_log(LOADED_SECONDS, [1500.0] + [900.0] * (len(LOADED_SECONDS) - 1)))
    assert main(["import", str(log), "--target", "db", "--run", "first"]) == 0
    capsys.readouterr()
    assert main(["results", "first", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    used = {(s["repetition"], r["threads"]): s for r in doc["statistics"]["rows"] for s in r["steps"]}
    measured = [s for s in doc["steps"] if s["phase"] == "measure"]
    assert measured
    for step in measured:
        figure = used[(step["repetition"], step["threads"])]
        assert figure["tps"] != figure["summary_tps"]  # a ramp to leave out: the two figures differ
        assert step["tps"] == pytest.approx(figure["tps"], abs=0.005)
        assert step["summary_tps"] == figure["summary_tps"]
    assert main(["results", "first", "--format", "csv"]) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    row = dict(zip(header.split(","), first.split(","), strict=True))
    step = next(s for s in doc["steps"] if s["step"] == row["step"] and s["repetition"] == int(row["repetition"]))
    assert float(row["tps"]) == step["tps"] and float(row["summary_tps"]) == step["summary_tps"]


def test_validate_with_a_spec_and_schema_does_not_pass_the_spec_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`validate broken.yaml --schema` printed the schema and exited 0, the spec never read."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: Not A Slug\n")
    assert main(["validate", str(broken), "--schema"]) == 2
    assert "validate takes SPEC or --schema, not both" in capsys.readouterr().err
    assert main(["validate", "--schema"]) == 0 and '"properties"' in capsys.readouterr().out
