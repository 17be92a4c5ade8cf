#!/usr/bin/env python3
"""Fails, naming each package, when pyproject.toml asks for something uv.lock does not satisfy.

`uv lock --check` (run after this by `make lock-check`) also says the lock is stale, but not which
requirement made it so; this names the package, the requirement and the locked version. Standard
library plus `packaging` (pip's own copy when the interpreter has no other), so it runs before the
virtualenv exists.

Usage: check_lock.py [PROJECT_DIR]   (default: the checkout this file is in)
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # a bare interpreter: pip vendors the same library
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]
    from pip._vendor.packaging.version import Version  # type: ignore[no-redef]


def requirements(pyproject: dict) -> list[tuple[str, Requirement]]:
    """(where, requirement) for every dependency, extra and uv constraint pyproject.toml declares."""
    project = pyproject.get("project", {})
    found = [("dependencies", Requirement(r)) for r in project.get("dependencies", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        found += [(f"optional-dependencies.{extra}", Requirement(r)) for r in reqs]
    uv = pyproject.get("tool", {}).get("uv", {})
    found += [("tool.uv.constraint-dependencies", Requirement(r)) for r in uv.get("constraint-dependencies", [])]
    return found


def locked(lock: dict) -> dict[str, list[dict]]:
    """Locked packages by canonical name (a universal lock may hold several versions of one name)."""
    by_name: dict[str, list[dict]] = {}
    for pkg in lock.get("package", []):
        by_name.setdefault(canonicalize_name(pkg["name"]), []).append(pkg)
    return by_name


def problems(project_dir: Path) -> list[str]:
    pyproject = tomllib.loads((project_dir / "pyproject.toml").read_text())
    lock_path = project_dir / "uv.lock"
    if not lock_path.exists():
        return [f"{lock_path}: missing; run `make lock`"]
    packages = locked(tomllib.loads(lock_path.read_text()))
    found = []
    for where, req in requirements(pyproject):
        name = canonicalize_name(req.name)
        entries = packages.get(name)
        if not entries:
            found.append(f"{req.name}: pyproject.toml {where} asks for '{req}', uv.lock has no {req.name}")
            continue
        versions = [e["version"] for e in entries]
        wrong = [v for v in versions if not req.specifier.contains(Version(v), prereleases=True)]
        if wrong:
            found.append(
                f"{req.name}: pyproject.toml {where} asks for '{req}', uv.lock has {req.name} {', '.join(wrong)}"
            )
        for extra in sorted(req.extras):
            if not all(extra in e.get("optional-dependencies", {}) for e in entries):
                found.append(f"{req.name}: pyproject.toml {where} asks for extra [{extra}], uv.lock does not lock it")
    return found


# Packages the runtime floor (.ci/lambda-runtime.in) may move away from uv.lock's versions.
FLOOR_FOLLOWERS = {"s3transfer", "urllib3"}


def pins(path: Path) -> dict[str, str]:
    """name -> version of a compiled requirements file's `name==version` lines."""
    found = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, _, rest = line.partition("==")
            found[canonicalize_name(name)] = rest.split()[0].rstrip("\\").strip()
    return found


def runtime_problems(project_dir: Path) -> list[str]:
    """.ci/lambda-runtime.txt must hold the floor .ci/lambda-runtime.in names and uv.lock's version of
    everything else, or the second test environment tests a set nothing deploys."""
    compiled, floor_in = project_dir / ".ci" / "lambda-runtime.txt", project_dir / ".ci" / "lambda-runtime.in"
    if not floor_in.exists():
        return []
    if not compiled.exists():
        return [f"{compiled}: missing; run `make lambda-runtime-lock`"]
    floor, have = pins(floor_in), pins(compiled)
    packages = locked(tomllib.loads((project_dir / "uv.lock").read_text()))
    found = []
    for name, version in have.items():
        want = floor.get(name)
        if want is None and name not in FLOOR_FOLLOWERS and name in packages:
            lock_versions = [e["version"] for e in packages[name]]
            if version not in lock_versions:
                found.append(f"{name}: .ci/lambda-runtime.txt has {version}, uv.lock has {', '.join(lock_versions)}")
        elif want is not None and version != want:
            found.append(f"{name}: .ci/lambda-runtime.txt has {version}, .ci/lambda-runtime.in asks for {want}")
    found += [f"{name}: .ci/lambda-runtime.in asks for {v}, .ci/lambda-runtime.txt lacks it"
              for name, v in floor.items() if name not in have]
    return found


def main(argv: list[str]) -> int:
    project_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = problems(project_dir)
    runtime = runtime_problems(project_dir)
    for line in found + runtime:
        print(f"lock-check: {line}", file=sys.stderr)
    if found:
        print("lock-check: uv.lock is not current with pyproject.toml; run `make lock` and review the diff",
              file=sys.stderr)
        return 1
    if runtime:
        print("lock-check: .ci/lambda-runtime.txt is not current; run `make lambda-runtime-lock` and review the diff",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
