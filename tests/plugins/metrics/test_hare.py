"""HARE metric: model discovery, marking, batching and scores, with tiny BERT models built offline."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from pathkit_metrics import hare as hare_mod  # noqa: E402
from pathkit_metrics.hare import (  # noqa: E402
    HAREMetric,
    HareUnavailable,
    entity_alignment,
    load_hare_models,
    mark_entity_pair,
    relation_f1,
)

from pathkit_core.contracts import PathkitError  # noqa: E402

ENTITY_WORDS = ["carcinoma", "margin", "necrosis", "adenoma", "lymph"]
OTHER_WORDS = ["invasive", "the", "is", "with", "and", "no", "of", "seen", "a", "clear", "present"]
HIDDEN = 8


def _vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    marker_pieces = ["[", "]", "/", "e1", "e2", "."]
    return specials + marker_pieces + ENTITY_WORDS + OTHER_WORDS


def _tokenizer(folder: Path):
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {token: index for index, token in enumerate(_vocab())}
    tokenizer = BertTokenizerFast(vocab=vocab, do_lower_case=True, model_max_length=64)
    tokenizer.save_pretrained(folder)
    return tokenizer


def _config(**kwargs):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(_vocab()),
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=64,
        **kwargs,
    )


def _make_transparent(model) -> None:
    """Zero each layer's output projections and the position/type embeddings, so the encoder
    passes each token's (normalised) word embedding through unchanged."""
    bert = model.bert
    with torch.no_grad():
        bert.embeddings.position_embeddings.weight.zero_()
        bert.embeddings.token_type_embeddings.weight.zero_()
        for layer in bert.encoder.layer:
            layer.attention.output.dense.weight.zero_()
            layer.attention.output.dense.bias.zero_()
            layer.output.dense.weight.zero_()
            layer.output.dense.bias.zero_()


def build_tiny_hare(root: Path, *, relation_logits=(-5.0, 5.0)) -> Path:
    """HARE-NER / HARE-RE / HARE-alignment folders with the HF repo layout, random but steerable:
    the NER model tags exactly ENTITY_WORDS as B-ENT (confidence ~1), the RE model gives every
    pair `relation_logits`, the alignment model is a random 2-layer BERT."""
    from transformers import BertForSequenceClassification, BertForTokenClassification, BertModel

    torch.manual_seed(0)
    vocab = _vocab()
    # NER
    ner_dir = root / "HARE-NER"
    _tokenizer(ner_dir)
    ner = BertForTokenClassification(
        _config(num_labels=3, id2label={0: "O", 1: "B-ENT", 2: "I-ENT"}, label2id={"O": 0, "B-ENT": 1, "I-ENT": 2})
    )
    _make_transparent(ner)
    with torch.no_grad():
        emb = ner.bert.embeddings.word_embeddings.weight
        emb.zero_()
        for index, token in enumerate(vocab):
            sign = 1.0 if token in ENTITY_WORDS else -1.0
            emb[index, 0], emb[index, 1] = 2.0 * sign, -2.0 * sign
        ner.classifier.weight.zero_()
        ner.classifier.bias.zero_()
        ner.classifier.weight[0, 0] = -5.0  # O
        ner.classifier.weight[1, 0] = 5.0  # B-ENT
    ner.save_pretrained(ner_dir)
    # RE
    re_dir = root / "HARE-RE"
    _tokenizer(re_dir)
    relation = BertForSequenceClassification(_config(num_labels=2))
    with torch.no_grad():
        relation.classifier.weight.zero_()
        relation.classifier.bias.copy_(torch.tensor(relation_logits))
    relation.save_pretrained(re_dir)
    # alignment
    align_dir = root / "HARE-alignment"
    _tokenizer(align_dir)
    BertModel(_config()).save_pretrained(align_dir)
    return root


@pytest.fixture(scope="module")
def hare_dir(tmp_path_factory) -> Path:
    torch.set_num_threads(1)
    return build_tiny_hare(tmp_path_factory.mktemp("hare"))


@pytest.fixture(scope="module")
def hare_dir_no_relations(tmp_path_factory) -> Path:
    # probability 0.5 for "Relation": under the 0.7 threshold
    return build_tiny_hare(tmp_path_factory.mktemp("hare_norel"), relation_logits=(0.0, 0.0))


