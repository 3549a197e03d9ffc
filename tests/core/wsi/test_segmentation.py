"""Tissue segmentation: Otsu, colour conversion, pen removal, holes, registry, thumbnails."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.segmentation import (
    TissueMask,
    TissueSegmenter,
    get_segmenter,
    read_thumbnail,
    segment_slide,
    segmentation_downsample,
    segmentation_thumbnail,
    snap_level,
    thumbnail_geometry,
)
from pathkit_core.wsi.tiling import TilingParams
from pathkit_tissue.otsu import OtsuTissueSegmenter, hsv_channels, otsu_threshold

GLASS = (242, 241, 245)
PINK = (222, 140, 190)


def _image(h=200, w=300, colour=GLASS):
    img = np.empty((h, w, 3), np.uint8)
    img[...] = colour
    return img


def _disc(img, cy, cx, r, colour):
    yy, xx = np.mgrid[: img.shape[0], : img.shape[1]]
    inside = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
    img[inside] = colour
    return inside


def test_otsu_threshold_of_two_point_masses_is_between_them():
    values = np.r_[np.full(700, 0.1), np.full(300, 0.7)]
    t = otsu_threshold(values)
    assert 0.1 < t <= 0.7
    # Hand-computed: any split between the masses maximises between-class variance; the
    # first maximum is the bin right after 0.1 (histogram edge 26/256).
    assert t == pytest.approx(26 / 256)


def test_hsv_matches_colorsys():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(500, 3), dtype=np.uint8)
    hue, sat, val = hsv_channels(rgb[None])
    for i, (r, g, b) in enumerate(rgb):
        h, s, v = colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)
        assert sat[0, i] == pytest.approx(s, abs=1e-5) and val[0, i] == pytest.approx(v, abs=1e-5)
        if s > 0:
            assert min(abs(hue[0, i] - h * 360), 360 - abs(hue[0, i] - h * 360)) <= 0.71


def test_tissue_is_found_and_glass_is_not():
    img = _image()
    truth = _disc(img, 100, 120, 50, PINK)
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    iou = (mask.tissue & truth).sum() / (mask.tissue | truth).sum()
    assert iou > 0.95
    assert mask.area_mm2 == pytest.approx(truth.sum() * 16 / 1e6, rel=0.05)


def test_all_glass_gives_no_tissue_even_with_noise():
    rng = np.random.default_rng(1)
    img = np.clip(_image().astype(int) + rng.normal(0, 3, (200, 300, 3)), 0, 255).astype(np.uint8)
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert not mask.tissue.any()


@pytest.mark.parametrize("ink", [(30, 70, 170), (60, 160, 120), (35, 35, 40), (190, 25, 35)])
def test_pen_marks_of_each_colour_are_removed(ink):
    img = _image()
    tissue = _disc(img, 100, 80, 45, PINK)
    img[80:120, 150:290] = ink  # a 160-um wide stroke on glass at 4 um/px
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert not mask.tissue[80:120, 150:290].any()
    assert mask.pen[80:120, 150:290].all()
    assert (mask.tissue & tissue).sum() > 0.9 * tissue.sum()


def test_haematoxylin_and_small_red_blood_cells_are_not_pen():
    img = _image()
    tissue = _disc(img, 100, 150, 80, PINK)
    img[60:100, 110:150] = (90, 70, 160)  # violet nuclei cluster: red > green, not blue ink
    for cx in (120, 170, 200):
        _disc(img, 140, cx, 3, (190, 40, 50))  # vessels full of red cells, 24 um wide
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert not mask.pen.any()
    assert mask.tissue[tissue].mean() > 0.97


def test_tissue_fringes_and_magenta_edges_are_not_pen():
    # CMU-1's loose tissue has scattered steel-blue and cyan pixels at its edges, and eosin turns
    # magenta (hue 320-335 deg, S 0.55) at tissue borders; dark nuclei are near-black violet
    img = _image()
    tissue = _disc(img, 100, 150, 80, PINK)
    rng = np.random.default_rng(0)
    for y, x in rng.integers(30, 170, size=(40, 2)):
        img[y:y + 2, x + 60:x + 63] = (40, 80, 105) if y % 2 else (94, 175, 182)  # blue / cyan specks, 8-12 um
    ring = tissue & ~_disc(np.zeros_like(img), 100, 150, 74, (1, 1, 1))
    img[ring] = (200, 90, 160)  # a 24-um magenta rim of eosin
    for cx in (120, 140, 160):
        _disc(img, 100, cx, 3, (60, 35, 70))  # dark nuclei, 24 um
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert not mask.pen.any() and mask.info["pen_fraction"] == 0.0
    assert mask.tissue[tissue].mean() > 0.97


def test_a_dark_marker_core_and_its_blurred_rim_are_pen():
    # a red marker stroke laid thick: dark red-violet core (V 0.27, hue 330 deg), bright red sides,
    # and a pale pink rim (S 0.15) that alone looks like eosin
    img = _image(200, 300)
    img[60:140, 40:260] = (215, 180, 195)  # the rim, 20 px (80 um) beyond the stroke
    img[70:130, 50:250] = (200, 40, 60)  # bright red
    img[85:115, 50:250] = (69, 32, 50)  # the dark core
    tissue = _disc(img, 170, 40, 20, PINK)
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert mask.pen[60:140, 40:260].all()
    assert not mask.tissue[60:140, 40:260].any()
    assert not mask.pen[tissue].any()
    without_rim = OtsuTissueSegmenter(TilingParams(pen_rim_um=0, pen_margin_um=0)).segment(img, mpp=4.0)
    # an opening rounds the corners of a stroke by its radius (40 um); the inside is all ink
    assert without_rim.pen[70:130, 60:240].all() and not without_rim.pen[62, 100]


def test_small_holes_are_filled_and_large_ones_kept():
    img = _image(300, 300)
    _disc(img, 150, 150, 120, PINK)
    _disc(img, 100, 100, 5, GLASS)  # ~0.005 mm^2 at 4 um/px: filled
    big = _disc(img, 180, 180, 40, GLASS)  # ~0.08 mm^2 < 0.1: filled by default
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert mask.tissue[100, 100] and mask.tissue[180, 180]
    keep_big = OtsuTissueSegmenter(TilingParams(min_hole_area_mm2=0.05)).segment(img, mpp=4.0)
    assert not keep_big.tissue[180, 180] and keep_big.tissue[100, 100]
    assert keep_big.tissue[big].mean() < 0.1


def test_specks_below_min_region_area_are_dropped():
    img = _image()
    _disc(img, 100, 100, 40, PINK)
    _disc(img, 30, 250, 8, PINK)  # ~0.003 mm^2 speck at 4 um/px
    mask = OtsuTissueSegmenter(TilingParams()).segment(img, mpp=4.0)
    assert mask.tissue[100, 100] and not mask.tissue[30, 250]


def test_segmenter_registry(fresh_registry):
    fresh_registry()
    assert get_segmenter("otsu") is OtsuTissueSegmenter
    with pytest.raises(PathkitError, match="did you mean otsu"):
        get_segmenter("otsuu")

    class Everything(TissueSegmenter):
        name = "test-everything"

        def segment(self, rgb, mpp):
            return TissueMask(np.ones(rgb.shape[:2], bool), mpp)

    class Clash(TissueSegmenter):
        name = "otsu"

    class SegmenterPlugin:
        @hookimpl
        def register_segmenters(self, register):
            register(Everything)
            register(Clash)

    registry = fresh_registry({"my-segmenters": SegmenterPlugin()})
    # a third party's segmenter comes in through the hook and is listed with its plugin
    assert get_segmenter("test-everything") is Everything
    assert "test-everything" in registry.records["my-segmenters"].components["segmenter"]
    # a clashing name: the third party keeps the plain name, the built-in stays reachable by its
    # distribution (docs/plugin-authors.md, "Names and collisions"); both plugins stay usable
    assert get_segmenter("otsu") is Clash and get_segmenter("pathkit:otsu") is OtsuTissueSegmenter
    assert registry.records["my-segmenters"].status == "ok"
    assert "this plugin keeps the plain name" in registry.records["my-segmenters"].clashes[0]


def test_thumbnail_geometry_never_upsamples():
    assert thumbnail_geometry((100_000, 50_000), 2048) == (2048, 1024)
    assert thumbnail_geometry((1000, 700), 2048) == (1000, 700)


def test_the_segmentation_resolution_and_the_level_read_as_it_is():
    # 0.5 um/px, 30,000 px: thumbnail_px caps the mask at 14.65 level-0 px per pixel (seg_mpp 4
    # would be 8); 0.25 um/px: seg_mpp's 16 is coarser than the cap
    params = TilingParams()
    assert segmentation_downsample((30_000, 30_000), 0.5, params) == pytest.approx(30_000 / 2048)
    assert segmentation_downsample((30_000, 30_000), 0.25, params) == pytest.approx(16.0)
    assert segmentation_downsample((500, 300), 0.5, TilingParams(seg_mpp=0)) == 1.0
    pyramid = [1.0, 2.0, 4.0, 8.0, 16.0, 31.98]
    assert snap_level(pyramid, 30_000 / 2048) == 4  # 16 is 9 % coarser, 8 is 83 % finer
    assert snap_level(pyramid, 16.0) == 4  # exact
    assert snap_level(pyramid, 11.0) is None  # 8 is nearer: read it and average down
    assert snap_level(pyramid, 23.0) == 5  # 31.98 / 23 = 1.39 < 23 / 16 = 1.44, within sqrt(2)
    assert snap_level(pyramid, 22.0) is None  # 31.98 / 22 = 1.45: more than sqrt(2) coarser
    assert snap_level([1.0, 4.0, 16.0, 32.0], 22.5) is None  # Aperio: 32 is 42 % coarser
    assert snap_level(pyramid, 40.0) is None  # nothing coarser: the finer level, averaged down
    assert snap_level([1.0], 8.0) is None


@pytest.fixture
def levels_read(monkeypatch):
    """The pyramid levels `Slide.read_region` is asked for during the test."""
    from pathkit_core.wsi.slide import Slide

    levels = []
    original = Slide.read_region

    def spy(self, location, level, size):
        levels.append(level)
        return original(self, location, level, size)

    monkeypatch.setattr(Slide, "read_region", spy)
    return levels


def test_the_segmentation_thumbnail_is_a_pyramid_level_read_as_it_is(synthetic_slides, levels_read):
    from pathkit_core.wsi.slide import open_slide

    levels = levels_read
    # 3072 x 2048 at 0.5 um/px, levels 1-16: a 384-px cap asks for 8 level-0 px per pixel = level 3
    params = TilingParams(thumbnail_px=384)
    with open_slide(synthetic_slides["tissue"]) as slide:
        thumb = segmentation_thumbnail(slide, params)
        assert set(levels) == {3} and thumb.shape == (256, 384) and thumb.level == 3
        assert np.array_equal(thumb.rgb, slide.read_region((0, 0), 3, (384, 256)))
        _, mask, mdx, mdy = segment_slide(slide, params, thumbnail=thumb)
    assert mask.tissue.shape == (256, 384) and (mdx, mdy) == (8.0, 8.0)


def test_a_small_slide_keeps_a_readable_qc_thumbnail(synthetic_slides):
    from pathkit_core.wsi.segmentation import QC_MIN_PX
    from pathkit_core.wsi.slide import open_slide

    # at seg_mpp 4 the mask is 384 x 256 px; the thumbnail (the QC image) is read at 1,024 px
    with open_slide(synthetic_slides["tissue"]) as slide:
        thumb, mask, mdx, _ = segment_slide(slide, TilingParams())
    assert QC_MIN_PX == 1024 and thumb.shape == (683, 1024) and thumb.level == 1
    assert mask.tissue.shape == (256, 384) and mdx == pytest.approx(8.0)


def test_thumbnail_comes_from_a_low_level_and_matches_the_slide(synthetic_slides, levels_read):
    from pathkit_core.wsi.slide import open_slide

    levels = levels_read
    with open_slide(synthetic_slides["tissue"]) as slide:
        thumb = read_thumbnail(slide, max_px=512)
        assert thumb.shape == (341, 512) and 0 not in levels
        assert thumb.downsample_x == pytest.approx(6.0) and thumb.mpp == pytest.approx(3.0, rel=0.01)
        # the thumbnail pixel over the left blob's centre is tissue-coloured, a corner is glass
        assert thumb.rgb[170, 154].astype(int).sum() < 650
        assert np.abs(thumb.rgb[5, 5].astype(int) - GLASS).max() <= 2  # JPEG rounding
        _, mask, mdx, mdy = segment_slide(slide, TilingParams(thumbnail_px=512), thumbnail=thumb)
    assert mask.tissue.shape == (256, 384) and mdx == pytest.approx(8.0)
    # area of the two ellipses: pi * (0.18*3072*0.3*2048 + 0.14*3072*0.22*2048) px at 0.5 um
    expected = np.pi * (0.18 * 3072 * 0.3 * 2048 + 0.14 * 3072 * 0.22 * 2048) * 0.25 / 1e6
    assert mask.area_mm2 == pytest.approx(expected, rel=0.05)
