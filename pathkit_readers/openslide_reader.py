"""The default reader: OpenSlide 4 (Aperio, Hamamatsu, Leica, MIRAX, Philips, Sakura, Ventana,
generic tiled TIFF, DICOM). Its handle is the `openslide.OpenSlide` itself; the mpp comes from
OpenSlide's properties (`pathkit_core.wsi.slide.resolve_mpp`); Aperio and generic-tiff JPEG levels
are decoded directly for the tile reader (`pathkit_readers.tiff_direct`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_core.wsi.slide_errors import SlideError


def describe_unsupported(path: Path) -> str:
    """Say why OpenSlide does not recognise a file, naming the flat-TIFF case explicitly."""
    try:
        import tifffile

        with tifffile.TiffFile(path) as tif:
            page = tif.pages[0]
            if not page.is_tiled:
                return (
                    f"a flat (striped, untiled) TIFF of {page.imagewidth}x{page.imagelength} px, "
                    "not a pyramidal whole-slide image; OpenSlide reads only tiled slides"
                )
    except Exception:  # noqa: BLE001 - not a TIFF at all: fall through to the generic message
        pass
    return "not a whole-slide image format OpenSlide recognises"


class OpenSlideReader(SlideReader):
    name = "openslide"
    description = "OpenSlide 4: the vendor formats and generic tiled TIFF (the default)"
    formats = "svs, ndpi, vms, scn, mrxs, bif, tiff, dcm"
    modules: ClassVar[tuple[str, ...]] = ("openslide",)
    order = 50

    @classmethod
    def claims(cls, path: Path) -> bool:
        return True  # anything the readers before it did not take

    def open(self, path: Path) -> Any:
        """An `openslide.OpenSlide` of `path`, or the SlideError saying why not."""
        import openslide

        try:
            fmt = openslide.OpenSlide.detect_format(str(path))
        except openslide.OpenSlideError as exc:
            raise SlideError("unopenable", path, f"OpenSlide cannot open it: {exc}") from None
        if fmt is None:
            raise SlideError("not-a-slide", path, describe_unsupported(path))
        try:
            return openslide.OpenSlide(str(path))
        except openslide.OpenSlideUnsupportedFormatError:
            raise SlideError("not-a-slide", path, describe_unsupported(path)) from None
        except openslide.OpenSlideError as exc:
            raise SlideError("unopenable", path, f"OpenSlide cannot open this {fmt} file: {exc}") from None
        except OSError as exc:
            raise SlideError("unopenable", path, f"cannot be read: {exc}") from None

    def direct_levels(self, path: Path, handle: Any) -> SlideReader.DirectLevels | None:
        """The JPEG-tiled TIFF levels of an Aperio or generic-tiff slide, decoded without OpenSlide."""
        from pathkit_readers.tiff_direct import DirectTiffLevels

        return DirectTiffLevels.open(path, handle)
