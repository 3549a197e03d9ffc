"""conch-zero-shot: zero-shot classification with CONCH v1's text tower (docs/zero-shot.md).

Each class's prototype is the normalised mean of its prompts' L2-normalised text embeddings
(CONCH's `zero_shot_classifier`); a case's tile features, L2-normalised, are compared with every
prototype by cosine similarity, and a class's score is the mean of its top-k tile similarities
(MI-Zero's `topj_pooling`; a patch is one tile, so k = 1). Probabilities are the softmax of the
scores times the model's logit scale (CONCH's `run_mizero`). Nothing is trained.

The text tower and tokenizer are those of `_conch_text` (the architecture of `conch_ViT-B-16.json`),
read from local files only; features must lie in CONCH v1's image-text space (`joint_space`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_ZERO_SHOT

# sha256 of `conch/open_clip_custom/tokenizers/conch_byte_level_bpe_uncased.json` as published in
# mahmoodlab/CONCH (1,388,969 bytes): the tokenizer file is refused when it differs, unless the
# `tokenizer_sha256` hparam names the digest of another file on purpose.
CONCH_TOKENIZER_SHA256 = "a3861e67c64d32670eb6725a8e52d7dbdd2a06646a4a3c7463052ae7110760fb"
CONCH_V1_SPACE = "conch-v1"
# CONCH's initial logit scale, exp(log(1 / 0.07)) (`CoCa.__init__` in `open_clip_custom/coca_model.py`), used
# when a checkpoint has no `logit_scale` tensor
DEFAULT_LOGIT_SCALE = 1 / 0.07


def pool_top_k(similarity: Any, k: int) -> Any:
    """(C,) class scores of one case: the mean of each class's k highest tile similarities, k
    clipped to the case's tile count (MI-Zero top-k pooling over an (N tiles, C) matrix)."""
    kept = min(int(k), int(similarity.shape[0]))
    return similarity.topk(kept, dim=0).values.mean(dim=0)


def class_prototypes(embed: Any, prompts: dict[str, list[str]]) -> Any:
    """(C, E) prototypes: per class, the renormalised mean of its prompts' normalised embeddings."""
    import torch

    rows = []
    for sentences in prompts.values():
        vectors = torch.nn.functional.normalize(embed(sentences).float(), dim=-1)
        rows.append(torch.nn.functional.normalize(vectors.mean(dim=0), dim=-1))
    return torch.stack(rows)


def _logit_scale(weights: Any, given: Any) -> float:
    if given is not None:
        return float(given)
    from pathkit_sdk.checkpoints import read_state_dict

    value = read_state_dict(weights).get("logit_scale")
    return math.exp(float(value.reshape(-1)[0])) if value is not None else DEFAULT_LOGIT_SCALE


class ConchZeroShot(Generator):
    """CONCH v1 zero-shot: prompt-ensemble prototypes, cosine similarity, MI-Zero top-k for slides."""

    name: ClassVar[str] = "conch-zero-shot"
    description: ClassVar[str] = "CONCH v1 text tower: prompt-ensemble class prototypes, MI-Zero top-k over tiles"
    tasks: ClassVar[tuple[str, ...]] = (TASK_ZERO_SHOT,)
    default_hparams: ClassVar[dict[str, Any]] = {
        "weights": None, "weights_sha256": None, "tokenizer": None, "tokenizer_sha256": CONCH_TOKENIZER_SHA256,
        "prompt_file": None, "templates": None, "top_k": 10, "logit_scale": None,
    }
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 64}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def key_facts(self, hparams: dict[str, Any]) -> dict[str, Any]:
        """The content of the checkpoint, tokenizer and prompt file in use (found, never downloaded)."""
        from pathkit_core.sources import path_identity
        from pathkit_generators._conch_text import find_conch_text

        hp = self.hparams(hparams)
        weights, tokenizer, _ = find_conch_text(hp["weights"], hp["tokenizer"])
        return {"text_tower": {name: path_identity(p) if p else None for name, p in
                               (("weights", weights), ("tokenizer", tokenizer), ("prompt_file", hp["prompt_file"]))}}

    def _embedder(self, hp: dict[str, Any]) -> Any:
        from pathkit_generators._conch_text import ConchTextEmbedder, find_conch_text
        from pathkit_sdk.checkpoints import verify_sha256

        weights, tokenizer, looked = find_conch_text(hp["weights"], hp["tokenizer"])
        if weights is None or tokenizer is None:
            what = "checkpoint" if weights is None else "tokenizer file"
            places = "; ".join(looked)
            raise PathkitError(f"{self.name}: no CONCH v1 {what} on this machine (looked in: {places}); pass "
                               f"--generator-option weights=/path/to/pytorch_model.bin (MahmoodLab/CONCH, gated) and "
                               f"tokenizer=/path/to/conch_byte_level_bpe_uncased.json; nothing is downloaded")
        verify_sha256(weights, hp["weights_sha256"], "conch (text tower)")
        verify_sha256(tokenizer, hp["tokenizer_sha256"], "conch (tokenizer)")
        return ConchTextEmbedder(weights, tokenizer), weights

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._joint_space import check_joint_space
        from pathkit_tasks.zeroshot.prompts import class_prompts

        hp = self.hparams(spec.hparams)
        if int(hp["top_k"]) < 1:
            raise PathkitError(f"{self.name}: top_k={hp['top_k']!r}; it must be 1 or more")
        if len(spec.class_names) < 2:
            raise PathkitError(f"{self.name}: the dataset declares {len(spec.class_names)} class name(s); "
                               "zero-shot needs two or more")
        check_joint_space(spec.train_items, CONCH_V1_SPACE, "CONCH v1")  # every split comes from one encoder
        prompts = class_prompts(spec.class_names, hp["prompt_file"], hp["templates"])
        embedder, weights = self._embedder(hp)
        prototypes = class_prototypes(embedder.embed, prompts)
        if prototypes.shape[1] != spec.feature_dim:
            raise PathkitError(f"{self.name}: the text tower embeds into {prototypes.shape[1]} dimensions, "
                               f"the features have {spec.feature_dim}")
        scale, top_k = _logit_scale(weights, hp["logit_scale"]), int(hp["top_k"])
        n_prompts = {c: len(p) for c, p in prompts.items()}

        class FittedZeroShot(torch.nn.Module):
            def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
                return {"case_ids": [i["case_id"] for i in items],
                        "features": [torch.as_tensor(i["features"]).float().cpu() for i in items]}

            def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
                out = []
                for feats in batch["features"]:
                    sims = torch.nn.functional.normalize(feats.reshape(-1, feats.shape[-1]), dim=-1) @ prototypes.T
                    scores = pool_top_k(sims, top_k)
                    probs = (scores * scale).softmax(dim=0)
                    out.append({"label": int(scores.argmax()), "probabilities": [float(p) for p in probs],
                                "similarity": [round(float(s), 6) for s in scores]})
                return out

            def export_state(self) -> dict[str, Any]:
                return {"top_k": top_k, "logit_scale": scale, "prompts_per_class": n_prompts}

        return FittedZeroShot()


@hookimpl
def register_generators(register):
    register(ConchZeroShot)
