"""Report tokenizer: exact round trips, train-only vocabulary, truncation, cleaning, saved state."""

from __future__ import annotations

import logging

import pytest
from pathkit_generators._text.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    ReportTokenizer,
    report_settings,
    split_tokens,
)

from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_tasks.report.text import clean_report, invalid_text_reason

REG = "Breast, core-needle biopsy;\n  Invasive carcinoma of no special type, grade II (Tubule formation: 3)"


def test_split_tokens_keeps_whitespace_and_punctuation_so_join_is_exact():
    tokens = split_tokens(REG)
    assert "".join(tokens) == REG
    assert tokens[:6] == ["Breast", ",", " ", "core", "-", "needle"]
    assert ";" in tokens and "\n  " in tokens  # the line break with its indentation is one token


def test_vocabulary_is_train_only_sorted_after_specials():
    tok = ReportTokenizer.build(["b a", "a c"])
    assert tok.vocab == ["<pad>", "<bos>", "<eos>", "<unk>", " ", "a", "b", "c"]
    # a word seen only outside the train split is unknown
    enc = tok.encode("a zebra")
    assert enc.ids == [BOS_ID, tok.token_to_id["a"], tok.token_to_id[" "], UNK_ID, EOS_ID]
    assert not enc.truncated


def test_min_count_drops_rare_tokens():
    tok = ReportTokenizer.build(["a b", "a c", "a b"], min_count=2)
    assert "c" not in tok.token_to_id and "b" in tok.token_to_id


def test_decode_inverts_encode_and_stops_at_eos():
    tok = ReportTokenizer.build([REG])
    ids = tok.encode(REG).ids
    assert tok.decode(ids) == REG
    assert tok.decode([*ids[1:-1], EOS_ID, tok.token_to_id["Breast"]]) == REG
    assert tok.decode([PAD_ID, BOS_ID]) == ""


def test_truncation_keeps_end_token_and_is_counted(caplog):
    tok = ReportTokenizer.build(["a b c d e f"], max_tokens=6)
    enc = tok.encode("a b c d e f")  # 11 tokens: a, space, b, ... f
    assert enc.truncated and len(enc.ids) == 6 and enc.ids[-1] == EOS_ID
    assert tok.decode(enc.ids) == "a b "
    assert tok.truncated == 1
    assert tok.count_truncated(["a", "a b c d e f", "a b c d e f"]) == (2, 3)
    with caplog.at_level(logging.WARNING):
        batch = tok.encode_batch(["a", "a b c d e f"])
    assert batch.shape == (2, 6)
    assert batch[0].tolist() == [BOS_ID, tok.token_to_id["a"], EOS_ID, PAD_ID, PAD_ID, PAD_ID]
    assert "1 of 2 report(s) longer than 6 tokens were truncated" in caplog.text


def test_state_round_trip_and_bad_state():
    tok = ReportTokenizer.build([REG], cleaning="pathbench", max_tokens=40)
    again = ReportTokenizer.from_state(tok.state_dict())
    assert again.vocab == tok.vocab and again.cleaning == "pathbench" and again.max_tokens == 40
    assert again.encode(REG).ids == tok.encode(REG).ids
    with pytest.raises(PathkitError, match="version"):
        ReportTokenizer.from_state({**tok.state_dict(), "version": 99})
    with pytest.raises(PathkitError, match="unreadable"):
        ReportTokenizer.from_state({"version": 1})
    with pytest.raises(PathkitError, match="must start with"):
        ReportTokenizer(["a", "b"])
    with pytest.raises(PathkitError, match="unknown report cleaning"):
        ReportTokenizer.build(["a"], cleaning="shout")
    with pytest.raises(PathkitError, match="zero training reports"):
        ReportTokenizer.build([])


