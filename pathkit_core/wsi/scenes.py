"""Slides that are one scene of a file (the scenes of a Zeiss CZI): the slide path names the scene
as `FILE#scene=LABEL`, parsed here and nowhere else (docs/formats.md, "Scenes").

A LABEL is the scene's name from the file's metadata, or its index when the scene has no name.
The slide id is `<file's slide id>-<label>` (characters a slide id cannot hold become `_`); the
content identity is the file's with the scene appended, so each scene is its own slide.
"""

from __future__ import annotations

import re
from pathlib import Path

SCENE_MARK = "#scene="
# What a slide id may not hold (pathkit_core.contracts.slide_id_problem), replaced in a scene's label.
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9._+\- ]")


def split_scene(path: str | Path) -> tuple[Path, str | None]:
    """(the file, the scene label) of a slide path; the label is None for a whole file."""
    text = str(path)
    head, mark, label = text.rpartition(SCENE_MARK)
    if not mark or not label or "/" in label:
        return Path(path), None
    return Path(head), label


def slide_file(path: str | Path) -> Path:
    """The file on disk that holds the slide at `path` (the path itself unless it names a scene)."""
    return split_scene(path)[0]


def scene_path(file: str | Path, label: str) -> Path:
    """The slide path of scene `label` of `file`."""
    return Path(f"{file}{SCENE_MARK}{label}")


def content_identity(path: str | Path) -> str:
    """The content identity of the slide at `path`: its file's or folder's
    (`pathkit_core.sources.content_identity`), with `#scene=LABEL` appended for one scene of a file."""
    from pathkit_core.sources import content_identity as of_file_or_folder

    file, label = split_scene(path)
    return of_file_or_folder(file) + ("" if label is None else f"{SCENE_MARK}{label}")


def scene_id_part(label: str) -> str:
    """`label` as it appears in a slide id."""
    return _NOT_IN_ID.sub("_", label.strip()) or "scene"


def scene_labels(names: list[str | None]) -> list[str]:
    """A label per scene, in index order, from the names the metadata gives (None: unnamed): the
    name ('/' as '_', so that it stays one path part), or the index when the scene has none or
    shares its name with another."""
    clean = [n.strip().replace("/", "_") if n and n.strip() else None for n in names]
    seen = [n for n in clean if n]
    return [n if n and seen.count(n) == 1 else str(i) for i, n in enumerate(clean)]

