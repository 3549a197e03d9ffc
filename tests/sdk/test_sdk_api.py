"""pathkit_sdk is a facade of re-exports: the helpers it names are the very objects of the modules
that define them, the core never imports it, the moved modules left only a deprecation alias behind, and
the pathkit distribution ships it."""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pathkit_sdk.cohort", "pathkit_sdk.reports", "pathkit_sdk.checkpoints", "pathkit_sdk.synthetic",
           "pathkit_sdk.splits", "pathkit_sdk.bootstrap", "pathkit_sdk.commands", "pathkit_sdk.masks",
           "pathkit_sdk.intervals", "pathkit_sdk.charts", "pathkit_sdk.tiles")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def test_every_public_helper_is_the_object_of_its_defining_module():
    import pathkit_sdk

    modules = [importlib.import_module(m) for m in SOURCES]
    assert len(pathkit_sdk.__all__) == len(set(pathkit_sdk.__all__))
    for name in pathkit_sdk.__all__:
        owners = [m.__name__ for m in modules if name in vars(m) and vars(m)[name] is getattr(pathkit_sdk, name)]
        assert owners, f"pathkit_sdk.{name} is not re-exported from {SOURCES}"
    for name in ("read_table", "cohort_rows", "choose_split", "CohortDataset", "check_user_split", "draw_split",
                 "bootstrap_ci", "bootstrap_statistic_ci", "proportion_ci", "write_synthetic_slide", "Blob"):
        assert name in pathkit_sdk.__all__


def test_the_facade_holds_only_imports_and_its_docstring():
    tree = ast.parse((REPO / "pathkit_sdk" / "__init__.py").read_text())
    for node in tree.body[1:]:
        is_all = isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
        assert isinstance(node, ast.ImportFrom) or is_all, ast.dump(node)[:80]


def test_the_core_never_imports_the_sdk():
    offenders = [f"{path.relative_to(REPO)}:{line}" for path in (REPO / "pathkit_core").rglob("*.py")
                 for line, module in _imported_modules(path) if module.split(".")[0] == "pathkit_sdk"]
    assert not offenders


def test_the_moved_modules_left_only_a_deprecation_alias_behind():
    """The old paths are thin aliases until pathkit 0.3 (tests/compat/test_shims.py checks each), and
    nothing in the repository but those tests imports them."""
    assert all((REPO / "pathkit_sdk" / f"{name}.py").is_file()
               for name in ("cohort", "synthetic", "bootstrap", "commands"))
    for old in (REPO / "plugins" / "datasets" / "pathkit_datasets" / "_cohort.py",
                REPO / "pathkit_core" / "wsi" / "synthetic.py", REPO / "pathkit_core" / "evaluation" / "bootstrap.py",
                REPO / "pathkit_core" / "cli" / "options.py"):
        assert "moved_module(__name__, " in old.read_text() and len(old.read_text().splitlines()) <= 6
    gone = {"pathkit_datasets._cohort", "pathkit_core.wsi.synthetic", "pathkit_core.evaluation.bootstrap",
            "pathkit_core.cli.options"}
    folders = ("pathkit_core", "pathkit_sdk", "pathkit_tasks", "pathkit_bench", "plugins", "tests", "benchmarks",
               "examples")
    users = [f"{path.relative_to(REPO)}:{line}" for folder in folders
             for path in (REPO / folder).rglob("*.py") if "compat" not in path.relative_to(REPO).parts
             for line, module in _imported_modules(path) if module in gone]
    assert not users


def test_the_pathkit_distribution_ships_the_sdk():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "pathkit_sdk*" in config["packages"]["find"]["include"]
    assert "py.typed" in config["package-data"]["pathkit_sdk"] and (REPO / "pathkit_sdk" / "py.typed").is_file()
