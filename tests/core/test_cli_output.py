"""CLI output outside a terminal, Ctrl-C, and `pathkit status` without a path."""

from __future__ import annotations

import io

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

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(pathkit_core.status, "collect", interrupted)
    result = cli("status", tmp_path)
    assert result.exit_code == 130
    assert result.output.strip() == INTERRUPTED == "interrupted; rerun the same command to resume"


def test_status_without_a_path_reads_the_default_workspace(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    missing = cli("status")
    assert missing.exit_code == 2 and "no workspace here (pathkit-work/ does not exist)" in missing.output
    (tmp_path / "pathkit-work" / "runs" / "demo" / "enc" / "gen" / "abc").mkdir(parents=True)
    (tmp_path / "pathkit-work" / "runs" / "demo" / "enc" / "gen" / "abc" / "stages.json").write_text("{}")
    result = cli("status", "--json")
    assert result.exit_code == 0, result.output
    assert result.output.count('"path": "pathkit-work"') == 1


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
