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
