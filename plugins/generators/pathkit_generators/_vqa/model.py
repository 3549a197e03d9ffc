"""The trainable VQA readers: a text-only control and a question-conditioned attention reader.

Both score each choice with one shared head, so no choice position is favoured by the weights
(answer positions are balanced per split; a position prior is what `majority-position` tests).

- `TextOnlyReader`: e(question) and e(choice) (mean of hashed-token embeddings) -> MLP -> one
  logit per choice; it sees no feature, so it measures what the text alone gives away.
- `AttentionReader`: each selected patch h_i = LayerNorm(W x_i) + set_embedding[set of i]; for
  choice j, the query q_j = W_q [e(question); e(choice j)] attends over the patches (masked
  softmax of q_j . W_k h_i / sqrt(d)), and the MLP scores [pooled_j; q_j; pooled_j * q_j]. The
  set embedding lets it answer which candidate set holds the evidence (ESG).

Imported only when a reader builds its model, so torch is imported at module level here.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._bags import pad_bags
from pathkit_generators._mil import masked_softmax
from pathkit_generators._vqa.text import padded


def collate_questions(items: list[dict[str, Any]], buckets: int, *, with_features: bool) -> dict[str, Any]:
    """A batch of questions: token ids of questions (B, Lq) and choices (B, C, Lc), the choice
    mask (B, C), targets (B; -100 when unknown) and, `with_features`, the padded selected features
    (B, K, D), their mask and candidate set of each row (B, K)."""
    if not items:
        raise PathkitError("cannot batch zero questions")
    questions = [str(i["meta"]["question"]) for i in items]
    choices = [list(i["meta"]["choices"]) for i in items]
    n_max = max(len(c) for c in choices)
    flat = [c[j] if j < len(c) else "" for c in choices for j in range(n_max)]
    choice_ids = torch.tensor(padded(flat, buckets), dtype=torch.long).view(len(items), n_max, -1)
    choice_mask = torch.tensor([[j < len(c) for j in range(n_max)] for c in choices])
    targets = torch.tensor([-100 if i.get("target") is None else int(i["target"]) for i in items])
    batch = {"case_id": [i["case_id"] for i in items], "question_ids": torch.tensor(padded(questions, buckets)),
             "choice_ids": choice_ids, "choice_mask": choice_mask, "targets": targets}
    if with_features:
        feats, mask = pad_bags([i["features"].float() for i in items])
        sets, _ = pad_bags([torch.as_tensor(i.get("tile_set", torch.zeros(len(i["features"]))), dtype=torch.long)
                            for i in items])
        batch.update(features=feats, mask=mask, tile_set=sets)
    return batch


class HashedText(nn.Module):
    """Mean of the learned embeddings of a text's hashed tokens (padding id 0 left out)."""

    def __init__(self, buckets: int, dim: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(buckets, dim, padding_idx=0)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        real = (ids != 0).unsqueeze(-1).float()
        return (self.embedding(ids) * real).sum(-2) / real.sum(-2).clamp(min=1.0)


class _ChoiceReader(nn.Module):
    """Loss, prediction and state shared by the readers; subclasses give `logits(batch)`."""

    def __init__(self, buckets: int, dim: int, dropout: float, *, with_features: bool) -> None:
        super().__init__()
        self.buckets = buckets
        self.with_features = with_features
        self.text = HashedText(buckets, dim)
        self.head = nn.Sequential(nn.Linear(3 * dim, dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(dim, 1))

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return collate_questions(items, self.buckets, with_features=self.with_features)

    def logits(self, batch: dict[str, Any]) -> torch.Tensor:
        raise NotImplementedError

    def _masked_logits(self, batch: dict[str, Any]) -> torch.Tensor:
        return self.logits(batch).float().masked_fill(~batch["choice_mask"], float("-inf"))

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        targets = batch["targets"]
        if bool((targets < 0).any()):
            raise PathkitError("a training question has no answer")
        return nn.functional.cross_entropy(self._masked_logits(batch), targets)

    def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        logits = self._masked_logits(batch)
        probs = torch.softmax(logits, dim=-1)
        out = []
        for row, mask in zip(probs, batch["choice_mask"], strict=True):
            scores = row[mask].tolist()
            out.append({"answer": int(row.argmax()), "scores": [round(s, 6) for s in scores]})
        return out

    def export_state(self) -> dict[str, Any]:
        return {}


class TextOnlyReader(_ChoiceReader):
    def __init__(self, buckets: int, dim: int, dropout: float) -> None:
        super().__init__(buckets, dim, dropout, with_features=False)

    def logits(self, batch: dict[str, Any]) -> torch.Tensor:
        q = self.text(batch["question_ids"]).unsqueeze(1)  # (B, 1, d)
        c = self.text(batch["choice_ids"])  # (B, C, d)
        q = q.expand_as(c)
        return self.head(torch.cat([q, c, q * c], dim=-1)).squeeze(-1)


class AttentionReader(_ChoiceReader):
    def __init__(self, feature_dim: int, buckets: int, dim: int, dropout: float, max_sets: int) -> None:
        super().__init__(buckets, dim, dropout, with_features=True)
        self.max_sets = max_sets
        self.patch = nn.Sequential(nn.Linear(feature_dim, dim), nn.LayerNorm(dim))
        self.set_embedding = nn.Embedding(max_sets, dim)
        self.query = nn.Linear(2 * dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = dim ** -0.5

    def attention(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(queries (B, C, d), attention weights (B, C, K), pooled patches (B, C, d))."""
        sets = batch["tile_set"]
        if bool((sets >= self.max_sets).any()):
            raise PathkitError(f"a question has more than {self.max_sets} candidate sets (hparam max_sets)")
        h = self.dropout(self.patch(batch["features"]) + self.set_embedding(sets))  # (B, K, d)
        q = self.text(batch["question_ids"]).unsqueeze(1)
        c = self.text(batch["choice_ids"])
        queries = self.query(torch.cat([q.expand_as(c), c], dim=-1))  # (B, C, d)
        scores = torch.einsum("bcd,bkd->bck", queries, self.key(h)) * self.scale
        weights = masked_softmax(scores, batch["mask"].unsqueeze(1).expand_as(scores))
        pooled = torch.einsum("bck,bkd->bcd", weights, self.value(h))
        return queries, weights, pooled

    def logits(self, batch: dict[str, Any]) -> torch.Tensor:
        queries, _, pooled = self.attention(batch)
        return self.head(torch.cat([pooled, queries, pooled * queries], dim=-1)).squeeze(-1)
