"""Whole-image encoding: each patch image encoded as one image, for patch-level tasks (preprocessing,
image references and the shard store: docs/hepatobench.md, "Encoding"). A reference is a file path,
`"<archive>.zip::<member>"` (a member read in place) or `"<file>.h5::<key>/<index>"` (one (H, W, 3)
uint8 row of an HDF5 array, read lazily: PatchCamelyon).
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import Encoder, PathkitError
from pathkit_core.features.store import content_checksum
from pathkit_core.workspace import FileLock, atomic_path, content_hash

if TYPE_CHECKING:
    from pathkit_core.features.inference import EncoderRunner

SHARD_SIZE = 4096
# How long a run waits for another process encoding the same image shard (its lock has a heartbeat:
# a dead owner's lock is broken, not waited out).
SHARD_LOCK_TIMEOUT = 3600.0
ZIP_SEPARATOR = "::"
IMAGES_VERSION = 1
_INTERPOLATIONS = {"nearest": 0, "bilinear": 2, "bicubic": 3, "lanczos": 1}


def split_ref(ref: str | Path) -> tuple[Path, str | None]:
    """(file, zip member or None) of an image reference."""
    file, separator, member = str(ref).partition(ZIP_SEPARATOR)
    return Path(file), member if separator else None


def image_identity(ref: str | Path) -> list[Any]:
    """What changes when the image changes, without reading it: (path, member, size, mtime,
    inode, change time: a file replaced with its old time stamp restored still changes)."""
    path, member = split_ref(ref)
    try:
        st = path.stat()
    except OSError as exc:
        return [str(path), member, "missing", str(exc)]
    return [str(path), member, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


_ZIPS: dict[str, zipfile.ZipFile] = {}
H5_SUFFIXES = (".h5", ".hdf5")
# Open HDF5 files by (process, path): a handle is never shared across a fork (DataLoader workers).
_H5: dict[tuple[int, str], Any] = {}


def _read_h5_row(path: Path, member: str) -> Any:
    """Row `<index>` of array `<key>` (member `"<key>/<index>"`) as an RGB PIL image."""
    import os

    import h5py
    from PIL import Image

    key, _, index = member.rpartition("/")
    if not key or not index.isdigit():
        raise PathkitError(f"{path}::{member}: an HDF5 image reference is <file>.h5::<key>/<index>")
    handle = _H5.get((os.getpid(), str(path)))
    if handle is None:
        handle = _H5[(os.getpid(), str(path))] = h5py.File(path, "r")
    if key not in handle:
        raise PathkitError(f"{path}: has no array {key!r} (has: {', '.join(handle.keys())})")
    array = handle[key]
    row = int(index)
    if array.ndim != 4 or array.shape[-1] != 3 or row >= array.shape[0]:
        raise PathkitError(f"{path}::{member}: array {key!r} of shape {array.shape} has no RGB image {row}")
    return Image.fromarray(array[row].astype("uint8"))


def read_image(ref: str | Path) -> Any:
    """The RGB image of a reference as a PIL image; PathkitError naming the file when unreadable."""
    import io

    from PIL import Image, UnidentifiedImageError

    path, member = split_ref(ref)
    try:
        if member is not None and path.suffix.lower() in H5_SUFFIXES:
            return _read_h5_row(path, member)
        if member is None:
            data = path.read_bytes()
        else:
            archive = _ZIPS.get(str(path))
            if archive is None:
                archive = _ZIPS[str(path)] = zipfile.ZipFile(path)
            data = archive.read(member)
        if not data:
            raise PathkitError(f"{ref}: empty file (0 bytes)")
        with Image.open(io.BytesIO(data)) as img:
            return img.convert("RGB")
    except PathkitError:
        raise
    except (OSError, KeyError, zipfile.BadZipFile, UnidentifiedImageError, ValueError) as exc:
        raise PathkitError(f"{ref}: cannot be read as an image ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Preprocessing:
    """How a whole image becomes the encoder's input."""

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str
    resize: int | None = None  # shorter side before a centre crop to `size`; None: resize whole to `size`

    @classmethod
    def of(cls, encoder: Encoder) -> Preprocessing:
        weights = encoder.weights
        size = int(weights.input_size if weights else encoder.tile_spec.tile_px)
        mean = tuple(weights.mean) if weights else (0.485, 0.456, 0.406)
        std = tuple(weights.std) if weights else (0.229, 0.224, 0.225)
        interpolation = encoder.interpolation
        if interpolation not in _INTERPOLATIONS:
            raise PathkitError(f"encoder {encoder.name!r}: interpolation {interpolation!r} is not one of "
                               f"{', '.join(sorted(_INTERPOLATIONS))}")
        resize_px, crop_px = encoder.resize_px, encoder.crop_px
        resize = int(resize_px) if crop_px is not None and resize_px is not None and resize_px != crop_px else None
        return cls(size, mean, std, interpolation, resize)  # type: ignore[arg-type]

    def key(self) -> dict[str, Any]:
        """What identifies the preprocessing in a shard key (`resize` only when it crops, so the
        shards of the encoders that resize whole keep their keys)."""
        return {k: v for k, v in vars(self).items() if not (k == "resize" and v is None)}

    def apply(self, img: Any) -> Any:
        """A PIL image at `size` x `size`: resized whole, or (`resize`) the shorter side resized
        and the centre cropped, as torchvision's Resize(int) + CenterCrop do."""
        mode = _INTERPOLATIONS[self.interpolation]
        if self.resize is None:
            return img if img.size == (self.size, self.size) else img.resize((self.size, self.size), resample=mode)
        width, height = img.size
        short = min(width, height)
        if short != self.resize:  # torchvision: the long side is int(resize * long / short)
            scaled = (self.resize, int(self.resize * height / width)) if width <= height else \
                (int(self.resize * width / height), self.resize)
            img = img.resize(scaled, resample=mode)
        width, height = img.size
        top = int(round((height - self.size) / 2.0))
        left = int(round((width - self.size) / 2.0))
        return img.crop((left, top, left + self.size, top + self.size))


