"""The feature store: one checksummed safetensors file per slide and encoder (docs/file-formats.md,
"Feature files"), plus `<out_dir>/<encoder>/extraction_status.json`, which records per slide whether
extraction succeeded and why not, so downstream stages exclude failures with a reason.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.features.record import COORDS_LEVEL0_PX, FeatureFile
from pathkit_core.formats import check_version
from pathkit_core.status_log import append_events, compact, read_log, slide_events

if TYPE_CHECKING:
    import numpy as np
    import torch

# The feature file format and its version (the number after the slash; pathkit_core.formats).
FEATURE_VERSION = 1
FEATURE_FORMAT = f"pathkit-features/{FEATURE_VERSION}"
STATUS_FORMAT = "pathkit-extraction-status/1"
STATUS_FILE = "extraction_status.json"
FEATURE_SUFFIX = ".safetensors"
_SLIDE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-+ ]*$")
_CHECKSUM_KEY = "content_sha256"


# --------------------------------------------------------------------------- layout


def check_slide_id(slide_id: str) -> str:
    """Slide ids become file names: `contracts.slide_id_problem`, the rule `pathkit tile` applies too."""
    from pathkit_core.contracts import slide_id_problem

    problem = slide_id_problem(slide_id)
    if problem is None and slide_id.endswith(FEATURE_SUFFIX):
        problem = f"slide id {slide_id!r} ends in {FEATURE_SUFFIX}, which names the feature file itself"
    if problem:
        raise PathkitError(problem)
    return slide_id


def check_encoder_name(encoder: str) -> str:
    """Encoder names become folder names of the store: the rule of slide ids."""
    from pathkit_core.contracts import ID_MAX_BYTES

    if not isinstance(encoder, str) or not _SLIDE_ID.fullmatch(encoder) or len(encoder) > ID_MAX_BYTES:
        raise PathkitError(
            f"encoder name {encoder!r} cannot be used as a folder name "
            f"(letters, digits, '.', '_', '-', '+', spaces; no path separators, no leading dot; at most {ID_MAX_BYTES})"
        )
    return encoder


def encoder_dir(out_dir: str | Path, encoder: str) -> Path:
    return Path(out_dir) / check_encoder_name(encoder)


def feature_path(out_dir: str | Path, encoder: str, slide_id: str) -> Path:
    """Where the features of `slide_id` by `encoder` live: `<out_dir>/<encoder>/<slide_id>.safetensors`."""
    return encoder_dir(out_dir, encoder) / f"{check_slide_id(slide_id)}{FEATURE_SUFFIX}"


def status_path(out_dir: str | Path, encoder: str) -> Path:
    return encoder_dir(out_dir, encoder) / STATUS_FILE


def status_lock_path(out_dir: str | Path, encoder: str) -> Path:
    return encoder_dir(out_dir, encoder) / f"{STATUS_FILE}.lock"


# --------------------------------------------------------------------------- checksums


def _tensor_bytes(tensor: torch.Tensor) -> memoryview:
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy())


def _checksum_digest(metadata: Mapping[str, str]) -> Any:
    """The content checksum's sha256, fed its first part: every metadata entry but the checksum."""
    digest = hashlib.sha256()
    meta = {k: v for k, v in metadata.items() if k != _CHECKSUM_KEY}
    digest.update(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    return digest


def _tensor_header(name: str, dtype: Any, shape: tuple[int, ...]) -> bytes:
    """What the content checksum hashes before a tensor's bytes."""
    return f"|{name}|{dtype}|{tuple(shape)}|".encode()


def content_checksum(features: torch.Tensor, coords: torch.Tensor | None, metadata: Mapping[str, str]) -> str:
    """sha256 over the tensors (dtype, shape, bytes) and every metadata entry but the checksum."""
    digest = _checksum_digest(metadata)
    for name, tensor in (("features", features), ("coords", coords)):
        if tensor is None:
            continue
        digest.update(_tensor_header(name, tensor.dtype, tuple(tensor.shape)))
        digest.update(_tensor_bytes(tensor))
    return digest.hexdigest()


def _meta_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


# --------------------------------------------------------------------------- reading and writing


def _as_tensor(value: Any) -> torch.Tensor:
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    return torch.from_numpy(np.ascontiguousarray(value))


def write_features(path: str | Path, features: torch.Tensor | np.ndarray, coords: torch.Tensor | np.ndarray,
                   metadata: Mapping[str, Any] | None = None, *, dtype: str | None = None) -> Path:
    """Write one slide's features atomically (temporary file, fsync, rename).

    `features` (N, D) keep their dtype unless `dtype` is given ("float16", "bfloat16",
    "float32"); `coords` (N, 2) are stored as int32 level-0 pixels. Metadata values are
    stored as strings (non-strings JSON-encoded); format, shapes and `content_sha256` are added.
    """
    import torch
    from safetensors.torch import save_file

    import pathkit_core
    from pathkit_core.workspace import atomic_path

    path = Path(path)
    feats = _as_tensor(features)
    if dtype is not None:
        feats = feats.to(_torch_dtype(dtype))
    if feats.ndim != 2:
        raise PathkitError(f"{path}: features must be a 2-D (tiles x dim) array, got shape {tuple(feats.shape)}")
    if not feats.is_floating_point():
        raise PathkitError(f"{path}: features must be floating point, got {feats.dtype}")
    coord = _as_tensor(coords)
    if coord.ndim != 2 or coord.shape[1] != 2 or coord.shape[0] != feats.shape[0]:
        raise PathkitError(
            f"{path}: coords must be (N, 2) with N = {feats.shape[0]} feature rows, got {tuple(coord.shape)}"
        )
    if coord.is_floating_point():
        rounded = coord.round()
        if not torch.equal(rounded, coord):
            raise PathkitError(f"{path}: coords must be whole level-0 pixels")
        coord = rounded
    if coord.numel() and (coord.min() < 0 or coord.max() > torch.iinfo(torch.int32).max):
        raise PathkitError(f"{path}: coords outside the int32 level-0 pixel range")
    coord = coord.to(torch.int32).contiguous()
    feats = feats.contiguous()

    meta = {str(k): _meta_string(v) for k, v in (metadata or {}).items()}
    meta.update(
        format=FEATURE_FORMAT,
        n_tiles=str(int(feats.shape[0])),
        embed_dim=str(int(feats.shape[1])),
        features_dtype=str(feats.dtype).replace("torch.", ""),
        coords_unit=COORDS_LEVEL0_PX,
    )
    meta.setdefault("pathkit_version", pathkit_core.__version__)
    meta.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    meta[_CHECKSUM_KEY] = content_checksum(feats, coord, meta)
    with atomic_path(path) as tmp:
        save_file({"features": feats, "coords": coord}, str(tmp), metadata=meta)
    return path


def _torch_dtype(name: str) -> torch.dtype:
    import torch

    table = {
        "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
        "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
        "float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
    }
    if name not in table:
        raise PathkitError(f"unknown feature dtype {name!r}; use float16, bfloat16 or float32")
    return table[name]


def read_feature_meta(path: str | Path) -> dict[str, str]:
    """Only the metadata of a feature file (reads the header, not the tensors)."""
    from safetensors import SafetensorError, safe_open

    from pathkit_core.contracts import regular_file_problem

    path = Path(path)
    problem = regular_file_problem(path)  # a named pipe would block the read
    if problem:
        raise PathkitError(f"feature file {path} {problem[1]}")
    try:
        # numpy, not torch: reading a header must not cost a torch import (`pathkit status`)
        with safe_open(str(path), framework="numpy") as fh:
            meta = dict(fh.metadata() or {})
    except (SafetensorError, OSError, ValueError) as exc:
        raise PathkitError(f"feature file {path} is unreadable (truncated or not safetensors): {exc}") from None
    found = str(meta.get("format", ""))
    if found != FEATURE_FORMAT:
        name, _, version = found.partition("/")
        if name != FEATURE_FORMAT.partition("/")[0]:
            raise PathkitError(f"{path} is not a pathkit feature file (format {meta.get('format')!r})")
        check_version(version, what="feature file", path=path, current=FEATURE_VERSION,
                      redo=f"pathkit extract --manifests TILES_DIR --encoder {meta.get('encoder') or 'ENCODER'} "
                           "--out NEW_FOLDER")
    return meta


@functools.lru_cache(maxsize=100_000)
def _meta_of_version(path: str, size: int, mtime_ns: int) -> dict[str, str]:
    return read_feature_meta(path)


def read_feature_meta_cached(path: str | Path) -> dict[str, str]:
    """`read_feature_meta`, read once per version of the file (its path, size and modification
    time): a run asks each header for its checksum, its weights, its QC. Errors are not kept."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return read_feature_meta(path)  # its error names the file
    return dict(_meta_of_version(str(path.resolve()), st.st_size, st.st_mtime_ns))


def read_features(path: str | Path, *, verify: bool = True) -> FeatureFile:
    """Read a pathkit feature file; with `verify`, its checksum and shapes are checked.

    Raises PathkitError naming the file when it is truncated, edited or inconsistent.
    """
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    meta = read_feature_meta(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            feats, coords = _checked_tensors(fh, path, meta, against_meta=verify)
            feats = feats[:]
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise PathkitError(f"feature file {path} is unreadable (truncated or corrupt): {exc}") from None
    if verify:
        expected = meta.get(_CHECKSUM_KEY)
        if not expected:
            raise PathkitError(f"feature file {path} has no {_CHECKSUM_KEY}; it was not written by pathkit")
        actual = content_checksum(feats, coords, meta)
        if actual != expected:
            raise PathkitError(
                f"feature file {path} fails its checksum (stored {expected[:12]}..., computed "
                f"{actual[:12]}...): the file was edited or damaged; re-extract it"
            )
    return FeatureFile(path=path, features=feats, coords=coords, meta=meta)


def _checked_tensors(fh: Any, path: Path, meta: Mapping[str, str], *, against_meta: bool) -> tuple[Any, Any]:
    """(the features as a safetensors slice, the coords) of an open file whose tensors are (N, D) and
    (N, 2), and with `against_meta` N x D as its metadata says."""
    names = set(fh.keys())
    if not {"features", "coords"} <= names:
        raise PathkitError(f"feature file {path} lacks tensor(s) {sorted({'features', 'coords'} - names)}")
    feats, coords = fh.get_slice("features"), fh.get_tensor("coords")
    shape = tuple(feats.get_shape())
    said = (meta.get("n_tiles"), meta.get("embed_dim"))
    if len(shape) != 2 or tuple(coords.shape) != (shape[0], 2) or (against_meta and tuple(map(str, shape)) != said):
        raise PathkitError(f"feature file {path}: inconsistent shapes features {shape}, coords {tuple(coords.shape)}, "
                           f"metadata {said[0]} x {said[1]}")
    return feats, coords


def iter_feature_rows(path: str | Path, rows: int = 4096) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """A pathkit feature file in chunks of `rows` (features, coords), so that memory holds one
    chunk, not the slide; its checksum is verified as the chunks go by and a mismatch raises after
    the last one (a caller keeps nothing it built from the rows until the iteration ends)."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if path.suffix.lower() != FEATURE_SUFFIX:
        loaded = load_feature_file(path)
        coords = loaded.coords
        if coords is None:
            raise PathkitError(f"feature file {path} carries no level-0 coordinates")
        for start in range(0, loaded.n_tiles, rows):
            yield loaded.features[start:start + rows], coords[start:start + rows]
        return
    meta = read_feature_meta(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            feats, coords = _checked_tensors(fh, path, meta, against_meta=True)  # coords: 8 bytes a tile
            n, dim = feats.get_shape()
            digest = _checksum_digest(meta)  # the checksum of `content_checksum`, a chunk at a time
            for start in range(0, max(n, 1), rows):
                chunk = feats[start:start + rows]
                if start == 0:
                    digest.update(_tensor_header("features", chunk.dtype, (n, dim)))
                digest.update(_tensor_bytes(chunk))
                if len(chunk):
                    yield chunk, coords[start:start + rows]
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise PathkitError(f"feature file {path} is unreadable (truncated or corrupt): {exc}") from None
    digest.update(_tensor_header("coords", coords.dtype, tuple(coords.shape)))
    digest.update(_tensor_bytes(coords))
    if digest.hexdigest() != meta.get(_CHECKSUM_KEY):
        raise PathkitError(f"feature file {path} fails its checksum: the file was edited or damaged; re-extract it")


# --------------------------------------------------------------------------- status record


def read_status_file(out_dir: str | Path, encoder: str) -> dict[str, Any]:
    """Records and plan in one parse of the folded status file (`pathkit_core.status_log`):
    {"slides": {id: record}, "planned": {id: ...}, ...header}."""
    path = status_path(out_dir, encoder)
    try:
        log = read_log(path, "extraction status")
    except PathkitError as exc:
        raise PathkitError(f"extraction status {path} is unreadable: {exc}") from None
    if log.lines and not log.header and not log.slides and not log.planned:
        raise PathkitError(f"extraction status {path} is not a {STATUS_FORMAT} record")
    found = str(log.header.get("format", STATUS_FORMAT))
    if found.startswith("pathkit-extraction-status/"):  # the number after the slash (pathkit_core.formats)
        check_version(found.rpartition("/")[2], what="extraction status", path=path, current=1,
                      redo="pathkit extract ... --out NEW_FOLDER")
    return {**log.header, "slides": log.slides, "planned": log.planned}


def read_status(out_dir: str | Path, encoder: str) -> dict[str, dict[str, Any]]:
    """Per-slide extraction records ({} when none was written yet)."""
    return read_status_file(out_dir, encoder)["slides"]


def read_planned(out_dir: str | Path, encoder: str) -> dict[str, dict[str, Any]]:
    """The slides some `extract` process was asked for (slide id -> {"manifest": path}), so
    that slides no process has reached yet show as pending (`pathkit status`)."""
    return read_status_file(out_dir, encoder)["planned"]


def record_planned(out_dir: str | Path, encoder: str, planned: Mapping[str, Mapping[str, Any]]) -> None:
    """Add slides to the planned set (every shard adds the whole list it was given): one line
    with the slides not planned yet; a long status file is compacted first."""
    if not planned:
        return
    for sid in planned:
        check_slide_id(sid)
    path = status_path(out_dir, encoder)
    current = compact(path, status_lock_path(out_dir, encoder), _header(encoder), "extraction status").planned
    new = {sid: dict(rec) for sid, rec in planned.items() if current.get(sid) != dict(rec)}
    if new:
        _append(out_dir, encoder, [{"planned": new}])


def _header(encoder: str) -> dict[str, str]:
    return {"format": STATUS_FORMAT, "encoder": encoder}


def _append(out_dir: str | Path, encoder: str, events: list[dict[str, Any]]) -> None:
    append_events(status_path(out_dir, encoder), status_lock_path(out_dir, encoder), _header(encoder), events)


def status_record(status: str, reason: str = "", **facts: Any) -> dict[str, Any]:
    """One slide's entry in the status record."""
    if status not in ("ok", "failed"):
        raise ValueError(f"status must be 'ok' or 'failed', not {status!r}")
    return {"status": status, "reason": reason, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **facts}


def record_statuses(out_dir: str | Path, encoder: str, records: Mapping[str, Mapping[str, Any]]) -> None:
    """Append several slides' records to the status file (one line each, one write), under
    its lock, so that several processes sharing the folder never lose each other's records."""
    if not records:
        return
    for sid in records:
        check_slide_id(sid)
    encoder_dir(out_dir, encoder).mkdir(parents=True, exist_ok=True)
    _append(out_dir, encoder, slide_events(records))


def record_status(out_dir: str | Path, encoder: str, slide_id: str, status: str, reason: str = "",
                  **facts: Any) -> None:
    """Add or replace the record of one slide (status "ok" or "failed")."""
    record_statuses(out_dir, encoder, {slide_id: status_record(status, reason, **facts)})


def failed_slides(out_dir: str | Path, encoder: str) -> dict[str, str]:
    """slide id -> reason, for every slide whose extraction failed or whose file is unusable."""
    failed = {
        sid: str(rec.get("reason") or "failed")
        for sid, rec in read_status(out_dir, encoder).items()
        if rec.get("status") == "failed"
    }
    for sid, path in _stored_files(out_dir, encoder, failed):
        try:
            meta = read_feature_meta(path)
        except PathkitError as exc:
            failed[sid] = str(exc)
            continue
        if meta.get("status") == "failed":
            failed[sid] = meta.get("failure_reason") or "failed QC"
    return failed


def _stored_files(out_dir: str | Path, encoder: str, leave_out: Mapping[str, Any]) -> list[tuple[str, Path]]:
    """(slide id, feature file) of the folder's files, in name order, but for the slides of `leave_out`."""
    folder = encoder_dir(out_dir, encoder)
    files = sorted(folder.glob(f"*{FEATURE_SUFFIX}")) if folder.is_dir() else []
    return [(sid, p) for p in files if (sid := p.name[: -len(FEATURE_SUFFIX)]) not in leave_out]


def usable_feature_files(out_dir: str | Path, encoder: str, *, verify: bool = False,
                         failed: Mapping[str, str] | None = None) -> dict[str, Path]:
    """slide id -> feature file, excluding failed slides (fail-closed).

    A file is usable when its header reads, it is a pathkit feature file, neither its status
    record nor its own metadata marks it failed. With `verify`, every file is also fully read
    and checksummed (slower; `pathkit qc` does this). `failed`: what `failed_slides` just
    returned for this folder, so that it is not scanned twice.
    """
    if not encoder_dir(out_dir, encoder).is_dir():
        return {}
    failed = failed_slides(out_dir, encoder) if failed is None else failed
    usable: dict[str, Path] = {}
    for sid, path in _stored_files(out_dir, encoder, failed):
        if verify:
            try:
                read_features(path, verify=True)
            except PathkitError:
                continue
        usable[sid] = path
    return usable


# --------------------------------------------------------------------------- any feature file


def load_feature_file(path: str | Path, *, verify: bool = True, mpp: float | None = None) -> FeatureFile:
    """Features from any supported file: pathkit safetensors here; other formats through the
    `read_feature_file` hook (the interop package reads CLAM/TRIDENT/STAMP h5 and GOLDMARK-style
    torch files).

    `mpp` (level-0 micrometres per pixel) converts STAMP micrometre coordinates to pixels.
    """
    path = Path(path)
    if not path.is_file():
        raise PathkitError(f"feature file {path} does not exist")
    if path.suffix.lower() == FEATURE_SUFFIX:
        return read_features(path, verify=verify)
    from pathkit_core.plugins import get_plugin_manager

    ff = get_plugin_manager().pm.hook.read_feature_file(path=path, mpp=mpp)
    if ff is None:
        raise PathkitError(f"{path}: unknown feature file type {path.suffix.lower()!r} (expected {FEATURE_SUFFIX} "
                           "or a type an installed plugin reads: .h5, .hdf5, .pt, .pth with pathkit's own)")
    if ff.coords is not None and ff.coords_unit != COORDS_LEVEL0_PX:
        # `coords` promise level-0 pixels; micrometres without an mpp cannot keep that promise.
        ff.coords = None
        ff.meta["coords_unit"] = "none"
        ff.meta["note"] = "micrometre coordinates left out: pass mpp= to convert them to pixels"
    return ff


__all__ = [
    "FEATURE_VERSION", "FEATURE_FORMAT", "STATUS_FORMAT", "STATUS_FILE", "FEATURE_SUFFIX", "check_slide_id",
    "check_encoder_name", "encoder_dir", "feature_path", "status_path", "status_lock_path", "content_checksum",
    "write_features", "read_feature_meta", "read_feature_meta_cached", "read_features", "iter_feature_rows",
    "read_status", "read_planned", "record_planned", "status_record", "record_statuses", "record_status",
    "failed_slides", "usable_feature_files", "load_feature_file"
]
