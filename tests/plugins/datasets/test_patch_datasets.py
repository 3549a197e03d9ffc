"""patch-folder and hepatobench: labels from the zip or folder, exclusions with reasons, checksums,
the three split protocols, the demo's layout, and every documented bad input."""

from __future__ import annotations

import hashlib
import io
import shutil
import zipfile

import numpy as np
import pytest
from pathkit_datasets.hepatobench import CLASS_FOLDERS, CLASSES, EMPTY_FILE, HepatoBenchDataset
from pathkit_datasets.patch_folder import LEAKY_WARNING, PatchFolderDataset
from PIL import Image

from pathkit_core.contracts import PathkitError


def png(px=150, value=128):
    out = io.BytesIO()
    Image.fromarray(np.full((px, px, 3), value, np.uint8)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return HepatoBenchDataset().make_demo(tmp_path_factory.mktemp("hb") / "demo")


@pytest.fixture
def release(demo, tmp_path):
    """The real release's layout: the seven zips only (no slide table)."""
    root = tmp_path / "release"
    root.mkdir()
    for folder in CLASS_FOLDERS:
        shutil.copy(demo / f"{folder}.zip", root)
    return root


def split_patients(ds):
    return {s: {c.patient_id for c in ds.cases(s)} for s in ("train", "val", "test")}


def test_demo_mirrors_the_release_and_reads_slide_level(demo):
    assert sorted(p.name for p in demo.iterdir()) == sorted([f"{f}.zip" for f in CLASS_FOLDERS] + ["patch_slides.csv"])
    with zipfile.ZipFile(demo / "02_FIB.zip") as z:
        assert z.getinfo(EMPTY_FILE).file_size == 0
    ds = HepatoBenchDataset(demo)
    ds.validate()
    assert ds.excluded_cases() == {"02_FIB_3355": "02_FIB.zip/02_FIB_3355.png: empty file (0 bytes)"}
    summary = ds.summary()
    assert summary["protocol"].startswith("slide-level") and "warnings" not in summary
    assert summary["inputs"]["01_TUM.zip"]["sha256"] == hashlib.sha256((demo / "01_TUM.zip").read_bytes()).hexdigest()
    assert summary["n_excluded"] == 1 and summary["patch_sizes"] == {"150x150": summary["n_usable"]}
    parts = split_patients(ds)
    assert not (parts["train"] & parts["test"]) and not (parts["train"] & parts["val"])
    assert not (parts["val"] & parts["test"])
    test = list(ds.cases("test"))
    assert {c.target for c in test} == set(CLASSES)  # stratified: every class in every part
    assert all("::" in c.images[0] and c.meta["slide_id"].startswith("S-") for c in test)
    assert HepatoBenchDataset().make_demo(demo) == demo  # built once


def test_seven_distinct_textures(demo):
    from pathkit_datasets.hepatobench import demo_texture

    rng = np.random.default_rng(0)
    means = np.array([demo_texture(k, rng).reshape(-1, 3).mean(axis=0) for k in range(7)])
    gaps = np.linalg.norm(means[:, None] - means[None], axis=2) + np.eye(7) * 1e9
    assert gaps.min() > 5  # every pair of classes differs in mean colour


def test_without_a_table_the_split_is_image_level_and_loudly_leaky(release):
    ds = HepatoBenchDataset(release)
    summary = ds.summary()
    assert summary["protocol"].startswith("image-level") and LEAKY_WARNING in summary["warnings"]
    assert "IMAGE-LEVEL and LEAKY" in LEAKY_WARNING
    counts = {s: len(v) for s, v in ds.splits().items()}
    assert sum(counts.values()) == summary["n_usable"]
    assert counts["test"] == pytest.approx(0.15 * sum(counts.values()), abs=7)
    assert ds.excluded_cases() == {"02_FIB_3355": "02_FIB.zip/02_FIB_3355.png: empty file (0 bytes)"}


def test_label_comes_from_the_zip_not_the_file_name(release):
    with zipfile.ZipFile(release / "01_TUM.zip", "a") as z:
        z.writestr("FIB_999999.png", png())
    ds = HepatoBenchDataset(release)
    assert next(p for p in ds.patches() if p.case_id == "FIB_999999").label == "TUM"


def test_extracted_folders_read_like_the_zips(release, tmp_path):
    folders = tmp_path / "folders"
    for folder in CLASS_FOLDERS:
        with zipfile.ZipFile(release / f"{folder}.zip") as z:
            z.extractall(folders / folder)
    by_zip = {p.case_id: (p.label, p.problem) for p in HepatoBenchDataset(release).patches()}
    by_folder = HepatoBenchDataset(folders)
    assert {p.case_id: (p.label, p.problem) for p in by_folder.patches()} == by_zip
    as_sets = {k: set(v) for k, v in HepatoBenchDataset(release).splits().items()}
    assert {k: set(v) for k, v in by_folder.splits().items()} == as_sets
    assert "listing_sha256" in by_folder.summary()["inputs"]["01_TUM/"]


def test_unreadable_and_other_size_patches(release):
    with zipfile.ZipFile(release / "03_INF.zip", "a") as z:
        z.writestr("INF_broken.png", png()[:60])  # truncated
        z.writestr("INF_big.png", png(px=224))
    ds = HepatoBenchDataset(release)
    assert ds.excluded_cases()["INF_broken"].startswith("03_INF.zip/INF_broken.png: not a readable image")
    summary = ds.summary()
    assert summary["n_other_size"] == 1 and summary["patch_sizes"]["224x224"] == 1
    assert any("not 150x150 px" in w for w in summary["warnings"])
    assert "INF_big" in {c.case_id for s in ("train", "val", "test") for c in ds.cases(s)}  # accepted


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda root: (root / "03_INF.zip").write_bytes(b"not a zip at all"), r"03_INF\.zip: not a zip archive"),
        (lambda root: shutil.copy(root / "01_TUM.zip", root / "08_XXX.zip"),
         r"unknown HepatoBench class folder '08_XXX'; expected 01_TUM, 02_FIB"),
        (lambda root: (root / "07_STE.zip").unlink(), r"lacks class\(es\) 07_STE"),
    ],
)
def test_bad_release_layouts_are_clear_errors(release, change, message):
    change(release)
    with pytest.raises(PathkitError, match=message):
        HepatoBenchDataset(release).validate()


