"""Reading a spec or workload document: bounded, strict, and with errors that name the file and field.

A document is YAML or JSON read from a file (or a JSON body in the API). Before any model sees it,
it is held to limits no real spec comes near (size, depth, number of values, 64-bit integers), so a
hostile or broken file is refused in milliseconds with its field named (``SpecError``), never after
minutes and gigabytes. Also where a checkout's workloads/ are (``repo_root``, ``workloads_dir``).
"""

from __future__ import annotations

import codecs
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

# Limits on what a spec document may be. A real spec is a few kilobytes, four levels deep, with
# small integers; past these a reader would spend minutes and gigabytes (or overflow its stack)
# before saying anything useful.
MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 20
MAX_VALUES = 100_000          # also bounds YAML aliases that expand one node into millions
MAX_INT_DIGITS = 19           # 64-bit integers; no field or sysbench option takes more
MAX_PROBLEMS_SHOWN = 20       # a screenful


class SpecError(ValueError):
    """A spec or workload that cannot be used. ``problems`` are ``(field path, message)`` pairs;
    the message shows the first MAX_PROBLEMS_SHOWN and counts the rest."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        shown = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}"
                 for path, msg in problems[:MAX_PROBLEMS_SHOWN]]
        if len(problems) > MAX_PROBLEMS_SHOWN:
            shown.append(f"{source}: ... and {len(problems) - MAX_PROBLEMS_SHOWN} more problems")
        super().__init__("\n".join(shown))


def join_path(path: str, key: str | int) -> str:
    """``targets`` + 0 -> ``targets[0]``; ``workload`` + ``threads`` -> ``workload.threads``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class LongNumber(str):
    """An integer literal longer than MAX_INT_DIGITS, kept as its text: converting it would raise
    (Python refuses more than 4300 digits) or hand sysbench a number it cannot read."""


def bounded_int(text: str) -> int | LongNumber:
    """``parse_int`` for JSON and YAML readers: big integers become LongNumber, reported by
    ``document_problems`` with their field."""
    digits = text.lstrip("+-").replace("_", "")
    return LongNumber(text) if len(digits) > MAX_INT_DIGITS else int(text, 0 if digits[:2] in ("0x", "0o", "0b")
                                                                      else 10)


def document_problems(value: Any, top: str = "") -> list[tuple[str, str]]:
    """Where a parsed document nests deeper than MAX_DEPTH, holds more than MAX_VALUES values or a
    number strict JSON cannot carry (NaN, Infinity, overflowing floats, integers beyond 64 bits).
    Iterative, so the depth it checks cannot exhaust the stack; ``top`` names the root."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    seen = 0
    while stack and len(problems) < MAX_PROBLEMS_SHOWN:
        item, path, depth = stack.pop()
        where = f"{top}{path}" if not path or path.startswith("[") else path
        seen += 1
        if seen > MAX_VALUES:
            problems.append((top, f"holds more than {MAX_VALUES} values; a spec needs far fewer"))
            break
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                problems.append((where, f"is nested more than {MAX_DEPTH} levels deep"))
                continue
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, join_path(path, k if isinstance(k, int) else str(k)), depth + 1)
                         for k, v in reversed(list(pairs)))
        elif isinstance(item, LongNumber) or (type(item) is int and not -(2**63) <= item < 2**63):
            problems.append((where, f"is a number of more than {MAX_INT_DIGITS} digits; no field takes one"))
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append((where, "must be a finite number (NaN, Infinity and numbers beyond 1.8e308 "
                                    "are not JSON)"))
    return problems


def repo_root() -> Path:
    """The checkout that holds workloads/ (BENCHFLEET_REPO overrides, for installed copies)."""
    env = os.environ.get("BENCHFLEET_REPO")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "workloads").is_dir():
            return parent
    return Path.cwd()


def workloads_dir() -> Path:
    return Path(os.environ.get("BENCHFLEET_WORKLOADS") or repo_root() / "workloads")


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A spec, workload or cnf file's text; SpecError naming the file when it is not a regular file
    (a FIFO or a device would block or never end), is larger than ``limit``, or is not UTF-8 text."""
    where = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then tells what it is.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise SpecError(where, [("", f"cannot read: {e.strerror or e}")]) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) \
            else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "special"
        raise SpecError(where, [("", f"is {kind}, not a regular file")])
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise SpecError(where, [("", f"is larger than {limit // 1024} KiB ({info.st_size} bytes); "
                                         "a spec or workload is a few KiB")])
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise SpecError(where, [("", f"cannot read: {e.strerror or e}")]) from None
    if len(data) > limit:  # grew while we read it
        raise SpecError(where, [("", f"is larger than {limit // 1024} KiB")])
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise SpecError(where, [("", "is UTF-16 or UTF-32 text; save it as UTF-8")])
    if b"\x00" in data:
        raise SpecError(where, [("", "is a binary file or UTF-16 text without a BOM (it holds NUL bytes), "
                                     "not UTF-8 YAML or JSON")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SpecError(where, [("", f"is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                                     "save it as UTF-8")]) from None


def yaml_loader() -> type:
    """SafeLoader whose integers are bounded like JSON's (``bounded_int``)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        text = str(loader.construct_scalar(node))
        digits = text.lstrip("+-").replace("_", "")
        if len(digits) > MAX_INT_DIGITS:
            return LongNumber(text)
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
        # YAML says keys are unique; PyYAML keeps the last silently, so a spec that sets a key twice
        # would run with whichever came last. Refused, naming the key and both lines.
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # not a spec key; the models report it
            if key in seen:
                raise DuplicateKey(f"key {key!r} is given twice (lines {seen[key]} and "
                                   f"{key_node.start_mark.line + 1}); a key may appear once")
            seen[key] = key_node.start_mark.line + 1
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    return Loader


class DuplicateKey(ValueError):
    """A JSON object or YAML mapping that gives one key twice (readers keep the last silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for json.loads: DuplicateKey naming a key given twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"key {key!r} is given twice in one object; a key may appear once")
        out[key] = value
    return out


def read_document(path: Path) -> Any:
    """YAML or JSON from a file; SpecError (naming the file, and the line or field) when it is
    neither, or breaks a limit (size, depth, number of values, numbers JSON cannot carry)."""
    import yaml  # CLI-only path; Lambdas receive JSON

    text = read_text(path)
    try:
        if path.suffix == ".json":
            data = json.loads(text, parse_int=bounded_int, object_pairs_hook=unique_keys)
        else:
            data = yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except DuplicateKey as e:
        raise SpecError(str(path), [("", str(e))]) from None
    except RecursionError:
        raise SpecError(str(path), [("", f"is nested far more than {MAX_DEPTH} levels deep")]) from None
    except json.JSONDecodeError as e:
        raise SpecError(str(path), [("", f"invalid JSON at line {e.lineno}: {e.msg}")]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SpecError(str(path), [("", f"invalid YAML{where}: {getattr(e, 'problem', e)}")]) from None
    except ValueError as e:  # a YAML scalar its constructor cannot convert
        raise SpecError(str(path), [("", f"invalid value: {str(e)[:200]}")]) from None
    problems = document_problems(data)
    if problems:
        raise SpecError(str(path), problems)
    return data
