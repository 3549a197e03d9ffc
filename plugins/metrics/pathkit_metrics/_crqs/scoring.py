"""CRQS over a corpus: input checks, vocabulary choice, per-case evidence table and bootstrap summary."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pathkit_core.contracts import MetricResult, PathkitError
from pathkit_metrics._crqs.clinical_schema import ClinicalSchema
from pathkit_metrics._crqs.compare import CaseComparison, compare_fields
from pathkit_metrics._crqs.extract import ClinicalExtractor, Extraction
from pathkit_metrics._crqs.schemas import resolve_schema
from pathkit_metrics._crqs.vocabulary import BUILTIN_VOCABULARY, Vocabulary, build_vocabulary, read_report_texts

SCORE_COLUMNS = ("CRQS", "CRQS_raw", "CFC", "KIR", "HR", "CDS", "CRQS_eq6", "CRQS_eq6_raw")
# The summary leads with CRQS and its four components; the other scales of the same score
# (raw, and the paper's Eq. 6 as printed) only with option `variants` (docs/metrics.md).
SUMMARY_COLUMNS = ("CRQS", "CFC", "KIR", "HR", "CDS")
VARIANT_COLUMNS = ("CRQS_raw", "CRQS_eq6", "CRQS_eq6_raw")
DEFAULT_RESAMPLES = 1000

# Statements the extractor reads that a schema may not judge (margins and laterality are not
# REG fields): where the two reports differ on one, the per-case `outside_schema` column says so.
OUTSIDE_SCHEMA_FIELDS = (
    "laterality", "margin_status", "lymph_node_involvement", "lymphovascular_invasion", "perineural_invasion",
    "extraprostatic_extension", "capsular_invasion", "organ_specific_invasion", "tumor_size", "tumor_extent",
    "multifocality", "bilateral_involvement", "hpylori_status",
)

_lock = threading.Lock()
_extractors: dict[str, ClinicalExtractor] = {}
_learned: dict[tuple[str, int], Vocabulary] = {}
_loaded: dict[tuple[str, float, int], Vocabulary] = {}


def extractor_for(vocabulary: Vocabulary) -> ClinicalExtractor:
    """One extractor (and extraction cache) per vocabulary content, shared by all metric calls."""
    with _lock:
        extractor = _extractors.get(vocabulary.sha256)
        if extractor is None:
            extractor = ClinicalExtractor(vocabulary)
            _extractors[vocabulary.sha256] = extractor
        return extractor


def _option(context: Mapping[str, Any], key: str, default: Any = None) -> Any:
    if key in context and context[key] is not None:
        return context[key]
    options = context.get("options")
    if isinstance(options, Mapping) and options.get(key) is not None:
        return options[key]
    return default


def resolve_vocabulary(context: Mapping[str, Any]) -> Vocabulary:
    """`vocabulary` (a Vocabulary or a saved JSON path) first, then one learned from
    `train_reports`, else the built-in vocabulary."""
    given = _option(context, "vocabulary")
    if given is not None:
        if isinstance(given, Vocabulary):
            return given
        if isinstance(given, str | Path):
            path = Path(given)
            try:
                stat = path.stat()
            except OSError:
                raise PathkitError(f"{path}: CRQS vocabulary file not found") from None
            key = (str(path.resolve()), stat.st_mtime, stat.st_size)
            with _lock:
                cached = _loaded.get(key)
            if cached is None:
                cached = Vocabulary.load(path)
                with _lock:
                    _loaded[key] = cached
            return cached
        raise PathkitError(f"CRQS: 'vocabulary' must be a Vocabulary or a JSON path, got {type(given).__name__}")
    reports = _option(context, "train_reports")
    if reports is not None:
        if isinstance(reports, str | Path):
            # a file (`pathkit score --option train_reports=splits.json`): a splits file's
            # `train_split` part (default "train"), or any records file
            reports = read_report_texts(reports, str(_option(context, "train_split", "train")))
        if isinstance(reports, bytes | Mapping) or not isinstance(reports, Iterable):
            raise PathkitError("CRQS: 'train_reports' must be a list of report texts or a reports file")
        reports = list(reports)
        min_count = _option(context, "vocabulary_min_count", 2)
        digest = hashlib.sha256()
        for index, report in enumerate(reports):
            if not isinstance(report, str):
                raise PathkitError(f"CRQS: train report {index} is {type(report).__name__}, not text")
            digest.update(report.encode("utf-8", "surrogatepass"))
            digest.update(b"\x00")
        key = (digest.hexdigest(), int(min_count))
        with _lock:
            cached = _learned.get(key)
        if cached is None:
            cached = build_vocabulary(list(reports), min_count=int(min_count))
            with _lock:
                _learned[key] = cached
        return cached
    return BUILTIN_VOCABULARY


def _as_list(values: Any, name: str) -> list[Any]:
    """A list from any iterable of reports (list, tuple, numpy array, polars Series); one string,
    bytes or a mapping is refused rather than read as characters or keys."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise PathkitError(f"CRQS: {name} must be a list, got {type(values).__name__}")
    return list(values)


