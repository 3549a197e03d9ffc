"""Feature interchange with CLAM, TRIDENT and STAMP h5 files: import into the store and export
(reading them: `pathkit_interop.h5`; formats in docs/file-formats.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.features.record import COORDS_LEVEL0_PX, FeatureFile
from pathkit_interop.h5 import read_h5_features


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
    expected = int(cls.embed_dim)
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
