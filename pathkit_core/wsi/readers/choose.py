"""Which slide reader opens a file: the one named, or the first, by `order`, that claims the file and
opens it (docs/formats.md, "How a reader is chosen")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.contracts import SlideReader
from pathkit_core.wsi.slide import SlideError

DEFAULT_READER = "openslide"


def ordered_readers() -> list[type[SlideReader]]:
    """Every registered slide reader, in the order automatic choice tries them."""
    from pathkit_core.plugins import get_plugin_manager

    registry = get_plugin_manager()
    found = [registry.get("slide-reader", name) for name in registry.names("slide-reader")]
    return sorted(found, key=lambda cls: (cls.order, cls.name))  # type: ignore[attr-defined]


def get_reader(name: str) -> type[SlideReader]:
    """The slide reader registered as `name` (an unknown name lists the close ones)."""
    from pathkit_core.plugins import get_plugin_manager

    return get_plugin_manager().get("slide-reader", name)  # type: ignore[return-value]


def check_reader_name(name: str | None) -> None:
    """A usage error before any work when `name` is no registered reader or cannot run here."""
    if not name:
        return
    cls = get_reader(name)
    why = cls.unavailable()
    if why is not None:
        from pathkit_core.contracts import PathkitError

        raise PathkitError(f"slide reader {name!r} is not usable here: {why}")


def _open_named(path: Path, name: str) -> tuple[Any, str]:
    cls = get_reader(name)
    why = cls.unavailable()
    if why is not None:
        raise SlideError("reader-missing", path, f"the {name} reader is not usable here: {why}")
    return cls().open(path), name


def open_handle(path: Path, name: str | None = None) -> tuple[Any, str]:
    """(an open handle of `path`, the reader's name): the reader `name`, or else the first that
    claims the file and opens it. When none opens it, the error of the first that claimed it; a
    file only a missing reader claims is refused naming the extra to install."""
    if name:
        return _open_named(path, name)
    first_error: SlideError | None = None
    missing: list[tuple[type[SlideReader], str]] = []
    for cls in ordered_readers():
        try:
            claimed = cls.claims(path)
        except OSError:
            claimed = False
        if not claimed:
            continue
        why = cls.unavailable()
        if why is not None:
            missing.append((cls, why))
            continue
        try:
            return cls().open(path), cls.name
        except SlideError as exc:
            first_error = first_error or exc
    if missing and (first_error is None or first_error.code == "not-a-slide"):
        cls, why = missing[0]
        raise SlideError("reader-missing", path, f"looks like {cls.formats} ({cls.name} reader), which is not "
                         f"usable here: {why}")
    if first_error is None:
        raise SlideError("not-a-slide", path, "no slide reader recognises this file")
    raise first_error
