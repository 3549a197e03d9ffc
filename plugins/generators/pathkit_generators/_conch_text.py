"""The CONCH (v1) text tower as a sentence embedder for BiGen's knowledge bank, read from local weights only.

CONCH (Lu et al., Nature Medicine 2024) is a CoCa model; its text tower maps a sentence to the
512-d image-text space. Facts followed (public code mahmoodlab/CONCH, `open_clip_custom`):

- tokenizer: the byte-level BPE file `conch_byte_level_bpe_uncased.json` (lower-cased, NFD, accents
  stripped), `<start_of_text>`/`<end_of_text>` added, 127 tokens, `<pad>` = 0 after the end;
- tower (`conch_ViT-B-16.json`, `text_cfg`): vocabulary 32007, width 768, 12 heads, 12 layers,
  context 128; a learned class embedding is appended after the 127 tokens; causal
  self-attention, and the class position additionally masked by `build_cls_mask` (which, as in
  the reference, tests token j-1 for key j); pre-norm blocks with GELU MLPs (ratio 4);
  `ln_final` on the class position, then `text_projection` (768 x 512), then L2 normalisation
  (`encode_text(normalize=True)`).

Checkpoint keys are those of the full CoCa checkpoint (`pytorch_model.bin` of MahmoodLab/CONCH)
under the `text.` prefix. Weights are looked up through `pathkit_core.features.weights` (explicit
path, `$PATHKIT_WEIGHTS_DIR/conch/`, the local Hugging Face cache); nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import PathkitError, PretrainedWeights

if TYPE_CHECKING:
    import torch

TOKENIZER_FILE = "conch_byte_level_bpe_uncased.json"
TEXT_PREFIX = "text."
CONTEXT_LENGTH = 128
PAD_ID = 0


class ConchCheckpoint:
    """Where the CONCH v1 checkpoint (vision + text towers) is looked for; not an encoder plugin."""

    name: ClassVar[str] = "conch"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="MahmoodLab/CONCH",
        filename="pytorch_model.bin",
        license="CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)",
        citation="Lu, M.Y. et al. A visual-language foundation model for computational pathology. "
                 "Nature Medicine 30, 863-874 (2024).",
        gated=True,
    )


def find_conch_text(weights_path: str | Path | None = None,
                    tokenizer_path: str | Path | None = None) -> tuple[Path | None, Path | None, list[str]]:
    """The CONCH checkpoint and tokenizer file if both are on this machine, and every place looked.

    The tokenizer is searched next to the checkpoint, then in an installed `conch` package.
    """
    from pathkit_core.features.weights import find_weights

    weights, looked = find_weights(ConchCheckpoint, weights_path)  # type: ignore[arg-type]
    if tokenizer_path is not None:
        tok = Path(tokenizer_path).expanduser()
        looked.append(f"tokenizer {tok}")
        return weights, (tok if tok.is_file() else None), looked
    candidates = []
    if weights is not None:
        candidates.append(weights.parent / TOKENIZER_FILE)
    spec = importlib.util.find_spec("conch")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates.append(Path(root) / "open_clip_custom" / "tokenizers" / TOKENIZER_FILE)
    for candidate in candidates:
        looked.append(f"tokenizer {candidate}")
        if candidate.is_file():
            return weights, candidate, looked
    if not candidates:
        looked.append(f"tokenizer {TOKENIZER_FILE} (no checkpoint folder and no `conch` package to look in)")
    return weights, None, looked


def _build_tower(vocab_size: int = 32007, width: int = 768, heads: int = 12, layers: int = 12,
                 context_length: int = CONTEXT_LENGTH, output_dim: int = 512) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        """Pre-norm residual block with the key names of open_clip's `ResidualAttentionBlock`."""

        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, heads)
            self.ln_2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(OrderedDict([
                ("c_fc", nn.Linear(width, width * 4)), ("gelu", nn.GELU()), ("c_proj", nn.Linear(width * 4, width)),
            ]))

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
            return x + self.mlp(self.ln_2(x))

    class Tower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = heads
            self.token_embedding = nn.Embedding(vocab_size, width)
            self.positional_embedding = nn.Parameter(torch.zeros(context_length, width))
            self.cls_emb = nn.Parameter(torch.zeros(width))
            self.transformer = nn.Module()
            self.transformer.resblocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_final = nn.LayerNorm(width)
            self.text_projection = nn.Parameter(torch.zeros(width, output_dim))

        def attention_mask(self, ids: torch.Tensor) -> torch.Tensor:
            """(B * heads, L+1, L+1) additive mask: causal, plus the class row's padding mask."""
            b, n = ids.shape
            causal = torch.full((n + 1, n + 1), float("-inf"), device=ids.device).triu(1)
            # CONCH's build_cls_mask pads the token mask by one column on the left, so key j of the
            # class row is allowed when token j-1 is not padding (and key 0 always): kept as is,
            # because the released weights were trained with it.
            allowed = torch.ones(b, n + 1, dtype=torch.bool, device=ids.device)
            allowed[:, 1:] = ids != PAD_ID
            cls_row = torch.zeros(b, n + 1, device=ids.device).masked_fill(~allowed, float("-inf"))
            mask = causal.expand(b, -1, -1).clone()
            mask[:, n] = mask[:, n] + cls_row
            return mask.repeat_interleave(self.heads, dim=0)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.token_embedding(ids)
            x = torch.cat([x, self.cls_emb.to(x.dtype).expand(x.size(0), 1, -1)], dim=1)
            x = x + self.positional_embedding[: x.size(1)].to(x.dtype)
            mask = self.attention_mask(ids).to(x.dtype)
            x = x.transpose(0, 1)  # (L, B, D): nn.MultiheadAttention's default layout
            for block in self.transformer.resblocks:
                x = block(x, mask)
            pooled = self.ln_final(x[-1])
            return torch.nn.functional.normalize(pooled @ self.text_projection, dim=-1)

    return Tower()


