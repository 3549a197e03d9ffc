"""Beam search against exhaustive search, attention back ends, cached decoding against teacher forcing."""

from __future__ import annotations

import hashlib

import pytest
import torch
from pathkit_generators._text.attention import MultiHeadAttention, attend, attention_implementation
from pathkit_generators._text.beam import (
    BeamSearchConfig,
    beam_search,
    beam_search_all,
    exhaustive_search,
    length_penalty,
)
from pathkit_generators._text.decoder import TransformerDecoder

PAD, BOS, EOS, UNK = 0, 1, 2, 3
VOCAB = 7  # specials + three content tokens


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def toy_logprobs(case: int, prefix: list[int], vocab: int = VOCAB) -> torch.Tensor:
    """A fixed pseudo-random next-token distribution for every (case, prefix)."""
    digest = hashlib.sha256(f"{case}:{prefix}".encode()).digest()
    gen = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))
    return torch.log_softmax(torch.randn(vocab, generator=gen) * 2.0, dim=-1)


class ToyModel:
    """A step function that knows each hypothesis's prefix through `reorder`."""

    def __init__(self, cases: list[int], beam: int) -> None:
        self.cases = [c for c in cases for _ in range(beam)]
        self.prefixes: list[list[int]] = [[] for _ in self.cases]
        self.calls = 0

    def step(self, tokens: torch.Tensor, t: int) -> torch.Tensor:
        self.calls += 1
        if t > 0:
            self.prefixes = [p + [int(tok)] for p, tok in zip(self.prefixes, tokens, strict=True)]
        return torch.stack([toy_logprobs(c, p) for c, p in zip(self.cases, self.prefixes, strict=True)])

    def reorder(self, index: torch.Tensor) -> None:
        self.prefixes = [list(self.prefixes[i]) for i in index.tolist()]
        self.cases = [self.cases[i] for i in index.tolist()]


def run_beam(cases: list[int], **options) -> list:
    cfg = BeamSearchConfig(**options)
    toy = ToyModel(cases, cfg.beam_size)
    return beam_search(toy.step, toy.reorder, len(cases), bos=BOS, eos=EOS, unk=UNK,
                       forbidden=(PAD, BOS), config=cfg)


@pytest.mark.parametrize("block", [True, False])
@pytest.mark.parametrize("penalty", ["", "avg_1", "wu_0.7"])
def test_wide_beam_equals_exhaustive_search(block, penalty):
    for case in range(4):
        exact = exhaustive_search(lambda prefix, c=case: toy_logprobs(c, prefix).tolist(), VOCAB, eos=EOS,
                                  max_len=4, banned=(PAD, BOS, UNK), block_previous=block,
                                  length_penalty_spec=penalty)
        # 27 >= every live prefix of length < 4 over 3 content tokens: the beam is exhaustive
        found = run_beam([case], beam_size=27, max_len=4, block_previous=block, length_penalty=penalty)[0]
        assert found.tokens == exact.tokens
        assert found.score == pytest.approx(exact.score, abs=1e-5)


def test_beam_of_one_is_greedy_decoding():
    for case in range(3):
        prefix: list[int] = []
        for _ in range(6):
            logp = toy_logprobs(case, prefix).clone()
            logp[[PAD, BOS, UNK]] = float("-inf")
            if prefix:
                logp[prefix[-1]] = float("-inf")
            tok = int(logp.argmax())
            prefix.append(tok)
            if tok == EOS:
                break
        expected = prefix[:-1] if prefix[-1] == EOS else prefix
        assert run_beam([case], beam_size=1, max_len=6)[0].tokens == expected


def test_batched_search_equals_one_case_at_a_time():
    cases = [5, 6, 7, 8]
    together = run_beam(cases, beam_size=3, max_len=8)
    for case, hyp in zip(cases, together, strict=True):
        alone = run_beam([case], beam_size=3, max_len=8)[0]
        assert alone.tokens == hyp.tokens and alone.score == pytest.approx(hyp.score)


