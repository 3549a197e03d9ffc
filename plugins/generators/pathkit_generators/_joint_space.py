"""The image-text space features lie in, read from their files (the `joint_space` an encoder
writes, docs/encoders.md), so that a text tower is only ever compared with images of its own space.

Imported only from a head's `build`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pathkit_core.contracts import ItemsWithBagSpecs, PathkitError


def _space_of(meta: dict[str, str]) -> str:
    """A file's joint space as recorded in it ("" for an image-only encoder), else, for files that
    do not record one, its encoder's."""
    if "joint_space" in meta:
        return str(meta["joint_space"])
    name = meta.get("encoder")
    if not name:
        return ""
    from pathkit_core.plugins import get_component

    try:
        return str(get_component("encoder", str(name)).joint_space or "")
    except PathkitError:
        return ""


def _file_spaces(items: Any) -> Iterator[tuple[str, str]]:
    """(file, joint space) of every feature file the items read: slide bags or image-feature shards."""
    from pathkit_core.features.images import load_shard
    from pathkit_core.features.store import read_feature_meta

    if isinstance(items, ItemsWithBagSpecs) and items.specs:
        for path in dict.fromkeys(str(p) for spec in items.specs for p in spec.feature_files):
            yield path, _space_of(read_feature_meta(path))
        return
    shards = dict.fromkeys(row[1].path for row in getattr(items, "rows", ()) if hasattr(row[1], "path"))
    for shard in shards:
        yield str(shard), _space_of(load_shard(shard)["meta"])


def check_joint_space(items: Sequence[Any], wanted: str, tower: str) -> None:
    """Refuse, naming the file and its space, features outside the text tower's space `wanted`.

    Items that name no files (plain item dicts) must say their space in `meta["joint_space"]`."""
    found = list(_file_spaces(items))
    if not found:
        found = [(f"case {i['case_id']}", str((i.get("meta") or {}).get("joint_space") or "")) for i in items]
    for where, space in found:
        if space != wanted:
            held = f"the {space!r} space" if space else "no image-text space (an image-only encoder)"
            raise PathkitError(f"{where}: features in {held}; the {tower} text tower scores only features in the "
                               f"{wanted!r} space (extract them with an encoder whose joint_space is {wanted!r})")
