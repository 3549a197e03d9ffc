"""Resampling of tile batches from the read size to the tile size: antialiased bicubic (Pillow's `BICUBIC`
filter), one tensor operation per batch; the filter, its tolerances and why not Lanczos: docs/wsi.md,
"Resampling"."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - torch's own spelling

from pathkit_core.contracts import PathkitError

#: Recorded in every feature file whose tiles were resampled (and in its extraction key).
RESAMPLING = "bicubic-antialiased"


def resize_tiles(tiles: np.ndarray | torch.Tensor, size: int) -> Any:
    """uint8 tiles (B, H, W, 3) or one tile (H, W, 3) -> the same at (size, size), same type.

    A numpy array comes back as a numpy array, a tensor as a tensor on its device. Tiles
    already at `size` come back unchanged (not copied).
    """
    as_numpy = isinstance(tiles, np.ndarray)
    batch = torch.from_numpy(tiles) if as_numpy else tiles
    single = batch.ndim == 3
    if single:
        batch = batch.unsqueeze(0)
    if batch.ndim != 4 or batch.shape[-1] != 3 or batch.dtype != torch.uint8:
        raise PathkitError(f"resize_tiles: expected uint8 (B, H, W, 3) tiles, got {tuple(batch.shape)} {batch.dtype}")
    if size < 1:
        raise PathkitError(f"resize_tiles: size must be >= 1, got {size}")
    if tuple(batch.shape[1:3]) == (size, size):
        return tiles
    out = _resize(batch, size, uint8_kernel=batch.device.type == "cpu")
    if single:
        out = out[0]
    return out.numpy() if as_numpy else out


def _resize(batch: torch.Tensor, size: int, *, uint8_kernel: bool) -> torch.Tensor:
    # A (B, H, W, 3) array seen as NCHW is channels-last, the layout of the fast uint8 kernel.
    nchw = batch.permute(0, 3, 1, 2)
    if uint8_kernel:
        out = F.interpolate(nchw, size=(size, size), mode="bicubic", antialias=True, align_corners=False)
    else:
        # No uint8 kernel off the CPU: the same filter in float32, one axis at a time with the
        # intermediate rounded and clipped to uint8 as Pillow's and the CPU kernel's are (a single
        # 2-D pass differs from them by up to 11 grey levels on CMU-1, where cubic overshoots clip).
        out = nchw.float()
        for shape in ((out.shape[2], size), (size, size)):
            out = F.interpolate(out, size=shape, mode="bicubic", antialias=True, align_corners=False)
            out = out.add_(0.5).floor_().clamp_(0, 255)
        out = out.to(torch.uint8)
    return out.permute(0, 2, 3, 1).contiguous()
