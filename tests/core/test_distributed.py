"""The process-group closer that keeps multi-process runs from aborting at interpreter exit."""

from __future__ import annotations

import pytest

import pathkit_core.distributed as distributed


@pytest.fixture
def registered(monkeypatch):
    calls = []
    real_register = distributed.atexit.register

    def register(fn, *args, **kwargs):  # torch registers its own exit handlers too
        if getattr(fn, "__module__", None) == distributed.__name__:
            calls.append(fn)
            return fn
        return real_register(fn, *args, **kwargs)

    monkeypatch.setattr(distributed.atexit, "register", register)
    monkeypatch.setattr(distributed, "_process_group_closer_registered", False)
    monkeypatch.setattr(distributed, "_GLOO_DRAIN_SECONDS", 0.0)
    return calls


def test_nothing_is_registered_without_a_process_group(registered):
    import torch.distributed as dist

    assert not dist.is_initialized()
    distributed.close_process_group_at_exit()
    assert registered == []


def test_closer_is_registered_once_and_destroys_the_group(registered, tmp_path):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        distributed.close_process_group_at_exit()
        distributed.close_process_group_at_exit()
        assert len(registered) == 1
        registered[0]()
        assert not dist.is_initialized()
        registered[0]()  # a second call (another closer already ran) is harmless
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
