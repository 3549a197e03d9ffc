"""Small synthetic run folders of every task, written the way the pipeline writes them (the real
metrics score them where they exist on this branch), so that reports are built and checked in
seconds rather than after full runs."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
from PIL import Image

from pathkit_core.contracts import Case
from pathkit_core.evaluation.runner import ScoreResult, score, write_results
from pathkit_core.run.score import write_test_cases
from pathkit_core.training.trainer import write_predictions
from pathkit_core.workspace import atomic_write_json

REPORTS = [
    "Stomach, endoscopic biopsy; Tubular adenoma with low grade dysplasia",
    "Stomach, endoscopic biopsy; Adenocarcinoma, poorly differentiated",
    "Breast, core biopsy; Invasive carcinoma of no special type, grade II (Tubule formation: 3, Nuclear grade: 2)",
    "Breast, core biopsy; Invasive carcinoma of no special type, grade III (Tubule formation: 3, Nuclear grade: 3)",
    "Uterine cervix, colposcopic biopsy; High-grade squamous intraepithelial lesion (HSIL; CIN 2)",
    "Colon, biopsy; Tubular adenoma with low grade dysplasia",
]


def _history(epochs: int = 6) -> list[dict]:
    return [{"epoch": e, "train_loss": 2.0 / e, "val_loss": 1.8 / e + 0.05 * max(0, e - 4), "selection": 0.1 * e,
             "lr": 1e-3, "seconds": 1.5} for e in range(1, epochs + 1)]


def _common(run_dir: Path, task: str, dataset: str, cases: dict[str, list[Case]], *, fit: bool = True,
            selection: str = "val_loss") -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / "provenance.json", {"config": {"dataset": dataset, "encoder": "tiny-vit",
                                                               "generator": "toy", "seed": 0},
                                                    "versions": {"python": "3.11"}})
    stages = {"dataset": {"key": "x"}}
    if fit:
        (run_dir / "checkpoints").mkdir(exist_ok=True)
        atomic_write_json(run_dir / "checkpoints" / "history.json", _history())
        stages["fit"] = {"best_epoch": 4, "epochs_run": 6, "selection": selection, "key": "y"}
    atomic_write_json(run_dir / "stages.json", stages)
    rows = []
    for split, members in cases.items():
        for c in members:
            rows.append({"case_id": c.case_id, "split": split, "input": "features", "slide_id": c.case_id,
                         "n_tiles": 10 + len(c.case_id), "status": "ok", "reason": None,
                         "flags": "near-duplicate tiles" if c.case_id.endswith("1") else None, "mean_variance": 0.01,
                         "l2_norm_mean": 8.0, "zero_vector_fraction": 0.0, "near_duplicate_fraction": 0.1,
                         "file": None})
    rows.append({"case_id": "lost", "split": "test", "input": "slides", "status": "skipped",
                 "reason": "lost: tiling failed: unreadable slide", "n_tiles": None, "slide_id": None, "flags": None,
                 "mean_variance": None, "l2_norm_mean": None, "zero_vector_fraction": None,
                 "near_duplicate_fraction": None, "file": None})
    pl.DataFrame(rows).write_csv(run_dir / "features_qc.csv")


def _write(run_dir: Path, result: ScoreResult, task: str, dataset: str, preds: dict, test: list[Case],
           refs: dict, baselines: dict, **extra) -> Path:
    write_predictions(run_dir / "predictions.jsonl", preds, [c.case_id for c in test])
    write_test_cases(run_dir / "test_cases.jsonl", test, refs)
    write_results(result, run_dir, extra={"run": {"dataset": dataset, "encoder": "tiny-vit", "generator": "toy"},
                                          "task": task, "n_test_cases": len(test), "baselines": baselines,
                                          "skipped_cases": {"lost": "test: tiling failed: unreadable slide"},
                                          "split": {"source": "drawn", "description": "seeded (0) 60/20/20",
                                                    "counts": {"train": 6, "val": 2, "test": len(test)}},
                                          **extra})
    return run_dir


def report_run(run_dir: Path) -> Path:
    """Report generation: 12 test cases, nlg (no METEOR: no Java needed) and CRQS, a baseline."""
    test = [Case(f"R{i:02d}", f"P{i:02d}", REPORTS[i % len(REPORTS)]) for i in range(12)]
    # every third prediction is the wrong report of the same organ; the rest are right
    preds = {c.case_id: REPORTS[(i % len(REPORTS)) ^ (1 if i % 3 == 0 else 0)] for i, c in enumerate(test)}
    refs = {c.case_id: c.target for c in test}
    _common(run_dir, "report", "demo-reports", {"train": test[:6], "test": test}, selection="nlg:BLEU-4")
    ids = [c.case_id for c in test]

    def scored(p):
        nlg = score(["nlg"], p, refs, ids=ids, context={"options": {"meteor": False}})
        crqs = score(["crqs"], p, refs, ids=ids, dataset="demo-reports")
        return ScoreResult({**nlg.summary, **crqs.summary},
                           nlg.per_case.join(crqs.per_case, on="id", how="left", maintain_order="left"),
                           {**nlg.results, **crqs.results})

    result = scored(preds)
    baseline = scored({i: REPORTS[0] for i in ids}).summary
    distinct = len(set(preds.values())) / len(preds)
    return _write(run_dir, result, "report", "demo-reports", preds, test, refs,
                  {"most-frequent-report": baseline}, distinct_prediction_fraction=distinct)


def _heatmap(folder: Path, slide_id: str, rng: np.random.Generator) -> None:
    from pathkit_tasks.classification.attention import attention_table, render_heatmap, write_attention

    n = 36
    weights = rng.random(n)
    coords = np.array([[256 * (k % 6), 256 * (k // 6)] for k in range(n)])
    table = attention_table(slide_id, np.arange(n), weights / weights.sum(), np.log(weights), coords=coords)
    write_attention(table, folder, slide_id)
    render_heatmap(table, folder / f"{slide_id}.heatmap.png", tile_size0=256)


def slide_classification_run(run_dir: Path) -> Path:
    """Binary slide classification with class probabilities, attention heatmaps of every test slide."""
    rng = np.random.default_rng(0)
    classes = ["MSS", "MSI-H"]
    test = [Case(f"S{i:02d}", f"P{i:02d}", classes[i % 2]) for i in range(20)]
    preds, refs = {}, {}
    for i, c in enumerate(test):
        p = float(np.clip((0.7 if i % 2 else 0.3) + rng.normal(0, 0.2), 0.01, 0.99))
        preds[c.case_id] = {"label": int(p >= 0.5), "class": classes[int(p >= 0.5)], "probabilities": [1 - p, p]}
        refs[c.case_id] = i % 2
    _common(run_dir, "slide-classification", "goldmark:COAD-MSI", {"train": test[:8], "test": test},
            selection="classification:AUROC")
    ids = [c.case_id for c in test]
    context = {"class_names": classes, "options": {"n_resamples": 200}}
    result = score(["classification"], preds, refs, ids=ids, context=context)
    prior = {i: {"label": 0, "probabilities": [0.5, 0.5]} for i in ids}
    baseline = score(["classification"], prior, refs, ids=ids, context=context).summary
    folder = run_dir / "attention" / "best"
    index = []
    for c in test:
        _heatmap(folder, c.case_id, rng)
        index.append({"case_id": c.case_id, "slide_id": c.case_id, "n_tiles": 36, "table": f"{c.case_id}.attention"
                      ".parquet", "heatmap": f"{c.case_id}.heatmap.png", "note": "no QC thumbnail: blank canvas"})
    pl.DataFrame(index).write_csv(folder / "index.csv")
    return _write(run_dir, result, "slide-classification", "goldmark:COAD-MSI", preds, test, refs,
                  {"class-prior": baseline})


def patch_classification_run(run_dir: Path) -> Path:
    """Four-class patch classification with confusions between two pairs of classes; patch PNGs."""
    classes = ["TUM", "FIB", "INF", "NOR"]
    patches = run_dir.parent / f"{run_dir.name}-patches"
    patches.mkdir(parents=True, exist_ok=True)
    colours = {"TUM": (150, 40, 120), "FIB": (230, 150, 180), "INF": (60, 40, 160), "NOR": (240, 200, 210)}
    test, preds, refs = [], {}, {}
    for i in range(40):
        truth = classes[i % 4]
        path = patches / f"{truth}_{i}.png"
        Image.new("RGB", (48, 48), colours[truth]).save(path)
        test.append(Case(f"{truth}_{i}", f"{truth}_{i}", truth, images=(path,)))
        label = classes.index(truth)
        if truth == "TUM" and i % 3 == 0:
            label = 2  # TUM read as INF
        elif truth == "NOR" and i % 5 == 3:
            label = 1  # NOR read as FIB
        probs = [0.1] * 4
        probs[label] = 0.7
        preds[test[-1].case_id] = {"label": label, "class": classes[label], "probabilities": probs}
        refs[test[-1].case_id] = classes.index(truth)
    _common(run_dir, "patch-classification", "hepatobench", {"train": test[:8], "test": test}, fit=False)
    ids = [c.case_id for c in test]
    context = {"class_names": classes, "options": {"n_resamples": 100}}
    result = score(["classification"], preds, refs, ids=ids, context=context)
    majority = {i: {"label": 0, "probabilities": [1.0, 0, 0, 0]} for i in ids}
    return _write(run_dir, result, "patch-classification", "hepatobench", preds, test, refs,
                  {"majority-class": score(["classification"], majority, refs, ids=ids, context=context).summary})


def _dice(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    inter, total, union = (a & b).sum(), a.sum() + b.sum(), (a | b).sum()
    return (2 * inter / total if total else 1.0), (inter / union if union else 1.0)


def segmentation_run(run_dir: Path) -> Path:
    """Per-slide masks (PNG) against reference masks, per-slide Dice/IoU, tissue composition."""
    run_dir.mkdir(parents=True, exist_ok=True)
    masks = run_dir / "predictions_masks"
    refs_dir = run_dir.parent / f"{run_dir.name}-references"
    masks.mkdir(exist_ok=True)
    refs_dir.mkdir(exist_ok=True)
    test, preds, refs, rows = [], {}, {}, []
    for i in range(5):
        truth = np.zeros((40, 60), bool)
        truth[8:30, 10 + i:40 + i] = True
        guess = np.zeros_like(truth)
        guess[10 + i:32, 12:44 - i] = True
        Image.fromarray(truth.astype(np.uint8) * 255).save(refs_dir / f"W{i}.png")
        Image.fromarray(guess.astype(np.uint8) * 255).save(masks / f"W{i}.png")
        cid = f"W{i}"
        test.append(Case(cid, cid, {"mask": refs_dir / f"W{i}.png", "foreground": "TUM"}))
        tum = float(guess.mean())
        preds[cid] = {"mask": f"predictions_masks/{cid}.png", "foreground": 0, "tissue_mm2": 12.5 + i,
                      "foreground_mm2": (12.5 + i) * tum,
                      "composition": {"tissue": {"TUM": tum, "FIB": 0.5 * (1 - tum), "NOR": 0.5 * (1 - tum)}}}
        refs[cid] = {"mask": str(refs_dir / f"W{i}.png"), "foreground": "TUM"}
        dice, iou = _dice(guess, truth)
        rows.append({"id": cid, "Dice": dice, "IoU": iou})
    per_case = pl.DataFrame(rows)
    summary = {"segmentation": {"Dice": float(per_case["Dice"].mean()), "IoU": float(per_case["IoU"].mean())}}
    _common(run_dir, "segmentation", "hepatobench-wsi", {"test": test})
    result = ScoreResult(summary, per_case, {})
    return _write(run_dir, result, "segmentation", "hepatobench-wsi", preds, test, refs,
                  {"all-background": {"segmentation": {"Dice": 0.0, "IoU": 0.0}}})


def vqa_run(run_dir: Path) -> Path:
    """Multiple-choice questions of three capabilities in groups of four, scored by the vqa metric,
    with the evidence accessibility of the run's selector and two audited ones."""
    caps = ["GR", "MA", "ESG"]
    test, preds, refs = [], {}, {}
    rng = np.random.default_rng(1)
    for i in range(36):
        cap, group = caps[i % 3], f"g{i // 4}"
        meta = {"question": f"Which finding is seen in region {i}?", "choices": ["tumour", "stroma", "necrosis",
                                                                                  "normal"],
                "capability": cap, "group": group}
        answer = i % 4
        test.append(Case(f"Q{i:02d}", f"P{i // 4}", answer, meta=meta))
        guess = answer if rng.random() < {"GR": 0.8, "MA": 0.5, "ESG": 0.3}[cap] else (answer + 1) % 4
        reached = {"uniform": bool(rng.random() < 0.4), "pathoargus": bool(rng.random() < 0.8)}
        # a K sweep: the same reader at K = 64 and 128 gets fewer right than at its own 256
        sweep = {"256": guess, **{str(k): answer if rng.random() < share else (answer + 2) % 4
                                  for k, share in ((64, 0.35), (128, 0.5))}}
        preds[f"Q{i:02d}"] = {"answer": guess, "letter": "ABCD"[guess], "sweep": sweep,
                              "evidence": {"n_available": 4000 + 10 * i, "n_selected": 256, "selector": "pathoargus",
                                           "budget": 256, "candidates": 1024, "accessible": reached["pathoargus"],
                                           "accessible_by": reached}}
        refs[f"Q{i:02d}"] = {"answer": answer, "n_choices": 4, "capability": cap, "group": group,
                             **({"condition": ("set1", "set2", "set3", "absent")[i % 4]} if cap == "ESG" else {})}
    _common(run_dir, "multiple-choice-vqa", "pathoargus", {"test": test}, fit=False)
    ids = [c.case_id for c in test]
    result = score(["vqa"], preds, refs, ids=ids)
    majority = {i: {"answer": 0, "letter": "A"} for i in ids}
    from pathkit_tasks.vqa.evidence import budget_summary

    return _write(run_dir, result, "multiple-choice-vqa", "pathoargus", preds, test, refs,
                  {"majority-position": score(["vqa"], majority, refs, ids=ids).summary},
                  budget=budget_summary(preds), report_sections=["budget"])


