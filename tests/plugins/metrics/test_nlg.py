"""nlg metric: pycocoevalcap parity, hand-computed values, bad input, METEOR through the jar."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import shutil
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathkit_metrics._nlg import meteor as meteor_mod
from pathkit_metrics._nlg.ngram_metrics import (
    SplitCorpus,
    bleu_statistics,
    cider_scores,
    corpus_bleu,
    sentence_bleu,
)
from pathkit_metrics._nlg.rouge import lcs_length, rouge_l_scores
from pathkit_metrics.nlg import SUMMARY_KEYS, NLGMetric, score_reports

from pathkit_core.contracts import PathkitError
from tests._executables import install_executable

NO_METEOR = {"options": {"meteor": False}}
HAS_JAVA = shutil.which("java") is not None
needs_java = pytest.mark.skipif(not HAS_JAVA, reason="METEOR 1.5 needs a `java` executable on PATH")

TABLE3_REFERENCE = (
    "Uterine cervix, colposcopic biopsy; High-grade squamous intraepithelial lesion (HSIL; CIN 2)"
)
TABLE3_PREDICTION = (
    "Uterine cervix, colposcopic biopsy; Low-grade squamous intraepithelial lesion (LSIL; CIN 1)"
)


# --------------------------------------------------------------------------- corpora


def synthetic_corpus(n: int = 1000, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """Report-like pairs with repeated n-grams, odd whitespace, empty texts and multi-reference cases."""
    rng = random.Random(seed)
    words = (
        "invasive carcinoma ductal lobular of no special type grade I II III tubule formation nuclear "
        "mitoses breast core-needle biopsy; margin negative positive lymph node metastasis (HSIL; CIN 2) "
        "the and with in situ 1. 2. 3. microcalcification stomach colon adenoma tubular"
    ).split()
    weights = [1.0 / (rank + 1) for rank in range(len(words))]

    def text() -> str:
        length = rng.choice([0, 1, 2, 3] + list(range(5, 45)))
        tokens = rng.choices(words, weights, k=length)
        seps = [rng.choice([" ", " ", " ", "  ", "\n  ", "\t"]) for _ in tokens]
        return "".join(t + s for t, s in zip(tokens, seps, strict=True)).rstrip(" ") if tokens else ""

    predictions, references = [], []
    for i in range(n):
        ref = text()
        # a third of predictions are edits of their reference, so matches are frequent
        pred = ref if i % 7 == 0 else (" ".join(ref.split()[: rng.randint(0, 30)]) if i % 3 == 0 else text())
        refs = [ref] if i % 4 else [ref, text()]
        predictions.append(pred)
        references.append(refs)
    return predictions, references


def real_reg_corpus(root, n: int = 1000, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    data = json.loads((root / "reports" / "reg2025_pathbench_splits.json").read_text())
    reports = [item["report"] for split in data.values() for item in split]
    rng = random.Random(seed)
    refs = rng.sample(reports, n)
    preds = [r if i % 5 == 0 else rng.choice(reports) for i, r in enumerate(refs)]
    return preds, [[r] for r in refs]


def pycocoevalcap_scores(predictions, references):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {i: list(refs) for i, refs in enumerate(references)}
    res = {i: [p] for i, p in enumerate(predictions)}
    with contextlib.redirect_stdout(io.StringIO()):  # Bleu prints its counts
        bleu, bleu_cases = Bleu(4).compute_score(gts, res)
    rouge, rouge_cases = Rouge().compute_score(gts, res)
    cider, cider_cases = Cider().compute_score(gts, res)
    return bleu, np.array(bleu_cases).T, rouge, rouge_cases, cider, cider_cases


def assert_parity(predictions, references):
    bleu, bleu_cases, rouge, rouge_cases, cider, cider_cases = pycocoevalcap_scores(predictions, references)
    result = NLGMetric().compute(predictions, references, context=NO_METEOR)
    s, table = result.summary, result.per_case
    for k in range(4):
        assert abs(s[f"BLEU-{k + 1}"] - bleu[k]) < 1e-9
        assert np.max(np.abs(table[f"BLEU-{k + 1}"].to_numpy() - bleu_cases[:, k])) < 1e-9
    assert abs(s["ROUGE-L"] - rouge) < 1e-9
    assert np.max(np.abs(table["ROUGE-L"].to_numpy() - rouge_cases)) < 1e-9
    assert abs(s["CIDEr"] - cider) < 1e-9
    assert np.max(np.abs(table["CIDEr"].to_numpy() - cider_cases)) < 1e-9


def test_parity_with_pycocoevalcap_synthetic_1000():
    predictions, references = synthetic_corpus(1000)
    assert any(len(r) == 2 for r in references) and "" in predictions
    assert_parity(predictions, references)


@pytest.mark.realdata
def test_parity_with_pycocoevalcap_real_reg_1000(realdata):
    predictions, references = real_reg_corpus(realdata, 1000)
    assert_parity(predictions, references)
    # the same after whitespace collapsing (the decoded-token form PathBench scores)
    collapse = {"options": {"meteor": False, "collapse_whitespace": True}}
    collapsed = NLGMetric().compute(predictions, references, context=collapse)
    _, _, rouge, _, _, _ = pycocoevalcap_scores(
        [" ".join(p.split()) for p in predictions], [[" ".join(r.split())] for (r,) in references]
    )
    assert abs(collapsed.summary["ROUGE-L"] - rouge) < 1e-9


# --------------------------------------------------------------------------- by hand


def test_bleu_by_hand():
    # pred 4 words, ref 5 words, every n-gram matches: BLEU-n = BP = exp(1 - 5/4)
    result = score_reports(["a b c d"], ["a b c d e"], meteor=False)
    bp = math.exp(1 - 5 / 4)
    for k in range(1, 5):
        assert result.summary[f"BLEU-{k}"] == pytest.approx(bp, rel=1e-8)
    # clipping: "the the the" against "the cat": 1 of 3 unigrams counts, 0 of 2 bigrams
    stats = bleu_statistics(SplitCorpus(["the the the"], [["the cat"]]))
    assert stats.correct[0].tolist() == [1, 0, 0, 0]
    assert stats.guess[0].tolist() == [3, 2, 1, 0]
    b1 = corpus_bleu(stats)[0]
    assert b1 == pytest.approx(1 / 3, rel=1e-8)  # no brevity penalty: 3 words >= 2


def test_bleu_closest_reference_length_prefers_shorter_on_tie():
    # test length 4; references of 3 and 5 words are equally close: the shorter (3) is used
    stats = bleu_statistics(SplitCorpus(["w x y z"], [["w x y", "w x y z q"]]))
    assert stats.ref_len.tolist() == [3]
    stats = bleu_statistics(SplitCorpus(["w x y z"], [["a b c d e f", "w x y z q"]]))
    assert stats.ref_len.tolist() == [5]


def test_rouge_l_by_hand():
    (score,) = rouge_l_scores(["a b c d"], [["a b c d e"]])
    precision, recall, beta2 = 1.0, 0.8, 1.2**2
    assert score == pytest.approx((1 + beta2) * precision * recall / (recall + beta2 * precision))
    # multi-reference: best precision and best recall are taken from different references
    (score,) = rouge_l_scores(["a b x"], [["a b", "a b x y z w"]])
    p, r = 3 / 3, 2 / 2
    assert score == pytest.approx((1 + beta2) * p * r / (r + beta2 * p))


def test_cider_single_case_corpus_is_zero_and_identical_texts_score_high():
    # with one case every idf is log(1) = 0
    assert cider_scores(SplitCorpus(["a b c"], [["a b c"]])).tolist() == [0.0]
    corpus = SplitCorpus(["a b c", "d e f g"], [["a b c"], ["x y"]])
    scores = cider_scores(corpus)
    # cosine 1 for orders 1-3, no 4-gram in 3 words (similarity 0): mean 3/4, times 10
    assert scores[0] == pytest.approx(7.5)
    assert scores[1] == 0.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=30),
    st.lists(st.sampled_from("abcdef"), max_size=30),
)
def test_bit_parallel_lcs_equals_dynamic_programming(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = (
                table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
            )
    assert lcs_length(a, b) == table[len(a)][len(b)] == lcs_length(b, a)


def test_sentence_bleu_shape_and_summary_keys():
    predictions, references = synthetic_corpus(50, seed=3)
    result = NLGMetric().compute(predictions, references, ids=[f"c{i}" for i in range(50)], context=NO_METEOR)
    assert set(result.summary) == set(SUMMARY_KEYS) - {"METEOR"}
    assert result.per_case["id"].to_list()[:2] == ["c0", "c1"]
    corpus = SplitCorpus(predictions, references)
    assert sentence_bleu(bleu_statistics(corpus)).shape == (50, 4)


def test_bootstrap_intervals_on_request():
    predictions, references = synthetic_corpus(200, seed=4)
    options = {"meteor": False, "bootstrap_resamples": 300, "seed": 1}
    result = NLGMetric().compute(predictions, references, context={"options": options})
    s = result.summary
    for key in ("BLEU-1", "BLEU-4", "ROUGE-L", "CIDEr"):
        assert s[f"{key}_ci_low"] < s[key] < s[f"{key}_ci_high"], key
    assert "METEOR_ci_low" not in s
    again = NLGMetric().compute(predictions, references, context={"options": options})
    assert again.summary == s  # seeded
    assert "BLEU-4_ci_low" not in NLGMetric().compute(predictions, references, context=NO_METEOR).summary


# --------------------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error():
    metric = NLGMetric()
    with pytest.raises(PathkitError, match="2 predictions but 1 references"):
        metric.compute(["a", "b"], ["a"], context=NO_METEOR)
    with pytest.raises(PathkitError, match="no cases to score"):
        metric.compute([], [], context=NO_METEOR)
    with pytest.raises(PathkitError, match=r"case 'x' \(position 0\).*int"):
        metric.compute([3], ["a"], ids=["x"], context=NO_METEOR)
    with pytest.raises(PathkitError, match="prediction is NoneType"):
        metric.compute([None], ["a"], context=NO_METEOR)
    with pytest.raises(PathkitError, match="reference is dict"):
        metric.compute(["a"], [{"text": "a"}], context=NO_METEOR)
    with pytest.raises(PathkitError, match="list of references is empty"):
        metric.compute(["a"], [[]], context=NO_METEOR)
    with pytest.raises(PathkitError, match="single str"):
        metric.compute("a b", "a b", context=NO_METEOR)
    with pytest.raises(PathkitError, match="1 ids for 2"):
        metric.compute(["a", "b"], ["a", "b"], ids=["x"], context=NO_METEOR)
    with pytest.raises(PathkitError, match="'x' appears more than once"):
        metric.compute(["a", "b"], ["a", "b"], ids=["x", "x"], context=NO_METEOR)
    with pytest.raises(PathkitError, match="option meteor=.maybe. is not true or false"):
        metric.compute(["a"], ["a"], context={"options": {"meteor": "maybe"}})
    with pytest.warns(UserWarning, match="unknown option"):
        metric.compute(["a"], ["a"], context={"options": {"meteor": False, "meteorr": 1}})


def test_empty_and_whitespace_predictions_have_defined_scores():
    result = NLGMetric().compute(["", "   ", "a b"], ["a b", "a b", "a b"], context=NO_METEOR)
    table = result.per_case
    for key in ("BLEU-1", "BLEU-4", "ROUGE-L", "CIDEr"):
        values = table[key].to_list()
        assert values[0] == 0.0 and values[1] == 0.0
        assert all(math.isfinite(v) for v in values)
    assert table["ROUGE-L"][2] == pytest.approx(1.0)


def test_very_long_report_is_scored_and_meteor_refuses_it_clearly(monkeypatch):
    long_report = ("invasive ductal carcinoma grade II with necrosis; " * 2000)[:100_000]
    result = NLGMetric().compute([long_report], [long_report], context=NO_METEOR)
    assert result.summary["ROUGE-L"] == pytest.approx(1.0)
    assert result.summary["BLEU-4"] == pytest.approx(1.0)
    # the word limit is checked before any JVM is involved
    monkeypatch.setattr(meteor_mod, "find_java", lambda: "/bin/true")
    with pytest.raises(PathkitError, match="meteor_max_words"):
        NLGMetric().compute([long_report], ["short"], context={"options": {"meteor_max_words": 3000}})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=80), st.text(max_size=80)), min_size=1, max_size=6))
def test_arbitrary_unicode_never_crashes(pairs):
    predictions = [p for p, _ in pairs]
    references = [r for _, r in pairs]
    result = NLGMetric().compute(predictions, references, context=NO_METEOR)
    for key, value in result.summary.items():
        assert math.isfinite(value), key
        if key != "CIDEr":
            assert -1e-9 <= value <= 1 + 1e-9
    assert result.per_case.height == len(pairs)


def test_protocol_safe_text():
    assert meteor_mod.protocol_safe("a\nb\r\nc\u2028d", hypothesis=False) == "a b  c d"
    assert meteor_mod.protocol_safe("a ||| b", hypothesis=True) == "a b"
    assert "|||" not in meteor_mod.protocol_safe("||||||||", hypothesis=False)
    assert meteor_mod.protocol_safe("x  y", hypothesis=True) == "x y"


# --------------------------------------------------------------------------- METEOR errors without a JVM


@pytest.fixture
def fake_java(tmp_path, monkeypatch):
    """Installs a `java` shell script of the given body and an empty jar for the test; no METEOR JVM
    runs before or after it."""

    def install(body: str) -> None:
        install_executable(monkeypatch, tmp_path / "bin", "java", "#!/bin/sh\n" + body + "\n")
        jar = tmp_path / "meteor-1.5.jar"
        jar.write_bytes(b"")
        monkeypatch.setenv(meteor_mod.ENV_METEOR_JAR, str(jar))
        meteor_mod.shutdown_meteor()

    yield install
    meteor_mod.shutdown_meteor()


def test_no_java_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(PathkitError, match=r"Java.*meteor=False"):
        NLGMetric().compute(["a"], ["a"])
    # the rest of the metric still works without Java; the switch may sit at the context's top level
    assert "METEOR" not in NLGMetric().compute(["a"], ["a"], context=NO_METEOR).summary
    assert "METEOR" not in NLGMetric().compute(["a"], ["a"], context={"meteor": False}).summary
    with pytest.raises(PathkitError, match="must be a mapping"):
        NLGMetric().compute(["a"], ["a"], context={"options": ["meteor"]})
    available, why = meteor_mod.meteor_available()
    assert not available and "java" in why


def test_missing_jar_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(meteor_mod.ENV_METEOR_JAR, str(tmp_path / "nope.jar"))
    with pytest.raises(PathkitError, match="nope.jar: no such file"):
        meteor_mod.locate_meteor_jar()


@pytest.mark.parametrize(("body", "timeout", "message"), [
    ("exec sleep 30", 0.5, "no answer within 0.5 s"),  # a silent JVM times out
    ("echo 'Error: Unable to access jarfile' >&2; exit 1", 10, "exited unexpectedly.*Unable to access jarfile"),
    ("while read line; do echo 'not a number'; done", 10, "'not a number' where segment statistics"),
], ids=["silent", "dying", "garbage"])
def test_a_failing_jvm_is_a_clear_error(fake_java, body, timeout, message):
    fake_java(body)
    with pytest.raises(PathkitError, match=message):
        meteor_mod.meteor_scores(["a"], [["a"]], timeout=timeout)
    assert meteor_mod._PROCESS is None  # the next call starts afresh


# --------------------------------------------------------------------------- METEOR with the real jar


def _meteor_corpus(n: int, seed: int) -> tuple[list[str], list[list[str]]]:
    predictions, references = synthetic_corpus(n, seed=seed)
    # pycocoevalcap's own wrapper hangs on a newline, so the comparison corpus has none
    return [p.replace("\n", " ") for p in predictions], [[r.replace("\n", " ") for r in refs] for refs in references]


@needs_java
def test_meteor_table3_threads_and_protocol(monkeypatch):
    monkeypatch.delenv(meteor_mod.ENV_METEOR_JAR, raising=False)
    # paper Table 3, first example (REG): METEOR 0.4264 as published
    result = score_reports([TABLE3_PREDICTION], [TABLE3_REFERENCE])
    assert round(result.summary["METEOR"], 4) == 0.4264
    assert result.per_case["METEOR"].to_list() == [pytest.approx(result.summary["METEOR"])]

    # texts that break pycocoevalcap's protocol score as their cleaned forms
    broken = meteor_mod.meteor_scores(["a b\nc ||| d"], [["a b\nc", "e|||f"]])
    clean = meteor_mod.meteor_scores(["a b c d"], [["a b c", "ef"]])
    assert broken == clean
    # an empty prediction or reference is a defined score, not a protocol error
    empty_corpus, empty_cases = meteor_mod.meteor_scores(["", "a"], [["a b"], [""]])
    assert empty_cases == [0.0, 0.0] and empty_corpus == 0.0

    # one JVM, many threads: each gets its own complete answer
    predictions, references = _meteor_corpus(20, seed=5)
    expected = [meteor_mod.meteor_scores(predictions[k::2], references[k::2]) for k in range(2)]
    pid = meteor_mod._PROCESS.proc.pid
    outputs: list = [None] * 6

    def work(slot: int) -> None:
        outputs[slot] = meteor_mod.meteor_scores(predictions[slot % 2 :: 2], references[slot % 2 :: 2])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outputs == [expected[i % 2] for i in range(6)]
    assert meteor_mod._PROCESS.proc.pid == pid  # reused, not restarted


@pytest.mark.slow
@needs_java
def test_meteor_parity_with_pycocoevalcap_and_restart(monkeypatch):
    monkeypatch.delenv(meteor_mod.ENV_METEOR_JAR, raising=False)
    from pycocoevalcap.meteor.meteor import Meteor

    predictions, references = _meteor_corpus(200, seed=5)
    reference_scorer = Meteor()
    expected, expected_cases = reference_scorer.compute_score(
        {i: refs for i, refs in enumerate(references)}, {i: [p] for i, p in enumerate(predictions)}
    )
    del reference_scorer
    corpus, cases = meteor_mod.meteor_scores(predictions, references)
    assert corpus == pytest.approx(expected, abs=1e-12)
    assert np.allclose(cases, expected_cases, atol=1e-12)
    # a JVM that died is replaced on the next call
    pid = meteor_mod._PROCESS.proc.pid
    meteor_mod._PROCESS.proc.kill()
    meteor_mod._PROCESS.proc.wait()
    assert meteor_mod.meteor_scores(predictions, references) == (corpus, cases)
    assert meteor_mod._PROCESS.proc.pid != pid


@needs_java
def test_pathkit_score_cli_and_evaluate_with_meteor(cli, tmp_path):
    from pathkit_interop.evaluate_modules import as_evaluate_module

    predictions = [{"id": "PIT_1", "report": TABLE3_PREDICTION}, {"id": "PIT_2", "report": "Stomach; adenoma"}]
    references = [{"id": "PIT_1", "report": TABLE3_REFERENCE}, {"id": "PIT_2", "report": "Stomach;\n  adenoma"}]
    (tmp_path / "p.json").write_text(json.dumps(predictions))
    (tmp_path / "r.json").write_text(json.dumps(references))
    out = cli("score", "--metric", "nlg", "-p", tmp_path / "p.json", "-r", tmp_path / "r.json", "--json")
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)["nlg"]
    direct = score_reports([p["report"] for p in predictions], [r["report"] for r in references])
    for key in SUMMARY_KEYS:
        assert summary[key] == pytest.approx(direct.summary[key])

    module = as_evaluate_module("nlg")
    via_evaluate = module.compute(
        predictions=[p["report"] for p in predictions], references=[r["report"] for r in references]
    )
    assert {k: via_evaluate[k] for k in SUMMARY_KEYS} == pytest.approx(direct.summary)


def test_evaluate_interface_without_meteor():
    from pathkit_interop.evaluate_modules import as_evaluate_module

    predictions, references = synthetic_corpus(30, seed=9)
    single = [refs[0] for refs in references]
    module = as_evaluate_module(NLGMetric)
    out = module.compute(predictions=predictions, references=single, meteor=False, return_per_case=True)
    direct = NLGMetric().compute(predictions, single, context=NO_METEOR)
    for key, value in direct.summary.items():
        assert out[key] == pytest.approx(value, abs=1e-12)
    assert len(out["per_case"]) == 30 and "ROUGE-L" in out["per_case"][0]
    # several references per case go through evaluate too
    multi = as_evaluate_module("nlg").compute(predictions=predictions, references=references, meteor=False)
    expected = NLGMetric().compute(predictions, references, context=NO_METEOR).summary
    assert multi == pytest.approx(expected, abs=1e-12)


def test_prepare_starts_the_jvm_without_waiting_and_only_when_meteor_is_on(fake_java, tmp_path, monkeypatch):
    """`pathkit score` calls `prepare` before reading its inputs: the JVM then loads meanwhile."""
    import time

    fake_java("exec sleep 30")  # a JVM that never answers
    NLGMetric().prepare(NO_METEOR)
    assert meteor_mod._PROCESS is None
    t0 = time.perf_counter()
    NLGMetric().prepare({"options": {}})
    assert time.perf_counter() - t0 < 5.0 and meteor_mod._PROCESS.alive()  # started, not awaited
    pid = meteor_mod._PROCESS.proc.pid
    NLGMetric().prepare(None)  # again: the same process
    assert meteor_mod._PROCESS.proc.pid == pid
    meteor_mod.shutdown_meteor()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    NLGMetric().prepare(None)  # no Java: nothing started, nothing raised (compute says why)
    assert meteor_mod._PROCESS is None
