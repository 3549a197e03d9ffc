"""Slide access: opening through a slide reader (OpenSlide by default; the others in `pathkit_readers`),
resolution (mpp) with its source, and bad-input errors."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError, SlideHandle
from pathkit_core.wsi.slide_errors import SlideError, as_float, tiff_resolution_mpp

if TYPE_CHECKING:
    import numpy as np
    import openslide

# Plausible scanning resolutions: 40x scanners give ~0.25, 20x ~0.5, 5x ~2 um/px. A value outside
# this range is a placeholder (72 dpi -> 352.8 um/px) or a unit mix-up, never a real slide.
MPP_MIN = 0.1
MPP_MAX = 10.0
# mpp-x and mpp-y may differ by rounding in vendor metadata; more than this is a non-square pixel
# grid, which square tiles at one physical size cannot represent.
MPP_ANISOTROPY_TOLERANCE = 0.02

# File extensions OpenSlide 4 reads (Aperio, Hamamatsu, Leica, MIRAX, Philips, Sakura, Trestle,
# Ventana, generic tiled TIFF, DICOM). Used to find slides in folders; explicit files are tried
# whatever their extension.
SLIDE_EXTENSIONS: tuple[str, ...] = (
    ".svs", ".tif", ".tiff", ".ndpi", ".vms", ".vmu", ".scn", ".mrxs", ".svslide", ".bif",
    ".dcm", ".btf",
    # the other slide readers' formats (docs/formats.md)
    ".czi", ".vsi", ".zarr",
)
# Slides that are folders: an OME-Zarr store, a DICOM series.
FOLDER_SLIDE_EXTENSIONS: tuple[str, ...] = (".zarr", ".dcm")
# Files that may hold several scenes, each its own slide (`pathkit_core.wsi.scenes`).
SCENE_EXTENSIONS: tuple[str, ...] = (".czi",)


# Errors about a slide's resolution, and how to fix them. The generic fix names every command;
# a command that knows what the user ran replaces it with its own (`with_mpp_fix`).
MPP_CODES = frozenset({"no-mpp", "implausible-mpp", "anisotropic-mpp"})
MPP_FIXES = (
    "`pathkit tile` --slide-mpp MPP (one slide) or --mpp-csv FILE (columns slide,mpp), `pathkit extract` "
    "--slide-mpp MPP, `pathkit run` --dataset-option mpp=MPP (or the dataset's mpp column)"
)
MPP_FIX_TILE = "--slide-mpp MPP (one slide) or --mpp-csv FILE (columns slide,mpp)"
MPP_FIX_EXTRACT = "--slide-mpp MPP (every slide given)"


def with_mpp_fix(message: str, fix: str | None) -> str:
    """An mpp error `message` with the generic fix replaced by `fix`, the option that fits the
    command the user ran (unchanged when `fix` is None or the message names no fix)."""
    return message.replace(MPP_FIXES, fix) if fix else message


def slide_id_for(path: str | Path) -> str:
    """The slide id: the file name without its extension (`a/b/CMU-1.svs` -> `CMU-1`).

    Only the last suffix goes, except `.ome.tif(f)` which loses both, so TCGA names with dots
    (`TCGA-...-DX1.8A7F...svs`) keep their UUID part and stay unique. One scene of a file
    (`a/b/run.czi#scene=Left`) is `run-Left`.
    """
    from pathkit_core.wsi.scenes import scene_id_part, split_scene

    file, scene = split_scene(path)
    if scene is not None:  # one scene of a file (docs/formats.md, "Scenes")
        return f"{slide_id_for(file)}-{scene_id_part(scene)}"
    name = Path(path).name
    lower = name.lower()
    for ext in (".ome.tiff", ".ome.tif", ".ome.zarr", ".ome.zarr.zip", ".zarr.zip"):
        if lower.endswith(ext):
            return name[: -len(ext)]
    stem = Path(name).stem
    return stem or name


# --------------------------------------------------------------------------- mpp resolution


@dataclass(frozen=True)
class MppResolution:
    """The level-0 resolution of a slide and where it was found."""

    mpp_x: float
    mpp_y: float
    source: str  # user, user-csv, openslide.mpp (aperio.MPP), tiff-resolution, vendor key name

    @property
    def mpp(self) -> float:
        """One isotropic value (the mean; the two differ by at most the anisotropy tolerance)."""
        return (self.mpp_x + self.mpp_y) / 2.0


def _vendor_mpp(props: Mapping[str, str]) -> tuple[str, tuple[float, float]] | None:
    """(key, (mpp_x, mpp_y)) from the vendor keys OpenSlide may expose without deriving
    openslide.mpp-x from them (older files, partial metadata)."""
    for key in ("aperio.MPP", "ventana.ScanRes"):
        value = as_float(props.get(key))
        if value is not None:
            return key, (value, value)
    mirax_x = as_float(props.get("mirax.LAYER_0_LEVEL_0_SECTION.MICROMETER_PER_PIXEL_X"))
    mirax_y = as_float(props.get("mirax.LAYER_0_LEVEL_0_SECTION.MICROMETER_PER_PIXEL_Y"))
    if mirax_x is not None:
        return "mirax.MICROMETER_PER_PIXEL", (mirax_x, mirax_y or mirax_x)
    spacing = props.get("philips.DICOM_PIXEL_SPACING")
    if spacing:
        # DICOM PixelSpacing is "row\column" in millimetres, quoted in Philips metadata.
        parts = [as_float(p.strip().strip('"')) for p in str(spacing).replace('"', " ").split()]
        parts = [p for p in parts if p is not None]
        if parts:
            row_mm, col_mm = parts[0], parts[-1]
            return "philips.DICOM_PIXEL_SPACING", (col_mm * 1000.0, row_mm * 1000.0)
    return None


def _openslide_mpp_source(props: Mapping[str, str]) -> str:
    """Name the metadata OpenSlide derived openslide.mpp-x from, for the manifest record."""
    vendor = str(props.get("openslide.vendor", ""))
    if vendor == "aperio" and "aperio.MPP" in props:
        return "openslide.mpp (aperio.MPP)"
    if vendor == "generic-tiff" and "tiff.XResolution" in props:
        return "openslide.mpp (tiff-resolution)"
    return f"openslide.mpp ({vendor or 'unknown vendor'})"


def resolve_mpp(properties: Mapping[str, str], *, path: str | Path | None = None, override: float | None = None,
                override_source: str = "user") -> MppResolution:
    """The slide's level-0 mpp and its source, or a SlideError; never a guess.

    Order: a user-supplied value; `openslide.mpp-x/y` (OpenSlide's reading of vendor metadata
    or TIFF resolution tags); vendor keys OpenSlide did not convert; TIFF resolution tags.
    Objective power alone is not used: 20x means 0.5 um/px on one scanner and 0.46 on another.
    """
    mx, my = as_float(properties.get("openslide.mpp-x")), as_float(properties.get("openslide.mpp-y"))
    tiff = tiff_resolution_mpp(properties)
    found = ((_openslide_mpp_source(properties), (mx, my or mx)) if mx is not None
             else _vendor_mpp(properties) or (("tiff-resolution", tiff) if tiff is not None else None))
    return mpp_from(found, path=path, override=override, override_source=override_source)


def mpp_from(found: tuple[str, tuple[float, float]] | None, *, path: str | Path | None = None,
             override: float | None = None, override_source: str = "user") -> MppResolution:
    """The checks every slide reader shares: a user's value wins; else `found` (source, (mpp_x,
    mpp_y)) from the reader's metadata must exist (no-mpp), be plausible (implausible-mpp) and
    square (anisotropic-mpp)."""
    hint = f"; supply it with {MPP_FIXES}"
    if override is not None:
        value = as_float(override)
        if value is None or not (MPP_MIN <= value <= MPP_MAX):
            raise SlideError("implausible-mpp", path,
                             f"the supplied mpp {override!r} is outside the plausible range {MPP_MIN}-{MPP_MAX} um/px")
        return MppResolution(value, value, override_source)
    if found is None:
        raise SlideError("no-mpp", path, f"no resolution (mpp) in the slide's metadata{hint}")

    source, (mpp_x, mpp_y) = found
    for value in (mpp_x, mpp_y):
        if not (MPP_MIN <= value <= MPP_MAX):
            dpi = 25400.0 / value
            placeholder = (f": a {dpi:.0f}-dpi placeholder, not a scan resolution"
                           if abs(dpi - round(dpi)) < 0.05 and value > MPP_MAX else "")
            raise SlideError("implausible-mpp", path, f"implausible mpp {value:.4g} um/px from {source}{placeholder} "
                             f"(plausible: {MPP_MIN:g}-{MPP_MAX:g} um/px){hint}")
    if abs(mpp_x - mpp_y) / max(mpp_x, mpp_y) > MPP_ANISOTROPY_TOLERANCE:
        raise SlideError("anisotropic-mpp", path, f"non-square pixels (mpp-x {mpp_x:.4g}, mpp-y {mpp_y:.4g} from "
                         f"{source}); square tiles at one physical size need square pixels; force one value with "
                         f"{MPP_FIXES}")
    return MppResolution(mpp_x, mpp_y, source)


def read_mpp_csv(path: str | Path) -> dict[str, float]:
    """Read a `slide,mpp` CSV; `slide` is a slide id, a file name or a path."""
    p = Path(path)
    if not p.is_file():
        raise PathkitError(f"{p}: mpp CSV not found")
    from pathkit_core.contracts import repeats_text
    from pathkit_core.workspace import check_regular_file

    check_regular_file(p, "mpp CSV")
    out: dict[str, float] = {}
    lines: dict[str, list[str]] = {}
    with open(p, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "slide" not in fields or "mpp" not in fields:
            raise PathkitError(f"{p}: an mpp CSV needs the header `slide,mpp` (found {fields})")
        for line_no, row in enumerate(reader, start=2):
            row = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}
            if not row.get("slide"):
                continue
            value = as_float(row.get("mpp"))
            if value is None:
                raise PathkitError(f"{p}:{line_no}: mpp {row.get('mpp')!r} is not a positive number")
            out[row["slide"]] = value
            lines.setdefault(row["slide"], []).append(f"line {line_no}")
    repeated = {slide: where for slide, where in lines.items() if len(where) > 1}
    if repeated:
        raise PathkitError(f"{p}: {len(repeated)} slide(s) listed more than once, so their mpp is ambiguous: "
                           f"{repeats_text(repeated)}")
    return out


def lookup_mpp(overrides: Mapping[str, float] | None, path: str | Path) -> float | None:
    """The override for a slide, matched by full path, file name or slide id."""
    if not overrides:
        return None
    p = Path(path)
    found = {key: float(overrides[key]) for key in dict.fromkeys((str(p), str(p.resolve()), p.name, slide_id_for(p)))
             if key in overrides}
    if len(set(found.values())) > 1:  # one slide named by its file name and by its id, with two values
        raise PathkitError(f"the mpp of slide {p} is given {len(found)} times with different values ("
                           + ", ".join(f"{k}: {v:g}" for k, v in found.items()) + "); give it once")
    return next(iter(found.values()), None)


# --------------------------------------------------------------------------- opening


@dataclass
class Slide:
    """An open slide with its resolved mpp. Close it (or use `with`) when done.

    `handle` is the reader's: an `openslide.OpenSlide` for the default reader, a
    `pathkit_core.contracts.SlideHandle` (the same attributes) for the others."""

    path: Path
    handle: openslide.OpenSlide | SlideHandle
    mpp_info: MppResolution
    slide_id: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    reader: str = "openslide"  # the slide reader that opened it (`pathkit list slide-readers`)

    def __post_init__(self) -> None:
        self.slide_id = self.slide_id or slide_id_for(self.path)

    @property
    def mpp(self) -> float:
        return self.mpp_info.mpp

    @property
    def mpp_source(self) -> str:
        return self.mpp_info.source

    @property
    def dimensions(self) -> tuple[int, int]:
        return tuple(int(v) for v in self.handle.dimensions)  # type: ignore[return-value]

    @property
    def level_count(self) -> int:
        return int(self.handle.level_count)

    @property
    def level_dimensions(self) -> list[tuple[int, int]]:
        return [(int(w), int(h)) for w, h in self.handle.level_dimensions]

    @property
    def level_downsamples(self) -> list[float]:
        return [float(d) for d in self.handle.level_downsamples]

    @property
    def vendor(self) -> str:
        own = self.handle.vendor if isinstance(self.handle, SlideHandle) else None
        return str(self.properties.get("openslide.vendor") or own or "unknown")

    @property
    def associated_image_names(self) -> list[str]:
        """The associated images (label, macro, thumbnail, ...) the slide's file holds."""
        if isinstance(self.handle, SlideHandle):
            return sorted(self.handle.associated)
        return sorted(self.handle.associated_images)

    def associated_image(self, name: str) -> np.ndarray:
        """One associated image as RGB uint8 (h, w, 3)."""
        import numpy as np

        if isinstance(self.handle, SlideHandle):
            return self.handle.associated_image(name)
        return np.array(self.handle.associated_images[name].convert("RGB"))

    @property
    def objective_power(self) -> float | None:
        return as_float(self.properties.get("openslide.objective-power"))

    def read_region(self, location: tuple[int, int], level: int, size: tuple[int, int]) -> np.ndarray:
        """RGB uint8 (h, w, 3) of a region; transparent (unscanned) pixels become white glass."""
        return read_rgb(self.handle, location, level, size, path=self.path)

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> Slide:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_region_fn() -> Any:
    """OpenSlide's raw `openslide_read_region` binding, or None if this openslide-python lacks it."""
    import sys

    import openslide.lowlevel

    if sys.byteorder != "little":
        return None
    return getattr(openslide.lowlevel, "_read_region", None)


