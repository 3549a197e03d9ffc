"""The slide encoders' tests share these: the published sizes, an encoder by name."""

from __future__ import annotations

from pathkit_core.plugins import get_component

# name: (patch encoder, patch dim, embed dim, tile px, mpp, parameters); the transformers' counted by hand
# from their configs
PUBLISHED = {
    "feather": ("conch15", 768, 512, 512, 0.5, 843_501),
    "madeleine": ("conch", 512, 512, 256, 1.0, 4_996_740),
    "chief": ("ctranspath", 768, 512, 256, 1.0, 1_185_032),
    # 590,592 patch embedding + 768 class token + 6 x 7,087,872 blocks + 1,536 norm + 2,463,744 and
    # 2,366,208 attentional pools + 589,824 projection
    "titan": ("conch15", 768, 768, 512, 0.5, 48_539_904),
    # 1,180,416 tile embedding + 768 class token + 12 x 7,095,552 LongNet layers + 2 x 1,536 norms
    "gigapath-slide": ("gigapath", 1536, 768, 256, 0.5, 86_330_880),
    # 656,640 latents + 2 x 2,560 norms + 2 x 14,754,560 cross-attention layers + 6 x 11,477,760 blocks
    "prism": ("virchow", 2560, 1280, 224, 0.5, 99_037_440),
}


def slide_encoder(name: str, **overrides):
    """The registered slide encoder `name`, its architecture changed by `overrides` (tiny members)."""
    return get_component("slide-encoder", name)(arch_overrides=overrides or None)


def check_published(name: str) -> type:
    """The class of slide encoder `name`, checked against its row of `PUBLISHED`."""
    encoder, patch_dim, dim, px, mpp, params = PUBLISHED[name]
    cls = get_component("slide-encoder", name)
    assert (cls.patch_encoder, cls.patch_dim, cls.embed_dim, cls.tile_spec.tile_px, cls.tile_spec.mpp) == (
        encoder, patch_dim, dim, px, mpp)
    assert cls().parameter_count() == params == cls.parameters
    return cls