def _opts(root: Path, **extra):
    return {"options": {"hare_dir": str(root), "device": "cpu", **extra}}


# --------------------------------------------------------------------------- pure functions


def test_mark_head_before_tail():
    text = "carcinoma with necrosis"
    assert mark_entity_pair(text, (0, 9), (15, 23)) == "[E1]carcinoma[/E1] with [E2]necrosis[/E2]"


def test_mark_tail_before_head():
    # the public code slices text[e1_end:s2] and repeats text when the tail comes first
    text = "carcinoma with necrosis"
    assert mark_entity_pair(text, (15, 23), (0, 9)) == "[E2]carcinoma[/E2] with [E1]necrosis[/E1]"


def test_mark_adjacent_entities_stay_nested():
    assert mark_entity_pair("ab", (1, 2), (0, 1)) == "[E2]a[/E2][E1]b[/E1]"
    assert mark_entity_pair("ab", (0, 1), (1, 2)) == "[E1]a[/E1][E2]b[/E2]"


def test_mark_rejects_bad_span():
    with pytest.raises(ValueError):
        mark_entity_pair("abc", (0, 9), (0, 1))


def test_entity_alignment_by_hand():
    import numpy as np

    # unit vectors: pred = {x}, ref = {x, y} with cos(x, y) = 0.6
    x = np.array([1.0, 0.0])
    y = np.array([0.6, 0.8])
    p, r, f1 = entity_alignment(x[None, :], np.stack([x, y]))
    assert p == pytest.approx(1.0)
    assert r == pytest.approx((1.0 + 0.6) / 2)
    assert f1 == pytest.approx(2 * 1.0 * 0.8 / 1.8)
    assert entity_alignment(np.zeros((0, 2)), np.stack([x])) == (0.0, 0.0, 0.0)
    # opposite vectors: a negative sum is no alignment, not a negative F1
    assert entity_alignment(x[None, :], -x[None, :])[2] == 0.0


def test_relation_f1_by_hand():
    pred = {("a", "b", "Relation"), ("b", "a", "Relation")}
    ref = {("a", "b", "Relation"), ("a", "c", "Relation"), ("c", "a", "Relation"), ("b", "c", "Relation")}
    p, r, f1, matched = relation_f1(pred, ref)
    assert matched == 1
    assert p == pytest.approx(0.5) and r == pytest.approx(0.25)
    assert f1 == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert relation_f1(set(), set())[2] == 0.0


# --------------------------------------------------------------------------- discovery


