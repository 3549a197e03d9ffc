"""Compiled regular expressions kept across processes (`pathkit_metrics/pattern_cache.py`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from pathkit_metrics import pattern_cache

PATTERNS = [
    (r"\bgrade (\d)(?: of (\d))?", 0),
    (r"(?P<size>\d+(?:\.\d+)?) ?(?P<unit>cm|mm)\b", re.IGNORECASE),
    (r"(?<![a-z0-9])y?pt(is|x|[0-4](?:[a-d][12]?)?)(?![a-z0-9])", 0),
    (r"(?m)^ *(?:margins?|size) *:.*$", 0),
    (r"[\u2018\u2019]|caf\u00e9", 0),
    (r"(a|b)*?c{2,5}(?=d)", re.DOTALL | re.VERBOSE),
]
TEXTS = ["Grade 2 of 3, grade 1", "tumour 3.5 CM and 12 mm", "ypT2a pt1 xpt3", "margins: clear\nsize : 2 cm",
         "\u2018caf\u00e9\u2019", "abaccccd acd"]


def _same(made: re.Pattern[str], pattern: str, flags: int) -> None:
    reference = re.compile(pattern, flags)
    assert made.pattern == reference.pattern and made.flags == reference.flags
    assert made.groups == reference.groups and made.groupindex == reference.groupindex
    for text in TEXTS:
        assert [m.span() for m in made.finditer(text)] == [m.span() for m in reference.finditer(text)]
        assert [m.groups() for m in made.finditer(text)] == [m.groups() for m in reference.finditer(text)]
        assert made.sub("#", text) == reference.sub("#", text)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache file of the test's own, and the module's state as in a new process."""
    monkeypatch.setenv(pattern_cache.ENV_PATTERN_CACHE, str(tmp_path / "patterns.marshal"))
    monkeypatch.setattr(pattern_cache, "_loaded", None)
    monkeypatch.setattr(pattern_cache, "_used", {})
    monkeypatch.setattr(pattern_cache, "_hooked", True)  # no exit hook from a test
    return tmp_path / "patterns.marshal"


def _new_process(monkeypatch) -> None:
    monkeypatch.setattr(pattern_cache, "_loaded", None)
    monkeypatch.setattr(pattern_cache, "_used", {})


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS)
def test_compiled_is_re_compile_cold_and_from_the_file(fresh, monkeypatch, pattern, flags):
    _same(pattern_cache.compiled(pattern, flags), pattern, flags)
    assert pattern_cache.save() == fresh and fresh.is_file()
    _new_process(monkeypatch)

    def no_compiling(*_):
        raise AssertionError("compiled again although the file holds the pattern")

    monkeypatch.setattr(pattern_cache, "_generated", no_compiling)
    _same(pattern_cache.compiled(pattern, flags), pattern, flags)


def test_the_file_grows_by_merging_and_is_not_rewritten_for_nothing(fresh, monkeypatch):
    pattern_cache.compiled(*PATTERNS[0])
    pattern_cache.save()
    _new_process(monkeypatch)
    pattern_cache.compiled(*PATTERNS[1])
    pattern_cache.save()
    assert set(pattern_cache._read(fresh)) == {PATTERNS[0], (PATTERNS[1][0], int(PATTERNS[1][1]))}
    _new_process(monkeypatch)
    pattern_cache.compiled(*PATTERNS[0])
    stamp = fresh.stat().st_mtime_ns
    assert pattern_cache.save() is None and fresh.stat().st_mtime_ns == stamp  # nothing new


def test_over_the_limit_only_what_this_process_used_is_kept(fresh, monkeypatch):
    monkeypatch.setattr(pattern_cache, "MAX_ENTRIES", 3)
    for pattern, flags in PATTERNS[:3]:
        pattern_cache.compiled(pattern, flags)
    pattern_cache.save()
    _new_process(monkeypatch)
    pattern_cache.compiled(*PATTERNS[3])
    pattern_cache.save()
    assert list(pattern_cache._read(fresh)) == [PATTERNS[3]]


