"""Prediction and reference files: folders of per-case files, keyed by file name without extension."""

from __future__ import annotations

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.evaluation.records import file_id, read_records


def test_a_folder_gives_one_file_per_id(tmp_path):
    for name in ("s1.png", "s2.geojson", "s3.ome.tiff", ".hidden.png"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    found = read_records(tmp_path)
    assert found.format == "folder"
    assert found.values == {"s1": str(tmp_path / "s1.png"), "s2": str(tmp_path / "s2.geojson"),
                            "s3": str(tmp_path / "s3.ome.tiff")}
    assert file_id("TCGA.A1.png") == "TCGA.A1" and file_id("plain") == "plain"


def test_two_files_of_one_id_and_an_empty_folder_are_errors(tmp_path):
    (tmp_path / "s1.png").write_text("x")
    (tmp_path / "s1.geojson").write_text("x")
    with pytest.raises(PathkitError, match=r"two files for id 's1' \(s1.geojson, s1.png\)"):
        read_records(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PathkitError, match="holds no files"):
        read_records(empty)