def test_unavailable_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("PATHKIT_HARE_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(HareUnavailable) as info:
        HAREMetric().compute(["a"], ["b"], context={"options": {}})
    message = str(info.value)
    assert "hare is unavailable" in message
    assert "knowlab-research/HARE-NER" in message
    assert "PATHKIT_HARE_DIR" in message and "Hugging Face cache" in message
    assert "allow_download" in message


def test_offline_download_request_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("PATHKIT_HARE_DIR", raising=False)
    with pytest.raises(HareUnavailable, match="HF_HUB_OFFLINE"):
        hare_mod.resolve_model_dirs({"allow_download": True})


def test_bad_explicit_path(tmp_path):
    with pytest.raises(HareUnavailable, match="ner_model"):
        hare_mod.resolve_model_dirs({"ner_model": str(tmp_path)})


def test_found_through_env_and_hf_cache_layout(hare_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("PATHKIT_HARE_DIR", str(hare_dir))
    dirs = hare_mod.resolve_model_dirs({})
    assert dirs["ner"] == hare_dir / "HARE-NER" and dirs["alignment"] == hare_dir / "HARE-alignment"
    # the HF cache layout: models--org--name/snapshots/<rev>/ with refs/main
    monkeypatch.delenv("PATHKIT_HARE_DIR")
    hub = tmp_path / "hf" / "hub"
    for hub_id in hare_mod.HUB_IDS.values():
        repo = hub / ("models--" + hub_id.replace("/", "--"))
        snapshot = repo / "snapshots" / "abc123"
        snapshot.parent.mkdir(parents=True)
        shutil.copytree(hare_dir / hub_id.split("/")[1], snapshot)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    found = hare_mod.resolve_model_dirs({})
    assert found["re"] == hub / "models--knowlab-research--HARE-RE" / "snapshots" / "abc123"


# --------------------------------------------------------------------------- the pipeline


def test_entities_have_original_offsets(hare_dir):
    models = load_hare_models(_opts(hare_dir)["options"])
    text = "Invasive   Carcinoma with\nnecrosis."
    (entities,) = models.extract_entities([text], 0.7, 8)
    assert [e.word for e in entities] == ["carcinoma", "necrosis"]
    for e in entities:
        assert text[e.start : e.end].lower() == e.word
        assert e.score > 0.99


def test_long_report_offsets_across_ner_windows(hare_dir):
    # the tiny tokenizer allows 64 tokens: this text needs several strided windows
    models = load_hare_models(_opts(hare_dir)["options"])
    words = (["the", "adenoma", "is", "seen", "with", "margin", "and", "lymph"] * 30)
    text = " ".join(words)
    (entities,) = models.extract_entities([text], 0.7, 4)
    expected = [w for w in words if w in ENTITY_WORDS]
    assert [e.word for e in entities] == expected
    assert all(text[e.start : e.end] == e.word for e in entities)


def test_identical_reports_score_two(hare_dir):
    report = "invasive carcinoma with necrosis and clear margin"
    result = HAREMetric().compute([report], [report], ids=["c1"], context=_opts(hare_dir))
    row = result.per_case.row(0, named=True)
    assert row["entities_prediction"] == ["carcinoma", "necrosis", "margin"]
    assert row["relations_prediction"] == row["relations_reference"]
    assert len(row["relations_prediction"]) == 6  # all ordered pairs of 3 entities
    assert result.summary["HARE-F1-entity"] == pytest.approx(1.0)
    assert result.summary["HARE-F1-relation"] == pytest.approx(1.0)
    assert result.summary["HARE"] == pytest.approx(2.0)
    assert result.summary["HARE-avg"] == pytest.approx(1.0)


def test_scores_by_hand(hare_dir):
    import numpy as np

    models = load_hare_models(_opts(hare_dir)["options"])
    pred = "carcinoma with necrosis"
    ref = "carcinoma with margin and adenoma"
    result = HAREMetric().compute([pred], [ref], context=_opts(hare_dir))
    row = result.per_case.row(0, named=True)
    v = models.embed(["carcinoma", "necrosis", "margin", "adenoma"], 8)
    sim = v[:2] @ v[[0, 2, 3]].T
    precision = sim.max(axis=1).mean()
    recall = sim.max(axis=0).mean()
    f1_e = 2 * precision * recall / (precision + recall)
    assert row["F1-entity"] == pytest.approx(f1_e, abs=1e-6)
    # relations: pred {c->n, n->c}, ref 6 pairs over {carcinoma, margin, adenoma}; none shared
    assert row["relations_matched"] == 0 and row["F1-relation"] == 0.0
    assert row["HARE"] == pytest.approx(f1_e, abs=1e-6)
    assert row["HARE-avg"] == pytest.approx(0.5 * f1_e, abs=1e-6)
    assert np.isclose(result.summary["HARE"], row["HARE"])


def test_relation_threshold_applies(hare_dir_no_relations):
    report = "carcinoma with necrosis"
    result = HAREMetric().compute([report], [report], context=_opts(hare_dir_no_relations))
    row = result.per_case.row(0, named=True)
    assert row["relations_prediction"] == [] and row["F1-relation"] == 0.0
    assert row["F1-entity"] == pytest.approx(1.0)


def test_relations_over_all_entities_as_the_public_code(hare_dir):
    report = "carcinoma with necrosis"
    # no entity passes a threshold of 1: the paper's recipe finds no relation either ...
    strict = HAREMetric().compute([report], [report], context=_opts(hare_dir, entity_threshold=1.0))
    row = strict.per_case.row(0, named=True)
    assert row["entities_prediction"] == [] and row["relations_prediction"] == []
    # ... while the public evaluate() pairs every entity the NER model returns
    public = HAREMetric().compute([report], [report], context=_opts(hare_dir, entity_threshold=1.0,
                                                                    relation_entities="all"))
    row = public.per_case.row(0, named=True)
    assert row["entities_prediction"] == [] and len(row["relations_prediction"]) == 2
    assert row["F1-relation"] == pytest.approx(1.0) and row["F1-entity"] == 0.0
    with pytest.raises(PathkitError, match="option relation_entities='some': choose one of thresholded, all"):
        HAREMetric().compute([report], [report], context=_opts(hare_dir, relation_entities="some"))


def test_relation_scoring_is_batched_and_marks_by_position(hare_dir, monkeypatch):
    models = load_hare_models(_opts(hare_dir)["options"])
    calls: list[int] = []
    seen_inputs: list[str] = []
    original_forward = models.re_model.forward
    original_tokenizer = models.re_tokenizer

    def counting_forward(*args, **kwargs):
        calls.append(int(kwargs["input_ids"].shape[0]))
        return original_forward(*args, **kwargs)

    class RecordingTokenizer:
        def __getattr__(self, name):
            return getattr(original_tokenizer, name)

        def __call__(self, texts, *args, **kwargs):
            if isinstance(texts, list):
                seen_inputs.extend(texts)
            return original_tokenizer(texts, *args, **kwargs)

    monkeypatch.setattr(models.re_model, "forward", counting_forward)
    monkeypatch.setattr(models, "re_tokenizer", RecordingTokenizer())
    text = "carcinoma with necrosis and margin and adenoma"
    (entities,) = models.extract_entities([text], 0.7, 8)
    relations, out_of_reach = models.extract_relations([text], [entities], 0.7, 16, 1000)
    assert len(entities) == 4
    assert calls == [12]  # 4 x 3 ordered pairs in a single batch, not 12 model calls
    assert out_of_reach == [0]
    assert len(relations[0]) == 12
    # the pair (head = necrosis, tail = carcinoma): the tail precedes the head
    assert "[E2]carcinoma[/E2] with [E1]necrosis[/E1] and margin and adenoma" in seen_inputs
    calls.clear()
    models.extract_relations([text], [entities], 0.7, 5, 1000)
    assert calls == [5, 5, 2]


def test_far_pairs_are_out_of_reach_not_truncated(hare_dir):
    models = load_hare_models(_opts(hare_dir)["options"])
    filler = " ".join(["the"] * 80)
    text = f"carcinoma {filler} necrosis with margin"
    (entities,) = models.extract_entities([text], 0.7, 8)
    assert [e.word for e in entities] == ["carcinoma", "necrosis", "margin"]
    relations, out_of_reach = models.extract_relations([text], [entities], 0.7, 8, 1000)
    # carcinoma <-> anything is ~80 tokens apart (window 64): 4 ordered pairs skipped
    assert out_of_reach == [4]
    assert relations[0] == {("necrosis", "margin", "Relation"), ("margin", "necrosis", "Relation")}


def test_max_relation_pairs_is_a_clear_error(hare_dir):
    report = "carcinoma necrosis margin adenoma lymph"
    with pytest.raises(PathkitError, match="max_relation_pairs"):
        HAREMetric().compute([report], [report], context=_opts(hare_dir, max_relation_pairs=3))


def test_empty_and_entity_free_reports(hare_dir):
    result = HAREMetric().compute(["", "the", "carcinoma"], ["carcinoma", "the", ""], context=_opts(hare_dir))
    table = result.per_case
    assert table["HARE"].to_list() == [0.0, 0.0, 0.0]
    assert table["entities_prediction"].to_list() == [[], [], ["carcinoma"]]
    assert math.isfinite(result.summary["HARE"])


def test_bad_input_errors(hare_dir):
    metric = HAREMetric()
    with pytest.raises(PathkitError, match="2 predictions but 1 references"):
        metric.compute(["a", "b"], ["a"], context=_opts(hare_dir))
    with pytest.raises(PathkitError, match="not a text"):
        metric.compute([None], ["a"], context=_opts(hare_dir))
    with pytest.raises(PathkitError, match="reference is list"):
        metric.compute(["a"], [["a", "b"]], context=_opts(hare_dir))


def test_registered_and_usable_through_evaluate(hare_dir):
    from pathkit_core.plugins import build_registry
    from pathkit_interop.evaluate_modules import as_evaluate_module

    registry = build_registry()
    assert registry.get("metric", "hare") is HAREMetric
    module = as_evaluate_module(HAREMetric)
    out = module.compute(
        predictions=["carcinoma with necrosis"],
        references=["carcinoma with necrosis"],
        hare_dir=str(hare_dir),
        device="cpu",
    )
    assert out["HARE"] == pytest.approx(2.0)
