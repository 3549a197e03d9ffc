"""Validation of report-text inputs shared by the text metrics (nlg, hare): types, lengths, ids, options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pathkit_core.contracts import Metric, PathkitError


@dataclass(frozen=True)
class ReportPairs:
    """Aligned predictions and references after validation; `references[i]` is a tuple of texts."""

    predictions: list[str]
    references: list[tuple[str, ...]]
    ids: list[str]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_sequence(values: Any, what: str, metric: str) -> Sequence[Any]:
    if isinstance(values, str | bytes):
        raise PathkitError(f"{metric}: {what} must be a list of texts, got a single {type(values).__name__}")
    if isinstance(values, Mapping):
        raise PathkitError(
            f"{metric}: {what} must be a list aligned with the other side, got a mapping; "
            "align them by id first (pathkit score does this)"
        )
    try:
        return list(values)
    except TypeError as exc:
        raise PathkitError(f"{metric}: {what} must be a list of texts, got {type(values).__name__}") from exc


def validate_report_pairs(
    predictions: Any,
    references: Any,
    ids: Sequence[Any] | None,
    *,
    metric: str,
    multi_reference: bool = True,
) -> ReportPairs:
    """Check and align report texts; every problem is a PathkitError naming the case.

    A reference may be one text or, where `multi_reference`, a non-empty list of texts
    (several reports for the same case, as pycocoevalcap accepts).
    """
    preds = _as_sequence(predictions, "predictions", metric)
    refs = _as_sequence(references, "references", metric)
    if len(preds) != len(refs):
        raise PathkitError(f"{metric}: {len(preds)} predictions but {len(refs)} references")
    if ids is None:
        case_ids = [str(i) for i in range(len(preds))]
    else:
        case_ids = [str(i) for i in _as_sequence(ids, "ids", metric)]
        if len(case_ids) != len(preds):
            raise PathkitError(f"{metric}: {len(case_ids)} ids for {len(preds)} predictions")
        seen: set[str] = set()
        for case_id in case_ids:
            if case_id in seen:
                raise PathkitError(f"{metric}: case id {case_id!r} appears more than once")
            seen.add(case_id)
    if not preds:
        raise PathkitError(f"{metric}: no cases to score (empty predictions and references)")

    out_refs: list[tuple[str, ...]] = []
    for index, (pred, ref) in enumerate(zip(preds, refs, strict=True)):
        where = f"case {case_ids[index]!r} (position {index})"
        if not isinstance(pred, str):
            raise PathkitError(
                f"{metric}: {where}: the prediction is {type(pred).__name__} {_describe(pred)}, "
                "not a text; use \"\" for an empty report"
            )
        if isinstance(ref, str):
            out_refs.append((ref,))
            continue
        if multi_reference and isinstance(ref, list | tuple):
            if not ref:
                raise PathkitError(f"{metric}: {where}: the list of references is empty")
            bad = next((r for r in ref if not isinstance(r, str)), None)
            if bad is not None:
                raise PathkitError(
                    f"{metric}: {where}: a reference is {type(bad).__name__} {_describe(bad)}, not a text"
                )
            out_refs.append(tuple(ref))
            continue
        allowed = "a text or a list of texts" if multi_reference else "a text"
        raise PathkitError(
            f"{metric}: {where}: the reference is {type(ref).__name__} {_describe(ref)}, not {allowed}"
        )
    return ReportPairs([str(p) for p in preds], out_refs, case_ids)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def option_bool(options: Mapping[str, Any], key: str, default: bool, metric: str) -> bool:
    value = options.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise PathkitError(f"{metric}: option {key}={value!r} is not a boolean")


def option_number(
    options: Mapping[str, Any],
    key: str,
    default: float | None,
    metric: str,
    *,
    integer: bool = False,
    minimum: float | None = None,
) -> float | int | None:
    value = options.get(key, default)
    if value is None or (isinstance(value, str) and value.strip().lower() in {"none", ""}):
        return None
    try:
        number: float | int = int(value) if integer else float(value)
        if isinstance(value, bool) or (integer and float(value) != int(value)):
            raise ValueError
    except (TypeError, ValueError) as exc:
        kind = "an integer" if integer else "a number"
        raise PathkitError(f"{metric}: option {key}={value!r} is not {kind}") from exc
    if minimum is not None and number < minimum:
        raise PathkitError(f"{metric}: option {key}={value!r} must be at least {minimum}")
    return number


def metric_options(context: Mapping[str, Any] | None, metric: type[Metric]) -> dict[str, Any]:
    """The metric's options: its known keys (`Metric.option_table`) found at the top level of the
    context, overridden by the context's `options` dict, checked by the contract
    (`Metric.checked_options`: unknown keys warned about, typed values parsed)."""
    context = context or {}
    raw = context.get("options") or {}
    if not isinstance(raw, Mapping):
        raise PathkitError(f"{metric.name}: context option 'options' must be a mapping, got {type(raw).__name__}")
    known = [o.name for o in metric.option_table]
    options = {key: context[key] for key in known if key in context}
    options.update(raw)
    return metric.checked_options(options)
