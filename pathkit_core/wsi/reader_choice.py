"""Which slide reader opens a file: the one named, or the first, by `order`, that claims the file and
opens it (docs/formats.md, "How a reader is chosen")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.contracts import SlideReader
from pathkit_core.wsi.slide_errors import SlideError


def ordered_readers() -> list[type[SlideReader]]:
    """Every registered slide reader, in the order automatic choice tries them. The distribution's
    own (`pathkit_readers`) are always registered: its entry points load in every registry, one
    built without entry points too (`pathkit_core.plugins.Registry.load_entry_points`)."""
    from pathkit_core.plugins import get_plugin_manager

    return sorted(map(get_reader, get_plugin_manager().names("slide-reader")), key=lambda cls: (cls.order, cls.name))


def get_reader(name: str) -> type[SlideReader]:
    """The slide reader registered as `name` (an unknown name lists the close ones)."""
    from pathkit_core.plugins import get_plugin_manager

    return get_plugin_manager().get("slide-reader", name)  # type: ignore[return-value]


def reader_packages() -> list[str]:
    """The top-level packages of the registered slide readers: their code reads every slide, so it
    keys the tiles and features made from slides (`pathkit_core.run.features.tiling_code`)."""
    return sorted({cls.__module__.split(".")[0] for cls in ordered_readers()})


def check_reader_name(name: str | None) -> None:
    """A usage error before any work when `name` is no registered reader or cannot run here."""
    if not name:
        return
    cls = get_reader(name)
    why = cls.unavailable()
    if why is not None:
        from pathkit_core.contracts import PathkitError

        raise PathkitError(f"slide reader {name!r} is not usable here: {why}")


def _open(cls: type[SlideReader], path: Path) -> Any:
    """`cls().open(path)`; a library that is installed but does not import is a reader-missing error.
    A scene path (`pathkit_core.wsi.scenes`) opens only with a reader whose format has scenes."""
    from pathkit_core.wsi.scenes import split_scene

    if split_scene(path)[1] is not None and not cls.has_scenes:
        raise SlideError("not-a-slide", path, f"names a scene, and the {cls.name} reader's format has none")
    try:
        return cls().open(path)
    except ImportError as exc:
        raise SlideError("reader-missing", path, f"the {cls.name} reader's library does not import ({exc}); "
                         f'reinstall it: pip install "pathkit[{cls.extra}]"') from None


def _open_named(path: Path, name: str) -> tuple[Any, str]:
    cls = get_reader(name)
    why = cls.unavailable()
    if why is not None:
        raise SlideError("reader-missing", path, f"the {name} reader is not usable here: {why}")
    return _open(cls, path), name


def open_handle(path: Path, name: str | None = None) -> tuple[Any, str]:
    """(an open handle of `path`, the reader's name): the reader `name`, or else the first that
    claims the file and opens it. When none opens it: the extra to install when a reader that claimed it is missing,
    else the error of the first that claimed it."""
    if name:
        return _open_named(path, name)
    first_error: SlideError | None = None
    missing: list[tuple[type[SlideReader], str]] = []
    from pathkit_core.wsi.scenes import slide_file

    for cls in ordered_readers():
        try:
            claimed = cls.claims(slide_file(path))
        except OSError:
            claimed = False
        if not claimed:
            continue
        why = cls.unavailable()
        if why is not None:
            missing.append((cls, why))
            continue
        try:
            return _open(cls, path), cls.name
        except SlideError as exc:
            first_error = first_error or exc
    if missing:  # the file's own format's reader is not installed: that is what to fix
        cls, why = missing[0]
        raise SlideError("reader-missing", path, f"looks like {cls.formats} ({cls.name} reader), which is not "
                         f"usable here: {why}")
    if first_error is None:
        raise SlideError("not-a-slide", path, "no slide reader recognises this file")
    raise first_error


def expand_scenes(path: Path) -> list[Path]:
    """The slides of a file: one per scene when a reader that claims it finds more than one scene
    (`SlideReader.scene_names`), else the file itself. A file no reader can list stays whole (its
    error comes when it is opened)."""
    from pathkit_core.wsi.scenes import scene_labels, scene_path, split_scene

    if split_scene(path)[1] is not None or not path.is_file():
        return [path]
    for cls in ordered_readers():
        if not cls.has_scenes or cls.unavailable() is not None:
            continue
        try:
            if not cls.claims(path):
                continue
            names = cls.scene_names(path)
        except Exception:  # noqa: BLE001 - a damaged file is refused, with its reason, when opened
            return [path]
        if len(names) > 1:
            return [scene_path(path, label) for label in scene_labels(names)]
        return [path]
    return [path]
