"""What a stage's cache key must cover beyond its settings: code, weights and data contents, so that a
result is never reused after the code, weights or data behind it changed (how each is identified:
docs/user-guide.md, "What reruns when")."""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from pathkit_core.features.store import read_feature_meta_cached
from pathkit_core.sources import path_identity
from pathkit_core.workspace import content_hash, file_fingerprint


@functools.lru_cache(maxsize=64)
def distribution_identity(distribution: str) -> dict[str, Any]:
    """{"version", and "commit"/"changes" for an editable install, else "record"} of an installed
    distribution: what changes whenever a file of it changes, a reinstall without a version bump
    included."""
    # A source checkout on sys.path may show its own *.egg-info beside the installed dist-info:
    # the installed record (the one that knows it is editable) is the one that counts.
    found = list(metadata.distributions(name=distribution))
    if not found:
        return {"version": None}
    folders = [(d, f) for d, f in ((d, _editable_folder(d)) for d in found) if f is not None]
    out: dict[str, Any] = {"version": (folders[0][0] if folders else found[0]).version}
    if folders:
        out.update(_git_state(folders[0][1]))
    else:
        record = _installed_record(found)
        if record:
            out["record"] = record
    return out


def _installed_record(found: list[metadata.Distribution]) -> str | None:
    """The sha256 of the distribution's installed RECORD (the list of its files with their hashes)."""
    for dist in found:
        try:
            text = dist.read_text("RECORD")
        except OSError:
            text = None
        if text:
            return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    return None


def _editable_folder(dist: metadata.Distribution) -> Path | None:
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(info, dict):
        return None
    url = str(info.get("url", ""))
    if not (info.get("dir_info") or {}).get("editable") or not url.startswith("file://"):
        return None
    return Path(url[len("file://"):])


