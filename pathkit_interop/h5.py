"""Reading CLAM, TRIDENT and STAMP h5 feature files into a `FeatureFile`.

Formats (docs/file-formats.md):

- CLAM / TRIDENT: datasets `features` (N, D) and `coords` (N, 2), coordinates in level-0
  pixels (top-left corner of each tile). TRIDENT puts `patch_size`, `patch_size_level0`,
  `level0_magnification`, `target_magnification`, `overlap` and `name` on `coords`; CLAM
  puts `patch_level`, `patch_size`, `downsample`, `level_dim`, `name` there.
- STAMP: datasets `feats` (N, D) and `coords` (N, 2); since STAMP 2 the file attribute
  `unit` is "um": coordinates are micrometres from the slide origin, which pathkit turns into
  level-0 pixels with the slide's mpp (`px = um / mpp`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.features.record import COORDS_LEVEL0_PX, FeatureFile

if TYPE_CHECKING:
    import numpy as np

# A STAMP micrometre coordinate may sit up to this many pixels off the integer grid after
# conversion (float32 storage and mpp rounding); more means the mpp is wrong.
_PX_TOLERANCE = 0.05


def _attr(value: Any) -> Any:
    """h5py attribute values as plain Python (bytes -> str, numpy scalars/arrays -> lists)."""
    import numpy as np

    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _attrs(obj: Any) -> dict[str, Any]:
    return {str(k): _attr(v) for k, v in obj.attrs.items()}


def _dataset(h5: Any, name: str, path: Path) -> Any:
    """Dataset `name` of an open h5 file, refused unless its data lives in the file itself: an
    external link, external raw storage or a virtual dataset would make pathkit read (and store
    as features) whatever other file it names, e.g. /etc/passwd."""
    import h5py

    link = h5.get(name, getlink=True)
    if isinstance(link, h5py.ExternalLink):
        raise PathkitError(f"{path}: dataset {name!r} is an external link to {link.filename}:{link.path}; "
                           "external links are refused (copy the data into the file)")
    try:
        dset = h5[name]
    except KeyError:  # a soft link to nothing (h5py lists it, but it opens no object)
        target = f" to {link.path}" if isinstance(link, h5py.SoftLink) else ""
        raise PathkitError(f"{path}: {name!r} is a dangling link{target}; the file is damaged") from None
    if not isinstance(dset, h5py.Dataset):
        raise PathkitError(f"{path}: {name!r} is a {type(dset).__name__}, not a dataset")
    if dset.external or dset.is_virtual:
        kind = "external raw storage" if dset.external else "a virtual dataset"
        raise PathkitError(f"{path}: dataset {name!r} is {kind} reading other files; refused "
                           "(copy the data into the file)")
    return dset


def h5_flavour(path: str | Path) -> str:
    """"trident" / "clam" (features + coords), "stamp" (feats), "coords-only", or raises."""
    import h5py

    from pathkit_core.workspace import check_regular_file

    path = check_regular_file(path, "h5 file")
    try:
        with h5py.File(path, "r") as h5:
            names = set(h5.keys())
            for name in names & {"features", "feats", "coords"}:
                _dataset(h5, name, path)
            coord_attrs = _attrs(h5["coords"]) if "coords" in h5 else {}
    except OSError as exc:
        raise PathkitError(f"{path} is not a readable HDF5 file: {exc}") from None
    if "features" in names:
        return "trident" if "patch_size_level0" in coord_attrs else "clam"
    if "feats" in names:
        return "stamp"
    if "coords" in names:
        return "coords-only"
    raise PathkitError(f"{path}: HDF5 file with neither 'features' nor 'feats' (datasets: {sorted(names)})")


def _squeeze_rows(arr: np.ndarray, name: str, path: Path) -> np.ndarray:
    # Some pipelines save a leading batch axis: (1, N, D).
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2:
        raise PathkitError(f"{path}: dataset {name!r} must be 2-D, got shape {arr.shape}")
    return arr


def read_h5_features(
    path: str | Path,
    *,
    mpp: float | None = None,
    coords_unit: str | None = None,
) -> FeatureFile:
    """Read a CLAM/TRIDENT or STAMP h5 file as a FeatureFile.

    Coordinates come back in level-0 pixels; STAMP micrometre coordinates are converted with
    `mpp` and kept in micrometres (`coords_unit` "um", float) when no mpp is given.
    `coords_unit` ("px" or "um") overrides what the file says (older STAMP files say nothing).
    """
    import h5py
    import numpy as np
    import torch

    path = Path(path)
    flavour = h5_flavour(path)
    if flavour == "coords-only":
        raise PathkitError(
            f"{path} holds tile coordinates only (a CLAM/TRIDENT patch file), no features"
        )
    with h5py.File(path, "r") as h5:
        root_attrs = _attrs(h5)
        feat_name = "features" if "features" in h5 else "feats"
        feats = _squeeze_rows(np.asarray(_dataset(h5, feat_name, path)[()]), feat_name, path)
        coord_attrs = _attrs(h5["coords"]) if "coords" in h5 else {}
        coords = (_squeeze_rows(np.asarray(_dataset(h5, "coords", path)[()]), "coords", path)
                  if "coords" in h5 else None)
    if not np.issubdtype(feats.dtype, np.floating):
        raise PathkitError(f"{path}: features are {feats.dtype}, expected floating point")
    if coords is not None and (coords.shape[0] != feats.shape[0] or coords.shape[1] < 2):
        raise PathkitError(
            f"{path}: coords of shape {coords.shape} do not match {feats.shape[0]} feature rows"
        )
    meta: dict[str, str] = {
        "source": flavour,
        "source_path": str(path),
        "source_attrs": json.dumps({"file": root_attrs, "coords": coord_attrs}, default=str),
    }
    name = coord_attrs.get("name") or root_attrs.get("name")
    meta["slide_id"] = str(name) if name else path.name.split(".")[0]
    if root_attrs.get("extractor"):
        meta["source_extractor"] = str(root_attrs["extractor"])

    coords_t = None
    if coords is not None:
        coords = coords[:, :2]
        unit = coords_unit or _file_unit(flavour, root_attrs)
        if unit == "um":
            if mpp is not None:
                coords_t = torch.from_numpy(_um_to_px(coords, mpp, path))
                meta["coords_unit"] = COORDS_LEVEL0_PX
                meta["mpp"] = repr(float(mpp))
            else:
                coords_t = torch.from_numpy(coords.astype(np.float32))
                meta["coords_unit"] = "um"
        elif unit == "px":
            coords_t = torch.from_numpy(_whole_pixels(coords, path))
            meta["coords_unit"] = COORDS_LEVEL0_PX
        else:
            raise PathkitError(
                f"{path}: the file does not say whether its coordinates are pixels or micrometres; "
                "pass coords_unit='px' or 'um' (CLI: --coords-unit)"
            )
    else:
        meta["coords_unit"] = "none"
    return FeatureFile(path=path, features=torch.from_numpy(np.ascontiguousarray(feats)), coords=coords_t, meta=meta)


def _file_unit(flavour: str, root_attrs: dict[str, Any]) -> str | None:
    if flavour in ("clam", "trident"):
        return "px"
    unit = str(root_attrs.get("unit", "")).strip().lower()
    if unit in ("um", "µm", "micrometer", "micrometre", "micron", "microns"):
        return "um"
    if unit in ("px", "pixel", "pixels"):
        return "px"
    return None


def _int32_pixels(values: np.ndarray, path: Path) -> np.ndarray:
    """Whole level-0 pixels as the store keeps them (int32), refused when outside 0..2^31-1:
    a cast alone would wrap 2^32 + 7 to 7."""
    import numpy as np

    if values.size:
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            raise PathkitError(f"{path}: coordinates hold NaN or infinite values")
        low, high = values.min(), values.max()
        if low < 0 or high > np.iinfo(np.int32).max:
            raise PathkitError(f"{path}: coordinates {low}..{high} are outside the level-0 pixel range "
                               f"0..{np.iinfo(np.int32).max} of pathkit feature files")
    return values.astype(np.int32)


def _whole_pixels(coords: np.ndarray, path: Path) -> np.ndarray:
    import numpy as np

    if np.issubdtype(coords.dtype, np.integer):
        return _int32_pixels(coords, path)
    if not np.isfinite(coords).all():
        raise PathkitError(f"{path}: coordinates hold NaN or infinite values")
    rounded = np.rint(coords)
    if np.abs(coords - rounded).max(initial=0.0) > _PX_TOLERANCE:
        raise PathkitError(f"{path}: pixel coordinates are not whole numbers; are they micrometres?")
    return _int32_pixels(rounded, path)


def _um_to_px(coords_um: np.ndarray, mpp: float, path: Path) -> np.ndarray:
    import numpy as np

    if not (mpp > 0):
        raise PathkitError(f"mpp must be positive, got {mpp}")
    px = coords_um.astype(np.float64) / float(mpp)
    if not np.isfinite(px).all():
        raise PathkitError(f"{path}: coordinates hold NaN or infinite values")
    rounded = np.rint(px)
    off = float(np.abs(px - rounded).max(initial=0.0))
    # Tile origins sit on a pixel grid; a large residue means the mpp is not the slide's.
    if off > max(_PX_TOLERANCE, 1e-6 * float(np.abs(px).max(initial=0.0))):
        raise PathkitError(
            f"{path}: micrometre coordinates / mpp {mpp} are up to {off:.2f} px off the pixel grid; "
            "is this the slide's level-0 mpp?"
        )
    if rounded.min(initial=0) < 0:
        raise PathkitError(f"{path}: negative coordinates after conversion")
    return _int32_pixels(rounded, path)