def test_early_stop_changes_nothing():
    # "avg_0" scores exactly like "" but disables the early stop
    for case in range(6):
        fast = run_beam([case], beam_size=3, max_len=10)[0]
        full = run_beam([case], beam_size=3, max_len=10, length_penalty="avg_0")[0]
        assert fast.tokens == full.tokens and fast.score == pytest.approx(full.score)


def test_unk_pad_bos_never_generated_and_previous_token_blocked():
    def step(tokens, t):
        logp = torch.full((tokens.numel(), VOCAB), -10.0)
        logp[:, UNK] = -0.01  # the model loves <unk>, then <pad>, <bos>, token 4
        logp[:, PAD] = -0.02
        logp[:, BOS] = -0.03
        logp[:, 4] = -0.04
        logp[:, 5] = -0.5
        return logp

    hyp = beam_search(step, None, 1, bos=BOS, eos=EOS, unk=UNK, forbidden=(PAD, BOS),
                      config=BeamSearchConfig(beam_size=1, max_len=5))[0]
    assert hyp.tokens == [4, 5, 4, 5, 4]
    unblocked = beam_search(step, None, 1, bos=BOS, eos=EOS, unk=UNK, forbidden=(PAD, BOS),
                            config=BeamSearchConfig(beam_size=1, max_len=5, block_previous=False))[0]
    assert unblocked.tokens == [4, 4, 4, 4, 4]


def test_diverse_groups_choose_different_first_tokens():
    cfg = BeamSearchConfig(beam_size=2, group_size=2, diversity_lambda=100.0, max_len=3)
    toy = ToyModel([0], cfg.beam_size)
    done = beam_search_all(toy.step, toy.reorder, 1, bos=BOS, eos=EOS, unk=UNK, forbidden=(PAD, BOS), config=cfg)[0]
    first = {g: {h.tokens[0] if h.tokens else EOS for h in done if h.group == g} for g in (0, 1)}
    assert first[0] and first[1] and not first[0] & first[1]
    # the first group alone is plain beam search of width 1
    assert run_beam([0], beam_size=2, group_size=2, diversity_lambda=100.0, max_len=3)[0].tokens == \
        run_beam([0], beam_size=1, max_len=3)[0].tokens


def test_temperature_from_the_second_step_leaves_the_first_token_as_it_is():
    # PathBench rescales log-probabilities by the temperature after each step, never the first one
    def scores(max_len, **options):
        cfg = BeamSearchConfig(beam_size=3, max_len=max_len, **options)
        toy = ToyModel([0], cfg.beam_size)
        # the end token is forbidden, so every hypothesis runs `max_len` steps
        done = beam_search_all(toy.step, toy.reorder, 1, bos=BOS, eos=EOS, unk=UNK, forbidden=(PAD, BOS, EOS),
                               config=cfg)[0]
        return {tuple(h.tokens): h.logprob for h in done}

    for max_len, same in ((1, True), (4, False)):  # one step: only the first token is chosen
        plain = scores(max_len)
        later = scores(max_len, temperature=0.5, temperature_from_step=1)
        assert (later == plain) is same
        assert scores(max_len, temperature=0.5) != plain
    assert scores(4, temperature=0.5, temperature_from_step=10) == scores(4)  # never reached
    from pathkit_generators._text.generator import COMMON_HPARAMS

    # every report generator decodes as PathBench's configs do: temperature 0.7 from the second step
    assert (COMMON_HPARAMS["temperature"], COMMON_HPARAMS["temperature_from_step"]) == (0.7, 1)
    with pytest.raises(ValueError, match="temperature"):
        BeamSearchConfig(temperature=0.0)


def test_length_penalty_values():
    assert length_penalty("", 4, -2.0) == -2.0
    assert length_penalty("avg_1", 4, -2.0) == pytest.approx(-0.5)
    assert length_penalty("wu_1", 4, -2.0) == pytest.approx(-2.0 / (9 / 6))
    with pytest.raises(ValueError, match="unknown length penalty"):
        BeamSearchConfig(length_penalty="exp_2")
    with pytest.raises(ValueError, match="multiple"):
        BeamSearchConfig(beam_size=3, group_size=2)


