"""The slide readers the `pathkit` distribution ships, a plugin of it registered through
`register_slide_readers` like any third party's (entry point `slide-readers`): OpenSlide (the
default), OME-TIFF, OME-Zarr, CZI, DICOM and VSI, one module per format. Each format's library is
an optional extra of the distribution; a reader whose library is missing is listed, with the
install line (docs/formats.md, "Where the readers live, and why")."""

from __future__ import annotations

from typing import Any

from pathkit_core import hookimpl


def builtin_readers() -> list[type]:
    """The readers this distribution ships."""
    from pathkit_readers.czi import CziReader
    from pathkit_readers.dicom import DicomReader
    from pathkit_readers.ome_tiff import OmeTiffReader
    from pathkit_readers.ome_zarr import OmeZarrReader
    from pathkit_readers.openslide_reader import OpenSlideReader
    from pathkit_readers.vsi import VsiReader

    return [OpenSlideReader, OmeTiffReader, OmeZarrReader, CziReader, DicomReader, VsiReader]


@hookimpl
def register_slide_readers(register: Any) -> None:
    for cls in builtin_readers():
        register(cls)


@hookimpl
def doctor_checks() -> list[tuple[str, str, str]]:
    """A row per slide reader: usable, or what to install."""
    from pathkit_core.wsi.reader_choice import ordered_readers

    rows = []
    for cls in ordered_readers():
        why = cls.unavailable()
        rows.append((f"slide reader {cls.name}", "ok" if why is None else "missing",
                     cls.formats if why is None else why))
    return rows
