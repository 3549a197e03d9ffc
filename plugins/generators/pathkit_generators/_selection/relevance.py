"""Question relevance of patch features: the cosine between a question embedding and each patch.

PathoArgus does not publish how it scores relevance (docs/pathoargus.md). Two scorers:

- `text-tower`: the CONCH v1 text tower (`_conch_text`, local weights only) embeds one hypothesis
  per choice (the question followed by the choice); a patch's relevance is its best cosine over
  them, which needs patch features in CONCH's image-text space (CONCH v1 projected, 512-d).
- `learned` ("learned-projection"): the question text is embedded offline by the hashed n-gram
  embedder (`_knowledge_bank.HashedNgramEmbedder`, IDF fitted on the train questions) and a
  linear map W, trained on the train split, projects it into the feature space. Each choice
  makes one hypothesis text (the question followed by that choice); a patch's relevance is its
  best cosine over them, r_i = max_c cos(x_i, W e(question + choice c)), x_i standardised by
  train statistics. Projecting the text rather than the patches makes scoring M candidates one
  (M x D) by (D x C) product. The training objective: the relevance-weighted mean of a
  question's patches must point at the projection of the right hypothesis (cross-entropy over
  the choices). Questions over
  several candidate sets (ESG: "set 2" has no visual meaning) are left out of that training.
  The map is cached by the content of its train data.

The text tower scores only features whose files say they lie in CONCH v1's image-text space
(`joint_space = "conch-v1"`, written by the `conch` encoder, which applies the contrastive
projection). CONCH v1 features saved without the projection (CLAM, TRIDENT, STAMP) are 512-d too
but outside that space, where the cosines mean nothing; they, and features whose space is not
recorded, are refused for text relevance. "auto" uses the text tower when its files are on this
machine and the train features are in its space, otherwise the learned projection; the choice
is recorded with every selection.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pathkit_core.contracts import PathkitError
from pathkit_generators._tensor_file import read_tensor_file, write_tensor_file
from pathkit_tasks.vqa.selection import EvidencePool

log = logging.getLogger(__name__)

LEARNED_VERSION = 3
_FORMAT = "pathkit-learned-relevance/2"


def hypotheses(pool: EvidencePool) -> list[str]:
    """What the question embeddings embed: the question with each of its choices in turn (never
    the answer); a patch's relevance is its best cosine over them, as CONCH scores a patch against
    one prompt per class in zero-shot classification."""
    return [f"{pool.question} {choice}".strip() for choice in pool.choices] or [pool.question]


def _best_cosine(feats: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Per row, the highest cosine with any of the (C, D) queries."""
    rows = feats / np.maximum(np.linalg.norm(feats, axis=1, keepdims=True), 1e-12)
    unit = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    return (rows @ unit.T).max(axis=1)


TEXT_TOWER_SPACE = "conch-v1"  # the joint space of the CONCH v1 text tower (`Encoder.joint_space`)


def in_text_space(pool: EvidencePool) -> bool:
    """Whether the pool's features are recorded as lying in the text tower's image-text space."""
    return pool.joint_space == TEXT_TOWER_SPACE


class TextTowerRelevance:
    """Cosine between the CONCH text embedding of the question and each patch feature."""

    name = "text-tower"

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def facts(self) -> dict[str, Any]:
        return {"relevance": self.name, "text_tower": "conch", "weights": str(self.embedder.weights)}

    def score(self, pool: EvidencePool, rows: np.ndarray) -> np.ndarray:
        if not in_text_space(pool):
            found = (f"in the {pool.joint_space!r} space" if pool.joint_space else
                     "recorded in no image-text space (image-only, CONCH v1 without its contrastive projection as "
                     "CLAM/TRIDENT/STAMP save it, or imported without a record)")
            raise PathkitError(
                f"relevance 'text-tower' needs features in CONCH v1's image-text space ({TEXT_TOWER_SPACE!r}); "
                f"the features of case {pool.case_id!r} are {found}: extract them with the 'conch' encoder, or "
                "use relevance='learned'")
        feats = pool.rows(rows)
        if feats.shape[1] != self.embedder.dim:
            raise PathkitError(
                f"relevance 'text-tower' scores patches in CONCH's {self.embedder.dim}-d image-text space; case "
                f"{pool.case_id!r} has {feats.shape[1]}-d features (use relevance='learned', or CONCH v1 "
                "projected features)")
        key = "\n".join(hypotheses(pool))
        if key not in self._cache:
            self._cache[key] = self.embedder.embed(hypotheses(pool)).numpy().astype(np.float32)
        return _best_cosine(feats, self._cache[key])


