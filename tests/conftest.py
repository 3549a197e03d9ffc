"""Shared test fixtures: real-data location, hermetic plugin registries, CLI runner."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REALDATA_ENV = "PATHKIT_REALDATA"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def _quiet_threads(monkeypatch):
    # Two cores are shared by everything in CI; keep each test's torch/BLAS use small.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield


@pytest.fixture
def one_torch_thread():
    """One torch intra-op thread for the test (tiny models on two shared cores: more threads only
    add contention), restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real public files (../shared/data); skips when PATHKIT_REALDATA is unset."""
    root = os.environ.get(REALDATA_ENV)
    if not root:
        pytest.skip(f"{REALDATA_ENV} is not set: real-file tests need the shared data folder")
    path = Path(root)
    if not path.is_dir():
        pytest.skip(f"{REALDATA_ENV}={root} is not a directory")
    return path


@pytest.fixture(scope="session")
def planted_suite(tmp_path_factory) -> Path:
    """A suite folder of planted classification cells (`tests.bench.suite._suite.synthetic_suite`:
    leaderboard, cells and a few run reports; no training), written once per session for the suite
    analysis tests and the suite report's browser test, which only read it."""
    from tests.bench.suite._suite import synthetic_suite

    return synthetic_suite(tmp_path_factory.mktemp("planted"))


@pytest.fixture
def fresh_registry():
    """Install a registry built from inline plugins only; restore the global one afterwards."""
    from pathkit_core.plugins import build_registry, get_plugin_manager, set_plugin_manager

    previous = None
    try:
        previous = get_plugin_manager()
    except Exception:  # noqa: BLE001
        previous = None

    def make(plugins=None, *, autoload=False, **kwargs):
        registry = build_registry(autoload=autoload, plugins=plugins or {}, **kwargs)
        set_plugin_manager(registry)
        return registry

    yield make
    set_plugin_manager(previous)


@pytest.fixture
def installed_registry():
    """The registry of the installed plugin distributions (the example plugin among them, installed
    non-editable as a user would); restores the previous global registry afterwards."""
    from pathkit_core.plugins import build_registry, get_plugin_manager, set_plugin_manager

    previous = get_plugin_manager()
    set_plugin_manager(build_registry())
    yield get_plugin_manager()
    set_plugin_manager(previous)


@pytest.fixture
def cli():
    """Invoke the pathkit CLI in-process; returns the click Result."""
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app

    runner = CliRunner()

    def invoke(*args: str, **kwargs):
        app = build_app()
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, **kwargs)

    return invoke


@pytest.fixture
def demo_run(cli, tmp_path):
    """Runs a demo dataset end to end (`pathkit run --dataset NAME --cpu` on two torch threads) in
    `tmp_path / "ws"`; returns the folder of its tiny-vit run with `generator`."""
    from tests._run_folder import RunFolder

    def run(dataset: str, generator: str) -> RunFolder:
        import torch

        torch.set_num_threads(2)
        result = cli("run", "--dataset", dataset, "--workdir", tmp_path / "ws", "--cpu")
        assert result.exit_code == 0, result.stdout + result.stderr
        return RunFolder(next((tmp_path / "ws" / "runs" / dataset / "tiny-vit" / generator).iterdir()))

    return run


FAKE_SBATCH = """#!{python}
import json, sys
from pathlib import Path
log = Path({log!r})
calls = json.loads(log.read_text()) if log.exists() else []
calls.append(sys.argv[1:])
log.write_text(json.dumps(calls))
if any(a.startswith("--partition=refuse") for a in sys.argv):
    sys.exit("sbatch: error: invalid partition specified: refuse")
print(f"{{4100 + len(calls)}};cluster")
"""


@pytest.fixture
def fake_sbatch(tmp_path, monkeypatch) -> Path:
    """A stand-in `sbatch` first on PATH: it records each call's arguments in the returned JSON file
    and answers job ids 4101, 4102, ...; a `--partition=refuse...` it refuses as sbatch would."""
    from tests._executables import install_executable

    log = tmp_path / "calls.json"
    install_executable(monkeypatch, tmp_path / "bin", "sbatch", FAKE_SBATCH.format(python=sys.executable, log=str(log)))
    return log


def _load_script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    """Loads a script of the repository by its path from the root (`.ci/api_check.py`): scripts are
    not a package."""
    return lambda relative: _load_script(BENCHMARKS.parent / relative)


@pytest.fixture(scope="session")
def load_benchmark() -> Callable[[str], ModuleType]:
    """Loads `benchmarks/<name>.py` (the benchmarks are scripts, not a package)."""
    return lambda name: _load_script(BENCHMARKS / f"{name}.py")
