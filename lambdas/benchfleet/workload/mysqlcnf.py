"""Render a workloads/mysql/*.cnf for one engine and one amount of memory.

Shipped with the agent (standard library only, Python 3.8+), because on EC2 the agent renders the cnf
for the host it runs on, and locally benchfleet renders it for the memory a target is given.

The cnf files are ordinary option files with two additions, both explicit so nothing is dropped
silently:
- a value ``NN%`` on a memory-sized option (``innodb_buffer_pool_size = 80%``) is that share of the
  memory the server is given, in bytes;
- groups ``[mysqld:mysql]`` and ``[mysqld:mariadb]`` hold options only one engine understands. The
  other engine skips them and the rendered file lists every skipped option in a comment, which is
  also returned as notes so that the run reports it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Tuple

ENGINES = ("mysql", "mariadb")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
_MEMORY_OPTIONS = {"innodb_buffer_pool_size", "innodb_log_buffer_size", "key_buffer_size"}


class CnfError(ValueError):
    """A cnf file that cannot be rendered (names the line and the problem)."""


@dataclass
class RenderedCnf:
    text: str
    options: List[Tuple[str, str]]
    skipped: List[str] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def engine_family(engine: str) -> str:
    """``mysql-8.0`` -> ``mysql``; ``mariadb-10.11`` / ``local`` MariaDB -> ``mariadb``."""
    family = engine.split("-", 1)[0].lower()
    if family not in ENGINES:
        raise CnfError("unknown engine {!r}: expected mysql-X.Y or mariadb-X.Y".format(engine))
    return family


def with_server_options(cnf_source: str, options: Optional[Mapping[str, object]]) -> str:
    """A cnf with a spec's ``server_options`` layered over it: a ``[mysqld]`` group at the end, whose
    values win over the file's (the server keeps the last value of an option; ``render`` too)."""
    if not options:
        return cnf_source
    lines = ["", "[mysqld]", "# server_options from the spec"]
    for name, value in options.items():
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        lines.append("{} = {}".format(name, value))
    return cnf_source.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def render(source: str, engine: str, memory_bytes: Optional[int], name: str = "cnf") -> RenderedCnf:
    """The ``[mysqld]`` options of ``source`` that apply to ``engine``, percentages resolved (kept as
    ``NN%``, checked, when ``memory_bytes`` is None: RDS sizes them by its own formula). An option
    given twice keeps its last value, as the server does."""
    family = engine_family(engine)
    group = None
    options: List[Tuple[str, str]] = []
    skipped: List[str] = []
    for number, raw in enumerate(source.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip().lower()
            if group not in ("mysqld", "mysqld:mysql", "mysqld:mariadb"):
                raise CnfError("{}:{}: unknown group [{}]; use [mysqld], [mysqld:mysql] or [mysqld:mariadb]".format(
                    name, number, group))
            continue
        if group is None:
            raise CnfError("{}:{}: option outside a group".format(name, number))
        key, sep, value = line.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not re.match(r"^[a-z][a-z0-9_.]*$", key):
            raise CnfError("{}:{}: invalid option name {!r}".format(name, number, key))
        if group != "mysqld" and group.split(":", 1)[1] != family:
            skipped.append("{} (only for {})".format(key, group.split(":", 1)[1]))
            continue
        if sep:
            value = _resolve(key, value, memory_bytes, name, number)
        options = [(k, v) for k, v in options if k != key]
        options.append((key, value if sep else ""))
    lines = ["[mysqld]"]
    lines += ["{} = {}".format(k, v) if v != "" else k for k, v in options]
    if skipped:
        lines.append("# not applied on {}: {}".format(family, ", ".join(skipped)))
    return RenderedCnf(text="\n".join(lines) + "\n", options=options, skipped=skipped)


def _resolve(key: str, value: str, memory_bytes: Optional[int], name: str, number: int) -> str:
    m = _PERCENT.match(value)
    if not m:
        return value
    if key not in _MEMORY_OPTIONS:
        raise CnfError("{}:{}: {} cannot be a percentage of memory".format(name, number, key))
    share = float(m.group(1))
    if not 0 < share <= 90:
        raise CnfError("{}:{}: {} must be between 0% and 90% of memory".format(name, number, key))
    if memory_bytes is None:
        return value
    # InnoDB rounds the pool to its chunk size anyway; whole MiB keep the rendered file readable.
    mib = max(8, int(memory_bytes * share / 100) // (1024 * 1024))
    return "{}M".format(mib)

# ---- comparing settings and giving them to SET GLOBAL (variants; stdlib, shipped with the agent) ------
_SIZE = re.compile(r"^([0-9]+)([kmgt])$", re.IGNORECASE)
_TRUE, _FALSE = {"on", "true", "yes"}, {"off", "false", "no"}


def bytes_of(text: str) -> Optional[str]:
    """``64M`` -> ``67108864``; None when ``text`` is not a size with a unit."""
    size = _SIZE.match(text)
    return str(int(size.group(1)) * 1024 ** ("kmgt".index(size.group(2).lower()) + 1)) if size else None


_DECIMAL = re.compile(r"^-?[0-9]+\.[0-9]+$")


def plain_number(text: str) -> Optional[str]:
    """A decimal as the shortest exact spelling (``50.000000`` -> ``50``, ``0.90`` -> ``0.9``), None
    when ``text`` has no decimal point: MariaDB shows innodb_max_dirty_pages_pct = 50 as 50.000000,
    and comparing the spellings reported a setting the server had taken as one it had not."""
    if not _DECIMAL.match(text):
        return None
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    if not fraction:
        return "0" if whole == "-0" else whole
    return whole + "." + fraction


def normalised(value: object) -> str:
    """One spelling of a setting's value, for comparing two variants' settings: sizes in bytes,
    booleans as ON/OFF, decimals without trailing zeros."""
    low = str(value).strip().strip("'\"").lower()
    return bytes_of(low) or ("ON" if low in _TRUE else "OFF" if low in _FALSE else plain_number(low) or low)


def set_global_value(value: object) -> Optional[str]:
    """``value`` as SET GLOBAL takes it (sizes in bytes, ON/OFF, numbers bare, words quoted), or None
    when it holds characters no setting's value needs (then the server is restarted instead)."""
    text = normalised(value)
    if re.match(r"^(?:-?[0-9]+(?:\.[0-9]+)?|ON|OFF)$", text, re.IGNORECASE):
        return text
    raw = str(value).strip()
    return "'{}'".format(raw) if re.match(r"^[A-Za-z0-9_.,:/+-]{1,256}$", raw) else None