class LearnedRelevance:
    """Cosine between the hashed n-gram question embedding and a learned projection of each patch."""

    name = "learned-projection"

    def __init__(self, weight: np.ndarray, mean: np.ndarray, std: np.ndarray, idf: Sequence[float],
                 facts: Mapping[str, Any]) -> None:
        from pathkit_generators._knowledge_bank import HashedNgramEmbedder

        self.weight = np.asarray(weight, dtype=np.float32)  # (E, D): text embedding -> feature space
        self.mean = np.asarray(mean, dtype=np.float32)
        self.std = np.asarray(std, dtype=np.float32)
        self.embedder = HashedNgramEmbedder(self.weight.shape[0])
        self.embedder.idf = [float(v) for v in idf]
        self._facts = dict(facts)
        self._cache: dict[str, np.ndarray] = {}

    def facts(self) -> dict[str, Any]:
        return {"relevance": self.name, **self._facts}

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' embeddings projected into the (standardised) feature space, (C, D)."""
        key = "\n".join(texts)
        if key not in self._cache:
            self._cache[key] = self.embedder.embed(list(texts)).numpy().astype(np.float32) @ self.weight
        return self._cache[key]

    def score(self, pool: EvidencePool, rows: np.ndarray) -> np.ndarray:
        feats = pool.rows(rows)
        if feats.shape[1] != self.weight.shape[1]:
            raise PathkitError(f"the learned relevance was trained on {self.weight.shape[1]}-d features, "
                               f"not {feats.shape[1]}-d")
        return _best_cosine((feats - self.mean) / self.std, self.queries(hypotheses(pool)))

    # ------------------------------------------------------------------ files

    def save(self, path: Path) -> Path:
        import json

        import torch

        tensors = {"weight": torch.from_numpy(self.weight.copy()), "mean": torch.from_numpy(self.mean.copy()),
                   "std": torch.from_numpy(self.std.copy()),
                   "idf": torch.tensor(self.embedder.idf, dtype=torch.float32)}
        return write_tensor_file(path, tensors, {"format": _FORMAT, "facts": json.dumps(self._facts, sort_keys=True)})

    @classmethod
    def load(cls, path: Path) -> LearnedRelevance:
        arrays, fields = read_tensor_file(path, "learned relevance", _FORMAT, ("weight", "mean", "std", "idf"),
                                          ["facts"], framework="np", json_fields=["facts"])
        return cls(arrays["weight"], arrays["mean"], arrays["std"], arrays["idf"].tolist(), fields["facts"])


def text_tower(options: Mapping[str, Any], *, required: bool) -> TextTowerRelevance | None:
    """The CONCH text tower relevance if its checkpoint and tokenizer are here (else None, or an
    error naming where they were looked for when `required`)."""
    from pathkit_generators._conch_text import ConchTextEmbedder, find_conch_text

    weights, tokenizer, looked = find_conch_text(options.get("text_weights"), options.get("text_tokenizer"))
    if weights is not None and tokenizer is not None:
        return TextTowerRelevance(ConchTextEmbedder(weights, tokenizer))
    if required:
        places = "\n  - ".join(looked)
        raise PathkitError("relevance 'text-tower' needs the CONCH v1 checkpoint (with its text tower) and its "
                           f"tokenizer file. Looked in:\n  - {places}\nPut both in $PATHKIT_WEIGHTS_DIR/conch/, or "
                           "use relevance='learned'.")
    return None


def fit_learned(pools: Sequence[EvidencePool], answers: Sequence[Any], options: Mapping[str, Any], *,
                cache_dir: Path | None, seed: int, data_key: str | None) -> LearnedRelevance:
    """Train (or reuse from `cache_dir`) the learned projection on the train pools."""
    from pathkit_core.workspace import content_hash

    settings = {k: options[k] for k in ("projection_dim", "relevance_epochs", "relevance_lr", "relevance_rows",
                                        "relevance_temperature")}
    path = None
    if cache_dir is not None and data_key:
        key = content_hash({"version": LEARNED_VERSION, "data": data_key, "seed": seed, **settings}, length=24)
        path = Path(cache_dir) / f"learned-relevance-{key}.safetensors"
        if path.is_file():
            log.info("learned relevance reused from %s", path)
            return LearnedRelevance.load(path)
    relevance = _train(pools, answers, settings, seed)
    if path is not None:
        relevance.save(path)
    return relevance


