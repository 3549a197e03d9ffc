"""Any pathkit Metric as a local Hugging Face `evaluate` module: `compute(predictions=..., references=...)`.

`evaluate.load("bleu")` fetches a script from the Hub and fails offline; the modules built
here are defined in-process from the registered pathkit metric class, so nothing is fetched.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import Metric, PathkitError
from pathkit_core.plugins import get_component

if TYPE_CHECKING:
    import evaluate

# Keyword arguments of `compute` that become the `context` of `Metric.compute`; any other
# keyword is a metric option (e.g. `meteor=False`), gathered into `context["options"]`.
CONTEXT_KEYS = ("dataset",)
# The input kinds a task may accept (`Task.evaluate_inputs`): (prediction, reference) value types.
INPUT_KINDS = {"text": ("string", "string"), "multi_reference": ("string", "strings"), "label": ("int", "int"),
               "probabilities": ("floats", "int"), "score": ("float", "int"), "mask": ("matrix", "matrix")}

_INPUTS_DESCRIPTION = """
Args:
    predictions: one prediction per case (report text, class probabilities, label, ...).
    references: one reference per case, aligned with `predictions`.
    ids: optional case ids (default "0", "1", ...).
    dataset: optional dataset name (e.g. "reg2025"), used by schema-aware metrics.
    options: optional dict of metric options; any other keyword is added to it.
    return_per_case: also return the per-case table as a list of row dicts under "per_case".
Returns:
    the metric's summary: a dict of named floats.
"""


def _feature_options(metric_cls: type[Metric]) -> Any:
    """The `datasets.Features` (or list of alternatives) accepted for this metric's inputs.

    A metric class may set `evaluate_features` to a list of {"predictions": feature,
    "references": feature} dicts; otherwise the input types follow the tasks it scores.
    """
    from datasets import Features, Sequence, Value

    declared = metric_cls.evaluate_features
    if declared:
        options = [Features(dict(spec)) for spec in declared]
        return options[0] if len(options) == 1 else options

    value = {"string": Value("string"), "int": Value("int64"), "float": Value("float64"),
             "strings": Sequence(Value("string")), "floats": Sequence(Value("float64")),
             "matrix": Sequence(Sequence(Value("float32")))}
    kinds = {name: Features({"predictions": value[p], "references": value[r]})
             for name, (p, r) in INPUT_KINDS.items()}
    by_task = {}
    for task in metric_cls.tasks:
        try:
            by_task[task] = [kinds[k] for k in get_component("task", task).evaluate_inputs if k in kinds]
        except PathkitError:  # a task no installed plugin provides: the generic kinds below
            continue
    options: list[Any] = []
    for task in metric_cls.tasks or ():
        for candidate in by_task.get(task, []):
            if candidate not in options:
                options.append(candidate)
    if not options:
        options = [kinds[k] for k in ("text", "label", "probabilities", "score")]
    return options[0] if len(options) == 1 else options


def _resolve_metric_class(metric_cls_or_name: type[Metric] | Metric | str) -> type[Metric]:
    if isinstance(metric_cls_or_name, str):
        from pathkit_core.plugins import get_component

        found = get_component("metric", metric_cls_or_name)
        return found  # type: ignore[return-value]
    if isinstance(metric_cls_or_name, Metric):
        return type(metric_cls_or_name)
    if isinstance(metric_cls_or_name, type) and issubclass(metric_cls_or_name, Metric):
        return metric_cls_or_name
    raise PathkitError(
        "as_evaluate_module expects a pathkit Metric class, instance or registered metric name, "
        f"got {metric_cls_or_name!r}"
    )


def _module_class_name(metric_name: str) -> str:
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", metric_name) if p]
    return "Pathkit" + "".join(p[:1].upper() + p[1:] for p in parts) if parts else "PathkitMetric"


def as_evaluate_module(
    metric_cls_or_name: type[Metric] | Metric | str,
    *,
    keep_in_memory: bool = True,
    cache_dir: str | None = None,
    metric_kwargs: Mapping[str, Any] | None = None,
    **module_kwargs: Any,
) -> evaluate.Metric:
    """Wrap a pathkit metric (class, instance or registered name) as an `evaluate.Metric`.

    The result supports `compute(predictions=..., references=..., **options)`, `add`,
    `add_batch` and `evaluate.combine`. Keywords other than the inputs become the
    metric's context: `ids`, `dataset`, `options` and any option
    keyword (merged into `options`). By default inputs are kept in memory, so nothing is
    written to the Hugging Face cache folder.
    """
    import evaluate
    from datasets import Features

    metric_cls = _resolve_metric_class(metric_cls_or_name)
    given_instance = metric_cls_or_name if isinstance(metric_cls_or_name, Metric) else None
    features = _feature_options(metric_cls)
    citation = metric_cls.citation
    description = metric_cls.description or f"pathkit metric {metric_cls.name!r}"

    def _info(self: evaluate.Metric) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=description,
            citation=citation,
            inputs_description=_INPUTS_DESCRIPTION,
            features=features,
            homepage="",
        )

    def _compute(
        self: evaluate.Metric,
        *,
        predictions: Any = None,
        references: Any = None,
        ids: Any = None,
        dataset: str | None = None,
        options: Mapping[str, Any] | None = None,
        return_per_case: bool = False,
        **extra_options: Any,
    ) -> dict[str, Any]:
        merged_options = dict(options or {})
        merged_options.update(extra_options)
        context: dict[str, Any] = {"options": merged_options}
        if dataset is not None:
            context["dataset"] = dataset
        scorer = given_instance if given_instance is not None else self._pathkit_metric()
        result = scorer.compute(
            list(predictions if predictions is not None else []),
            list(references if references is not None else []),
            ids=list(ids) if ids is not None else None,
            context=context,
        )
        out: dict[str, Any] = dict(result.summary)
        if return_per_case:
            rows = result.per_case.to_dicts() if result.per_case is not None else []
            out["per_case"] = rows
        return out

    def _pathkit_metric(self: evaluate.Metric) -> Metric:
        # One metric instance per module, so loaded models (HARE) and JVMs are reused.
        if getattr(self, "_pathkit_instance", None) is None:
            self._pathkit_instance = metric_cls(**dict(metric_kwargs or {}))
        return self._pathkit_instance

    def _infer_feature_from_batch(self: evaluate.Metric, batch: dict[str, Any]) -> Any:
        # evaluate picks among alternative input types by looking at the first row; an empty
        # batch has none, so take the first alternative and let the metric judge the emptiness
        if isinstance(self.features, list) and any(len(column) == 0 for column in batch.values()):
            return self.features[0]
        return evaluate.Metric._infer_feature_from_batch(self, batch)

    module_cls = type(
        _module_class_name(metric_cls.name),
        (evaluate.Metric,),
        {
            "__doc__": description,
            "__module__": __name__,
            "_info": _info,
            "_compute": _compute,
            "_pathkit_metric": _pathkit_metric,
            "_infer_feature_from_batch": _infer_feature_from_batch,
            "pathkit_metric_class": metric_cls,
        },
    )
    if keep_in_memory and cache_dir is None:
        # evaluate creates its cache folder even for in-memory modules; keep it out of $HOME.
        cache_dir = os.path.join(tempfile.gettempdir(), "pathkit-evaluate")
    if not isinstance(features, Features | list):
        raise PathkitError(f"metric {metric_cls.name!r}: bad evaluate_features {features!r}")
    return module_cls(keep_in_memory=keep_in_memory, cache_dir=cache_dir, **module_kwargs)


__all__ = ["as_evaluate_module", "CONTEXT_KEYS"]
