"""Values computed from a metric's own code, kept across processes (`pathkit_metrics/derived_cache.py`)."""

from __future__ import annotations

import os

import pytest
from pathkit_metrics import derived_cache


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A cache folder of the test's own and a source folder with two modules."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(derived_cache.ENV_DERIVED_CACHE, raising=False)
    sources = tmp_path / "pkg"
    sources.mkdir()
    (sources / "a.py").write_text("TABLE = {'x': 1}\n")
    (sources / "b.py").write_text("def rule(s):\n    return s.lower()\n")
    calls: list[int] = []

    def build():
        calls.append(1)
        return [("key", "canonical", None), {"n": len(calls)}]

    return sources, build, calls


def test_built_once_then_read_back_while_the_sources_stay_the_same(setup):
    sources, build, calls = setup
    first = derived_cache.derived("table", sources, build)
    assert derived_cache.derived("table", sources, build) == first and len(calls) == 1
    assert derived_cache.cache_file("table").is_file()


@pytest.mark.parametrize("edit", ["change", "add", "remove", "rename"])
def test_any_edit_of_a_source_file_builds_it_again(setup, edit):
    sources, build, calls = setup
    derived_cache.derived("table", sources, build)
    if edit == "change":
        (sources / "a.py").write_text("TABLE = {'x': 2}\n")
    elif edit == "add":
        (sources / "c.py").write_text("\n")
    elif edit == "remove":
        (sources / "b.py").unlink()
    else:
        (sources / "b.py").rename(sources / "b2.py")
    value = derived_cache.derived("table", sources, build)
    assert len(calls) == 2 and value[1] == {"n": 2}
    assert derived_cache.derived("table", sources, build) == value and len(calls) == 2  # kept anew


def test_another_interpreter_builds_it_again(setup, monkeypatch):
    sources, build, calls = setup
    derived_cache.derived("table", sources, build)
    monkeypatch.setattr(derived_cache.sys, "version", derived_cache.sys.version + " (another build)")
    derived_cache.derived("table", sources, build)
    assert len(calls) == 2


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", "truncated"])
def test_a_damaged_file_is_built_again_and_replaced(setup, damage):
    sources, build, calls = setup
    derived_cache.derived("table", sources, build)
    path = derived_cache.cache_file("table")
    path.write_bytes(path.read_bytes()[:20] if damage == "truncated" else damage)
    assert derived_cache.derived("table", sources, build)[1] == {"n": 2}
    assert derived_cache.derived("table", sources, build)[1] == {"n": 2} and len(calls) == 2


def test_off_and_an_unwritable_folder(setup, monkeypatch, tmp_path):
    sources, build, calls = setup
    monkeypatch.setenv(derived_cache.ENV_DERIVED_CACHE, "off")
    assert derived_cache.cache_file("table") is None
    derived_cache.derived("table", sources, build)
    derived_cache.derived("table", sources, build)
    assert len(calls) == 2
    monkeypatch.delenv(derived_cache.ENV_DERIVED_CACHE)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert derived_cache.derived("table", sources, build)[1] == {"n": 3}  # computed, nothing raised
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))


def test_crqs_builtin_vocabulary_is_what_its_code_computes():
    """The kept built-in terms and pattern are the ones the current code builds."""
    from pathkit_metrics._crqs import vocabulary

    rows, pattern = vocabulary._builtin_rows()
    assert {row[0]: vocabulary.Term(*row) for row in rows} == vocabulary._BUILTIN_TERMS
    assert list(vocabulary._BUILTIN_TERMS) == [row[0] for row in rows]  # the same order
    assert pattern == vocabulary._BUILTIN_PATTERN
    assert vocabulary.BUILTIN_VOCABULARY.pattern.pattern == pattern
