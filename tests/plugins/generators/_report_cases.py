"""Synthetic report cases for the report-generator tests: the report is a known function of the features."""

from __future__ import annotations

import random

# Real REG 2025 phrasings; the most frequent class is over-represented so that the
# most-frequent-report baseline is a real bar to clear.
REG_REPORTS = (
    "Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia",
    "Stomach, endoscopic biopsy;\n  Adenocarcinoma, poorly differentiated",
    "Colon, colonoscopic biopsy;\n  Adenocarcinoma, moderately differentiated",
    "Uterine cervix, colposcopic biopsy;\n  Low-grade squamous intraepithelial lesion (LSIL; CIN 1)",
)
CLASS_WEIGHTS = (0.4, 0.2, 0.2, 0.2)
FEATURE_DIM = 16


def make_cases(n: int, seed: int, *, signal: float = 5.0, tiles: tuple[int, int] = (6, 16)) -> list[dict]:
    """Cases whose report is REG_REPORTS[c], c being the feature dimension raised by `signal`
    in every tile (so c = argmax of the mean tile feature over the first four dimensions)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        c = rng.choices(range(len(REG_REPORTS)), weights=CLASS_WEIGHTS)[0]
        n_tiles = rng.randint(*tiles)
        features = torch.randn(n_tiles, FEATURE_DIM, generator=gen)
        features[:, c] += signal
        coords = torch.stack([torch.arange(n_tiles) * 224, torch.zeros(n_tiles, dtype=torch.long)], 1)
        cases.append({"case_id": f"s{seed}-{i:03d}", "features": features, "coords": coords,
                      "target": REG_REPORTS[c], "label": c})
    return cases
