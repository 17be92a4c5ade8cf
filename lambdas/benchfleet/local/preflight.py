"""Checks before a local run starts anything: what only this machine can tell about a spec.

- an existing target needs a password source this machine can read (``password_env`` set,
  ``password_file`` readable; ``password_secret_arn`` is read by an instance role, on AWS only), a
  server that answers, and a schema that holds nothing but benchfleet's tables;
- a local cluster needs Debian's ``galera-4`` (the Galera provider), ``rsync`` (state transfer) and
  its proxy (``haproxy``; ``proxysql`` only when it is on the PATH), each refused naming the package;
- every local target's server options (its cnf with ``server_options`` layered over it) are shown
  to ``mariadbd --verbose --help``, which parses them exactly as a start would. An option the server
  does not know is a SpecError naming the target's field, in the server's own words (an abbreviated
  name too: ``abbreviations``); a value it adjusts ("unsigned value 1 adjusted to 2097152") is a notice, once per run.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchfleet.cluster import galera
from benchfleet.local.existing import ExistingServer, ExistingServerError, password_of
from benchfleet.local.galera import proxy_available
from benchfleet.local.mariadb import LocalServerError, find_binary
from benchfleet.spec.documents import SpecError
from benchfleet.spec.loading import LoadedSpec
from benchfleet.spec.settings import cnf_source
from benchfleet.spec.targets import ExistingTarget, LocalTarget
from benchfleet.workload.mysqlcnf import CnfError, render


@dataclass
class Preflight:
    notices: list[str] = field(default_factory=list)


def preflight(loaded: LoadedSpec) -> Preflight:
    """Raise SpecError (exit 2) naming each target field this machine cannot run; return notices."""
    problems, warned = server_option_problems(loaded)
    out = Preflight()
    for i, target in enumerate(loaded.spec.targets):
        if isinstance(target, ExistingTarget):
            if target.password_secret_arn:
                problems.append((f"targets[{i}].password_secret_arn", "is read by an instance role on AWS; "
                                 "from this machine name password_env or password_file"))
                continue
            try:
                password_of(target, i)
            except ExistingServerError as e:
                field_name, _, message = str(e).partition(": ")
                problems.append((field_name, message))
                continue
            # Reachable, and its schema provably benchfleet's (or absent), before anything starts.
            try:
                ExistingServer(target).inspect()
            except ExistingServerError as e:
                message = str(e).removeprefix(f"{target.id}: ")
                problems.append((f"targets[{i}].database" if "refusing" in message else f"targets[{i}].host",
                                 message))
        elif isinstance(target, LocalTarget):
            # (A cluster's variants may not change its nodes' settings: the spec's rule,
            # benchfleet.spec.rules.cluster_settings_problems, refused that when the spec was loaded.)
            problems += cluster_problems(target, i)
            problems += engine_problems(target, i)
    if problems:
        raise SpecError(loaded.source, problems)
    out.notices = [f"{target_id}: MariaDB says: {w}" for w, target_id in warned.items()]
    return out


def server_option_problems(loaded: LoadedSpec) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """(problems, the server's warnings -> the first target each concerns) of every local target's
    server options, each variant's in turn (the server runs them all), as ``mariadbd --verbose --help``
    parses them: ``run`` and ``doctor`` (through ``preflight``) and ``validate`` alike, so a misspelt
    option is never "valid". No server here: nothing to check by (the start would say)."""
    problems: list[tuple[str, str]] = []
    checked: dict[str, tuple[list[str], list[str]]] = {}
    warned: dict[str, str] = {}
    for i, target in enumerate(loaded.spec.targets):
        if not isinstance(target, LocalTarget):
            continue
        for j, variant in enumerate(loaded.variants or [None]):
            config, source = cnf_source(target, variant)
            where = f"targets[{i}].server_options" if target.server_options else f"targets[{i}].mysql_config"
            if variant is not None and (variant.server_options or variant.mysql_config):
                where = f"variants[{j}].server_options" if variant.server_options else f"variants[{j}].mysql_config"
            try:
                text = render(source, "mariadb", target.memory_mb * 1024 * 1024, f"{config}.cnf").text
            except CnfError as e:
                problems.append((where, str(e)))
                continue
            if text not in checked:
                try:
                    checked[text] = server_verdict(text)
                except LocalServerError:
                    return problems, warned
            errors, warnings = checked[text]
            problems += [(where, e) for e in errors]
            for w in warnings:
                warned.setdefault(w, target.id)
    return problems, warned


def engine_problems(target: LocalTarget, index: int) -> list[tuple[str, str]]:
    """A local target runs the MariaDB installed here: an ``engine`` naming another version is refused
    (it ran on the installed one, recorded in the fingerprint, while the spec said otherwise)."""
    wanted = target.engine.partition("-")[2]
    if not wanted:
        return []
    installed = installed_version()
    if installed is None or installed == wanted or installed.startswith(wanted + "."):
        return []  # unknown here: the start says what is missing
    short = ".".join(installed.split(".")[:2])
    return [(f"targets[{index}].engine", f"{target.engine}: this machine's MariaDB is {installed}, and a local target "
                                         f"runs the server installed here: write mariadb or mariadb-{short}")]


@functools.lru_cache(maxsize=1)
def installed_version() -> str | None:
    """The installed server's version (``mariadbd --version``: "... Ver 10.11.19-MariaDB-..."), None
    when it cannot be told."""
    try:
        done = subprocess.run([find_binary("mariadbd", "mysqld"), "--version"], capture_output=True, text=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired, LocalServerError):
        return None
    found = re.search(r"\bVer\s+([0-9]+(?:\.[0-9]+)*)", done.stdout)
    return found.group(1) if found else None


def cluster_problems(target: LocalTarget, index: int) -> list[tuple[str, str]]:
    """What this machine lacks to run ``target``'s local cluster, each naming the field and the package."""
    if target.cluster is None:
        return []
    where = f"targets[{index}].cluster"
    problems = []
    provider = galera.PROVIDERS["mariadb-galera"]
    if not Path(provider).exists():
        problems.append((where, f"a local Galera cluster needs the distribution's galera-4 package ({provider} "
                                "is missing; make system-deps installs it)"))
    if not shutil.which("rsync"):
        problems.append((where, "a local Galera cluster needs rsync (its nodes join by rsync state transfer): "
                                "install the distribution's rsync package"))
    why = proxy_available(target.cluster.proxy)
    if why:
        problems.append((f"{where}.proxy", why))
    return problems


def server_verdict(cnf_text: str) -> tuple[list[str], list[str]]:
    """(errors, warnings) of ``mariadbd`` about a rendered cnf's options, in its own words, and the
    options it would take by an abbreviation (``abbreviations``)."""
    with tempfile.TemporaryDirectory(prefix="benchfleet-check-") as directory:
        cnf = Path(directory) / "my.cnf"
        cnf.write_text(cnf_text + f"datadir = {directory}\n" + ("user = root\n" if os.geteuid() == 0 else ""))
        try:
            done = subprocess.run([find_binary("mariadbd", "mysqld"), f"--defaults-file={cnf}", "--verbose",
                                   "--help"], capture_output=True, text=True, timeout=60, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return [], ["could not check the options in 60 s; the server start will"]
    errors, warnings = abbreviations(cnf_text, done.stdout), []
    for line in done.stderr.splitlines():
        text = galera.LOG_PREFIX.sub("", line.strip())
        if "[ERROR]" in text and "Aborting" not in text:
            errors.append("MariaDB refuses it: " + text.split("] ", 1)[-1] + _did_you_mean(text))
        elif "[Warning]" in text and "option '" in text:
            warnings.append(text.split("] ", 1)[-1].removeprefix("Buffered warning: "))
    if done.returncode != 0 and not errors:
        errors.append("MariaDB refuses it: "
                      + (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1])
    return errors, warnings


_UNKNOWN = re.compile(r"unknown (?:variable|option) '-*([A-Za-z0-9_-]+)")


def _did_you_mean(error: str) -> str:
    """" (did you mean <option>?)" for the server's "unknown variable 'name=value'", from its own list."""
    found = _UNKNOWN.search(error)
    close = difflib.get_close_matches(found.group(1).replace("-", "_"), known_options(), n=1,
                                      cutoff=0.75) if found else []
    return f" (did you mean {close[0]}?)" if close else ""


@functools.lru_cache(maxsize=1)
def known_options() -> tuple[str, ...]:
    """Every option this machine's server takes (``mariadbd --no-defaults --verbose --help``)."""
    try:
        done = subprocess.run([find_binary("mariadbd", "mysqld"), "--no-defaults", "--verbose", "--help"],
                              capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired, LocalServerError):
        return ()
    return tuple(sorted({m.replace("-", "_") for m in _HELP_OPTION.findall(done.stdout)}))


# An option as ``mariadbd --verbose --help`` lists it ("  --name[=...]", "  -a, --name"), and the
# prefixes an option name may carry in a cnf.
_HELP_OPTION = re.compile(r"^\s+(?:-\w, )?--([A-Za-z0-9_-]+)", re.MULTILINE)
_NAME_PREFIX = re.compile(r"^(?:loose|maximum|enable|disable|skip)_")


def abbreviations(cnf_text: str, help_text: str) -> list[str]:
    """The cnf's options that are no option's full name but the start of exactly one: MariaDB takes
    such a unique prefix silently as that option (``innodb_flush_log_at_trx = 2`` sets
    innodb_flush_log_at_trx_commit), while benchfleet verifies settings, switches variants and compares
    them by the name written, so the setting went unverified (recorded as effective null, no difference)
    and a managed option (``skip_grant_table``) slipped past the spec's refusal. Refused, naming the
    full name. (An ambiguous prefix the server refuses itself; an unknown name too.)"""
    known = {m.replace("-", "_") for m in _HELP_OPTION.findall(help_text)}
    if not known:  # no listing to judge by: the start itself will tell
        return []
    problems = []
    for line in cnf_text.splitlines():
        name = line.split("=", 1)[0].strip().replace("-", "_")
        if not name or name.startswith(("[", "#")) or name in known:
            continue
        bare = _NAME_PREFIX.sub("", name)
        if bare in known:
            continue
        full = sorted({k for k in known if k.startswith(bare)} | {k for k in known if k.startswith(name)})
        if len(full) == 1:
            problems.append(f"{name} is not an option's full name: MariaDB would take it as {full[0]} (a unique "
                            f"prefix), which benchfleet could then neither verify nor switch by that name; "
                            f"write {full[0]}")
    return problems
