"""doctor's Debian-package check: the versions the suite was last green with (.ci/system-versions.txt)
against what dpkg says is installed; a difference is a warning naming both versions, never a failure."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from benchfleet.cli import doctor
from benchfleet.spec.documents import repo_root

RECORDED = "# comment line\nmariadb-server 1:10.11.19-0+deb12u1\nsysbench 1.0.20+ds-5\nhaproxy 2.6.12-1+deb12u4\n"


def installed(versions: dict[str, str]):  # type: ignore[no-untyped-def]
    def query(packages: Iterable[str]) -> dict[str, str]:
        return {p: versions[p] for p in packages if p in versions}
    return query


def test_same_versions_are_ok(tmp_path: Path) -> None:
    recorded = tmp_path / "v.txt"
    recorded.write_text(RECORDED)
    check = doctor.system_packages_check(recorded, installed(
        {"mariadb-server": "1:10.11.19-0+deb12u1", "sysbench": "1.0.20+ds-5", "haproxy": "2.6.12-1+deb12u4"}))
    assert (check.status, check.detail) == ("ok", "as the suite was last green with")


def test_a_newer_server_is_a_warning_naming_both_versions(tmp_path: Path) -> None:
    recorded = tmp_path / "v.txt"
    recorded.write_text(RECORDED)
    check = doctor.system_packages_check(recorded, installed(
        {"mariadb-server": "1:10.11.20-0+deb12u1", "sysbench": "1.0.20+ds-5"}))
    assert check.status == "warn"
    assert check.detail == "mariadb-server 1:10.11.20-0+deb12u1 (suite green with 1:10.11.19-0+deb12u1)"
    assert "make system-versions" in check.fix
    assert not doctor.failed([check])


def test_a_missing_record_is_a_warning(tmp_path: Path) -> None:
    check = doctor.system_packages_check(tmp_path / "absent.txt", installed({}))
    assert check.status == "warn" and "unknown" in check.detail


def test_the_committed_record_parses_and_dpkg_answers_for_it() -> None:
    recorded = repo_root() / ".ci" / "system-versions.txt"
    check = doctor.system_packages_check(recorded)
    assert check.status in ("ok", "warn")
    assert "not found" not in check.detail
    assert "mariadb-server" in doctor.dpkg_versions(["mariadb-server"])
