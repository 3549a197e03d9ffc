"""Olympus/Evident cellSens VSI through bioio-vsi (no Java): the resolution levels of the first
scene as the pyramid, the mpp from its physical pixel sizes (micrometres). A .vsi file keeps its
pixels in the `_<name>_/stack*/frame_t.ets` folder beside it; without that folder it cannot open.
Where bioio-vsi cannot read a file, the refusal names the conversion route: Bio-Formats'
`bfconvert` (or QuPath's OME-TIFF export) to a pyramidal OME-TIFF, which the ome-tiff reader opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_readers.axes import AxesLevel
from pathkit_readers.base import ReaderHandle, cannot_open, found_mpp, refusing, starts_with, to_micrometres
from pathkit_readers.ome_tiff import TIFF_MAGIC

CONVERT = ("convert it to a pyramidal OME-TIFF (bfconvert -pyramid-resolutions 4 -pyramid-scale 2 -tilex 512 "
           "-tiley 512 in.vsi out.ome.tif, or QuPath's OME-TIFF export) and open that with the ome-tiff reader")


def _levels(image: Any) -> list[AxesLevel]:
    levels = []
    for index in image.resolution_levels:
        image.set_resolution_level(index)
        levels.append(AxesLevel(image.dask_data, image.dims.order))
    image.set_resolution_level(image.resolution_levels[0])
    return levels


def vsi_mpp(image: Any) -> tuple[str, tuple[float, float]] | None:
    sizes = image.physical_pixel_sizes
    return found_mpp("vsi physical pixel size", to_micrometres(sizes.X, "um"), to_micrometres(sizes.Y, "um"))


class VsiReader(SlideReader):
    name = "vsi"
    description = "Olympus/Evident cellSens VSI (bioio-vsi, no Java)"
    formats = "vsi (with its _name_ .ets folder)"
    extra = "vsi"
    modules: ClassVar[tuple[str, ...]] = ("bioio_vsi",)
    order = 40

    @classmethod
    def claims(cls, path: Path) -> bool:
        return path.suffix.lower() == ".vsi"

    def open(self, path: Path) -> ReaderHandle:
        if not starts_with(path, TIFF_MAGIC):  # a .vsi is a TIFF container: refuse anything else before the import
            raise cannot_open(path, self.name, f"not a cellSens VSI file (no TIFF header); {CONVERT}")
        from bioio_vsi import Reader

        with refusing(path, self.name, hint=f"; {CONVERT}"):  # bioio-vsi raises VsiError subclasses, codec errors
            image = Reader(str(path))
            levels = _levels(image)
            mpp = vsi_mpp(image)
        return ReaderHandle(path=path, reader=self.name, levels=levels, mpp_found=mpp, vendor="olympus",
                            properties={"vsi.levels": str(len(levels)), "vsi.scenes": str(len(image.scenes))})
