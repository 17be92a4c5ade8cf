"""The dependency direction of lambdas/ (DESIGN.md): no import circle between its modules, imports
inside functions included (a lazy import only hides a circle until someone moves it to the top)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LAMBDAS = REPO / "lambdas"


def module_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of ``root`` it imports anywhere in its text."""
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # `from benchfleet.plan import naming` is the module benchfleet.plan.naming
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle_in_lambdas() -> None:
    graph = module_graph(LAMBDAS)
    assert "benchfleet.local.importer" in graph and graph["benchfleet.cli.main"]  # the graph reads real modules
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
