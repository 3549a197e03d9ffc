"""Dataset ids and manifest paths stay inside the dataset root unless the user gives an absolute path."""

from __future__ import annotations

import json
import shutil

import pytest
from pathkit_datasets.goldmark import GoldmarkDataset
from pathkit_datasets.histai import HistAI
from pathkit_datasets.reg2025 import REG2025, published_split

from pathkit_core.contracts import PathkitError
from tests.plugins.datasets.test_goldmark import cohort_root, open_ds  # noqa: F401 - fixture

REPORT = "Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia"


def _reg_root(tmp_path, ids):
    root = tmp_path / "a" / "b" / "reg"
    (root / "features").mkdir(parents=True)
    (root / "train.json").write_text(json.dumps([{"id": f"{i}.tiff", "report": REPORT} for i in ids]))
    for i in ids:
        if "/" not in i:
            (root / f"{i}.tiff").write_bytes(b"")
    return root


def test_a_reg2025_id_climbing_out_of_the_root_is_refused(tmp_path):
    ids = published_split()["train"][:2]
    root = _reg_root(tmp_path, [*ids, "../../escape"])
    # what the id would reach: a slide two folders up and a feature file one up from features/
    (root.parent.parent / "escape.tiff").write_bytes(b"outside")
    (root.parent / "escape.safetensors").write_bytes(b"outside")
    with pytest.raises(PathkitError) as err:
        REG2025(root).validate()
    message = str(err.value)
    assert "train.json: record 2 id: case id '../../escape' must be a plain name" in message


def test_histai_case_mapping_with_a_parent_part_is_refused(tmp_path):
    root = tmp_path / "histai"
    (root / "HISTAI-skin-b2" / "case_1").mkdir(parents=True)
    (root / "HISTAI-skin-b2" / "case_1" / "s_HE.tiff").write_bytes(b"")
    (tmp_path / "case_2").mkdir()
    (tmp_path / "case_2" / "s_HE.tiff").write_bytes(b"outside")
    records = [{"case_mapping": "histai/HISTAI-skin-b2/case_1", "diagnosis": "benign naevus"},
               {"case_mapping": "histai/../case_2", "diagnosis": "melanoma"}]
    (root / "metadata.json").write_text(json.dumps(records))
    with pytest.raises(PathkitError, match=r"record 1 case_mapping part: case id '\.\.' must be a plain name"):
        HistAI(root).validate()


@pytest.fixture
def gm_root(cohort_root, tmp_path):  # noqa: F811
    copy = tmp_path / "data" / "cohort"
    shutil.copytree(cohort_root, copy)
    return copy


def _rewrite_first_feature_path(root, value):
    lines = (root / "manifest.csv").read_text().splitlines()
    head = lines[0].split(",")
    col = head.index("feature_path")
    first = lines[1].split(",")
    original = root / first[col]
    first[col] = value
    lines[1] = ",".join(first)
    (root / "manifest.csv").write_text("\n".join(lines) + "\n")
    return first[head.index("slide_id")], original


def test_a_goldmark_relative_feature_path_climbing_out_is_refused(gm_root, tmp_path):
    outside = gm_root.parent / "escape.safetensors"
    sid, original = _rewrite_first_feature_path(gm_root, "../escape.safetensors")
    shutil.copy(original, outside)
    with pytest.raises(PathkitError, match=rf"slide '{sid}': feature_path '../escape.safetensors' points outside"):
        open_ds(gm_root, tmp_path).validate()


def test_a_goldmark_absolute_feature_path_given_by_the_user_is_used(gm_root, tmp_path):
    outside = tmp_path / "elsewhere" / "mine.safetensors"
    outside.parent.mkdir()
    sid, original = _rewrite_first_feature_path(gm_root, "PLACEHOLDER")
    shutil.copy(original, outside)
    text = (gm_root / "manifest.csv").read_text().replace("PLACEHOLDER", str(outside))
    (gm_root / "manifest.csv").write_text(text)
    ds = open_ds(gm_root, tmp_path)
    ds.validate()
    cases = {c.case_id: c for split in ds.splits() for c in ds.cases(split)}
    assert cases[sid].features == (outside,)


def test_a_goldmark_slide_id_with_a_separator_is_refused(gm_root, tmp_path):
    text = (gm_root / "manifest.csv").read_text().splitlines()
    text[1] = "../x" + text[1][text[1].index(","):]
    (gm_root / "manifest.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(PathkitError, match=r"manifest.csv: line 2: slide id: case id '../x' must be a plain name"):
        GoldmarkDataset(gm_root, view="COAD-MSI", workdir=str(tmp_path / "ws")).validate()


def test_feature_store_slide_ids_refuse_separators_and_trailing_newlines():
    from pathkit_core.features.store import check_slide_id

    for bad in ("../../escape", "a/b", "..", ".hidden", "ok\n"):
        with pytest.raises(PathkitError, match="cannot be used as a file name"):
            check_slide_id(bad)
    assert check_slide_id("TCGA-AA-0001-01Z-00-DX1.ABC") == "TCGA-AA-0001-01Z-00-DX1.ABC"
