"""Pen/marker ink detection on real images: precision and recall per image and overall.

Images from `$PATHKIT_REALDATA` (default `../shared/data`, README there):

- `slides/CMU-1-Small-Region.svs`, segmented as `pathkit tile` does (no ink on it: every pen
  pixel is a false one; its `pen_fraction` is what the manifest records);
- `patches/no-tissue-*pen*.png`: real marker ink (green, and red with a dark red-violet core)
  on glass; the ink is every pixel that is not glass (the segmenter's own glass rule) and is
  visibly coloured (HSV saturation >= 0.2; the paler halo is neither counted nor penalised);
- `patches/tissue-level*.png` and the two NCT-CRC-HE tiles: H&E tissue, no ink; every
  non-glass pixel is a negative.

Each patch is read as a segmentation-resolution image (4 um/px, `TilingParams.seg_mpp`), the
resolution the pen rules run at. Precision = ink pixels called pen / all non-glass pixels called
pen (halo pixels excluded); recall = ink pixels called pen / ink pixels.

    .venv/bin/python benchmarks/pen_validity.py
"""

from __future__ import annotations

import os
from pathlib import Path

INK_MIN_SATURATION = 0.2


def _pen(rgb, params, mpp):  # noqa: ANN001, ANN202
    from pathkit_tissue.otsu import OtsuTissueSegmenter, hsv_channels

    hue, sat, val = hsv_channels(rgb)
    pen = OtsuTissueSegmenter(params).pen_mask(rgb, hue, sat, val, mpp)
    glass = (val > params.background_value) & (sat < params.background_saturation)
    return pen, sat, glass


def measure(data: Path) -> list[dict]:
    """One row per image: kind, pen fraction, true/false positives, ink pixels and recall."""
    import numpy as np
    from PIL import Image

    from pathkit_core.wsi.segmentation import resize_rgb, segment_slide
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import TilingParams

    params = TilingParams()
    rows = []
    with open_slide(data / "slides" / "CMU-1-Small-Region.svs") as slide:
        thumb, mask, *_ = segment_slide(slide, params)
    rgb = resize_rgb(thumb.rgb, (mask.tissue.shape[1], mask.tissue.shape[0]))
    pen, _, glass = _pen(rgb, params, mask.mpp)
    rows.append({"image": "slides/CMU-1-Small-Region.svs", "kind": "H&E slide, no ink",
                 "pen_fraction": float(mask.info["pen_fraction"]), "tp": 0, "fp": int((pen & ~glass).sum()),
                 "ink": 0})
    patches = sorted((data / "patches").glob("*"))
    for path in patches:
        name = path.name
        if "pen" in name:
            kind = "real marker ink"
        elif name.startswith(("tissue-level", "MUC-", "TUM-")):
            kind = "H&E tissue, no ink"
        else:
            continue
        rgb = np.asarray(Image.open(path).convert("RGB"))
        pen, sat, glass = _pen(rgb, params, params.seg_mpp)
        if kind == "real marker ink":
            ink = ~glass & (sat >= INK_MIN_SATURATION)  # the paler halo: neither counted nor penalised
            tp, fp, n_ink = int((pen & ink).sum()), 0, int(ink.sum())
        else:
            tp, fp, n_ink = 0, int((pen & ~glass).sum()), 0
        rows.append({"image": f"patches/{name}", "kind": kind, "pen_fraction": float(pen.mean()),
                     "tp": tp, "fp": fp, "ink": n_ink})
    return rows


def main() -> None:
    data = Path(os.environ.get("PATHKIT_REALDATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    rows = measure(data)
    print(f"{'image':48s} {'kind':20s} {'pen_fraction':>12s} {'recall':>7s} {'false px':>8s}")
    for r in rows:
        recall = f"{r['tp'] / r['ink']:.3f}" if r["ink"] else "-"
        print(f"{r['image']:48s} {r['kind']:20s} {r['pen_fraction']:12.4f} {recall:>7s} {r['fp']:8d}")
    tp, fp, ink = (sum(r[k] for r in rows) for k in ("tp", "fp", "ink"))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    print(f"overall: precision {precision:.4f}, recall {tp / ink:.4f} ({tp} of {ink} ink pixels found, "
          f"{fp} pixels of tissue or slide called ink)")


if __name__ == "__main__":
    main()