def test_a_table_that_misses_patches_stops_unless_told_to_drop(demo, tmp_path):
    root = tmp_path / "r"
    shutil.copytree(demo, root)
    lines = (root / "patch_slides.csv").read_text().splitlines()
    kept = [lines[0]] + [ln for ln in lines[1:] if not ln.startswith("NOR_")]
    (root / "patch_slides.csv").write_text("\n".join(kept) + "\n")
    with pytest.raises(PathkitError, match=r"60 patch\(es\) have no row: 05_NOR\.zip/NOR_1\.png.* and 40 more"):
        HepatoBenchDataset(root).validate()
    ds = HepatoBenchDataset(root, drop_unmapped=True)
    ds.validate()
    assert ds.excluded_cases()["NOR_7"] == "not in the patch table patch_slides.csv" and len(ds.excluded_cases()) == 61


def test_a_split_column_is_used_as_given_and_checked_for_leakage(demo, tmp_path):
    root = tmp_path / "r"
    shutil.copytree(demo, root)
    rows = (root / "patch_slides.csv").read_text().splitlines()
    table = ["patch,slide_id,patient_id,split"]
    for ln in rows[1:]:
        patient = ln.split(",")[2]
        split = {"0": "test", "1": "val"}.get(patient[-1], "train")
        table.append(f"{ln},{split}")
    (root / "patches.csv").write_text("\n".join(table) + "\n")
    (root / "patch_slides.csv").unlink()
    ds = HepatoBenchDataset(root)
    assert ds.summary()["protocol"].startswith("given split")
    assert all(c.patient_id.endswith("0") for c in ds.cases("test"))
    table[1] = table[1].rsplit(",", 1)[0] + ",val"  # one patch of a test patient put in val: leakage
    (root / "patches.csv").write_text("\n".join(table) + "\n")
    with pytest.raises(PathkitError, match="patient leakage"):
        HepatoBenchDataset(root).validate()


