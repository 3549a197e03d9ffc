"""`make api-check`: the public API against the last release, with griffe's breaking-change check.

The public modules are those of tests/compat/public_modules.txt (docs/api/stability.md). Each is
loaded from the release (the tag of .ci/api-baseline, else its recorded commit, fetched when the
clone lacks it) and from the working tree, and compared with `griffe.find_breaking_changes`, the
check `griffe check` runs. A reported change passes only when
- it is a removal and the old path still imports, with a DeprecationWarning (a shim: docs/api/stability.md), or
- it is listed, with its reason, in .ci/api-allow.txt.
Everything else is printed, one line each, and the check fails.
"""

from __future__ import annotations

import functools
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
BASELINE_FILE = ROOT / ".ci" / "api-baseline"
ALLOW_FILE = ROOT / ".ci" / "api-allow.txt"
sys.path.insert(0, str(ROOT))

from tests.compat.public_api import public_modules  # noqa: E402


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def baseline() -> str:
    """The git reference of the last release: its tag when present, else its recorded commit."""
    fields = dict(line.split(None, 1) for line in BASELINE_FILE.read_text().splitlines()
                  if line.strip() and not line.startswith("#"))
    ref, sha = fields["ref"].strip(), fields["sha"].strip()
    if _git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}").returncode == 0:
        return ref
    if _git("cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
        _git("fetch", "--quiet", "--depth=1", "origin", sha)
    if _git("cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
        raise SystemExit(f"api-check: neither tag {ref} nor commit {sha} (.ci/api-baseline) is in this clone "
                         f"and fetching {sha} from origin failed: run `git fetch origin tag {ref}`")
    return sha


def allowed() -> set[tuple[str, str]]:
    """(object path, breakage kind) pairs of .ci/api-allow.txt; a line without a reason is refused."""
    pairs = set()
    for number, line in enumerate(ALLOW_FILE.read_text().splitlines(), 1):
        entry, _, reason = line.partition("#")
        if not entry.strip():
            continue
        fields = entry.split()
        if len(fields) != 2 or not reason.strip():
            raise SystemExit(f"api-check: {ALLOW_FILE.name} line {number}: write 'PATH KIND  # reason'")
        pairs.add((fields[0], fields[1]))
    return pairs


@functools.cache
def _imported(module: str) -> tuple[ModuleType | None, bool]:
    """The module (None when it does not import) and whether importing it warned: a moved module's alias
    warns once per process, when it is imported, so the answer is kept for each of its names."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            found = importlib.import_module(module)
        except ImportError:
            return None, False
    return found, any(issubclass(w.category, DeprecationWarning) for w in caught)


def still_imports(path: str) -> bool:
    """Whether `path` (module.name.attr...) still resolves at run time with a DeprecationWarning. Its
    modules are imported outermost first, so that an alias's warning is seen at its own import."""
    parts = path.split(".")
    obj, warned, cut = None, False, 0
    while cut < len(parts):
        found, warns = _imported(".".join(parts[:cut + 1]))
        if found is None:
            break
        obj, warned, cut = found, warned or warns, cut + 1
    if obj is None:
        return False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
    return warned or any(issubclass(w.category, DeprecationWarning) for w in caught)


def _member(package, module: str):
    relative = module.split(".", 1)[1] if "." in module else ""
    try:
        return package[relative] if relative else package
    except KeyError:
        return None


def _in_scope(path: str, module: str, names: list[str] | None) -> bool:
    if names is None:
        return True
    rest = path[len(module) + 1:] if path.startswith(module + ".") else ""
    return rest.split(".", 1)[0] in names


def _scope(old, new, names: list[str] | None) -> list[str]:
    """The names of a public module a change must touch to count: those listed, else its `__all__` as it
    was or is now (docs/api/stability.md); a baseline module without one exposed every name it defined,
    but not its submodules, whose promise is their own line of the list or none (`pathkit_core.run`)."""
    if names is not None:
        return names
    defined = [name for name, member in old.members.items() if member.is_alias or not member.is_module]
    was = old.exports if old.exports is not None else defined
    return sorted({*was, *(new.exports or ())})


def breakages(ref: str):
    """(module, breakage) for every change griffe reports in a public module since `ref`."""
    import griffe

    modules = public_modules()
    for top in dict.fromkeys(m.split(".", 1)[0] for m in modules):
        old_pkg = griffe.load_git(top, ref=ref, repo=ROOT)
        new_pkg = griffe.load(top, search_paths=[ROOT], try_relative_path=False)
        for module, names in modules.items():
            if module.split(".", 1)[0] != top:
                continue
            old, new = _member(old_pkg, module), _member(new_pkg, module)
            if old is None:  # public since this release: nothing to compare with
                continue
            if new is None:
                yield module, None
                continue
            scope = _scope(old, new, names)
            for breakage in griffe.find_breaking_changes(old, new):
                if _in_scope(breakage.obj.path, module, scope):
                    yield module, breakage


def main() -> int:
    import griffe

    ref = baseline()
    allow = allowed()
    failures, accepted = [], []
    for module, breakage in breakages(ref):
        if breakage is None:
            line = f"{module}: the module is gone"
            (accepted if still_imports(module) else failures).append(line)
            continue
        path, kind = breakage.obj.path, breakage.kind.name
        line = re.sub(r"\x1b\[[0-9;]*m", "", breakage.explain(style=griffe.ExplanationStyle.ONE_LINE))
        if (path, kind) in allow:
            accepted.append(f"{line}  [allowed: .ci/api-allow.txt]")
        elif kind == "OBJECT_REMOVED" and still_imports(path):
            accepted.append(f"{line}  [still imports, with a DeprecationWarning]")
        else:
            failures.append(line)
    failures, accepted = list(dict.fromkeys(failures)), list(dict.fromkeys(accepted))  # a re-export reports twice
    for line in accepted:
        print(f"api-check: accepted {line}")
    for line in failures:
        print(f"api-check: BREAKING {line}")
    n_modules = len(public_modules())
    if failures:
        print(f"api-check: {len(failures)} breaking change(s) in the public API against {ref} "
              "(docs/api/stability.md: keep the old name importable with a DeprecationWarning for one release)")
        return 1
    print(f"api-check: the {n_modules} public modules keep every name and signature of {ref}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
