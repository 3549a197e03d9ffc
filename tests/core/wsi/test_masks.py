"""Region masks: QuPath's pixel-centre rule, polygon <-> mask round trips, GeoJSON reading (holes,
multipolygons, QuPath's lists, repairs, bad features), mask frames on slides and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shapely

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.masks import (
    MaskFrame,
    geojson_features,
    rasterise,
    read_geojson,
    vectorise,
    write_geojson,
)
from pathkit_sdk.masks import (
    RasterMask,
    check_within,
    frame_on_slide,
    read_raster,
    reference_mask,
    resample,
    write_png,
)


def blotchy(shape=(48, 64), seed=0):
    from scipy import ndimage as ndi

    rng = np.random.default_rng(seed)
    mask = ndi.binary_opening(rng.random(shape) > 0.55) | (rng.random(shape) > 0.985)
    mask[10:30, 20:40] = True
    mask[15:20, 25:30] = False  # a hole
    return mask


@pytest.mark.parametrize("downsample", [1.0, 4.0, 2.5])
def test_a_mask_vectorised_rasterises_back_exactly(downsample):
    mask = blotchy()
    frame = MaskFrame(mask.shape[1], mask.shape[0], downsample, downsample)
    region = vectorise(mask, frame)
    assert region.is_valid and any(len(p.interiors) for p in region.geoms)  # the hole is kept
    assert np.array_equal(rasterise(region, frame), mask)
    assert region.area == pytest.approx(mask.sum() * downsample**2)


def test_pixel_centre_rule_with_qupath_ties():
    frame = MaskFrame(4, 4)
    # centres (0.5, 1.5, ...): a square from 0.4 to 1.6 holds four centres, one from 0.6 to 1.4 none
    assert rasterise(shapely.box(0.4, 0.4, 1.6, 1.6), frame).sum() == 4
    assert rasterise(shapely.box(0.6, 0.6, 1.4, 1.4), frame).sum() == 0
    # centres on the edges: inside on the left and top edges, outside on the right and bottom (AWT)
    got = rasterise(shapely.box(0.5, 0.5, 2.5, 2.5), frame)
    assert got[:3, :3].astype(int).tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 0]]
    # the same square in level-0 units on a downsample-2 grid: centres at 1, 3, 5, 7
    coarse = rasterise(shapely.box(1.0, 1.0, 5.0, 5.0), MaskFrame(4, 4, 2.0, 2.0))
    assert coarse[:3, :3].astype(int).tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 0]]


def test_geojson_holes_multipolygons_classes_and_qupath_lists(tmp_path):
    ring = [[0, 0], [40, 0], [40, 40], [0, 40], [0, 0]]
    hole = [[10, 10], [10, 20], [20, 20], [20, 10], [10, 10]]
    features = [
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring, hole]},
         "properties": {"classification": {"name": "Tumor", "color": [200, 0, 0]}}},
        {"type": "Feature", "geometry": {"type": "MultiPolygon", "coordinates": [
            [[[50, 0], [60, 0], [60, 10], [50, 10], [50, 0]]], [[[70, 0], [80, 0], [80, 10], [70, 10], [70, 0]]]]},
         "properties": {"classification": {"name": "Tumor"}}},
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0, 50], [5, 50], [5, 55], [0, 50]]]},
         "properties": {"classification": {"name": "Stroma"}}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [3, 3]}, "properties": {}},
    ]
    path = tmp_path / "s.geojson"
    path.write_text(json.dumps(features))  # QuPath before 0.3: a bare list of features
    found = read_geojson(path, classes=["Tumor"])
    assert found.geometry.area == pytest.approx(1600 - 100 + 200)
    assert any("Point" in s for s in found.skipped) and any("Stroma" in s for s in found.skipped)
    everything = read_geojson(path)
    assert everything.geometry.area == pytest.approx(1600 - 100 + 200 + 12.5)
    mask = rasterise(found.geometry, MaskFrame(100, 60))
    assert mask.sum() == 1600 - 100 + 200 and not mask[15, 15]


def test_geojson_repairs_a_bow_tie_and_names_an_unreadable_feature(tmp_path):
    bow = {"type": "Polygon", "coordinates": [[[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]]}
    path = tmp_path / "bow.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": bow, "properties": {}}]}))
    found = read_geojson(path)
    assert found.repaired and "Self-intersection" in found.repaired[0]
    assert found.geometry.is_valid and found.geometry.area == pytest.approx(50.0)
    bad = tmp_path / "bad.geojson"
    bad.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": bow, "properties": {}},
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[["a", 0], [1, 1]]]},
         "properties": {"classification": {"name": "Tumor"}}}]}))
    with pytest.raises(PathkitError, match=r"feature 1 \(Tumor\) has unreadable coordinates"):
        read_geojson(bad)
    (tmp_path / "junk.geojson").write_text("{not json")
    with pytest.raises(PathkitError, match="junk.geojson is not readable JSON"):
        read_geojson(tmp_path / "junk.geojson")


def test_geojson_outside_its_frame_is_an_error(tmp_path):
    path = tmp_path / "swapped.geojson"
    write_geojson(path, geojson_features(shapely.box(100, 3000, 200, 3100), "Tumor"))
    with pytest.raises(PathkitError, match="outside slide x"):
        check_within(read_geojson(path), MaskFrame(4000, 1000), "slide x")


def test_a_written_feature_collection_reads_back(tmp_path):
    region = vectorise(blotchy(), MaskFrame(64, 48, 8.0, 8.0))
    path = write_geojson(tmp_path / "r.geojson", geojson_features(region, "Tumor"))
    data = json.loads(path.read_text())
    assert data["type"] == "FeatureCollection"
    assert data["features"][0]["properties"]["classification"]["name"] == "Tumor"
    assert data["features"][0]["properties"]["objectType"] == "annotation"
    assert read_geojson(path).geometry.equals(region)


def test_mask_frames_on_a_slide(tmp_path):
    raster = RasterMask(np.zeros((250, 375), dtype=np.uint8), tmp_path / "m.png")
    # from the sizes: 6000 x 4000 at 16
    assert frame_on_slide(raster, (6000, 4000), 0.25).dx == pytest.approx(16.0)
    assert frame_on_slide(raster, (6000, 4000), 0.25, downsample=16).mpp == pytest.approx(4.0)
    assert frame_on_slide(raster, (6000, 4000), 0.25, mask_mpp=4.0).dx == pytest.approx(16.0)
    with pytest.raises(PathkitError, match=r"m.png \(375 x 250 px at downsample 8.*slide x \(6000 x 4000 px\)"):
        frame_on_slide(raster, (6000, 4000), 0.25, downsample=8, slide_name="slide x")
    with pytest.raises(PathkitError, match=r"375 x 250 px.*6000 x 6000 px.*downsamples 16 across and 24 down"):
        frame_on_slide(raster, (6000, 6000), 0.25)


def test_tiff_resolution_tags_are_read_and_placeholders_ignored(tmp_path):
    import tifffile

    values = np.zeros((20, 30), dtype=np.uint8)
    tifffile.imwrite(tmp_path / "a.tif", values, resolution=(1e4 / 8.0, 1e4 / 8.0), resolutionunit="CENTIMETER")
    tifffile.imwrite(tmp_path / "b.tif", values, resolution=(72, 72), resolutionunit="INCH")
    assert read_raster(tmp_path / "a.tif").mpp == pytest.approx(8.0)
    assert read_raster(tmp_path / "b.tif").mpp is None
    rgb = np.zeros((5, 6, 3), dtype=np.uint8)
    rgb[1, 2] = (0, 90, 0)
    from PIL import Image

    Image.fromarray(rgb).save(tmp_path / "c.png")
    got = read_raster(tmp_path / "c.png").values
    assert got.shape == (5, 6) and got[1, 2] == 90 and got.sum() == 90
    with pytest.raises(PathkitError, match="cannot be read as an image"):
        (tmp_path / "d.png").write_bytes(b"not a png")
        read_raster(tmp_path / "d.png")


def test_resample_reads_source_pixels_at_target_centres(tmp_path):
    fine = np.zeros((8, 8), dtype=bool)
    fine[:4, :4] = True
    coarse = resample(fine, MaskFrame(8, 8, 1.0, 1.0), MaskFrame(4, 4, 2.0, 2.0))
    assert coarse.astype(int).tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    back = resample(coarse, MaskFrame(4, 4, 2.0, 2.0), MaskFrame(8, 8, 1.0, 1.0))
    assert np.array_equal(back, fine)
    path = write_png(tmp_path / "m.png", fine)
    assert np.array_equal(read_raster(path).values > 0, fine)


def test_a_reference_reads_alike_from_its_png_and_its_geojson(tmp_path):
    """The metric and the report read a run's ground truth through `reference_mask`: a mask image at
    downsample 8 and the GeoJSON drawn from it give the same mask on a coarser evaluation grid."""
    mask = blotchy()
    png = write_png(tmp_path / "s1.png", mask)
    fine = MaskFrame(mask.shape[1], mask.shape[0], 8.0, 8.0)
    geo = write_geojson(tmp_path / "s1.geojson", geojson_features(vectorise(mask, fine), "Tumor"))
    size0 = (mask.shape[1] * 8, mask.shape[0] * 8)
    frame = MaskFrame.over(*size0, 16.0, 0.25)
    from_png, repaired = reference_mask({"mask": str(png), "mask_downsample": 8}, frame, size0, 0.25)
    from_geo, _ = reference_mask({"mask": str(geo)}, frame, size0, 0.25, classes=["Tumor"])
    assert repaired == [] and from_png.shape == frame.shape
    assert np.array_equal(from_png, resample(mask, fine, frame))
    assert np.array_equal(from_png, from_geo)
    with pytest.raises(PathkitError, match=r"mask_downsample='x' is not a number"):
        reference_mask({"mask": str(png), "mask_downsample": "x"}, frame, size0, 0.25)
    with pytest.raises(PathkitError, match=r"s1.png \(64 x 48 px at downsample 4"):
        reference_mask({"mask": str(png), "mask_downsample": 4, "slide": "S"}, frame, size0, 0.25)


@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (64, 48), (0, 5)])
def test_packed_masks_come_back_bit_for_bit_and_damage_is_named(shape):
    from pathkit_core.wsi.masks import pack_mask, unpack_mask

    mask = np.random.default_rng(sum(shape)).random(shape) > 0.6
    packed = json.loads(json.dumps(pack_mask(mask)))  # it travels as JSON in the manifest
    back = unpack_mask(packed, "m.parquet")
    assert back.dtype == bool and back.shape == shape
    np.testing.assert_array_equal(back, mask)
    with pytest.raises(PathkitError, match=r"m.parquet: packed mask of \d+ bytes does not hold"):
        unpack_mask({**packed, "height": shape[0] + 8}, "m.parquet")
    with pytest.raises(PathkitError, match="m.parquet: damaged packed mask"):
        unpack_mask({**packed, "bits": "not base64!"}, "m.parquet")
    with pytest.raises(PathkitError, match="m.parquet: damaged packed mask"):
        unpack_mask({"height": 1}, "m.parquet")


# --------------------------------------------------------------------------- hardening (issue 28)


def _tumour_polygon_with(bad: str) -> str:
    return ('{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"classification": '
            '{"name": "Tumor"}}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], '
            f'[10, {bad}], [0, 10], [0, 0]]]}}}}]}}')


NOT_FINITE = r"feature 0 \(Tumor\) has a NaN or infinite coordinate"


@pytest.mark.parametrize(("content", "problem"), [
    (_tumour_polygon_with("NaN"), NOT_FINITE),
    (_tumour_polygon_with("1e400"), NOT_FINITE),
    (_tumour_polygon_with("-Infinity"), NOT_FINITE),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply to be read"),  # deeper than json can read
], ids=["NaN", "1e400", "-Infinity", "deep"])
def test_a_hostile_geojson_is_one_line_naming_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "bad.geojson"
    path.write_text(content)
    with pytest.raises(PathkitError, match=rf"GeoJSON {path}: {problem}"):
        read_geojson(path)


def test_a_points_only_reference_lists_the_features_it_skipped(tmp_path):
    path = tmp_path / "points.geojson"
    write_geojson(path, [{"type": "Feature", "properties": {"classification": {"name": "Tumor"}},
                          "geometry": {"type": "Point", "coordinates": [5, 5]}},
                         {"type": "Feature", "properties": {},
                          "geometry": {"type": "LineString", "coordinates": [[0, 0], [9, 9]]}}])
    frame = MaskFrame(16, 16, 1.0, 1.0)
    mask, notes = reference_mask({"mask": str(path)}, frame, (16, 16), None)
    assert not mask.any()
    assert notes == ["points.geojson skipped: feature 0 (Tumor): a Point, not an area; "
                     "feature 1: a LineString, not an area"]


def test_a_npy_mask_whose_foreground_is_nan_is_refused(tmp_path):
    values = np.zeros((8, 8), np.float32)
    values[2:5, 2:5] = np.nan
    np.save(tmp_path / "m.npy", values)
    with pytest.raises(PathkitError, match=r"m\.npy holds 9 NaN or infinite value\(s\)"):
        read_raster(tmp_path / "m.npy")
