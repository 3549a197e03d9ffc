"""The built-in task types, one package each, shipped in the `pathkit` distribution and registered
through its `pathkit` entry points like any plugin (docs/plugin-authors.md).

- `pathkit_tasks.report`: report generation (PathReportEval);
- `pathkit_tasks.classification`: slide and patch classification, with MIL attention export;
- `pathkit_tasks.segmentation`: stitched sliding-window slide segmentation, mask and overlay writers;
- `pathkit_tasks.vqa`: budgeted multiple-choice VQA, with the evidence-selector kind it adds;
- `pathkit_tasks.survival`: right-censored time to event per slide or patient (risk scores,
  Kaplan-Meier groups, docs/survival.md);
- `pathkit_tasks.ordinal`: grading over ordered classes (quadratic weighted kappa, docs/ordinal.md);
- `pathkit_tasks.retrieval`: test cases queried against the train split by feature similarity
  (top-k and majority-vote accuracy, mAP@k; docs/retrieval.md);
- `pathkit_tasks.fewshot`: few-shot curves, k shots per class over seeded episodes shared by every
  encoder (docs/few-shot.md);
- `pathkit_tasks.zeroshot`: zero-shot classification with a vision-language model's text tower
  (prompt ensembles, MI-Zero top-k pooling for slides; docs/zero-shot.md).

Each package holds its protocol (`task.py`), its report sections (`sections.py`) and the machinery
only it uses; what several tasks share stays in `pathkit_core`.
"""

# The built-in task types' names (docs/plugin-authors.md, section 2), what datasets, generators and metrics declare
# in `tasks`; registered through the same `register_tasks` hook a third-party plugin uses.
TASK_REPORT = "report"
TASK_SLIDE_CLASSIFICATION = "slide-classification"
TASK_PATCH_CLASSIFICATION = "patch-classification"
TASK_SEGMENTATION = "segmentation"
TASK_MULTIPLE_CHOICE_VQA = "multiple-choice-vqa"
TASK_SURVIVAL = "survival"
TASK_ORDINAL = "ordinal"
TASK_RETRIEVAL = "retrieval"
TASK_FEW_SHOT = "few-shot"
TASK_ZERO_SHOT = "zero-shot"


__all__ = [
    "TASK_REPORT", "TASK_SLIDE_CLASSIFICATION", "TASK_PATCH_CLASSIFICATION", "TASK_SEGMENTATION",
    "TASK_MULTIPLE_CHOICE_VQA", "TASK_SURVIVAL", "TASK_ORDINAL", "TASK_RETRIEVAL",
    "TASK_FEW_SHOT", "TASK_ZERO_SHOT",
]
