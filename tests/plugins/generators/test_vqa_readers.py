"""VQA readers: the fixed floors, the text-only control, the attention reader (overfit, and learnability
behind `slow`), and the local-LLM reader with a tiny random model saved locally (no network)."""

from __future__ import annotations

import random

import pytest
import torch
from _fit import fit_batch

from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LESIONS = ("adenocarcinoma", "lymphoma", "melanoma", "sarcoma", "mucinous tumour", "squamous carcinoma")
SETS = ("Set 1", "Set 2", "Set 3", "None of the sets")
DIM = 8


def _items(n: int, seed: int, *, with_targets: bool = True) -> list[dict]:
    """Half GR-like (which lesion: its direction raised in some rows), half ESG-like (which set holds
    lesion X: its rows tagged with that set, or none)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        feats = torch.randn(12, DIM, generator=gen) * 0.3
        lesion = rng.randrange(len(LESIONS))
        if i % 2 == 0:
            others = rng.sample([x for x in LESIONS if x != LESIONS[lesion]], 3)
            answer = rng.randrange(4)
            choices = [*others[:answer], LESIONS[lesion], *others[answer:]]
            feats[:4, lesion] += 3.0
            tile_set = torch.zeros(12, dtype=torch.long)
            question = "Which lesion is present?"
        else:
            where = rng.randrange(4)
            tile_set = torch.arange(12) // 4
            if where < 3:
                feats[4 * where, lesion] += 3.0
            choices = list(SETS)
            answer = where
            question = f"Which candidate set contains {LESIONS[lesion]}?"
        items.append({"case_id": f"q{seed}-{i:03d}", "features": feats, "coords": torch.zeros(12, 2),
                      "tile_set": tile_set, "target": answer if with_targets else None,
                      "meta": {"question": question, "choices": choices}})
    return items


def _build(name: str, **hparams):
    from pathkit_core.plugins import build_registry

    registry = build_registry(autoload=False, plugins={"r": "pathkit_generators.vqa_readers"})
    generator = registry.get("generator", name)()
    spec = GeneratorSpec(task=TASK_MULTIPLE_CHOICE_VQA, feature_dim=DIM, hparams=generator.hparams(hparams),
                         train_targets=[2, 2, 1, 0])
    return generator, generator.build(spec)


def test_fixed_readers():
    items = _items(8, seed=0, with_targets=False)
    _, random_model = _build("random", seed=3)
    first = random_model.predict(random_model.collate(items))
    assert first == random_model.predict(items) and all(0 <= p["answer"] < 4 for p in first)
    assert len({p["answer"] for p in first}) > 1
    _, majority = _build("majority-position")
    assert [p["answer"] for p in majority.predict(items)] == [2] * 8
    two = [{**items[0], "meta": {"question": "q", "choices": ["yes", "no"]}}]
    assert majority.predict(two) == [{"answer": None}]  # position 2 does not exist: no answer
    generator, _ = _build("majority-position")
    with pytest.raises(PathkitError, match="no train answers"):
        generator.build(GeneratorSpec(task=TASK_MULTIPLE_CHOICE_VQA, feature_dim=DIM, train_targets=[]))


@pytest.mark.parametrize("name", ["text-only", "attention-reader"])
def test_trainable_readers_overfit_one_batch(name):
    torch.manual_seed(0)
    _, model = _build(name, dropout=0.0)
    # the text-only control can only tell questions apart by their text: GR-like rows only
    items = _items(8, seed=1)[::2] if name == "text-only" else _items(8, seed=1)
    batch = model.collate(items)
    fit_batch(model, batch, torch.optim.AdamW(model.parameters(), lr=1e-2), 100)
    predictions = model.predict(batch)
    assert [p["answer"] for p in predictions] == batch["targets"].tolist()
    assert all(abs(sum(p["scores"]) - 1) < 1e-4 for p in predictions)


def test_readers_score_choices_with_shared_weights():
    # the same question with its choices permuted gets the same scores, permuted: no position prior
    _, model = _build("attention-reader")
    model.eval()
    item = _items(1, seed=4)[0]
    order = [2, 0, 3, 1]
    permuted = {**item, "meta": {**item["meta"], "choices": [item["meta"]["choices"][k] for k in order]}}
    scores = model.predict(model.collate([item]))[0]["scores"]
    again = model.predict(model.collate([permuted]))[0]["scores"]
    assert again == pytest.approx([scores[k] for k in order], abs=1e-5)


@pytest.mark.slow
def test_attention_reader_learns_lesions_and_sets_text_only_cannot(tmp_path):
    from pathkit_core.training.trainer import TrainConfig, fit, load_checkpoint, predict

    train, val, test = _items(400, seed=1), _items(80, seed=2), _items(120, seed=3, with_targets=False)
    truth = [it["target"] for it in _items(120, seed=3)]
    accuracy = {}
    for name in ("attention-reader", "text-only"):
        torch.manual_seed(0)
        _, model = _build(name)
        cfg = TrainConfig(max_epochs=40, lr=2e-3, batch_size=16, early_stop_patience=10, progress=False, cpu=True)
        result = fit(model, train, val, cfg, tmp_path / name)
        load_checkpoint(result.best_checkpoint, model)
        preds = predict(model, test, batch_size=64)
        accuracy[name] = sum(preds[it["case_id"]]["answer"] == t for it, t in zip(test, truth, strict=True)) / 120
    assert accuracy["attention-reader"] >= 0.8
    assert accuracy["text-only"] <= 0.45


# --------------------------------------------------------------------------- llm-reader


def save_tiny_lm(folder, *, chat_template: str | None = None):
    """A two-layer Llama with random weights and a byte-level BPE tokenizer, saved to `folder`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    corpus = [f"Which lesion is present? {a}. {b} Answer: {c}" for a, b in zip("ABCD", LESIONS, strict=False)
              for c in "ABCD"] * 4
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
    if chat_template:
        fast.chat_template = chat_template
    fast.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return save_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


