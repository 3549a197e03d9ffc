"""Tissue segmenters shipped in the `pathkit` distribution outside the core, registered through its
`pathkit` entry point like any plugin (`register_segmenters`): `otsu`, the default
(`pathkit_tissue.otsu`), with the binary morphology it runs on thumbnails (`morphology`), and the
learned `hest` and `grandqc` (`pathkit_tissue.deep`; their weights are given by path, never
downloaded)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_segmenters(register):
    from pathkit_tissue.deep import GrandQCTissueSegmenter, HestTissueSegmenter
    from pathkit_tissue.otsu import OtsuTissueSegmenter

    register(OtsuTissueSegmenter)
    register(HestTissueSegmenter)
    register(GrandQCTissueSegmenter)
