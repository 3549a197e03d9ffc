"""`pathkit status` on every kind of folder pathkit writes, and walking up to the workspace with
no path; the remaining inputs of issue 47 (tile sizes, worker counts, an mpp CSV naming a slide
twice, orphan staging folders, dangling h5 links)."""

from __future__ import annotations

import json
import os

import pytest


def _kinds(ws):
    (ws / "tiles" / "256px").mkdir(parents=True)
    (ws / "tiles" / "256px" / "s1.parquet").write_bytes(b"")
    from pathkit_core.features import store

    store.record_status(ws / "features", "enc", "c", "failed", "reading tiles failed")
    (ws / "image-features" / "demo").mkdir(parents=True)
    (ws / "image-features" / "demo" / "shard-0123.safetensors").write_bytes(b"x")
    (ws / "datasets" / "demo-reports").mkdir(parents=True)
    (ws / "datasets" / "demo-reports" / "a.txt").write_text("x")
    run = ws / "runs" / "d" / "e" / "g" / "k"
    run.mkdir(parents=True)
    (run / "stages.json").write_text(json.dumps({"fit": {"key": "1"}}))
    (run / "per_case.parquet").write_bytes(b"")  # a run holds parquet files: still a run, not a tile store
    return {"workspace": ws, "tile store": ws / "tiles" / "256px", "feature store": ws / "features" / "enc",
            "image-feature store": ws / "image-features" / "demo", "dataset store": ws / "datasets" / "demo-reports",
            "run": run}


def test_status_says_which_kind_of_folder_it_read(tmp_path, cli):
    from pathkit_core.folder_kind import folder_kind

    for kind, folder in _kinds(tmp_path / "ws").items():
        assert folder_kind(folder) == kind
        result = cli("status", folder, "--json")
        assert result.exit_code == 0, (kind, result.output)
        assert json.loads(result.stdout)["kind"] == kind
    run = json.loads(cli("status", tmp_path / "ws" / "runs" / "d" / "e" / "g" / "k", "--json").stdout)
    assert run["runs"][0]["stages"] == ["fit"] and run["stores"] == []
    assert "read as a dataset store" in cli("status", tmp_path / "ws" / "datasets" / "demo-reports").stdout


@pytest.mark.parametrize("where", ["tiles/256px", "features/enc", "runs/d/e", "."])
def test_status_with_no_path_walks_up_to_the_workspace(tmp_path, cli, monkeypatch, where):
    _kinds(tmp_path / "ws")
    monkeypatch.chdir(tmp_path / "ws" / where)
    result = cli("status", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["kind"] == "workspace" and os.path.samefile(report["path"], tmp_path / "ws")


def test_status_with_no_path_finds_pathkit_work_above_and_says_when_there_is_none(tmp_path, cli, monkeypatch):
    _kinds(tmp_path / "project" / "pathkit-work")
    (tmp_path / "project" / "notes").mkdir()
    monkeypatch.chdir(tmp_path / "project" / "notes")
    assert json.loads(cli("status", "--json").stdout)["kind"] == "workspace"
    (tmp_path / "lonely").mkdir()
    monkeypatch.chdir(tmp_path / "lonely")
    result = cli("status")
    assert result.exit_code == 2 and "no workspace here or above" in result.stderr


@pytest.mark.parametrize("options, problem", [
    (["--tile-um", "nan"], "positive finite"), (["--tile-um", "inf"], "positive finite"),
    (["--tile-um", "-5"], "positive finite"), (["--workers", "-3"], "Invalid value for '--workers'"),
    (["--workers", "0"], "Invalid value for '--workers'"), (["--min-tissue-area", "nan"], "min tissue area nan"),
])
def test_tile_refuses_impossible_sizes_and_counts(tmp_path, cli, options, problem):
    result = cli("tile", tmp_path, "--out", tmp_path / "out", *options)
    assert result.exit_code == 2 and problem in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "out" / "tiling_status.json").exists()


def test_crossval_top_k_must_not_be_negative(cli):
    result = cli("crossval", "--top-k", "-1")
    assert result.exit_code == 2 and "--top-k" in result.output and "greater than or equal to 0" in result.output


def test_an_mpp_csv_naming_one_slide_twice_is_refused(tmp_path):
    from pathkit_core.contracts import PathkitError
    from pathkit_core.wsi.slide import lookup_mpp

    slide = tmp_path / "s1.svs"
    assert lookup_mpp({"s1.svs": 0.5, "s1": 0.5}, slide) == 0.5  # twice alike: one value
    with pytest.raises(PathkitError, match="given 2 times with different values"):
        lookup_mpp({"s1.svs": 0.5, "s1": 0.25}, slide)


def test_orphan_segmentation_staging_folders_are_removed(tmp_path):
    from pathkit_tasks.segmentation.task import STAGING_PREFIX, remove_orphan_staging

    gone = tmp_path / f"{STAGING_PREFIX}{2**22 + 7}"
    mine = tmp_path / f"{STAGING_PREFIX}{os.getpid()}"
    odd = tmp_path / f"{STAGING_PREFIX}x"
    for folder in (gone, mine, odd):
        folder.mkdir()
        (folder / "map.npy").write_bytes(b"0" * 10)
    assert sorted(remove_orphan_staging(tmp_path)) == sorted([gone, odd])
    assert mine.is_dir() and not gone.exists()


def test_a_dangling_h5_link_is_one_line(tmp_path):
    import h5py
    import numpy as np

    from pathkit_core.contracts import PathkitError
    from pathkit_interop.h5 import read_h5_features

    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as h5:
        h5["features"] = np.zeros((3, 4), "f4")
        h5["coords"] = h5py.SoftLink("/nowhere")
    with pytest.raises(PathkitError, match="dangling link to /nowhere"):
        read_h5_features(path)
