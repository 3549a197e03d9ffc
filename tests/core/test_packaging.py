"""Packaging: the first-run experience of `make install` (a line per step, no setuptools warnings)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_projects_packages_declare_spdx_licences_that_setuptools_reads_silently():
    files = [REPO / "pyproject.toml", *REPO.glob("plugins/*/pyproject.toml"),
             REPO / "examples" / "pathkit-example-plugin" / "pyproject.toml"]
    assert len(files) == 6
    for path in files:
        data = tomllib.loads(path.read_text())
        assert data["build-system"]["requires"] == ["setuptools>=77"], path  # SPDX strings need 77+
        license_ = data["project"].get("license")
        assert license_ is None or isinstance(license_, str), path  # a TOML table is deprecated


def test_make_install_announces_every_step():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(STAMP): $(INSTALL_INPUTS)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    commands = [line for line in recipe if line.startswith("\t@") and not line.startswith("\t@#")]
    steps = [line for line in commands if line.startswith("\t@echo \"pathkit install ")]
    assert [re.search(r"install (\d)/5", s).group(1) for s in steps] == ["1", "2", "3", "4", "5"]
    # each command follows its announcement: echo, command, echo, command, ...
    kinds = ["echo" if line.startswith("\t@echo") else "run" for line in commands]
    assert kinds[:10] == ["echo", "run"] * 5
