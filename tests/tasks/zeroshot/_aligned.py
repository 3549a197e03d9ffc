"""A tiny CONCH-layout text tower whose class words embed onto given feature means (the zero-shot tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tests._conch_tokenizer import write_conch_tokenizer

CLASSES = ("tumour", "stroma", "necrosis")
DIM = 8


def aligned_tower(folder: Path, means: torch.Tensor) -> tuple[Path, Path]:
    """A CONCH-layout checkpoint (1 block, width 2*DIM) whose embedding of a prompt naming class c
    points at that class's feature mean: the class word's token embedding is [m_c, -m_c] (zero mean,
    so LayerNorm keeps its direction), every other token embeds to 0, attention is uniform (q = k =
    0) with identity values and output, the MLP is zero, and the projection keeps the first half."""
    from safetensors.torch import save_file

    words = ["<pad>", "<start_of_text>", "<end_of_text>", "<unk>", *CLASSES]
    tokenizer = write_conch_tokenizer(folder, words, unk_token="<unk>")
    width = 2 * DIM
    embedding = torch.zeros(len(words), width)
    for c in range(len(CLASSES)):
        embedding[4 + c] = torch.cat([means[c], -means[c]]) * 5
    eye = torch.eye(width)
    p = "text.transformer.resblocks.0."
    state = {"text.token_embedding.weight": embedding, "text.positional_embedding": torch.zeros(128, width),
             "text.cls_emb": torch.zeros(width), "text.ln_final.weight": torch.ones(width),
             "text.ln_final.bias": torch.zeros(width),
             "text.text_projection": torch.cat([torch.eye(DIM), torch.zeros(DIM, DIM)]),
             p + "ln_1.weight": torch.ones(width), p + "ln_1.bias": torch.zeros(width),
             p + "attn.in_proj_weight": torch.cat([torch.zeros(2 * width, width), eye]),
             p + "attn.in_proj_bias": torch.zeros(3 * width), p + "attn.out_proj.weight": eye.clone(),
             p + "attn.out_proj.bias": torch.zeros(width), p + "ln_2.weight": torch.ones(width),
             p + "ln_2.bias": torch.zeros(width), p + "mlp.c_fc.weight": torch.zeros(4 * width, width),
             p + "mlp.c_fc.bias": torch.zeros(4 * width), p + "mlp.c_proj.weight": torch.zeros(width, 4 * width),
             p + "mlp.c_proj.bias": torch.zeros(width), "logit_scale": torch.tensor(np.log(50.0))}
    save_file(state, str(folder / "model.safetensors"))
    return folder / "model.safetensors", tokenizer
