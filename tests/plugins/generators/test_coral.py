"""The CORAL head learns grades set by a feature's level (known answer) and beats the majority grade."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _fit import fit_batch
from sklearn.metrics import cohen_kappa_score

from pathkit_core.contracts import GeneratorSpec, PathkitError

DIM, K = 6, 4


def _items(n, seed):
    g = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        grade = i % K
        feats = torch.randn(10, DIM, generator=g) * 0.5
        feats[:, 0] += grade  # the grade is the level of feature 0
        items.append({"case_id": f"SYN-{seed}-{i}", "features": feats, "target": grade})
    return items


def test_cumulative_probabilities_give_a_distribution():
    from pathkit_generators._coral import class_probabilities, cumulative_targets

    assert cumulative_targets(torch.tensor([0, 2, 3]), 4).tolist() == [[0, 0, 0], [1, 1, 0], [1, 1, 1]]
    probs = class_probabilities(torch.tensor([[0.9, 0.95, 0.2]]))  # not monotone: 0.95 -> 0.9
    assert probs.tolist()[0] == pytest.approx([0.1, 0.0, 0.7, 0.2]) and float(probs.sum()) == pytest.approx(1)


def test_coral_learns_the_grades_and_beats_the_majority_grade():
    from pathkit_generators.coral import CoralHead

    torch.manual_seed(0)
    model = CoralHead().build(GeneratorSpec(task="ordinal", feature_dim=DIM, class_names=("1", "2", "3", "4"),
                                            hparams=CoralHead.default_hparams))
    fit_batch(model, model.collate(_items(40, 1)), torch.optim.Adam(model.parameters(), lr=0.05), 80)
    test = _items(40, 2)
    with torch.no_grad():
        preds = model.predict(model.collate([{**i, "target": None} for i in test]))
    y = np.array([i["target"] for i in test])
    p = np.array([pr["label"] for pr in preds])
    assert cohen_kappa_score(y, p, weights="quadratic") > 0.9  # the majority grade scores 0
    assert all(abs(sum(pr["probabilities"]) - 1) < 1e-6 for pr in preds)


def test_coral_needs_ordered_classes():
    from pathkit_generators.coral import CoralHead

    with pytest.raises(PathkitError, match="two or more ordered classes"):
        CoralHead().build(GeneratorSpec(task="ordinal", feature_dim=DIM, hparams=CoralHead.default_hparams))