class _Images:
    """A torch map-style dataset: (index, uint8 (S, S, 3) array or None, error text)."""

    def __init__(self, refs: Sequence[str], prep: Preprocessing) -> None:
        self.refs = list(refs)
        self.prep = prep

    def __len__(self) -> int:
        return len(self.refs)

    def __getitem__(self, index: int) -> tuple[int, Any, str]:
        import numpy as np

        try:
            img = read_image(self.refs[index])
        except PathkitError as exc:
            return index, None, str(exc)
        return index, np.asarray(self.prep.apply(img), dtype=np.uint8), ""


@dataclass
class ImageFeatureRow:
    """One image's feature vector: row `index` of shard `path` (loaded once per process)."""

    path: Path
    index: int
    digest: str
    weights_sha256: str = ""

    def vector(self) -> Any:
        return load_shard(self.path)["features"][self.index]


@dataclass
class ImageEncoding:
    rows: dict[str, ImageFeatureRow] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    encoded: int = 0  # images encoded by this call (the rest came from the store)


_SHARDS: dict[tuple[str, int], dict[str, Any]] = {}


def load_shard(path: Path) -> dict[str, Any]:
    """A shard's features and metadata, checksum verified, cached per process by (path, mtime)."""
    from safetensors import SafetensorError, safe_open

    key = (str(path), path.stat().st_mtime_ns)
    if key not in _SHARDS:
        try:
            with safe_open(str(path), framework="pt") as fh:
                meta = dict(fh.metadata() or {})
                feats = fh.get_tensor("features")
        except (OSError, SafetensorError) as exc:
            raise PathkitError(f"image-feature shard {path} cannot be read: {exc}") from None
        if content_checksum(feats, None, meta) != meta.get("content_sha256"):
            raise PathkitError(f"image-feature shard {path} fails its checksum: the file is damaged")
        _SHARDS[key] = {"features": feats, "meta": meta, "ids": json.loads(meta["ids"]),
                        "failed": json.loads(meta.get("failed", "{}"))}
    return _SHARDS[key]


def _write_shard(path: Path, features: Any, meta: dict[str, str]) -> None:
    from safetensors.torch import save_file

    meta = dict(meta)
    meta["content_sha256"] = content_checksum(features, None, meta)
    with atomic_path(path) as tmp:
        save_file({"features": features.contiguous()}, str(tmp), metadata=meta)


