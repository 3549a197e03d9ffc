"""The versions mean something: the five distributions share the version the code reports, each
plugin distribution (and the example) depends on a compatible range of pathkit, and the changelog
has a section for the version with a migration line for every moved module."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

import pathkit_core

REPO = Path(__file__).resolve().parents[2]
PLUGIN_PROJECTS = sorted((REPO / "plugins").glob("*/pyproject.toml"))


def _project(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]


def test_every_distribution_has_the_version_the_code_reports():
    assert len(PLUGIN_PROJECTS) == 4
    versions = {p.parent.name: _project(p)["version"] for p in [REPO / "pyproject.toml", *PLUGIN_PROJECTS]}
    assert pathkit_core.__version__ == "0.2.0"
    assert set(versions.values()) == {pathkit_core.__version__}, versions


def test_each_plugin_distribution_depends_on_this_minor_release_of_pathkit():
    for path in [*PLUGIN_PROJECTS, REPO / "examples" / "pathkit-example-plugin" / "pyproject.toml"]:
        wanted = [Requirement(d) for d in _project(path)["dependencies"] if Requirement(d).name == "pathkit"]
        assert len(wanted) == 1, path
        spec = wanted[0].specifier
        assert spec.contains("0.2.0") and spec.contains("0.2.7"), (path, spec)
        assert not spec.contains("0.1.0") and not spec.contains("0.3.0"), (path, spec)


def test_the_changelog_has_this_version_and_every_moved_module():
    from tests.compat.test_shims import MOVED_MODULES

    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    for heading in ("## [0.2.0]", "## [0.1.0]", "### Added", "### Changed", "### Deprecated", "### Removed",
                    "### Fixed"):
        assert heading in text, heading
    for old, (new, _) in MOVED_MODULES.items():
        assert f"`{old}`" in text and f"`{new}`" in text, old
