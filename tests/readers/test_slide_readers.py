"""The slide readers on small files written here with each format's own writer: pixels equal to
what was written (lossless), the mpp with its source, white beyond the slide, the same SlideError
codes as OpenSlide, a corrupt file of each format refused in one line naming the file and the reader."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from pathkit_core.wsi.slide import SlideError, open_slide

W, H, MPP = 640, 448, 0.5


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    """A deterministic RGB image: gradients and noise, so any shift or channel swap shows."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:H, 0:W]
    rgb = np.stack([x * 255 // W, y * 255 // H, (x + y) % 256], axis=-1)
    return np.clip(rgb + rng.integers(-20, 20, size=rgb.shape), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def files(tmp_path_factory, formats, image) -> dict[str, Path]:
    """One file per format and case, written once for the module (the writers a reader misses
    are skipped by the tests that use them)."""
    root = tmp_path_factory.mktemp("readers")
    levels = formats.pyramid(image, 2)
    label = np.full((32, 48, 3), (10, 200, 30), np.uint8)
    out: dict[str, Path] = {}
    out["ome-tiff"] = formats.write_ome_tiff(root / "a.ome.tif", levels, MPP, compression="zlib", label=label)
    out["ome-tiff-nm"] = formats.write_ome_tiff(root / "nm.ome.tif", levels, MPP, unit="nm")
    out["ome-tiff-nompp"] = formats.write_ome_tiff(root / "nompp.ome.tif", levels, None)
    out["ome-tiff-implausible"] = formats.write_ome_tiff(root / "far.ome.tif", levels, 50.0)
    optional = {  # the module each writer needs -> the files it writes
        "zarr": lambda: {
            "ome-zarr": formats.write_ome_zarr(root / "a.ome.zarr", levels, MPP),
            "ome-zarr-0.4-zip": formats.write_ome_zarr(root / "b.ome.zarr.zip", levels, MPP, version="0.4",
                                                       zip_store=True),
            "ome-zarr-nompp": formats.write_ome_zarr(root / "nompp.ome.zarr", levels, None)},
        "pylibCZIrw": lambda: {"czi": formats.write_czi(root / "a.czi", image, MPP),
                               "czi-nompp": formats.write_czi(root / "nompp.czi", image, None)},
        "pydicom": lambda: {"dicom": formats.write_dicom_tiled(root / "a.dcm", levels, MPP)},
    }
    for module, write in optional.items():
        if importlib.util.find_spec(module) is not None:
            out.update(write())
    return out


LOSSLESS = [("ome-tiff", "ome-tiff"), ("ome-zarr", "ome-zarr"), ("ome-zarr-0.4-zip", "ome-zarr"), ("czi", "czi"),
            ("dicom", "dicom")]


@pytest.mark.parametrize("case, reader", LOSSLESS)
def test_a_lossless_file_reads_back_what_was_written_with_its_mpp(needs, files, image, formats, case, reader):
    needs(reader)
    with open_slide(files[case]) as slide:  # chosen automatically
        assert slide.reader == reader
        assert slide.dimensions == (W, H) and slide.mpp == pytest.approx(MPP)
        assert slide.mpp_source != "user"
        np.testing.assert_array_equal(slide.read_region((0, 0), 0, (W, H)), image)
        np.testing.assert_array_equal(slide.read_region((96, 64), 0, (128, 100)), image[64:164, 96:224])
        if reader != "czi":  # the CZI writer stores no pyramid
            level1 = formats.pyramid(image, 2)[1]
            assert slide.level_dimensions[1] == (W // 2, H // 2) and slide.level_downsamples[1] == 2.0
            np.testing.assert_array_equal(slide.read_region((64, 32), 1, (50, 40)), level1[16:56, 32:82])


@pytest.mark.parametrize("case, reader", LOSSLESS)
def test_beyond_the_slide_is_white_glass_as_openslide_composites_it(needs, files, image, case, reader):
    needs(reader)
    with open_slide(files[case]) as slide:
        region = slide.read_region((W - 10, H - 20), 0, (30, 40))
    assert region.shape == (40, 30, 3)
    np.testing.assert_array_equal(region[:20, :10], image[H - 20:, W - 10:])
    assert (region[20:] == 255).all() and (region[:, 10:] == 255).all()


def test_czi_levels_are_the_pyramid_layers_the_file_stores(needs, files):
    needs("czi")
    with open_slide(files["czi"]) as slide:  # pylibCZIrw writes no pyramid subblocks: one level
        assert slide.level_dimensions == [(W, H)] and slide.level_downsamples == [1.0]


def test_ome_tiff_reads_physical_sizes_in_their_unit_and_the_label_image(needs, files):
    needs("ome-tiff")
    with open_slide(files["ome-tiff-nm"]) as slide:
        assert slide.mpp == pytest.approx(MPP) and slide.mpp_source == "ome-xml PhysicalSizeX/Y"
    with open_slide(files["ome-tiff"]) as slide:
        assert slide.associated_image_names == ["label"]
        label = slide.associated_image("label")
    assert label.shape == (32, 48, 3) and tuple(label[0, 0]) == (10, 200, 30)


@pytest.mark.parametrize("case, reader, code", [
    ("ome-tiff-nompp", "ome-tiff", "no-mpp"), ("ome-tiff-implausible", "ome-tiff", "implausible-mpp"),
    ("ome-zarr-nompp", "ome-zarr", "no-mpp"), ("czi-nompp", "czi", "no-mpp"),
])
def test_every_reader_refuses_a_bad_mpp_with_openslides_codes_and_takes_the_users(needs, files, case, reader, code):
    needs(reader)
    with pytest.raises(SlideError) as e:
        open_slide(files[case])
    assert e.value.code == code and "--slide-mpp" in str(e.value)
    with open_slide(files[case], mpp=0.25) as slide:
        assert (slide.mpp, slide.mpp_source) == (0.25, "user")


# format -> (the broken slide, the member written in a folder slide ("": the file itself), its bytes)
CORRUPT = {
    "ome-tiff": ("broken.ome.tif", "", lambda f: f["ome-tiff"].read_bytes()[:3000]),  # header and OME-XML survive
    "ome-zarr": ("broken.ome.zarr", "zarr.json", lambda f: b"{not json"),
    "czi": ("broken.czi", "", lambda f: f["czi"].read_bytes()[:600]),
    # a series folder whose one instance is cut after its header
    "dicom": ("broken.dcm", "level0.dcm", lambda f: (f["dicom"] / "level0.dcm").read_bytes()[:1500]),
    "vsi": ("broken.vsi", "", lambda f: b"\x00" * 400),
}


def _corrupt(kind: str, files: dict[str, Path], root: Path) -> Path:
    name, member, content = CORRUPT[kind]
    path = root / name
    target = path / member if member else path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content(files))
    return path


@pytest.mark.parametrize("reader", sorted(CORRUPT))
def test_a_corrupt_file_of_each_format_is_one_line_naming_the_file_and_the_reader(needs, files, tmp_path, reader):
    needs(reader)
    path = _corrupt(reader, files, tmp_path)
    for forced in (None, reader):
        with pytest.raises(SlideError) as e:
            with open_slide(path, reader=forced) as slide:
                slide.read_region((0, 0), 0, (64, 64))
        message = str(e.value)
        assert e.value.code in ("unopenable", "unreadable", "not-a-slide"), message
        assert "\n" not in message and str(path) in message
        if forced or e.value.code != "not-a-slide":
            assert reader in message


def test_a_missing_library_names_the_extra_to_install(files, monkeypatch):
    from pathkit_readers.czi import CziReader

    monkeypatch.setattr(CziReader, "modules", ("pathkit_no_such_module",))
    path = files.get("czi") or _write_fake_czi(files["ome-tiff"].parent)
    with pytest.raises(SlideError) as e:
        open_slide(path)
    assert e.value.code == "reader-missing" and 'pip install "pathkit[czi]"' in str(e.value)
    with pytest.raises(SlideError, match=r"pathkit\[czi\]"):
        open_slide(path, reader="czi")


def _write_fake_czi(root: Path) -> Path:
    path = root / "fake.czi"
    path.write_bytes(b"ZISRAWFILE" + b"\x00" * 100)
    return path


def test_openslide_stays_the_default_and_a_forced_reader_takes_a_plain_tiff(needs, tmp_path, formats, image):
    needs("ome-tiff")
    import tifffile

    path = tmp_path / "plain.tif"  # a tiled TIFF without OME-XML: OpenSlide's generic-tiff
    tifffile.imwrite(path, image, tile=(256, 256), photometric="rgb", resolution=(1e4 / MPP, 1e4 / MPP),
                     resolutionunit="CENTIMETER")
    with open_slide(path) as slide:
        assert slide.reader == "openslide"
        by_openslide = slide.read_region((10, 20), 0, (200, 150))
    with open_slide(path, reader="ome-tiff") as slide:
        assert (slide.reader, slide.mpp_source) == ("ome-tiff", "tiff-resolution")
        assert slide.mpp == pytest.approx(MPP)
        np.testing.assert_array_equal(slide.read_region((10, 20), 0, (200, 150)), by_openslide)


def test_an_unknown_reader_name_lists_the_close_ones(files):
    from pathkit_core.contracts import PathkitError

    with pytest.raises(PathkitError, match="ome-zarr"):
        open_slide(files["ome-tiff"], reader="ome-zar")


def test_a_registry_built_without_entry_points_opens_slides_with_the_distributions_readers(fresh_registry, files):
    from pathkit_core.wsi.reader_choice import ordered_readers

    registry = fresh_registry()  # no entry point but the pathkit distribution's own, which always load
    assert registry.records["slide-readers"].module == "pathkit_readers"
    assert {c.__module__.split(".")[0] for c in ordered_readers()} == {"pathkit_readers"}
    with open_slide(files["ome-tiff"]) as slide:
        assert slide.reader == "ome-tiff" and slide.dimensions == (W, H)


def test_list_and_doctor_show_every_reader(cli):
    result = cli("list", "slide-readers", "--json")
    assert result.exit_code == 0, result.output
    names = {item["name"] for item in json.loads(result.output)}
    assert {"openslide", "ome-tiff", "ome-zarr", "czi", "dicom", "vsi"} <= names
    from pathkit_readers import doctor_checks

    rows = {name: (status, detail) for name, status, detail in doctor_checks()}
    for name in ("openslide", "ome-tiff", "ome-zarr", "czi", "dicom", "vsi"):
        assert rows[f"slide reader {name}"][0] in ("ok", "missing")


def test_doctor_says_what_to_install_for_a_missing_reader(monkeypatch):
    from pathkit_readers import doctor_checks
    from pathkit_readers.dicom import DicomReader

    monkeypatch.setattr(DicomReader, "modules", ("pathkit_no_such_module",))
    rows = {name: (status, detail) for name, status, detail in doctor_checks()}
    assert rows["slide reader dicom"] == ("missing", 'pathkit_no_such_module is not installed; '
                                          'pip install "pathkit[dicom]"')


def test_a_folder_slides_identity_follows_its_files(tmp_path):
    from pathkit_core.sources import content_identity

    store = tmp_path / "s.ome.zarr"
    (store / "0").mkdir(parents=True)
    (store / "zarr.json").write_text("{}")
    (store / "0" / "c").write_bytes(b"chunk")
    before = content_identity(store)
    assert before.startswith("folder:") and content_identity(store) == before
    (store / "0" / "c").write_bytes(b"chunk, edited")
    assert content_identity(store) != before


def test_the_reader_feeds_the_tiling_hash_only_when_chosen():
    from pathkit_core.wsi.params import TilingParams

    auto = TilingParams()
    assert "slide_reader" not in auto.as_dict()
    assert TilingParams(slide_reader="czi").params_hash() != auto.params_hash()


def test_pathkit_tile_reads_through_the_chosen_reader_and_the_tiles_follow(needs, cli, files, image, tmp_path):
    needs("ome-zarr")
    from pathkit_core.wsi.reader import TileReader

    out = tmp_path / "tiles"
    result = cli("tile", str(files["ome-zarr"]), "--out", str(out), "--target-mpp", "1.0", "--tile-px", "64",
                 "--min-tissue", "0", "--min-tissue-area", "0", "--quiet", "--slide-reader", "ome-zarr")
    assert result.exit_code == 0, result.output
    manifest = out / "a.parquet"
    reader = TileReader(manifest)
    assert reader.manifest.meta["slide_reader"] == "ome-zarr" and len(reader) > 0
    row = reader.manifest.tiles.row(0, named=True)
    x, y, level = row["x"], row["y"], row["level"]
    assert level == 1  # 1 um/px is the 2x level
    expected = np.asarray(image)[y: y + 128, x: x + 128].reshape(64, 2, 64, 2, 3).astype(np.uint16)
    np.testing.assert_array_equal(reader[0], (expected.sum(axis=(1, 3)) // 4).astype(np.uint8))
    bad = cli("tile", str(files["ome-zarr"]), "--out", str(out), "--slide-reader", "nope")
    assert bad.exit_code != 0 and "nope" in bad.output


def test_pathkit_run_takes_the_reader_into_its_tiling_table(cli):
    from pathkit_core.cli.run import _apply_flags

    values: dict = {"tiling": {"overlap": 0.25}}
    _apply_flags(values, {}, [], None, [], [], {"slide_reader": "ome-zarr"})
    assert values["tiling"] == {"overlap": 0.25, "slide_reader": "ome-zarr"}  # so it feeds the run identity
    _apply_flags(values := {}, {}, [], None, [], [], {"slide_reader": None})
    assert "tiling" not in values
    bad = cli("run", "--dataset", "any", "-e", "tiny-vit", "-g", "any", "--slide-reader", "ome-zar")
    assert bad.exit_code != 0 and "ome-zarr" in bad.output
