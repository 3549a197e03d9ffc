"""Zeiss CZI through pylibCZIrw (libCZI): the whole scan (the total bounding rectangle of every
scene), or one scene (`FILE#scene=LABEL`, `pathkit_core.wsi.scenes`: its bounding rectangle, its
subblocks only) at level 0 and one level per pyramid layer the file stores (its subblocks' zoom), which
libCZI composes at that zoom; the mpp from the Scaling/Items/Distance metadata (metres per pixel); Bgr24
pixels returned as RGB; the label and slide preview attachments are not read (docs/formats.md)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import SlideReader
from pathkit_core.wsi.slide_errors import SlideError
from pathkit_readers.base import ReaderHandle, found_mpp, refusing, starts_with, to_micrometres

if TYPE_CHECKING:
    import numpy as np

CZI_MAGIC = b"ZISRAWFILE"
# Virtual levels stop when the smaller side would fall under this many pixels.
MIN_LEVEL_PX = 512


@dataclass
class CziLevel:
    """One zoom level of a CZI document: level pixels map to `downsample` level-0 pixels."""

    doc: Any
    origin: tuple[int, int]
    base: tuple[int, int]
    downsample: int
    scene: int | None = None

    @property
    def width(self) -> int:
        return self.base[0] // self.downsample

    @property
    def height(self) -> int:
        return self.base[1] // self.downsample

    def window(self, x: int, y: int, w: int, h: int) -> np.ndarray:
        import numpy as np

        d = self.downsample
        roi = (self.origin[0] + x * d, self.origin[1] + y * d, w * d, h * d)
        pixels = self.doc.read(roi=roi, plane={"C": 0}, scene=self.scene, zoom=1.0 / d,
                               background_pixel=(1.0, 1.0, 1.0))
        if pixels.shape[0] != h or pixels.shape[1] != w:  # libCZI rounds the zoomed size
            fixed = np.full((h, w, pixels.shape[2]), 255, dtype=pixels.dtype)
            fixed[: min(h, pixels.shape[0]), : min(w, pixels.shape[1])] = pixels[:h, :w]
            pixels = fixed
        return pixels


def czi_mpp(metadata: dict[str, Any]) -> tuple[str, tuple[float, float]] | None:
    """(source, (mpp_x, mpp_y)) from ImageDocument/Metadata/Scaling/Items/Distance (metres)."""
    try:
        items = metadata["ImageDocument"]["Metadata"]["Scaling"]["Items"]["Distance"]
    except (KeyError, TypeError):
        return None
    items = items if isinstance(items, list) else [items]
    found = {str(d.get("@Id")): to_micrometres(d.get("Value"), "m") for d in items if isinstance(d, dict)}
    return found_mpp("czi Scaling/Distance", found.get("X"), found.get("Y"))


def czi_scene_names(metadata: dict[str, Any], count: int) -> list[str | None]:
    """The @Name of each of `count` scenes from Information/Image/Dimensions/S/Scenes/Scene (by
    @Index, else in order); None where the metadata names none (pylibCZIrw's writer names none)."""
    try:
        found = metadata["ImageDocument"]["Metadata"]["Information"]["Image"]["Dimensions"]["S"]["Scenes"]["Scene"]
    except (KeyError, TypeError):
        found = []
    found = found if isinstance(found, list) else [found]
    names: list[str | None] = [None] * count
    for order, scene in enumerate(found):
        if not isinstance(scene, dict):
            continue
        index = scene.get("@Index", order)
        index = int(index) if str(index).isdigit() else order
        name = str(scene.get("@Name") or "").strip()
        if index < count and name:
            names[index] = name
    return names


def stored_downsamples(doc: Any) -> list[int]:
    """The pyramid the file stores: 1 and the downsample (1 / zoom, rounded) of every subblock layer."""
    found = {1}

    def note(_index: int, info: Any) -> bool:
        zoom = float(info.get_zoom())
        if 0 < zoom < 0.95:
            found.add(round(1.0 / zoom))
        return True

    doc.enumerate_subblocks(note)
    return sorted(found)


def find_scene(labels: list[str], label: str, path: Path) -> int:
    """The index of scene `label` (a label, else an index) among `labels`; SlideError otherwise."""
    if label in labels:
        return labels.index(label)
    if label.isdigit() and int(label) < len(labels):
        return int(label)
    raise SlideError("not-a-slide", path, f"has no scene {label!r} (its scenes: {', '.join(labels) or 'none'})")


def _scene_box(doc: Any, slide_path: Path, label: str | None) -> tuple[Any, int | None]:
    """(the rectangle level 0 covers, the scene index or None): the whole scan, or scene `label`."""
    box = doc.total_bounding_rectangle
    if label is None:
        return box, None
    from pathkit_core.wsi.scenes import scene_labels

    rects = doc.scenes_bounding_rectangle
    indices = sorted(rects)
    labels = scene_labels(czi_scene_names(doc.metadata, len(indices)))
    index = indices[find_scene(labels, label, slide_path)] if indices else None
    if index is None:
        if label != "0":
            raise SlideError("not-a-slide", slide_path, f"has no scene {label!r} (it holds one, unnamed: 0)")
        return box, None
    return rects[index], index


class CziReader(SlideReader):
    name = "czi"
    description = "Zeiss CZI scans (libCZI through pylibCZIrw)"
    formats = "czi"
    extra = "czi"
    modules: ClassVar[tuple[str, ...]] = ("pylibCZIrw.czi",)
    order = 30
    has_scenes = True

    @classmethod
    def claims(cls, path: Path) -> bool:
        return starts_with(path, (CZI_MAGIC,))

    @classmethod
    def scene_names(cls, path: Path) -> list[str | None]:
        from pylibCZIrw import czi as pyczi

        with pyczi.open_czi(str(path)) as doc:
            return czi_scene_names(doc.metadata, len(doc.scenes_bounding_rectangle))

    def open(self, path: Path) -> ReaderHandle:
        from pylibCZIrw import czi as pyczi

        from pathkit_core.wsi.scenes import split_scene

        file, label = split_scene(path)  # the file, and the scene a scene path names (None: the whole scan)
        context = pyczi.open_czi(str(file))
        with refusing(file, self.name):  # libCZI raises RuntimeError on a damaged file
            doc = context.__enter__()
        close = functools.partial(context.__exit__, None, None, None)
        with refusing(path, self.name, close):  # malformed metadata or directory
            box, scene = _scene_box(doc, path, label)
            pixel_type = str(doc.pixel_types.get(0, ""))
            if pixel_type not in ("Bgr24", "Gray8", "Bgra32"):
                raise SlideError("unopenable", path, f"the {self.name} reader reads 8-bit brightfield scans "
                                 f"(Bgr24, Gray8); this one is {pixel_type or 'of no pixel type'}")
            levels = [CziLevel(doc, (box.x, box.y), (box.w, box.h), d, scene) for d in stored_downsamples(doc)
                      if d == 1 or min(box.w, box.h) // d >= MIN_LEVEL_PX]
            scenes = doc.scenes_bounding_rectangle
            props = {"czi.pixel_type": pixel_type, "czi.scenes": str(len(scenes)),
                     "czi.bounding_box": f"{box.x},{box.y},{box.w},{box.h}",
                     **({"czi.scene": label, "czi.scene_index": str(scene)} if label is not None else {})}
            return ReaderHandle(path=path, reader=self.name, levels=levels, mpp_found=czi_mpp(doc.metadata),
                                vendor="zeiss", properties=props, on_close=close, bgr=pixel_type != "Gray8")
