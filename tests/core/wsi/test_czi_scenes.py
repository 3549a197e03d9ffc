"""A CZI of two scenes, written here with pylibCZIrw, is two slides: `FILE#scene=LABEL`, slide ids
`<stem>-<label>`, each scene's own pixels, mpp and content identity, and `pathkit tile FILE` tiles
each scene as its own slide (docs/formats.md, "Scenes")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pathkit_core.wsi.scenes import scene_labels, scene_path, split_scene
from pathkit_core.wsi.slide import SlideError, find_slides, open_slide, slide_id_for

MPP = 0.5
# Where each scene lies on the CZI's stage (level-0 pixels) and its size (w, h).
SCENES = (((0, 0), (320, 256)), ((900, 400), (256, 192)))


def _needs_czi() -> None:
    from pathkit_core.wsi.reader_choice import get_reader

    why = get_reader("czi").unavailable()
    if why is not None:
        pytest.skip(f'the czi reader needs pip install "pathkit[czi]": {why}')


def _scene_image(i: int, size: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(i)
    return rng.integers(0, 200, size=(size[1], size[0], 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def two_scenes(tmp_path_factory) -> tuple[Path, list[np.ndarray]]:
    _needs_czi()
    from pylibCZIrw import czi as pyczi

    path = tmp_path_factory.mktemp("czi") / "two.czi"
    images = [_scene_image(i, size) for i, (_, size) in enumerate(SCENES)]
    with pyczi.create_czi(str(path), exist_ok=True) as czi:
        for i, ((x, y), _) in enumerate(SCENES):  # pylibCZIrw stores channels as given: blue first
            czi.write(np.ascontiguousarray(images[i][..., ::-1]), plane={"C": 0}, scene=i, location=(x, y),
                      compression_options="uncompressed:")
        czi.write_metadata("pathkit test", scale_x=MPP * 1e-6, scale_y=MPP * 1e-6)
    return path, images


def test_the_scene_path_is_parsed_in_one_place():
    assert split_scene("a/run.czi#scene=Left") == (Path("a/run.czi"), "Left")
    assert split_scene("a/run.czi") == (Path("a/run.czi"), None)
    assert split_scene(scene_path(Path("b/c.czi"), "1")) == (Path("b/c.czi"), "1")
    assert slide_id_for("a/run.czi#scene=Left") == "run-Left"


def test_scene_labels_are_names_else_the_index():
    from pathkit_readers.czi import czi_scene_names

    meta = {"ImageDocument": {"Metadata": {"Information": {"Image": {"Dimensions": {"S": {"Scenes": {"Scene": [
        {"@Index": "1", "@Name": "Right"}, {"@Index": "0", "@Name": "Left"}, {"@Index": "2"}]}}}}}}}}
    assert czi_scene_names(meta, 3) == ["Left", "Right", None]
    assert czi_scene_names({}, 2) == [None, None]
    assert scene_labels(["Left", "Right", None]) == ["Left", "Right", "2"]
    assert scene_labels(["A", "A"]) == ["0", "1"]  # a shared name cannot tell them apart
    assert scene_labels(["TMA: 1/2", " "]) == ["TMA: 1_2", "1"]
    assert slide_id_for(scene_path(Path("x/run.czi"), "TMA: 1_2")) == "run-TMA_ 1_2"


def test_a_two_scene_czi_is_two_slides_each_its_own_pixels(two_scenes):
    from pathkit_core.wsi.scenes import content_identity

    path, images = two_scenes
    slides = find_slides([path])
    assert slides == [scene_path(path, "0"), scene_path(path, "1")]
    assert [slide_id_for(s) for s in slides] == ["two-0", "two-1"]
    for s, image, (_, size) in zip(slides, images, SCENES, strict=True):
        with open_slide(s) as slide:
            assert slide.reader == "czi" and slide.dimensions == size
            assert slide.mpp == pytest.approx(MPP)
            np.testing.assert_array_equal(slide.read_region((0, 0), 0, size), image)
            np.testing.assert_array_equal(slide.read_region((40, 30), 0, (64, 50)), image[30:80, 40:104])
    with open_slide(path) as whole:  # the file itself stays the whole scan
        assert whole.dimensions == (900 + 256, 400 + 192)
    ids = {content_identity(s) for s in slides} | {content_identity(path)}
    assert len(ids) == 3


def test_a_scene_the_file_lacks_is_one_line_naming_its_scenes(two_scenes, tmp_path):
    path, _ = two_scenes
    with pytest.raises(SlideError, match=r"has no scene 'nope' \(its scenes: 0, 1\)") as e:
        open_slide(scene_path(path, "nope"))
    assert e.value.code == "not-a-slide" and str(path) in str(e.value)
    tiff = tmp_path / "plain.tif"
    tiff.write_bytes(b"II*\x00")
    with pytest.raises(SlideError, match="names a scene"):
        open_slide(scene_path(tiff, "0"), reader="ome-tiff")


def test_pathkit_tile_tiles_every_scene_as_its_own_slide(cli, two_scenes, tmp_path):
    from pathkit_core.wsi.reader import TileReader

    path, images = two_scenes
    out = tmp_path / "tiles"
    args = ("tile", str(path), "--out", str(out), "--target-mpp", str(MPP), "--tile-px", "64",
            "--min-tissue", "0", "--min-tissue-area", "0", "--quiet")
    result = cli(*args)
    assert result.exit_code == 0, result.output
    for i, image in enumerate(images):
        reader = TileReader(out / f"two-{i}.parquet")
        meta = reader.manifest.meta
        assert meta["slide_reader"] == "czi" and meta["slide_path"].endswith(f"two.czi#scene={i}")
        assert meta["slide_identity"].endswith(f"#scene={i}") and len(reader) > 0
        row = reader.manifest.tiles.row(0, named=True)
        np.testing.assert_array_equal(reader[0], image[row["y"]: row["y"] + 64, row["x"]: row["x"] + 64])
    again = cli(*args)  # resumes: both scenes' manifests are kept
    assert again.exit_code == 0, again.output
    assert not (out / "two.parquet").exists()


def test_a_cohort_row_names_one_scene_and_a_run_tiles_its_cases_slides_as_given(two_scenes, tmp_path):
    from pathkit_core.run.identity import case_identity
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.cohort import cohort_rows, drop_missing_files, group_rows, read_table

    path, _ = two_scenes
    table = tmp_path / "cohort.csv"
    table.write_text(f"slide,label\n{path}#scene=1,a\n{path},b\n")
    rows, missing = drop_missing_files(cohort_rows(read_table(table), file_key="slide_path", value_key="label"),
                                       skip_missing=False, where=table)
    assert not missing and [r.case_id for r in rows] == ["two-1", "two"]
    from pathkit_core.contracts import Case

    cases = [Case(g.case_id, g.patient_id, g.value, slides=g.files) for g in group_rows(rows, "slide", table)]
    scene_id = case_identity(cases[0])["slides"][0]
    assert scene_id.startswith("sha256:") and scene_id.endswith("#scene=1")  # the file's content and the scene
    params = TilingParams(target_mpp=MPP, tile_px=64, min_tissue_fraction=0.0, min_tissue_area_mm2=0.0)
    results = tile_slides([s for c in cases for s in c.slides], tmp_path / "t", params, progress=False, scenes=False)
    assert [(r.slide_id, r.status) for r in results] == [("two-1", "ok"), ("two", "ok")]