class ConchTextEmbedder:
    """Sentence embeddings from the CONCH v1 text tower (512-d, L2-normalised)."""

    name = "conch"

    def __init__(self, weights: Path, tokenizer_file: Path, *, device: str = "cpu",
                 batch_size: int = 64) -> None:
        self.weights, self.tokenizer_file = Path(weights), Path(tokenizer_file)
        self.device, self.batch_size = device, batch_size
        self._tower: Any = None
        self._tokenizer: Any = None
        self.dim = 512

    def identity(self) -> dict[str, Any]:
        from pathkit_core.workspace import sha256_file

        self._load()  # the output size is the checkpoint's
        return {"name": self.name, "dim": self.dim, "weights_sha256": sha256_file(self.weights),
                "tokenizer_sha256": sha256_file(self.tokenizer_file)}

    def _load(self) -> None:
        if self._tower is not None:
            return
        from pathkit_sdk.checkpoints import read_state_dict

        state = read_state_dict(self.weights)
        text_state = {k[len(TEXT_PREFIX):]: v for k, v in state.items() if k.startswith(TEXT_PREFIX)}
        if not text_state:
            raise PathkitError(f"{self.weights} holds no CONCH text tower (no '{TEXT_PREFIX}*' tensors)")
        vocab, width = text_state["token_embedding.weight"].shape
        layers = len({k.split(".")[2] for k in text_state if k.startswith("transformer.resblocks.")})
        tower = _build_tower(vocab_size=vocab, width=width, heads=max(1, width // 64), layers=layers,
                             context_length=text_state["positional_embedding"].shape[0],
                             output_dim=text_state["text_projection"].shape[1])
        missing, unexpected = tower.load_state_dict(text_state, strict=False)
        if missing or unexpected:
            raise PathkitError(f"{self.weights}: the CONCH text tower does not fit: missing {sorted(missing)[:8]}, "
                               f"unexpected {sorted(unexpected)[:8]}")
        self.dim = int(text_state["text_projection"].shape[1])
        self._tower = tower.eval().to(self.device)
        self._tokenizer = load_tokenizer(self.tokenizer_file)

    def tokenize(self, sentences: Sequence[str]) -> torch.Tensor:
        self._load()
        return tokenize(self._tokenizer, sentences)

    def embed(self, sentences: Sequence[str]) -> torch.Tensor:
        import torch

        self._load()
        out = []
        with torch.inference_mode():
            for start in range(0, len(sentences), self.batch_size):
                ids = tokenize(self._tokenizer, sentences[start: start + self.batch_size]).to(self.device)
                out.append(self._tower(ids).float().cpu())
        return torch.cat(out) if out else torch.zeros(0, self.dim)


def load_tokenizer(path: Path) -> Any:
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError as exc:  # pragma: no cover - transformers is a dependency of the environment
        raise PathkitError(f"the CONCH text tower needs `transformers` ({exc})") from exc
    try:
        return PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<start_of_text>",
                                       eos_token="<end_of_text>", pad_token="<pad>")
    except Exception as exc:  # noqa: BLE001 - any parse failure of the file is the user's file
        raise PathkitError(f"cannot read the CONCH tokenizer {path}: {exc}") from exc


def tokenize(tokenizer: Any, sentences: Sequence[str]) -> torch.Tensor:
    """(B, 127) token ids: start, text, end, padding (CONCH's `tokenize`, class slot left out)."""
    encoded = tokenizer(list(sentences), max_length=CONTEXT_LENGTH - 1, add_special_tokens=True,
                        return_token_type_ids=False, truncation=True, padding="max_length",
                        return_tensors="pt")
    return encoded["input_ids"]
