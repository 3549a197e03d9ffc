"""Code cites pages users have: every `docs/...md` path named in a docstring, string or comment of
the code exists, and nothing cites the project's background notes (DESIGN.md, REFERENCES), which are
not in the repository. Read with `tokenize`, so only comments and strings count (a test's variable
named REFERENCES is no citation)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# every shipped package (each top-level pathkit_* folder, the plugin distributions, the example
# plugin) and the code around it; a new package is covered without being listed
CODE_ROOTS = (*sorted(p.name for p in ROOT.glob("pathkit_*") if (p / "__init__.py").is_file()),
              "plugins", "examples", "benchmarks", "tests", ".ci", "docs")
DOC_PATH = re.compile(r"docs/[\w./-]+?\.md")
BACKGROUND = re.compile(r"\bDESIGN\b|\bREFERENCES\b")
# This file names the two notes to forbid them; nothing else may.
SELF = Path(__file__).resolve()


def _code_files() -> list[Path]:
    files = []
    for name in CODE_ROOTS:
        files += [p for p in (ROOT / name).rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts]
    return sorted(files)


def citations_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and string literal of a module's source."""
    out = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING) or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            out.append((token.start[0], token.string))
    return out


@pytest.fixture(scope="module")
def texts() -> dict[Path, list[tuple[int, str]]]:
    return {path: citations_text(path.read_text(encoding="utf-8")) for path in _code_files() if path != SELF}


def test_every_cited_docs_page_exists(texts):
    missing = sorted({f"{path.relative_to(ROOT)}:{line}: {cited}" for path, found in texts.items()
                      for line, text in found for cited in DOC_PATH.findall(text.replace("\n", " "))
                      if not (ROOT / cited).is_file()})
    assert not missing, "docs pages cited but not in the repository:\n" + "\n".join(missing)


def test_no_code_cites_the_background_notes(texts):
    cited = sorted(f"{path.relative_to(ROOT)}:{line}" for path, found in texts.items() for line, text in found
                   if BACKGROUND.search(text))
    assert not cited, f"cites DESIGN.md or REFERENCES (not in the repository; cite a docs/ page or the paper): {cited}"


def test_no_docs_page_cites_the_background_notes():
    cited = sorted(f"{page.relative_to(ROOT)}:{number}" for page in (ROOT / "docs").rglob("*.md")
                   for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
                   if BACKGROUND.search(line))
    assert not cited, f"docs cite DESIGN.md or REFERENCES (not in the repository): {cited}"


def test_the_scan_covers_all_shipped_code():
    """Every folder holding Python code at the top of the repository is scanned (a package added
    later is not silently left out)."""
    with_code = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in (".venv", ".git", "build")
                 and not p.name.endswith(".egg-info") and any(p.rglob("*.py"))}
    assert with_code <= set(CODE_ROOTS), sorted(with_code - set(CODE_ROOTS))
    assert {"pathkit_core", "pathkit_sdk", "pathkit_tasks", "pathkit_bench", "pathkit_interop",
            "pathkit_tissue"} <= set(CODE_ROOTS)


def test_the_scan_sees_comments_and_docstrings_and_not_names():
    source = '"""See docs/nowhere.md."""\nREFERENCES = [1]  # after REFERENCES, "CRQS"\nx = "DESIGN.md section 5"\n'
    found = citations_text(source)
    assert [line for line, _ in found] == [1, 2, 3]
    assert DOC_PATH.findall(found[0][1]) == ["docs/nowhere.md"]
    assert all(BACKGROUND.search(text) for _, text in found[1:])