def test_pathbench_cleaning_lowercases_strips_and_is_idempotent():
    raw = ('1. Breast, left, core biopsy:\n  Invasive ductal carcinoma, grade 2 (3.5 x 2 cm).\n'
           '2. Ki-67 3.5% positive. Margins "clear". Gleason 3+4=7.')
    cleaned = clean_report(raw, "pathbench")
    # PathBench's current cleaner: sizes kept, "+ ( ) -" kept; list markers but not "grade 2" removed
    assert cleaned == ("breast left core biopsy invasive ductal carcinoma grade 2 (3.5 x 2 cm) . "
                       "ki-67 3.5% positive . margins clear . gleason 3+4=7 .")
    assert clean_report(cleaned, "pathbench") == cleaned
    assert clean_report(raw, "none") == raw
    tok = ReportTokenizer.build([raw], cleaning="pathbench")
    assert tok.decode(tok.encode(raw).ids) == cleaned
    assert "Breast" not in tok.token_to_id and "breast" in tok.token_to_id


def test_invalid_report_reasons():
    assert invalid_text_reason("  \n") == "report is empty"
    assert "not text" in invalid_text_reason(None)
    assert "not valid UTF-8" in invalid_text_reason("bad \udc80 byte")
    assert "replacement" in invalid_text_reason("caf\ufffd")
    assert invalid_text_reason(REG) is None


def test_report_settings_per_dataset():
    assert report_settings("reg2025") == ("none", 320)
    assert report_settings("tcga-pathtext") == ("pathbench", 600)
    assert report_settings("histai") == ("pathbench", 600)
    assert report_settings(None) == ("none", 320)


def test_generator_builds_vocabulary_from_train_targets_only(caplog):
    from pathkit_generators.wsi_caption import WSICaption

    long_report = " ".join(["word"] * 200)
    spec = GeneratorSpec(task="report", feature_dim=8, train_targets=["alpha beta", long_report],
                         hparams={"d_model": 16, "d_ff": 16, "num_heads": 2, "num_layers": 1},
                         dataset="reg2025")
    with caplog.at_level(logging.WARNING):
        model = WSICaption().build(spec)
    assert "1 of 2 training reports are longer than 320 tokens" in caplog.text
    assert set(model.tokenizer.vocab[4:]) == {" ", "alpha", "beta", "word"}
    state = model.export_state()
    # rebuilding from the saved state ignores the targets given now (no vocabulary drift)
    rebuilt = WSICaption().build(GeneratorSpec(task="report", feature_dim=8, train_targets=["gamma"],
                                               hparams=spec.hparams, dataset="reg2025", state=state))
    assert rebuilt.tokenizer.vocab == model.tokenizer.vocab
    with pytest.raises(PathkitError, match="must be report text"):
        WSICaption().build(GeneratorSpec(task="report", feature_dim=8, train_targets=["a", 3]))
    with pytest.raises(PathkitError, match="not 'slide-classification'"):
        WSICaption().build(GeneratorSpec(task="slide-classification", feature_dim=8, train_targets=["a"]))
    with pytest.raises(PathkitError, match="no hyperparameter"):
        WSICaption().build(GeneratorSpec(task="report", feature_dim=8, train_targets=["a"],
                                         hparams={"depth": 3}))
    with pytest.raises(PathkitError, match="multiple of group_size"):
        WSICaption().build(GeneratorSpec(task="report", feature_dim=8, train_targets=["a"],
                                         hparams={"beam_size": 3, "group_size": 2}))


def test_real_reg_reports_fit_and_train_only_vocabulary_leaves_few_unknowns(realdata):
    import json

    splits = json.loads((realdata / "reports" / "reg2025_pathbench_splits.json").read_text())
    tok = ReportTokenizer.build([r["report"] for r in splits["train"]], max_tokens=320)
    leaky = ReportTokenizer.build([r["report"] for part in splits.values() for r in part])
    assert (tok.vocab_size, leaky.vocab_size) == (343, 350)  # PathBench's all-split vocabulary has 7 more
    for part, expected in (("val", 3), ("test", 4)):
        encoded = [tok.encode(r["report"]) for r in splits[part]]
        assert sum(UNK_ID in e.ids for e in encoded) == expected
        assert not any(e.truncated for e in encoded)
    assert max(len(tok.encode(r["report"]).ids) for part in splits.values() for r in part) == 85
    # the REG text comes back exactly (line breaks, indentation, trailing spaces)
    report = splits["train"][0]["report"]
    assert tok.decode(tok.encode(report).ids) == report
