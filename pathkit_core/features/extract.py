"""The extraction engine: tiles of tile manifests through an encoder into the feature store.

Streaming, resume, integrity and sharding: docs/encoders.md, "Extraction"; each slide is computed
identically whatever the number of processes, so the store is the same as from one process.
"""

from __future__ import annotations

import bisect
import itertools
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import Encoder, PathkitError
from pathkit_core.distributed import close_process_group_at_exit
from pathkit_core.features import store
from pathkit_core.features.inference import EncoderRunner, Preprocess, compute_dtype
from pathkit_core.shard import Shard
from pathkit_core.workspace import FileLock, LockTimeout, content_hash

if TYPE_CHECKING:
    import torch

    from pathkit_core.wsi.manifest import Manifest

DEFAULT_BATCH_SIZE = 64
_STATUS_FLUSH_SECONDS = 5.0


@dataclass
class ExtractResult:
    """What happened to one slide: ok, skipped (already extracted), failed, or locked
    (another live process is extracting it)."""

    slide_id: str
    status: str
    reason: str = ""
    n_tiles: int = 0
    path: Path | None = None
    seconds: float = 0.0
    qc: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- inputs


def resolve_encoder(encoder: str | type[Encoder] | Encoder) -> Encoder:
    """An encoder instance from a registry name, a class or an instance."""
    if isinstance(encoder, Encoder):
        return encoder
    if isinstance(encoder, type) and issubclass(encoder, Encoder):
        return encoder()
    if isinstance(encoder, str):
        from pathkit_core.plugins import get_component

        return get_component("encoder", encoder)()  # type: ignore[return-value]
    raise PathkitError(f"not an encoder: {encoder!r}")


def manifest_paths(manifests: str | Path | Iterable[str | Path | Manifest]) -> list[Any]:
    """Manifest paths (or Manifest objects) from a folder of `<slide_id>.parquet` or a list."""
    if isinstance(manifests, (str, Path)):
        root = Path(manifests)
        if root.is_dir():
            found = sorted(root.glob("*.parquet"))
            if not found:
                raise PathkitError(f"{root}: no tile manifests (*.parquet) in this folder")
            return list(found)
        return [root]
    return list(manifests)


def _load_unique_manifests(manifests: str | Path | Iterable[str | Path | Manifest]) -> list[Manifest]:
    """The manifests, loaded and sorted by slide id; a slide id in two of them is refused."""
    from pathkit_core.wsi.manifest import Manifest, read_manifest

    loaded = sorted((m if isinstance(m, Manifest) else read_manifest(m) for m in manifest_paths(manifests)),
                    key=lambda m: m.slide_id)
    seen: dict[str, Any] = {}
    for m in loaded:
        if m.slide_id in seen:
            raise PathkitError(f"slide id {m.slide_id!r} appears in two manifests ({seen[m.slide_id]} and {m.path})")
        seen[m.slide_id] = m.path
    return loaded


def _manifest_sha256(manifest: Manifest) -> str:
    if manifest.path is not None:
        return manifest.file_sha256()
    # An in-memory manifest: hash what defines it.
    return content_hash({"meta": manifest.meta, "coords": manifest.coords().tolist()}, length=64)


