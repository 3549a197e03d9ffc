"""The items a split's cases give the model: feature bags, or whole-image feature vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pathkit_core.contracts import Case, Dataset, PathkitError, RunFacts, Task


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
                           for c in files], max_tiles=facts.max_tiles, seed=facts.seed)
    return ImageItems([(c.case_id, inputs[c.case_id], target(c), c.meta) for c in usable])