def read_rgb(handle: openslide.OpenSlide | SlideHandle, location: tuple[int, int], level: int, size: tuple[int, int],
             *, path: str | Path | None = None, out: np.ndarray | None = None,
             scratch: np.ndarray | None = None) -> np.ndarray:
    """`read_region` as RGB uint8 (h, w, 3), composited on white; decode errors as SlideError.

    Reads OpenSlide's premultiplied ARGB straight into numpy (openslide-python's own
    `read_region` builds a PIL RGBA image first). Over white, premultiplied colour c*a plus
    (255 - a) is the composite, exactly. `out` (h, w, 3 uint8) and `scratch` (at least h*w
    uint32) let a caller reuse memory: fresh pages cost as much as decoding on some machines.
    """
    import ctypes

    import numpy as np
    import openslide

    if isinstance(handle, SlideHandle):  # another format's reader
        return handle.read_rgb(location, level, size, out=out)
    w, h = int(size[0]), int(size[1])
    raw = _read_region_fn()
    osr = getattr(handle, "_osr", None)
    try:
        if raw is None or osr is None or w <= 0 or h <= 0:
            rgb = _read_rgb_pil(handle, location, level, (w, h))
            if out is None:
                return rgb
            out[...] = rgb
            return out
        if scratch is not None and scratch.size >= w * h and scratch.dtype == np.uint32:
            buf = scratch.reshape(-1)[: w * h].reshape(h, w)
        else:
            buf = np.empty((h, w), dtype=np.uint32)
        raw(osr, buf.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), int(location[0]),
            int(location[1]), int(level), w, h)
    except openslide.OpenSlideError as exc:
        raise SlideError("unreadable", path, f"tiles cannot be decoded (OpenSlide: {exc})") from None
    bgra = buf.view(np.uint8).reshape(h, w, 4)  # little-endian 0xAARRGGBB is bytes B, G, R, A
    if out is None:
        out = np.empty((h, w, 3), dtype=np.uint8)
    # Channel by channel: 3x faster than np.take or a reversed-view copy.
    out[..., 0] = bgra[..., 2]
    out[..., 1] = bgra[..., 1]
    out[..., 2] = bgra[..., 0]
    alpha = bgra[..., 3]
    if alpha.min() < 255:
        # Unscanned areas are transparent; over white they look like glass, not black tissue.
        out += (255 - alpha)[..., None]
    return out


