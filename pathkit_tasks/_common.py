"""Small helpers the built-in task protocols share."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any


def most_frequent(values: Sequence[Any]) -> Any:
    """The most frequent value (the first seen among ties); None for no values.

    Dicts and lists are compared by their JSON form, so that structured targets count too.
    """
    if not values:
        return None
    keyed = [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for v in values]
    winner = Counter(keyed).most_common(1)[0][0]
    return values[keyed.index(winner)]


class ClassNameTarget:
    """Target checks of a task whose target is one of the dataset's class names and whose model
    sees its index (retrieval, few-shot): a mixin before `Task`."""

    def check_target(self, case: Any, dataset: Any) -> str | None:
        classes = tuple(dataset.class_names())
        if case.target not in classes:
            return f"target {case.target!r} is not one of the class names {list(classes)}"
        return None

    def model_target(self, case: Any, dataset: Any) -> Any:
        return None if case.target is None else list(dataset.class_names()).index(case.target)
