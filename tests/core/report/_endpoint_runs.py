"""Small synthetic run folders of the endpoint tasks (survival, ordinal, retrieval, few-shot),
scored by their real metrics and written as the pipeline writes them, for the browser checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pathkit_core.contracts import Case
from pathkit_core.evaluation.runner import score

from ._runs import _common, _write


def _cases(n: int, targets: list) -> list[Case]:
    return [Case(f"S{i:02d}", f"P{i:02d}", targets[i]) for i in range(n)]


def _in_turn(classes: list[str], n: int) -> tuple[list[Case], dict[str, int]]:
    """`n` cases of the three classes in turn, and each case's class index."""
    test = _cases(n, [classes[i % 3] for i in range(n)])
    return test, {c.case_id: i % 3 for i, c in enumerate(test)}


def _own_or_other(rng: np.random.Generator, own: int, p: float) -> int:
    """The case's own class with probability `p`, else one of the three drawn at random."""
    return own if rng.random() < p else int(rng.integers(0, 3))


def _scored_run(run_dir: Path, task: str, test: list[Case], refs: dict, preds: dict, baseline: tuple[str, object],
                context: dict, *, n_train: int, fit: bool = True, scored: dict | None = None) -> Path:
    """The run folder of `task` on its demo dataset: `preds` scored by the task's metric (`scored`
    where the metric reads another form of them) beside the baseline (name, one prediction for all)."""
    dataset = "demo-" + task.replace("-", "")
    _common(run_dir, task, dataset, {"train": test[:n_train], "test": test}, fit=fit)
    ids = [c.case_id for c in test]
    result = score([task], scored or preds, refs, ids=ids, context=context)
    name, constant = baseline
    base = score([task], dict.fromkeys(ids, constant), refs, ids=ids, context=context).summary
    return _write(run_dir, result, task, dataset, preds, test, refs, {name: base})


def survival_run(run_dir: Path) -> Path:
    """30 patients whose risk orders their event times, with censoring and tied times."""
    rng = np.random.default_rng(1)
    risk = rng.normal(size=30)
    time = np.round(np.exp(-risk + rng.normal(0, 0.5, 30)) * 12) + 1
    event = (rng.random(30) < 0.7).astype(int)
    refs = {f"S{i:02d}": {"time": float(time[i]), "event": int(event[i])} for i in range(30)}
    test = _cases(30, list(refs.values()))
    preds = {c.case_id: {"risk": float(r)} for c, r in zip(test, risk, strict=True)}
    return _scored_run(run_dir, "survival", test, refs, preds, ("constant-risk", {"risk": 0.0}),
                       {"options": {"n_resamples": 50}}, n_train=10)


def ordinal_run(run_dir: Path) -> Path:
    """Five grades, most predictions right or one grade off."""
    rng = np.random.default_rng(2)
    grades = ["1", "2", "3", "4", "5"]
    y = rng.integers(0, 5, 40)
    p = np.clip(y + rng.choice([-1, 0, 0, 0, 1], 40), 0, 4)
    test = _cases(40, [grades[g] for g in y])
    refs = {c.case_id: grades[g] for c, g in zip(test, y, strict=True)}
    preds = {c.case_id: {"label": int(g), "class": grades[g]} for c, g in zip(test, p, strict=True)}
    return _scored_run(run_dir, "ordinal", test, refs, preds, ("majority-class", "3"),
                       {"class_names": grades, "options": {"n_resamples": 50}}, n_train=10,
                       scored={i: v["class"] for i, v in preds.items()})


def retrieval_run(run_dir: Path) -> Path:
    """Three classes; each query retrieves its own class first most of the time."""
    rng = np.random.default_rng(3)
    classes = ["amber", "violet", "teal"]
    test, refs = _in_turn(classes, 24)
    preds = {c.case_id: {"retrieved": [_own_or_other(rng, refs[c.case_id], 0.7) for _ in range(10)],
                         "neighbours": [f"T{j}" for j in range(10)],
                         "similarity": [round(1 - 0.05 * j, 3) for j in range(10)]} for c in test}
    return _scored_run(run_dir, "retrieval", test, refs, preds, ("majority-class", {"retrieved": [0] * 10}),
                       {"class_names": classes, "options": {"n_resamples": 50}}, n_train=9, fit=False)


def fewshot_run(run_dir: Path) -> Path:
    """Three classes, 20 episodes per k; more shots, more cases right."""
    rng = np.random.default_rng(4)
    classes = ["dense", "dotted", "fibrous"]
    test, refs = _in_turn(classes, 18)
    preds = {c.case_id: {"shots": {str(k): [_own_or_other(rng, refs[c.case_id], 0.5 + 0.08 * j) for _ in range(20)]
                                   for j, k in enumerate((1, 2, 4, 8, 16))}} for c in test}
    return _scored_run(run_dir, "few-shot", test, refs, preds, ("majority-class", {"shots": {"1": [0]}}),
                       {"class_names": classes}, n_train=9, fit=False)


BUILDERS = {"survival": survival_run, "ordinal": ordinal_run, "retrieval": retrieval_run, "few-shot": fewshot_run}