def _read_rgb_pil(handle: openslide.OpenSlide, location: tuple[int, int], level: int,
                  size: tuple[int, int]) -> np.ndarray:
    import numpy as np

    image = handle.read_region(location, level, size)
    if image.getchannel("A").getextrema()[0] == 255:
        return np.array(image.convert("RGB"))  # a writable copy: torch.from_numpy needs one
    rgba = np.asarray(image)
    a = rgba[..., 3:4].astype(np.uint16)
    rgb = (rgba[..., :3].astype(np.uint16) * a + 255 * (255 - a)) // 255
    return np.ascontiguousarray(rgb.astype(np.uint8))


def check_slide_file(path: str | Path) -> Path:
    """`path` if it can be opened as a slide file; else a SlideError saying why (a missing
    file, a symbolic link loop, a named pipe that would block the reader, a folder)."""
    from pathkit_core.contracts import regular_file_problem
    from pathkit_core.wsi.scenes import split_scene

    p = Path(path)
    problem = regular_file_problem(split_scene(p)[0])
    if problem is None:
        return p
    code, message = problem
    if code == "directory":
        if p.suffix.lower() in FOLDER_SLIDE_EXTENSIONS:  # a DICOM series, an OME-Zarr store
            return p
        raise SlideError("not-a-slide", p, "is a directory, not a slide file")
    raise SlideError({"unreadable": "unopenable"}.get(code, code), p, message)


