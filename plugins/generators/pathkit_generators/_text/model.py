"""The TaskModel base of the report generators: batching, teacher-forced loss, beam-search decoding.

A concrete model subclasses `ReportModel` and implements `encode_slide` (one case's tile
features to its memory tokens). Shared here: batching of tile bags and reports, the masked
negative log-likelihood of teacher forcing (PathBench / R2Gen `LanguageModelCriterion`), batched
beam search, and the tokenizer state exported beside the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._bags import pad_bags
from pathkit_generators._text.beam import BeamSearchConfig, beam_search
from pathkit_generators._text.decoder import TransformerDecoder
from pathkit_generators._text.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    ReportTokenizer,
)


class ReportModel(nn.Module):
    """TaskModel for reports: `encode_slide` per case, a shared decoder, beam-search `predict`."""

    def __init__(self, tokenizer: ReportTokenizer, decoder: TransformerDecoder,
                 decoding: BeamSearchConfig) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.decoder = decoder
        self.decoding = decoding

    # ------------------------------------------------------------------ encoder side

    def encode_slide(self, features: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
        """Memory tokens (M, d_model) of one case's tiles (N, D); subclasses implement it."""
        raise NotImplementedError

    def encode(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Memory (B, M_max, d_model) and its key mask (B, M_max) for a collated batch.

        Cases are encoded one at a time, exactly as with PathBench's batch size 1 (the position
        and region layouts of WSI-Caption and HistGen depend on each slide's own tile count),
        then padded so that the decoder runs on the whole batch.
        """
        features, tile_mask, coords = batch["features"], batch["tile_mask"], batch.get("coords")
        memories = []
        for i in range(features.size(0)):
            n = int(tile_mask[i].sum())
            if n == 0:
                raise PathkitError(f"case {batch['case_ids'][i]!r} has no tiles")
            c = coords[i, :n] if coords is not None else None
            memories.append(self.encode_slide(features[i, :n], c))
        return pad_bags(memories)

    # ------------------------------------------------------------------ TaskModel protocol

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        features, tile_mask = pad_bags([torch.as_tensor(it["features"]).float() for it in items])
        coords = None
        if all(it.get("coords") is not None for it in items):
            coords, _ = pad_bags([torch.as_tensor(it["coords"]).long() for it in items])
        targets = [it.get("target") for it in items]
        tokens = None
        if all(isinstance(t, str) for t in targets):
            tokens = self.tokenizer.encode_batch(targets, log_truncation=False)
        return {"case_ids": [it["case_id"] for it in items], "features": features,
                "tile_mask": tile_mask, "coords": coords, "tokens": tokens}

    def token_logprobs(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """Teacher-forced log-probabilities (B, T-1, V) of each next report token."""
        memory, memory_mask = self.encode(batch)
        logits = self.decoder(batch["tokens"][:, :-1], memory, memory_mask)
        return torch.log_softmax(logits.float(), dim=-1)

    def training_step(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """Mean negative log-likelihood over the real (non-padding) target tokens of the batch."""
        if batch.get("tokens") is None:
            raise PathkitError("training needs a report text for every case")
        logp = self.token_logprobs(batch)
        target = batch["tokens"][:, 1:]
        mask = (target != PAD_ID).to(logp.dtype)
        nll = -logp.gather(-1, target[..., None]).squeeze(-1)
        return (nll * mask).sum() / mask.sum().clamp_min(1.0)

    @torch.no_grad()
    def generate(self, batch: Mapping[str, Any]) -> list[list[int]]:
        """Beam-searched token ids (no `<bos>`/`<eos>`) for every case of `batch`."""
        memory, memory_mask = self.encode(batch)
        cache = self.decoder.start(memory, memory_mask)
        hyps = beam_search(
            lambda tokens, _t: self.decoder.step(tokens, cache), cache.reorder, memory.size(0),
            bos=BOS_ID, eos=EOS_ID, unk=UNK_ID, forbidden=(PAD_ID, BOS_ID), config=self.decoding,
            device=memory.device,
        )
        return [h.tokens for h in hyps]

    def predict(self, batch: Mapping[str, Any]) -> list[str]:
        return [self.tokenizer.decode(ids) for ids in self.generate(batch)]

    def export_state(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer.state_dict()}