def _train(pools: Sequence[EvidencePool], answers: Sequence[Any], settings: Mapping[str, Any],
           seed: int) -> LearnedRelevance:
    import torch

    from pathkit_generators._knowledge_bank import HashedNgramEmbedder

    rng = np.random.default_rng(seed)
    examples: list[tuple[np.ndarray, list[str], int]] = []
    for pool, answer in zip(pools, answers, strict=True):
        if answer is None or pool.n_sets != 1 or pool.n == 0:
            continue
        rows = np.sort(rng.choice(pool.n, size=min(pool.n, int(settings["relevance_rows"])), replace=False))
        examples.append((pool.rows(rows), hypotheses(pool), int(answer)))
    if not examples:
        raise PathkitError("the learned relevance trains on train questions over one candidate set, and the train "
                           "split has none (with features); give it some, or use relevance='text-tower' or the "
                           "'uniform' selector")
    dim = int(settings["projection_dim"])
    embedder = HashedNgramEmbedder(dim)
    texts = sorted({t for _, texts_of, _ in examples for t in texts_of})
    embedder.fit(texts)
    all_rows = np.concatenate([x for x, *_ in examples])
    mean = all_rows.mean(axis=0)
    std = all_rows.std(axis=0) + 1e-6
    generator = torch.Generator().manual_seed(seed)
    weight = torch.nn.Parameter(torch.randn(dim, all_rows.shape[1], generator=generator) / all_rows.shape[1] ** 0.5)
    optimiser = torch.optim.Adam([weight], lr=float(settings["relevance_lr"]))
    tau = float(settings["relevance_temperature"])
    # all questions padded into one batch: rows (Q, R, D) with their mask, hypotheses (Q, C, E) with theirs
    n_rows = max(len(x) for x, *_ in examples)
    n_choices = max(len(t) for _, t, _ in examples)
    rows = torch.zeros(len(examples), n_rows, all_rows.shape[1])
    row_mask = torch.zeros(len(examples), n_rows, dtype=torch.bool)
    texts_emb = torch.zeros(len(examples), n_choices, dim)
    choice_mask = torch.zeros(len(examples), n_choices, dtype=torch.bool)
    for k, (x, texts_of, _) in enumerate(examples):
        rows[k, : len(x)] = torch.from_numpy((x - mean) / std)
        row_mask[k, : len(x)] = True
        texts_emb[k, : len(texts_of)] = embedder.embed(texts_of)
        choice_mask[k, : len(texts_of)] = True
    targets = torch.tensor([a for *_, a in examples])
    order = np.arange(len(examples))
    batch = 32
    for _ in range(int(settings["relevance_epochs"])):
        rng.shuffle(order)
        for start in range(0, len(order), batch):
            pick = torch.from_numpy(order[start:start + batch].copy())
            patches = torch.nn.functional.normalize(rows[pick], dim=-1)  # (B, R, D)
            queries = torch.nn.functional.normalize(texts_emb[pick] @ weight, dim=-1)  # (B, C, D)
            valid = choice_mask[pick]
            cosines = torch.einsum("brd,bcd->brc", patches, queries).masked_fill(~valid[:, None, :], -2.0)
            relevance = cosines.max(dim=-1).values / tau  # (B, R): the best hypothesis per patch
            attention = torch.softmax(relevance.masked_fill(~row_mask[pick], float("-inf")), dim=1)
            pooled = torch.nn.functional.normalize(torch.einsum("br,brd->bd", attention, patches), dim=-1)
            logits = torch.einsum("bcd,bd->bc", queries, pooled) / tau
            loss = torch.nn.functional.cross_entropy(logits.masked_fill(~valid, float("-inf")), targets[pick])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    facts = {"question_embedding": "hashed-ngram", "projection_dim": dim, "train_questions": len(examples),
             "feature_dim": int(all_rows.shape[1]), "seed": seed}
    return LearnedRelevance(weight.detach().numpy(), mean.astype(np.float32), std.astype(np.float32),
                            embedder.idf or [], facts)
