"""The versions mean something: the five distributions share the version the code reports, each
plugin distribution (and the example) depends on a compatible range of pathkit, and the changelog
has a section for the version with a migration line for every moved module."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import pathkit_core
from pathkit_core.plugins import build_registry

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


# ---------------------------------------------------------------- plugins built for another pathkit
PLUGIN_MODULE = '''
from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult


class OldLength(Metric):
    name = "{metric}"
    tasks = ("report",)

    def compute(self, predictions, references, *, ids=None, context=None):
        return MetricResult({{"n": float(len(predictions))}})


@hookimpl
def register_metrics(register):
    register(OldLength)
'''


def _installed(root: Path, distribution: str, requires: list[str], *, metric: str, header: str = "") -> str:
    """A distribution on disk as pip leaves it: a module (`header` lines first) and its .dist-info
    (METADATA with Requires-Dist lines, entry_points.txt in the pathkit group). Returns its entry
    point's name."""
    module = distribution.replace("-", "_")
    (root / f"{module}.py").write_text(header + PLUGIN_MODULE.format(metric=metric), encoding="utf-8")
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {distribution}", "Version: 1.0",
             *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[pathkit]\n{distribution} = {module}\n", encoding="utf-8")
    return distribution


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_plugin_requiring_an_older_pathkit_is_incompatible_with_both_versions_named_and_still_loads(on_path):
    old = _installed(on_path, "pathkit-old-plugin", ["pathkit<0.2", "numpy>=1"], metric="old-length")
    fits = _installed(on_path, "pathkit-fitting-plugin", ["pathkit>=0.2,<0.3"], metric="fit-length")
    bare = _installed(on_path, "pathkit-bare-plugin", ['pathkit<0.1; extra == "never"'], metric="bare-length")
    registry = build_registry(allow={old, fits, bare}, block=set())
    record = registry.records[old]
    assert record.status == "incompatible"
    assert record.requires_pathkit == "pathkit<0.2" and record.pathkit_version == pathkit_core.__version__
    assert record.error == f"requires pathkit<0.2, installed pathkit is {pathkit_core.__version__}"
    assert registry.get("metric", "old-length").name == "old-length"  # loaded all the same
    assert registry.records[fits].status == "ok" and registry.records[fits].requires_pathkit == "pathkit<0.3,>=0.2"
    assert registry.records[bare].status == "ok" and registry.records[bare].requires_pathkit == ""
    assert "pathkit-old-plugin" in registry.distributions()


def test_list_plugins_and_doctor_show_the_incompatible_plugin(on_path, cli):
    from pathkit_core.cli.doctor import _plugin_versions_and_names
    from pathkit_core.plugins import get_plugin_manager, set_plugin_manager

    old = _installed(on_path, "pathkit-old-plugin", ["pathkit<0.2"], metric="old-length")
    previous = get_plugin_manager()
    set_plugin_manager(build_registry(allow={old}, block=set()))
    try:
        listed = {r["name"]: r for r in json.loads(cli("list", "plugins", "--json").stdout)}
        table = cli("list", "plugins", env={"COLUMNS": "400"}).stdout
        rows = _plugin_versions_and_names(get_plugin_manager())
    finally:
        set_plugin_manager(previous)
    assert listed[old]["status"] == "incompatible" and listed[old]["requires_pathkit"] == "pathkit<0.2"
    assert listed[old]["pathkit_version"] == pathkit_core.__version__
    assert f"incompatible: requires pathkit<0.2, installed pathkit is {pathkit_core.__version__}" in table
    assert rows == [(f"plugin {old}", "incompatible",
                     f"pathkit-old-plugin 1.0 requires pathkit<0.2; installed pathkit is {pathkit_core.__version__} "
                     "(loaded anyway)")]
