"""OME-Zarr (NGFF 0.4 and 0.5) through zarr v3: the `multiscales` datasets as levels, the mpp from
their `scale` coordinate transformations (times the multiscale's own) in the x/y axes' units; a
local folder or a zip store (`.ome.zarr.zip`); a bioformats2raw layout reads its first image."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_readers.axes import AxesLevel
from pathkit_readers.base import ReaderHandle, cannot_open, found_mpp, refusing, to_micrometres

ZARR_MARKERS = ("zarr.json", ".zattrs", ".zgroup")


def _multiscales(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    ome = attrs.get("ome") if isinstance(attrs.get("ome"), dict) else attrs  # 0.5 nests under "ome"
    found = ome.get("multiscales")
    return found if isinstance(found, list) and found else None


def _scale(transforms: Any, n: int) -> list[float]:
    for t in transforms or ():
        if isinstance(t, dict) and t.get("type") == "scale" and len(t.get("scale", ())) == n:
            return [float(v) for v in t["scale"]]
    return [1.0] * n


def ngff_levels(group: Any, path: Path, reader: str) -> tuple[list[AxesLevel], tuple[str, tuple[float, float]] | None]:
    """The levels and the mpp of the image group `group` (its first multiscale)."""
    multiscales = _multiscales(dict(group.attrs))
    if multiscales is None and "0" in group:  # bioformats2raw.layout: the first image is group 0
        return ngff_levels(group["0"], path, reader)
    if multiscales is None:
        raise cannot_open(path, reader, "no NGFF `multiscales` metadata")
    ms = multiscales[0]
    axes = ms.get("axes") or [{"name": a} for a in "tczyx"]  # 0.3 and older: implicit tczyx
    names = "".join(str(a["name"] if isinstance(a, dict) else a)[0] for a in axes).upper()
    levels = [AxesLevel(group[d["path"]], names) for d in ms["datasets"]]
    n = len(names)
    scale = [a * b for a, b in zip(_scale(ms["datasets"][0].get("coordinateTransformations"), n),
                                   _scale(ms.get("coordinateTransformations"), n), strict=True)]
    ix, iy = names.index("X"), names.index("Y")
    unit = {i: (a.get("unit") if isinstance(a, dict) else None) for i, a in enumerate(axes)}
    if unit[ix] is None:  # NGFF allows unitless axes: no physical size
        return levels, None
    return levels, found_mpp("ngff scale", to_micrometres(scale[ix], unit[ix]),
                             to_micrometres(scale[iy], unit[iy] or unit[ix]))


def _open_group(path: Path) -> tuple[Any, Any]:
    import zarr

    if path.is_dir():
        return zarr.open_group(str(path), mode="r"), None
    store = zarr.storage.ZipStore(str(path), mode="r")
    return zarr.open_group(store, mode="r"), store


class OmeZarrReader(SlideReader):
    name = "ome-zarr"
    description = "OME-Zarr / NGFF 0.4-0.5 multiscale images (folders and zip stores)"
    formats = "ome.zarr folders, ome.zarr.zip"
    extra = "ome-zarr"
    modules: ClassVar[tuple[str, ...]] = ("zarr",)
    order = 10

    @classmethod
    def claims(cls, path: Path) -> bool:
        name = path.name.lower()
        if path.is_dir():
            return name.endswith(".zarr") or any((path / m).is_file() for m in ZARR_MARKERS)
        return name.endswith(".zarr.zip")

    def open(self, path: Path) -> ReaderHandle:
        with refusing(path, self.name):
            group, store = _open_group(path)
        close = store.close if store is not None else None
        with refusing(path, self.name, close):  # malformed metadata of any shape
            levels, mpp = ngff_levels(group, path, self.name)
            return ReaderHandle(path=path, reader=self.name, levels=levels, mpp_found=mpp, vendor="ome-zarr",
                                properties={"ngff.levels": str(len(levels))}, on_close=close)
