from __future__ import annotations

import pytest

from ._suite import run_suite


@pytest.fixture(scope="session")
def shared_suite(tmp_path_factory):
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        yield run_suite(tmp_path_factory.mktemp("suite"))
    finally:
        torch.set_num_threads(previous)
