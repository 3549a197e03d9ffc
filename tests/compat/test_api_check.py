"""The rules `make api-check` (.ci/api_check.py) applies to what griffe reports: a removal passes only
when the old path still imports with a DeprecationWarning; an allow-list line needs its reason; the
baseline is the release tag, else its recorded commit. (The check itself, griffe against v0.1.0, is
`make api-check`; a removal without a shim failing it is shown in docs/api/stability.md.)"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def api_check(load_script):
    return load_script(".ci/api_check.py")


def test_a_moved_name_passes_only_while_it_imports_with_a_deprecation_warning(api_check, tmp_path, monkeypatch):
    (tmp_path / "oldplace.py").write_text(
        "import warnings\n\ndef new():\n    return 1\n\nquiet = new\n\n"
        "def __getattr__(name):\n    if name == 'old':\n"
        "        warnings.warn('use oldplace.new', DeprecationWarning, stacklevel=2)\n        return new\n"
        "    raise AttributeError(name)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert api_check.still_imports("oldplace.old")
    assert not api_check.still_imports("oldplace.quiet")  # importable, but nobody is told it moved
    assert not api_check.still_imports("oldplace.gone")
    assert not api_check.still_imports("no_such_module_anywhere.name")


def test_every_name_of_a_moved_module_passes_though_its_alias_warns_once(api_check, tmp_path, monkeypatch):
    (tmp_path / "movedplace.py").write_text(
        "import warnings\n\nwarnings.warn('movedplace moved', DeprecationWarning)\n\none = two = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert api_check.still_imports("movedplace.one") and api_check.still_imports("movedplace.two")
    assert not api_check.still_imports("movedplace.three")


def test_an_allow_list_line_needs_a_reason(api_check, tmp_path, monkeypatch):
    allow = tmp_path / "allow.txt"
    allow.write_text("# header\npathkit_sdk.read_table PARAMETER_CHANGED_DEFAULT  # the old default still reads\n")
    monkeypatch.setattr(api_check, "ALLOW_FILE", allow)
    assert api_check.allowed() == {("pathkit_sdk.read_table", "PARAMETER_CHANGED_DEFAULT")}
    allow.write_text("pathkit_sdk.read_table PARAMETER_CHANGED_DEFAULT\n")
    with pytest.raises(SystemExit, match="line 1"):
        api_check.allowed()


def test_the_committed_allow_list_reads_and_the_baseline_resolves(api_check):
    assert isinstance(api_check.allowed(), set)
    ref = api_check.baseline()
    assert ref in ("v0.1.0", "f99601b07aadee24ff027455084ca81de17d9493")


def test_a_public_modules_scope_is_its_all_not_its_private_submodules(api_check):
    class Member:  # what `_scope` reads of a griffe module or member
        def __init__(self, exports=None, members=None, is_module=True, is_alias=False):
            self.exports, self.members, self.is_module, self.is_alias = exports, members or {}, is_module, is_alias

    # a baseline module without __all__: every name it defined or imported, not its submodules
    old = Member(members={"f": Member(is_module=False), "sub": Member(), "Path": Member(is_alias=True)})
    assert api_check._scope(old, Member(exports=["f", "g"]), None) == ["Path", "f", "g"]
    # with __all__: the names it held then or holds now (a name dropped from __all__ is still checked)
    assert api_check._scope(Member(exports=["a", "b"]), Member(exports=["b"]), None) == ["a", "b"]
    assert api_check._scope(old, Member(exports=["f"]), ["listed"]) == ["listed"]
    assert not api_check._in_scope("pathkit_core.run.fit.fit_stage", "pathkit_core", ["hookimpl", "__version__"])
    assert api_check._in_scope("pathkit_core.features.store.record_status", "pathkit_core.features.store",
                               ["record_status"])
