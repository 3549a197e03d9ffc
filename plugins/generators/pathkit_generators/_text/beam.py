"""Batched beam search for report decoding, with the options of PathBench's decoder.

Follows the diverse beam search of ImageCaptioning.pytorch that PathBench, R2Gen, WSI-Caption and
HistGen share (docs/report-generation.md, "Decoding"):

- `beam_size` hypotheses per case in `group_size` groups of `beam_size // group_size`; a group
  g > 0 is penalised by `diversity_lambda` for every token the earlier groups chose at the same
  step (Hamming diversity, Vijayakumar et al. 2018);
- `block_previous`: a hypothesis may not repeat its previous token;
- `suppress_unk`: `<unk>` is never generated (PathBench subtracts 1000; here it is -inf), nor
  are `<pad>` and `<bos>`;
- a hypothesis that emits `<eos>` is finished, scored `length_penalty(length, log-prob sum)`
  ("" none, "wu_A" Wu et al. 2016, "avg_A" mean), and its slot dies; at `max_len` every live
  hypothesis is finished;
- the answer is the best finished hypothesis of the first group (PathBench returns
  `done_beams[k][0]`), or of all groups with `pick="best"`.

Every case in the batch is searched at once: the model is called once per step for all
hypotheses. Without a length penalty the search stops as soon as no live hypothesis can still
beat the best finished one (scores only decrease), which leaves the answer unchanged.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

StepFn = Callable[[torch.Tensor, int], torch.Tensor]
ReorderFn = Callable[[torch.Tensor], None]


@dataclass(frozen=True)
class BeamSearchConfig:
    """Decoding options; defaults follow the PathBench protocol (beam 3, one group)."""

    beam_size: int = 3
    group_size: int = 1
    diversity_lambda: float = 0.5
    block_previous: bool = True
    suppress_unk: bool = True
    length_penalty: str = ""
    max_len: int = 320
    pick: str = "first-group"
    temperature: float = 1.0
    # the first step the temperature applies at: 0 every step; 1 as PathBench's beam search,
    # which rescales the model's log-probabilities after each step, not the first one
    temperature_from_step: int = 0

    def __post_init__(self) -> None:
        if self.beam_size < 1 or self.group_size < 1 or self.beam_size % self.group_size:
            raise ValueError(f"beam_size {self.beam_size} must be a positive multiple of group_size {self.group_size}")
        if self.max_len < 1:
            raise ValueError("max_len must be at least 1")
        if not self.temperature > 0 or self.temperature_from_step < 0:
            raise ValueError(f"temperature must be > 0 and temperature_from_step >= 0, got {self.temperature}, "
                             f"{self.temperature_from_step}")
        if self.pick not in ("first-group", "best"):
            raise ValueError(f"pick must be 'first-group' or 'best', not {self.pick!r}")
        length_penalty(self.length_penalty, 1, 0.0)  # validates the spec


@dataclass
class Hypothesis:
    """A finished hypothesis: tokens without `<bos>`/`<eos>`, its ranking score and log-prob sum."""

    tokens: list[int]
    score: float
    logprob: float
    group: int = 0


def length_penalty(spec: str, length: int, logprob: float) -> float:
    """The ranking score of a finished hypothesis of `length` tokens (end token included)."""
    if not spec:
        return logprob
    kind, _, alpha_text = spec.partition("_")
    try:
        alpha = float(alpha_text)
    except ValueError:
        raise ValueError(f"length penalty {spec!r}: expected 'wu_<alpha>' or 'avg_<alpha>'") from None
    if kind == "wu":
        return logprob / (((5 + length) ** alpha) / (6**alpha))
    if kind == "avg":
        return logprob / (length**alpha)
    raise ValueError(f"unknown length penalty {spec!r}: expected '', 'wu_<alpha>' or 'avg_<alpha>'")


def beam_search(step: StepFn, reorder: ReorderFn | None, batch_size: int, *, bos: int, eos: int,
                unk: int | None = None, forbidden: Sequence[int] = (),
                config: BeamSearchConfig = BeamSearchConfig(),
                device: torch.device | str = "cpu") -> list[Hypothesis]:
    """Decode `batch_size` cases; returns the chosen hypothesis of each.

    `step(tokens, t)` gets the last token of every hypothesis, shape (batch_size * beam_size,),
    ordered case by case, and returns log-probabilities (batch_size * beam_size, V) of the next
    token. `reorder(index)` must then make row i of the model's state what row `index[i]` was.
    """
    finished = beam_search_all(step, reorder, batch_size, bos=bos, eos=eos, unk=unk,
                               forbidden=forbidden, config=config, device=device)
    return [_choose(hyps, config.pick) for hyps in finished]


def beam_search_all(step: StepFn, reorder: ReorderFn | None, batch_size: int, *, bos: int, eos: int,
                    unk: int | None = None, forbidden: Sequence[int] = (),
                    config: BeamSearchConfig = BeamSearchConfig(),
                    device: torch.device | str = "cpu") -> list[list[Hypothesis]]:
    """Every finished hypothesis of every case (as `beam_search`, before the final pick)."""
    cfg = config
    k, g_count = cfg.beam_size, cfg.group_size
    width = k // g_count
    neg_inf = float("-inf")
    sums = torch.full((batch_size, g_count, width), neg_inf, device=device)
    sums[:, :, 0] = 0.0  # at the start only one hypothesis per group exists
    raw_sums = torch.zeros(batch_size, g_count, width, device=device)
    seqs = torch.zeros(batch_size, g_count, width, 0, dtype=torch.long, device=device)
    tokens = torch.full((batch_size * k,), bos, dtype=torch.long, device=device)
    done: list[list[Hypothesis]] = [[] for _ in range(batch_size)]
    base = (torch.arange(batch_size, device=device) * k)[:, None, None]
    group_offset = (torch.arange(g_count, device=device) * width)[None, :, None]

    for t in range(cfg.max_len):
        logp = step(tokens, t).float()
        vocab = logp.size(-1)
        if cfg.temperature != 1.0 and t >= cfg.temperature_from_step:
            logp = torch.log_softmax(logp / cfg.temperature, dim=-1)
        raw = logp.view(batch_size, g_count, width, vocab)
        logp = raw.clone()
        if forbidden:
            logp[..., list(forbidden)] = neg_inf
        if cfg.suppress_unk and unk is not None:
            logp[..., unk] = neg_inf
        if cfg.block_previous and t > 0:
            logp.scatter_(-1, seqs[..., -1:], neg_inf)
        new_sums = torch.empty_like(sums)
        new_raw = torch.empty_like(raw_sums)
        picked_beam = torch.empty(batch_size, g_count, width, dtype=torch.long, device=device)
        picked_token = torch.empty_like(picked_beam)
        for g in range(g_count):
            lp = logp[:, g]
            if g > 0 and cfg.diversity_lambda:
                counts = torch.zeros(batch_size, vocab, device=device)
                counts.scatter_add_(1, picked_token[:, :g].reshape(batch_size, -1),
                                    torch.ones(batch_size, g * width, device=device))
                lp = lp - cfg.diversity_lambda * counts[:, None, :]
            candidates = (sums[:, g, :, None] + lp).reshape(batch_size, -1)
            values, flat = candidates.topk(width, dim=-1)
            beam_ix, tok = flat // vocab, flat % vocab
            picked_beam[:, g], picked_token[:, g] = beam_ix, tok
            new_sums[:, g] = values
            new_raw[:, g] = (raw_sums[:, g].gather(1, beam_ix)
                             + raw[:, g].reshape(batch_size, -1).gather(1, flat))
        seqs = torch.cat([seqs.gather(2, picked_beam[..., None].expand(-1, -1, -1, seqs.size(-1))),
                          picked_token[..., None]], dim=-1)
        sums, raw_sums = new_sums, new_raw
        if reorder is not None:
            reorder((base + group_offset + picked_beam).reshape(-1))
        finished = (picked_token == eos) | (t == cfg.max_len - 1)
        finished &= torch.isfinite(sums)
        if finished.any():
            for b, g, j in finished.nonzero().tolist():
                seq = seqs[b, g, j].tolist()
                if seq and seq[-1] == eos:
                    seq = seq[:-1]
                score = length_penalty(cfg.length_penalty, t + 1, float(sums[b, g, j]))
                done[b].append(Hypothesis(seq, score, float(raw_sums[b, g, j]), g))
            sums = sums.masked_fill(finished, neg_inf)
        tokens = picked_token.reshape(-1)
        if not cfg.length_penalty and _settled(done, sums, cfg.pick):
            break
    return done


def _settled(done: list[list[Hypothesis]], sums: torch.Tensor, pick: str) -> bool:
    """True when no live hypothesis of any case can still outrank that case's answer."""
    live = sums[:, :1] if pick == "first-group" else sums
    best_live = live.reshape(live.size(0), -1).max(dim=-1).values.tolist()
    for hyps, bound in zip(done, best_live, strict=True):
        if bound == float("-inf"):
            continue
        eligible = [h.score for h in hyps if pick == "best" or h.group == 0]
        if not eligible or max(eligible) < bound:
            return False
    return True


