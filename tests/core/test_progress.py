"""Progress bars and estimates of the long stages; the mpp fix that fits the command the user ran."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from pathkit_core.contracts import Case, Dataset, DatasetOption, PathkitError
from pathkit_core.progress import ProgressBar, TrainingEstimate, duration, early_stop_line


class WithMpp(Dataset):
    name = "with-mpp"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (DatasetOption("mpp", "float", None, "every slide's mpp"),)


class WithoutMpp(Dataset):
    name = "without-mpp"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (DatasetOption("x"),)


def test_durations():
    assert [duration(s) for s in (0.2, 40, 150, 7200)] == ["1 s", "40 s", "2.5 min", "2.0 h"]


def test_the_estimate_waits_out_the_warm_up_and_times_training_and_validation_apart():
    # GOLDMARK-like: 10 epochs, validation at 2, 5 and the last; no early stopping
    est = TrainingEstimate(10, lambda e: e in (2, 5, 10), None)
    est.record(30.0, None)  # epoch 1: the warm-up, slow
    assert not est.ready and est.line(1, 0) == "" and est.left(1, 0) == ""
    est.record(10.0, 20.0)  # epoch 2: 10 s of training + 20 s of validation
    assert est.ready
    # 8 epochs left at 10 s, of which 2 (5 and 10) validate at 20 s: 80 + 40 = 120 s
    assert est.seconds_for(3, 10) == 120.0
    assert est.line(2, 0) == ("epoch 2/10: 10 s per epoch + 20 s per validation (measured after 1 warm-up "
                              "epoch(s)); about 2.0 min for the 8 epoch(s) left (no early stopping in this protocol: "
                              "all 10 epochs run)")
    assert est.left(2, 0) == "~2.0 min left"
    est.record(14.0, None)  # later periods are averaged: (10 + 14) / 2 = 12 s
    assert est.seconds_for(4, 4) == 12.0


def test_with_early_stopping_the_estimate_says_the_total_cannot_be_known():
    est = TrainingEstimate(25, lambda e: True, 6)
    est.record(5.0, 1.0)
    est.record(4.0, 2.0)
    # no better score for 6 more validations ends it at epoch 8 (1 bad one already: at epoch 7)
    assert est.earliest_stop(2, 0) == 8 and est.earliest_stop(2, 1) == 7
    assert est.earliest_stop(22, 0) is None  # patience cannot run out before epoch 25
    line = est.line(2, 0)
    assert line.startswith("epoch 2/25: 4 s per epoch + 2 s per validation")
    assert "at most 2.3 min for the 23 epoch(s) left" in line  # 23 * (4 + 2) = 138 s
    assert "Early stopping (patience 6) may end it from epoch 8 on (in 36 s)" in line  # 6 * 6 s
    assert line.endswith("so the total cannot be known in advance")
    assert est.left(2, 0) == "36 s-2.3 min left (early stopping)"
    assert early_stop_line(67, 20, 47) == ("early stopping after epoch 67: no better validation score in 20 "
                                           "validation(s) (patience 20); the best epoch is 47")


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
