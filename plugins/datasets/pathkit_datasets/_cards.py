"""The descriptive facts of this plugin's datasets (description, licence, citation, layout; for the
public benchmarks the published counts, scale and report settings), one table per dataset in
`data/cards.toml`. A dataset module keeps only how its release is read:
`class BachDataset(PublicPatchDataset, card="bach")` is the dataset `bach` with that table's
values as its class attributes (docs/catalogue.md lists them)."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any


@cache
def cards() -> dict[str, dict[str, Any]]:
    """{dataset name: its facts} of data/cards.toml (read once)."""
    return tomllib.loads(resources.files(__package__).joinpath("data", "cards.toml").read_text(encoding="utf-8"))


class Carded:
    """A dataset class given `card=NAME` is named NAME and takes that card's facts as class attributes."""

    def __init_subclass__(cls, card: str | None = None, **kwargs: Any) -> None:
        if card is not None:
            cls.name = card
            for key, value in cards()[card].items():
                setattr(cls, key, value)
        super().__init_subclass__(**kwargs)
