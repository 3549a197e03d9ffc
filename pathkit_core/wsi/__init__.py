"""Whole-slide images: opening, mpp resolution, tissue masks, tiling, tile reading, synthetic slides."""
