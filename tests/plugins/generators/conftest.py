"""Fixtures of the generator tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_thread():
    """Tiny models on a shared machine: one torch thread (more only adds contention); restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
