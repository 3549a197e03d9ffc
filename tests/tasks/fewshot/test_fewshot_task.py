"""Task `few-shot`: seeded episodes shared by every encoder, SimpleShot and the logistic probe on
hand-checked support sets (scikit-learn as the reference), the metric's per-k episode scores, and
the refusal of a shot count above a class's train size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pathkit_core.contracts import Case, GeneratorSpec, PathkitError
from pathkit_tasks.fewshot.episodes import check_shots, parse_ks, sample_episodes
from pathkit_tasks.fewshot.task import FewShotTask

CLASSES = ("a", "b", "c")


class _Dataset:
    def class_names(self):
        return CLASSES


def _items(n, seed, dim=5, spread=0.3):
    g = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        label = i % 3
        feats = torch.randn(dim, generator=g) * spread
        feats[label] += 1.0  # the class is the direction of the features
        items.append({"case_id": f"SYN-{seed}-{i:03d}", "features": feats, "target": label})
    return items


def _spec(gen, train, **hparams):
    return GeneratorSpec(task="few-shot", feature_dim=5, train_items=train, class_names=CLASSES,
                         hparams={**gen.default_hparams, **hparams})


def test_episodes_depend_only_on_ids_classes_and_seed():
    ids = [f"c{i:02d}" for i in range(30)]
    labels = [i % 3 for i in range(30)]
    first = sample_episodes(ids, labels, [1, 4], 20, seed=5)
    # another encoder's item order: the same support sets
    order = np.random.default_rng(0).permutation(30)
    again = sample_episodes([ids[i] for i in order], [labels[i] for i in order], [1, 4], 20, seed=5)
    assert first == again
    assert first != sample_episodes(ids, labels, [1, 4], 20, seed=6)
    for support in first[4]:
        assert len(support) == 12 and len(set(support)) == 12  # 4 of each class, without replacement
        assert [labels[ids.index(c)] for c in support] == [0] * 4 + [1] * 4 + [2] * 4
    assert len({tuple(s) for s in first[1]}) > 1  # episodes differ


def test_a_shot_count_above_a_class_train_size_is_refused_with_the_class_and_count():
    with pytest.raises(PathkitError, match=r"32 shots per class asked, but class 'c' has 5 train case\(s\).*ks=1,2,4"):
        check_shots([1, 2, 4, 32], [0] * 40 + [1] * 40 + [2] * 5, CLASSES)
    check_shots([1, 2, 4], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], CLASSES)
    with pytest.raises(PathkitError, match="positive whole numbers"):
        parse_ks("0,2")
    assert parse_ks("4, 1,2") == [1, 2, 4]


def test_simpleshot_is_the_nearest_centred_normalised_prototype_of_each_support_set():
    from pathkit_generators.fewshot import SimpleShot

    train, test = _items(30, 1), _items(12, 2)
    model = SimpleShot().build(_spec(SimpleShot, train, ks="1,2", episodes=5))
    preds = model.predict(model.collate([{**i, "target": None} for i in test]))
    support = model.episodes["support"]["2"][3]
    by_id = {i["case_id"]: i for i in train}
    x = torch.stack([by_id[c]["features"] for c in support])
    y = torch.as_tensor([by_id[c]["target"] for c in support])
    mean = x.mean(0)
    normed = torch.nn.functional.normalize(x - mean, dim=1)
    protos = torch.stack([normed[y == c].mean(0) for c in range(3)])
    q = torch.nn.functional.normalize(torch.stack([i["features"] for i in test]) - mean, dim=1)
    expected = torch.cdist(q, protos).argmin(1).tolist()
    assert [p["shots"]["2"][3] for p in preds] == expected
    assert all(len(p["shots"]["1"]) == 5 for p in preds)
    right = np.mean([p["shots"]["2"][e] == t["target"] for p, t in zip(preds, test, strict=True) for e in range(5)])
    assert right > 0.8  # the class is in the features: two shots find it


def test_the_logistic_probe_is_scikit_learns_on_each_support_set():
    from pathkit_generators.fewshot import FewShotLogistic
    from sklearn.linear_model import LogisticRegression

    train, test = _items(30, 3), _items(9, 4)
    model = FewShotLogistic().build(_spec(FewShotLogistic, train, ks="4", episodes=3))
    preds = model.predict(model.collate([{**i, "target": None} for i in test]))
    by_id = {i["case_id"]: i for i in train}
    support = model.episodes["support"]["4"][1]
    x = torch.nn.functional.normalize(torch.stack([by_id[c]["features"] for c in support]), dim=1).numpy()
    y = [by_id[c]["target"] for c in support]
    q = torch.nn.functional.normalize(torch.stack([i["features"] for i in test]), dim=1).numpy()
    expected = LogisticRegression(C=1.0, max_iter=1000).fit(x, y).predict(q).tolist()
    assert [p["shots"]["4"][1] for p in preds] == expected


def test_the_generator_refuses_too_many_shots():
    from pathkit_generators.fewshot import SimpleShot

    with pytest.raises(PathkitError, match="class 'a' has 10 train case"):
        SimpleShot().build(_spec(SimpleShot, _items(30, 1), ks="1,16", episodes=2))


def test_metric_scores_each_episode_against_scikit_learn():
    from pathkit_metrics.fewshot import FewShotMetric
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 20)
    table = {k: np.where(rng.random((20, 7)) < 0.5 + 0.1 * j, y[:, None], rng.integers(0, 3, (20, 7)))
             for j, k in enumerate((1, 2, 4))}
    preds = [{"shots": {str(k): table[k][i].tolist() for k in table}} for i in range(20)]
    result = FewShotMetric().compute(preds, y.tolist(), ids=[f"q{i}" for i in range(20)],
                                     context={"class_names": list(CLASSES)})
    for k, t in table.items():
        acc = [accuracy_score(y, t[:, e]) for e in range(7)]
        bacc = [balanced_accuracy_score(y, t[:, e]) for e in range(7)]
        assert result.summary[f"acc@{k}shot"] == pytest.approx(np.mean(acc), abs=1e-12)
        assert result.summary[f"bacc@{k}shot"] == pytest.approx(np.mean(bacc), abs=1e-12)
        assert result.summary[f"acc@{k}shot_episode_low"] == pytest.approx(np.percentile(acc, 2.5), abs=1e-12)
        assert result.summary[f"bacc@{k}shot_episode_high"] == pytest.approx(np.percentile(bacc, 97.5), abs=1e-12)
        # the per-case share of episodes right averages to the mean episode accuracy (paired by case)
        assert result.per_case[f"acc@{k}shot"].mean() == pytest.approx(np.mean(acc), abs=1e-12)
    assert [r["k"] for r in result.details["curve"]] == [1, 2, 4]


def test_metric_refuses_cases_with_different_shots():
    from pathkit_metrics.fewshot import FewShotMetric

    with pytest.raises(PathkitError, match="prediction 1 has shots"):
        FewShotMetric().compute([{"shots": {"1": [0]}}, {"shots": {"2": [0]}}], [0, 1])


def test_task_checks_targets_predictions_and_makes_the_majority_baseline():
    task, ds = FewShotTask(), _Dataset()
    case = Case("S1", "P1", target="b")
    assert task.check_target(case, ds) is None and task.model_target(case, ds) == 1
    assert "not one of the class names" in task.check_target(Case("S2", "P2", target="z"), ds)
    assert task.check_prediction({"shots": {"1": [0, 2]}}, case, ds) is None
    assert "not a class index" in task.check_prediction({"shots": {"1": [3]}}, case, ds)
    assert "needs" in task.check_prediction({"retrieved": [0]}, case, ds)
    base = task.baseline_predictions("majority-class", [2, 2, 1], [case], ds)
    assert base["S1"]["shots"]["4"] == [2]
