"""The report paper cuts of issue 29 as a reader sees them, in headless Chromium: each checked on
the page drawn (text as laid out, colours as computed, pixels of the figures), from run folders
built once for the module. The unit tests of the same cuts are in test_paper_cuts.py."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("websocket", reason="websocket-client (requirements-dev.txt) drives the browser")

CLASSES = ["TUM", "FIB", "NOR"]


def _mixed_size_warnings(folder: Path) -> list[str]:
    """The warnings a patch-folder of 224, 512 and 30 x 50 px patches reports (its own words)."""
    from pathkit_datasets.patch_folder import PatchFolderDataset

    for label, sizes in (("tumour", [(224, 224)] * 4 + [(512, 512)]), ("stroma", [(224, 224)] * 4 + [(50, 30)])):
        (folder / label).mkdir(parents=True)
        for i, (h, w) in enumerate(sizes):
            out = io.BytesIO()
            Image.fromarray(np.full((h, w, 3), 40 + 30 * i, np.uint8)).save(out, format="PNG")
            (folder / label / f"{i}.png").write_bytes(out.getvalue())
    dataset = PatchFolderDataset(folder)
    dataset.validate()
    return list(dataset.summary().get("warnings", []))


def _by_steps(run_dir: Path, patches: Path) -> Path:
    """A linear probe trained by steps (eva's protocol): 10 validation periods of 250 steps, the
    dataset's warning about mixed patch sizes in metrics.json."""
    history = [{"epoch": e, "step": 250 * e, "train_loss": 1.0 / e, "val_loss": 1.2 - 0.05 * e, "lr": 1e-3,
                "seconds": 2.0} for e in range(1, 11)]
    (run_dir / "checkpoints").mkdir(exist_ok=True)
    (run_dir / "checkpoints" / "history.json").write_text(json.dumps(history))
    stages = json.loads((run_dir / "stages.json").read_text())
    stages["fit"] = {"best_epoch": 10, "best_step": 2500, "epochs_run": 10, "selection": "val_loss", "key": "y"}
    (run_dir / "stages.json").write_text(json.dumps(stages))
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["dataset"] = {"patch_sizes": {"224x224": 8, "512x512": 1, "30x50": 1},
                          "warnings": _mixed_size_warnings(patches)}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    return run_dir


def _with_class_maps(run_dir: Path) -> Path:
    """Every slide's prediction with the task's class map over a blank thumbnail (three bands of
    classes, drawn by the task's own overlay code) and the class names."""
    from pathkit_core.wsi.masks import MaskFrame
    from pathkit_tasks.segmentation.overlay import class_colours, draw_overlay, write_overlay

    labels = np.zeros((30, 60), np.int64)
    for k in range(len(CLASSES)):
        labels[:, 20 * k:20 * (k + 1)] = k + 1
    frame = MaskFrame(60, 30)
    overlay = draw_overlay(np.full((30, 60, 3), 255, np.uint8), frame, labels, np.zeros((30, 60), bool), frame,
                           class_colours(len(CLASSES)))
    lines = []
    for line in (run_dir / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        name = f"overlays/{record['id']}.png"
        write_overlay(run_dir / name, overlay)
        record["prediction"].update(outputs={"overlays": name}, class_names=CLASSES)
        lines.append(json.dumps(record))
    (run_dir / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


@pytest.fixture(scope="module")
def pages(browser, runs, tmp_path_factory):
    """The pages of the cuts: {name: Page}. The VQA report as built for every browser test; copies
    of the patch and segmentation runs with what the cuts need (a history by steps, mixed patch
    sizes; class maps); a leaderboard of a single cell (every heatmap panel holds one value)."""
    from pathkit_core.report.html import write_run_report

    from ._runs import matrix

    root = tmp_path_factory.mktemp("cuts")
    steps = shutil.copytree(runs["patch-classification"], root / "steps")
    write_run_report(_by_steps(steps, root / "mixed-patches"))
    maps = shutil.copytree(runs["segmentation"], root / "maps")
    write_run_report(_with_class_maps(maps))
    board = matrix(root / "board", encoders=("enc-a",), generators=("gen-x",))
    return {"vqa": browser.open(runs["multiple-choice-vqa"] / "report.html"),
            "steps": browser.open(steps / "report.html"), "maps": browser.open(maps / "report.html"),
            "board": browser.open(board / "report.html")}


def _row_cells(page, table_id: str) -> dict[str, list[str]]:
    """{first cell's text: the other cells' text as shown} of a table's body rows."""
    rows = page.evaluate(f"""Array.from(document.getElementById('{table_id}').tBodies[0].rows).map(
        r => Array.from(r.cells).map(c => c.innerText.trim()))""")
    return {r[0]: r[1:] for r in rows}


def _interval(text: str) -> tuple[float, float]:
    found = re.fullmatch(r"\[(\d\.\d+), (\d\.\d+)\]", text)
    assert found, f"not an interval: {text!r}"
    return float(found[1]), float(found[2])


def test_the_vqa_headline_shows_the_wilson_intervals_of_its_capability_table(pages):
    page = pages["vqa"]
    headline = _row_cells(page, "headline-scores")
    table = _row_cells(page, "capabilities")
    for name, label in (("Overall", "Overall"), ("QExact", "QExact (every question of a group right)")):
        low, high = _interval(headline[name][1])  # model, CI, baseline, ...
        assert (round(low, 3), round(high, 3)) == _interval(table[label][3]), name
        assert low < float(headline[name][0]) < high
    assert page.errors == []


def test_the_budget_table_shows_counts_as_whole_numbers(pages):
    budget = {k: v[0] for k, v in _row_cells(pages["vqa"], "budget").items()}
    for count in ("K: features a reader gets", "M: candidates scored", "questions", "N: largest",
                  "available features, total", "selected features, total"):
        assert re.fullmatch(r"\d+", budget[count]), (count, budget[count])
    assert budget["questions"] == "36" and budget["K: features a reader gets"] == "256"
    assert re.fullmatch(r"\d+\.\d{4}", budget["N: available features, mean"])  # a mean keeps its decimals


def test_training_by_steps_is_counted_in_the_steps_its_plot_shows(pages):
    page = pages["steps"]
    text = page.evaluate("document.getElementById('section-training').innerText")
    assert "2500 training steps (10 validation period(s)) run in 20 s" in text
    assert "10 training step(s)" not in text and "10 epoch(s)" not in text
    assert "selected at training step 2500" in text
    assert page.errors == []


def test_a_patch_folder_of_several_sizes_is_warned_about_at_the_top(pages):
    page = pages["steps"]
    shown = page.evaluate("""Array.from(document.querySelectorAll('p.warning')).map(p => {
        const r = p.getBoundingClientRect(); return {text: p.innerText, top: r.top, height: r.height}; })""")
    sizes = [w for w in shown if "sizes in one dataset" in w["text"]]
    assert len(sizes) == 1, shown
    assert sizes[0]["text"].startswith("Warning: patches of 3 sizes in one dataset (224x224 px: 8, 30x50 px: 1, "
                                       "512x512 px: 1)")
    scores = page.evaluate("document.getElementById('section-scores').getBoundingClientRect().top")
    assert sizes[0]["height"] > 0 and sizes[0]["top"] < scores  # above the scores, not folded away


# every legend entry: its text, its swatch's colour as drawn and where it lies against the class map
LEGENDS_JS = """Array.from(document.querySelectorAll('p.legend')).map(p => {
  const fig = p.previousElementSibling, img = fig.querySelector('img');
  const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, c.width, c.height).data, drawn = new Set();
  for (let i = 0; i < px.length; i += 4) drawn.add(`${px[i]},${px[i + 1]},${px[i + 2]}`);
  return {figure: fig.dataset.name, gap: p.getBoundingClientRect().top - fig.getBoundingClientRect().bottom,
          drawn: Array.from(drawn),
          items: Array.from(p.querySelectorAll('.legend-item')).map(item => {
            const sw = item.querySelector('span'), r = sw.getBoundingClientRect();
            return {name: item.innerText.trim(), colour: getComputedStyle(sw).backgroundColor,
                    width: r.width, height: r.height}; })}; })"""


def test_the_class_map_has_a_legend_under_it_in_the_colours_it_is_drawn_in(pages):
    from pathkit_tasks.segmentation.overlay import ALPHA, class_colours

    page = pages["maps"]
    legends = page.evaluate(LEGENDS_JS)
    assert legends and all(leg["figure"].startswith("overlay_") for leg in legends), legends
    for legend in legends:
        assert 0 <= legend["gap"] < 40, legend["gap"]  # right under its class map
        assert [i["name"] for i in legend["items"]] == CLASSES
        drawn = {tuple(int(v) for v in c.split(",")) for c in legend["drawn"]}
        for item, colour in zip(legend["items"], class_colours(len(CLASSES)), strict=True):
            assert item["colour"] == f"rgb{tuple(colour)}"
            assert item["width"] >= 8 and item["height"] >= 8
            # the class map paints the class in this colour over white at ALPHA
            blended = tuple(int((1 - ALPHA) * 255 + ALPHA * c) for c in colour)
            assert any(all(abs(a - b) <= 1 for a, b in zip(blended, d, strict=True)) for d in drawn), (
                item["name"], blended)
    assert page.errors == []


def test_a_panel_of_one_value_is_drawn_dark_as_darker_is_better_says(pages):
    """A single-cell leaderboard: each heatmap panel holds one value, the best there is, so each
    is drawn at the dark end of its colour map (it was drawn white)."""
    page = pages["board"]
    caption = page.evaluate("document.querySelector('figure[data-name^=\"cells_\"] figcaption').innerText")
    assert "darker is better" in caption
    dark = page.evaluate("""(() => {
      const img = document.querySelector('figure[data-name^="cells_"] img');
      const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
      const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
      const px = ctx.getImageData(0, 0, c.width, c.height).data; let n = 0;
      for (let i = 0; i < px.length; i += 4)
        if (px[i + 2] > px[i] + 40 && 0.299 * px[i] + 0.587 * px[i + 1] + 0.114 * px[i + 2] < 110) n++;
      return n / (px.length / 4); })()""")
    assert dark > 0.15, f"only {dark:.1%} of the heatmap is dark blue"
    assert "(mean )" not in page.evaluate("document.body.innerText")
    assert page.errors == []
