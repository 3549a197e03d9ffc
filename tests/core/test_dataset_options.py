"""Dataset options declared in `Dataset.option_table`: typed, defaulted, unknown ones listed."""

from __future__ import annotations

from typing import ClassVar

import pytest

from pathkit_core.contracts import Dataset, DatasetOption, PathkitError


class Declared(Dataset):
    name = "declared"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("seed", "int", 0, "a seed"),
        DatasetOption("share", "float", 0.5),
        DatasetOption("strict", "bool", True),
        DatasetOption("mode", "a|b", "a"),
        DatasetOption("table", "path", None),
    )
    run_options: ClassVar[tuple[str, ...]] = ("workdir",)


class Undeclared(Dataset):
    name = "undeclared"


def test_options_are_typed_and_defaulted():
    ds = Declared(None, seed="3", share=1, strict="no", table="t.csv", workdir="/w")
    assert ds.options == {"seed": 3, "share": 1.0, "strict": False, "mode": "a", "table": "t.csv", "workdir": "/w"}
    assert Declared(None).options["seed"] == 0
    assert Undeclared(None, anything=1).options == {"anything": 1}  # no table: unchecked, as before


@pytest.mark.parametrize(("options", "message"), [
    ({"sead": 1}, r"dataset 'declared' has no option\(s\) sead; known: mode, seed, share, strict, table "
                  r"\(`pathkit info declared`"),
    ({"seed": 1.5}, "option seed=1.5 is not a whole number"),
    ({"seed": True}, "option seed=True is not a number"),
    ({"share": "half"}, "option share='half' is not a number"),
    ({"strict": "maybe"}, "option strict='maybe' is not true or false"),
    ({"mode": "c"}, "option mode='c': choose one of a, b"),
    ({"view": "x"}, "has no views"),
])
def test_bad_options_are_explained(options, message):
    with pytest.raises(PathkitError, match=message):
        Declared(None, **options)


def test_describe_lists_the_options_for_pathkit_info():
    info = Declared.describe()
    assert info["options"][0] == {"name": "seed", "type": "int", "default": 0, "help": "a seed"}
    assert info["run_options"] == ["workdir"] and info["layout"] == ""
    assert Declared(None).split_facts() == {}
