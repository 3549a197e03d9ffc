"""What a stage's cache key must cover beyond its settings: code versions and input contents.

A result is never reused after the code, weights or data behind it changed (DESIGN.md section 5):
- code: the version of each plugin distribution involved (and of pathkit itself), plus, for an
  editable install, the git commit of its folder and a digest of its uncommitted changes;
- weights: the sha256 of the checkpoint the encoder actually loaded, as recorded in the features;
- data: the content checksum of every feature file a fit reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from pathkit_core.workspace import content_hash, file_fingerprint


@functools.lru_cache(maxsize=64)
def distribution_identity(distribution: str) -> dict[str, Any]:
    """{"version", and for an editable install "commit" and "changes"} of an installed distribution."""
    # A source checkout on sys.path may show its own *.egg-info beside the installed dist-info:
    # the installed record (the one that knows it is editable) is the one that counts.
    found = list(metadata.distributions(name=distribution))
    if not found:
        return {"version": None}
    folders = [f for f in (_editable_folder(d) for d in found) if f is not None]
    out: dict[str, Any] = {"version": found[0].version}
    if folders:
        out.update(_git_state(folders[0]))
    return out


def _editable_folder(dist: metadata.Distribution) -> Path | None:
    try:
        raw = dist.read_text("direct_url.json")
    except OSError:
        return None
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except json.JSONDecodeError:
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
    diff = git("diff", "HEAD", "--", ".") or ""
    state = {"commit": commit.strip()}
    if diff:
        state["changes"] = hashlib.sha256(diff.encode("utf-8")).hexdigest()[:16]
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
        from pathkit_core.features.store import read_feature_meta_cached

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
    from pathkit_core.features.store import read_feature_meta_cached

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
