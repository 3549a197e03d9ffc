"""A plugin of the previous release still runs: `tests/compat/legacy_plugin/` is a third-party plugin
frozen as the pathkit 0.1.0 guide taught (slides from `pathkit_core.wsi.synthetic`, splits from
`pathkit_core.splits`, `TASK_REPORT` from the contract) with a dataset with a synthetic demo and a
report metric; the demo is scored by the 0.1.0 release's own example plugin (its slide-regression task,
metric and head), read from git history at the release `make api-check` compares with
(.ci/api-baseline; skipped with the reason where the clone lacks it). The modules import with
DeprecationWarnings at their own lines (default suite); installed as a user would, `pathkit run
--dataset legacy-demo` runs them end to end with the warnings and no error (`make test-suite`)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pathkit_core import _deprecation
from pathkit_core.plugins import build_registry

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).resolve().parent / "legacy_plugin"
EXAMPLE = "examples/pathkit-example-plugin"
# entry point -> (its module, the old paths it imports: each warns at that module's own line)
ENTRY_POINTS = {
    "legacy-demo": ("pathkit_legacy_plugin.demo", ("pathkit_core.splits", "pathkit_core.wsi.synthetic")),
    "legacy-words": ("pathkit_legacy_plugin.words", ("pathkit_core.contracts.TASK_REPORT",)),
    "example-length": ("pathkit_example_plugin.length_ratio", ()),
    "example-regression": ("pathkit_example_plugin.regression", ()),
    "example-mean-pool": ("pathkit_example_plugin.mean_pool", ()),
    "example-purity": ("pathkit_example_plugin.purity_demo", ()),
}
PACKAGES = ("pathkit_legacy_plugin", "pathkit_example_plugin")


@pytest.fixture(scope="module")
def release_example(tmp_path_factory, load_script) -> Path:
    """The example plugin's source tree as the release of .ci/api-baseline shipped it (its tag, else
    its commit), not as this checkout's examples/ has it now."""
    try:
        ref = load_script(".ci/api_check.py").baseline()
    except (SystemExit, OSError) as exc:
        pytest.skip(f"the 0.1.0 example plugin is read from git history, which this checkout lacks: {exc}")
    folder = tmp_path_factory.mktemp("release")
    for name in _git("ls-tree", "-r", "--name-only", ref, EXAMPLE).decode().split():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(_git("show", f"{ref}:{name}"))
    return folder / EXAMPLE


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=True).stdout


@pytest.fixture
def legacy_modules(monkeypatch, release_example):
    """The plugin's and the release example's source on sys.path (ahead of the installed example),
    none of their modules or the old paths imported yet, nothing warned yet (all restored afterwards)."""
    monkeypatch.syspath_prepend(str(release_example))
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setattr(_deprecation, "_warned", set())
    for name in [m for m in sys.modules if m.startswith(PACKAGES)] + [
            "pathkit_core.splits", "pathkit_core.wsi.synthetic"]:
        monkeypatch.delitem(sys.modules, name, raising=False)
    for parent, child in (("pathkit_core", "splits"), ("pathkit_core.wsi", "synthetic")):
        if parent in sys.modules and child in vars(sys.modules[parent]):
            monkeypatch.delattr(sys.modules[parent], child)
    yield
    for name in [m for m in sys.modules if m.startswith(PACKAGES)]:
        del sys.modules[name]


def test_the_legacy_modules_import_with_deprecation_warnings_at_their_own_lines(legacy_modules, release_example):
    modules = {}
    for entry_point, (name, old_imports) in ENTRY_POINTS.items():
        if old_imports:
            with pytest.warns(DeprecationWarning) as record:
                modules[entry_point] = importlib.import_module(name)
        else:
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                modules[entry_point] = importlib.import_module(name)
        ours = [w for w in record if issubclass(w.category, DeprecationWarning) and "pathkit 0.3" in str(w.message)]
        assert sorted(str(w.message).split(" ")[0] for w in ours) == sorted(old_imports), name
        assert {Path(w.filename) for w in ours} <= {Path(modules[entry_point].__file__)}
    assert Path(modules["example-regression"].__file__).is_relative_to(release_example)
    registry = build_registry(autoload=False, plugins=modules)
    assert all(registry.records[name].status == "ok" for name in ENTRY_POINTS)
    assert registry.get("dataset", "legacy-demo").task == "slide-regression"
    assert {"regression", "length-ratio", "legacy-words"} <= set(registry.names("metric"))
    assert registry.get("generator", "mean-pool-regressor").tasks == ("slide-regression",)


def _install(tmp_path: Path, release_example: Path) -> Path:
    """The frozen plugin and the release's example plugin built and installed from copies (the source
    trees stay clean) into a folder of their own, as `pip install` would put them in site-packages."""
    sources, target = [tmp_path / "src" / "legacy", tmp_path / "src" / "example"], tmp_path / "site"
    for source, folder in zip(sources, (PLUGIN, release_example), strict=True):
        shutil.copytree(folder, source)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), *map(str, sources)], check=True, capture_output=True, text=True)
    return target


# end to end: build, install, tile, extract, train and score (about 30 s on 2 cores): `make test-suite`
@pytest.mark.slow
def test_the_legacy_plugin_runs_end_to_end_with_deprecation_warnings_and_no_error(tmp_path, release_example):
    site = _install(tmp_path, release_example)
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONWARNINGS": "default::DeprecationWarning",
           "PATHKIT_PLUGIN_INDEX": "off", "COLUMNS": "200"}
    pathkit = str(Path(sys.executable).with_name("pathkit"))
    listed = subprocess.run([pathkit, "list", "plugins", "--json"], env=env, capture_output=True, text=True,
                            check=True)
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert {plugins[name]["status"] for name in ENTRY_POINTS} == {"ok"}
    assert plugins["legacy-demo"]["distribution"] == "pathkit-legacy-plugin"
    # the release's example distribution (its requirement), ahead of the one this checkout installs
    assert {plugins[name]["requires_pathkit"] for name in ENTRY_POINTS if name.startswith("example-")} == {
        "pathkit>=0.1.0"}
    assert [d.split(": ")[1].split(" ")[0] for d in plugins["legacy-demo"]["deprecations"]] == [
        "pathkit_core.splits", "pathkit_core.wsi.synthetic"]
    run = subprocess.run([pathkit, "run", "--dataset", "legacy-demo", "--workdir", str(tmp_path / "ws"), "--cpu"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "error" not in run.stdout.lower()
    for old, module in (("pathkit_core.splits", "demo.py"), ("pathkit_core.wsi.synthetic", "demo.py"),
                        ("pathkit_core.contracts.TASK_REPORT", "words.py")):
        line = next(li for li in run.stderr.splitlines() if f"DeprecationWarning: {old} is deprecated" in li)
        assert str(site / "pathkit_legacy_plugin" / module) in line and "pathkit 0.3" in line
    run_dir = next((tmp_path / "ws" / "runs" / "legacy-demo" / "tiny-vit" / "mean-pool-regressor").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model, baseline = metrics["metrics"]["regression"], metrics["baselines"]["train-mean"]["regression"]
    assert model["n_cases"] == 3 and model["MAE"] < baseline["MAE"], (model, baseline)
    assert (run_dir / "report.html").exists()
