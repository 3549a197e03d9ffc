"""Whole-slide preprocessing: open slides and resolve their mpp (`slide`), segment tissue (`segmentation`),
tile (`tiling`, `manifest`, `qc`) and read tiles (`reader`); docs/wsi.md. Heavy libraries load lazily."""
