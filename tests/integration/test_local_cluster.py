"""A local Galera cluster end to end (issue 25): three MariaDB nodes from Debian's galera-4 behind
HAProxy, real sysbench through the agent, the nodes' status every second, and the faults: a node that
never joins, the proxy failing to start, an abort during state transfer, one node stopped mid-step.
One cluster is formed per test (about 15 s each), steps are short.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import REPO

from benchfleet.local import galera as local_galera
from benchfleet.local.mariadb import PRIVATE_PREFIX

pytestmark = pytest.mark.integration

DURATION = 4


def write_spec(tmp_path: Path, name: str, threads: list[int], duration: int = DURATION, **workload: Any) -> Path:
    spec = {"name": name, "repetitions": 1,
            "workload": {"name": name, "test": "oltp_read_write", "tables": 1, "table_size": 1000, "warmup_s": 0,
                         "threads": threads, "duration_s": duration, "percentile": 99, **workload},
            "targets": [{"id": "galera", "kind": "local", "memory_mb": 256, "cluster": {"nodes": 3}}]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@contextlib.contextmanager
def run_tmp() -> Iterator[Path]:
    """A temporary dir of the run's own (its TMPDIR), so the leftover checks read only what this run
    created: the system's is shared with every other test and user, whose clusters come and go in
    it. Under the system's, with a short name (a node's socket path must stay short) and traversable
    by the nodes' user (the private dirs are made in it)."""
    path = Path(tempfile.mkdtemp(prefix="bf-lc-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tmpdir_of_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """run_tmp() for a test, also as this process's temporary dir (runs started in process)."""
    with run_tmp() as path:
        monkeypatch.setenv("TMPDIR", str(path))
        monkeypatch.setattr(tempfile, "tempdir", str(path))
        yield path


def env(home: Path, tmp: Path) -> dict[str, str]:
    return dict(os.environ, BENCHFLEET_HOME=str(home), PYTHONPATH=str(REPO / "lambdas"), COLUMNS="200",
                TMPDIR=str(tmp))


def cli(home: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchfleet.cli", *args], env=env(home, tmp),
                          capture_output=True, text=True, timeout=300, check=False)


def ours(home: Path, tmp: Path) -> list[str]:
    """Processes a cluster of this run left: nodes (their private dirs, in the run's temporary dir)
    and proxies."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if ("mariadbd" in line or "haproxy" in line) and (str(tmp) in line or str(home) in line)]


def assert_nothing_left(home: Path, tmp: Path) -> None:
    assert [p for p in (home / "servers").iterdir()] == []
    assert list(tmp.glob(PRIVATE_PREFIX + "*")) == []
    assert ours(home, tmp) == []


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One `benchfleet run` of a 3-node cluster behind HAProxy, two thread counts."""
    tmp = tmp_path_factory.mktemp("cluster")
    home = tmp / "home"
    with run_tmp() as run_dir:
        started = time.monotonic()
        done = cli(home, run_dir, "run", str(write_spec(tmp, "cluster-it", [1, 4])))
        wall = time.monotonic() - started
        run_id = json.loads(cli(home, run_dir, "runs", "--format", "json").stdout)[0]["run_id"]
        yield {"home": home, "done": done, "run_id": run_id, "tmp": run_dir, "wall_s": wall}


def test_the_run_prints_tps_p99_and_flow_control_per_thread_count(demo: dict[str, Any]) -> None:
    done = demo["done"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "nodes n2, n3 joining (state transfer)" in out and "starting haproxy" in out
    assert "p99 ms" in out and "cluster status per second" in out and "fc paused" in out
    results = json.loads(cli(demo["home"], demo["tmp"], "results", demo["run_id"], "--format", "json").stdout)
    assert [(r["threads"], r["tps_mean"] > 0) for r in results["comparison"]] == [(1, True), (4, True)]
    cluster = {r["threads"]: r for r in results["status"]["cluster"]}
    assert set(cluster) == {1, 4}
    for row in cluster.values():
        assert row["fc_paused_pct"] is not None and row["fc_paused_pct"] >= 0 and row["unanswered"] == 0
        assert row["replicated_mb_per_s"] > 0  # every write went through Galera
    (target,) = results["targets"]
    fingerprint = json.loads(target["cluster"])
    assert fingerprint["cluster_nodes"] == 3 and fingerprint["proxy"] == "haproxy"
    assert fingerprint["proxy_version"].startswith("HAProxy version 2.") and len(fingerprint["proxy_config_hash"]) == 64


def test_every_node_and_proxy_backend_was_read_every_second(demo: dict[str, Any]) -> None:
    rows = json.loads(cli(demo["home"], demo["tmp"], "results", demo["run_id"], "--status", "--format", "json").stdout)
    measured = [r for r in rows if r["step"] == "t0004"]
    sources = {r["source"] for r in measured}
    assert sources == {"n1", "n2", "n3", "proxy/n1", "proxy/n2", "proxy/n3"}
    for node in ("n1", "n2", "n3"):
        seconds = sorted({r["second"] for r in measured if r["source"] == node})
        assert seconds[0] == 0 and len(seconds) >= DURATION, seconds
        size = [r["value"] for r in measured if r["source"] == node and r["counter"] == "wsrep_cluster_size"]
        assert set(size) == {3.0}
    # Writes go to one node: the proxy sent every session to n1, the backups took none.
    sessions = {r["source"]: r["value"] for r in measured if r["counter"] == "stot"}
    assert sessions["proxy/n1"] > 0 and sessions["proxy/n2"] == sessions["proxy/n3"] == 0
    report = demo["home"] / "reports" / f"{demo['run_id']}.html"
    assert "chart-status" in report.read_text()


def test_the_cross_zone_line_is_what_the_nodes_measured_would_cost(demo: dict[str, Any]) -> None:
    """The local run's stored status rows priced by hand with the model of workloads/README.md ("Cost of a
    cluster"): replicated bytes x (nodes - 1) plus n2's and n3's client bytes both ways, per second."""
    from benchfleet import stats
    from benchfleet.local.store import open_store

    with open_store(demo["home"], write=False) as store:  # in process: the stored rows, as results reads them
        rows = store.query("SELECT * FROM status_samples WHERE run_id = ?", [demo["run_id"]])
        comparison = stats.run_comparison(store, demo["run_id"])
    for row in comparison["rows"]:
        rates: dict[tuple[str, str], list[float]] = {}
        for r in rows:
            if (r["threads"] == row["threads"] and r["phase"] == "measure" and r["second"] > 0 and r["rate"] is not None
                    and r["source"] in ("n1", "n2", "n3")):
                rates.setdefault((r["source"], r["counter"]), []).append(float(r["rate"]))

        mean = {key: sum(values) / len(values) for key, values in rates.items()}
        replication = sum(mean[(n, "wsrep_replicated_bytes")] for n in ("n1", "n2", "n3")) * 2
        client = sum(mean[(n, c)] for n in ("n2", "n3") for c in ("Bytes_sent", "Bytes_received"))
        assert replication > 0 and client > 0  # every write replicated; the status readings reach every node
        crossing = row["cross_zone"]
        assert crossing["basis"] == "would"
        assert crossing["gb_per_hour"] == pytest.approx((replication + client) * 3600 / 2 ** 30)
        assert crossing["usd_per_hour"] == pytest.approx(crossing["gb_per_hour"] * 2 * 0.01)
        assert all(c is None for c in row["cost"].values())  # a local cluster stays free
    assert "cross-zone traffic" in demo["done"].stdout and "would cost across zones" in demo["done"].stdout


def test_the_run_leaves_nothing(demo: dict[str, Any]) -> None:
    assert_nothing_left(demo["home"], demo["tmp"])
    print(f"local_cluster_run_wall_s={demo['wall_s']:.1f}")


def test_a_node_that_never_joins_fails_the_target_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             tmpdir_of_run: Path) -> None:
    from benchfleet.cli.main import main

    home = tmp_path / "home"
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    write = local_galera.LocalCluster._write_cnf

    def broken_n3(self: local_galera.LocalCluster, node: Any, addresses: Any) -> None:
        write(self, node, addresses)
        if node.address.name == "n3":  # a state transfer method that does not exist: n3 can never join
            with (node.dir / "my.cnf").open("a") as f:
                f.write("[mysqld]\nwsrep_sst_method = nosuchmethod\n")

    monkeypatch.setattr(local_galera.LocalCluster, "_write_cnf", broken_n3)
    assert main(["run", str(write_spec(tmp_path, "never-joins", [2]))]) == 1
    out = capsys.readouterr().out
    assert "galera-r1: node n3 did not join the cluster" in " ".join(out.split()), out
    assert "nosuchmethod" in out, out  # the node's own reason, from its log
    assert_nothing_left(home, tmpdir_of_run)


def test_one_node_stopped_mid_step_fails_the_step_with_the_reason(tmp_path: Path, tmpdir_of_run: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-m", "benchfleet.cli", "run",
                             str(write_spec(tmp_path, "node-stopped", [2], duration=20))], env=env(home, tmpdir_of_run),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    pid = None
    while time.monotonic() < deadline and pid is None:
        raw = list((home / "raw").rglob("t0002.jsonl")) if (home / "raw").exists() else []
        if raw and raw[0].read_text().count('"type":"sample"') >= 2:
            (record,) = (home / "servers").glob("*.json")
            pid = json.loads(record.read_text())["server_pids"][2]  # n1, n2, n3, then the proxy
        time.sleep(0.2)
    assert pid, "the measure step never started"
    os.kill(pid, signal.SIGSTOP)
    try:
        output = proc.communicate(timeout=120)[0]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert proc.returncode == 1, output
    said = " ".join(output.split())
    assert "t0002" in said and "n3" in said and ("not Synced at full size" in said or "stopped for" in said), said
    assert_nothing_left(home, tmpdir_of_run)


def test_a_proxy_that_fails_to_start_fails_the_target_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmpdir_of_run: Path) -> None:
    from benchfleet.cli.main import main

    home = tmp_path / "home"
    monkeypatch.setenv("BENCHFLEET_HOME", str(home))
    render = local_galera.proxyconf.render

    def broken(*args: Any, **kwargs: Any) -> str:  # a configuration haproxy refuses: its install failed
        return render(*args, **kwargs) + "\nno-such-haproxy-keyword on\n"

    monkeypatch.setattr(local_galera.proxyconf, "render", broken)
    assert main(["run", str(write_spec(tmp_path, "proxy-fails", [2]))]) == 1
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())
    assert "haproxy exited at start" in said and "no-such-haproxy-keyword" in said, said[-3000:]
    assert_nothing_left(home, tmpdir_of_run)


def test_an_abort_during_state_transfer_leaves_nothing(tmp_path: Path, tmpdir_of_run: Path) -> None:
    home = tmp_path / "home"
    spec = write_spec(tmp_path, "abort-sst", [2])
    # SIGINT at its default, as in a terminal (test_local_run does the same): a shell's `&` job (no job
    # control) inherits it ignored, and Python then never turns it into KeyboardInterrupt, so the run
    # went on and succeeded when the suite was started in the background.
    proc = subprocess.Popen([sys.executable, "-m", "benchfleet.cli", "run", str(spec)], env=env(home, tmpdir_of_run),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    joining = False
    while time.monotonic() < deadline and not joining and proc.poll() is None:
        for record in (home / "servers").glob("*.json") if (home / "servers").exists() else []:
            with contextlib.suppress(ValueError, OSError):  # written as we read it
                joining = len(json.loads(record.read_text())["server_pids"]) == 3  # every node, no proxy yet
        time.sleep(0.05)
    assert joining, "the nodes never started joining"
    os.kill(proc.pid, signal.SIGINT)  # Ctrl-C while n2 and n3 receive their state
    output = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, output
    assert "interrupted" in output, output
    assert_nothing_left(home, tmpdir_of_run)
