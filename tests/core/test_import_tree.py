"""The core's folders and top-level modules import one another as a tree (no cycle between them):
what two of them share lives in a lower module (`pathkit_core/console.py`, `features/qc.py`)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pathkit_core

CORE = Path(pathkit_core.__file__).parent


def _part(module: str) -> str | None:
    """The folder or top-level module of the core that `module` lies in."""
    parts = module.split(".")
    if parts[0] != "pathkit_core" or len(parts) < 2:
        return None
    return parts[1] if (CORE / parts[1]).is_dir() or (CORE / f"{parts[1]}.py").is_file() else None


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE)
        source = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                top = node.module == "pathkit_core"
                names = [f"pathkit_core.{a.name}" for a in node.names] if top else [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            edges[source].update(p for p in map(_part, names) if p not in (None, source, "__init__"))
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def test_the_core_folders_import_as_a_tree():
    edges = _edges()
    assert {"training", "features"} <= edges["run"]  # the graph was read
    assert _cycle(edges) is None, " -> ".join(_cycle(edges) or [])
