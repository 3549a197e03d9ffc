"""segmentation metric: numpy's Dice and IoU exactly, the three empty-reference rules (the seed's,
MONAI's ignore_empty True and False), per slide and pooled, and `pathkit score` on mask folders
(PNG against PNG, GeoJSON and TIFF with tags), with its errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pathkit_metrics.segmentation import SegmentationMetric, overlap_scores
from PIL import Image

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.masks import MaskFrame, geojson_features, vectorise, write_geojson


def numpy_scores(a, b):
    inter = np.sum(a & b)
    return 2 * inter / (a.sum() + b.sum()), inter / np.sum(a | b)


def png(path, mask):
    Image.fromarray(np.where(mask, 255, 0).astype(np.uint8)).save(path)
    return path


@pytest.fixture
def hand_made(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.random((60, 80)) > 0.5
    b = rng.random((60, 80)) > 0.4
    pred, ref = tmp_path / "pred", tmp_path / "ref"
    pred.mkdir()
    ref.mkdir()
    png(pred / "s1.png", a)
    png(ref / "s1.png", b)
    png(pred / "s2.png", np.zeros_like(a))  # empty against empty
    png(ref / "s2.png", np.zeros_like(a))
    return pred, ref, a, b


def test_seed_recipe_rules_and_monai_rules_on_counts():
    # the seed: a zero denominator gives 0; MONAI ignore_empty=True: NaN; ignore_empty=False: empty/empty = 1
    assert overlap_scores(0, 0, 0, "seed")["Dice"] == 0.0
    assert math.isnan(overlap_scores(0, 0, 0, "ignore")["Dice"])
    assert overlap_scores(0, 0, 0, "one") == dict.fromkeys(("Dice", "IoU", "precision", "recall", "F1"), 1.0)
    # an empty reference with a non-empty prediction: 0 under the seed and MONAI's False, NaN under True
    assert overlap_scores(0, 5, 0, "seed")["Dice"] == 0.0 == overlap_scores(0, 5, 0, "one")["IoU"]
    assert math.isnan(overlap_scores(0, 5, 0, "ignore")["IoU"])
    s = overlap_scores(3, 1, 2)
    assert (s["Dice"], s["IoU"], s["precision"], s["recall"]) == (6 / 9, 3 / 6, 3 / 4, 3 / 5)
    assert s["F1"] == pytest.approx(s["Dice"])  # for binary masks F1 is Dice


def test_pathkit_score_gives_numpys_dice_and_iou_under_each_rule(cli, hand_made):
    pred, ref, a, b = hand_made
    dice, iou = numpy_scores(a, b)
    results = {}
    for rule in ("seed", "ignore", "one"):
        out = cli("score", "--metric", "segmentation", "-p", pred, "-r", ref, "--option", f"empty={rule}", "--json")
        assert out.exit_code == 0, out.output
        results[rule] = json.loads(out.stdout)["segmentation"]
    for s in results.values():
        assert s["Dice_pooled"] == dice and s["IoU_pooled"] == iou  # the empty slide adds no pixel
        assert s["n_cases"] == 2 and s["n_empty_reference"] == 1 and s["n_empty_both"] == 1
    assert results["seed"]["Dice"] == dice / 2 and results["seed"]["IoU"] == iou / 2  # s2 scores 0
    assert results["ignore"]["Dice"] == dice and results["ignore"]["n_scored"] == 1  # s2 left out
    assert results["one"]["Dice"] == (dice + 1) / 2 and results["one"]["IoU"] == (iou + 1) / 2  # s2 scores 1


def test_a_polygon_and_the_mask_it_was_drawn_from_score_identically(cli, tmp_path, hand_made):
    pred, ref, a, b = hand_made
    geo = tmp_path / "geo"
    geo.mkdir()
    write_geojson(geo / "s1.geojson", geojson_features(vectorise(b, MaskFrame(80, 60)), "Tumor"))
    write_geojson(geo / "s2.geojson", [])
    from_mask = json.loads(cli("score", "-m", "segmentation", "-p", pred, "-r", ref, "--json").stdout)
    from_polygons = json.loads(cli("score", "-m", "segmentation", "-p", pred, "-r", geo, "--json").stdout)
    assert from_polygons == from_mask
    # GeoJSON in level-0 units of a mask at downsample 4: same scores with --option downsample=4
    geo4 = tmp_path / "geo4"
    geo4.mkdir()
    write_geojson(geo4 / "s1.geojson", geojson_features(vectorise(b, MaskFrame(80, 60, 4.0, 4.0)), "Tumor"))
    write_geojson(geo4 / "s2.geojson", [])
    scaled = json.loads(cli("score", "-m", "segmentation", "-p", pred, "-r", geo4, "--option", "downsample=4",
                            "--json").stdout)
    assert scaled == from_mask


def test_masks_at_other_resolutions_meet_on_the_reference_grid(tmp_path):
    import tifffile

    fine = np.zeros((40, 40), dtype=bool)
    fine[:20, :24] = True
    coarse = fine[::2, ::2]  # the same mask at half the resolution, by pixel centres
    tifffile.imwrite(tmp_path / "ref.tif", np.where(fine, 255, 0).astype(np.uint8), resolution=(1e4 / 2.0,) * 2,
                     resolutionunit="CENTIMETER")
    tifffile.imwrite(tmp_path / "pred.tif", np.where(coarse, 255, 0).astype(np.uint8), resolution=(1e4 / 4.0,) * 2,
                     resolutionunit="CENTIMETER")
    result = SegmentationMetric().compute([str(tmp_path / "pred.tif")], [str(tmp_path / "ref.tif")], ids=["s"])
    assert result.summary["Dice"] == 1.0
    assert result.per_case["eval_mpp"].to_list() == [2.0]
    png(tmp_path / "odd.png", np.zeros((13, 40), dtype=bool))
    with pytest.raises(PathkitError, match=r"case s: mask .*odd.png \(40 x 13 px\) cannot be matched"):
        SegmentationMetric().compute([str(tmp_path / "odd.png")], [str(tmp_path / "ref.tif")], ids=["s"])


def test_options_are_checked_and_missing_slides_listed(cli, hand_made, tmp_path):
    pred, ref, _, _ = hand_made
    with pytest.raises(PathkitError, match="empty='zero'"):
        SegmentationMetric().compute([str(pred / "s1.png")], [str(ref / "s1.png")],
                                     context={"options": {"empty": "zero"}})
    with pytest.raises(PathkitError, match="region=tissue needs a run's tissue masks"):
        SegmentationMetric().compute([str(pred / "s1.png")], [str(ref / "s1.png")],
                                     context={"options": {"region": "tissue"}})
    (pred / "s2.png").unlink()
    out = cli("score", "-m", "segmentation", "-p", pred, "-r", ref)
    assert out.exit_code != 0 and "missing from" in out.output and "s2" in out.output


def test_arrays_through_the_evaluate_interface(hand_made):
    from pathkit_interop.evaluate_modules import as_evaluate_module

    _, _, a, b = hand_made
    dice, iou = numpy_scores(a, b)
    module = as_evaluate_module("segmentation")
    out = module.compute(predictions=[a.astype(float).tolist()], references=[b.astype(float).tolist()])
    assert out["Dice"] == pytest.approx(dice, abs=1e-12) and out["IoU"] == pytest.approx(iou, abs=1e-12)
    with pytest.raises(PathkitError, match="one shape"):
        SegmentationMetric().compute([a[:5]], [b])
