"""Slide opening and mpp resolution: every source, every documented error."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.slide import (
    SlideError,
    find_slides,
    lookup_mpp,
    open_slide,
    read_mpp_csv,
    resolve_mpp,
    slide_id_for,
)


def _code(excinfo) -> str:
    return excinfo.value.code


def test_mpp_from_openslide_property_names_its_vendor_source():
    r = resolve_mpp({"openslide.mpp-x": "0.499", "openslide.mpp-y": "0.499",
                     "openslide.vendor": "aperio", "aperio.MPP": "0.4990"})
    assert (r.mpp, r.source) == (0.499, "openslide.mpp (aperio.MPP)")
    r = resolve_mpp({"openslide.mpp-x": "0.25", "openslide.vendor": "generic-tiff",
                     "tiff.XResolution": "40000"})
    assert r.mpp_y == 0.25 and r.source == "openslide.mpp (tiff-resolution)"


def test_mpp_falls_back_to_vendor_keys_then_tiff_tags():
    assert resolve_mpp({"aperio.MPP": "0.2527"}).source == "aperio.MPP"
    r = resolve_mpp({"mirax.LAYER_0_LEVEL_0_SECTION.MICROMETER_PER_PIXEL_X": "0.243",
                     "mirax.LAYER_0_LEVEL_0_SECTION.MICROMETER_PER_PIXEL_Y": "0.2431"})
    assert r.mpp_x == 0.243 and r.mpp_y == 0.2431
    r = resolve_mpp({"philips.DICOM_PIXEL_SPACING": '"0.000226" "0.000227"'})
    assert r.mpp_x == pytest.approx(0.227) and r.mpp_y == pytest.approx(0.226)
    # 1e4 / 20000 px per cm = 0.5 um; 25400 / 101600 px per inch = 0.25 um
    r = resolve_mpp({"tiff.ResolutionUnit": "centimeter", "tiff.XResolution": "20000"})
    assert (r.mpp, r.source) == (0.5, "tiff-resolution")
    assert resolve_mpp({"tiff.ResolutionUnit": "inch", "tiff.XResolution": "101600"}).mpp == 0.25


def test_missing_mpp_is_an_error_never_a_guess():
    with pytest.raises(SlideError) as e:
        resolve_mpp({"openslide.objective-power": "20", "tiff.ResolutionUnit": "none",
                     "tiff.XResolution": "1"}, path="x.svs")
    assert _code(e) == "no-mpp" and "--slide-mpp" in str(e.value) and "--mpp-csv" in str(e.value)


@pytest.mark.parametrize("props, expected", [
    ({"openslide.mpp-x": "352.77777"}, "72-dpi placeholder"),
    ({"tiff.ResolutionUnit": "inch", "tiff.XResolution": "96"}, "96-dpi placeholder"),
    ({"openslide.mpp-x": "0.05"}, "implausible mpp 0.05"),
    ({"openslide.mpp-x": "12.5"}, "implausible mpp 12.5"),
])
def test_implausible_mpp_is_an_error(props, expected):
    with pytest.raises(SlideError) as e:
        resolve_mpp(props, path="s.tiff")
    assert _code(e) == "implausible-mpp" and expected in str(e.value)


def test_user_mpp_overrides_metadata_but_is_range_checked():
    r = resolve_mpp({"openslide.mpp-x": "352.8"}, override=0.5, override_source="user-csv")
    assert (r.mpp, r.source) == (0.5, "user-csv")
    with pytest.raises(SlideError) as e:
        resolve_mpp({}, override=352.8)
    assert _code(e) == "implausible-mpp"


def test_anisotropic_pixels_are_refused():
    with pytest.raises(SlideError) as e:
        resolve_mpp({"openslide.mpp-x": "0.25", "openslide.mpp-y": "0.5"})
    assert _code(e) == "anisotropic-mpp"
    assert resolve_mpp({"openslide.mpp-x": "0.2500", "openslide.mpp-y": "0.2520"}).mpp == pytest.approx(0.251)


def test_open_synthetic_generic_and_aperio(synthetic_slides):
    with open_slide(synthetic_slides["tissue"]) as s:
        assert s.vendor == "generic-tiff" and s.mpp == pytest.approx(0.5)
        assert s.mpp_source == "openslide.mpp (tiff-resolution)"
        assert s.dimensions == (3072, 2048) and s.level_count >= 3
        rgb = s.read_region((0, 0), 0, (32, 16))
        assert rgb.shape == (16, 32, 3) and rgb.dtype == np.uint8
    with open_slide(synthetic_slides["aperio"]) as s:
        assert s.vendor == "aperio" and s.mpp == pytest.approx(0.25)
        assert s.objective_power == 40 and s.mpp_source == "openslide.mpp (aperio.MPP)"


def test_open_slide_errors(tmp_path, synthetic_slides):
    import tifffile

    with pytest.raises(SlideError) as e:
        open_slide(tmp_path / "nope.svs")
    assert _code(e) == "not-found" and "does not exist" in str(e.value)
    flat = tmp_path / "flat.tif"
    tifffile.imwrite(flat, np.zeros((40, 60, 3), np.uint8), photometric="rgb")
    with pytest.raises(SlideError) as e:
        open_slide(flat)
    assert _code(e) == "not-a-slide" and "flat (striped, untiled) TIFF of 60x40 px" in str(e.value)
    text = tmp_path / "notes.svs"
    text.write_text("not an image")
    with pytest.raises(SlideError) as e:
        open_slide(text)
    assert _code(e) == "not-a-slide"
    with pytest.raises(SlideError) as e:
        open_slide(synthetic_slides["nompp"])
    assert _code(e) == "no-mpp"
    with open_slide(synthetic_slides["nompp"], mpp=0.5) as s:
        assert s.mpp_source == "user" and s.mpp == 0.5


def test_slide_ids_and_mpp_csv(tmp_path):
    assert slide_id_for("a/b/CMU-1.svs") == "CMU-1"
    assert slide_id_for("TCGA-AA-0001-01Z-00-DX1.8A7F-11.svs") == "TCGA-AA-0001-01Z-00-DX1.8A7F-11"
    assert slide_id_for("x/img.ome.tiff") == "img"
    csv = tmp_path / "mpp.csv"
    csv.write_text("slide,mpp\nPIT_06.tiff,0.25\nother,0.5\n")
    overrides = read_mpp_csv(csv)
    assert lookup_mpp(overrides, "/data/PIT_06.tiff") == 0.25
    assert lookup_mpp(overrides, "/data/other.svs") == 0.5
    assert lookup_mpp(overrides, "/data/third.svs") is None
    bad = tmp_path / "bad.csv"
    bad.write_text("name,resolution\na,1\n")
    with pytest.raises(PathkitError, match="slide,mpp"):
        read_mpp_csv(bad)
    bad.write_text("slide,mpp\na,fast\n")
    with pytest.raises(PathkitError, match=r"bad.csv:2"):
        read_mpp_csv(bad)


def test_find_slides_in_folders(tmp_path):
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "a.svs").write_bytes(b"x")
    (tmp_path / "slides" / "b.txt").write_text("x")
    (tmp_path / "slides" / "sub").mkdir()
    (tmp_path / "slides" / "sub" / "c.tiff").write_bytes(b"x")
    assert [p.name for p in find_slides([tmp_path / "slides"])] == ["a.svs"]
    assert [p.name for p in find_slides([tmp_path / "slides"], recursive=True)] == ["a.svs", "c.tiff"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(PathkitError, match="no slides found"):
        find_slides([tmp_path / "empty"])
    # a missing path is kept: the batch records it as failed instead of stopping
    assert find_slides([tmp_path / "missing.svs"]) == [tmp_path / "missing.svs"]


def test_fast_read_matches_openslide_python_and_composites_on_white(synthetic_slides):
    import openslide

    from pathkit_core.wsi.slide import _read_rgb_pil, read_rgb

    handle = openslide.OpenSlide(str(synthetic_slides["tissue"]))
    inside = read_rgb(handle, (800, 700), 0, (96, 64))
    assert inside.shape == (64, 96, 3) and inside.flags.writeable
    assert np.array_equal(inside, _read_rgb_pil(handle, (800, 700), 0, (96, 64)))
    # half outside the slide: transparent there, white after compositing, same on both paths
    edge = read_rgb(handle, (3072 - 40, 100), 0, (80, 30))
    assert (edge[:, 40:] == 255).all() and not (edge[:, :40] == 255).all()
    assert np.abs(edge.astype(int) - _read_rgb_pil(handle, (3072 - 40, 100), 0, (80, 30))).max() <= 1
