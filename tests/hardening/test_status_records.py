"""The append-only status records (`tiling_status.json`, `extraction_status.json`) and `pathkit
status --verify`, attacked: a torn last line, a line that is not JSON, a line of no known kind, a
header from a future format version, feature files that are truncated, pipes or folders; and the
plan of an unsharded `pathkit tile` recorded before its first slide."""

from __future__ import annotations

import json
import os

import pytest

from pathkit_core.contracts import PathkitError


def _tiling_log(tmp_path, *lines):
    out = tmp_path / "tiles"
    out.mkdir()
    (out / "tiling_status.json").write_text("".join(lines))
    return out


HEADER = '{"format":"pathkit.tiling_status","format_version":1}\n'
A = '{"slide":"a","record":{"status":"ok"}}\n'


@pytest.mark.parametrize("damage, lost", [
    ('{"slide":"b","rec', "line 3"),  # a writer that died mid-line: no newline at the end
    ("not json at all\n", "line 3"),
    ('{"slide":"b","record":[1]}\n', "b"),
    ('{"future_event":{"b":1}}\n', "a line of no known kind (keys ['future_event'])"),
    ("[1, 2]\n", "a list line"),
])
def test_a_damaged_line_loses_only_itself_and_the_next_append_is_kept(tmp_path, damage, lost):
    from pathkit_core.wsi.tiling import TileResult, _update_status, read_tiling_log

    out = _tiling_log(tmp_path, HEADER, A, damage)
    _update_status(out, [TileResult("c", "c.svs", "ok")], "hash")
    with pytest.warns(UserWarning, match="treated as absent") as caught:
        log = read_tiling_log(out)
    assert lost in str(caught[0].message) and str(out / "tiling_status.json") in str(caught[0].message)
    assert sorted(log.slides) == ["a", "c"]


@pytest.mark.parametrize("header, problem", [
    ('{"format":"pathkit.tiling_status","format_version":2}\n', "format version 2 is newer than"),
    ('{"format":"pathkit.tiling_status","format_version":"two"}\n', "'two' is not a version number"),
    ('{"format":"pathkit.tiling_status","format_version":0}\n', "format version 0 is older than"),
])
def test_a_tiling_status_of_another_format_version_is_one_line(tmp_path, cli, header, problem):
    from pathkit_core.wsi.tiling import read_tiling_log

    out = _tiling_log(tmp_path, header, A)
    with pytest.raises(PathkitError, match=problem) as info:
        read_tiling_log(out)
    assert str(info.value).startswith(str(out / "tiling_status.json")) and "pathkit tile" in str(info.value)
    result = cli("status", out)
    assert result.exit_code == 2 and problem in " ".join(result.stderr.split()), result.output
    assert "Traceback" not in result.output


def test_a_tiling_status_without_a_version_reads_and_a_new_one_records_it(tmp_path):
    from pathkit_core.wsi.tiling import TileResult, _update_status, read_tiling_log

    old = _tiling_log(tmp_path, '{"format":"pathkit.tiling_status"}\n', A)
    assert sorted(read_tiling_log(old).slides) == ["a"]
    new = tmp_path / "new"
    _update_status(new, [TileResult("c", "c.svs", "ok")], "hash")
    header = json.loads((new / "tiling_status.json").read_text().splitlines()[0])
    assert header == {"format": "pathkit.tiling_status", "format_version": 1}


def test_an_extraction_status_from_a_future_version_is_one_line(tmp_path, cli):
    from pathkit_core.features.store import read_status

    folder = tmp_path / "features" / "enc"
    folder.mkdir(parents=True)
    (folder / "extraction_status.json").write_text(
        '{"format":"pathkit-extraction-status/7","encoder":"enc"}\n{"slide":"s","record":{"status":"ok"}}\n')
    with pytest.raises(PathkitError, match="extraction status format version 7 is newer than"):
        read_status(tmp_path / "features", "enc")
    result = cli("status", folder)
    assert result.exit_code == 2 and "version 7" in result.stderr and "Traceback" not in result.output


def test_an_unsharded_tile_records_its_plan_before_the_first_slide(tmp_path, monkeypatch):
    import pathkit_core.wsi.tiling as tiling
    from pathkit_core.status import tile_store_status

    for name in ("s1", "s2", "s3"):
        (tmp_path / f"{name}.tiff").write_bytes(b"not a slide")
    seen = []
    real = tiling._tile_job

    def spy(job):
        seen.append(tile_store_status(tmp_path / "out").counts())
        return real(job)

    monkeypatch.setattr(tiling, "_tile_job", spy)
    tiling.tile_slides([tmp_path / f"{n}.tiff" for n in ("s1", "s2", "s3")], tmp_path / "out",
                       tiling.TilingParams(), progress=False)
    assert seen[0] == {"done": 0, "failed": 0, "pending": 3, "locked": 0}
    assert seen[1]["pending"] + seen[1]["failed"] == 3


def _feature_store(tmp_path):
    import torch

    from pathkit_core.features.store import write_features

    folder = tmp_path / "features" / "enc"
    good = write_features(folder / "good.safetensors", torch.zeros(2, 4), torch.zeros(2, 2, dtype=torch.int32),
                          {"slide_id": "good", "encoder": "enc"})
    (folder / "cut.safetensors").write_bytes(good.read_bytes()[:60])
    os.mkfifo(folder / "pipe.safetensors")
    (folder / "dir.safetensors").mkdir()
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2, "f4")}, str(folder / "other.safetensors"), {"format": "someone-else/1"})
    save_file({"x": np.zeros(2, "f4")}, str(folder / "future.safetensors"), {"format": "pathkit-features/9"})
    return folder


def test_status_verify_names_every_unusable_feature_file_and_never_blocks(tmp_path, cli):
    folder = _feature_store(tmp_path)
    result = cli("status", folder, "--verify", "--json")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    [store] = json.loads(result.stdout)["stores"]
    assert store["done"] == 1 and store["counts"]["failed"] == 5
    failed = store["failed"]
    assert "truncated or not safetensors" in failed["cut"] and "named pipe" in failed["pipe"]
    assert "is a directory" in failed["dir"] and "not a pathkit feature file" in failed["other"]
    assert "format version 9 is newer" in failed["future"]
    plain = cli("status", folder)  # without --verify: the listing only, no file opened
    assert plain.exit_code == 0 and "Traceback" not in plain.output


def test_one_unreadable_store_of_a_workspace_hides_no_other(tmp_path, cli):
    from pathkit_core.features import store

    ws = tmp_path / "ws"
    (ws / "tiles").mkdir(parents=True)
    _tiling_log(ws / "tiles", '{"format":"pathkit.tiling_status","format_version":5}\n', A)
    store.record_status(ws / "features", "enc", "s1", "failed", "reading tiles failed")
    result = cli("status", ws, "--json")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    tile, features = json.loads(result.stdout)["stores"]
    assert "format version 5 is newer than" in tile["unreadable"] and tile["counts"]["done"] == 0
    assert features["unreadable"] == "" and features["failed"] == {"s1": "reading tiles failed"}
    shown = " ".join(cli("status", ws).stdout.split())
    assert "unreadable" in shown and "format version 5 is newer" in shown
