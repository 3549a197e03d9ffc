"""Stand-in executables (a `java`, an `sbatch`) put first on PATH for one test."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest


def install_executable(monkeypatch: pytest.MonkeyPatch, folder: Path, name: str, text: str) -> Path:
    """Writes the script `folder/name`, makes it executable and puts `folder` first on PATH for the
    test (monkeypatch undoes it); returns the script's path."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    exe.write_text(text)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return exe
