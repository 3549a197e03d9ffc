"""Encoder checkpoints: where they are found, in the order of docs/encoders.md, "Where pathkit looks",
and their sha256, the identity a feature file records (reading one, checking its sha256 against the
published one and fitting it to a model is `pathkit_sdk.checkpoints`, which encoder plugins call).
Nothing here touches the network at import time or when downloads are not allowed.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathkit_core.contracts import Encoder, PathkitError, PretrainedWeights

WEIGHTS_DIR_ENV = "PATHKIT_WEIGHTS_DIR"
ALLOW_DOWNLOAD_ENV = "PATHKIT_ALLOW_DOWNLOAD"
SAFETENSORS_SUFFIXES = (".safetensors",)
PICKLE_SUFFIXES = (".bin", ".pth", ".pt", ".ckpt")
_GENERIC_NAMES = ("model.safetensors", "pytorch_model.bin")


def downloads_allowed(explicit: bool | None = None) -> bool:
    """An explicit choice wins; otherwise PATHKIT_ALLOW_DOWNLOAD=1 allows hub downloads."""
    if explicit is not None:
        return bool(explicit)
    return os.environ.get(ALLOW_DOWNLOAD_ENV, "").strip().lower() in {"1", "true", "yes"}


def candidate_filenames(record: PretrainedWeights | None) -> list[str]:
    """File names a checkpoint of this record may have, safetensors first."""
    names = [record.filename] if record is not None and record.filename else []
    names += [generic for generic in _GENERIC_NAMES if generic not in names]
    # Prefer a safetensors sibling of any pickle name (no code execution, memory-mapped).
    names.sort(key=lambda n: 0 if n.endswith(SAFETENSORS_SUFFIXES) else 1)
    return names


def _pick_in_folder(folder: Path, names: list[str]) -> Path | None:
    for name in names:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    # A folder holding exactly one checkpoint-looking file is unambiguous.
    found = sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix in SAFETENSORS_SUFFIXES + PICKLE_SUFFIXES
    ) if folder.is_dir() else []
    safetensors = [p for p in found if p.suffix in SAFETENSORS_SUFFIXES]
    if len(safetensors) == 1:
        return safetensors[0]
    if len(found) == 1:
        return found[0]
    return None


def _hf_cache_lookup(repo_id: str, names: list[str]) -> tuple[Path | None, str]:
    """Look a checkpoint up in the local Hugging Face cache; never downloads."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:
        return None, "Hugging Face cache (huggingface_hub not installed)"
    where = f"Hugging Face cache {constants.HF_HUB_CACHE} ({repo_id}: {', '.join(names)})"
    for name in names:
        try:
            hit = try_to_load_from_cache(repo_id, name)
        except Exception:  # noqa: BLE001 - a malformed cache entry is simply not a hit
            continue
        if isinstance(hit, str) and Path(hit).is_file():
            return Path(hit), where
    return None, where


def find_weights(encoder_cls: type[Encoder], weights_path: str | Path | None = None) -> tuple[Path | None, list[str]]:
    """The checkpoint of `encoder_cls` if one is on this machine, and every place looked.

    Never touches the network (used by `pathkit doctor` and before any download).
    """
    record = encoder_cls.weights
    names = candidate_filenames(record)
    looked: list[str] = []
    if weights_path is not None:
        path = Path(weights_path).expanduser()
        looked.append(f"--weights {path}")
        if path.is_file():
            return path, looked
        if path.is_dir():
            hit = _pick_in_folder(path, names)
            if hit is not None:
                return hit, looked
            looked[-1] += f" (folder without {' or '.join(names)})"
        else:
            looked[-1] += " (does not exist)"
        # An explicit path that is wrong is an error: never fall back silently to another file.
        return None, looked
    env_dir = os.environ.get(WEIGHTS_DIR_ENV)
    if env_dir:
        folder = Path(env_dir).expanduser() / encoder_cls.name
        looked.append(f"${WEIGHTS_DIR_ENV}/{encoder_cls.name}/ = {folder}")
        hit = _pick_in_folder(folder, names)
        if hit is not None:
            return hit, looked
    else:
        looked.append(f"${WEIGHTS_DIR_ENV}/{encoder_cls.name}/ (${WEIGHTS_DIR_ENV} is not set)")
    if record is not None and record.hf_hub_id:
        hit, where = _hf_cache_lookup(record.hf_hub_id, names)
        looked.append(where)
        if hit is not None:
            return hit, looked
    return None, looked