def _llm(folder, **hparams):
    from pathkit_generators.llm_reader import LLMReader

    generator = LLMReader()
    spec = GeneratorSpec(task=TASK_MULTIPLE_CHOICE_VQA, feature_dim=DIM,
                         hparams=generator.hparams({"model": None if folder is None else str(folder), **hparams}))
    return generator.build(spec)


def test_llm_reader_scores_each_letter_by_log_likelihood(tiny_lm):
    model = _llm(tiny_lm)
    item = _items(1, seed=5, with_targets=False)[0]
    out = model.predict(model.collate([item]))[0]
    assert out["mode"] == "loglik" and len(out["scores"]) == 4
    assert out["answer"] == max(range(4), key=lambda j: out["scores"][j])
    # the score of "B" by hand: log p(" B" | BOS + prompt) from the model's own logits
    tok, lm = model.tokenizer, model.lm
    prompt = [tok.bos_token_id] + tok(model.prompt(item, visual=False), add_special_tokens=False)["input_ids"]
    cont = tok(" B", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logprobs = torch.log_softmax(lm(torch.tensor([prompt + cont])).logits[0].float(), dim=-1)
    hand = sum(float(logprobs[len(prompt) - 1 + k, t]) for k, t in enumerate(cont))
    assert out["scores"][1] == pytest.approx(hand, abs=1e-4)


def test_llm_reader_generate_mode_parses_strictly(tiny_lm):
    model = _llm(tiny_lm, mode="generate", max_new_tokens=4)
    outs = model.predict(_items(3, seed=6, with_targets=False))
    for out in outs:
        assert out["mode"] == "generate" and isinstance(out["response"], str)
        assert out["parse_failed"] == (out["answer"] is None)


def test_llm_reader_uses_the_chat_template(tmp_path):
    template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>"
    model = _llm(save_tiny_lm(tmp_path / "chat", chat_template=template))
    item = _items(1, seed=7, with_targets=False)[0]
    prompt = model.prompt(item, visual=False)
    assert prompt.startswith("<|user|>") and prompt.endswith("<|assistant|>") and "\nA. " in prompt
    assert model.predict([item])[0]["answer"] in range(4)


def test_a_multimodal_reader_splices_projected_features(tiny_lm):
    from pathkit_generators._vqa.llm import IMAGE_TOKEN, LLMReaderModel

    class Projected(LLMReaderModel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            torch.manual_seed(0)
            self.projector = torch.nn.Linear(DIM, self.lm.config.hidden_size)

        def visual_embeddings(self, item):
            return self.projector(item["features"])

    text_only = _llm(tiny_lm)
    model = Projected(text_only.tokenizer, text_only.lm)
    item = _items(1, seed=8, with_targets=False)[0]
    assert model.prompt(item, visual=True).startswith(IMAGE_TOKEN)
    with torch.no_grad():
        spliced = model._prompt_embeddings(item)
        # BOS, then the 12 projected features where the prompt holds the image token, then the text
        assert torch.allclose(spliced[1:13], model.projector(item["features"]))
    assert model.predict([item])[0]["scores"] != text_only.predict([item])[0]["scores"]


def test_llm_reader_never_downloads(tmp_path):
    with pytest.raises(PathkitError, match="needs hparam model"):
        _llm(None)
    with pytest.raises(PathkitError, match="not a local transformers model folder"):
        _llm(tmp_path / "Qwen" / "Qwen2.5-7B-Instruct")