# --------------------------------------------------------------------------- attention and decoder


def test_sdpa_and_materialised_attention_agree():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=gen) for _ in range(3))
    mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    mask[1, ..., 3:] = False
    for kwargs in ({}, {"mask": mask}, {"causal": True}):
        fused = attend(q, k, v, **kwargs)
        with attention_implementation("naive"):
            naive = attend(q, k, v, **kwargs)
        torch.testing.assert_close(fused, naive, atol=1e-5, rtol=1e-5)
    # masked keys change nothing: dropping them gives the same result
    torch.testing.assert_close(attend(q[1:], k[1:, :, :3], v[1:, :, :3]),
                               attend(q[1:], k[1:], v[1:], mask=mask[1:]), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="unknown attention"), attention_implementation("flashy"):
        pass


def test_beam_queries_share_one_memory_copy():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.0).eval()
    memory, query = torch.randn(2, 9, 16), torch.randn(6, 1, 16)  # 2 cases x 3 beams
    key_mask = torch.ones(2, 9, dtype=torch.bool)
    key_mask[0, 7:] = False
    folded = mha.attend_projected(query, *mha.project_kv(memory), key_mask=key_mask)
    copied = mha(query, memory.repeat_interleave(3, 0), key_mask=key_mask.repeat_interleave(3, 0))
    torch.testing.assert_close(folded, copied, atol=1e-5, rtol=1e-5)


def test_cached_steps_match_teacher_forcing():
    torch.manual_seed(0)
    adapter = torch.nn.Linear(16, 16)
    decoder = TransformerDecoder(11, d_model=16, num_layers=2, num_heads=4, d_ff=32, dropout=0.1,
                                 token_adapter=lambda x: x + adapter(x)).eval()
    memory = torch.randn(2, 6, 16)
    memory_mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    tokens = torch.randint(4, 11, (2, 7))
    with torch.no_grad():
        full = torch.log_softmax(decoder(tokens, memory, memory_mask), dim=-1)
        cache = decoder.start(memory, memory_mask)
        steps = torch.stack([decoder.step(tokens[:, t], cache) for t in range(7)], dim=1)
    torch.testing.assert_close(full, steps, atol=1e-5, rtol=1e-5)
    # padding the memory of case 1 with masked garbage changes nothing
    garbage = memory.clone()
    garbage[1, 4:] = 100.0
    with torch.no_grad():
        torch.testing.assert_close(decoder(tokens, garbage, memory_mask), decoder(tokens, memory, memory_mask),
                                   atol=1e-5, rtol=1e-5)


def test_chunked_attention_matches_and_recomputes_the_same_dropout_mask(monkeypatch):
    from pathkit_generators._text import attention as attention_module
    from pathkit_generators._text.attention import chunked_attention

    monkeypatch.setattr(attention_module, "CHUNK_ELEMENTS", 300 * 100)  # chunks of 100 queries

    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 300, 8, generator=gen) for _ in range(3))
    mask = torch.ones(1, 1, 1, 300, dtype=torch.bool)
    mask[..., 250:] = False
    torch.testing.assert_close(chunked_attention(q, k, v, mask=mask), attend(q, k, v, mask=mask),
                               atol=1e-5, rtol=1e-5)
    # out = P_dropped @ v is linear in v: with v = identity the output IS the dropped probability
    # matrix, and the gradient for v must be P_dropped^T @ upstream; a backward pass that redrew
    # the dropout mask would break that identity
    eye = torch.eye(300).expand(1, 2, 300, 300).clone().requires_grad_(True)
    torch.manual_seed(7)
    probs = chunked_attention(q, k, eye, mask=mask, dropout=0.5)
    upstream = torch.randn(probs.shape, generator=gen)
    probs.backward(upstream)
    expected = probs.detach().transpose(-2, -1) @ upstream
    torch.testing.assert_close(eye.grad, expected, atol=1e-4, rtol=1e-4)
    assert (probs.detach() == 0).float().mean() > 0.3  # the mask really dropped entries
