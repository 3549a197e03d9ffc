"""A plugin of the previous release still runs: `tests/compat/legacy_plugin/` is a third-party plugin
frozen as the pathkit 0.1.0 guide taught (slides from `pathkit_core.wsi.synthetic`, splits from
`pathkit_core.splits`, `TASK_REPORT` from the contract) with a task, a dataset with a synthetic
demo, two metrics and a generator. Its modules import with DeprecationWarnings at their own lines
(default suite); installed as a user would, `pathkit run --dataset legacy-demo` runs it end to end
with the warnings and no error (`make test-suite`)."""

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

PLUGIN = Path(__file__).resolve().parent / "legacy_plugin"
MODULES = ("score", "words", "head", "demo")
# module of the plugin -> the old paths it imports (each warns at that module's own line)
OLD_IMPORTS = {"demo": ("pathkit_core.splits", "pathkit_core.wsi.synthetic"),
               "words": ("pathkit_core.contracts.TASK_REPORT",)}


@pytest.fixture
def legacy_modules(monkeypatch):
    """The plugin's source on sys.path, none of its modules or the old paths imported yet, nothing
    warned yet (all restored afterwards)."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setattr(_deprecation, "_warned", set())
    for name in [m for m in sys.modules if m.startswith("pathkit_legacy_plugin")] + [
            "pathkit_core.splits", "pathkit_core.wsi.synthetic"]:
        monkeypatch.delitem(sys.modules, name, raising=False)
    for parent, child in (("pathkit_core", "splits"), ("pathkit_core.wsi", "synthetic")):
        if parent in sys.modules and child in vars(sys.modules[parent]):
            monkeypatch.delattr(sys.modules[parent], child)
    yield
    for name in [m for m in sys.modules if m.startswith("pathkit_legacy_plugin")]:
        del sys.modules[name]


def test_the_legacy_modules_import_with_deprecation_warnings_at_their_own_lines(legacy_modules):
    modules = {}
    for name in MODULES:
        if name in OLD_IMPORTS:
            with pytest.warns(DeprecationWarning) as record:
                modules[name] = importlib.import_module(f"pathkit_legacy_plugin.{name}")
        else:
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                modules[name] = importlib.import_module(f"pathkit_legacy_plugin.{name}")
        ours = [w for w in record if issubclass(w.category, DeprecationWarning) and "pathkit 0.3" in str(w.message)]
        assert sorted(str(w.message).split(" ")[0] for w in ours) == sorted(OLD_IMPORTS.get(name, ())), name
        assert {Path(w.filename) for w in ours} <= {PLUGIN / "pathkit_legacy_plugin" / f"{name}.py"}
    registry = build_registry(autoload=False, plugins={f"legacy-{n}": modules[n] for n in MODULES})
    assert all(registry.records[f"legacy-{n}"].status == "ok" for n in MODULES)
    assert registry.get("dataset", "legacy-demo").task == "legacy-slide-score"
    assert {"legacy-mae", "legacy-words"} <= set(registry.names("metric"))
    assert registry.get("generator", "legacy-mean-head").tasks == ("legacy-slide-score",)


def _install(tmp_path: Path) -> Path:
    """The frozen plugin built and installed from a copy (the source tree stays clean) into a folder
    of its own, as `pip install` would put it in site-packages."""
    source, target = tmp_path / "src", tmp_path / "site"
    shutil.copytree(PLUGIN, source)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True, text=True)
    return target


# end to end: build, install, tile, extract, train and score (about 30 s on 2 cores): `make test-suite`
@pytest.mark.slow
def test_the_legacy_plugin_runs_end_to_end_with_deprecation_warnings_and_no_error(tmp_path):
    site = _install(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONWARNINGS": "default::DeprecationWarning",
           "PATHKIT_PLUGIN_INDEX": "off", "COLUMNS": "200"}
    pathkit = str(Path(sys.executable).with_name("pathkit"))
    listed = subprocess.run([pathkit, "list", "plugins", "--json"], env=env, capture_output=True, text=True,
                            check=True)
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert {plugins[f"legacy-{n}"]["status"] for n in ("score", "demo", "head", "words")} == {"ok"}
    assert plugins["legacy-demo"]["distribution"] == "pathkit-legacy-plugin"
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
    run_dir = next((tmp_path / "ws" / "runs" / "legacy-demo" / "tiny-vit" / "legacy-mean-head").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model, baseline = metrics["metrics"]["legacy-mae"], metrics["baselines"]["train-mean"]["legacy-mae"]
    assert model["n_cases"] == 3 and model["MAE"] < baseline["MAE"], (model, baseline)
    assert (run_dir / "report.html").exists()
