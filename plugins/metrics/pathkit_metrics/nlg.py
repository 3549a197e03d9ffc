"""The `nlg` metric: BLEU-1..4, METEOR 1.5, ROUGE-L and CIDEr exactly as pycocoevalcap computes them.

This is the protocol of PathBench/PathReportEval and HistGen: pycocoevalcap's scorers on
the texts as given (no PTB tokenizer): BLEU and CIDEr split on whitespace, ROUGE-L on
single spaces (pycocoevalcap's `split(" ")`), METEOR 1.5 with `-norm`. BLEU, ROUGE-L and
CIDEr are computed in numpy (see `_nlg/`), METEOR by the jar pycocoevalcap ships.

Options (`context["options"]`): `meteor` (default true; false leaves METEOR out, and the
metric then needs no Java), `meteor_timeout` (seconds to wait for any one answer of the
jar, default 300), `meteor_full_table` (default false: METEOR's paraphrase table is cut to
the corpus's vocabulary, which gives the same scores and a faster start; true gives the jar
its whole table), `meteor_max_words` (longest text METEOR accepts, default 3000; "none"
lifts it), `collapse_whitespace` (default false: join each text's whitespace-split tokens
with single spaces first, as a tokenizer's decode does; only ROUGE-L can change),
`bootstrap_resamples` (default 0; N adds `<score>_ci_low`/`<score>_ci_high` percentile
bootstrap intervals over cases for BLEU, ROUGE-L and CIDEr), `seed` (0), `confidence_level` (0.95).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_metrics._nlg.meteor import DEFAULT_MAX_WORDS, DEFAULT_TIMEOUT_S
from pathkit_metrics._text_inputs import (
    metric_options,
    option_bool,
    option_number,
    validate_report_pairs,
)
from pathkit_sdk.intervals import SAMPLE_KEY, sample_facts
from pathkit_tasks import TASK_REPORT

BLEU_KEYS = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4")
SUMMARY_KEYS = (*BLEU_KEYS, "METEOR", "ROUGE-L", "CIDEr")
OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("meteor", "bool", True, "false leaves METEOR out (no Java needed)"),
    DatasetOption("meteor_timeout", "float", None, "seconds METEOR may take per call"),
    DatasetOption("meteor_full_table", "bool", False, "give METEOR its whole paraphrase table (same scores, slower)"),
    DatasetOption("meteor_max_words", "any", None, "words per text METEOR reads (none: no limit)"),
    DatasetOption("collapse_whitespace", "bool", False, "collapse runs of whitespace before scoring"),
    DatasetOption("bootstrap_resamples", "int", 0, "bootstrap resamples for confidence intervals (0: none)"),
    DatasetOption("seed", "int", 0, "bootstrap seed"),
    DatasetOption("confidence_level", "float", 0.95, "confidence level of the intervals"),
)


def score_reports(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    ids: Sequence[str] | None = None,
    meteor: bool = True,
    meteor_timeout: float = DEFAULT_TIMEOUT_S,
    meteor_max_words: int | None = DEFAULT_MAX_WORDS,
    collapse_whitespace: bool = False,
    meteor_full_table: bool = False,
) -> MetricResult:
    """Python API: score generated reports against references (one text or a list per case)."""
    options: dict[str, Any] = {
        "meteor": meteor,
        "meteor_full_table": meteor_full_table,
        "collapse_whitespace": collapse_whitespace,
        "meteor_timeout": meteor_timeout,
        "meteor_max_words": meteor_max_words,
    }
    return NLGMetric().compute(predictions, references, ids=ids, context={"options": options})


class NLGMetric(Metric):
    name: ClassVar[str] = "nlg"
    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS
    description: ClassVar[str] = (
        "BLEU-1..4 (corpus, closest ref length), METEOR 1.5, ROUGE-L (beta 1.2), CIDEr; pycocoevalcap-exact"
    )
    tasks: ClassVar[tuple[str, ...]] = (TASK_REPORT,)
    higher_is_better: ClassVar[bool] = True
    headline_scores: ClassVar[tuple[str, ...]] = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L")
    case_scores: ClassVar[tuple[str, ...]] = ("BLEU-4", "METEOR", "ROUGE-L")
    citation: ClassVar[str] = (
        "Papineni et al. 2002 (BLEU); Lin 2004 (ROUGE); Denkowski & Lavie 2014 (METEOR 1.5); "
        "Vedantam et al. 2015 (CIDEr); pycocoevalcap (Chen et al. 2015, Microsoft COCO Captions)"
    )

    def prepare(self, context: Mapping[str, Any] | None = None) -> None:
        """Start METEOR's JVM at once (unless option meteor=false): it loads its resources while
        the inputs are read, then the paraphrase table cut to them while BLEU, ROUGE-L and CIDEr
        are computed."""
        from pathkit_metrics._nlg import meteor as meteor_mod

        try:
            use_meteor = option_bool(metric_options(context, type(self)), "meteor", True, self.name)
        except PathkitError:
            return  # compute reports a bad option
        if use_meteor:
            meteor_mod.start_meteor()

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        import numpy as np
        import polars as pl

        from pathkit_metrics._nlg import meteor as meteor_mod
        from pathkit_metrics._nlg.ngram_metrics import (
            SplitCorpus,
            bleu_statistics,
            cider_scores,
            corpus_bleu,
            sentence_bleu,
        )
        from pathkit_metrics._nlg.rouge import rouge_l_scores

        options = metric_options(context, type(self))
        use_meteor = option_bool(options, "meteor", True, self.name)
        collapse = option_bool(options, "collapse_whitespace", False, self.name)
        timeout = option_number(
            options, "meteor_timeout", meteor_mod.DEFAULT_TIMEOUT_S, self.name, minimum=0.001
        )
        max_words = option_number(
            options, "meteor_max_words", meteor_mod.DEFAULT_MAX_WORDS, self.name, integer=True, minimum=1
        )
        pairs = validate_report_pairs(predictions, references, ids, metric=self.name)
        preds, refs = pairs.predictions, pairs.references
        if collapse:
            preds = [" ".join(p.split()) for p in preds]
            refs = [tuple(" ".join(r.split()) for r in group) for group in refs]
        if use_meteor:
            # fail before any work when Java or the jar is missing or a text is too long; else
            # the JVM loads while the n-gram metrics run
            meteor_mod.find_java()
            meteor_mod.locate_meteor_jar()
            meteor_lines = meteor_mod.score_lines(preds, refs, ids=pairs.ids,
                                                  max_words=None if max_words is None else int(max_words))
            full_table = option_bool(options, "meteor_full_table", False, self.name)
            meteor_mod.feed_meteor(meteor_lines, timeout=float(timeout or meteor_mod.DEFAULT_TIMEOUT_S),
                                   full_table=full_table)

        corpus = SplitCorpus(preds, refs)
        stats = bleu_statistics(corpus)
        bleu_corpus = corpus_bleu(stats)
        bleu_case = sentence_bleu(stats)
        rouge_case = rouge_l_scores(preds, refs)
        cider_case = cider_scores(corpus)

        summary: dict[str, float] = {key: float(v) for key, v in zip(BLEU_KEYS, bleu_corpus, strict=True)}
        columns: dict[str, Any] = {"id": pairs.ids}
        for k, key in enumerate(BLEU_KEYS):
            columns[key] = bleu_case[:, k]
        if use_meteor:
            meteor_corpus, meteor_case = meteor_mod.score_with_jar(
                meteor_lines, timeout=float(timeout or meteor_mod.DEFAULT_TIMEOUT_S), full_table=full_table)
            summary["METEOR"] = float(meteor_corpus)
            columns["METEOR"] = np.asarray(meteor_case, dtype=np.float64)
        summary["ROUGE-L"] = float(np.mean(rouge_case))
        summary["CIDEr"] = float(np.mean(cider_case))
        resamples = option_number(options, "bootstrap_resamples", 0, self.name, integer=True, minimum=0)
        if resamples:
            summary.update(
                _confidence_intervals(
                    stats,
                    rouge_case,
                    cider_case,
                    int(resamples),
                    int(option_number(options, "seed", 0, self.name, integer=True) or 0),
                    float(option_number(options, "confidence_level", 0.95, self.name) or 0.95),
                )
            )
        columns["ROUGE-L"] = rouge_case
        columns["CIDEr"] = cider_case
        columns["prediction_words"] = corpus.hyp_len
        columns["reference_words"] = np.bincount(
            corpus.ref_case, weights=corpus.ref_len, minlength=corpus.n_cases
        ) / corpus.refs_per_case
        return MetricResult(summary=summary, per_case=pl.DataFrame(columns),
                            details={SAMPLE_KEY: sample_facts(int(corpus.n_cases))})


def _confidence_intervals(
    stats: Any, rouge_case: Any, cider_case: Any, resamples: int, seed: int, level: float
) -> dict[str, float]:
    """Percentile bootstrap over cases: corpus BLEU recomputed from resampled sums of its
    per-case counts; ROUGE-L and CIDEr as means of per-case scores (CIDEr's idf kept from the
    full corpus). METEOR has none: its corpus score is the jar's aggregate."""
    from pathkit_metrics._nlg.ngram_metrics import bootstrap_corpus_bleu
    from pathkit_sdk.bootstrap import bootstrap_ci, bootstrap_statistic_ci

    out: dict[str, float] = {}
    n_cases = int(stats.test_len.shape[0])
    for k, key in enumerate(BLEU_KEYS):
        low, high = bootstrap_statistic_ci(
            lambda block, k=k: bootstrap_corpus_bleu(stats, block)[:, k],
            n_cases,
            resamples,
            seed,
            level,
            vectorized=True,
        )
        out[f"{key}_ci_low"], out[f"{key}_ci_high"] = low, high
    for key, values in (("ROUGE-L", rouge_case), ("CIDEr", cider_case)):
        out[f"{key}_ci_low"], out[f"{key}_ci_high"] = bootstrap_ci(values, resamples, seed, level)
    return out


