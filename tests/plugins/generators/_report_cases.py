"""Synthetic report cases for the report-generator tests (the report is a known function of the features),
and the checks every report generator passes on them: overfitting one batch, learning, exact rebuilds."""

from __future__ import annotations

import json
import random

from _fit import fit_batch

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


def overfit_one_batch(build_model, steps: int):
    """Train a model from `build_model(targets)` on one batch of four different REG reports.

    Returns (model in eval mode, batch, last loss, the batch's target reports)."""
    import torch

    torch.manual_seed(0)  # the model's initial weights: the same whatever ran before in the process
    cases = make_cases(4, seed=3)
    for case, report in zip(cases, REG_REPORTS, strict=True):
        case["target"] = report  # four different reports in one batch
    model = build_model([c["target"] for c in cases])
    batch = model.collate(cases)
    losses = fit_batch(model, batch, torch.optim.AdamW(model.parameters(), lr=1e-2), steps)
    return model, batch, losses[-1], [c["target"] for c in cases]


def assert_learns(build_model, out_dir, *, epochs: int, margin: float, loss_ratio: float) -> None:
    """Fit on the synthetic task with the core trainer: the validation exact-match accuracy beats the
    most-frequent report (under 0.5) by `margin`, and the validation loss falls `loss_ratio`-fold."""
    from collections import Counter

    from pathkit_core.training.trainer import TrainConfig, fit, load_checkpoint, predict

    train, val = make_cases(32, seed=1), make_cases(12, seed=2)
    model = build_model([c["target"] for c in train])
    cfg = TrainConfig(max_epochs=epochs, lr=5e-3, batch_size=4, early_stop_patience=None, progress=False, cpu=True)
    result = fit(model, train, val, cfg, out_dir)
    load_checkpoint(result.best_checkpoint, model)
    predictions = predict(model, val, batch_size=len(val))
    accuracy = sum(predictions[c["case_id"]] == c["target"] for c in val) / len(val)
    most_frequent = Counter(c["target"] for c in train).most_common(1)[0][0]
    baseline = sum(c["target"] == most_frequent for c in val) / len(val)
    assert baseline < 0.5
    assert accuracy >= baseline + margin, (accuracy, baseline)
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"] / loss_ratio


def assert_rebuilds(build_model) -> tuple:
    """A model for five cases, and one built for other targets from its exported state (through JSON,
    as the checkpoint side-car holds it) given its weights, predict alike; returns (model, rebuilt,
    state)."""
    cases = make_cases(5, seed=4, tiles=(1, 30))
    model = build_model([c["target"] for c in cases]).eval()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    state = json.loads(json.dumps(model.export_state()))
    rebuilt = build_model(["something else entirely"], state=state).eval()
    rebuilt.load_state_dict(weights)
    batch = model.collate(cases)
    assert rebuilt.predict(batch) == model.predict(batch)
    return model, rebuilt, state
