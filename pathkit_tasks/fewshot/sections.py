"""Report section of the `few-shot` task: mean accuracy and balanced accuracy over the episodes at
each k with the episode interval (2.5th-97.5th percentile), as a curve and a table."""

from __future__ import annotations

from typing import Any

from pathkit_core.report.figures import new_figure
from pathkit_core.report.page import Section, esc, table


def fewshot_sections(run: Any) -> list[Section]:
    details = (run.metrics.get("details") or {}).get("few-shot") or {}
    curve = details.get("curve") or []
    if not curve:
        return []
    ks = [r["k"] for r in curve]
    fig, axes = new_figure(5.6, 3.4)
    ax = axes[0][0]
    for name, colour in (("acc", "#0072B2"), ("bacc", "#D55E00")):
        mean = [r[name] for r in curve]
        ax.plot(ks, mean, marker="o", color=colour, label="accuracy" if name == "acc" else "balanced accuracy")
        ax.fill_between(ks, [r[f"{name}_low"] for r in curve], [r[f"{name}_high"] for r in curve], color=colour,
                        alpha=0.2, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("shots per class (k)")
    ax.set_ylabel("score on the test cases")
    ax.set_ylim(0.0, 1.02)
    ax.legend(loc="lower right", fontsize="small")
    body = run.figures.figure("few_shot_curve", fig, "Few-shot curve: mean over episodes, band = episode interval "
                              "(2.5th-97.5th percentile)", curve)
    rows = [[r["k"], r["episodes"], f"{r['acc']:.4f}", f"[{r['acc_low']:.4f}, {r['acc_high']:.4f}]",
             f"{r['bacc']:.4f}", f"[{r['bacc_low']:.4f}, {r['bacc_high']:.4f}]"] for r in curve]
    body += table(["k", "episodes", "accuracy", "episode interval", "balanced accuracy", "episode interval"], rows,
                  table_id="few-shot-curve")
    body += (f'<p class="note">Each of the {esc(curve[0]["episodes"])} episodes per k draws k train cases of every '
             "class (seeded; the same support sets for every encoder, stored in episodes.json) and classifies "
             "every test case once.</p>")
    return [Section("Few-shot curve", body, key="few-shot", order=100)]
