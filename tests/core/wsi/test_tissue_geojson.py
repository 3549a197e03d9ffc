"""The tissue mask a person can correct: `pathkit tile` writes the contours as QuPath GeoJSON beside
each manifest; given back unedited they give the same tiles, edited they re-tile the slide."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pathkit_core.wsi.manifest import read_manifest
from pathkit_core.wsi.tiling import TilingParams, tile_slide

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")


@pytest.fixture(scope="module")
def tiled(synthetic_slides, tmp_path_factory):
    """The two-blob slide tiled once with the segmenter."""
    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=1024)
    out = tmp_path_factory.mktemp("segmented")
    result = tile_slide(synthetic_slides["tissue"], out, params)
    return params, out, read_manifest(result.manifest_path)


def test_tile_writes_qupath_contours_that_rasterise_back_to_the_mask(tiled):
    from pathkit_core.wsi.masks import MaskFrame, rasterise, read_geojson, unpack_mask

    _, out, manifest = tiled
    path = out / "tissue.tissue.geojson"
    data = json.loads(path.read_text())
    assert data["type"] == "FeatureCollection" and len(data["features"]) == 2  # the two blobs
    feature = data["features"][0]
    assert feature["properties"]["objectType"] == "annotation"
    assert feature["properties"]["classification"]["name"] == "Tissue"
    m = manifest.meta["mask"]
    tissue = unpack_mask(manifest.meta["tissue_mask"], "test")
    frame = MaskFrame(m["width"], m["height"], m["downsample_x"], m["downsample_y"], m["mpp"])
    np.testing.assert_array_equal(rasterise(read_geojson(path).geometry, frame).astype(bool), tissue)
    xs = [x for ring in feature["geometry"]["coordinates"] for x, _ in ring]
    assert 0 <= min(xs) and max(xs) <= manifest.meta["width"]  # level-0 pixels


def test_an_unedited_mask_gives_the_same_tiles_without_the_segmenter(tiled, synthetic_slides, tmp_path):
    params, out, manifest = tiled
    again = TilingParams(**{**params.as_dict(), "tissue_geojson": str(out)})
    assert again.params_hash() == params.params_hash()
    result = tile_slide(synthetic_slides["tissue"], tmp_path, again)
    ours = read_manifest(result.manifest_path)
    assert ours.meta["segmentation"]["segmenter"] == "geojson"
    assert ours.meta["segmentation"]["geojson_identity"].startswith("sha256:")
    assert ours.tiles.select("x", "y").equals(manifest.tiles.select("x", "y"))


def test_an_edited_mask_re_tiles_the_slide_and_changes_its_manifest(tiled, synthetic_slides, tmp_path):
    params, out, manifest = tiled
    edits = tmp_path / "edited"
    edits.mkdir()
    data = json.loads((out / "tissue.tissue.geojson").read_text())
    # the pathologist deletes the right-hand blob
    centre_x = [np.mean([x for x, _ in f["geometry"]["coordinates"][0]]) for f in data["features"]]
    data["features"] = [f for f, cx in zip(data["features"], centre_x, strict=True) if cx < manifest.meta["width"] / 2]
    (edits / "tissue.geojson").write_text(json.dumps(data))
    with_edits = TilingParams(**{**params.as_dict(), "tissue_geojson": str(edits)})
    tiles_dir = tmp_path / "tiles"
    first = tile_slide(synthetic_slides["tissue"], tiles_dir, with_edits)
    edited = read_manifest(first.manifest_path)
    assert 0 < edited.n_tiles < manifest.n_tiles
    assert edited.tiles["x"].max() < manifest.meta["width"] / 2  # nothing left on the right
    assert tile_slide(synthetic_slides["tissue"], tiles_dir, with_edits).status == "skipped"
    before = first.manifest_path.read_bytes()
    data["features"] = data["features"][:1] + json.loads((out / "tissue.tissue.geojson").read_text())["features"]
    (edits / "tissue.geojson").write_text(json.dumps(data))  # the blob drawn back
    from pathkit_core.wsi.slide import SlideError

    with pytest.raises(SlideError, match="another tissue mask"):
        tile_slide(synthetic_slides["tissue"], tiles_dir, with_edits)
    result = tile_slide(synthetic_slides["tissue"], tiles_dir, with_edits, overwrite=True)
    assert result.status == "ok" and result.manifest_path.read_bytes() != before  # so features re-extract
    assert read_manifest(result.manifest_path).n_tiles == manifest.n_tiles


def test_the_cli_takes_a_folder_of_masks(cli, synthetic_slides, tiled, tmp_path):
    _, out, manifest = tiled
    result = cli("tile", str(synthetic_slides["tissue"]), "--out", str(tmp_path), "--target-mpp", "2",
                 "--tile-px", "64", "--min-tissue-area", "0", "--thumbnail-px", "1024", "--quiet",
                 "--tissue-geojson", str(out))
    assert result.exit_code == 0, result.output
    assert read_manifest(tmp_path / "tissue.parquet").n_tiles == manifest.n_tiles
    # a wide terminal: at 80 columns the error box may break the message inside the path or the flag
    bad = cli("tile", str(synthetic_slides["tissue"]), "--out", str(tmp_path), "--tissue-geojson",
              str(tmp_path / "nowhere"), env={"COLUMNS": "400"})
    assert bad.exit_code != 0 and "--tissue-geojson" in bad.output and "does not exist" in bad.output


def test_a_batch_tiles_from_the_mask_folder(synthetic_slides, tmp_path):
    """`tile_slides` (what `pathkit tile` and `pathkit run` call) hands the folder to its workers."""
    from pathkit_core.wsi.manifest import read_manifest_meta
    from pathkit_core.wsi.tiling import tile_slides

    masks = tmp_path / "masks"
    masks.mkdir()
    ring = [[0, 0], [600, 0], [600, 600], [0, 600], [0, 0]]
    (masks / "tissue.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]}, "properties": {}}]}))
    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=1024,
                          tissue_geojson=str(masks))
    result = tile_slides([synthetic_slides["tissue"]], tmp_path / "out", params, progress=False)[0]
    assert read_manifest_meta(result.manifest_path)["segmentation"]["segmenter"] == "geojson"
