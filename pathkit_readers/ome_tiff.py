"""OME-TIFF and other pyramids tifffile reads (SubIFD and multi-series pyramids), through tifffile
and zarr: the levels of the first image series, the mpp from the OME-XML PhysicalSizeX/Y with
their units (else the TIFF resolution tags), the label and macro images as associated images."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_readers.axes import AxesLevel
from pathkit_readers.base import ReaderHandle, cannot_open, found_mpp, refusing, starts_with, to_micrometres

TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
# Series names (OME Image names, tifffile's names for vendor layouts) taken as associated images.
ASSOCIATED = ("label", "macro", "thumbnail", "overview")


def ome_mpp(xml: str | None) -> tuple[str, tuple[float, float]] | None:
    """(source, (mpp_x, mpp_y)) from the first OME Image's Pixels PhysicalSizeX/Y and units."""
    if not xml:
        return None
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    pixels = next((el for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Pixels"), None)
    if pixels is None:
        return None
    return found_mpp("ome-xml PhysicalSizeX/Y",
                     to_micrometres(pixels.get("PhysicalSizeX"), pixels.get("PhysicalSizeXUnit")),
                     to_micrometres(pixels.get("PhysicalSizeY"), pixels.get("PhysicalSizeYUnit")))


def tag_mpp(page: Any) -> tuple[str, tuple[float, float]] | None:
    """(source, (mpp_x, mpp_y)) from a page's XResolution/YResolution and ResolutionUnit tags."""
    from pathkit_core.wsi.slide_errors import tiff_resolution_mpp

    tags = page.tags
    if "XResolution" not in tags or "ResolutionUnit" not in tags:
        return None
    unit = {2: "inch", 3: "centimeter"}.get(int(tags["ResolutionUnit"].value), "")

    def ratio(value: Any) -> float:
        return value[0] / value[1] if isinstance(value, tuple) else float(value)

    xres = ratio(tags["XResolution"].value)
    yres = ratio(tags["YResolution"].value) if "YResolution" in tags else xres
    found = tiff_resolution_mpp({"tiff.ResolutionUnit": unit, "tiff.XResolution": str(xres),
                                  "tiff.YResolution": str(yres)})
    return ("tiff-resolution", found) if found else None


def _associated(tif: Any) -> dict[str, Any]:
    import numpy as np

    out = {}
    for series in tif.series[1:]:
        name = (series.name or "").strip().lower()
        if name in ASSOCIATED and name not in out:
            out[name] = lambda s=series: np.asarray(s.asarray())
    return out


def truncation(tif: Any, series: Any, size: int) -> str | None:
    """Why the levels of `series` cannot all be read from a file of `size` bytes, or None."""
    if not series.levels:
        return "no image series"
    for i, level in enumerate(series.levels):
        page = level.keyframe
        ends = [o + n for o, n in zip(page.dataoffsets, page.databytecounts, strict=False)]
        if not ends or max(ends) > size:
            return f"level {i}'s image data ends past the end of the file (truncated?)"
    return None


class OmeTiffReader(SlideReader):
    name = "ome-tiff"
    description = "OME-TIFF and tifffile-readable pyramids (SubIFD or multi-series levels)"
    formats = "ome.tif, ome.tiff (auto); any pyramidal TIFF with --slide-reader ome-tiff"
    extra = "ome-tiff"
    modules: ClassVar[tuple[str, ...]] = ("tifffile", "imagecodecs", "zarr")
    order = 20

    @classmethod
    def claims(cls, path: Path) -> bool:
        """A TIFF whose first image description is OME-XML."""
        if not starts_with(path, TIFF_MAGIC):
            return False
        if path.name.lower().endswith((".ome.tif", ".ome.tiff", ".ome.btf")):
            return True
        import tifffile

        try:
            with tifffile.TiffFile(path) as tif:
                return tif.is_ome
        except Exception:  # noqa: BLE001 - not readable by tifffile: not claimed
            return False

    def open(self, path: Path) -> ReaderHandle:
        """A handle over the first series of a TIFF tifffile reads, every level of its pyramid."""
        import tifffile
        import zarr

        with refusing(path, self.name):  # tifffile raises TiffFileError, struct.error, ValueError...
            tif = tifffile.TiffFile(path)
        with refusing(path, self.name, tif.close):
            series = tif.series[0] if tif.series else None
            problem = "no image series" if series is None else truncation(tif, series, path.stat().st_size)
            if problem:
                raise cannot_open(path, self.name, problem)
            stored = zarr.open(series.aszarr(), mode="r")  # one array, or a group of the levels "0", "1", ...
            arrays = [stored] if isinstance(stored, zarr.Array) else [stored[str(i)] for i in range(len(series.levels))]
            levels = [AxesLevel(a, level.axes) for a, level in zip(arrays, series.levels, strict=True)]
            mpp = (ome_mpp(tif.ome_metadata) if tif.is_ome else None) or tag_mpp(series.levels[0].keyframe)
            props = {"tiff.series": str(len(tif.series)), "tiff.axes": series.axes, "tiff.levels": str(len(levels))}
            return ReaderHandle(path=path, reader=self.name, levels=levels, mpp_found=mpp,
                                vendor="ome-tiff" if tif.is_ome else "tiff", properties=props,
                                associated=_associated(tif), on_close=tif.close)