def distributed_state(device: str | None = None) -> Any:
    """The Accelerate state of a multi-process launch (accelerate launch / torchrun), else None; gloo
    without CUDA or with --device cpu (docs/encoders.md, "Many processes")."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    from accelerate import PartialState

    on_cpu = not torch.cuda.is_available() or (device is not None and device.startswith("cpu"))
    state = PartialState(cpu=on_cpu)
    close_process_group_at_exit()
    return state


def _pick_device(device: str | None, dist: Any) -> torch.device:
    import torch

    if dist is not None and device is None:
        return torch.device(dist.device)
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return parse_device(device)


def parse_device(device: str) -> torch.device:
    """`--device` as a torch device this machine has: cpu, cuda, cuda:N or mps; anything else
    (tpu, a typo, a GPU index past the last) is a one-line error."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise PathkitError(f"--device {device!r} is not a device; give auto, cpu, cuda, cuda:N or mps") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise PathkitError(f"--device {device!r}: {dev.type} devices are not supported; give auto, cpu, cuda, "
                           "cuda:N or mps")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise PathkitError(f"device {device!r} requested but CUDA is not available on this machine")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise PathkitError(f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise PathkitError(f"device {device!r} requested but MPS is not available on this machine")
    return dev


def default_workers(device: torch.device) -> int:
    """Tile-reading workers when none are asked for: up to 8 on a GPU, none on a CPU, where workers
    would take cores from the model (docs/encoders.md, "Extraction")."""
    if device.type == "cpu":
        return 0
    return max(1, min(8, (os.cpu_count() or 2) - 1))


def _weights_identity(encoder: Encoder, weights_path: str | Path | None,
                      allow_download: bool | None) -> tuple[Path | None, str]:
    """(checkpoint path, identity) known before loading, so resume needs no model."""
    from pathkit_core.features import weights as W

    if weights_path is None and not encoder.ships_checkpoint():
        return None, f"random-init:seed={encoder.random_init_seed}"
    if weights_path is None and encoder.weights is None:
        return None, "built-in"
    path = W.resolve_weights(type(encoder), weights_path, allow_download=allow_download)
    return path, W.file_sha256(path)


def _load_model(enc: Encoder, dev: torch.device, weights: Path | None, allow_download: bool | None) -> Any:
    """`enc.load`, passing `allow_download` only to encoders whose `load` takes it."""
    import inspect

    params = inspect.signature(enc.load).parameters
    takes = "allow_download" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
    if takes:
        return enc.load(str(dev), weights_path=weights, allow_download=allow_download)
    return enc.load(str(dev), weights_path=weights)


def _progress_bar(enabled: bool, total: int, label: str) -> Any:
    """Extraction's progress bar: tiles, with a tiles/s column (or nothing when disabled)."""
    from pathkit_core.progress import ProgressBar

    return ProgressBar(f"extract [bold]{label}[/]", total, "tiles", enabled=enabled, rate=True)


def tile_resampling(manifest: Manifest) -> str:
    """The reader's resampling filter when any tile of the manifest is resampled, else ''."""
    from pathkit_core.wsi.resample import RESAMPLING

    tiles = manifest.tiles
    if tiles.height == 0 or (tiles["read_px"] == tiles["tile_px"]).all():
        return ""
    return RESAMPLING


def _warn_tile_spec(enc: Encoder, manifests: Sequence[Manifest], rank: int) -> None:
    """Tiles at another field of view than the encoder's are allowed (one tiling for several
    encoders, as GOLDMARK does) but never silently: warn once and record it in the metadata."""
    spec = enc.tile_spec
    other = sorted({(m.tile_px, m.target_mpp) for m in manifests
                    if m.tile_px != spec.tile_px or abs(m.target_mpp - spec.mpp) > 1e-9})
    if other and rank == 0:
        shown = ", ".join(f"{px} px at {mpp:g} mpp" for px, mpp in other)
        warnings.warn(f"encoder {enc.name!r} expects {spec.tile_px} px tiles at {spec.mpp:g} mpp; the manifests "
                      f"have {shown} (tiles are resized to the encoder's input)", UserWarning, stacklevel=3)


def _slide_problem(manifest: Manifest) -> str:
    """Why the slide cannot be read as tiled ('' when fine). The content hash is recomputed only
    when size or modification time differ from what the manifest recorded (hashing every slide on
    every run would dominate small jobs)."""
    from pathkit_core.wsi.reader import TileReader
    from pathkit_core.wsi.scenes import slide_file

    try:
        reader = TileReader(manifest)
        try:
            st = slide_file(reader.slide_path).stat()  # the file that holds it, when the slide is one scene
        except OSError as exc:
            return f"{reader.slide_path}: {exc}"
        size, mtime = manifest.meta.get("slide_size"), manifest.meta.get("slide_mtime_ns")
        if size is None or mtime is None or int(size) != st.st_size or int(mtime) != st.st_mtime_ns:
            reader.verify_slide()
    except PathkitError as exc:
        return str(exc)
    return ""


# --------------------------------------------------------------------------- streaming


class _SlideTiles:
    """Map-style dataset over the tiles of several manifests, fetched a batch of one slide at a time
    (`__getitems__`) through the calling process's own reader, with the host half of the
    preprocessing (`Preprocess.host`); a read error comes back as data (the slide fails, the run
    goes on) instead of killing the loader."""

    def __init__(self, manifests: Sequence[Manifest], preprocess: Preprocess) -> None:
        from pathkit_core.wsi.reader import TileReader

        # Readers are built here, in the main process: workers then only index numpy arrays
        # (polars is not fork-safe) and open their own slide handle on first read.
        self.readers = [TileReader(m) for m in manifests]
        self.preprocess = preprocess
        self.offsets = [0]
        for r in self.readers:
            self.offsets.append(self.offsets[-1] + len(r))
        self._open_slide = -1

    def __len__(self) -> int:
        return self.offsets[-1]

    def batches(self, batch_size: int) -> list[list[int]]:
        """Index batches over the concatenated tiles; a batch never spans two slides."""
        return [list(range(start, min(start + batch_size, end))) for begin, end in itertools.pairwise(self.offsets)
                for start in range(begin, end, batch_size)]

    def __getitems__(self, indices: list[int]) -> dict[str, Any]:
        import torch

        slide = bisect.bisect_right(self.offsets, indices[0]) - 1
        rows = [i - self.offsets[slide] for i in indices]
        reader = self.readers[slide]
        try:
            if self._open_slide != slide:
                if self._open_slide >= 0:
                    self.readers[self._open_slide].close()  # one open slide per process
                self._open_slide = slide
            tiles = reader.read_batch(rows, resample=not self.preprocess.on_device)
            pixels = self.preprocess.host(tiles, reader.tile_px)
        except Exception as exc:  # noqa: BLE001 - any tile failure fails the slide, not the run
            reader.close()
            self._open_slide = -1
            return {"slide": slide, "rows": rows, "pixels": None, "tile_px": reader.tile_px,
                    "error": f"{type(exc).__name__}: {exc}"}
        return {"slide": slide, "rows": torch.as_tensor(rows), "pixels": pixels, "tile_px": reader.tile_px,
                "error": ""}

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.__getitems__([index])


def _identity(batch: Any) -> Any:
    return batch


def _worker_init(_worker_id: int) -> None:
    """Keep a long-running tile worker's memory flat: a fixed 1 MiB glibc mmap threshold returns its
    per-batch buffers on free instead of fragmenting the heap (docs/encoders.md, "Extraction").
    Other C libraries have no `mallopt` and are left alone."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return
    if libc is not None and hasattr(libc, "mallopt"):
        m_mmap_threshold = -3  # glibc's M_MMAP_THRESHOLD
        libc.mallopt(m_mmap_threshold, 1 << 20)


@dataclass
class _SlideJob:
    manifest: Manifest
    target: Path
    manifest_sha256: str
    resampling: str  # tile_resampling(manifest), worked out once
    key: str = ""  # the extraction key its file must record to be reused
    lock: FileLock | None = None
    buffer: Any = None
    filled: int = 0
    failed: str = ""
    started: float = 0.0


@dataclass
class _Extraction:
    """One call's encoder and store folder, the results so far and the status records not written yet."""

    enc: Encoder
    out_dir: Path
    feature_dtype: str
    weights_id: str
    model_label: str  # what the extraction key names as the model: its architecture, and the code when given
    results: list[ExtractResult] = field(default_factory=list)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    context: dict[str, str] = field(default_factory=dict)  # the metadata every feature file records

    def flush(self) -> None:
        store.record_statuses(self.out_dir, self.enc.name, self.pending)
        self.pending.clear()

    def prepare(self, manifest: Manifest, overwrite: bool, previous: dict[str, dict[str, Any]],
                read_at: float) -> _SlideJob | None:
        """A job for the slide, or None when it is up to date (skipped) or locked by another process."""
        from pathkit_core.workspace import remove_stale_temporaries

        sid = manifest.slide_id
        job = _SlideJob(manifest, store.feature_path(self.out_dir, self.enc.name, sid), _manifest_sha256(manifest),
                        tile_resampling(manifest))
        parts = {"manifest": job.manifest_sha256, "weights": self.weights_id, "architecture": self.model_label,
                 "dtype": self.feature_dtype}
        if job.resampling:  # features of resampled tiles depend on the filter; exact-resolution ones do not
            parts["resampling"] = job.resampling
        job.key = content_hash(parts, length=32)
        lock = FileLock(job.target.with_name(f".{job.target.name}.lock"), timeout=0.0)
        if not overwrite and self._skip(job, previous.get(sid)):
            lock.clear_stale()  # left by a process killed after writing the file
            return None
        try:
            lock.acquire()
        except LockTimeout as exc:
            self.results.append(ExtractResult(sid, "locked", str(exc), manifest.n_tiles, None))
            return None
        # Another process may have finished the slide between the look above and the lock: its
        # record is read again only then (a file newer than `previous`), not once per slide.
        if not overwrite and job.target.is_file():
            fresh = job.target.stat().st_mtime >= read_at
            if self._skip(job, store.read_status(self.out_dir, self.enc.name).get(sid) if fresh else previous.get(sid)):
                lock.release()
                return None
        # Temporaries of a writer killed mid-write; only the lock holder writes them.
        remove_stale_temporaries(job.target)
        remove_stale_temporaries(job.target.parent / "failed" / job.target.name)
        job.lock = lock
        return job

    def _skip(self, job: _SlideJob, record: dict[str, Any] | None) -> bool:
        """Whether the slide's file can be kept (then it is recorded as skipped): made with the same
        extraction key, not marked failed, and verified again now, its checksum (a flipped byte) and
        its QC recomputed from the tensors (a valid checksum proves only that nobody changed the file
        since it was written, not that what was written is usable)."""
        from pathkit_core.features.qc import stored_features_problem

        if not job.target.is_file() or (record or {}).get("status") == "failed":
            return False
        try:
            meta = store.read_feature_meta(job.target)
        except PathkitError as exc:
            warnings.warn(f"{exc}; re-extracting it", UserWarning, stacklevel=3)
            return False
        if meta.get("extraction_key") != job.key or meta.get("status") != "ok":
            return False
        problem = stored_features_problem(job.target, expected_tiles=job.manifest.n_tiles)
        if problem:
            warnings.warn(f"{job.target}: {problem}; re-extracting it", UserWarning, stacklevel=3)
            return False
        self.results.append(ExtractResult(job.manifest.slide_id, "skipped", "already extracted",
                                          int(meta.get("n_tiles", 0)), job.target))
        return True

    def runnable(self, job: _SlideJob, verify_slides: bool) -> bool:
        """Whether the slide is worth running: a changed slide (when verified) or an empty manifest is
        recorded as failed instead."""
        problem = _slide_problem(job.manifest) if verify_slides else None
        if not problem and job.manifest.n_tiles == 0:
            problem = "the tile manifest has no tiles (no tissue found)"
        if problem:
            self.fail(job, problem)
        return not problem

    def fail(self, job: _SlideJob, reason: str, qc: dict[str, Any] | None = None) -> None:
        m = job.manifest
        job.failed, job.buffer = reason, None
        seconds = time.monotonic() - job.started if job.started else 0.0
        self.results.append(ExtractResult(m.slide_id, "failed", reason, m.n_tiles, None, seconds, qc or {}))
        self.pending[m.slide_id] = store.status_record("failed", reason, n_tiles=m.n_tiles, manifest=str(m.path or ""),
                                                       qc=qc or {})
        self.flush()  # at once: a crash later must not lose why a slide was excluded
        if job.lock is not None:
            job.lock.release()

    def finish(self, job: _SlideJob) -> None:
        """QC the complete buffer and write the slide (canonical path if it passes, failed/ if not)."""
        import torch

        from pathkit_core.features.qc import compute_qc
        from pathkit_core.workspace import sha256_file

        m = job.manifest
        qc = compute_qc(job.buffer, expected_tiles=m.n_tiles)
        meta = {**self.context,
                "slide_id": m.slide_id,
                "slide_path": str(m.meta.get("slide_path", "")),
                "slide_sha256": str(m.meta.get("slide_sha256", "")),
                "slide_identity": str(m.meta.get("slide_identity", "")),
                "mpp": repr(float(m.meta["mpp"])) if m.meta.get("mpp") is not None else "",
                "target_mpp": repr(float(m.target_mpp)),
                "tile_px": str(m.tile_px),
                "tile_px_level0": str(m.meta.get("size0", "")),
                "params_hash": m.params_hash,
                "manifest_path": str(m.path or ""),
                "manifest_sha256": job.manifest_sha256,
                "encoder_tile_px": str(self.enc.tile_spec.tile_px),
                "encoder_mpp": repr(float(self.enc.tile_spec.mpp)),
                "tile_resampling": job.resampling,
                "extraction_key": job.key,
                "qc": qc.as_dict(),
                "status": qc.status,
                "failure_reason": qc.reason}
        coords = torch.from_numpy(m.coords())
        seconds = time.monotonic() - job.started
        failed_copy = job.target.parent / "failed" / job.target.name
        if qc.status != "ok":
            # Kept for inspection, away from where downstream stages look.
            store.write_features(failed_copy, job.buffer, coords, meta, dtype=self.feature_dtype)
            self.fail(job, qc.reason, qc=qc.as_dict())
            return
        store.write_features(job.target, job.buffer, coords, meta, dtype=self.feature_dtype)
        failed_copy.unlink(missing_ok=True)
        self.results.append(ExtractResult(m.slide_id, "ok", "", m.n_tiles, job.target, seconds, qc.as_dict()))
        self.pending[m.slide_id] = store.status_record(
            "ok", n_tiles=m.n_tiles, sha256=sha256_file(job.target), manifest=str(m.path or ""), qc_flags=qc.flags,
            seconds=round(seconds, 3))
        job.buffer = None
        if job.lock is not None:
            job.lock.release()

    def run(self, jobs: list[_SlideJob], runner: EncoderRunner, batch_size: int, workers: int, progress: bool) -> None:
        """Stream every job's tiles through the model, filling each slide's buffer; a slide is finished
        as soon as its last batch is in."""
        import torch
        from torch.utils.data import DataLoader

        dataset = _SlideTiles([j.manifest for j in jobs], runner.preprocess)
        extra: dict[str, Any] = {"prefetch_factor": 4, "persistent_workers": False} if workers > 0 else {}
        loader = DataLoader(dataset, batch_sampler=dataset.batches(batch_size), num_workers=workers,
                            collate_fn=_identity, worker_init_fn=_worker_init,
                            pin_memory=runner.device.type == "cuda", **extra)
        out_type = store._torch_dtype(self.feature_dtype)
        expected_dim = int(self.enc.feature_dim or 0)
        last_flush = time.monotonic()

        def pixels(batch: dict[str, Any]) -> Any:
            # Nothing to encode for a failed read, or for the rest of a slide that already failed.
            return None if batch["error"] or jobs[batch["slide"]].failed else batch["pixels"]

        with _progress_bar(progress, len(dataset), self.enc.name) as bar:
            for batch, out in runner.stream(loader, pixels=pixels, tile_px=lambda b: b["tile_px"]):
                job, n = jobs[batch["slide"]], len(batch["rows"])
                bar.advance(n)
                if job.failed:
                    continue
                job.started = job.started or time.monotonic()
                if batch["error"]:
                    self.fail(job, f"reading tiles failed: {batch['error']}")
                    continue
                if out.ndim != 2 or out.shape[0] != n or (expected_dim and out.shape[1] != expected_dim):
                    raise PathkitError(f"encoder {self.enc.name!r} returned shape {tuple(out.shape)} for a batch of "
                                       f"{n} tiles; expected ({n}, {expected_dim})")
                if job.buffer is None:
                    job.buffer = torch.empty(job.manifest.n_tiles, out.shape[1], dtype=out_type)
                # Rounding to the storage dtype here keeps one slide's buffer small; NaN and
                # overflow survive the cast, so QC still sees them.
                job.buffer[batch["rows"]] = out.to(job.buffer.dtype)
                job.filled += n
                if job.filled == job.manifest.n_tiles:
                    self.finish(job)
                if time.monotonic() - last_flush > _STATUS_FLUSH_SECONDS:
                    self.flush()
                    last_flush = time.monotonic()


def _file_context(enc: Encoder, arch: str, weights: Path | None, weights_id: str, precision: str,
                  dev: torch.device) -> dict[str, str]:
    """The metadata every feature file of this extraction records (model, weights, dtype, device)."""
    import torch

    return {"encoder": enc.name, "architecture": arch, "encoder_description": enc.description,
            "is_pathology_model": str(bool(enc.is_pathology_model)).lower(), "joint_space": str(enc.joint_space or ""),
            "weights_path": str(weights) if weights else "", "weights_sha256": weights_id,
            "compute_dtype": precision, "device": dev.type, "torch_version": torch.__version__}


# --------------------------------------------------------------------------- the engine


def extract_features(
    encoder: str | type[Encoder] | Encoder,
    manifests: str | Path | Iterable[str | Path | Manifest],
    out_dir: str | Path,
    *,
    weights_path: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    workers: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    feature_dtype: str = "float16",
    progress: bool = True,
    accelerator: Any = None,
    allow_download: bool | None = None,
    overwrite: bool = False,
    verify_slides: bool = True,
    compile: bool = False,  # noqa: A002 - torch's name
    shard: Shard | None = None,
    code_key: str | None = None,
) -> list[ExtractResult]:
    """Extract features for every manifest into `<out_dir>/<encoder>/<slide_id>.safetensors`, resumably,
    each failure recorded with its reason while the run goes on (docs/encoders.md, "Extraction" and
    "Integrity (fail-closed)"). `shard` (`pathkit_core.shard.current_shard`) picks this process's slides,
    a multi-process launch splits it further by rank; returns the results of this process's slides.
    `compile=True`: `torch.compile`, the eager model if that fails. `code_key` names the extraction code
    (`pathkit run` passes a digest of its sources and the encoder's): it joins each file's extraction
    key, so features made by other code are made again.
    """
    enc = resolve_encoder(encoder)
    if batch_size < 1:
        raise PathkitError(f"batch size must be >= 1, got {batch_size}")
    if workers is not None and workers < 0:
        raise PathkitError(f"workers must be >= 0, got {workers}")
    store._torch_dtype(feature_dtype)  # validates the name
    dist = accelerator if accelerator is not None else distributed_state(device)
    rank, world = (int(dist.process_index), int(dist.num_processes)) if dist is not None else (0, 1)
    dev = _pick_device(device, dist)
    precision = compute_dtype(enc, dev, dtype)
    out_dir = Path(out_dir)

    loaded = _load_unique_manifests(manifests)
    # Shards are by slide id, so processes that listed the slides differently still agree.
    mine = (shard or Shard()).within(rank, world).select(loaded, key=lambda m: m.slide_id)
    # Every process plans the whole list: slides of a shard not started yet show as pending.
    store.record_planned(out_dir, enc.name, {m.slide_id: {"manifest": str(m.path or "")} for m in loaded})
    _warn_tile_spec(enc, mine, rank)
    resolved_weights, weights_id = _weights_identity(enc, weights_path, allow_download)
    arch = enc.architecture_label()
    work = _Extraction(enc, out_dir, feature_dtype, weights_id, arch if code_key is None else f"{arch}|code:{code_key}")
    read_at = time.time() - 1.0  # mtime granularity and clock steps
    previous = store.read_status(out_dir, enc.name)
    FileLock(store.status_lock_path(out_dir, enc.name)).clear_stale()  # a process killed while recording statuses
    jobs: list[_SlideJob] = []
    try:
        for m in mine:
            job = work.prepare(m, overwrite, previous, read_at)
            if job is not None and work.runnable(job, verify_slides):
                jobs.append(job)
        # A process killed before flushing its records leaves finished files without one.
        for r in work.results:
            if r.status == "skipped" and previous.get(r.slide_id, {}).get("status") != "ok":
                work.pending[r.slide_id] = store.status_record("ok", n_tiles=r.n_tiles, recorded="on resume")
        if jobs:
            model = _load_model(enc, dev, resolved_weights, allow_download)
            work.context = _file_context(enc, arch, resolved_weights, weights_id, precision, dev)
            runner = EncoderRunner(enc, model, dev, precision=precision, compile=compile)
            work.run(jobs, runner, batch_size, default_workers(dev) if workers is None else workers,
                     progress and rank == 0)
    finally:
        for job in jobs:
            if job.lock is not None:
                job.lock.release()
        work.flush()
    if dist is not None and world > 1:
        dist.wait_for_everyone()
    return work.results
