"""The synthesized agent document on one booted host, an ``ec2`` target (MariaDB, the flagship
study's cpu-bound.cnf), with jobs from start_step: install, prepare, a measure step, and the fault
cases of issue 12 on a real systemd, dpkg, MariaDB and sysbench."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from deployed import job_of, plan, send_parameters, step_state
from hostfleet import Fleet, assert_per_second, dpkg_status, guest_ps, record
from onehost import BUCKET, booted_host
from runcommand import Invocation, RunCommand

from benchfleet.aws.errors import CollectFailed
from benchfleet.aws.steps import commands
from benchfleet.aws.steps.collect import read_raw
from benchfleet.workload.records import parse_agent_lines

RUN = "host-tier-ec2"
VOLUME = "vol-0a1b2c3d4e5f60718"  # the target's one data volume (default storage: gp3, xfs, noatime)
SPEC = {
    "name": "host-tier",
    "workload": {"name": "host-ro", "test": "oltp_read_only", "tables": 1, "table_size": 2000,
                 "prepare_threads": 1, "warmup_s": 0, "threads": [2], "duration_s": 6},
    "targets": [{"id": "m6g", "kind": "ec2", "instance_type": "m6g.large", "engine": "mariadb",
                 "mysql_config": "cpu-bound"}],
}


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"type"')]


@pytest.fixture(scope="module")
def host(fleet: Fleet, run_command: RunCommand) -> Any:
    with booted_host(fleet, run_command, "ec2", plan(SPEC, RUN), VOLUME) as h:
        started = time.monotonic()
        h.prepare = h.send("prepare")  # type: ignore[attr-defined]
        record("prepare_step_s", time.monotonic() - started)
        yield h


def test_the_document_has_the_step_start_step_polls(run_command: RunCommand) -> None:
    names = [s["name"] for s in run_command.document["mainSteps"]]
    assert commands.AGENT_PLUGIN in names


def test_the_prepare_step_ends_within_the_bound_its_plan_gives_it(host: Any) -> None:
    """The remote prepare timeout is derived from the planned load (issue 30 item 4): the prepare step
    measured on this booted host, installs included, ends within the execution timeout start_step sends
    (the load, its setup allowance and 600 s), and the load the plan gives it is not below the model's
    floor for its rows."""
    from hostfleet import TIMINGS

    from benchfleet.plan.estimates import PREPARE_MIN_SECONDS

    (prepare,) = [s for s in host.planned["targets"][0]["steps"] if s["kind"] == "prepare"]
    assert prepare["duration_s"] >= PREPARE_MIN_SECONDS
    assert TIMINGS["prepare_step_s"] < prepare["duration_s"] + prepare["setup_s"] + 600


def test_prepare_installs_configures_and_fingerprints_the_effective_server(host: Any) -> None:
    inv: Invocation = host.prepare
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Success", run.stdout[-3000:] + run.stderr[-3000:]
    # The CloudWatch agent cannot be installed here (as when the distributor fails): not fatal.
    assert inv.step("installCloudWatchAgent").status == "Failed"
    out = records_of(run.stdout)
    kinds = [r["type"] for r in out]
    assert "error" not in kinds and kinds[-1] == "prepared"
    notices = [r["message"] for r in out if r["type"] == "notice"]
    assert any("CloudWatch agent not-installed" in n for n in notices)
    installs = {r["action"]: r for r in out if r["type"] == "install"}
    # Pre-installed in the userland: the install runs and finds them, as on a retried prepare.
    # The engine, sysbench and the file system's tools (xfsprogs) for the data volume.
    assert [r["status"] for r in out if r.get("action") == "package"] == ["present"] * 3
    assert installs["background-apt"]["masked"] and installs["restart"]["service"] == "mariadb"
    assert installs["database"]["auth"] == "IDENTIFIED BY"
    for r in out:
        record(f"install_{r['action']}_s", r.get("seconds") or 0) if r["type"] == "install" else None
    (fp,) = [r for r in out if r["type"] == "fingerprint"]
    assert fp["engine_version"].startswith("10.11") and fp["client_library"] == "libmariadb"
    assert fp["sysbench_version"].startswith("sysbench 1.0.20") and fp["config_hash"]
    # The cnf asks for table_open_cache = 200000; MariaDB caps it by its open-files limit.
    changed = {d["option"]: d for d in fp["config_differences"]}
    assert changed["table_open_cache"]["requested"] == "200000"
    assert int(changed["table_open_cache"]["effective"]) < 200000
    assert fp["server_variables"]["table_open_cache"] == changed["table_open_cache"]["effective"]
    assert any("table_open_cache 200000 -> " in n for n in notices)
    assert "innodb_flush_method" not in changed and "performance_schema" not in changed


def test_the_data_directory_is_on_the_volume_found_by_its_id(host: Any) -> None:
    """Issue 26 on a booted host: the one data volume (a loop device under the by-id name Nitro gives
    it), xfs made on it, mounted with noatime and nofail from fstab by UUID, the data directory
    moved there and bind-mounted back, MariaDB running on it; the layout in the fingerprint."""
    out = records_of(host.prepare.step(commands.AGENT_PLUGIN).stdout)
    layout = next(r for r in out if r.get("action") == "storage")["layout"]
    loop = host.disks.volumes[VOLUME]
    assert layout["devices"] == [{"volume_id": VOLUME, "requested": "/dev/sdf", "device": loop,
                                  "by_id": "nvme-Amazon_Elastic_Block_Store_" + VOLUME.replace("-", "")}]
    assert (layout["device"], layout["level"], layout["filesystem"]) == (loop, None, "xfs")
    assert "noatime" in layout["mount_options"].split(",")
    fstab = host.machine.path("/etc/fstab").read_text()
    assert f"UUID={layout['uuid']} /srv/benchfleet xfs noatime,nofail 0 2 # benchfleet data" in fstab
    mounts = host.machine.run("cat /proc/mounts").stdout
    assert f"{loop} /srv/benchfleet xfs rw,noatime" in mounts and f"{loop} /var/lib/mysql xfs" in mounts
    # MariaDB's files are on the volume, and it answers from there.
    assert host.machine.run("test -f /srv/benchfleet/mysql/ibdata1").returncode == 0
    datadir = host.machine.run("mysql -uroot -N -B -e 'SELECT @@datadir'").stdout.strip()
    assert datadir.rstrip("/") == "/var/lib/mysql"
    (fp,) = [r for r in out if r["type"] == "fingerprint"]
    assert fp["storage_layout"]["source"] == loop and fp["storage_layout"]["filesystem"] == "xfs"
    assert fp["storage_layout"]["built"]["devices"] == layout["devices"]


def test_background_apt_is_masked_for_the_run(host: Any) -> None:
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "unattended-upgrades.service"):
        state = host.machine.run(f"systemctl is-enabled {unit}").stdout.strip()
        assert state == "masked-runtime", (unit, state)
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "unattended-upgrades.service"):
        # Stopped ("inactive", or "failed" for a timer stopped while masked): never "active".
        assert host.machine.run(f"systemctl is-active {unit}").stdout.strip() in ("inactive", "failed"), unit


def test_a_measure_step_gives_one_sample_per_second_and_no_password_on_any_command_line(host: Any) -> None:
    password = host.machine.path("/var/lib/benchfleet/db.cnf").read_text().split("password=")[1].strip()
    seen: list[str] = []
    done: dict[str, Invocation] = {}
    started = time.monotonic()
    worker = threading.Thread(target=lambda: done.setdefault("first", host.send("t0002")))
    worker.start()
    deadline = time.monotonic() + 120
    while not any("sysbench" in line and " run" in line for line in seen):
        assert time.monotonic() < deadline and worker.is_alive(), "sysbench never ran"
        seen = guest_ps(host.machine)
        time.sleep(0.2)
    # A second copy of the running step (a retried SendCommand) is refused on the host.
    second = host.send("t0002")
    worker.join(timeout=180)
    record("measure_step_s", time.monotonic() - started)
    assert not any(password in line for line in seen), "the password is on a command line"
    sysbench = next(line for line in seen if "sysbench" in line and " run" in line)
    assert "--config-file=" in sysbench and "--mysql-password" not in sysbench

    refused = second.step(commands.AGENT_PLUGIN)
    assert refused.status == "Failed" and refused.code == 4
    (error,) = records_of(refused.stdout)
    assert error["stage"] == "lock" and '"step": "t0002"' in error["message"]

    run = done["first"].step(commands.AGENT_PLUGIN)
    assert run.status == "Success", run.stdout[-3000:]
    out = parse_agent_lines("\n".join(json.dumps(r) for r in records_of(run.stdout)), "t0002")
    duration = SPEC["workload"]["duration_s"]  # type: ignore[index]
    assert_per_second([s.second for s in out.samples], duration)
    assert all(s.tps > 0 and s.threads == 2 for s in out.samples)
    # The data volume's disk in the same seconds (/proc/diskstats of its loop device): every figure.
    assert all(None not in (s.disk_reads_per_s, s.disk_writes_per_s, s.disk_read_mib_per_s,
                            s.disk_write_mib_per_s) for s in out.samples)
    (summary,) = out.summaries
    assert summary.tps > 0 and summary.events > 0
    # Kept on the host, line for line, until the host goes.
    kept = host.machine.path(f"/var/lib/benchfleet/output/{RUN}/m6g/rep-1/t0002.jsonl").read_text()
    assert records_of(kept) == records_of(run.stdout)

    # Collect sees two commands' output for the step and refuses to merge them.
    # Both under the host's own prefix, the one start_step named (issue 30, finding 13).
    prefix = send_parameters(step_state(host.planned, "m6g", "t0002"), host.monkeypatch)["OutputS3KeyPrefix"]
    assert prefix.startswith("hosts/arn:aws:ec2:us-east-1:") and prefix.endswith("/i-0123456789abcdef0/" + RUN
                                                                                     + "/m6g/rep-1/t0002")
    with pytest.raises(CollectFailed, match="output of 2 commands"):
        read_raw(host.s3, BUCKET, run_id=RUN, target_id="m6g", repetition=1, step="t0002", output_prefix=prefix)


def test_a_retry_after_an_interrupted_dpkg_converges(host: Any) -> None:
    m = host.machine
    # What a killed apt-get leaves: a package unpacked but not configured, and dpkg's journal.
    broken = m.run("dpkg --unpack /var/cache/apt/archives/sysbench_*.deb && touch /var/lib/dpkg/updates/0000")
    assert broken.returncode == 0, broken.stderr
    assert "unpacked" in dpkg_status(m, "sysbench")
    apt = m.run("apt-get install -y -q sysbench")
    assert apt.returncode != 0 and "dpkg was interrupted" in apt.stderr + apt.stdout
    inv = host.send("prepare")
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Success", run.stdout[-3000:]
    actions = [r.get("action") for r in records_of(run.stdout) if r["type"] == "install"]
    assert "dpkg-configure" in actions and "apt-update" not in actions
    # The storage of the first prepare is kept: found, not built again.
    storage = next(r for r in records_of(run.stdout) if r.get("action") == "storage")
    assert storage["status"] == "present"
    assert dpkg_status(m, "sysbench") == "install ok installed"
    assert records_of(run.stdout)[-1]["type"] == "prepared"


def test_a_volume_that_never_appears_fails_the_prepare_naming_it(host: Any) -> None:
    """A second volume the instance was launched with but that is not on the host: the prepare fails
    within its wait, naming the volume and its device name, and what is there; the layout already on
    the host is left as it is."""
    params = host.parameters("prepare")
    job = job_of(params)
    lost = "vol-0fedcba9876543210"
    job["install"]["storage"].update(count=2, raid=0, device_wait_s=2, volumes=[
        *job["install"]["storage"]["volumes"], {"volume_id": lost, "device": "/dev/sdg"}])
    params["Parameters"]["JobJson"] = [json.dumps(job)]
    inv = host.send(parameters=params)
    run = inv.step(commands.AGENT_PLUGIN)
    assert run.status == "Failed" and run.code == 3
    (error,) = [r for r in records_of(run.stdout) if r["type"] == "error"]
    assert (error["stage"], error["device"]) == ("storage", f"volume {lost} (/dev/sdg)")
    assert error["message"].startswith(f"volume {lost} (/dev/sdg) did not appear under /dev/disk/by-id within 2 s")
    assert "nvme-Amazon_Elastic_Block_Store_" + VOLUME.replace("-", "") in error["message"]  # what is there
    assert host.disks.volumes[VOLUME] + " /srv/benchfleet xfs" in host.machine.run("cat /proc/mounts").stdout


def test_the_job_carries_no_password(host: Any) -> None:
    params = send_parameters(step_state(host.planned, "m6g", "t0002"), host.monkeypatch)
    job = job_of(params)
    assert "password" not in job["db"] and job["db"]["password_file"] == "/var/lib/benchfleet/db.cnf"
    assert job["db"]["tls"] == "off"
