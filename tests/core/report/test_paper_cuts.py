"""Report details a reader trips over: heatmap colour direction, budget counts, table titles."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest


def _cell_colours(fig):
    image = fig.axes[0].images[0]
    return [image.cmap(image.norm(v)) for v in image.get_array().ravel()]


def _darkness(rgba):
    return 1.0 - (0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2])


@pytest.mark.parametrize("cmap", ["Blues", "Blues_r"])
def test_a_panel_of_equal_best_scores_is_drawn_dark_not_white(cmap):
    from pathkit_sdk.charts import heatmap

    fig = heatmap([[1.0, 1.0]], ["enc"], ["a", "b"], xlabel="", ylabel="", fmt="{:.3f}", cmap=cmap)
    assert all(_darkness(c) > 0.6 for c in _cell_colours(fig))
    texts = [t for t in fig.axes[0].texts if t.get_text() == "1.000"]
    assert len(texts) == 2 and all(t.get_color() == "white" for t in texts)


def test_darker_is_better_in_both_directions():
    from pathkit_sdk.charts import heatmap

    higher = _cell_colours(heatmap([[0.5, 1.0]], ["e"], ["a", "b"], xlabel="", ylabel="", cmap="Blues"))
    assert _darkness(higher[1]) > _darkness(higher[0])  # 1.0 is better: darker
    lower = _cell_colours(heatmap([[0.5, 1.0]], ["e"], ["a", "b"], xlabel="", ylabel="", cmap="Blues_r"))
    assert _darkness(lower[0]) > _darkness(lower[1])  # 0.5 is better (a loss): darker


def test_budget_counts_are_integers():
    from pathkit_tasks.vqa.sections import budget_section

    run = SimpleNamespace(metrics={"budget": {"questions": 927.0, "budget_K": 256.0, "available_mean": 12.5,
                                              "retention": 0.25, "available_total": 10400.0}})
    html = budget_section(run).body
    assert ">927<" in html and ">256<" in html and ">10400<" in html and "927.0000" not in html
    assert ">12.5000<" in html and ">0.2500<" in html  # means and fractions keep their decimals


def test_table_titles_with_brackets_print_as_written():
    from pathkit_core.cli.common import PathkitConsole, print_table

    for terminal in (False, True):
        buffer = io.StringIO()
        console = PathkitConsole(file=buffer, force_terminal=terminal, width=120, color_system=None)
        print_table("per encoder (mean [mean of the cells' CI bounds])", ["encoder"], [["tiny-vit"]],
                    target=console)
        # in a terminal rich wraps the title to the table's width; the words are all there
        assert "(mean [mean of the cells' CI bounds])" in " ".join(buffer.getvalue().split())


class _Figures:
    def figure(self, name, fig, caption, data):
        return f"<figure>{name}</figure>"


def _run_with_history(history, fit):
    return SimpleNamespace(history=history, selected_epoch=fit.get("best_epoch"), stages={"fit": fit},
                           figures=_Figures(), metrics={})


def test_training_by_steps_counts_steps_as_its_plot_does():
    from pathkit_core.report.html import training_section

    history = [{"epoch": e, "step": 250 * e, "train_loss": 1.0 / e, "val_loss": 1.0, "lr": 1e-3, "seconds": 2.0}
               for e in range(1, 11)]
    body = training_section(_run_with_history(history, {"epochs_run": 10, "best_step": 2500})).body
    assert "2500 training steps (10 validation period(s)) run in 20 s" in body
    assert "10 training step(s)" not in body
    by_epoch = [{k: v for k, v in h.items() if k != "step"} for h in history[:3]]
    assert "3 epoch(s) run in 6 s" in training_section(_run_with_history(by_epoch, {"epochs_run": 3})).body


def test_the_class_map_has_a_legend_in_the_overlay_colours():
    from pathkit_tasks.segmentation.overlay import class_colours
    from pathkit_tasks.segmentation.sections import class_legend

    html = class_legend(["tumour", "stroma", "<necrosis>"])
    colours = class_colours(3)
    for name, colour in zip(["tumour", "stroma", "&lt;necrosis&gt;"], colours, strict=True):
        assert f'background:rgb{tuple(colour)}"></span>{name}</span>' in html