def open_slide(path: str | Path, mpp: float | None = None, *, mpp_source: str = "user",
               reader: str | None = None) -> Slide:
    """Open a slide and resolve its mpp (see `resolve_mpp`, `mpp_from`); SlideError otherwise.

    `reader` names the slide reader (`pathkit list slide-readers`); None takes the first that
    claims and opens the file, in the documented order (docs/formats.md), OpenSlide by default.
    """
    from pathkit_core.wsi.reader_choice import open_handle

    p = check_slide_file(path)
    handle, name = open_handle(p, reader)
    props = {str(k): str(v) for k, v in dict(handle.properties).items()}
    try:
        if isinstance(handle, SlideHandle):
            mpp_info = mpp_from(handle.mpp_found, path=p, override=mpp, override_source=mpp_source)
        else:
            mpp_info = resolve_mpp(props, path=p, override=mpp, override_source=mpp_source)
    except BaseException:
        handle.close()
        raise
    return Slide(path=p, handle=handle, mpp_info=mpp_info, properties=props, reader=name)


def find_slides(inputs: Iterable[str | Path], *, recursive: bool = False, scenes: bool = True) -> list[Path]:
    """Expand files and folders into slide paths (folders: files with a slide extension).

    A path that does not exist is kept so the batch records it as failed; so is an entry of a
    folder with a slide extension that is not a readable file (a dangling symbolic link, a named
    pipe): it is listed as failed with its reason, never skipped. A folder with no slides is an
    error naming the extensions looked for. With `scenes`, a file of several scenes (a CZI) gives
    one slide path per scene (`pathkit_core.wsi.scenes`); without, the file stays whole.
    """
    out: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir() and p.suffix.lower() not in FOLDER_SLIDE_EXTENSIONS:
            pattern = "**/*" if recursive else "*"
            found = sorted(
                c for c in p.glob(pattern)
                if c.suffix.lower() in SLIDE_EXTENSIONS and not c.name.startswith(".")
                and (c.is_file() or c.is_symlink() or (c.exists() and not c.is_dir())
                     or (c.is_dir() and c.suffix.lower() in FOLDER_SLIDE_EXTENSIONS))
                and not _inside_folder_slide(c, p)
            )
            if not found:
                raise PathkitError(
                    f"{p}: no slides found in this folder (looked for {', '.join(SLIDE_EXTENSIONS)}"
                    f"{', recursively' if recursive else ''})"
                )
            out.extend(found)
        else:
            out.append(p)
    from pathkit_core.wsi.reader_choice import expand_scenes

    # a file of several scenes (a CZI) is one slide per scene (docs/formats.md, "Scenes")
    return [s for p in out for s in (expand_scenes(p) if scenes and p.suffix.lower() in SCENE_EXTENSIONS else [p])]


def _inside_folder_slide(path: Path, top: Path) -> bool:
    """Whether `path` lies inside a folder slide below `top` (a chunk of an OME-Zarr store)."""
    return any(parent.suffix.lower() in FOLDER_SLIDE_EXTENSIONS for parent in path.relative_to(top).parents
               if parent != Path("."))


def check_unique_ids(paths: Sequence[Path]) -> dict[str, list[Path]]:
    """Slide ids shared by more than one path (their manifests would collide)."""
    seen: dict[str, list[Path]] = {}
    for p in paths:
        seen.setdefault(slide_id_for(p), []).append(p)
    return {k: v for k, v in seen.items() if len({os.path.realpath(x) for x in v}) > 1}
