"""Resampling of tile batches from the read size to the tile size: antialiased bicubic, one call per batch.

The reader reads `read_px` pixels at a pyramid level and the encoder expects `tile_px` at the
target mpp (CMU-1 at 0.499 um/px reads 257 px for a 256-px tile; a 0.2527 um/px 40x slide reads
507 px from level 0). The whole batch is resized in one tensor operation: on the CPU torch's
uint8 antialiased kernel (the separable fixed-point algorithm of Pillow's `BICUBIC` filter,
Keys cubic a = -0.5 with the support widened by the scale when downsampling), which is
within two grey levels of Pillow's `Image.resize(..., BICUBIC)` (fixed-point rounding, under 1%
of the values); on a GPU the same filter in floating point, rounded back to uint8 after each
axis as Pillow does (within two grey levels of the CPU's). The filter replaced Pillow's
Lanczos-3 per tile (1.3-1.7 ms per 257 -> 256 px tile against 0.14 ms): docs/wsi.md section 5
states the difference to the earlier Lanczos tiles (about one grey level on average) and what
it does to features.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError

if TYPE_CHECKING:
    import numpy as np
    import torch

#: Recorded in every feature file whose tiles were resampled (and in its extraction key).
RESAMPLING = "bicubic-antialiased"


def resize_tiles(tiles: np.ndarray | torch.Tensor, size: int) -> Any:
    """uint8 tiles (B, H, W, 3) or one tile (H, W, 3) -> the same at (size, size), same type.

    A numpy array comes back as a numpy array, a tensor as a tensor on its device. Tiles
    already at `size` come back unchanged (not copied).
    """
    import numpy as np
    import torch

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
    import torch
    import torch.nn.functional as F

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
