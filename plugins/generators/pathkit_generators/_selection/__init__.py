"""Evidence selection under a budget: budget allocation, spatial regions and question relevance."""

from __future__ import annotations

from typing import Any

RELEVANCE_CHOICES = ("auto", "text-tower", "learned")
# Options of every relevance-scoring selector (flat-topk, pathoargus); see `relevance`.
RELEVANCE_OPTIONS: dict[str, Any] = {
    "relevance": "auto",  # "auto" | "text-tower" | "learned"
    "text_weights": None,  # CONCH v1 checkpoint (else $PATHKIT_WEIGHTS_DIR/conch/, the HF cache)
    "text_tokenizer": None,  # conch_byte_level_bpe_uncased.json (else beside the checkpoint)
    "projection_dim": 256,  # the learned projection's text-space size (hashed n-gram buckets)
    "relevance_epochs": 40,
    "relevance_lr": 2e-2,
    "relevance_rows": 256,  # patches sampled per train question
    "relevance_temperature": 0.1,
}
