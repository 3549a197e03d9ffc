"""abmil-nll: the discrete-time NLL (Zadeh & Schmid 2021) written out by hand, its quantile bins, the
survival curve it predicts, and learning the demo's hazard (known answer)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _fit import fit_batch

from pathkit_core.contracts import GeneratorSpec, PathkitError
from tests.plugins.generators.test_survival_heads import DIM, _bags, _c


def test_the_loss_is_the_discrete_time_likelihood_by_hand():
    from pathkit_generators._survival_nll import discrete_nll

    logits = torch.tensor([[0.2, -0.5, 1.0], [-1.0, 0.3, 0.0]])
    bins, event = torch.tensor([1, 2]), torch.tensor([1, 0])
    h = torch.sigmoid(logits).tolist()
    # case 0: event in bin 1: survived bin 0, hazard in bin 1; case 1: censored in bin 2: survived bins 0-2
    l0 = -(math.log(1 - h[0][0]) + math.log(h[0][1]))
    l1 = -math.log((1 - h[1][0]) * (1 - h[1][1]) * (1 - h[1][2]))
    for alpha in (0.0, 0.4):
        expected = ((1 - alpha) * (l0 + l1) + alpha * l0) / 2
        assert float(discrete_nll(logits, bins, event, alpha)) == pytest.approx(expected, rel=1e-6)


def test_bins_are_quantiles_of_the_event_times_only():
    from pathkit_generators._survival_nll import quantile_edges, time_bins

    times = [1, 2, 3, 4, 5, 6, 7, 8, 100, 200]
    events = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]  # the censored long times do not move the edges
    edges = quantile_edges(times, events, 4)
    assert edges[0] == 0 and edges[-1] == math.inf
    np.testing.assert_allclose(edges[1:-1], np.quantile([1, 2, 3, 4, 5, 6, 7, 8], [0.25, 0.5, 0.75]))
    assert time_bins(torch.tensor([0.0, 2.7, 2.75, 8.0, 300.0]), edges).tolist() == [0, 0, 1, 3, 3]
    with pytest.raises(PathkitError, match="2 event"):
        quantile_edges([1, 2, 3], [1, 1, 0], 4)


def test_the_head_predicts_a_falling_curve_and_its_risk():
    from pathkit_generators.abmil_nll import AttentionNLL

    train = _bags(20, 4)
    model = AttentionNLL().build(GeneratorSpec(task="survival", feature_dim=DIM, train_targets=[i["target"] for i in
                                                                                                train],
                                               hparams=AttentionNLL.default_hparams))
    model.eval()
    with torch.no_grad():
        preds = model.predict(model.collate([{**i, "target": None} for i in train[:3]]))
    for p in preds:
        assert len(p["survival"]) == 4 and p["bin_ends"][-1] is None
        assert all(a >= b for a, b in zip(p["survival"], p["survival"][1:], strict=False))
        assert p["risk"] == pytest.approx(-sum(p["survival"]), abs=1e-5)
    assert model.export_state()["edges"][-1] == "inf"


@pytest.mark.slow
def test_abmil_nll_learns_the_hazard():
    from pathkit_generators.abmil_nll import AttentionNLL

    train, test = _bags(60, 1), _bags(60, 3)
    torch.manual_seed(0)
    model = AttentionNLL().build(GeneratorSpec(task="survival", feature_dim=DIM,
                                               train_targets=[i["target"] for i in train],
                                               hparams=AttentionNLL.default_hparams))
    losses = fit_batch(model, model.collate(train), torch.optim.Adam(model.parameters(), lr=5e-3), 30)
    assert losses[-1] < losses[0]
    with torch.no_grad():
        assert _c(model, test) > 0.62  # constant risk scores 0.5 exactly; the true hazard 0.77