def _usable_shard(path: Path, key: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        shard = load_shard(path)
    except PathkitError:
        return None  # damaged: encoded again
    return shard if shard["meta"].get("shard_key") == key else None


def encode_images(
    encoder: Encoder,
    images: Sequence[tuple[str, str | Path]],
    out_dir: str | Path,
    *,
    weights_path: str | Path | None = None,
    batch_size: int = 64,
    workers: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    progress: bool = True,
    allow_download: bool | None = None,
    code_key: str | None = None,
) -> ImageEncoding:
    """Encode `(case_id, image reference)` pairs into `<out_dir>/<encoder>/`; resumable by shard.

    Unreadable or empty images are recorded with their reason (in the result and the shard) and
    never reach the encoder; the rest of the batch goes on. `code_key`, when given, names the
    encoding code (`pathkit run` passes a digest of its sources): shards made by other code are
    encoded again.
    """
    from pathkit_core.features import extract
    from pathkit_core.features.inference import EncoderRunner, compute_dtype

    enc = extract.resolve_encoder(encoder)
    ids = [str(i) for i, _ in images]
    if len(set(ids)) != len(ids):
        raise PathkitError("encode_images: a case id is given twice")
    order = sorted(range(len(images)), key=lambda k: ids[k])
    prep = Preprocessing.of(enc)
    resolved, weights_id = extract._weights_identity(enc, weights_path, allow_download)
    arch = enc.architecture_label()
    folder = Path(out_dir) / enc.name
    result = ImageEncoding()
    todo: list[tuple[Path, str, list[int]]] = []
    for start in range(0, len(order), SHARD_SIZE):
        chunk = order[start:start + SHARD_SIZE]
        key = content_hash({"version": IMAGES_VERSION, "weights": weights_id, "arch": arch, "prep": prep.key(),
                            **({"code": code_key} if code_key is not None else {}),
                            "images": [[ids[k], image_identity(images[k][1])] for k in chunk]}, length=32)
        path = folder / f"shard-{key[:16]}.safetensors"
        shard = _usable_shard(path, key)
        if shard is None:
            todo.append((path, key, chunk))
        else:
            _collect(result, path, shard, weights_id)
    if todo:
        dev = extract._pick_device(device, None)
        runner = EncoderRunner(enc, extract._load_model(enc, dev, resolved, allow_download), dev,
                               precision=compute_dtype(enc, dev, dtype))
        total = sum(len(chunk) for _, _, chunk in todo)
        with extract._progress_bar(progress and total > 0, total, f"{enc.name} (images)") as bar:
            for path, key, chunk in todo:
                # One writer per shard: a process sharing the workspace (a suite's other shard) that
                # encodes the same images is waited for and its shard reused. Two writers would each
                # leave a shard of another checksum (its metadata holds the time it was written), so
                # the run keyed by the first would find different inputs on its next run.
                path.parent.mkdir(parents=True, exist_ok=True)
                with FileLock(path.with_name(f".{path.name}.lock"), timeout=SHARD_LOCK_TIMEOUT):
                    shard = _usable_shard(path, key)
                    if shard is not None:
                        _collect(result, path, shard, weights_id)
                        bar.advance(len(chunk))
                        continue
                    feats, kept, failed = _encode(runner, [str(images[k][1]) for k in chunk], prep, batch_size,
                                                  extract.default_workers(dev) if workers is None else workers, bar)
                    meta = {"format": "pathkit-image-features", "encoder": enc.name, "architecture": arch,
                            "weights_sha256": weights_id, "shard_key": key,
                            "preprocessing": json.dumps(prep.key()),
                            "ids": json.dumps([ids[chunk[i]] for i in kept]),
                            "failed": json.dumps({ids[chunk[i]]: why for i, why in failed.items()}),
                            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
                    _write_shard(path, feats, meta)
                _collect(result, path, load_shard(path), weights_id)
                result.encoded += len(kept)
    return result


def _collect(result: ImageEncoding, path: Path, shard: dict[str, Any], weights_id: str) -> None:
    digest = shard["meta"]["content_sha256"]
    for index, case_id in enumerate(shard["ids"]):
        result.rows[case_id] = ImageFeatureRow(path, index, f"{digest}:{index}", weights_id)
    result.failed.update(shard["failed"])


def _encode(runner: EncoderRunner, refs: list[str], prep: Preprocessing, batch_size: int, workers: int,
            bar: Any) -> tuple[Any, list[int], dict[int, str]]:
    """(float16 features of the readable images, their indices in `refs`, why the others were not read)."""
    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    from pathkit_core.features.extract import _identity

    loader = DataLoader(_Images(refs, prep), batch_size=batch_size, num_workers=workers, collate_fn=_identity)
    # the image at the input size (`Preprocessing.apply`), normalised with the encoder's mean
    # and std: a float batch, which the runner hands to the model as it is
    scale = (1.0 / (255.0 * torch.tensor(prep.std))).view(1, 3, 1, 1)
    shift = (torch.tensor(prep.mean) / torch.tensor(prep.std)).view(1, 3, 1, 1)

    def pixels(batch: list[tuple[int, Any, str]]) -> Any:
        good = [arr for _, arr, _ in batch if arr is not None]
        if not good:
            return None
        x = torch.from_numpy(np.stack(good)).permute(0, 3, 1, 2).float()
        return (x * scale - shift).contiguous()

    outputs, kept, failed = [], [], {}
    for batch, features in runner.stream(loader, pixels=pixels):
        failed.update({i: why for i, arr, why in batch if arr is None})
        bar.advance(len(batch))
        if features is not None:
            outputs.append(features.to(torch.float16))
            kept.extend(i for i, arr, _ in batch if arr is not None)
    dim = int(outputs[0].shape[1]) if outputs else int(runner.encoder.embed_dim)
    return (torch.cat(outputs) if outputs else torch.empty(0, dim, dtype=torch.float16)), kept, failed