def _choose(hyps: list[Hypothesis], pick: str) -> Hypothesis:
    eligible = [h for h in hyps if pick == "best" or h.group == 0] or hyps
    if not eligible:
        return Hypothesis([], float("-inf"), float("-inf"))
    return max(eligible, key=lambda h: h.score)


def exhaustive_search(score_next: Callable[[list[int]], Sequence[float]], vocab_size: int, *, eos: int,
                      max_len: int, banned: Sequence[int] = (), block_previous: bool = True,
                      length_penalty_spec: str = "") -> Hypothesis:
    """The exact best single-group hypothesis by enumeration (a reference for tests).

    `score_next(prefix)` returns the log-probabilities of the next token after `prefix`
    (generated tokens so far, no `<bos>`). Hypotheses end at `eos` or after `max_len` tokens.
    """
    allowed = [v for v in range(vocab_size) if v not in set(banned)]
    best = Hypothesis([], float("-inf"), float("-inf"))
    for length in range(1, max_len + 1):
        for seq in itertools.product(allowed, repeat=length):
            if eos in seq[:-1]:
                continue
            if length < max_len and seq[-1] != eos:
                continue
            if block_previous and any(a == b for a, b in zip(seq, seq[1:], strict=False)):
                continue
            total = 0.0
            for i, tok in enumerate(seq):
                total += float(score_next(list(seq[:i]))[tok])
            if math.isinf(total):
                continue
            score = length_penalty(length_penalty_spec, length, total)
            if score > best.score:
                tokens = list(seq[:-1]) if seq[-1] == eos else list(seq)
                best = Hypothesis(tokens, score, total)
    return best
