"""Feature interchange with CLAM, TRIDENT and STAMP h5 files: read, import into the store, export.

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
from pathkit_core.features.store import COORDS_LEVEL0_PX, FeatureFile

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
    dset = h5[name]
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


def slide_mpp(slide_path: str | Path) -> float:
    """Level-0 mpp of a slide, as the tiler resolves it (a slide without mpp is an error)."""
    from pathkit_core.wsi.slide import open_slide

    with open_slide(slide_path) as slide:
        return float(slide.mpp)


def import_h5(
    path: str | Path,
    out_dir: str | Path,
    encoder: str,
    *,
    slide_id: str | None = None,
    mpp: float | None = None,
    coords_unit: str | None = None,
    dtype: str = "float16",
    overwrite: bool = False,
) -> Path:
    """Import a CLAM/TRIDENT/STAMP h5 file into the store as `<out_dir>/<encoder>/<slide_id>.safetensors`.

    QC runs as for extracted features; a failing file is written, marked failed in its
    metadata and in the status record, and so excluded downstream with the reason.
    """
    from pathkit_core.features.qc import compute_qc
    from pathkit_core.features.store import feature_path, record_status, write_features
    from pathkit_core.workspace import sha256_file

    path = Path(path)
    loaded = read_h5_features(path, mpp=mpp, coords_unit=coords_unit)
    if loaded.coords is None:
        raise PathkitError(f"{path} has no coordinates; pathkit feature files need them")
    if loaded.coords_unit != COORDS_LEVEL0_PX:
        raise PathkitError(
            f"{path}: STAMP coordinates are in micrometres; give the slide's level-0 mpp "
            "(--mpp, or --slide to read it from the slide) to convert them to pixels"
        )
    _check_encoder_dim(encoder, loaded.embed_dim, path)
    sid = slide_id or loaded.slide_id
    target = feature_path(out_dir, encoder, sid)
    if target.exists() and not overwrite:
        raise PathkitError(f"{target} already exists; pass overwrite=True (--overwrite) to replace it")
    qc = compute_qc(loaded.features)
    source_sha = sha256_file(path)
    meta = {
        "slide_id": sid,
        "encoder": encoder,
        "source": f"import:{loaded.meta['source']}",
        "source_path": str(path),
        "source_sha256": source_sha,
        "source_attrs": loaded.meta.get("source_attrs", "{}"),
        "source_extractor": loaded.meta.get("source_extractor", ""),
        "mpp": loaded.meta.get("mpp", ""),
        "qc": qc.as_dict(),
        "status": qc.status,
        "failure_reason": qc.reason,
    }
    write_features(target, loaded.features, loaded.coords, meta, dtype=dtype)
    record_status(
        out_dir, encoder, sid, qc.status, qc.reason,
        n_tiles=qc.n_tiles, sha256=sha256_file(target), source=str(path), qc_flags=qc.flags,
    )
    return target


def _check_encoder_dim(encoder: str, dim: int, path: Path) -> None:
    """Features imported under a registered encoder's name must have its dimension."""
    from pathkit_core.plugins import UnknownComponentError, get_component

    try:
        cls = get_component("encoder", encoder)
    except UnknownComponentError:
        return
    expected = int(getattr(cls, "embed_dim", 0) or 0)
    if expected and expected != dim:
        raise PathkitError(
            f"{path}: {dim}-d features cannot be stored as encoder {encoder!r}, whose features are "
            f"{expected}-d (a different pooling or model); import them under another name, "
            f"e.g. {encoder}-{dim}d"
        )


def export_path(out_dir: str | Path, slide_id: str, source: str | Path) -> Path:
    """`<out_dir>/<slide_id>.h5`; the slide id comes from the file's metadata, so one that is not
    a plain name (`/etc/x`, `../x`) would write outside `out_dir` and is refused naming `source`."""
    from pathkit_core.features.store import check_slide_id

    try:
        check_slide_id(slide_id)
    except PathkitError as exc:
        raise PathkitError(f"{source}: metadata {exc}; nothing exported") from None
    return Path(out_dir) / f"{slide_id}.h5"


def export_trident_h5(source: str | Path | FeatureFile, out_path: str | Path) -> Path:
    """Write pathkit features as a TRIDENT-style h5: `features` float32 and `coords` int64
    (level-0 px) carrying TRIDENT's attributes, so TRIDENT/CLAM-based tools read it."""
    import h5py
    import numpy as np

    from pathkit_core.features.store import load_feature_file
    from pathkit_core.workspace import atomic_path

    ff = source if isinstance(source, FeatureFile) else load_feature_file(source)
    if ff.coords is None or ff.coords_unit != COORDS_LEVEL0_PX:
        raise PathkitError(f"{ff.path}: export needs level-0 pixel coordinates (have {ff.coords_unit})")
    meta = ff.meta
    attrs: dict[str, Any] = {"name": ff.slide_id, "overlap": 0, "encoder": ff.encoder or "unknown"}
    tile_px = _num(meta.get("tile_px"))
    target_mpp = _num(meta.get("target_mpp"))
    mpp = _num(meta.get("mpp"))
    if tile_px:
        attrs["patch_size"] = int(tile_px)
    if tile_px and target_mpp and mpp:
        attrs["patch_size_level0"] = int(round(tile_px * target_mpp / mpp))
    # TRIDENT's magnification convention: 10 / mpp (0.25 um/px = 40x, 0.5 um/px = 20x).
    if mpp:
        attrs["level0_magnification"] = round(10.0 / mpp, 3)
        attrs["mpp"] = float(mpp)
    if target_mpp:
        attrs["target_magnification"] = round(10.0 / target_mpp, 3)
    out = Path(out_path)
    with atomic_path(out) as tmp, h5py.File(tmp, "w") as h5:
        h5.create_dataset("features", data=ff.features.float().numpy())
        coords = h5.create_dataset("coords", data=ff.coords.numpy().astype(np.int64))
        for key, value in attrs.items():
            coords.attrs[key] = value
        h5.attrs["pathkit_source"] = str(ff.path)
    return out


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out > 0 else None
