"""Patch-classification heads: kNN and prototypes against scikit-learn / UNI's SimpleShot, logistic
regression against scikit-learn with C = D*K/100, THUNDER's choice of k, and the linear probe
learning separable classes with the core trainer by steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_tasks import TASK_PATCH_CLASSIFICATION

sklearn = pytest.importorskip("sklearn")


def items(features, labels, prefix="p", with_targets=True):
    return [{"case_id": f"{prefix}{i}", "features": torch.as_tensor(f, dtype=torch.float32).reshape(1, -1),
             "target": int(y) if with_targets else None} for i, (f, y) in enumerate(zip(features, labels, strict=True))]


def blobs(n, k=3, d=8, spread=1.0, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (k, d))
    y = rng.integers(0, k, n)
    return (centres[y] + rng.normal(0, spread, (n, d))).astype(np.float32), y


def build(name, train, val=(), classes=("a", "b", "c"), **hparams):
    from pathkit_core.plugins import get_plugin_manager

    gen = get_plugin_manager().get("generator", name)()
    spec = GeneratorSpec(task=TASK_PATCH_CLASSIFICATION, feature_dim=int(train[0]["features"].shape[1]) if train else 8,
                         hparams=gen.hparams(hparams), class_names=tuple(classes), train_items=train, val_items=val,
                         train_targets=[i["target"] for i in train])
    return gen.build(spec)


def predict(model, test):
    return model.predict(model.collate(test))


def unit(x, mean):
    z = x - mean
    return z / np.linalg.norm(z, axis=1, keepdims=True)


@pytest.mark.parametrize("k", [1, 5, 20])
def test_knn_equals_scikit_learn_on_centred_normalised_features(k):
    from sklearn.neighbors import KNeighborsClassifier

    x, y = blobs(260, spread=3.0)
    x, y, xt, yt = x[:200], y[:200], x[200:], y[200:]
    preds = predict(build("knn", items(x, y), k=k), items(xt, yt, with_targets=False))
    mean = x.mean(axis=0, keepdims=True)
    ref = KNeighborsClassifier(n_neighbors=k).fit(unit(x, mean), y)
    assert [p["label"] for p in preds] == ref.predict(unit(xt, mean)).tolist()
    assert np.array([p["probabilities"] for p in preds]) == pytest.approx(ref.predict_proba(unit(xt, mean)))


def test_knn_chooses_k_on_validation_macro_f1():
    # validation patches repeat training patches whose labels are random: only the nearest
    # neighbour (itself) knows the label, so k = 1 wins
    rng = np.random.default_rng(2)
    x = rng.normal(size=(90, 6)).astype(np.float32)
    y = rng.integers(0, 3, 90)
    model = build("knn", items(x, y), items(x + 1e-4, y, "v"), select_k=True)
    state = model.export_state()
    assert state["k"] == 1 and set(state["val_macro_F1"]) == {"1", "3", "5", "10", "20", "30", "40", "50"}
    assert state["val_macro_F1"]["1"] == 1.0 > state["val_macro_F1"]["20"]
    with pytest.raises(PathkitError, match="validation split, which is empty"):
        build("knn", items(x, y), select_k=True)


def test_prototype_is_the_nearest_class_mean_of_normalised_features():
    x, y = blobs(190, spread=2.5)
    x, y, xt = x[:150], y[:150], x[150:]
    preds = predict(build("prototype", items(x, y)), items(xt, np.zeros(40), with_targets=False))
    mean = x.mean(axis=0, keepdims=True)
    train_unit = unit(x, mean)
    protos = np.stack([train_unit[y == c].mean(axis=0) for c in range(3)])
    dist = np.linalg.norm(unit(xt, mean)[:, None] - protos[None], axis=2)
    assert [p["label"] for p in preds] == dist.argmin(axis=1).tolist()
    probs = np.array([p["probabilities"] for p in preds])
    assert probs.sum(axis=1) == pytest.approx(1.0) and (probs.argmax(axis=1) == dist.argmin(axis=1)).all()


def test_logistic_regression_is_uni_protocol_in_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    x, y = blobs(175, d=10, spread=2.0)
    x, y, xv, yv, xt = x[:120], y[:120], x[120:150], y[120:150], x[150:]
    model = build("logistic-regression", items(x, y), items(xv, yv, "v"))
    assert model.export_state()["C"] == pytest.approx(10 * 3 / 100)  # C = D * K / 100
    ref = LogisticRegression(C=0.3, max_iter=1000, random_state=0).fit(np.vstack([x, xv]), np.concatenate([y, yv]))
    probs = np.array([p["probabilities"] for p in predict(model, items(xt, np.zeros(25), with_targets=False))])
    assert probs == pytest.approx(ref.predict_proba(xt), abs=1e-5)
    only_train = build("logistic-regression", items(x, y), items(xv, yv, "v"), combine_trainval=False)
    ref = LogisticRegression(C=0.3, max_iter=1000, random_state=0).fit(x, y)
    probs = np.array([p["probabilities"] for p in predict(only_train, items(xt, np.zeros(25), with_targets=False))])
    assert probs == pytest.approx(ref.predict_proba(xt), abs=1e-5)


def test_logistic_regression_coefficients_and_accuracy_are_scikit_learns():
    """A fixed 4-class, 32-d problem: the fitted coefficients and intercepts equal scikit-learn's
    (same solver path: the same iterations), and so do the test labels and accuracy."""
    from sklearn.linear_model import LogisticRegression

    x, y = blobs(600, k=4, d=32, spread=4.0, seed=7)
    model = build("logistic-regression", items(x[:500], y[:500]), classes=("a", "b", "c", "d"))
    ref = LogisticRegression(C=32 * 4 / 100, max_iter=1000, random_state=0).fit(x[:500], y[:500])
    assert model.export_state()["n_iter"] == int(ref.n_iter_.max())
    np.testing.assert_allclose(model.weight.numpy(), ref.coef_, atol=1e-4)
    np.testing.assert_allclose(model.bias.numpy(), ref.intercept_, atol=1e-4)
    labels = np.array([p["probabilities"] for p in predict(model, items(x[500:], y[500:]))]).argmax(1)
    assert (labels == ref.predict(x[500:])).all()
    assert (labels == y[500:]).mean() == pytest.approx(ref.score(x[500:], y[500:]))
    assert 0.5 < ref.score(x[500:], y[500:]) < 1.0  # a problem with errors: accuracy can differ


def test_logistic_regression_binary_and_a_class_without_training_patches():
    from sklearn.linear_model import LogisticRegression

    x, y = blobs(80, k=2, spread=1.5)
    model = build("logistic-regression", items(x, y), classes=("a", "b", "c"))
    probs = np.array([p["probabilities"] for p in predict(model, items(x[:10], y[:10]))])
    assert probs[:, 2] == pytest.approx(0.0)  # class c has no training patch: never predicted
    ref = LogisticRegression(C=8 * 2 / 100, max_iter=1000, random_state=0).fit(x, y)
    assert probs[:, :2] == pytest.approx(ref.predict_proba(x[:10]), abs=1e-5)


def test_logistic_regression_holds_openblas_to_one_thread_while_solving(monkeypatch):
    """The OpenBLAS pools of numpy and SciPy run one thread inside the solver (their spinning
    workers beside torch's would outnumber the cores) and get their setting back afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from pathkit_generators import logistic_regression

    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

    import scipy.optimize

    before = blas_threads()
    seen: list[list[int]] = []
    minimize = scipy.optimize.minimize  # fit_lbfgs imports it when called: the spy is what it finds

    def spying_minimize(fun, x0, **kwargs):
        seen.append(blas_threads())
        return minimize(fun, x0, **kwargs)

    monkeypatch.setattr(scipy.optimize, "minimize", spying_minimize)
    assert "minimize" not in vars(logistic_regression)
    x, y = blobs(120, k=3, spread=2.0)
    build("logistic-regression", items(x, y), classes=("a", "b", "c"))
    assert len(seen) == 1 and seen[0] and all(n == 1 for n in seen[0])
    assert blas_threads() == before


def test_heads_refuse_bags_and_empty_training():
    x, y = blobs(10)
    bag = [{"case_id": "s", "features": torch.zeros(3, 8), "target": 0}]
    model = build("knn", items(x, y), k=3)
    with pytest.raises(PathkitError, match="one vector per patch"):
        model.collate(bag)
    with pytest.raises(PathkitError, match="no training patches"):
        build("prototype", [])


def test_linear_probe_learns_separable_classes_by_steps(tmp_path):
    from pathkit_core.training.trainer import TrainConfig, fit

    x, y = blobs(390, d=16, spread=1.0)
    train, val = items(x[:300], y[:300]), items(x[300:], y[300:], "v")
    model = build("linear-probe", train)
    from pathkit_generators.linear_probe import EVA_TRAIN

    # the protocol, shortened: 60 steps at a larger learning rate (eva: 12,500 at 3e-4)
    cfg = TrainConfig.from_mapping({**EVA_TRAIN, "max_steps": 60, "val_every_steps": None, "lr": 1e-2,
                                    "batch_size": 64, "progress": False, "cpu": True})

    def balanced_accuracy(preds, refs):
        from sklearn.metrics import balanced_accuracy_score

        return balanced_accuracy_score(list(refs.values()), [preds[i]["label"] for i in refs])

    result = fit(model, train, val, cfg, tmp_path, selection=balanced_accuracy)
    assert result.best_score > 0.95 and result.best_step is not None
    assert result.history[0]["step"] == 5  # val_every_steps None: one check per pass, ceil(300 / 64) steps
    assert EVA_TRAIN["val_every_steps"] == 250 and EVA_TRAIN["max_steps"] == 12_500
    assert model.export_state() == {"n_classes": 3}


def test_logistic_regression_refuses_a_non_positive_c():
    x, y = blobs(20, k=2)
    with pytest.raises(PathkitError, match="C must be positive"):
        build("logistic-regression", items(x, y), C=0.0)