def how_to_provide(encoder_cls: type[Encoder]) -> str:
    """The user-facing instructions for getting a checkpoint in place, licence terms included."""
    record = encoder_cls.weights
    name = encoder_cls.name
    names = candidate_filenames(record)
    published = record.filename if record is not None and record.filename else names[0]
    lines = [f"pass --weights /path/to/{published}", f"or put the file in ${WEIGHTS_DIR_ENV}/{name}/"]
    if record is not None and record.hf_hub_id:
        url = f"https://huggingface.co/{record.hf_hub_id}"
        if record.gated:
            lines.append(f"or request access at {url}, run `huggingface-cli login`, and rerun with "
                         f"--download (or {ALLOW_DOWNLOAD_ENV}=1)")
        else:
            lines.append(f"or rerun with --download (or {ALLOW_DOWNLOAD_ENV}=1) to fetch it from {url}")
    text = "; ".join(lines)
    if record is not None and (record.gated or record.license):
        terms = record.license or "see the model card"
        gate = "gated model: access is granted by the authors on the model page; " if record.gated else ""
        text += f". Licence: {gate}{terms}"
    return text


def _missing_error(encoder_cls: type[Encoder], looked: list[str], extra: str = "") -> PathkitError:
    places = "\n  - ".join(looked)
    return PathkitError(f"no checkpoint found for encoder {encoder_cls.name!r}{extra}. Looked in:\n  - {places}\n"
                        f"To provide one: {how_to_provide(encoder_cls)}")


def resolve_weights(encoder_cls: type[Encoder], weights_path: str | Path | None = None, *,
                    allow_download: bool | None = None) -> Path:
    """The checkpoint to load, following the resolution order; raises naming every place looked."""
    path, looked = find_weights(encoder_cls, weights_path)
    if path is not None:
        return path
    record = encoder_cls.weights
    if weights_path is not None or record is None or not record.hf_hub_id:  # nothing to download
        raise _missing_error(encoder_cls, looked)
    if not downloads_allowed(allow_download):
        raise _missing_error(encoder_cls, looked, " (downloads are not allowed)")
    return _download(encoder_cls, looked)


def _download(encoder_cls: type[Encoder], looked: list[str]) -> Path:
    record = encoder_cls.weights
    assert record is not None and record.hf_hub_id
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError as exc:
        raise _missing_error(encoder_cls, looked, f" (huggingface_hub is unavailable: {exc})") from exc
    errors: list[str] = []
    for name in candidate_filenames(record):
        try:
            return Path(hf_hub_download(record.hf_hub_id, name))
        except LocalEntryNotFoundError as exc:  # offline mode or no connection (an EntryNotFoundError)
            raise _missing_error(encoder_cls, looked, f" (download failed: {exc})") from None
        except EntryNotFoundError:
            errors.append(f"{name}: not in the repository")
        except GatedRepoError as exc:
            raise PathkitError(f"{record.hf_hub_id} is a gated model and this machine has no access to it "
                               f"({type(exc).__name__}). {how_to_provide(encoder_cls)}") from None
        except RepositoryNotFoundError as exc:
            raise PathkitError(f"Hugging Face repository {record.hf_hub_id} not found or not accessible "
                               f"({type(exc).__name__}); if it is gated, log in first. "
                               f"{how_to_provide(encoder_cls)}") from None
        except OSError as exc:
            raise _missing_error(encoder_cls, looked, f" (download failed: {exc})") from None
    looked.append(f"https://huggingface.co/{record.hf_hub_id} ({'; '.join(errors)})")
    raise _missing_error(encoder_cls, looked)


_SHA256_CACHE: dict[tuple[str, int, float], str] = {}


def file_sha256(path: str | Path) -> str:
    """sha256 of a checkpoint, computed once per process per (path, size, mtime)."""
    from pathkit_core.workspace import sha256_file

    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime)
    if key not in _SHA256_CACHE:
        _SHA256_CACHE[key] = sha256_file(p)
    return _SHA256_CACHE[key]
