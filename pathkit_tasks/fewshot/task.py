"""Task `few-shot`: accuracy curves over k shots per class (docs/few-shot.md). For each k a head
sees only the support sets of seeded episodes (k train cases of each class, the same for every
encoder: `episodes.py`) and classifies every test case once per episode; nothing else of the train
split is used and nothing is trained across episodes.

Targets are class names; a prediction is `{"shots": {"k": [class index in each episode, ...]}}`.
The metric `few-shot` turns them into each k's accuracy per episode, its mean and episode interval.
The support sets are written to the run folder (`episodes.json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_IMAGES, INPUT_SLIDES, Case, Dataset, RunFacts, Task
from pathkit_tasks import TASK_FEW_SHOT
from pathkit_tasks._common import ClassNameTarget, most_frequent
from pathkit_tasks.fewshot.episodes import EPISODES_FILE


def _shots(prediction: Any) -> dict[str, Any] | None:
    shots = prediction.get("shots") if isinstance(prediction, dict) else None
    return shots if isinstance(shots, dict) and shots else None


class FewShotTask(ClassNameTarget, Task):
    """k-shot classification over seeded episodes: SimpleShot and the logistic probe (UNI's protocol)."""

    name: ClassVar[str] = TASK_FEW_SHOT
    description: ClassVar[str] = "accuracy at k = 1..32 shots per class over seeded episodes shared by every encoder"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES, INPUT_IMAGES)
    target_format: ClassVar[str] = "a class name of the dataset's class_names()"
    prediction_format: ClassVar[str] = '{"shots": {"<k>": [predicted class index in each episode, ...]}}'
    baselines: ClassVar[tuple[str, ...]] = ("majority-class",)

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        n = len(dataset.class_names())
        shots = _shots(prediction)
        if shots is None:
            return 'a prediction needs "shots": {"<k>": [class index of each episode, ...]}'
        for k, row in shots.items():
            if not str(k).isdigit() or not isinstance(row, list) or not row:
                return f"shots[{k!r}] must be a non-empty list of class indices under a whole-number k"
            if any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < n for c in row):
                return f"shots[{k!r}] holds a value that is not a class index 0..{n - 1}"
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        return {"shots": {str(k): [int(c) for c in row] for k, row in sorted(prediction["shots"].items(),
                                                                            key=lambda kv: int(kv[0]))}}

    def predict(self, model: Any, items: Sequence[dict[str, Any]], facts: RunFacts, *, batch_size: int,
                cfg: Any) -> dict[str, Any] | None:
        """The trainer's batched predict; the model's support sets written beside (`episodes.json`)."""
        from pathkit_core.training.trainer import predict
        from pathkit_core.workspace import atomic_write_json

        raw = predict(model, items, batch_size=batch_size, cfg=cfg)
        episodes = getattr(model, "episodes", None)
        if episodes is not None:
            atomic_write_json(Path(facts.run_dir) / EPISODES_FILE, episodes)
        return raw

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        """`majority-class`: every episode predicts the train split's most frequent class (the k
        and episode count of the metric's defaults: one episode per k, the same everywhere)."""
        from pathkit_tasks.fewshot.episodes import DEFAULT_KS

        labels = [t for t in train_targets if t is not None]
        if name != "majority-class" or not labels:
            return None
        top = int(most_frequent(labels))
        return {case.case_id: {"shots": {str(k): [top] for k in DEFAULT_KS}} for case in test_cases}

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        return {"class_names": list(dataset.class_names())}

    def report_sections(self, run: Any) -> list[Any]:
        """The accuracy curve over k with its episode intervals, and the table beside it."""
        from pathkit_tasks.fewshot.sections import fewshot_sections

        return fewshot_sections(run)
