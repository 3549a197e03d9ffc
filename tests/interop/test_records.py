"""Prediction and reference files: folders of per-case files, keyed by file name without extension."""

from __future__ import annotations

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_interop.records import file_id, read_records


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


# --------------------------------------------------------------------------- hardening (issue 28)


def test_json_nested_deeper_than_python_can_read_is_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(PathkitError, match=r"deep\.json: JSON nested too deeply to be read"):
        read_records(deep)
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"id": "a", "report": "x"}\n' + '{"id": "b", "report": ' + "[" * 100_000 + "]" * 100_000
                     + "}\n")
    with pytest.raises(PathkitError, match=r"deep\.jsonl: line 2: JSON nested too deeply to be read"):
        read_records(lines)


def test_an_id_repeated_on_many_lines_gives_a_short_error(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text('{"id": "a", "report": "x"}\n' * 200_000)
    with pytest.raises(PathkitError) as caught:
        read_records(path)
    assert str(caught.value).endswith("value to score: 'a' (line 1, line 2, line 3, line 4, line 5, ... (199995 more))")
