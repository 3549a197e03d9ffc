"""Whole-slide preprocessing: open slides, resolve mpp, segment tissue, tile, QC, read tiles.

Modules (each imports OpenSlide, numpy and friends lazily or only when used):

- `slide`: `open_slide`, `resolve_mpp`, `SlideError` (every bad-input case has a code)
- `segmentation`: thumbnail reading and pluggable tissue segmenters (the default
  `otsu` is `pathkit_tissue`'s)
- `tiling`: `TilingParams`, tile geometry at a physical resolution, `tile_slide`, `tile_slides`
- `manifest`: the per-slide Parquet tile manifest (`read_manifest`, `write_manifest`)
- `qc`: the QC thumbnail with tissue contour and tile grid
- `reader`: `TileReader`, a torch Dataset streaming uint8 tiles from a manifest
"""
