"""hepatobench-wsi: slides with masks (table or folders), the patch set as train/val, the guard that
refuses slides which gave patches, and tissue composition of a synthetic slide with known areas."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from pathkit_datasets._liver_synthetic import CLASSES, NEC, TUM, liver_layout
from pathkit_datasets.hepatobench_wsi import HepatoBenchWSI, make_liver_demo

from pathkit_core.contracts import PathkitError


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("hbwsi")
    return make_liver_demo(root, test_seeds=(101, 102), train_seeds=(1, 2, 3, 4, 5, 6, 7, 8), size=(1536, 1152),
                           patches_per_class=2, patch_um=24.0)


def rows(path):
    with open(path) as fh:
        return list(csv.reader(fh))


def write_rows(path, table):
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(table)


def test_slides_are_the_test_split_and_patches_train_the_head(small_demo, tmp_path):
    ds = HepatoBenchWSI(small_demo, workdir=tmp_path)
    ds.validate()
    splits = ds.splits()
    assert splits["test"] == ["LIVER-101", "LIVER-102"] and splits["train"] and splits["val"]
    assert ds.class_names() == CLASSES
    geo, png = (next(ds.cases("test")), list(ds.cases("test"))[1])
    assert geo.target["mask"].endswith("LIVER-101.geojson") and geo.target["foreground"] == "TUM"
    assert png.target["mask"].endswith("LIVER-102.png") and png.target["mask_downsample"] == 16.0
    assert geo.meta["stitch"] == {"blend": "average", "subdivide": 1, "threshold": None, "region_name": "Tumor"}
    patch = next(ds.cases("train"))
    assert patch.images and patch.target in CLASSES and patch.meta["slide_id"].startswith("LIVER-")
    summary = ds.summary()
    assert summary["n_slides"] == 2 and summary["mask_formats"] == {".geojson": 1, ".png": 1}
    assert summary["n_patch_slides"] == 8 and not summary["refused_slides"]
    # windows default to the training patches' field of view: HepatoBench's 150 px at 0.5 um/px
    assert ds.training_field_um() == 75.0 and summary["training_field_um"] == summary["window_um"] == 75.0
    assert ds.tiling_options == {"overlap": 0.5, "tile_um": 75.0}
    assert geo.meta["training_field_um"] == 75.0
    assert HepatoBenchWSI(small_demo, window_um=128).tiling_options == {"overlap": 0.5, "tile_um": 128.0}
    assert HepatoBenchWSI(None).tiling_options == {"overlap": 0.5}  # no patch set to ask yet (the demo's build)


def test_a_patch_set_without_a_declared_resolution_leaves_the_window_to_the_encoder(small_demo, tmp_path):
    import shutil

    from pathkit_datasets.hepatobench import CLASS_FOLDERS

    root = tmp_path / "own"
    shutil.copytree(small_demo, root)
    for folder in CLASS_FOLDERS:  # class folders of one's own: a patch-folder set, no declared resolution
        (root / "patches" / folder).rename(root / "patches" / CLASS_FOLDERS[folder])
    ds = HepatoBenchWSI(root, workdir=tmp_path)
    assert ds.training_field_um() is None and ds.tiling_options == {"overlap": 0.5}
    assert "training_field_um" not in next(ds.cases("test")).meta


def test_a_slide_that_gave_patches_is_refused_with_the_list(small_demo, tmp_path):
    header, *table = rows(small_demo / "slides.csv")
    leaky = tmp_path / "leaky.csv"
    # a training slide (it gave patches) listed as a test slide, with its mask
    absolute = [[str(small_demo / r[0]), str(small_demo / r[1]), *r[2:]] for r in table]
    write_rows(leaky, [header, *absolute, [str(small_demo / "slides" / "LIVER-3.tiff"),
                                           str(small_demo / "annotations" / "LIVER-101.geojson"), "P-3", ""]])
    (small_demo / "slides" / "LIVER-3.tiff").write_bytes((small_demo / "slides" / "LIVER-101.tiff").read_bytes())
    with pytest.raises(PathkitError, match=r"1 test slide\(s\) gave patches .*LIVER-3 \(\d+ patches\)"):
        HepatoBenchWSI(small_demo, table=str(leaky), workdir=tmp_path).splits()
    kept = HepatoBenchWSI(small_demo, table=str(leaky), workdir=tmp_path, drop_training_slides=True)
    assert "LIVER-3" not in kept.splits()["test"] and "LIVER-3" in kept.excluded_cases()
    assert kept.summary()["refused_slides"] == ["LIVER-3"]


def test_the_folder_layout_and_its_errors(small_demo, tmp_path):
    root = tmp_path / "folders"
    (root / "slides").mkdir(parents=True)
    (root / "masks").mkdir()
    (root / "slides" / "A.tiff").write_bytes((small_demo / "slides" / "LIVER-101.tiff").read_bytes())
    (root / "masks" / "A.geojson").write_bytes((small_demo / "annotations" / "LIVER-101.geojson").read_bytes())
    ds = HepatoBenchWSI(root, patches=str(small_demo / "patches"), workdir=tmp_path)
    assert ds.splits()["test"] == ["A"]
    (root / "masks" / "A.png").write_bytes((small_demo / "masks" / "LIVER-101.png").read_bytes())
    with pytest.raises(PathkitError, match=r"A.tiff needs exactly one mask .*found A.png, A.geojson"):
        HepatoBenchWSI(root, patches=str(small_demo / "patches"), workdir=tmp_path).splits()
    (root / "masks" / "A.png").unlink()
    with pytest.raises(PathkitError, match="no patch set"):
        HepatoBenchWSI(root, workdir=tmp_path).splits()
    bad = tmp_path / "nomask.csv"
    write_rows(bad, [["slide_path", "patient_id"], [str(root / "slides" / "A.tiff"), "p"]])
    with pytest.raises(PathkitError, match="no mask column"):
        HepatoBenchWSI(root, table=str(bad), patches=str(small_demo / "patches"), workdir=tmp_path).splits()


def test_composition_of_a_known_layout_is_within_tolerance():
    """An oracle class map (the layout itself, on a 32 px cell grid): class areas over the tissue
    within 2 % of the tissue of the layout's exact shapely areas; the tumour region holds the necrosis."""
    from pathkit_core.wsi.masks import MaskFrame
    from pathkit_tasks.segmentation.quantify import slide_composition

    layout = liver_layout(7, 3072, 2304)
    cells = MaskFrame.over(layout.width, layout.height, 32.0, layout.mpp)
    fine = layout.label_raster(8)
    labels = fine[4::4, 4::4][:cells.height, :cells.width]  # centres of 32 px cells on the 8 px raster
    tissue = labels > 0
    found = slide_composition(labels, labels == TUM + 1, tissue, CLASSES, (cells.mpp * 1e-3) ** 2)
    truth = layout.areas_mm2()
    total = sum(truth.values())
    assert found["tissue"]["area_mm2"] == pytest.approx(total, rel=0.02)
    for name in CLASSES:
        assert abs(found["tissue"]["classes"][name]["area_mm2"] - truth[name]) < 0.02 * total, name
        assert abs(found["tissue"]["classes"][name]["fraction"] - truth[name] / total) < 0.02, name
    inside = found["tumour"]["classes"]
    assert inside["NEC"]["fraction"] > 0.05 and inside["TUM"]["fraction"] > 0.5  # necrosis inside the nodules
    assert found["non_tumour_tissue"]["classes"]["TUM"]["area_mm2"] == 0
    assert np.isclose(inside[CLASSES[NEC]]["area_mm2"], truth["NEC"], rtol=0.1)
