"""The survival heads learn a hazard set by the share of tumour tiles in a bag (known answer)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from _fit import fit_batch
from pathkit_datasets.slides_survival import draw_outcome
from pathkit_metrics.survival import harrell_c

from pathkit_core.contracts import GeneratorSpec, PathkitError

DIM = 8


def _bags(n: int, seed: int) -> list[dict]:
    """Bags of 12-30 tiles; a tile is tumour (feature 0 high) or stroma; the case's (time, event)
    is drawn from the demo's hazard of its tumour share."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        share = rng.uniform(0.05, 0.95)
        tiles = rng.randint(12, 30)
        tumour = torch.rand(tiles, generator=g) < share
        feats = torch.randn(tiles, DIM, generator=g) * 0.3
        feats[:, 0] += tumour.float() * 2.0
        time, event = draw_outcome(rng, share)
        items.append({"case_id": f"SYN-{seed}-{i}", "features": feats, "target": {"time": time, "event": event}})
    return items


@pytest.fixture(scope="module")
def data():
    return _bags(60, 1), _bags(15, 2), _bags(60, 3)


def _c(model, items) -> float:
    preds = model.predict(model.collate([{**i, "target": None} for i in items]))
    time = np.array([i["target"]["time"] for i in items])
    event = np.array([i["target"]["event"] for i in items])
    return harrell_c(np.array([p["risk"] for p in preds]), time, event)


def test_coxnet_beats_constant_risk(data):
    from pathkit_generators.coxnet import CoxNet

    train, val, test = data
    spec = GeneratorSpec(task="survival", feature_dim=DIM, train_items=train, val_items=val,
                         hparams=CoxNet.default_hparams)
    model = CoxNet().build(spec)
    assert _c(model, test) > 0.65  # constant risk scores 0.5 exactly; the true hazard 0.77 (demo)
    assert model.export_state()["alpha"] > 0


def _trained_abmil(train, steps):
    from pathkit_generators.abmil_cox import AttentionCox

    torch.manual_seed(0)
    model = AttentionCox().build(GeneratorSpec(task="survival", feature_dim=DIM,
                                               hparams={**AttentionCox.default_hparams, "size": "small"}))
    batch = model.collate(train)
    first = fit_batch(model, batch, torch.optim.Adam(model.parameters(), lr=1e-3), steps)[0]
    with torch.no_grad():
        return model, first, float(model.training_step(batch))


# torchsurv imports torchmetrics (~7 s on 2 cores): the tests that train with its loss are slow ones
# (make test-suite); the default suite checks the rest of the head.
@pytest.mark.slow
def test_abmil_cox_fits_one_batch():
    model, first, last = _trained_abmil(_bags(16, 8), 5)
    assert last < first


@pytest.mark.slow
def test_abmil_cox_learns(data):
    train, _, test = data
    model, first, last = _trained_abmil(train, 30)
    assert last < first
    with torch.no_grad():
        assert _c(model, test) > 0.65


@pytest.mark.slow
def test_abmil_cox_loss_is_breslow_partial_likelihood():
    """The loss equals the Breslow partial likelihood written out by hand (mean over events)."""
    from pathkit_generators._survival_mil import CoxMIL

    model = CoxMIL(DIM, size="small", dropout=0.0, ties="breslow", max_tiles=None)
    model.eval()
    items = _bags(12, 7)
    items[1]["target"] = dict(items[0]["target"], event=1)  # a tied event time
    items[0]["target"]["event"] = 1
    batch = model.collate(items)
    with torch.no_grad():
        eta = model.log_hazard(batch).double()
        loss = float(model.training_step(batch))
    t, e = batch["time"].double(), batch["event"]
    total = sum(float(eta[i] - torch.logsumexp(eta[t >= t[i]], 0)) for i in range(len(t)) if e[i])
    assert math.isclose(loss, -total / int(e.sum()), rel_tol=1e-5)


def test_abmil_cox_batch_of_one_bag_has_a_zero_loss_and_no_error():
    """One bag with an event: its risk set is itself, so the partial likelihood is 0 (the last,
    short batch of an epoch; `batch_size` 1 trains nothing) — not an error inside the loss."""
    from pathkit_generators._survival_mil import CoxMIL

    model = CoxMIL(DIM, size="small", dropout=0.0, ties="breslow", max_tiles=None)
    items = _bags(1, 5)
    items[0]["target"]["event"] = 1
    loss = model.training_step(model.collate(items))
    assert float(loss) == 0.0 and loss.requires_grad


def test_abmil_cox_predicts_a_risk_per_bag_without_targets():
    from pathkit_generators.abmil_cox import AttentionCox

    model = AttentionCox().build(GeneratorSpec(task="survival", feature_dim=DIM, hparams=AttentionCox.default_hparams))
    model.eval()
    items = [{**i, "target": None} for i in _bags(3, 9)]
    batch = model.collate(items)
    assert batch["mask"].sum(dim=1).tolist() == [len(i["features"]) for i in items]
    with torch.no_grad():
        preds = model.predict(batch)
    assert len(preds) == 3 and all(math.isfinite(p["risk"]) for p in preds)
    with pytest.raises(PathkitError, match="features of shape"):
        model.collate([{"case_id": "x", "features": torch.zeros(2, DIM + 1), "target": None}])


def test_coxnet_refuses_a_train_split_without_events():
    from pathkit_generators.coxnet import CoxNet

    items = [{"case_id": f"c{i}", "features": torch.randn(3, DIM), "target": {"time": 1.0 + i, "event": 0}}
             for i in range(5)]
    with pytest.raises(PathkitError, match="no training case had the event"):
        CoxNet().build(GeneratorSpec(task="survival", feature_dim=DIM, train_items=items,
                                     hparams=CoxNet.default_hparams))
