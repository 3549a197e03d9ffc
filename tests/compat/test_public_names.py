"""Every public name (docs/api/stability.md) imports: the list is generated from the code, the
`__all__` of each module of tests/compat/public_modules.txt, so a name dropped from a module (or
from its `__all__`) fails here and in `make api-check`."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests.compat.public_api import public_modules, public_names

ROOT = Path(__file__).resolve().parents[2]
STABILITY = ROOT / "docs" / "api" / "stability.md"


@pytest.mark.parametrize("module", sorted(public_modules()))
def test_every_public_name_of_the_module_imports(module):
    names = [name for mod, name in public_names() if mod == module]
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert names and not missing, f"{module}: public names that do not import: {missing}"


@pytest.mark.parametrize("module", sorted(m for m, names in public_modules().items() if names is None))
def test_a_public_module_declares_its_names_in_all_once_each(module):
    exported = importlib.import_module(module).__dict__.get("__all__")
    assert exported is not None, f"{module} has no __all__"
    assert len(exported) == len(set(exported)), f"{module}.__all__ repeats a name"


def test_the_generated_list_holds_the_names_plugin_authors_import():
    pairs = set(public_names())
    for pair in [("pathkit_core", "hookimpl"), ("pathkit_core.contracts", "Task"),
                 ("pathkit_sdk", "write_synthetic_slide"), ("pathkit_core.hookspecs", "register_metrics"),
                 ("pathkit_core.report.page", "Section"), ("pathkit_tasks", "TASK_REPORT")]:
        assert pair in pairs


def test_the_stability_page_names_every_public_module():
    text = STABILITY.read_text(encoding="utf-8")
    named = set(re.findall(r"`(pathkit_\w+(?:\.\w+)*)`", text))
    missing = sorted(set(public_modules()) - named)
    assert not missing, f"docs/api/stability.md does not name the public modules {missing}"