@hookimpl
def register_metrics(register: Any) -> None:
    register(NLGMetric)


@hookimpl
def register_commands(app: Any) -> None:
    import typer

    from pathkit_core.cli.common import console, user_errors

    meteor_app = typer.Typer(help="METEOR 1.5 helpers.", no_args_is_help=True)

    @meteor_app.command("index")
    @user_errors
    def index_cmd(
        force: bool = typer.Option(False, "--force", help="Rebuild the index even when a good one exists."),
    ) -> None:
        """Index METEOR's paraphrase table once (about half a minute, 2 GB of memory), so that each
        later METEOR start reads only the entries a corpus can match (same scores)."""
        from pathkit_metrics._nlg.meteor import build_meteor_index

        folder, built = build_meteor_index(force=force)
        console.print(f"METEOR paraphrase index {'built in' if built else 'already in'} {folder}")

    app.add_typer(meteor_app, name="meteor")


@hookimpl
def doctor_checks() -> list[tuple[str, str, str]]:
    """METEOR 1.5 needs a Java runtime and the jar shipped by pycocoevalcap."""
    import subprocess

    from pathkit_metrics._nlg.meteor import find_java, locate_meteor_jar, meteor_available

    ok, why = meteor_available()
    if not ok:
        return [("java (METEOR)", "missing", why)]
    java = find_java()
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20, check=False)
        version = ((out.stderr or out.stdout).strip().splitlines() or ["unknown version"])[0]
    except (OSError, subprocess.SubprocessError) as exc:
        return [("java (METEOR)", "error", f"{java} -version failed: {exc}")]
    return [("java (METEOR)", "ok", f"{java}: {version}; jar {locate_meteor_jar()}")]
