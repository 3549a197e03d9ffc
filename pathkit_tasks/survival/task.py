"""Task `survival`: a right-censored time to event per slide or patient, predicted as a risk score.

The target is `{"time": follow-up >= 0, "event": 1 observed / 0 censored}` (one unit per dataset,
recorded in its summary); a model predicts a risk score per case, higher meaning an earlier event
(the convention of Cox models and of `pathkit score --metric survival`). Written predictions are
`{"risk": number}`. The trivial baseline gives every case one risk (Harrell's C = 0.5 exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_SLIDES, Case, Dataset, RunFacts, Task
from pathkit_tasks import TASK_SURVIVAL
from pathkit_tasks.survival.target import parse_risk, parse_target


class SurvivalTask(Task):
    """Time to event (overall or disease-specific survival, recurrence) from a slide's tile bag."""

    name: ClassVar[str] = TASK_SURVIVAL
    description: ClassVar[str] = "a risk score per slide or patient for a right-censored time to event"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)
    target_format: ClassVar[str] = '{"time": follow-up time >= 0, "event": 1 (observed) or 0 (censored)}'
    prediction_format: ClassVar[str] = 'a risk score (higher = earlier event), or {"risk": number}; written as {"risk"}'
    baselines: ClassVar[tuple[str, ...]] = ("constant-risk",)
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("risk", "time", "event")

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        try:
            parse_target(case.target)
        except ValueError as exc:
            return str(exc)
        return None

    def model_target(self, case: Case, dataset: Dataset) -> Any:
        if case.target is None:
            return None
        time, event = parse_target(case.target)
        return {"time": time, "event": event}

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        try:
            parse_risk(prediction)
        except ValueError as exc:
            return str(exc)
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        """The risk; a discrete-time head's survival curve (`survival` at `bin_ends`) kept beside it."""
        out = {"risk": parse_risk(prediction)}
        if isinstance(prediction, dict) and "survival" in prediction and "bin_ends" in prediction:
            out["survival"] = [float(v) for v in prediction["survival"]]
            out["bin_ends"] = [None if v is None else float(v) for v in prediction["bin_ends"]]
        return out

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        if name != "constant-risk" or not any(t is not None for t in train_targets):
            return None
        return {case.case_id: {"risk": 0.0} for case in test_cases}

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        """The train split's (time, event) pairs: the censoring distribution of Uno's C and of the
        time-dependent AUC is estimated on them (scikit-survival's `survival_train`)."""
        pairs = []
        for case in dataset.cases("train"):
            if case.target is not None:
                pairs.append(list(parse_target(case.target)))
        return {"train_survival": pairs}

    def report_sections(self, run: Any) -> list[Any]:
        """Kaplan-Meier curves of the test cases split at the median predicted risk and in terciles,
        each with the log-rank p (lifelines), and the time-dependent AUC at the horizons."""
        from pathkit_tasks.survival.sections import survival_sections

        return survival_sections(run)
