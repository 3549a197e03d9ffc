"""What the run does with a task's cases and predictions: the items a split's cases give the model
(feature bags, or whole-image feature vectors), and the standard predict, write and read a task
leaves to the run by returning None."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Case, Dataset, PathkitError, RunFacts, Task
from pathkit_core.training.trainer import predict, write_predictions
from pathkit_core.training.trainer import task_read_predictions as task_read_predictions


def case_items(task: Task, cases: Sequence[Case], inputs: Mapping[str, Any], dataset: Dataset,
               facts: RunFacts, *, targets: bool = True) -> Sequence[dict[str, Any]]:
    """Items of the cases that have usable inputs, in case order, each with the task's model
    target and the case's meta. Feature-file cases become bags (multi-slide cases concatenated
    in slide order, cut to `facts.max_tiles`); image cases become one-row bags."""
    from pathkit_core.training.bags import BagDataset, BagSpec, ImageItems

    usable = [c for c in cases if c.case_id in inputs]

    def target(case: Case) -> Any:
        return task.model_target(case, dataset) if targets else None

    files = [c for c in usable if isinstance(inputs[c.case_id], tuple)]
    if files and len(files) != len(usable):
        raise PathkitError(f"task {task.name!r}: one split mixes feature-bag cases and whole-image cases "
                           f"(e.g. {files[0].case_id} and "
                           f"{next(c.case_id for c in usable if c not in files)}); give each split one kind")
    if files or not usable:
        return BagDataset([BagSpec(c.case_id, inputs[c.case_id], target(c), c.meta)
                           for c in files], max_tiles=facts.max_tiles)
    return ImageItems([(c.case_id, inputs[c.case_id], target(c), c.meta) for c in usable])


# The run's standard behaviour where a task's method returns None (contracts.Task).


def task_items(task: Task, cases: Sequence[Case], inputs: Mapping[str, Any], dataset: Dataset,
               facts: RunFacts, *, targets: bool = True) -> Sequence[dict[str, Any]]:
    """The task's items of `cases`, else the standard ones (`case_items`)."""
    made = task.items(cases, inputs, dataset, facts, targets=targets)
    return case_items(task, cases, inputs, dataset, facts, targets=targets) if made is None else made


def task_predict(task: Task, model: Any, items: Any, facts: RunFacts, *, batch_size: int, cfg: Any) -> dict[str, Any]:
    """The task's raw predictions, else the trainer's batched predict."""
    made = task.predict(model, items, facts, batch_size=batch_size, cfg=cfg)
    if made is not None:
        return made
    return predict(model, items, batch_size=batch_size, cfg=cfg)


def task_write_predictions(task: Task, path: Path, predictions: Mapping[str, Any], ids: Sequence[str],
                           facts: RunFacts) -> Path:
    """The task's prediction file, else JSON lines."""
    written = task.write_predictions(path, predictions, ids, facts)
    if written is not None:
        return written
    return write_predictions(path, predictions, ids)
