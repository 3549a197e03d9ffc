"""Progress bars and estimates of the long stages; the mpp fix that fits the command the user ran."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from pathkit_core.contracts import Case, Dataset, DatasetOption, PathkitError
from pathkit_core.progress import ProgressBar, duration, training_estimate


class WithMpp(Dataset):
    name = "with-mpp"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (DatasetOption("mpp", "float", None, "every slide's mpp"),)


class WithoutMpp(Dataset):
    name = "without-mpp"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (DatasetOption("x"),)


def test_durations_and_the_training_estimate():
    assert [duration(s) for s in (0.2, 40, 150, 7200)] == ["1 s", "40 s", "2.5 min", "2.0 h"]
    assert training_estimate(12.0, 24, 6) == ("epoch 1 took 12 s: up to 24 more epoch(s), about 4.8 min (early "
                                              "stopping after 6 epochs without improvement may end it sooner)")
    assert training_estimate(12.0, 0, None) == ""


def test_a_progress_bar_counts_its_units():
    with ProgressBar("predict", 5, "cases") as bar:
        bar.advance(2)
        bar.advance(3)
        bar.describe("score model: nlg")
        task = bar._progress.tasks[0]
        assert (task.completed, task.total, task.description) == (5, 5, "score model: nlg")


def test_a_disabled_progress_bar_does_nothing():
    with ProgressBar("predict", 3, "cases", enabled=False) as bar:
        bar.advance(2)
        bar.describe("x")
    assert bar._progress is None
    with ProgressBar("predict", 0, "cases") as empty:  # nothing to count: no bar
        assert empty._progress is None


def test_the_mpp_fix_names_the_option_of_the_command():
    from pathkit_core.run.features import mpp_fix, slide_mpps
    from pathkit_core.wsi.slide import MPP_FIXES, resolve_mpp, with_mpp_fix

    with pytest.raises(PathkitError) as caught:
        resolve_mpp({"openslide.mpp-x": "352.8"}, path="x.tiff")
    assert MPP_FIXES in str(caught.value)
    fixed = with_mpp_fix(str(caught.value), mpp_fix(WithMpp))
    assert fixed.endswith("supply it with --dataset-option mpp=MPP (every slide's mpp)")
    assert "pathkit tile" not in fixed and with_mpp_fix("other", "fix") == "other"
    assert "dataset 'without-mpp' has no mpp option" in mpp_fix(WithoutMpp)
    case = Case("c", "p", slides=(Path("a.svs"), Path("b.svs")), meta={"mpp": (0.25, None)})
    assert slide_mpps(case) == {"a.svs": 0.25}
    assert slide_mpps(Case("c", "p", slides=(Path("a.svs"),), meta={"mpp": 0.5})) == {"a.svs": 0.5}
    with pytest.raises(PathkitError, match="gives 1 values for 2 slides"):
        slide_mpps(Case("c", "p", slides=(Path("a.svs"), Path("b.svs")), meta={"mpp": [0.5]}))
