"""Every name that comes from a file or the user and becomes a path under an output root (suite,
case id, slide name, encoder, dataset) goes through `workspace.confined` or the slide-id rule:
`../`, absolute, NUL, a '/' inside an id and over-long names are one-line errors, and nothing is
written outside the root. One test per class, with its variants."""

from __future__ import annotations

import os

import pytest

from pathkit_core.contracts import PathkitError

ESCAPES = ["..", "../x", "../../esc", "/tmp/abs", "a/b", "a\x00b", "x" * 256]


@pytest.mark.parametrize("name", ESCAPES)
def test_a_suite_name_never_leaves_the_suites_folder(tmp_path, name):
    from types import SimpleNamespace

    from pathkit_bench.suite.runner import suite_folder

    with pytest.raises(PathkitError) as info:
        suite_folder(tmp_path / "work", SimpleNamespace(name=name, path=tmp_path / "s.toml"))
    assert str(info.value).startswith(f"{tmp_path / 's.toml'}: suite name") and "\n" not in str(info.value)
    assert not (tmp_path / "work").exists()


# Names a file system allows for a slide file, which the slide-id rule refuses; and one it takes.
BAD_SLIDE_NAMES = ["a#b", ".hidden", "-x", "_x", "caf\u00e9", "a;b", "x" * 201]


@pytest.mark.parametrize("stem", BAD_SLIDE_NAMES)
def test_tile_and_extract_refuse_the_same_slide_names(tmp_path, stem):
    from pathkit_core.features.store import check_slide_id, feature_path
    from pathkit_core.wsi.params import TilingParams
    from pathkit_core.wsi.slide import SlideError
    from pathkit_core.wsi.tiling import tile_slide, tile_slides

    slide = tmp_path / f"{stem}.tiff"
    slide.write_bytes(b"not read: the name is refused first")
    with pytest.raises(SlideError) as info:
        tile_slide(slide, tmp_path / "out", TilingParams())
    assert info.value.code == "bad-slide-id" and str(info.value).startswith(str(slide))
    with pytest.raises(PathkitError, match="slide id"):
        check_slide_id(stem)
    with pytest.raises(PathkitError, match="slide id"):
        feature_path(tmp_path, "enc", stem)
    # in a batch the slide fails with its reason and code; nothing is written for it
    [result] = tile_slides([slide], tmp_path / "out", TilingParams(), progress=False)
    assert result.status == "failed" and result.code == "bad-slide-id"
    assert [n for n in os.listdir(tmp_path / "out") if not n.startswith(".")] == ["tiling_status.json"]


def test_a_slide_name_both_stages_take_is_taken_by_both(tmp_path):
    from pathkit_core.contracts import slide_id_problem
    from pathkit_core.features.store import feature_path

    for good in ("TCGA-AA-0001-01Z-00-DX1.8A7F", "case 1+2", "x" * 200):
        assert slide_id_problem(good) is None
        assert feature_path(tmp_path, "enc", good).parent == tmp_path / "enc"


@pytest.mark.parametrize("slide_id", ["../x", "a/b", "/etc/x", "a\x00b", "x" * 256])
def test_tile_store_paths_stay_in_the_store(tmp_path, slide_id):
    from pathkit_core.wsi.tiling import manifest_path_for, qc_path_for

    for where in (manifest_path_for, qc_path_for):
        with pytest.raises(PathkitError, match="slide"):
            where(tmp_path / "out", slide_id)


@pytest.mark.parametrize("case_id", ["../esc", "a/b", "/tmp/abs", "x" * 256])
def test_a_segmentation_case_id_never_names_a_staged_map_outside_the_run(tmp_path, case_id):
    from pathkit_tasks.segmentation.task import predict_slide

    staging = tmp_path / "run" / ".segmentation-staging-1"
    with pytest.raises(PathkitError, match="segmentation case"):
        predict_slide(None, case_id, [], {}, staging, accelerator=None, batch_size=1, cfg=None)
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("case_id, problem", [
    ("../x", "must be a plain name"), ("a/b", "must be a plain name"), ("a\x00", "must be a plain name"),
    ("..", "must be a plain name"), ("x" * 201, "201 bytes long"), ("\u00e9" * 101, "202 bytes long"),
])
def test_case_ids_that_cannot_name_a_per_case_file_are_refused_before_any_work(case_id, problem):
    from pathkit_core.contracts import case_id_problem

    assert problem in case_id_problem(case_id)
    assert case_id_problem("x" * 200) is None and case_id_problem("TCGA-01 <b>") is None


@pytest.mark.parametrize("slide_id", ["../../esc", "a/b", ".hidden", "x" * 201])
def test_attention_exports_stay_in_their_folder(tmp_path, slide_id):
    import polars as pl

    from pathkit_tasks.classification.attention import write_attention

    out = tmp_path / "run" / "attention"
    with pytest.raises(PathkitError, match="slide id"):
        write_attention(pl.DataFrame({"tile_index": [0]}), out, slide_id)
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("slide_id", ["../../esc", "a/b", ".hidden"])
def test_a_slide_embedding_named_by_feature_metadata_stays_in_the_store(tmp_path, slide_id):
    import torch
    from pathkit_encoders.slide_store import _slide_id

    from pathkit_core.features.store import write_features

    path = tmp_path / "f.safetensors"
    write_features(path, torch.zeros(2, 4), torch.zeros(2, 2, dtype=torch.int32),
                   {"slide_id": slide_id, "encoder": "e", "embed_dim": "4"})
    from pathkit_core.features.store import read_feature_meta

    with pytest.raises(PathkitError, match=f"{path}: its metadata names slide id"):
        _slide_id(path, read_feature_meta(path))


@pytest.mark.parametrize("encoder", ESCAPES + [".hidden"])
def test_encoder_names_never_leave_the_feature_store(tmp_path, encoder):
    from pathkit_core.features.store import encoder_dir, feature_path, status_path

    for where in (lambda: encoder_dir(tmp_path, encoder), lambda: status_path(tmp_path, encoder),
                  lambda: feature_path(tmp_path, encoder, "s1")):
        with pytest.raises(PathkitError, match="encoder name"):
            where()


@pytest.mark.parametrize("dataset", ["../x", "goldmark:../../x", "/abs", "a\x00"])
def test_dataset_names_never_leave_their_workspace_folder(tmp_path, dataset):
    from pathkit_datasets._goldmark_crossval import crossval_dir

    from pathkit_sdk.cohort import splits_folder

    with pytest.raises(PathkitError, match="splits of dataset"):
        splits_folder(dataset, tmp_path)
    with pytest.raises(PathkitError, match="crossval folder"):
        crossval_dir(tmp_path, dataset, "enc", "gen")
    with pytest.raises(PathkitError, match="crossval folder"):
        crossval_dir(tmp_path, "goldmark", "../enc", "gen")
    assert splits_folder("goldmark:COAD-MSI", tmp_path) == tmp_path / "splits" / "goldmark_COAD-MSI"


@pytest.mark.parametrize("encoder", ["../x", "/abs", "a/b", "..", "a\x00b"])
def test_qc_reads_only_an_encoder_folder_inside_the_store(cli, tmp_path, encoder):
    (tmp_path / "store").mkdir()
    (tmp_path / "x").mkdir()  # a folder beside the store that `../x` would name
    result = cli("qc", str(tmp_path / "store"), "--encoder", encoder)
    assert result.exit_code != 0 and "pathkit qc --encoder" in result.output and "plain folder name" in result.output
    assert "Traceback" not in result.output
