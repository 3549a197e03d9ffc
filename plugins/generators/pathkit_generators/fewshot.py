"""Few-shot heads over seeded episodes (task `few-shot`, docs/few-shot.md): `simpleshot` (nearest
prototype over features centred by the support mean and L2-normalised, UNI's protocol after Wang et
al. 2019) and `few-shot-logistic` (scikit-learn's logistic regression fitted on each support set).
Each builds one classifier per episode from its support set alone; nothing is trained across
episodes. The support sets are the task's (`pathkit_tasks.fewshot.episodes`): the same for every
encoder."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_FEW_SHOT
from pathkit_tasks.fewshot.episodes import DEFAULT_EPISODES, DEFAULT_KS, check_shots, parse_ks, sample_episodes


def _vector(features: Any) -> Any:
    """One feature vector per case: a slide's tiles (or a patch's one row) mean-pooled."""
    import torch

    x = torch.as_tensor(features).float()
    return x.mean(dim=0) if x.ndim == 2 else x


def centre_normalise(x: Any, mean: Any) -> Any:
    import torch

    return torch.nn.functional.normalize(x - mean, dim=-1)


class EpisodeHead(Generator):
    """The episode machinery both heads share; a subclass says how one support set classifies."""

    tasks: ClassVar[tuple[str, ...]] = (TASK_FEW_SHOT,)
    default_hparams: ClassVar[dict[str, Any]] = {"ks": ",".join(map(str, DEFAULT_KS)), "episodes": DEFAULT_EPISODES,
                                                 "episode_seed": 0}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 1024}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def fit_episode(self, support: Any, labels: Any, n_classes: int, hp: dict[str, Any]) -> Any:
        raise NotImplementedError

    def classify(self, fitted: Any, queries: Any) -> Any:
        raise NotImplementedError

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        hp = self.hparams(spec.hparams)
        if not len(spec.train_items):
            raise PathkitError(f"{self.name}: no train cases to draw support sets from")
        ks = parse_ks(hp["ks"])
        ids = [str(i["case_id"]) for i in spec.train_items]
        labels = [int(i["target"]) for i in spec.train_items]
        names = tuple(spec.class_names) or tuple(str(c) for c in range(max(labels) + 1))
        check_shots(ks, labels, names)
        episodes = sample_episodes(ids, labels, ks, int(hp["episodes"]), int(hp["episode_seed"]))
        row = {cid: j for j, cid in enumerate(ids)}
        feats = torch.stack([_vector(i["features"]) for i in spec.train_items])
        y = torch.as_tensor(labels)
        n_classes = len(names)
        fitted = {k: [self.fit_episode(feats[[row[c] for c in support]], y[[row[c] for c in support]], n_classes, hp)
                      for support in supports] for k, supports in episodes.items()}
        head = self

        class FittedEpisodes(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.episodes = {"seed": int(hp["episode_seed"]), "ks": ks,
                                 "support": {str(k): v for k, v in episodes.items()}}

            def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
                return {"case_ids": [i["case_id"] for i in items],
                        "features": torch.stack([_vector(i["features"]) for i in items])}

            def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
                queries = batch["features"].cpu().float()
                per_k = {str(k): torch.stack([torch.as_tensor(head.classify(f, queries)) for f in fits], dim=1)
                         for k, fits in fitted.items()}  # (queries, episodes) class indices
                return [{"shots": {k: v[n].tolist() for k, v in per_k.items()}} for n in range(queries.shape[0])]

            def export_state(self) -> dict[str, Any]:
                return {"ks": ks, "episodes": int(hp["episodes"]), "episode_seed": int(hp["episode_seed"])}

        return FittedEpisodes()


class SimpleShot(EpisodeHead):
    """Per episode: the support features centred by their mean and L2-normalised; a class's
    prototype is the mean of its normalised support features; a query (centred by the same mean,
    normalised) takes the class of the nearest prototype by L2 distance (UNI's ProtoNet)."""

    name: ClassVar[str] = "simpleshot"
    description: ClassVar[str] = "SimpleShot per episode: nearest prototype of centred, L2-normalised support features"

    def fit_episode(self, support: Any, labels: Any, n_classes: int, hp: dict[str, Any]) -> Any:
        import torch

        mean = support.mean(dim=0, keepdim=True)
        normed = centre_normalise(support, mean)
        prototypes = torch.zeros(n_classes, normed.shape[1]).index_add_(0, labels, normed)
        counts = torch.bincount(labels, minlength=n_classes)
        prototypes = prototypes / counts.clamp(min=1).unsqueeze(1)
        return mean, prototypes, counts > 0

    def classify(self, fitted: Any, queries: Any) -> Any:
        import torch

        mean, prototypes, present = fitted
        dist = torch.cdist(centre_normalise(queries, mean), prototypes)
        dist[:, ~present] = torch.inf
        return dist.argmin(dim=1)


class FewShotLogistic(EpisodeHead):
    """Per episode: `sklearn.linear_model.LogisticRegression` (L-BFGS, L2 penalty of inverse strength
    `C`) fitted on the support features, L2-normalised; a query takes the most probable class."""

    name: ClassVar[str] = "few-shot-logistic"
    description: ClassVar[str] = "logistic regression (scikit-learn) fitted on each episode's support set"
    default_hparams: ClassVar[dict[str, Any]] = {**EpisodeHead.default_hparams, "C": 1.0, "max_iter": 1000}

    def fit_episode(self, support: Any, labels: Any, n_classes: int, hp: dict[str, Any]) -> Any:
        import torch
        from sklearn.linear_model import LogisticRegression

        x = torch.nn.functional.normalize(support, dim=-1).numpy()
        model = LogisticRegression(C=float(hp["C"]), max_iter=int(hp["max_iter"]))
        return model.fit(x, labels.numpy())

    def classify(self, fitted: Any, queries: Any) -> Any:
        import torch

        x = torch.nn.functional.normalize(queries, dim=-1).numpy()
        return torch.as_tensor(fitted.predict(x)).long()


@hookimpl
def register_generators(register):
    register(SimpleShot)
    register(FewShotLogistic)