def class_folders(root, n, px):
    """Folders tumour/ and stroma/ of `n` grey `px`-pixel PNGs each (0.png, 1.png, ...)."""
    for label, value in (("tumour", 40), ("stroma", 200)):
        folder = root / label
        folder.mkdir()
        for i in range(n):
            (folder / f"{i}.png").write_bytes(png(px=px, value=value + i))


def test_patch_folder_with_repeated_file_names_and_a_class_order(tmp_path):
    class_folders(tmp_path, 12, 64)
    ds = PatchFolderDataset(tmp_path, classes="tumour,stroma")
    ds.validate()
    assert ds.class_names() == ("tumour", "stroma")
    ids = {p.case_id for p in ds.patches()}
    assert "tumour_0" in ids and "stroma_0" in ids  # file names repeat across classes: folder-qualified ids
    assert PatchFolderDataset(tmp_path).class_names() == ("stroma", "tumour")
    with pytest.raises(PathkitError, match="has no option"):
        PatchFolderDataset(tmp_path, split="random")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PathkitError, match="holds no class folder"):
        PatchFolderDataset(empty).validate()


# --------------------------------------------------------------------------- hardening (issue 28)


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares `width` x `height` pixels and holds none (the header of a bomb)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def test_a_zip_bomb_member_is_excluded_by_its_declared_size_without_inflating_it(release):
    import tracemalloc

    from pathkit_datasets._image_checks import MAX_IMAGE_BYTES

    size = MAX_IMAGE_BYTES + (16 << 20)
    with zipfile.ZipFile(release / "03_INF.zip", "a", compression=zipfile.ZIP_DEFLATED) as z, \
            z.open("INF_bomb.png", "w") as member:
        block = bytes(1 << 20)
        for _ in range(size >> 20):
            member.write(block)
    assert (release / "03_INF.zip").stat().st_size < 2 << 20  # a few hundred kB holding 272 MiB
    tracemalloc.start()
    try:
        ds = HepatoBenchDataset(release)
        reason = ds.excluded_cases()["INF_bomb"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reason == f"03_INF.zip/INF_bomb.png: {size} bytes, more than the {MAX_IMAGE_BYTES} an image may have " \
                     "(a decompression bomb, or not a patch)"
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB allocated: the member was inflated"


def test_an_image_declaring_too_many_pixels_is_excluded_before_decoding(release):
    with zipfile.ZipFile(release / "03_INF.zip", "a") as z:
        z.writestr("INF_huge.png", _png_header(40000, 40000))
    reason = HepatoBenchDataset(release).excluded_cases()["INF_huge"]
    assert reason.startswith("03_INF.zip/INF_huge.png: ") and ("40000 x 40000 pixels" in reason
                                                               or "too many pixels" in reason)


def test_two_members_of_one_name_in_a_class_zip_are_an_error_naming_them(release):
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(release / "01_TUM.zip", "a") as z:
        z.writestr("TUM_1.png", png())
        z.writestr("TUM_1.png", png(value=30))
    with pytest.raises(PathkitError, match=r"01_TUM\.zip: 1 member name\(s\) appear more than once in the zip: "
                                           r"TUM_1\.png"):
        HepatoBenchDataset(release).patches()


def test_patch_folder_warns_when_patches_come_in_several_sizes(tmp_path):
    class_folders(tmp_path, 6, 224)
    one_size = PatchFolderDataset(tmp_path)
    one_size.validate()
    assert not any("sizes" in w for w in one_size.summary().get("warnings", []))
    (tmp_path / "tumour" / "big.png").write_bytes(png(px=512, value=50))
    out = io.BytesIO()
    Image.fromarray(np.full((50, 30, 3), 60, np.uint8)).save(out, format="PNG")
    (tmp_path / "stroma" / "odd.png").write_bytes(out.getvalue())
    mixed = PatchFolderDataset(tmp_path)
    mixed.validate()
    summary = mixed.summary()
    assert summary["patch_sizes"] == {"224x224": 12, "512x512": 1, "30x50": 1}
    warning = [w for w in summary["warnings"] if "sizes" in w]
    assert len(warning) == 1 and warning[0].startswith(
        "patches of 3 sizes in one dataset (224x224 px: 12, 30x50 px: 1, 512x512 px: 1)")
