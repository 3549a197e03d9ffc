"""The CRQS patterns compiled on first use (`_crqs/lazy_pattern.py`)."""

from __future__ import annotations

import re

import pytest
from pathkit_metrics._crqs.lazy_pattern import LazyPattern, lazy


def _compiled(pattern: LazyPattern) -> bool:
    try:  # object.__getattribute__ does not fall back to __getattr__, so this does not compile it
        object.__getattribute__(pattern, "search")
    except AttributeError:
        return False
    return True


def test_source_is_at_hand_without_compiling():
    pattern = lazy(r"\bgrade (\d)")
    assert pattern.pattern == r"\bgrade (\d)" and not _compiled(pattern)
    combined = lazy(pattern.pattern + r"|\bg(\d)")  # building a pattern from another's source
    assert not _compiled(pattern) and not _compiled(combined)


def test_first_use_compiles_and_answers_like_re():
    text = "Grade 2 of 3; G3; grade 1"
    pattern, reference = lazy(r"grade (\d)", re.IGNORECASE), re.compile(r"grade (\d)", re.IGNORECASE)
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in reference.finditer(text)]
    assert _compiled(pattern)
    assert pattern.search(text, 3).group(1) == "1"
    assert pattern.match(text).group(0) == "Grade 2"
    assert pattern.fullmatch("grade 4") is not None and pattern.fullmatch("grade 45") is None
    assert pattern.sub("G", text) == reference.sub("G", text)
    assert pattern.findall(text) == ["2", "1"] and pattern.split("a grade 1 b") == ["a ", "1", " b"]
    assert pattern.groups == 1 and lazy(r"(?P<v>\d)").groupindex == {"v": 1}


def test_later_calls_go_straight_to_the_compiled_pattern():
    pattern = lazy(r"\d+")
    pattern.search("a1")
    # the instance holds the compiled pattern's own bound method: no Python wrapper per call
    assert type(pattern.search) is type(re.compile("x").search)
    compiled = pattern.search.__self__
    assert isinstance(compiled, re.Pattern) and compiled.pattern == r"\d+"
    assert pattern.finditer.__self__ is compiled and pattern.sub.__self__ is compiled


def test_unknown_attribute_and_bad_pattern():
    pattern = lazy(r"(")
    with pytest.raises(AttributeError):
        pattern.no_such_attribute  # noqa: B018
    assert not _compiled(pattern)
    with pytest.raises(re.error):  # a malformed pattern fails where it is first used
        pattern.search("x")


def _dict_trie(words: list[str]) -> str:
    """The prefix-tree alternation built the plain way (a tree of dicts, walked recursively)."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = True

    def walk(node: dict) -> str:
        branches = [re.escape(ch) + walk(child) for ch, child in sorted(node.items()) if ch != ""]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return r"\b" + walk(tree) + r"\b"


def test_trie_pattern_is_the_prefix_tree_of_its_words():
    import random

    from pathkit_metrics._crqs.normalise import trie_pattern
    from pathkit_metrics._crqs.scoring import resolve_vocabulary

    terms = sorted(resolve_vocabulary({}).terms)
    assert trie_pattern(terms) == _dict_trie(terms)
    rng = random.Random(3)
    for _ in range(2000):  # short words over a small alphabet: shared prefixes, empty words, duplicates
        words = ["".join(rng.choice("ab .c(+\u00e9") for _ in range(rng.randint(0, 5)))
                 for _ in range(rng.randint(0, 9))]
        assert trie_pattern(words) == _dict_trie(words), words
    found = re.compile(trie_pattern(["carcinoma", "carcinoma in situ", "car"])).findall("a carcinoma in situ car")
    assert found == ["carcinoma in situ", "car"]  # the longest word at each position
