"""DICOM whole-slide images (VL Whole Slide Microscopy) through wsidicom: a folder of instances
(several files per level, sparse tiling, several focal planes: the first), one pyramid level per
instance group; the mpp from the base level's Pixel Spacing (mm); label and overview as associated
images. OpenSlide comes first for a single file it reads; this reader takes the series it cannot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_readers.base import ReaderHandle, found_mpp, refusing, starts_with, to_micrometres

if TYPE_CHECKING:
    import numpy as np

DICOM_MAGIC_OFFSET = 128


@dataclass
class DicomLevel:
    """A pyramid level of a wsidicom slide (`number`: wsidicom's level, log2 of its downsample)."""

    slide: Any
    number: int
    width: int
    height: int

    def window(self, x: int, y: int, w: int, h: int) -> np.ndarray:
        import numpy as np

        return np.asarray(self.slide.read_region((x, y), self.number, (w, h)).convert("RGB"))


def dicom_mpp(slide: Any) -> tuple[str, tuple[float, float]] | None:
    spacing = slide.levels[0].pixel_spacing  # SizeMm: width (column spacing), height (row spacing)
    if spacing is None:
        return None
    return found_mpp("dicom PixelSpacing", to_micrometres(spacing.width, "mm"), to_micrometres(spacing.height, "mm"))


def _associated(slide: Any) -> dict[str, Any]:
    import numpy as np

    out = {}
    if slide.labels:
        out["label"] = lambda: np.asarray(slide.read_label().convert("RGB"))
    if slide.overviews:
        out["macro"] = lambda: np.asarray(slide.read_overview().convert("RGB"))
    return out


class DicomReader(SlideReader):
    name = "dicom"
    description = "DICOM whole-slide series (wsidicom): several files per level, sparse tiling"
    formats = "dcm folders and files"
    extra = "dicom"
    modules: ClassVar[tuple[str, ...]] = ("wsidicom",)
    order = 60

    @classmethod
    def claims(cls, path: Path) -> bool:
        if path.is_dir():
            return path.suffix.lower() == ".dcm" or any(c.suffix.lower() == ".dcm" for c in path.iterdir())
        return starts_with(path, (b"DICM",), DICOM_MAGIC_OFFSET)

    def open(self, path: Path) -> ReaderHandle:
        from wsidicom import WsiDicom

        with refusing(path, self.name):  # pydicom and wsidicom raise many kinds
            slide = WsiDicom.open(path)
        with refusing(path, self.name, slide.close):  # malformed metadata
            levels = [DicomLevel(slide, int(lv.level), int(lv.size.width), int(lv.size.height)) for lv in slide.levels]
            props = {"dicom.levels": str(len(levels))}
            return ReaderHandle(path=path, reader=self.name, levels=levels, mpp_found=dicom_mpp(slide), vendor="dicom",
                                properties=props, associated=_associated(slide), on_close=slide.close)
