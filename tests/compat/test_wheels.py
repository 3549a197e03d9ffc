"""pathkit as a user outside the repository gets it: the five distributions built as wheels
(`python -m build --wheel`), installed non-editable into a fresh virtual environment in a temporary
folder (no system site-packages, nothing of the checkout on its path), then `pathkit doctor`,
`pathkit list plugins` and a short demo run there (docs/api/stability.md, "How it is checked").

Each distribution is built from a copy of its sources, so the checkout gets no build/ folder. The
fresh environment installs torch and every other dependency with `-c constraints.txt` through pip
as configured on the machine: what `make install` downloaded is in pip's cache, so no large wheel
is fetched twice. Slow (minutes, mostly torch unpacking): `make test-suite`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = (".", "plugins/encoders", "plugins/generators", "plugins/datasets", "plugins/metrics")
# What never goes into a wheel of the root distribution (its packages are listed in pyproject.toml).
_NOT_SOURCES = (".venv", ".git", "*.egg-info", "__pycache__", "build", "dist", "pathkit-work", "site", "tests",
                "benchmarks", "docs", "plugins", "examples", ".ci", "bench-out", ".pytest_cache", ".ruff_cache")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-4000:]}"
    return done


def _clean_env(home: Path) -> dict[str, str]:
    """The user's environment: no PYTHONPATH, no virtual environment of the checkout, no pathkit
    plugin selection, no COLUMNS (tables at a fixed width)."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "COLUMNS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PATHKIT_")}
    env["PATH"] = f"{home / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def builtin_entry_points() -> dict[str, str]:
    """{entry point name: distribution} of every `pathkit` entry point the five distributions declare."""
    out = {}
    for folder in DISTRIBUTIONS:
        project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        out.update({name: project["name"] for name in project.get("entry-points", {}).get("pathkit", {})})
    return out


def build_wheels(out: Path, scratch: Path) -> list[Path]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for folder in DISTRIBUTIONS:
        source = scratch / (Path(folder).name or "pathkit")
        ignore = shutil.ignore_patterns(*(_NOT_SOURCES if folder == "." else _NOT_SOURCES[:6]))
        shutil.copytree(ROOT / folder, source, ignore=ignore)
        # --no-isolation: the build backend (setuptools, pyproject.toml's build-system) is the
        # checkout's environment's; an isolated build would install the same setuptools again
        _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(source)],
             cwd=scratch, env=env, timeout=600)
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == len(DISTRIBUTIONS), [w.name for w in wheels]
    return wheels


@pytest.mark.slow  # builds five wheels and installs torch into a new environment: make test-suite
def test_the_wheels_install_in_a_fresh_environment_and_run_the_demo(tmp_path_factory):
    home = tmp_path_factory.mktemp("wheel-user")
    assert ROOT not in home.parents
    timings: dict[str, float] = {}
    start = time.monotonic()
    wheels = build_wheels(home / "wheels", home / "sources")
    timings["build five wheels"] = time.monotonic() - start

    start = time.monotonic()
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(home / "venv")
    python = home / "venv" / "bin" / "python"
    env = _clean_env(home)
    _run([str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), *map(str, wheels)],
         cwd=home, env=env, timeout=1800)
    timings["fresh venv + install"] = time.monotonic() - start

    # installed, not linked to the checkout: pathkit_core comes from the new environment
    where = _run([str(python), "-c", "import pathkit_core, pathkit_encoders; print(pathkit_core.__file__); "
                  "print(pathkit_encoders.__file__)"], cwd=home, env=env, timeout=120).stdout.split()
    assert all(Path(p).is_relative_to(home / "venv") for p in where), where

    start = time.monotonic()
    pathkit = str(home / "venv" / "bin" / "pathkit")
    doctor = json.loads(_run([pathkit, "doctor", "--json", "--workdir", str(home / "work")],
                             cwd=home, env=env, timeout=300).stdout)
    assert doctor["plugins"]["status"] == "ok", doctor["plugins"]
    listed = json.loads(_run([pathkit, "list", "plugins", "--json"], cwd=home, env=env, timeout=300).stdout)
    status = {row["name"]: (row["distribution"], row["status"]) for row in listed}
    expected = builtin_entry_points()
    wrong = {name: status.get(name) for name, dist in expected.items() if status.get(name) != (dist, "ok")}
    assert not wrong, f"built-in plugins not listed ok from their distribution: {wrong}"
    timings["doctor + list plugins"] = time.monotonic() - start

    start = time.monotonic()
    demo = _run([pathkit, "run", "--workdir", str(home / "work"), "--max-epochs", "2", "--cpu"],
                cwd=home, env=env, timeout=1200)
    timings["demo run"] = time.monotonic() - start
    reports = list((home / "work" / "runs").rglob("report.html"))
    metrics = list((home / "work" / "runs").rglob("metrics.json"))
    assert reports and metrics, demo.stdout[-3000:]
    print("wheel install timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
