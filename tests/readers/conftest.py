"""Fixtures of the slide readers' tests (`pathkit_readers`)."""

from __future__ import annotations

import pytest


def _needs(reader: str) -> None:
    """Skip, naming the extra, when the reader's library is not installed."""
    from pathkit_core.wsi.reader_choice import get_reader

    cls = get_reader(reader)
    why = cls.unavailable()
    if why is not None:
        pytest.skip(f'the {reader} reader needs pip install "pathkit[{cls.extra}]": {why}')


@pytest.fixture(scope="session")
def needs():
    """`needs(reader)` skips the test, naming the extra to install, when `reader` cannot run here."""
    return _needs


@pytest.fixture(scope="module")
def formats(load_benchmark):
    """benchmarks/slide_formats.py: each format's own writer."""
    return load_benchmark("slide_formats")
