"""The slide encoders' tests share these: an encoder by name, and its published sizes checked."""

from __future__ import annotations

from pathkit_core.plugins import get_component


def slide_encoder(name: str, **overrides):
    """The registered slide encoder `name`, its architecture changed by `overrides` (tiny members)."""
    return get_component("slide-encoder", name)(arch_overrides=overrides or None)


def check_published(name: str, published: tuple) -> type:
    """The class of slide encoder `name`, checked against its published (patch encoder, patch dim,
    embed dim, tile px, mpp, parameters)."""
    encoder, patch_dim, dim, px, mpp, params = published
    cls = get_component("slide-encoder", name)
    assert (cls.patch_encoder, cls.patch_dim, cls.embed_dim, cls.tile_spec.tile_px, cls.tile_spec.mpp) == (
        encoder, patch_dim, dim, px, mpp)
    assert cls().parameter_count() == params == cls.parameters
    return cls