def tiny_synthetic_run(run_dir: Path) -> Path:
    """The issue's case: a synthetic demo (its root marked by the pipeline's demo builder) scored on
    3 test cases by a randomly initialised encoder; AUROC 1.0 whose bootstrap cannot vary."""
    from pathkit_core.contracts import Dataset
    from pathkit_core.evaluation.provenance import mark_synthetic, run_provenance

    class Demo(Dataset):
        name = "slides-csv"

    demo_root = run_dir.parent / f"{run_dir.name}-demo"
    demo_root.mkdir(parents=True, exist_ok=True)
    mark_synthetic(demo_root, "slides-csv")
    classes = ["neg", "pos"]
    test = [Case(f"T{i}", f"P{i}", classes[y]) for i, y in enumerate([1, 0, 1])]
    preds = {c.case_id: {"label": 0, "class": "neg", "probabilities": [1 - p, p]}
             for c, p in zip(test, [0.45, 0.1, 0.4], strict=True)}
    refs = {c.case_id: classes.index(c.target) for c in test}
    _common(run_dir, "slide-classification", "slides-csv", {"train": test, "test": test}, fit=False)
    ids = [c.case_id for c in test]
    result = score(["classification"], preds, refs, ids=ids, context={"class_names": classes,
                                                                      "options": {"n_resamples": 500}})
    return _write(run_dir, result, "slide-classification", "slides-csv", preds, test, refs, {},
                  provenance=run_provenance(Demo(demo_root), "tiny-vit", ["random-init:seed=0"]))


def matrix(workdir: Path, encoders: tuple[str, ...] = ("enc-a", "enc-b"),
           generators: tuple[str, ...] = ("gen-x", "gen-y")) -> Path:
    """A dataset x encoders x generators leaderboard (2 x 2 unless told) whose cells are report runs."""
    from pathkit_bench.report.matrix import write_leaderboard

    results = []
    for k, (enc, gen) in enumerate([(e, g) for e in encoders for g in generators]):
        run_dir = report_run(workdir / "runs" / "demo-reports" / enc / gen / f"cell{k}")
        metrics = json.loads((run_dir / "metrics.json").read_text())["metrics"]
        for values in metrics.values():  # make the cells differ
            for key in list(values):
                values[key] = float(values[key]) * (1 + 0.05 * k)
        from pathkit_core.report.html import write_run_report

        write_run_report(run_dir)
        results.append((enc, gen, SimpleNamespace(run_dir=run_dir, summary=metrics)))
    return write_leaderboard(results, workdir, "demo-reports")


BUILDERS = {"report": report_run, "slide-classification": slide_classification_run,
            "patch-classification": patch_classification_run, "segmentation": segmentation_run,
            "multiple-choice-vqa": vqa_run}
