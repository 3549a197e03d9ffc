"""Report sections of the classification tasks: ROC and precision-recall curves, the reliability
diagram, the confusion matrix (counts and row-normalised), per-class F1, attention heatmaps of the
best and worst test slides, example patches of the most confused pairs, every case's prediction.

The curves and tables come from the metric's `MetricResult.details` ("roc", "pr",
"curve_areas", "reliability", "confusion_matrix", "classes", "per_class"), the cases from the
per-case table, the predictions and `test_cases.jsonl`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pathkit_core.report.figures import PALETTE, new_figure
from pathkit_core.report.page import Section, esc, table
from pathkit_sdk.charts import bar_chart, heatmap

N_EXAMPLE_CASES = 3
N_CONFUSED_PAIRS = 3
N_PATCHES_PER_PAIR = 4


def _classes(run: Any) -> list[str]:
    found = run.details("classes")
    return [str(c) for c in found[1]["classes"]] if found else []


def _ci_text(run: Any, metric: str, key: str) -> str:
    values = run.summary.get(metric) or {}
    value, low, high = values.get(key), values.get(f"{key}_ci_low"), values.get(f"{key}_ci_high")
    if value is None or not math.isfinite(value):
        return f"{key} n/a"
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None and math.isfinite(low) else ""
    return f"{key} {value:.3f}{ci}"


def details_section(run: Any, key: str, build: Callable[[Any, str, dict[str, Any]], Section | None]) -> Section | None:
    """`build(run, metric, details)` over the details a metric recorded under `key`; None when none did."""
    found = run.details(key)
    return build(run, *found) if found else None


def curves_section(run: Any, metric: str, details: dict[str, Any]) -> Section | None:
    roc, pr, areas = details["roc"], details.get("pr") or {}, details.get("curve_areas") or {}
    binary = len(roc) == 1
    fig, axes = new_figure(10.2, 4.6, ncols=2)
    ax_roc, ax_pr = axes[0]
    rows = []
    for i, (name, points) in enumerate(roc.items()):
        colour = PALETTE[i % len(PALETTE)]
        area = areas.get(name) or {}
        label = (_ci_text(run, metric, "AUROC") if binary else
                 f"{name}: AUROC {area.get('AUROC') or float('nan'):.3f}")
        ax_roc.plot(points["fpr"], points["tpr"], color=colour, linewidth=1.8, label=label, drawstyle="steps-post")
        curve = pr.get(name)
        if curve:
            ap = f"AP {area.get('AP') or float('nan'):.3f}"
            ax_pr.plot([0.0, *curve["recall"]], [curve["precision"][0] if curve["precision"] else 1.0,
                                                 *curve["precision"]],
                       color=colour, linewidth=1.8, drawstyle="steps-pre", label=ap if binary else f"{name}: {ap}")
            if binary:
                ax_pr.axhline(area.get("prevalence", 0.0), color="#999999", linestyle="--", linewidth=1,
                              label=f"chance (prevalence {area.get('prevalence', 0.0):.2f})")
        rows += [{"class": name, "curve": "roc", "x": x, "y": y} for x, y in zip(points["fpr"], points["tpr"],
                                                                                   strict=True)]
        if curve:
            rows += [{"class": name, "curve": "pr", "x": x, "y": y} for x, y in zip(curve["recall"],
                                                                                      curve["precision"], strict=True)]
    ax_roc.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="chance")
    for ax, (xl, yl), title in ((ax_roc, ("false positive rate (1 - specificity)", "true positive rate (sensitivity)"),
                                 "ROC curve"),
                                (ax_pr, ("recall (sensitivity)", "precision (positive predictive value)"),
                                 "Precision-recall curve")):
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_title(title, fontsize="medium")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="lower right" if ax is ax_roc else "lower left")
    what = (f"the positive class {next(iter(roc))}" if binary else "each class against the rest (one-vs-rest)")
    macro = "" if binary else f"; macro {_ci_text(run, metric, 'AUROC')}, macro {_ci_text(run, metric, 'AP')}"
    caption = (f"ROC and precision-recall curves of {what} over the test cases{macro}. AUROC's interval is the "
               "metric's bootstrap percentile CI.")
    body = run.figures.figure("roc_pr", fig, caption, rows)
    return Section("Discrimination: ROC and precision-recall", body, key="roc-pr", order=100)


def reliability_section(run: Any, metric: str, details: dict[str, Any]) -> Section | None:
    bins = [b for b in details["reliability"]]
    used = [b for b in bins if b.get("count")]
    if not used:
        return None
    fig, axes = new_figure(5.6, 5.4, nrows=2, gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top, bottom = axes[0][0], axes[1][0]
    width = bins[0]["upper"] - bins[0]["lower"]
    centres = [(b["lower"] + b["upper"]) / 2 for b in used]
    top.bar(centres, [b["observed_rate"] for b in used], width=width * 0.9, color="#0072B2", alpha=0.8,
            label="observed rate")
    top.plot([b["mean_predicted"] for b in used], [b["observed_rate"] for b in used], "o", color="#D55E00",
             label="mean predicted (x) vs observed (y)")
    top.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="perfect calibration")
    top.set_ylabel("observed frequency")
    top.set_ylim(0, 1.02)
    top.grid(alpha=0.3)
    top.legend(fontsize="small", loc="upper left")
    ece = (run.summary.get(metric) or {}).get("ECE")
    brier = (run.summary.get(metric) or {}).get("Brier")
    top.set_title(f"Reliability: ECE {ece:.3f}" + (f", Brier {brier:.3f}" if brier is not None else "")
                  if ece is not None else "Reliability", fontsize="medium")
    bottom.bar(centres, [b["count"] for b in used], width=width * 0.9, color="#999999")
    bottom.set_ylabel("cases")
    bottom.set_xlabel(details.get("reliability_of") or "predicted probability")
    bottom.set_xlim(0, 1)
    bottom.yaxis.get_major_locator().set_params(integer=True)
    caption = (f"Reliability diagram of the {details.get('reliability_of') or 'predicted probability'} in "
               f"{len(bins)} equal-width bins (empty bins left out); ECE is the case-weighted mean gap between a "
               "bin's mean prediction and its observed rate (lower is better).")
    body = run.figures.figure("reliability", fig, caption, bins)
    return Section("Calibration", body, key="calibration", order=110)


def confusion_section(run: Any, metric: str, details: dict[str, Any]) -> Section | None:
    import numpy as np

    classes = [str(c) for c in details["classes"]]
    counts = np.asarray(details["confusion_matrix"], dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(totals > 0, counts / np.where(totals > 0, totals, 1), np.nan)
    k = len(classes)
    side = max(3.8, 0.6 * k + 2.6)
    fig, axes = new_figure(2 * side + 1.6, side, ncols=2)
    heatmap(counts, classes, classes, xlabel="predicted class", ylabel="reference class", title="counts",
            fmt="{:.0f}", ax=axes[0][0], fig=fig, colorbar="test cases")
    heatmap(shares, classes, classes, xlabel="predicted class", ylabel="reference class",
            title="row-normalised (recall on the diagonal)", fmt="{:.2f}", vmin=0, vmax=1, ax=axes[0][1], fig=fig,
            colorbar="share of the reference class")
    rows = [{"reference": classes[i], "predicted": classes[j], "count": int(counts[i, j]),
             "row_share": None if math.isnan(shares[i, j]) else float(shares[i, j])}
            for i in range(k) for j in range(k)]
    caption = ("Confusion matrix of the test cases: rows are reference classes, columns predictions; left the "
               "counts, right each row divided by its total.")
    body = run.figures.figure("confusion_matrix", fig, caption, rows)
    return Section("Confusion matrix", body, key="confusion", order=120)


def per_class_section(run: Any, metric: str, details: dict[str, Any]) -> Section | None:
    rows = details["per_class"]
    names = [f"{r['class']} (n={r['support']})" for r in rows]
    fig = bar_chart(names, {"precision": [r["precision"] for r in rows], "recall": [r["recall"] for r in rows],
                            "F1": [r["F1"] for r in rows]}, ylabel="score on the test cases", ylim=(0, 1.05),
                    title=f"Per class ({_ci_text(run, metric, 'macro_F1')})")
    caption = ("Precision, recall and F1 of each class (n: its test cases); a class never predicted has precision 0. "
               "The macro F1 averages F1 over every declared class.")
    body = run.figures.figure("per_class_scores", fig, caption, rows)
    body += table(["class", "test cases", "predicted", "precision", "recall", "F1"],
                  [[r["class"], r["support"], r.get("predicted"), r["precision"], r["recall"], r["F1"]] for r in rows],
                  table_id="per-class", sortable=True)
    return Section("Per-class precision, recall and F1", body, key="per-class", order=130)


# --------------------------------------------------------------------------- cases


def case_rows(run: Any) -> list[dict[str, Any]]:
    """Per test case: reference and predicted class, the probability of each and of the reference."""
    classes = _classes(run)
    preds = run.predictions
    per_case = run.per_case
    targets: dict[str, int] = {}
    if per_case is not None and {"id", "target"} <= set(per_case.columns):
        targets = {r["id"]: r["target"] for r in per_case.select("id", "target").iter_rows(named=True)}
    out = []
    for cid, pred in preds.items():
        probs = pred.get("probabilities") if isinstance(pred, dict) else None
        label = pred.get("label") if isinstance(pred, dict) else pred
        target = targets.get(cid)
        row = {"id": cid,
               "reference": classes[target] if target is not None and target < len(classes) else target,
               "predicted": pred.get("class") if isinstance(pred, dict) else label,
               "p_predicted": probs[label] if probs is not None and isinstance(label, int) else None,
               "p_reference": probs[target] if probs is not None and target is not None else None,
               "correct": None if target is None else label == target}
        out.append(row)
    return out


def cases_section(run: Any, rows: list[dict[str, Any]]) -> Section | None:
    if not rows:
        return None
    body = table(["id", "reference class", "predicted class", "p(predicted)", "p(reference)", "correct"],
                 [[r["id"], r["reference"], r["predicted"], r["p_predicted"], r["p_reference"],
                   "yes" if r["correct"] else "no" if r["correct"] is not None else ""] for r in rows[:5000]],
                 table_id="cases", sortable=True, filterable=True, numeric_filters=["p(reference)", "p(predicted)"],
                 classes="cases")
    csv = run.figures.write_data("per_case_predictions", rows)
    intro = (f"<p>Every test case's prediction; sort by a column, filter by text or by probability. "
             f"<a href=\"{esc(run.figures.href(csv))}\">All cases (CSV)</a>.</p>")
    return Section("Every test case", intro + body, key="cases", order=190)


def attention_section(run: Any, rows: list[dict[str, Any]]) -> Section | None:
    """Attention heatmaps of the test slides the model got most and least right (by the probability
    it gave the reference class), as `<run>/attention/best/` holds them."""
    from pathkit_tasks.classification.attention import attention_index

    index = attention_index(run.path, "best")
    if not index:
        return None
    by_case: dict[str, list[dict[str, str]]] = {}
    for entry in index:
        if entry.get("heatmap"):
            by_case.setdefault(entry["case_id"], []).append(entry)
    scored = [r for r in rows if r["id"] in by_case and r["p_reference"] is not None]
    scored.sort(key=lambda r: -r["p_reference"])
    if not scored:
        return None
    top = scored[:N_EXAMPLE_CASES]
    bottom = [r for r in scored[::-1][:N_EXAMPLE_CASES] if r not in top]
    folder = run.path / "attention" / "best"
    parts = [f"<p>Attention of the model over the tiles of each test slide, drawn over its QC thumbnail (a blank "
             f"canvas where none was kept): dark blue the least attended tiles, red the most (by percentile). "
             f"{len(by_case)} slides have a heatmap in <code>attention/best/</code>.</p>", _ramp_legend(run)]
    for title, chosen in (("Best-predicted test cases (highest probability of the reference class)", top),
                          ("Worst-predicted test cases (lowest probability of the reference class)", bottom)):
        if not chosen:
            continue
        figures = []
        for r in chosen:
            for entry in by_case[r["id"]][:2]:
                caption = (f"{r['id']}" + (f" / slide {entry['slide_id']}" if entry["slide_id"] != r["id"] else "")
                           + f": reference {r['reference']}, predicted {r['predicted']}, "
                             f"p(reference) {r['p_reference']:.3f}; {entry.get('n_tiles', '?')} tiles"
                           + (f" ({entry['note']})" if entry.get("note") else ""))
                figures.append(run.figures.image(f"attention_{entry['slide_id']}", folder / entry["heatmap"], caption,
                                                 max_side=420))
        parts.append(f"<h3>{esc(title)}</h3><div class=gallery>{''.join(figures)}</div>")
    return Section("Attention heatmaps", "".join(parts), key="attention", order=150)


def _ramp_legend(run: Any) -> str:
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap

    from pathkit_tasks.classification.attention import HEATMAP_RAMP

    cmap = LinearSegmentedColormap.from_list("attention", [tuple(c / 255 for c in rgb) for rgb in HEATMAP_RAMP])
    fig, axes = new_figure(5.0, 0.95)
    ax = axes[0][0]
    ax.imshow(np.linspace(0, 1, 256)[None, :], aspect="auto", cmap=cmap, extent=(0, 100, 0, 1))
    ax.set_yticks([])
    ax.set_xlabel("attention percentile of the tile within its slide")
    return run.figures.figure("attention_scale", fig, "Colour scale of the attention heatmaps",
                              {"percentile": [0, 25, 50, 75, 100]})


def confused_examples_section(run: Any, rows: list[dict[str, Any]]) -> Section | None:
    """Example patches of the (reference, predicted) pairs the model confuses most often."""
    from pathkit_core.contracts import PathkitError
    from pathkit_core.features.images import read_image

    cases = run.test_cases
    wrong = [r for r in rows if r["correct"] is False and (cases.get(r["id"]) or {}).get("images")]
    if not wrong:
        return None
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in wrong:
        pairs.setdefault((str(r["reference"]), str(r["predicted"])), []).append(r)
    ranked = sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:N_CONFUSED_PAIRS]
    parts = ["<p>Test patches of the class pairs the model confuses most often, the most confidently wrong first "
             "(reference class, then the class predicted).</p>"]
    for (ref, predicted), members in ranked:
        members.sort(key=lambda r: -(r["p_predicted"] or 0.0))
        figures = []
        for r in members[:N_PATCHES_PER_PAIR]:
            ref_path = cases[r["id"]]["images"][0]
            try:
                image = read_image(ref_path)
            except PathkitError as exc:
                figures.append(f'<p class="note">{esc(r["id"])}: {esc(exc)}</p>')
                continue
            figures.append(run.figures.image(f"patch_{r['id']}", image,
                                             f"{r['id']}: p({predicted}) {r['p_predicted'] or 0:.2f}", max_side=200))
        parts.append(f"<h3>{esc(ref)} predicted as {esc(predicted)}: {len(members)} case(s)</h3>"
                     f"<div class=gallery>{''.join(figures)}</div>")
    return Section("Most confused pairs: example patches", "".join(parts), key="confused", order=140)


# the sections drawn from a metric's details: (details key, builder)
DETAIL_SECTIONS = (("roc", curves_section), ("reliability", reliability_section),
                   ("confusion_matrix", confusion_section), ("per_class", per_class_section))


def slide_classification_sections(run: Any) -> list[Section]:
    rows = case_rows(run)
    built = DETAIL_SECTIONS if len(_classes(run)) > 2 else DETAIL_SECTIONS[:3]  # per-class F1: multiclass only
    found = [*(details_section(run, key, build) for key, build in built), attention_section(run, rows),
             cases_section(run, rows)]
    return [s for s in found if s is not None]


def patch_classification_sections(run: Any) -> list[Section]:
    rows = case_rows(run)
    found = [*(details_section(run, key, build) for key, build in DETAIL_SECTIONS[2:]),
             confused_examples_section(run, rows), cases_section(run, rows)]
    return [s for s in found if s is not None]


__all__ = ["case_rows", "patch_classification_sections", "slide_classification_sections"]
