"""Tile features: extraction engine, feature store, QC statistics and h5 interop."""