def _git_state(folder: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=folder, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {}
    digest = hashlib.sha256((git("diff", "HEAD", "--", ".") or "").encode("utf-8"))
    # files git does not track yet (a new module) change the code as much as an edit does
    untracked = [n for n in (git("ls-files", "--others", "--exclude-standard", "-z", "--", ".") or "").split("\0") if n]
    for name in sorted(untracked):
        digest.update(name.encode("utf-8", "surrogateescape"))
        digest.update((path_identity(folder / name) or "").encode())
    state = {"commit": commit.strip()}
    if digest.hexdigest() != hashlib.sha256(b"").hexdigest():
        state["changes"] = digest.hexdigest()[:16]
    return state


def code_identity(registry: Any, components: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Versions of pathkit and of the plugins providing each (kind, name) component: the
    distribution's version (and git state when installed editable), or for a plugin added in
    process (tests, notebooks) the version it was added with."""
    out: dict[str, Any] = {"pathkit": distribution_identity("pathkit")}
    for kind, name in components:
        owner = registry.owner_of(kind, name)
        if owner is None:
            continue
        if owner.distribution in ("", "(inline)"):
            out[f"plugin:{owner.name}"] = {"version": owner.version}
        elif owner.distribution not in out:
            out[owner.distribution] = {**distribution_identity(owner.distribution), "version": owner.version}
    return out


def features_identity(inputs: Mapping[str, Any]) -> str:
    """One digest of the content of every input a fit reads (feature files, image-feature rows)."""
    digests: dict[str, Any] = {}
    for case_id in sorted(inputs):
        value = inputs[case_id]
        if isinstance(value, tuple | list):
            digests[case_id] = [feature_file_digest(Path(p)) for p in value]
        else:
            digests[case_id] = getattr(value, "digest", str(value))
    return content_hash(digests, length=32)


@functools.lru_cache(maxsize=100_000)
def _cached_digest(path: str, size: int, mtime_ns: int) -> str:
    p = Path(path)
    if p.suffix == ".safetensors":
        try:
            meta = read_feature_meta_cached(p)
        except Exception:  # noqa: BLE001 - a foreign or damaged file: hash its bytes instead
            meta = {}
        if meta.get("content_sha256"):
            return f"content:{meta['content_sha256']}"
    return f"sha256:{file_fingerprint(p)['sha256']}"


def feature_file_digest(path: Path) -> str:
    """The recorded content checksum of a pathkit feature file, else the file's sha256."""
    st = path.stat()
    return _cached_digest(str(path.resolve()), st.st_size, st.st_mtime_ns)


def weights_identity(inputs: Mapping[str, Any]) -> list[str]:
    """The sha256 of the encoder weights behind the run's feature files, as they record it."""
    seen: set[str] = set()
    for value in inputs.values():
        for p in value if isinstance(value, tuple | list) else ():
            if Path(p).suffix == ".safetensors":
                try:
                    sha = read_feature_meta_cached(Path(p)).get("weights_sha256")
                except Exception:  # noqa: BLE001
                    sha = None
                if sha:
                    seen.add(sha)
        weights = getattr(value, "weights_sha256", None)
        if weights:
            seen.add(weights)
    return sorted(seen)


# --------------------------------------------------------------------------- data


def _with_identities(value: Any) -> Any:
    """`value` (a case's meta or target, a dataset option) with every file it names replaced by
    the path and the content identity of the file there (a string counts when a file is there)."""
    if isinstance(value, Path) or (isinstance(value, str) and _may_name_a_file(value)):
        found = path_identity(value)
        return {"path": str(value), "identity": found} if found is not None else str(value)
    if isinstance(value, Mapping):
        return {str(k): _with_identities(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_with_identities(v) for v in value]
    return value


def _may_name_a_file(text: str) -> bool:
    return 0 < len(text) < 1024 and "\n" not in text and ("/" in text or "." in text)


def _input_identity(path: Any) -> str:
    from pathkit_core.wsi.scenes import SCENE_MARK, split_scene

    file, scene = split_scene(path)
    if scene is not None:  # one scene of a file (docs/formats.md, "Scenes"): the file's identity and the scene
        found = path_identity(file)
        return f"{found}{SCENE_MARK}{scene}" if found else f"missing:{path}"
    return path_identity(path) or f"missing:{path}"


def case_identity(case: Any) -> dict[str, Any]:
    """Everything of one case a result rests on: id, patient, target, meta (files by content) and
    the content identity of its slides, images and feature files."""
    return {"id": case.case_id, "patient": case.patient_id, "target": _with_identities(case.target),
            "meta": _with_identities(dict(case.meta)),
            "slides": [_input_identity(p) for p in case.slides],
            "images": [_input_identity(p) for p in case.images],
            "features": [_input_identity(p) for p in case.features]}


def dataset_identity(dataset: Any, cases: Mapping[str, Iterable[Any]], read_files: Iterable[Path] = ()) -> str:
    """The content key of a dataset as a run uses it: its name, folder and resolved options (the
    files they name by content), the files it read to make its cases (`pathkit_core.sources`),
    every case of every split (membership, target, meta, input files by content) and the task
    settings it fixes (`Dataset.task_defaults`). Two
    folders with different content, a changed label, mask, split or slide give other keys; the
    same content gives the same key wherever and whenever it is read."""
    files = sorted({str(Path(p).resolve()) for p in read_files})
    root = Path(dataset.root).resolve() if dataset.root is not None else None
    options = {}
    for name, value in dataset.options.items():
        if name == "workdir":
            continue  # where the workspace is, not what the data is
        if isinstance(value, str | Path) and root is not None and str(value) and not Path(value).is_absolute() \
                and (root / value).is_file():
            value = root / value  # a file named relative to the dataset's folder
        options[name] = _with_identities(value)
    return content_hash({
        "dataset": dataset.name,
        "root": str(root) if root is not None else None,
        "options": options,
        "read": {p: path_identity(p) for p in files},
        "splits": {name: [case_identity(c) for c in split] for name, split in cases.items()},
        # the task settings the dataset fixes (a VQA release's K and M from its protocol file)
        **({"task_defaults": _with_identities(dict(defaults))} if (defaults := dataset.task_defaults) else {}),
    }, length=32)


@functools.lru_cache(maxsize=64)
def source_identity(*packages: str) -> str:
    """A digest of the Python sources of `packages` as they are on disk now (editable or
    installed alike): what keys the workspace's tile and feature stores, whose files outlive a
    run, so that tiles and features are made again when the code that made them changes and
    kept when only other code did."""
    import importlib.util

    digest = hashlib.sha256()
    for package in sorted(set(packages)):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):  # __main__ of a notebook or script: no sources to read
            spec = None
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        files = [(Path(spec.origin).name, Path(spec.origin))] if spec is not None and spec.origin and not folders \
            else []
        for folder in folders:
            files.extend(sorted((p.relative_to(folder).as_posix(), p) for p in Path(folder).rglob("*.py")))
        for name, path in files:
            digest.update(f"{package}/{name}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]
