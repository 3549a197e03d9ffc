"""Moved public names kept importable from their old place for one release, with a warning
(docs/plugin-authors.md, "Moved names"): `moved_module` makes an old module path an alias of the new
one, `moved_attribute` serves one name that left a module through its PEP 562 `__getattr__`, and
`moved_names` is such a `__getattr__` for a table of names. The
warning points at the line of the plugin that used the old name. A leaf module."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import FrameType, ModuleType
from typing import Any

REMOVED_IN = "0.3"
_warned: set[str] = set()


def _bootstrap(frame: FrameType) -> bool:
    """A frame of the import system, which `warnings.warn` itself leaves out of its stack level."""
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


def _stacklevel(shim: str) -> int:
    """The `warnings.warn` stack level of the first frame outside the shim, this module and the import
    machinery: the line that used the old name."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and (_bootstrap(frame) or frame.f_globals.get("__name__") in (__name__, shim, "importlib")):
        if not _bootstrap(frame):
            level += 1
        frame = frame.f_back
    return level


def message(old: str, new: str) -> str:
    """The warning's text: the old name, the import that replaces it, the release that removes it."""
    return (f"{old} is deprecated: import {new} instead (moved in pathkit 0.2); "
            f"{old} will be removed in pathkit {REMOVED_IN}")


def warn_moved(old: str, new: str, *, shim: str) -> None:
    """Warn once per process that `old` moved to `new`; `shim` is the module that serves the old name."""
    if old in _warned:
        return
    _warned.add(old)
    warnings.warn(message(old, new), DeprecationWarning, stacklevel=_stacklevel(shim))


def moved_module(old: str, new: str, *, submodules: Sequence[str] = (),
                 renamed: Mapping[str, str] | None = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Make module `old` an alias of module `new`; returns its `__getattr__` and `__dir__`.

    Called from the old module's body, so it warns when a plugin imports the old path. `submodules`
    of a moved package are served from their new package (`import old.sub` gives `new.sub`);
    `renamed` maps a name the old module documented to the module that now holds it.
    """
    warn_moved(old, new, shim=old)
    target = importlib.import_module(new)
    for sub in submodules:
        sys.modules[f"{old}.{sub}"] = importlib.import_module(f"{new}.{sub}")
    elsewhere = dict(renamed or {})

    def __getattr__(name: str) -> Any:
        if name in elsewhere:
            return getattr(importlib.import_module(elsewhere[name]), name)
        if name == "__all__":  # `from old import *` gives what the new module would
            return list(getattr(target, "__all__", [n for n in dir(target) if not n.startswith("_")]))
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        try:
            return getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {new})") from None

    def __dir__() -> list[str]:
        return sorted({*dir(target), *elsewhere})

    return __getattr__, __dir__


def moved_attribute(module: ModuleType | str, name: str, new_module: str, *, qualname: str | None = None) -> Any:
    """`name`, which left `module` (as `qualname` there, a method say) for `new_module`: warned once,
    then the new module's object."""
    old_module = module if isinstance(module, str) else module.__name__
    warn_moved(f"{old_module}.{qualname or name}", f"{name} from {new_module}", shim=old_module)
    return getattr(importlib.import_module(new_module), name)


def moved_names(module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """The PEP 562 `__getattr__` of `module` serving the names that left it ({name: new module}), each
    through `moved_attribute`; any other name is the usual AttributeError."""
    table = dict(moved)

    def __getattr__(name: str) -> Any:
        if name in table:
            return moved_attribute(module, name, table[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
