"""The core's shape, read from its source: the contract is a leaf, the core imports none of the
packages built on it, and no import cycle runs through it (imports inside functions counted)."""

from __future__ import annotations

import ast
from pathlib import Path

import pathkit_core

CORE = Path(pathkit_core.__file__).resolve().parent
# Packages built on the core (the distribution's own plugins and the public helper API) and the
# plugin distributions: the core may name them in text, never import them.
ABOVE_CORE = ("pathkit_tasks", "pathkit_bench", "pathkit_interop", "pathkit_tissue", "pathkit_readers", "pathkit_sdk",
              "pathkit_encoders", "pathkit_generators", "pathkit_datasets", "pathkit_metrics")


def _module(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at module level or inside a function (absolute names)."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the core modules it imports. A module's own enclosing packages are left out: Python
    runs them before the module whatever it imports (`from pathkit_core.run import fit` inside
    `pathkit_core.run.pipeline` imports `fit`, not a cycle through `pathkit_core.run`)."""
    files = {_module(p): p for p in CORE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        enclosing = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = {m for m in _imports(path) if m in files and m != name and m not in enclosing}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# The one pathkit module the contract may import: the deprecation helper its moved task names go
# through (itself a leaf, checked below).
CONTRACT_MAY_IMPORT = {"pathkit_core._deprecation", "pathkit_core._deprecation.moved_attribute"}


def test_the_contract_imports_nothing_from_pathkit():
    imported = _imports(CORE / "contracts.py") - CONTRACT_MAY_IMPORT
    assert not [m for m in imported if m.split(".")[0].startswith("pathkit")], imported
    helper = _imports(CORE / "_deprecation.py")
    assert not [m for m in helper if m.split(".")[0].startswith("pathkit")], helper


def test_the_core_imports_none_of_the_packages_built_on_it():
    offenders = {_module(p): sorted(m for m in _imports(p) if m.split(".")[0] in ABOVE_CORE)
                 for p in CORE.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_import_cycle_in_the_core():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
