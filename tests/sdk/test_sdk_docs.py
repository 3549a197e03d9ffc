"""The API pages carry the code's signatures in their own text (docs/gen_sdk_signatures.py), and
the pages fail this test the moment the code changes under them."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMAND = "python docs/gen_sdk_signatures.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_sdk_signatures", REPO / "docs" / "gen_sdk_signatures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """Import a throwaway module written from source text."""

    def load(name: str, source: str):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        sys.modules.pop(name, None)
        return importlib.import_module(name)

    yield load


def test_every_api_page_holds_the_signatures_of_the_code(gen):
    pages = gen.pages()
    assert {p.name for p in pages} >= {"sdk.md", "contracts.md", "hooks.md", "helpers.md", "report.md", "stats.md"}
    stale = [p.name for p in pages if gen.written(p) != p.read_text(encoding="utf-8")]
    assert not stale, f"docs/api/{', '.join(stale)}: the written signatures differ from the code; run {COMMAND}"


def test_the_sdk_page_documents_each_public_helper_once(gen):
    import pathkit_sdk

    listed = [n for names in gen.SDK_SECTIONS.values() for n in names]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(pathkit_sdk.__all__)
    page = (REPO / "docs" / "api" / "sdk.md").read_text(encoding="utf-8")
    for name in listed:
        assert page.count(f"\n### `{name}`\n") == 1, name
    # the signature and the docstring are in the page's own text
    assert "def read_table(path: str | Path, what: str = 'table') -> Table" in page
    assert "Read a cohort table" in page
    assert "| skip_missing | bool | False |" in page  # COHORT_OPTIONS as a table


def test_a_page_whose_code_changed_fails_the_check_and_is_rewritten(gen, tmp_path, monkeypatch):
    api = tmp_path / "api"
    api.mkdir()
    original = (REPO / "docs" / "api" / "sdk.md").read_text(encoding="utf-8")
    line = "def read_table(path: str | Path, what: str = 'table') -> Table"
    (api / "sdk.md").write_text(original.replace(line, line.replace("'table'", "'cohort'")), encoding="utf-8")
    monkeypatch.setattr(gen, "API", api)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert (api / "sdk.md").read_text(encoding="utf-8") == original
    assert gen.main(["--check"]) == 0


def test_signatures_keep_annotations_as_written_and_name_module_constants(gen, toy):
    module = toy("toy_sig", '''
        from __future__ import annotations
        LIMITS = (1, 2)
        def short(a: int, b: str = "x", *, c: tuple[int, ...] = LIMITS) -> list[str]:
            """Short."""
        def long_one(first_parameter: dict[str, int], second_parameter: float = 0.5, /, *args: int,
                     keyword_only_parameter: str | None = None, **rest: object) -> None:
            pass
        ''')
    assert gen.signature_text(module.short) == \
        "short(a: int, b: str = 'x', *, c: tuple[int, ...] = LIMITS) -> list[str]"
    assert gen.signature_text(module.long_one) == (
        "long_one(\n    first_parameter: dict[str, int],\n    second_parameter: float = 0.5,\n    /,\n"
        "    *args: int,\n    keyword_only_parameter: str | None = None,\n    **rest: object,\n) -> None")


def test_a_class_is_written_with_its_own_attributes_and_methods(gen, toy):
    module = toy("toy_cls", '''
        from __future__ import annotations
        from dataclasses import dataclass, field
        from typing import ClassVar

        class Base:
            def inherited(self) -> None: ...

        @dataclass
        class Row(Base):
            name: str
            tags: list[str] = field(default_factory=list)
            kind: ClassVar[str] = "row"

            def label(self, upper: bool = False) -> str:
                return self.name

            @property
            def size(self) -> int:
                return 1

            @classmethod
            def make(cls, name: str) -> Row:
                return cls(name)

            def _hidden(self) -> None: ...
        ''')
    assert gen.class_stub(module.Row) == (
        "class Row(Base):\n    name: str\n    tags: list[str] = field(default_factory=list)\n"
        "    kind: ClassVar[str] = 'row'\n    def label(self, upper: bool = False) -> str\n"
        "    size: int  # property\n    @classmethod def make(cls, name: str) -> Row")


def test_a_directive_page_lists_the_members_it_names_or_the_modules_public_names(gen, toy):
    module = toy("toy_mod", '''
        """A toy."""
        from os.path import join
        A = 1
        _B = 2
        def f(x: int) -> int:
            return x
        class C:
            pass
        ''')
    page = f"# Toy\n\n::: {module.__name__}\n\n::: {module.__name__}\n    options:\n      members: [f]\n"
    assert gen.directives(page) == [("toy_mod", None), ("toy_mod", ["f"])]
    assert gen.module_names(module, None) == ["A", "f", "C"]  # defined here, source order; not `join`
    block = gen.directive_signatures(page)
    assert block.count("def f(x: int) -> int") == 2 and "A = 1" in block and "_B" not in block


def test_the_generator_writes_pages_in_place_from_the_command_line(gen, tmp_path, monkeypatch):
    api = tmp_path / "api"
    shutil.copytree(REPO / "docs" / "api", api)
    page = api / "stats.md"
    page.write_text(page.read_text(encoding="utf-8").split(gen.BEGIN)[0], encoding="utf-8")  # block removed
    monkeypatch.setattr(gen, "API", api)
    assert gen.main(["--check"]) == 1
    gen.main([])
    assert page.read_text(encoding="utf-8") == (REPO / "docs" / "api" / "stats.md").read_text(encoding="utf-8")
