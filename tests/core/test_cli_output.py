"""CLI output outside a terminal, Ctrl-C, and `pathkit status` without a path."""

from __future__ import annotations

import io
import json
import os

import pytest

from pathkit_core.cli.common import INTERRUPTED, PIPE_RULE_WIDTH, PIPE_WIDTH, PathkitConsole


def test_a_console_on_a_file_is_full_width_and_plain(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    buffer = io.StringIO()
    console = PathkitConsole(file=buffer)
    assert not console.is_terminal and console.width == PIPE_WIDTH
    path = "/data/" + "x" * 300 + "/metrics.json"
    console.print(f"run folder: {path}")
    console.rule("demo-reports / tiny-vit / wsi-caption")
    lines = buffer.getvalue().splitlines()
    assert lines[0] == f"run folder: {path}" and len(lines[1]) == PIPE_RULE_WIDTH
    monkeypatch.setenv("COLUMNS", "50")
    assert PathkitConsole(file=io.StringIO()).width == 50
    assert PathkitConsole(file=io.StringIO(), width=70).width == 70


def test_ctrl_c_prints_one_line_and_exits_130(cli, monkeypatch, tmp_path):
    import pathkit_core.status

    def interrupted(path, **_):
        raise KeyboardInterrupt

    monkeypatch.setattr(pathkit_core.status, "collect", interrupted)
    result = cli("status", tmp_path)
    assert result.exit_code == 130
    assert result.output.strip() == INTERRUPTED == "interrupted; rerun the same command to resume"


def test_status_without_a_path_reads_the_default_workspace(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    missing = cli("status")
    assert missing.exit_code == 2 and "no workspace here or above" in missing.output
    (tmp_path / "pathkit-work" / "runs" / "demo" / "enc" / "gen" / "abc").mkdir(parents=True)
    (tmp_path / "pathkit-work" / "runs" / "demo" / "enc" / "gen" / "abc" / "stages.json").write_text("{}")
    result = cli("status", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["path"].endswith("/pathkit-work")  # the workspace found walking up
    plain = cli("status")  # as a user types it: the table of the workspace's runs
    assert plain.exit_code == 0, plain.output
    assert "demo/enc/gen/abc" in plain.output and "finished stages" in plain.output


def test_the_known_harmless_torch_warning_is_not_shown_and_others_are():
    import warnings

    import numpy as np
    import torch

    from pathkit_core.cli import quiet_harmless_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_harmless_warnings()
        frozen = np.zeros(3)
        frozen.flags.writeable = False
        torch.as_tensor(frozen)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else"]


@pytest.fixture(scope="module")
def piped_run(tmp_path_factory):
    """`pathkit run ... | cat` as a user runs it: a subprocess whose output is a pipe (no COLUMNS),
    on six small synthetic slides (0.2 mm^2 of tissue each, below the 25 mm^2 cohort minimum)
    listed by a slides-csv table, in a workspace whose path is longer than a terminal line.
    (path of the workspace, the output lines)."""
    import csv
    import subprocess
    import sys

    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    base = tmp_path_factory.mktemp("piped")
    root = base / "cohort"
    (root / "s").mkdir(parents=True)
    rows = []
    for k in range(6):
        write_synthetic_slide(root / "s" / f"x{k}.tiff", width=512, height=512, mpp=1.0, seed=k,
                              compression="deflate",
                              tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=(226, 150, 200) if k % 2 else (160, 110, 205),
                                           texture="noise")])
        rows.append({"slide_path": f"s/x{k}.tiff", "label": str(k % 2), "split": ("train", "val", "test")[k // 2]})
    with (root / "cohort.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    work = base / ("a-long-folder-name-for-the-workspace-" * 3) / "ws"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "run", "--dataset", "slides-csv",
                           "--dataset-root", str(root), "--encoder", "tiny-vit", "--generator", "gma-mil",
                           "--max-epochs", "1", "--workdir", str(work), "--cpu"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    return work, done.stdout.splitlines()


@pytest.mark.slow  # a whole `pathkit run` in a subprocess: make test-suite
def test_a_piped_run_breaks_no_line_inside_a_path(piped_run):
    work, lines = piped_run
    assert len(str(work)) > 120  # longer than any terminal line rich would otherwise wrap at (80)
    naming = [line for line in lines if str(work)[:40] in line]
    assert len(naming) >= 2, lines  # the run folder, the report (at least)
    for line in naming:
        start = line.index(str(work)[:40])
        assert line[start:].startswith(str(work)), f"a path broken in: {line!r}"
    run_dir = next((work / "runs" / "slides-csv" / "tiny-vit" / "gma-mil").iterdir())
    assert any(line.endswith(f"run folder: {run_dir}") for line in lines), lines
    # no table row folded onto a second line: every line of a table is as wide as its first
    assert not any(line.rstrip().endswith(("metrics.jso", "report.htm")) for line in lines)


@pytest.mark.slow  # a whole `pathkit run` in a subprocess: make test-suite
def test_a_run_says_once_that_its_slides_are_below_the_cohort_minimum_tissue_area(piped_run):
    _, lines = piped_run
    notes = [line for line in lines if "less tissue than the 25 mm^2 cohort minimum" in line]
    assert len(notes) == 1, lines
    assert notes[0].startswith("note: 6 slide(s) have less tissue than the 25 mm^2 cohort minimum (a "
                               "resection-cohort minimum, which biopsies usually fall below; smallest 0.")
    assert notes[0].endswith("kept, flagged `below_min_tissue_area` in their manifests (exclude_below_min_area "
                             "leaves them out)")
