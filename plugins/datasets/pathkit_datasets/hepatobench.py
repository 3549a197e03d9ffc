"""hepatobench: seven-class liver-tissue patch classification (Xiao et al. 2026, HepatoBench part 1).

The public release is seven zips `01_TUM.zip ... 07_STE.zip` of 150 x 150 px PNGs at 20x, read
in place (or their extracted folders); a thin layer over `patch-folder` that fixes the class
folders and their order. The release names no slide: give a patch -> slide (-> patient) table for
the paper's slide-level split, or the split is image-level and reported as leaky. The synthetic
demo mirrors the layout (seven zips, the one empty file, a patch -> slide table); docs/hepatobench.md.
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_path, atomic_write_text
from pathkit_datasets._references import PublishedReference, PublishedScore
from pathkit_datasets.patch_folder import PatchFolderDataset

CLASSES = ("TUM", "FIB", "INF", "NEC", "NOR", "REA", "STE")
CLASS_FOLDERS = {f"{i:02d}_{name}": name for i, name in enumerate(CLASSES, start=1)}
# The one file of the public release that is zero bytes (HF xtxx/HepatoBench; docs/hepatobench.md).
EMPTY_FILE = "02_FIB_3355.png"
# Demo class sizes, unequal like the release's (FIB largest, REA smallest).
DEMO_COUNTS = {"TUM": 60, "FIB": 90, "INF": 40, "NEC": 40, "NOR": 60, "REA": 25, "STE": 40}
DEMO_PATIENTS_PER_CLASS = 4
DEMO_SLIDES_PER_PATIENT = 2
PATCH_PX = 150
PATCH_MPP = 0.5  # 20x: HepatoBench's patches are 150 px at 20x, a 75 um field of view


class HepatoBenchDataset(PatchFolderDataset, card="hepatobench"):
    """The seven HepatoBench class zips (or folders); every patch-folder option applies."""

    metric_options: ClassVar[dict[str, dict[str, Any]]] = {"classification": {"classes": list(CLASSES)}}
    expected_px: ClassVar[int | None] = PATCH_PX
    patch_mpp: ClassVar[float | None] = PATCH_MPP
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "knn"}

    def class_of(self, source: str) -> str:
        if source not in CLASS_FOLDERS:
            raise PathkitError(f"{self.root}/{source}: unknown HepatoBench class folder {source!r}; expected "
                               f"{', '.join(CLASS_FOLDERS)} (each a zip or a folder of PNGs)")
        return CLASS_FOLDERS[source]

    def class_names(self) -> tuple[str, ...]:
        return CLASSES

    def validate(self) -> None:
        missing = [f for f, c in CLASS_FOLDERS.items() if c not in {p.label for p in self.patches()}]
        if missing:
            raise PathkitError(f"dataset {self.name!r}: {self.root} lacks class(es) {', '.join(missing)} "
                               f"(expected {', '.join(f + '.zip' for f in CLASS_FOLDERS)}, or their folders)")
        super().validate()

    def make_demo(self, path: str | Path) -> Path:
        """Seven zips of synthetic 150 px PNGs (one texture per class), the empty file, a table."""
        root = Path(path)
        if (root / "patch_slides.csv").exists() and all((root / f"{f}.zip").exists() for f in CLASS_FOLDERS):
            return root
        import numpy as np

        root.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(2026)
        table = [("patch", "slide_id", "patient_id")]
        for index, (folder, name) in enumerate(CLASS_FOLDERS.items()):
            with atomic_path(root / f"{folder}.zip") as tmp, zipfile.ZipFile(tmp, "w") as archive:
                for n in range(1, DEMO_COUNTS[name] + 1):
                    archive.writestr(f"{name}_{n}.png", _png(demo_texture(index, rng)))
                    patient = (n - 1) % DEMO_PATIENTS_PER_CLASS
                    slide = ((n - 1) // DEMO_PATIENTS_PER_CLASS) % DEMO_SLIDES_PER_PATIENT
                    table.append((f"{name}_{n}.png", f"S-{name}-{patient}{slide}", f"P-{name}-{patient}"))
                if name == "FIB":
                    archive.writestr(EMPTY_FILE, b"")
                    table.append((EMPTY_FILE, f"S-{name}-00", f"P-{name}-0"))
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(table)
        atomic_write_text(root / "patch_slides.csv", buffer.getvalue())
        return root


def _png(pixels: Any) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def demo_texture(class_index: int, rng: Any, px: int = PATCH_PX) -> Any:
    """A 150 px RGB patch whose colour and pattern say its class (not histology: a demo stand-in).

    TUM dense large purple nuclei; FIB pink diagonal fibres; INF many small dark dots; NEC pale
    granular debris; NOR regular cords; REA rings of ducts; STE white round fat vacuoles."""
    import numpy as np

    yy, xx = np.mgrid[0:px, 0:px].astype(np.float32)
    base = np.array([(170, 110, 190), (235, 165, 195), (225, 185, 215), (205, 190, 190), (215, 135, 165),
                     (190, 170, 225), (245, 215, 225)][class_index], dtype=np.float32)
    img = np.broadcast_to(base, (px, px, 3)).copy() + rng.normal(0, 6, (px, px, 3))
    dark = np.array([70, 40, 110], dtype=np.float32)

    def blobs(count: int, radius: float, colour: Any) -> None:
        for cy, cx in rng.uniform(0, px, (count, 2)):
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 < radius ** 2
            img[mask] = colour

    phase = rng.uniform(0, 2 * np.pi)
    if class_index == 0:
        blobs(45, 6.0, dark)
    elif class_index == 1:
        stripes = np.sin((xx + yy) / 4.0 + phase) > 0.3
        img[stripes] = (200, 90, 140)
    elif class_index == 2:
        blobs(220, 2.0, (50, 30, 100))
    elif class_index == 3:
        grain = rng.random((px, px)) < 0.25
        img[grain] = (150, 140, 150)
    elif class_index == 4:
        cords = (np.sin(xx / 6.0 + phase) > 0.6) | (np.sin(yy / 6.0 + phase) > 0.8)
        img[cords] = (160, 70, 120)
    elif class_index == 5:
        for cy, cx in rng.uniform(20, px - 20, (6, 2)):
            ring = np.abs(np.hypot(yy - cy, xx - cx) - 12.0) < 3.0
            img[ring] = (90, 60, 150)
    else:
        blobs(14, 14.0, (252, 250, 252))
    return np.clip(img, 0, 255).astype(np.uint8)


@hookimpl
def register_datasets(register):
    register(HepatoBenchDataset)


# HepatoBench Figure 2a: frozen encoder + classification head, slide-level split, macro over the
# seven classes (BACC, F1, AUC); the head and its optimiser are not published (docs/hepatobench.md).
FIGURE_2A = PublishedReference(
    ("hepatobench",), "HepatoBench Figure 2a",
    "The paper's patch classification scores (frozen encoder + head, slide-level split). A run is comparable "
    "with a row when it uses the same encoder on the real release with its slide-level split; the head is "
    "pathkit's, not the paper's.",
    tuple(PublishedScore("HepatoBench Fig. 2a", model, column, "classification", key, value, {"encoder": encoder},
                         "frozen encoder + the paper's (unpublished) head; slide-level split")
          for model, encoder, values in (("UNI", "uni", (0.913, 0.920, 0.996)),
                                         ("Prov-GigaPath", "gigapath", (0.967, 0.969, 0.999)),
                                         ("Virchow2", "virchow2", (0.968, 0.969, 1.000)))
          for (column, key), value in zip((("BACC", "balanced_accuracy"), ("F1 (macro)", "macro_F1"),
                                           ("AUC", "AUROC")), values, strict=True)))


@hookimpl
def report_sections(run):
    return FIGURE_2A.sections(run)