@pytest.mark.parametrize("damage", ["truncated", "checksum", "garbage", "empty"])
def test_a_damaged_file_is_ignored_and_written_anew(fresh, monkeypatch, damage):
    pattern_cache.compiled(*PATTERNS[0])
    pattern_cache.save()
    data = fresh.read_bytes()
    fresh.write_bytes({"truncated": data[: len(data) // 2], "checksum": data[:4] + data[5:] + b"x",
                       "garbage": os.urandom(200), "empty": b""}[damage])
    _new_process(monkeypatch)
    _same(pattern_cache.compiled(*PATTERNS[2]), *PATTERNS[2])
    assert pattern_cache.save() == fresh
    assert list(pattern_cache._read(fresh)) == [PATTERNS[2]]


def test_an_entry_the_engine_refuses_falls_back_to_compiling(fresh, monkeypatch):
    pattern, flags = PATTERNS[0]
    good = pattern_cache._generated(pattern, flags)
    refused = (99999).to_bytes(4, "little") * 3
    monkeypatch.setattr(pattern_cache, "_loaded", {(pattern, flags): (good[0], refused, *good[2:])})
    _same(pattern_cache.compiled(pattern, flags), pattern, flags)
    assert pattern_cache._used[(pattern, flags)] == good


def test_a_changed_private_compiler_costs_time_not_the_pattern(fresh, monkeypatch):
    def moved(*_):
        raise AttributeError("module 're._compiler' has no attribute '_code'")

    monkeypatch.setattr(pattern_cache, "_generated", moved)
    _same(pattern_cache.compiled(*PATTERNS[1]), *PATTERNS[1])
    assert pattern_cache.save() is None and not fresh.exists()


def test_a_malformed_pattern_is_re_error(fresh):
    with pytest.raises(re.error):
        pattern_cache.compiled(r"(unclosed")


def test_off_and_an_unwritable_folder(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv(pattern_cache.ENV_PATTERN_CACHE, "off")
    assert pattern_cache.cache_file() is None
    _same(pattern_cache.compiled(*PATTERNS[0]), *PATTERNS[0])
    assert pattern_cache.save() is None and not pattern_cache._used
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(pattern_cache.ENV_PATTERN_CACHE, str(blocker / "patterns.marshal"))
    pattern_cache.compiled(*PATTERNS[0])
    assert pattern_cache.save() is None  # the next process compiles again; nothing fails


def test_the_default_file_is_per_interpreter_under_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(pattern_cache.ENV_PATTERN_CACHE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = pattern_cache.cache_file()
    assert path.parent == tmp_path / "pathkit" / "regex"
    assert path.name.startswith(sys.implementation.cache_tag + "-")


def test_crqs_scores_the_same_with_the_cache_empty_warm_and_off(tmp_path):
    """Whole `pathkit score -m crqs` processes: the first writes the cache, the second reads
    every pattern from it, the third compiles without it; the outputs are identical."""
    pairs = {"a": {"target": "Invasive ductal carcinoma, grade 2. Margins free.",
                   "pred": "Invasive lobular carcinoma, grade 3; lymphovascular invasion present."},
             "b": {"target": "Tubular adenoma with low grade dysplasia.", "pred": "Tubular adenoma, low grade."},
             "c": {"target": "Chronic gastritis. Negative for Helicobacter pylori.",
                   "pred": "Chronic active gastritis with H. pylori."}}
    data = tmp_path / "pairs.json"
    data.write_text(json.dumps(pairs))
    cache = tmp_path / "patterns.marshal"
    outputs = []
    for setting in (str(cache), str(cache), "off"):
        env = {**os.environ, pattern_cache.ENV_PATTERN_CACHE: setting, "PATHKIT_PLUGIN_INDEX": "off"}
        done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "score", "-p", str(data), "-m", "crqs",
                               "--json"], env=env, capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
        if len(outputs) == 1:
            assert len(pattern_cache._read(cache)) > 50  # the CRQS patterns the reports needed
    assert outputs[0] == outputs[1] == outputs[2]
    assert json.loads(outputs[0])


def test_over_the_size_limit_only_what_this_process_used_is_kept(fresh, monkeypatch):
    for pattern, flags in PATTERNS[:3]:
        pattern_cache.compiled(pattern, flags)
    pattern_cache.save()
    monkeypatch.setattr(pattern_cache, "MAX_BYTES", fresh.stat().st_size)  # the next entry tips it over
    _new_process(monkeypatch)
    pattern_cache.compiled(*PATTERNS[3])
    pattern_cache.save()
    assert list(pattern_cache._read(fresh)) == [PATTERNS[3]]