def _check_inputs(predictions: list[Any], references: list[Any], ids: Sequence[Any] | None) -> list[str]:
    if len(predictions) != len(references):
        raise PathkitError(
            f"CRQS: {len(predictions)} predictions but {len(references)} references; they must be aligned"
        )
    if not predictions:
        raise PathkitError("CRQS: no cases to score (empty predictions and references)")
    if ids is None:
        case_ids = [str(i) for i in range(len(predictions))]
    else:
        if isinstance(ids, str) or not isinstance(ids, Sequence) or len(ids) != len(predictions):
            count = len(ids) if isinstance(ids, Sequence) and not isinstance(ids, str) else "?"
            raise PathkitError(f"CRQS: {count} ids for {len(predictions)} cases; ids must be aligned with them")
        case_ids = [str(i) for i in ids]
        seen: set[str] = set()
        dupes = sorted({i for i in case_ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        if dupes:
            shown = ", ".join(dupes[:5]) + (" ..." if len(dupes) > 5 else "")
            raise PathkitError(f"CRQS: duplicate case ids {shown}")
    for name, values in (("prediction", predictions), ("reference", references)):
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise PathkitError(
                    f"CRQS: {name} for case {case_ids[index]!r} is {type(value).__name__}, not text "
                    "(use an empty string for a missing report)"
                )
    return case_ids


def _restricted(extraction: Extraction, schema: ClinicalSchema) -> dict[str, str]:
    return {name: extraction.fields[name] for name in schema.fields if name in extraction.fields}


def score_reports(
    predictions: Sequence[Any],
    references: Sequence[Any],
    *,
    ids: Sequence[Any] | None = None,
    context: Mapping[str, Any] | None = None,
) -> MetricResult:
    """CRQS per case and summarised, for aligned generated and reference reports. The summary is
    computed from the comparisons themselves; the per-case table is built when it is read
    (`MetricResult.per_case` given as a builder)."""
    context = context or {}
    predictions = _as_list(predictions, "predictions")
    references = _as_list(references, "references")
    case_ids = _check_inputs(predictions, references, None if ids is None else _as_list(ids, "ids"))
    schema = resolve_schema(context)
    vocabulary = resolve_vocabulary(context)
    extractor = extractor_for(vocabulary)

    fields_cache: dict[str, tuple[dict[str, str], Extraction]] = {}
    outside = [name for name in OUTSIDE_SCHEMA_FIELDS if name not in schema.fields]

    def fields_of(text: str) -> tuple[dict[str, str], Extraction]:
        hit = fields_cache.get(text)
        if hit is None:
            extraction = extractor.extract(text)
            hit = fields_cache[text] = (_restricted(extraction, schema), extraction)
        return hit

    # Generated reports repeat (REG has 801 distinct references; models collapse to a few
    # outputs), so each distinct (reference, prediction) pair is compared once and its row is
    # gathered for every case that has it.
    pair_row: dict[tuple[str, str], int] = {}
    rows: list[tuple[CaseComparison, dict[str, str], dict[str, str], Extraction, Extraction, list[str]]] = []
    row_references: list[str] = []
    case_rows: list[int] = []
    for prediction, reference in zip(predictions, references, strict=True):
        key = (reference, prediction)
        row = pair_row.get(key)
        if row is None:
            ref_fields, ref_extraction = fields_of(reference)
            pred_fields, pred_extraction = fields_of(prediction)
            row = len(rows)
            rows.append((compare_fields(ref_fields, pred_fields, schema), ref_fields, pred_fields, ref_extraction,
                         pred_extraction, _outside_schema(ref_extraction, pred_extraction, outside)))
            pair_row[key] = row
            row_references.append(reference)
        case_rows.append(row)

    n = len(case_ids)
    comparisons = [r[0] for r in rows]
    columns = {name: [getattr(comparisons[r], attribute) for r in case_rows]
               for name, attribute in _SCORE_ATTRIBUTES.items()}
    summary = summary_of_columns(columns, context)
    summary["n_cases"] = float(n)
    summary["n_scored"] = float(n - columns["CRQS"].count(None))
    summary["distinct_prediction_fraction"] = float(len(set(predictions)) / n)
    summary["n_outside_schema"] = float(sum(bool(rows[r][5]) for r in case_rows))
    return MetricResult(summary=summary, per_case=partial(_per_case_table, rows, row_references, case_rows,
                                                          case_ids, schema, vocabulary.sha256))


# The per-case score columns and the `CaseComparison` attributes they hold.
_SCORE_ATTRIBUTES = dict(zip(SCORE_COLUMNS, ("crqs", "crqs_raw", "cfc", "kir", "hr", "cds", "crqs_eq6",
                                             "crqs_eq6_raw"), strict=True))


def _per_case_table(rows: Sequence[tuple[CaseComparison, dict[str, str], dict[str, str], Extraction, Extraction,
                                         list[str]]],
                    row_references: Sequence[str], case_rows: Sequence[int], case_ids: Sequence[str],
                    schema: ClinicalSchema, vocabulary_sha256: str) -> Any:
    """The per-case evidence table (`MetricResult.per_case`, built when read): one row per
    distinct (reference, prediction) pair, gathered for every case that has it."""
    import polars as pl

    comparisons = [r[0] for r in rows]
    scores = {name: pl.Series([getattr(c, attribute) for c in comparisons], dtype=pl.Float64)
              for name, attribute in _SCORE_ATTRIBUTES.items()}
    distinct = pl.DataFrame(
        {
            **scores,
            "n_reference_fields": pl.Series([c.n_reference for c in comparisons], dtype=pl.Int64),
            "n_prediction_fields": pl.Series([c.n_prediction for c in comparisons], dtype=pl.Int64),
            "n_reference_key_fields": pl.Series([c.n_reference_key for c in comparisons], dtype=pl.Int64),
            "reference_fields": pl.Series(_json_column([r[1] for r in rows]), dtype=pl.Utf8),
            "prediction_fields": pl.Series(_json_column([r[2] for r in rows]), dtype=pl.Utf8),
            "matched": _list_column([c.matched for c in comparisons]),
            "missed": _list_column([c.missed for c in comparisons]),
            "hallucinated": _list_column([c.hallucinated for c in comparisons]),
            "discordant": _list_column([c.discordant for c in comparisons]),
            "partial": pl.Series([json.dumps({k: round(v, 6) for k, v in c.partial.items()}) for c in comparisons],
                                 dtype=pl.Utf8),
            "reference_unread": _list_column([r[3].unread for r in rows]),
            "prediction_unread": _list_column([r[4].unread for r in rows]),
            "outside_schema": _list_column([r[5] for r in rows]),
            "reference_section": pl.Series([r[3].section for r in rows], dtype=pl.Utf8),
            "prediction_section": pl.Series([r[4].section for r in rows], dtype=pl.Utf8),
            "unscored_reason": pl.Series([_unscored_reason(r[0], reference, r[3], schema)
                                          for r, reference in zip(rows, row_references, strict=True)],
                                         dtype=pl.Utf8),
        }
    )
    return distinct[list(case_rows)].select(
        pl.Series("id", case_ids, dtype=pl.Utf8),
        pl.all(),
        pl.lit(schema.name, dtype=pl.Utf8).alias("schema"),
        pl.lit(vocabulary_sha256, dtype=pl.Utf8).alias("vocabulary_sha256"),
    )


def _json_column(fields: Sequence[dict[str, str]]) -> list[str]:
    """Each report's fields as sorted-key JSON, written once per distinct report (rows share them)."""
    written: dict[int, str] = {}
    return [written.get(id(f)) or written.setdefault(id(f), json.dumps(f, sort_keys=True)) for f in fields]


_SEP = "\x1f"  # never in prepared report text (control characters become spaces)


def _list_column(lists: Sequence[Sequence[str]]) -> Any:
    """A polars List(Utf8) Series from Python lists of strings, built by splitting joined strings
    in polars (constructing it element by element costs ten times more)."""
    import polars as pl

    joined = pl.Series([_SEP.join(items) for items in lists], dtype=pl.Utf8)
    empty = pl.lit([], dtype=pl.List(pl.Utf8))
    return pl.select(pl.when(joined == "").then(empty).otherwise(joined.str.split(_SEP))).to_series()


def _unscored_reason(case: CaseComparison, reference: str, extraction: Extraction,
                     schema: ClinicalSchema) -> str | None:
    """Why a case has no CRQS (None when it has one): the reference states nothing the schema
    scores, and why that is."""
    if case.crqs is not None:
        return None
    if not reference.strip():
        return "empty reference report"
    if not extraction.fields:
        return (f"no clinical statement read from the reference (read: {extraction.section or 'whole report'}); "
                "nothing to recover")
    return (f"the reference states no field of schema {schema.name} (it states "
            f"{', '.join(sorted(extraction.fields))}); nothing to recover")


def _outside_schema(reference: Extraction, prediction: Extraction, names: Sequence[str]) -> list[str]:
    """`field: reference value | predicted value` for each statement outside the schema on which
    the two reports differ ("-" where one says nothing): CRQS does not score these."""
    out = []
    for name in names:
        ref, pred = reference.fields.get(name), prediction.fields.get(name)
        if ref != pred:
            out.append(f"{name}: {ref or '-'} | {pred or '-'}")
    return out


def summarise(per_case: Any, context: Mapping[str, Any]) -> dict[str, float]:
    """Mean of each component over the cases where it is defined, with percentile-bootstrap
    95 % intervals (`bootstrap_resamples`, default 1000; 0 leaves the intervals out), from a
    per-case table (`summary_of_columns` on its score columns)."""
    columns = {name: per_case.get_column(name).to_list() for name in SCORE_COLUMNS if name in per_case.columns}
    return summary_of_columns(columns, context)


def summary_of_columns(columns: Mapping[str, Sequence[float | None]], context: Mapping[str, Any]) -> dict[str, float]:
    """`summarise` over per-case score columns given as Python lists (None where a score is not
    defined), in case order: what `score_reports` calls without building the per-case table."""
    resamples = _option(context, "bootstrap_resamples", DEFAULT_RESAMPLES)
    seed = _option(context, "seed", 0)
    level = _option(context, "confidence_level", 0.95)
    variants = _option(context, "variants", False)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise PathkitError(f"CRQS: bootstrap_resamples must be an integer >= 0, got {resamples!r}")
    if not isinstance(variants, bool):
        raise PathkitError(f"CRQS: variants must be true or false, got {variants!r}")
    import numpy as np

    from pathkit_sdk.bootstrap import bootstrap_ci

    # Every component but KIR is defined on exactly the scored cases, so they share one set of
    # resamples (the ones `bootstrap_ci` draws with the same seed, hence the same intervals);
    # only the columns the summary reports are resampled (each row's interval is its own).
    shared = [name for name in SUMMARY_COLUMNS + (VARIANT_COLUMNS if variants else ()) if name != "KIR"]
    missing = [name for name in ("CRQS", "KIR", *shared) if name not in columns]
    if missing:
        raise PathkitError(f"CRQS: the per-case scores have no column {', '.join(missing)}")
    scored = [case for case, value in enumerate(columns["CRQS"]) if value is not None]
    matrix = np.array([[columns[name][case] for case in scored] for name in shared], dtype=np.float64) \
        if scored else np.empty((len(shared), 0))
    summary: dict[str, float] = {}
    for row, name in enumerate(shared):
        summary[name] = float(matrix[row].mean()) if matrix.shape[1] else float("nan")
    kir = np.array([value for value in columns["KIR"] if value is not None], dtype=np.float64)
    summary["KIR"] = float(kir.mean()) if kir.size else float("nan")
    if resamples:
        # KIR's own resamples (`bootstrap_ci`, same seed) are the shared ones whenever it is
        # defined on as many cases: the draws depend on the count alone, so it joins them
        together = kir.size == matrix.shape[1]
        intervals = _shared_bootstrap(np.vstack([matrix, kir]) if together else matrix, resamples, seed, level)
        for row, name in enumerate(shared):
            summary[f"{name}_ci_low"], summary[f"{name}_ci_high"] = intervals[row]
        summary["KIR_ci_low"], summary["KIR_ci_high"] = intervals[-1] if together else bootstrap_ci(
            kir, n_resamples=resamples, seed=seed, level=level)
    return {name: summary[name] for name in _summary_order(resamples, variants)}


def _summary_order(resamples: int, variants: bool) -> list[str]:
    keys = []
    for name in SUMMARY_COLUMNS + (VARIANT_COLUMNS if variants else ()):
        keys.append(name)
        if resamples:
            keys.extend((f"{name}_ci_low", f"{name}_ci_high"))
    return keys


def _shared_bootstrap(matrix: Any, resamples: int, seed: int, level: float) -> list[tuple[float, float]]:
    """Percentile intervals of each row's mean over one set of case resamples
    (`bootstrap_statistics_ci`: the resamples `bootstrap_ci` draws with the same seed, and its
    rule that an interval of no width is (nan, nan), not estimable)."""
    from pathkit_sdk.bootstrap import bootstrap_statistics_ci

    if not 0.0 < float(level) < 1.0:
        raise PathkitError(f"CRQS: confidence_level must lie strictly between 0 and 1, got {level!r}")
    n_rows, n_cases = matrix.shape
    intervals = bootstrap_statistics_ci(
        lambda block: {str(row): matrix[row][block].mean(axis=1) for row in range(n_rows)},
        n_cases, resamples, seed, level)
    return [intervals.get(str(row), (float("nan"), float("nan"))) for row in range(n_rows)]


__all__ = ["score_reports", "summarise", "summary_of_columns", "resolve_vocabulary", "extractor_for", "SCORE_COLUMNS",
           "SUMMARY_COLUMNS", "VARIANT_COLUMNS", "OUTSIDE_SCHEMA_FIELDS"]
