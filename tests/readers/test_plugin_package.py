"""The slide readers are a plugin package of the distribution (`pathkit_readers`, entry point
`slide-readers`), not core code: every registry has them, their code keys the tiles and features
made from slides, and the old import paths under `pathkit_core.wsi.readers` still import until
pathkit 0.3, with one DeprecationWarning each, giving the new objects (docs/formats.md, "Where the
readers live, and why"; docs/plugin-authors.md, "Moved names")."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import pathkit_core
from pathkit_core import _deprecation, hookimpl

REPO = Path(__file__).resolve().parents[2]
FORMATS = ("axes", "czi", "dicom", "ome_tiff", "ome_zarr", "openslide_reader", "vsi")
# old module -> (new module, a name the old module held)
MOVED = {
    "pathkit_core.wsi.readers": ("pathkit_readers", "doctor_checks"),
    "pathkit_core.wsi.readers.base": ("pathkit_readers.base", "ReaderHandle"),
    "pathkit_core.wsi.readers.choose": ("pathkit_core.wsi.reader_choice", "open_handle"),
}
SHIMS = [*MOVED, *(f"pathkit_core.wsi.readers.{n}" for n in FORMATS)]


@pytest.fixture
def fresh(monkeypatch):
    """The old paths not imported and nothing warned yet in this process (restored afterwards)."""
    monkeypatch.setattr(_deprecation, "_warned", set())
    for name in SHIMS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    wsi = importlib.import_module("pathkit_core.wsi")
    if "readers" in vars(wsi):
        monkeypatch.delattr(wsi, "readers")


def _imported(name: str) -> tuple[Any, list[str]]:
    """`import name` (twice) and the messages of the moved-name warnings that gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
        assert importlib.import_module(name) is module
    return module, [str(w.message) for w in record if "pathkit 0.3" in str(w.message)
                    and issubclass(w.category, DeprecationWarning)]


def _message(old: str, new: str) -> str:
    return f"{old} is deprecated: import {new} instead (moved in pathkit 0.2); {old} will be removed in pathkit 0.3"


PACKAGE_MOVED = _message("pathkit_core.wsi.readers", "pathkit_readers")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_once_and_gives_the_new_object(fresh, old):
    new, name = MOVED[old]
    module, found = _imported(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)
    # a module of the old package warns for itself and, once, for the package
    assert sorted(found) == sorted({_message(old, new), PACKAGE_MOVED})


@pytest.mark.parametrize("name", FORMATS)
def test_an_old_format_module_is_the_new_one_with_the_packages_one_warning(fresh, name):
    module, found = _imported(f"pathkit_core.wsi.readers.{name}")
    assert module is importlib.import_module(f"pathkit_readers.{name}") and found == [PACKAGE_MOVED]


def test_the_old_content_identity_is_the_slide_paths_with_its_scene(fresh, tmp_path):
    from pathkit_core.sources import file_identity
    from pathkit_core.wsi import scenes

    path = tmp_path / "a.czi"
    path.write_bytes(b"bytes")
    with pytest.warns(DeprecationWarning, match=r"pathkit_core\.wsi\.readers\.base is deprecated"):
        from pathkit_core.wsi.readers.base import content_identity
    assert content_identity is scenes.content_identity
    assert content_identity(f"{path}#scene=left") == f"{file_identity(path)}#scene=left"


def test_each_shim_is_a_thin_alias_and_no_core_module_imports_one():
    core = Path(pathkit_core.__file__).parent
    shims = sorted((core / "wsi" / "readers").glob("*.py"))
    assert [s.name for s in shims] == ["__init__.py", "base.py", "choose.py"]
    for shim in shims:
        body = ast.parse(shim.read_text(encoding="utf-8")).body
        assert len(body) == 3 and "pathkit 0.3" in body[0].value.value, shim
        assert isinstance(body[1], ast.ImportFrom) and body[1].module == "pathkit_core._deprecation", shim
    importers = []
    for path in core.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            importers += [f"{path}: {n}" for n in names if n.startswith("pathkit_core.wsi.readers")]
    assert importers == []


def test_the_changelog_and_the_plugin_guide_name_every_move():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    guide = (REPO / "docs" / "plugin-authors.md").read_text(encoding="utf-8")
    for old, (new, _) in MOVED.items():
        assert f"`{old}" in changelog and f"`{new}" in changelog, old
        assert f"`{old}" in guide and f"`{new}" in guide, old
    assert "`pathkit_readers.base.ReaderHandle`" in guide


def test_the_readers_code_keys_the_tiles_and_the_features(tmp_path, monkeypatch, fresh_registry):
    """A slide reader's package is part of the tiling and extraction code identities: editing the
    shipped readers or an installed reader plugin re-tiles and re-extracts."""
    from pathkit_core.run.features import extraction_code, tiling_code
    from pathkit_core.run.identity import source_identity
    from pathkit_core.wsi.reader_choice import reader_packages

    package = tmp_path / "pkg_fake_reader"
    package.mkdir()
    (package / "__init__.py").write_text("from pathkit_core.contracts import SlideReader\n\n\n"
                                         "class Fake(SlideReader):\n    name = 'fake-reader'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = importlib.import_module("pkg_fake_reader").Fake

    class Plugin:
        @hookimpl
        def register_slide_readers(self, register):
            register(fake)

    fresh_registry({"fake": Plugin()})
    assert reader_packages() == ["pathkit_readers", "pkg_fake_reader"]
    source_identity.cache_clear()
    encoder = type("Enc", (), {"__module__": "pathkit_core.features"})
    tiles, features = tiling_code("otsu"), extraction_code(encoder)
    assert tiles == source_identity("pathkit_core.wsi", "pathkit_readers", "pkg_fake_reader", "pathkit_tissue")
    (package / "more.py").write_text("B = 2\n")
    source_identity.cache_clear()
    assert tiling_code("otsu") != tiles and extraction_code(encoder) != features
    source_identity.cache_clear()
