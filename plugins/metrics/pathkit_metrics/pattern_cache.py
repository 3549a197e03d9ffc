"""Regular expressions whose compiled code is kept from one process to the next.

Python turns a regular expression into the opcodes of its C matching engine with a parser and a
code generator written in Python; for CRQS (some 180 patterns and a 15 kB prefix tree of its
vocabulary) that costs a fresh scoring process about 0.1 s, more than a third of the work of
scoring 741 REG pairs. `compiled(pattern, flags)` gives the same `re.Pattern` as
`re.compile(pattern, flags)`, and the first time it compiles a pattern it keeps the generator's
output (flags, opcodes, group count and names); later processes hand that straight to the engine.

What is kept is a pure function of the pattern's text, its flags and the interpreter: an entry's
key is the whole source and the flags (an edited pattern is another key, never a stale hit), and
the file is per interpreter build and engine (`sys.implementation.cache_tag`, `sys.version`, the
engine's MAGIC number and code size), like Python's own bytecode cache. No match, extraction or
score is ever kept. The engine checks the opcodes it is given (`invalid SRE code`); an entry it
refuses, a file that does not read back whole (checksum) and any failure of the private compiler
functions this relies on fall back to `re.compile`, silently: a cache problem costs time, never a
wrong pattern or a failed run. New entries are written once, when the process exits (atomically,
beside the old file, which is merged); a file that would exceed `MAX_ENTRIES` entries or
`MAX_BYTES` keeps only what this process used. `PATHKIT_PATTERN_CACHE=off` turns it off;
`PATHKIT_PATTERN_CACHE=PATH` puts the file elsewhere. The file lives under pathkit's cache folder
(`$XDG_CACHE_HOME/pathkit`, else `~/.cache/pathkit`), in `regex/`.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import sys
import zlib
from array import array
from pathlib import Path
from typing import Any

ENV_PATTERN_CACHE = "PATHKIT_PATTERN_CACHE"
MAX_ENTRIES = 4000
MAX_BYTES = 8 << 20  # a learned vocabulary's pattern is a few 100 kB: past this, keep what was used
FORMAT = 2

try:  # the engine and the compiler's private halves (Python 3.11+); without them: re.compile
    import _sre
    from re import _compiler, _parser
except ImportError:  # pragma: no cover - another interpreter
    _sre = None
# the opcodes are kept as the bytes of an array of the engine's code unit (a list of ints costs
# marshal an object per opcode: the vocabulary's pattern alone has some 60,000)
if _sre is not None and array("I").itemsize != _sre.CODESIZE:  # pragma: no cover - exotic build
    _sre = None

# (flags, opcodes as bytes, groups - 1, group index, index group): what the engine is given
_Entry = tuple[int, bytes, int, dict[str, int], tuple[Any, ...]]
_loaded: dict[tuple[str, int], _Entry] | None = None
_used: dict[tuple[str, int], _Entry] = {}
_hooked = False
_where: tuple[tuple[str | None, str | None], Path | None] | None = None


def cache_file() -> Path | None:
    """Where this interpreter's compiled patterns are kept (None: the cache is off)."""
    global _where
    environment = (os.environ.get(ENV_PATTERN_CACHE), os.environ.get("XDG_CACHE_HOME"))
    if _where is None or _where[0] != environment:
        _where = environment, _locate(environment[0])
    return _where[1]


def _locate(given: str | None) -> Path | None:
    if given == "off" or _sre is None:
        return None
    if given:
        return Path(given)
    from pathkit_core.plugins import cache_home

    build = f"{zlib.crc32(sys.version.encode()):08x}-{_sre.MAGIC}-{_sre.CODESIZE}"
    return cache_home() / "regex" / f"{sys.implementation.cache_tag}-{build}-v{FORMAT}.marshal"


def _read(path: Path) -> dict[tuple[str, int], _Entry]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if len(data) < 4 or zlib.crc32(data[4:]) != int.from_bytes(data[:4], "little"):
        return {}
    try:
        entries = marshal.loads(data[4:])
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if isinstance(entries, dict) else {}


def _entries() -> dict[tuple[str, int], _Entry]:
    global _loaded
    if _loaded is None:
        path = cache_file()
        _loaded = _read(path) if path is not None else {}
    return _loaded


def _generated(pattern: str, flags: int) -> _Entry:
    """What `re._compiler.compile` hands the engine for `pattern` (Python 3.11-3.13)."""
    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (int(flags | parsed.state.flags), array("I", code).tobytes(), parsed.state.groups - 1, groupindex,
            tuple(indexgroup))


def _made(pattern: str, entry: _Entry) -> re.Pattern[str]:
    flags, code, groups, groupindex, indexgroup = entry
    opcodes = array("I")
    opcodes.frombytes(code)
    return _sre.compile(pattern, flags, opcodes.tolist(), groups, groupindex, indexgroup)


def compiled(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, its compiling done once per interpreter (module docstring)."""
    global _hooked
    flags = int(flags)
    key = (pattern, flags)
    if _sre is None or flags & re.DEBUG or cache_file() is None:
        return re.compile(pattern, flags)
    entry = _entries().get(key)
    if entry is not None:
        try:
            made = _made(pattern, entry)
        except Exception:  # a damaged or foreign entry: compiled afresh below
            entry = None
        else:
            _used[key] = entry
            return made
    try:
        entry = _generated(pattern, flags)
        made = _made(pattern, entry)
    except re.error:
        raise
    except Exception:  # the private compiler changed shape: the public road, uncached
        return re.compile(pattern, flags)
    _used[key] = entry
    if not _hooked:
        _hooked = True
        atexit.register(save)
    return made


def save() -> Path | None:
    """Write the entries this process compiled beside those already kept (the exit hook; also
    callable directly). Returns the file written, or None when there was nothing to write or it
    could not be written (a read-only cache folder: the next process compiles again)."""
    global _loaded
    path = cache_file()
    if path is None or not _used:
        return None
    kept = _read(path)
    if not set(_used) - set(kept):
        return None
    merged = {**kept, **_used} if len(kept) + len(_used) <= MAX_ENTRIES else dict(_used)
    try:
        payload = marshal.dumps(merged)
        if len(payload) > MAX_BYTES and len(merged) > len(_used):
            merged = dict(_used)
            payload = marshal.dumps(merged)
    except ValueError:  # an entry marshal cannot hold: nothing is written
        return None
    from pathkit_core.contracts import PathkitError
    from pathkit_core.workspace import atomic_write_bytes  # only when something new was compiled

    try:
        atomic_write_bytes(path, zlib.crc32(payload).to_bytes(4, "little") + payload)
    except (OSError, PathkitError):
        return None
    _loaded = merged
    return path


__all__ = ["ENV_PATTERN_CACHE", "MAX_BYTES", "MAX_ENTRIES", "cache_file", "compiled", "save"]
