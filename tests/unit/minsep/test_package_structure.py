"""The package's shape stays what issue 27 made it: imports run one way (no circles between
modules), no production module over 600 lines, at most two functions over 100 lines.

Read from the source with :mod:`ast` (nothing is imported), over the folders that the
``minsep`` package maps (pyproject's package-dir): an import counts wherever it stands, under
``TYPE_CHECKING`` and inside functions too; package ``__init__`` modules, which re-export, are
left out of the graph, as is usual for import-cycle checks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: The folders mapped into the ``minsep`` package.
FOLDERS = ("accountants", "framework", "minsep", "paper", "schemes", "strategies", "training")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
MAX_LONG_FUNCTIONS = 2


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] == "training" and parts[1:2] == ["torch"]:
        parts = ["minsep", "torch", *parts[2:]]  # mapped as minsep.torch
    return ".".join(parts if parts[0] == "minsep" else ["minsep", *parts])


def _sources() -> dict[str, Path]:
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_modules_import_each_other_without_circles() -> None:
    sources = _sources()
    packages = {name for name, path in sources.items() if path.name == "__init__.py"}
    graph = {
        name: {
            target
            for target in _imports(name, path)
            if target in sources and target not in packages and target != name
        }
        for name, path in sources.items()
        if name not in packages
    }
    assert _cycles(graph) == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_is_over_600_lines(folder: str) -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / folder).rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_at_most_two_functions_are_over_100_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in _sources().values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert len(long) <= MAX_LONG_FUNCTIONS, long
